/* SPDX-License-Identifier: MIT */
/* Every cap of ingest in one table.
 *
 * A cap turns unbounded input into a bounded cost: exceeding one is an input
 * error (a warning or an error record), never an out-of-memory.  Values that a
 * user may change are defaults for an option; the rest are fixed. */
#ifndef INGEST_LIMITS_H
#define INGEST_LIMITS_H

#define KiB (1024ull)
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

/* I/O (options --max-size, --batch-bytes, --max-inflight). */
#define LIMIT_MAX_SIZE_DEFAULT      (256 * MiB)
/* Each batch costs about three system calls whatever its size (an
 * io_uring_enter, a writev, a futex handoff), and its memory is kept for
 * the run, so the size is syscalls against peak RSS (README, "Performance"):
 * 6 MiB takes a 100,000-message run to ~0.01 calls a message (2 MiB: 0.023)
 * and keeps a 4 GiB mbox at 42-43 MiB (goal 48; 8 MiB: 51), for 2-6% more CPU
 * while its pages are first touched. */
#define LIMIT_BATCH_BYTES_DEFAULT   (6 * MiB)
#define LIMIT_MAX_INFLIGHT_DEFAULT  (64 * MiB)
/* Files per batch: each costs four SQEs (statx of the next batch, open, read,
 * close) and one direct-descriptor slot, so the ring size follows from it. */
#define LIMIT_BATCH_FILES           1024
#define LIMIT_RING_ENTRIES          (4 * LIMIT_BATCH_FILES)
/* getdents64 buffer: a 100,000-entry directory in 8 calls. */
#define LIMIT_GETDENTS_BYTES        (1 * MiB)

/* Scheduling: one worker per this many bytes of a batch. */
#define LIMIT_BYTES_PER_WORKER      (64 * KiB)
#define LIMIT_MAX_THREADS           256
/* Batches circulating between the reader and the parse stage, which also
 * writes what it parsed: one being read, one being parsed and written, one
 * queued between them.  Each keeps its memory for the run (sched/batch.c),
 * so a fourth costs a batch's data and output pages and, measured, did not
 * make a run faster: peak RSS at 1,000,000 small files 67.8 -> 63.4 MiB,
 * at 100,000 messages with 6 MiB batches 65.7 -> 54.5 MiB (README,
 * "Performance"). */
#define LIMIT_PIPELINE_DEPTH        3
/* Slots of the run's msg-id → thread map (pipeline/threads.c), 16 bytes
 * each: 64 MiB at most, filled to three quarters, three ids a message, so
 * about a million messages are threaded across each other; past that a message keeps the thread of
 * its own References root. */
#define LIMIT_THREAD_MAP_SLOTS      (UINT64_C(1) << 22)

/* Parser (RFC 5322 / MIME). */
#define LIMIT_MIME_DEPTH            64
#define LIMIT_MIME_PARTS            10000
#define LIMIT_HEADER_BYTES          (2 * MiB)
#define LIMIT_MAX_TEXT_DEFAULT      (1 * MiB)
/* libmagic sees at most this prefix of a decoded attachment. */
#define LIMIT_SNIFF_BYTES           (4 * KiB)
/* libmagic calls per message: a call costs 0.1 to 1 ms on binary data, so
 * 10,000 attachments would cost seconds; past this many, detected_type is
 * left out.  Real mail has a handful of attachments. */
#define LIMIT_SNIFF_CALLS           64
/* Parameters of one header field value (RFC 2045/2231): more is hostile,
 * and the rest is skipped with bad-parameter. */
#define LIMIT_PARAMS                256
/* RFC 2231 continuation sections past this are not ones anyone wrote. */
#define LIMIT_PARAM_SECTION         9999
/* A charset label longer than this names no charset. */
#define LIMIT_CHARSET_LABEL         40
/* An mbox From_ line longer than this (its line end excluded) is not one. */
#define LIMIT_MBOX_LINE             1000
/* Scratch one worker may hold while parsing one message: the decoded text,
 * headers and attachment metadata of a --max-size message fit well inside. */
#define LIMIT_SCRATCH_BYTES         (1 * GiB)

#endif
