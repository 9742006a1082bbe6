/* SPDX-License-Identifier: MIT */
/* Messages in memory: ingest_parse() and ingest_parse_many(), and the
 * Python module's parse and parse_many, parse bytes the caller holds with
 * the run's own path (parse_stage_message, then emit or a visitor).
 *
 *   caller (worker 0) ─┬─ pool_run_max on the process's one pool ─▶ fn(i, rec)
 *                      └─ ingest-w1..N (started once per process)
 *
 * Batches take the byte gate of a run (one worker per
 * LIMIT_BYTES_PER_WORKER bytes, at most one per buffer, at most `threads`).
 * The process's pool serves one batch at a time: a batch that finds it busy
 * (another thread's) runs on its caller alone, which is what the busy pool
 * would have given it anyway on a machine it already fills. */
#ifndef INGEST_PARSE_MEM_H
#define INGEST_PARSE_MEM_H

#include "ingest.h"
#include "core/record.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* Called once per buffer, on the worker that parsed it, with its record
 * (rec->mail valid during the call only). */
typedef void parse_mem_fn(void *ctx, size_t i, struct record *rec);

/* Parses bufs[0..n) (lens[i] bytes each) as one message each with o's
 * options and calls fn for each, on at most `threads` workers (0: o's
 * threads, or the pool's).  Once *stop (NULL: never) is true, the buffers
 * not begun are not parsed: fn gets an internal error record, EINTR, for
 * each (a caller that was interrupted drops them all).  0, or -ENOMEM
 * before any fn call. */
int parse_mem_run(const struct ingest_options *o, const void *const *bufs, const size_t *lens,
                  size_t n, unsigned threads, const atomic_bool *stop, parse_mem_fn *fn, void *ctx);

#endif
