/* SPDX-License-Identifier: MIT */
/* The writer stage: takes parsed batches in input order, writes their
 * records with one writev per group of batches a pool run parsed together
 * (IOV_MAX iovecs a call at most; one worker's consecutive records are one
 * iovec), then hands the batches back to the
 * reader and releases their bytes from the budget.  It owns the output
 * descriptor and tells the progress callback.  With a sink
 * (ingest_options_set_sink) the batch's records go to the sink in one call
 * instead of a writev.
 *
 *   parse stage: pool_run ──▶ writer_put: writev ──▶ [free] + budget_release ──▶ reader
 *
 * It has no thread of its own: the thread that finished parsing a batch
 * writes it (the parse stage's thread, or the calling thread when the run
 * never starts one: README, "Decisions and known limits"), which saves a
 * handoff and its futex pair per batch.  write_group() is the one place
 * a batch's output leaves; writer_end() adds the records that can only
 * follow the last batch (`last`).  With a parse thread,
 * writer_wait_drained() waits on a futex word of its own, so that the
 * counted window (README, "Syscall accounting") ends before glibc's join
 * makes its uncounted futex. */
#ifndef INGEST_PIPELINE_WRITER_H
#define INGEST_PIPELINE_WRITER_H

#include "ingest.h"
#include "sched/budget.h"
#include "sched/chan.h"
#include "core/dynbuf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct iovec;
struct batch;
struct emit_options;
struct index;

/* Called once when a write fails for a reason other than a closed pipe
 * (on the writer's thread; writer_finish's fsync and close on the run's):
 * err is -errno, what and arg name the step. */
typedef void writer_fail_fn(void *ctx, int err, const char *what, const char *arg);
/* Records that follow the last batch's, known only once every record
 * before them is parsed (the --state run's closing deletions): appended
 * to out, *count of them.  0 or -errno. */
typedef int writer_last_fn(void *ctx, struct dynbuf *out, size_t *count);

struct writer {
	/* set before writer_open() */
	const char *path;            /* -o FILE; NULL or "-": standard output */
	int given_fd;                /* the embedder's descriptor, or -1 */
	ingest_sink_fn *sink;        /* records to a function instead; or NULL */
	void *sink_ctx;
	struct chan *free_batches;   /* where written batches go back */
	struct budget *budget;
	struct ingest_report *rep;
	const atomic_int *failed;    /* the run's first fatal error, or 0 */
	writer_fail_fn *fail;
	void *fail_ctx;
	writer_last_fn *last;        /* called by writer_end(); or NULL */
	void *last_ctx;
	ingest_progress_fn *progress; /* told how the run goes; or NULL */
	void *progress_ctx;
	struct dynbuf sink_buf;      /* a batch's records made contiguous for the sink */
	struct dynbuf journal;       /* the journal's entries of the batches in hand */
	struct dynbuf journal_offs;  /* ... the offsets (uint64_t) of one streamed archive's messages */
	uint64_t split_bytes;        /* > 0: files path.000, .001, ... of at most
	                              * this many bytes, each ending on a whole
	                              * record (a record larger is a file alone) */
	bool es_bulk;                /* records are _bulk actions (where to cut) */
	struct index *index;         /* --index: batches go there, not to fd */
	const char *index_path;      /* --index's FILE, set with the rest */
	uint64_t total;              /* inputs, when known before the end */
	bool durable;                /* --state: a file output reaches the disk
	                              * before the run ends (writer_finish) */
	struct state *state;         /* --state with a file: its journal is
	                              * written before records go out */

	/* the writer's own */
	int fd;
	bool regular;                /* a file we opened and may truncate */
	uint64_t bytes;              /* bytes of whole records written */
	uint64_t records;            /* records whose bytes all went out */
	uint64_t file_bytes;         /* ... to the current file (--split-bytes) */
	unsigned file_no;            /* the current file's number */
	atomic_bool output_closed;   /* the reader of the pipe went away */
	bool writing;                /* no write has failed yet */
	bool threaded;               /* writer_put runs on the parse thread */
	uint64_t progress_last;      /* ns of the last progress line */
	/* the inputs, bytes and errors before the batches being written: once
	 * the writing stopped (output closed or failed), what progress tells
	 * from then on, as nothing more is written */
	uint64_t held_inputs, held_bytes, held_errors;
	_Atomic uint32_t drained;    /* futex word: no batch will be written */
	atomic_int exited;           /* ...and its last syscall has returned */
};

/* Whether the records will go to the process's standard output (no sink,
 * descriptor, split files, named output or index): what writer_open()
 * chooses, asked before anything is opened. */
bool writer_to_stdout(const struct writer *w);
/* Opens the output (or takes standard output).  0 or -errno, in which case
 * w->fail has been told. */
int writer_open(struct writer *w);
/* Writes TSV's header row before any record, its failure taken as a
 * batch's is (w->fail told; -EPIPE: the output closed, not a failure of
 * the run).  0 or -errno. */
int writer_write_header(struct writer *w, const struct emit_options *eo);
/* Writes a group of n parsed batches, bs[0] first (the batches come in
 * input order, from one thread at a time), then gives them back to the
 * reader with their budget. */
void writer_put(struct writer *w, struct batch *const *bs, size_t n);
/* After the last writer_put, on the same thread: writes the records of
 * `last` while the writing goes on, clears the progress line and, when
 * `threaded`, tells writer_wait_drained() that no write is left. */
void writer_end(struct writer *w);
/* With `threaded`, blocks until writer_end() has made its last counted
 * syscall; returns at once otherwise. */
void writer_wait_drained(struct writer *w);
/* Closes a descriptor the writer opened; with `durable`, a regular output
 * file (ours, or a standard output redirected to one) is fsynced first.
 * A failure of that fsync or close goes to w->fail, as a failed write
 * does: records may not have reached the file, and the run must not count
 * them as sent. */
void writer_finish(struct writer *w);

#endif
