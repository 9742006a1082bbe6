/* Bump allocator: see arena.h.  Chunks grow geometrically (64 KiB upwards) so
 * that a message with a large decoded body costs few mallocs; reset keeps the
 * largest chunk so that the steady state allocates nothing. */
#include "core/arena.h"
#include "core/xalloc.h"

#include <stdint.h>
#include <stdlib.h>

struct arena_chunk {
	struct arena_chunk *next;
	size_t size;          /* usable bytes after the header */
	_Alignas(16) char data[];
};

#define ARENA_MIN_CHUNK (64 * 1024)
#define ARENA_ALIGN 16

void arena_init(struct arena *a, size_t limit)
{
	a->head = NULL;
	a->spare = NULL;
	a->cur = a->end = NULL;
	a->used = 0;
	a->limit = limit;
}

static void chunks_free(struct arena_chunk *c)
{
	while (c) {
		struct arena_chunk *next = c->next;
		xfree(c);
		c = next;
	}
}

void arena_release(struct arena *a)
{
	chunks_free(a->head);
	chunks_free(a->spare);
	arena_init(a, a->limit);
}

void arena_recycle(struct arena *a, size_t keep_bytes)
{
	/* every chunk, used or spare, on one list, then the largest first
	 * into the spares while they fit: a handful of chunks, so a
	 * selection pass per kept chunk is cheap */
	struct arena_chunk *all = a->head, *kept = NULL;
	if (all) {
		struct arena_chunk *last = all;
		while (last->next)
			last = last->next;
		last->next = a->spare;
	} else {
		all = a->spare;
	}
	size_t total = 0;
	for (;;) {
		struct arena_chunk **best = NULL;
		for (struct arena_chunk **pp = &all; *pp; pp = &(*pp)->next)
			if (!best || (*pp)->size > (*best)->size)
				best = pp;
		if (!best || (*best)->size > keep_bytes - total)
			break;
		struct arena_chunk *c = *best;
		*best = c->next;
		c->next = kept;   /* the spares end up smallest first */
		kept = c;
		total += c->size;
	}
	chunks_free(all);
	a->head = NULL;
	a->cur = a->end = NULL;
	a->used = 0;
	a->spare = kept;
}

void arena_reset(struct arena *a)
{
	struct arena_chunk *keep = NULL, *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		if (!keep || c->size > keep->size) {
			if (keep)
				xfree(keep);
			keep = c;
		} else {
			xfree(c);
		}
		c = next;
	}
	a->head = keep;
	a->used = 0;
	if (keep) {
		keep->next = NULL;
		a->cur = keep->data;
		a->end = keep->data + keep->size;
	} else {
		a->cur = a->end = NULL;
	}
}

void *arena_alloc(struct arena *a, size_t n)
{
	size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (need < n)
		return NULL;
	if (a->limit && (need > a->limit || a->used > a->limit - need))
		return NULL;
	if ((size_t)(a->end - a->cur) < need) {
		/* a kept chunk first: the smallest that fits (the spares are
		 * smallest first), so that the large ones stay for large files */
		struct arena_chunk *c = NULL, **pp = &a->spare;
		while (*pp && (*pp)->size < need)
			pp = &(*pp)->next;
		if (*pp) {
			c = *pp;
			*pp = c->next;
		} else {
			size_t size = a->head ? a->head->size * 2 : ARENA_MIN_CHUNK;
			if (size < need)
				size = need;
			if (!(c = xmalloc(sizeof(*c) + size)))
				return NULL;
			c->size = size;
		}
		c->next = a->head;
		a->head = c;
		a->cur = c->data;
		a->end = c->data + c->size;
	}
	void *p = a->cur;
	a->cur += need;
	a->used += need;
	return p;
}

char *arena_memdup(struct arena *a, const void *p, size_t n)
{
	char *d = arena_alloc(a, n + 1);
	if (!d)
		return NULL;
	if (n)
		memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

size_t arena_capacity(const struct arena *a)
{
	size_t max = 0;
	for (const struct arena_chunk *c = a->head; c; c = c->next)
		if (c->size > max)
			max = c->size;
	for (const struct arena_chunk *c = a->spare; c; c = c->next)
		if (c->size > max)
			max = c->size;
	return max;
}
