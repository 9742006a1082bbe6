/* SPDX-License-Identifier: MIT */
/* A bump allocator with a byte cap.
 *
 * Parser scratch and batch metadata live in arenas: many small allocations
 * freed all at once by arena_reset(), which keeps one chunk (its home, or
 * else its largest) so that a worker parsing message after message does not go back to malloc.  Not
 * thread-safe: an arena belongs to one thread at a time. */
#ifndef INGEST_ARENA_H
#define INGEST_ARENA_H

#include <stddef.h>
#include <string.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head;   /* newest chunk; older ones linked behind */
	struct arena_chunk *home;   /* NULL, or the chunk a reset always keeps */
	char *cur, *end;            /* free space of the newest chunk */
	size_t used;                /* bytes handed out since the last reset */
	size_t limit;               /* cap on used; 0 means no cap */
	size_t huge_fill;           /* a home on huge pages not yet advised: its fill */
};

void arena_init(struct arena *a, size_t limit);
/* Frees every chunk. */
void arena_release(struct arena *a);
/* Forgets every allocation; keeps the home chunk, or without one the
 * largest chunk, for reuse. */
void arena_reset(struct arena *a);
/* Gives the arena a home chunk of n bytes, allocated now: allocations go
 * there first, and a reset frees every other chunk and keeps it.  Past it,
 * a chunk is allocated for each request that does not fit.  `filled`: the
 * bytes from its start that most uses fill (a full batch), or 0; at
 * HUGE_FILL_MIN (4 MiB) and more the chunk is aligned and those bytes (the first 2 MiB as its
 * first use decides) are backed by transparent huge pages, advised at that
 * first use (arena_expect).  Releases what the
 * arena held; 0, -EEXIST when it has a smaller home already, -ENOMEM. */
int arena_reserve(struct arena *a, size_t n, size_t filled);
/* The use about to start fills about n bytes of the home chunk from its
 * start (0: not known).  The first use of a home on huge pages advises
 * them: from its start when n fills the first huge page, else from 2 MiB,
 * so that a use that fills less backs no huge page.  The first
 * arena_alloc after arena_reserve counts as a use of unknown size. */
void arena_expect(struct arena *a, size_t n);
/* Bytes the largest chunk can hold (what a reset without home keeps). */
size_t arena_capacity(const struct arena *a);
/* Returns n bytes aligned to 16, or NULL when the cap or memory runs out. */
void *arena_alloc(struct arena *a, size_t n);
/* Copies n bytes and appends a NUL (not counted in n). NULL on failure. */
char *arena_memdup(struct arena *a, const void *p, size_t n);

#endif
