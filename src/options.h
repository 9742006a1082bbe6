/* SPDX-License-Identifier: MIT */
/* The inside of struct ingest_options: every setting of a run, validated
 * once by ingest_options_set() (the command line goes through it too, so the
 * CLI and the library accept exactly the same values). */
#ifndef INGEST_OPTIONS_H
#define INGEST_OPTIONS_H

#include "ingest.h"
#include "io/reader.h"
#include "mail/mail.h"
#include "emit/emit.h"

#include <stdbool.h>
#include <stdint.h>

enum options_stats { OPTIONS_STATS_NONE, OPTIONS_STATS_HUMAN, OPTIONS_STATS_JSON };

struct ingest_options {
	char **paths;
	size_t n_paths;
	char **excludes;            /* --exclude=GLOB, repeatable */
	size_t n_excludes;
	char *files_from;           /* "-" for stdin */
	bool null_separated;
	char *output;               /* NULL: stdout */
	int output_fd;              /* the caller's descriptor, or -1 */
	ingest_sink_fn *sink;       /* records to a function; NULL: a descriptor */
	void *sink_ctx;
	struct reader_options reader;
	uint64_t max_inflight;
	unsigned threads;           /* 0: the machine's parallelism */
	struct mail_options mail;
	struct emit_options emit;
	char *es_index;             /* owned copy behind emit.es_index */
	enum options_stats stats;
	bool parse;                 /* false: records carry I/O fields only */
	unsigned shard_k, shard_n;  /* --shard=K/N; 0/0 none */
	ingest_progress_fn *progress;   /* told as the run goes; or NULL */
	void *progress_ctx;
	char *state;                /* --state=FILE */
	char *index;                /* --index=FILE: records into that database */
	record_visit_fn *visit;     /* internal: records formatted by this, not emit */
	void *visit_ctx;
	record_thread_fn *visit_thread;   /* internal: with visit, a record joins a thread */
	int (*sink_taken)(void *sink_ctx);   /* internal: before --state is saved, waits
	                                      * until the sink's consumer took what the
	                                      * sink was given: 0, or -EPIPE when it went
	                                      * away first (the run then stopped early) */
	char error[160];            /* ingest_options_error(); "" for none */
	bool state_wait;            /* --wait-state: wait for another run's lock */
	bool state_reset;           /* --state-reset: ignore what FILE holds */
	uint64_t split_bytes;       /* --split-bytes=SIZE with -o PREFIX; 0 none */
	bool process_ends;          /* internal: the process exits after this run (the
	                             * command): its memory is left to the exit */
	bool interrupt_kept;        /* internal: the host cleared the interrupt before
	                             * the run (ingest_interrupt_clear, or a process
	                             * that has run nothing), so the run keeps one sent
	                             * since, where it forgets it as meant for an
	                             * earlier run: a Ctrl-C, or a Python scan()
	                             * dropped, before the run began stops it */
};

/* Clears ingest_interrupt()'s flag, for a host that sets interrupt_kept:
 * from then on an interrupt stops its next run, even one sent before that
 * run begins. */
void ingest_interrupt_clear(void);

/* What an option's value is (include/ingest.h lists them): a binding
 * (the Python module's keywords) takes each kind from its own types. */
enum options_kind {
	OPTIONS_UNKNOWN,   /* no option of that name */
	OPTIONS_TEXT,      /* a word or list: backend, format, fields, shard... */
	OPTIONS_FLAG,      /* "1"/"0" */
	OPTIONS_NUMBER,    /* a count or a SIZE: threads, max-text... */
	OPTIONS_FILE,      /* a path: output, files-from, state, index */
};
enum options_kind options_kind(const char *name);

/* Parses "64K", "1M", "2G", "4096" into bytes; -EINVAL on anything else. */
int options_parse_size(const char *s, uint64_t *out);

#endif
