/* SPDX-License-Identifier: MIT */
/* A batch: up to LIMIT_BATCH_FILES inputs and one arena with all their bytes.
 *
 * The reader fills it (items, their bytes in `data`, their names in `meta`),
 * the pool parses it and formats each record into the worker's own output
 * buffer `out[w]` (the parse stage's, shared by the batches of one pool
 * run), the writer writes the records in input order and gives the batch
 * back.  One thread owns a batch at a time; handing it over through a
 * queue is the only synchronisation.  Batches are recycled, keeping their
 * capacity, so the steady state allocates nothing. */
#ifndef INGEST_BATCH_H
#define INGEST_BATCH_H

#include "core/arena.h"
#include "core/limits.h"
#include "core/record.h"

#include <stdint.h>

struct dynbuf;
struct walk_entry;
struct state_entry;

struct batch_item {
	struct record_io io;        /* path, stat, Maildir, error */
	const uint8_t *data;        /* the bytes read; NULL when none */
	size_t len;
	/* reader-private */
	struct walk_entry *entry;
	uint64_t cap;               /* bytes reserved in data: size + 1 */
	int64_t read_res;           /* the ring's read result */
	bool stream;                /* too large to read whole: the reader streams it */
	bool no_output;             /* no record: a placeholder, or unchanged (--state) */
	bool stream_end;            /* no record: a streamed archive read to its end,
	                               after its messages and the deletions of
	                               those gone (io: read_to its end) */
	struct state_entry *state;  /* its --state entry, to note its Message-ID */
	struct state_entry *archive_state;  /* a streamed archive's message: the
	                                       archive's, marked written with it */
	/* set by the worker that formatted the record */
	uint32_t out_worker;
	uint64_t out_off, out_len;
	uint32_t out_records;       /* records it produced (an mbox read whole: many) */
	uint32_t out_errors[RECORD__COUNT];   /* of them, error records by reason */
	uint32_t notes_off, notes_n;   /* its thread notes in notes[out_worker] */
};

struct batch {
	uint64_t seq;               /* position in the run, from 0 */
	size_t n;
	struct batch_item items[LIMIT_BATCH_FILES];
	struct arena data;          /* the bytes of every file, size+1 each */
	uint64_t budget;            /* bytes acquired from the budget */
	struct arena meta;          /* names and other per-item strings */
	/* Set by the parse stage for its pool run: its workers' buffers,
	 * valid until the batch is written (pipeline/parse_stage.h) */
	struct dynbuf *out;         /* one output buffer per worker */
	struct dynbuf *notes;       /* per worker: struct thread_note of its records */
	unsigned workers_used;
	bool last;                  /* no batch follows */
	struct batch *next;         /* queue link */
};

struct batch *batch_new(void);
/* The data memory a batch keeps for a run of batches of batch_bytes: twice
 * a full batch plus 1 MiB (docs/ARCHITECTURE.md, "Batches, the pool and
 * the parser"), or 0 for none (batch_bytes 0). */
static inline uint64_t batch_keep_bytes(uint64_t batch_bytes)
{
	return batch_bytes ? 2 * batch_bytes + (1 << 20) : 0;
}
void batch_free(struct batch *b);
/* Empties the batch for reuse; frees a data arena grown past keep_bytes.
 * The data arena's home is keep_bytes, of which a full batch fills
 * fill_bytes (arena_reserve). */
void batch_reset(struct batch *b, uint64_t keep_bytes, uint64_t fill_bytes);

#endif
