/* SPDX-License-Identifier: MIT */
/* The parse stage: takes full batches from the reader, parses every input
 * on the worker pool and formats its records into the worker's output
 * buffer, then passes the batch on to the writer, in input order.
 *
 *   reader ──[full]──▶ ingest-parse (the pool's caller, worker 0)
 *                         + ingest-w1..N-2: mail_parse + emit_record
 *                         + the reader, worker N-1, when it would sleep
 *                      ──▶ writer_put(), same thread ──[free_batches]──▶ reader
 *
 * One thread ("ingest-parse") runs it and is the pool's worker 0; it parses
 * batch k while the reader reads k+1, then writes it (pipeline/writer.c)
 * itself.  A run that never needs the thread (its input fits one batch)
 * parses and writes on the calling thread instead, with parse_stage_inline(),
 * on one worker: no thread is started at all.  Each worker has its own
 * parser context and its own output buffers, which the batches of one pool
 * run share and which are emptied once the run's batches are written (the
 * whole run is written before the next opens): a worker's pages are touched
 * once and reused by every run, where buffers of each batch in flight would
 * be LIMIT_PIPELINE_DEPTH times as many first touches; options are shared
 * and only read. */
#ifndef INGEST_PIPELINE_PARSE_STAGE_H
#define INGEST_PIPELINE_PARSE_STAGE_H

#include "core/limits.h"
#include "core/record.h"
#include "sched/chan.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct batch;
struct pool;
struct mail_ctx;
struct mail_options;
struct emit_options;
struct writer;

struct dynbuf;
struct record;
struct mail_message;

/* Parses data as rec's message with mctx: rec->mail = msg, or rec becomes
 * an error record (not-mail, or the parser's scratch limit).  The one way
 * a message is parsed, for a run and for bytes in memory. */
void parse_stage_message(struct mail_ctx *mctx, const struct mail_options *mo, struct record *rec,
                         const uint8_t *data, size_t len, struct mail_message *msg);
/* Formats rec into out with visit, or emit_record() when visit is NULL; a
 * record that cannot be formatted becomes an error record that can.  0 or
 * -errno (out unchanged) when not even that fits. */
int parse_stage_emit(const struct emit_options *eo, record_visit_fn *visit, void *visit_ctx,
                     struct record *rec, struct dynbuf *out);
struct thread_map;

struct parse_stage {
	/* set before parse_stage_start() */
	bool parse;                        /* false: --io-only, records of file facts */
	const struct mail_options *mail;
	const struct emit_options *emit;
	record_visit_fn *visit;            /* NULL: emit_record() */
	void *visit_ctx;
	record_thread_fn *visit_thread;    /* with visit: threads joined; NULL: not */
	struct chan *full;                 /* from the reader */
	struct writer *writer;             /* writes each batch once parsed */
	/* NULL, or the calling thread (the reader) is the pool's last worker
	 * when it would otherwise sleep (parse_stage_help()), and this wakes
	 * it where it sleeps when a run opens (sched/pool.h, the helper) */
	void (*helper_wake)(void *ctx);
	void *helper_wake_ctx;
	/* Called, on whichever worker met it, when a record cannot be
	 * formatted even as an error record: that input would have no record,
	 * so the run fails (exit 1) rather than lose it.  NULL: not told. */
	void (*fail)(void *ctx, int err, const char *what, const char *arg);
	void *fail_ctx;
	uint64_t batch_bytes;              /* the reader's: sizes the output buffers */
	uint64_t max_size;                 /* --max-size: how far a Content-Length is
	                                      believed, as the stream does (mbox.h) */

	/* the stage's own */
	struct pool *pool;
	unsigned workers;
	struct mail_ctx **mctx;            /* one per worker */
	struct dynbuf *out;                /* per worker: the records of the current run */
	struct dynbuf *notes;              /* per worker: struct thread_note of its records */
	bool out_decided;                  /* the first run chose the buffers' pages */
	bool thread_notes;                 /* records carry a thread_id to settle */
	struct thread_map *threads;        /* this stage's thread only */
	/* the batches of the current pool run: group[k] holds items
	 * [group_first[k], group_first[k] + group[k]->n) of the run */
	struct batch *group[LIMIT_PIPELINE_DEPTH];
	size_t group_first[LIMIT_PIPELINE_DEPTH];
	unsigned group_n;
	uint64_t wait_ns;                  /* time blocked on `full` */
	pthread_t thread;
	bool started;
};

/* Creates the pool (threads start with the first batch that needs them)
 * and one parser context and output buffer per worker.  0 or -ENOMEM. */
int parse_stage_init(struct parse_stage *s, unsigned workers);
/* Starts the stage's thread.  0 or -errno. */
int parse_stage_start(struct parse_stage *s);
/* Parses batch b and writes it on the calling thread, with the calling
 * thread as the only worker, before the thread is started or when it could
 * not be.  Batches keep their order: never called once the thread runs. */
void parse_stage_inline(struct parse_stage *s, struct batch *b);
/* On the thread that started the stage, about to sleep: parses items of
 * the stage's current pool run, if one is open and has items left.  True
 * when it parsed any (look again before sleeping); false: sleep, and a
 * run that opens meanwhile calls helper_wake. */
bool parse_stage_help(struct parse_stage *s);
/* The same, and when it parsed the run's last items: polls ready(ctx)
 * and for a new run for up to PARSE_STAGE_HELP_SPIN_NS before it returns
 * (the run ends within about an item, and what the caller waits for
 * comes then). */
bool parse_stage_help_poll(struct parse_stage *s, bool (*ready)(void *ctx), void *ctx);
/* Waits for the thread to end (if started); the pool stays for its
 * statistics. */
void parse_stage_join(struct parse_stage *s);
/* Joins if need be and ends the pool: no thread of the stage runs after. */
void parse_stage_stop(struct parse_stage *s);
/* parse_stage_stop(), then frees the contexts. */
void parse_stage_release(struct parse_stage *s);

#endif
