/* SPDX-License-Identifier: MIT */
/* The reader: walk entries into filled batches, with the syscall contract of
 * docs/ARCHITECTURE.md (one size query whose answer is cached, one read of
 * size+1 bytes, a close; nothing else per file).
 *
 * Two backends keep that contract:
 *   uring: statx on the ring, then open (into a direct-descriptor slot) →
 *          read → close hard-linked; the stats of the next batch travel in
 *          the same io_uring_enter as the chains of this one.
 *   sync:  openat, fstat, read, close: four syscalls a file.
 * `auto` tries the ring and falls back to sync on any set-up error, and says
 * why in the stats.
 *
 * Threads: the reader runs on one thread (the only one that touches the
 * ring); batches leave it through a channel. */
#ifndef INGEST_READER_H
#define INGEST_READER_H

#include "sched/batch.h"
#include "sched/budget.h"
#include "sched/chan.h"

#include <stdatomic.h>

#include <stdbool.h>
#include <stdint.h>

struct walk;
struct walk_entry;
struct state;

enum reader_backend { READER_AUTO, READER_URING, READER_SYNC };

struct reader_options {
	enum reader_backend backend;
	uint64_t batch_bytes;            /* as fitted by reader_options_fit */
	uint64_t max_inflight;           /* --max-inflight; 0: no budget to fit (unit tests) */
	uint64_t max_size;
	struct state *state;             /* --state: skip what did not change */
	/* error records are documents (every format but es-bulk without
	 * --es-errors): the state lists an archive's too-large messages,
	 * so that their documents go when they do */
	bool error_documents;
	/* test seam: when set, called with the entry's name (relative to its
	 * directory fd) right after the file's size is known and before its read
	 * is submitted, so a unit test can unlink, grow or shrink the file at
	 * exactly that moment; and with the name a vanished Maildir message was
	 * found under ("../cur/x", reader_batch_retry_renamed) before it is
	 * opened there.  NULL in production. */
	void (*after_stat)(void *arg, const char *name);
	void *after_stat_arg;
};

struct reader_stats {
	enum reader_backend backend;     /* the one used */
	char fallback[160];              /* why auto fell back; "" otherwise */
	uint64_t batches, files, bytes;
	uint64_t grew, shrank;
	uint64_t renamed;                /* found under a new Maildir name */
	uint64_t unchanged, changed, moved, deleted;   /* --state verdicts */
	uint64_t expanded;               /* --files-from directories handed to the walk */
	uint64_t enters;                 /* io_uring_enter calls */
	uint64_t enter_retries;          /* enters refused (EINTR, EAGAIN, EBUSY) and retried */
	uint64_t cq_overflows;           /* enters after which the CQ had a backlog (IORING_SQ_CQ_OVERFLOW) */
	uint64_t cqe_retries;            /* ring ops submitted again after -EAGAIN/-EINTR completions */
};

/* Where the reader gets empty batches and sends full ones. */
struct reader_io {
	struct walk *walk;
	struct budget *budget;
	struct chan *free_batches;       /* recycled by the writer */
	struct chan *full_batches;       /* to the parser */
	const atomic_int *stop;          /* set by ingest_interrupt(): read no more */
	uint64_t batch_bytes;            /* a full batch's data; 0: batches keep no
	                                  * data memory between uses (reader_item.c) */
};

struct reader;

/* Sets the backend up (ring creation happens here, on the calling thread;
 * run the reader on that same thread).  -errno when `uring` was asked for
 * and is unavailable (the message is in the stats' fallback). */
/* Fits the batch size to the in-flight budget: a batch is at most half of
 * --max-inflight, so that one batch can be read while another is parsed and
 * the budget still bounds what is in flight (a larger --batch-bytes, or the
 * default under a small --max-inflight, would otherwise read every batch
 * alone, past the budget).  Never below 64 KiB. */
void reader_options_fit(struct reader_options *o);

int reader_new(const struct reader_options *o, struct reader **out, struct reader_stats *st);
void reader_free(struct reader *r);
/* Reads everything the walk yields; closes full_batches at the end.
 * 0, or -errno when the run cannot go on (out of memory). */
int reader_run(struct reader *r, const struct reader_io *io);
void reader_stats_get(const struct reader *r, struct reader_stats *out);

#endif
