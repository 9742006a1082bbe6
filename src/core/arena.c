/* SPDX-License-Identifier: MIT */
/* Bump allocator: see arena.h.  Chunks grow geometrically (64 KiB upwards) so
 * that a message with a large decoded body costs few mallocs; reset keeps the
 * largest chunk so that the steady state allocates nothing.  An arena with a
 * home chunk (arena_reserve) keeps that one instead, whatever else grew:
 * memory whose size is known ahead is allocated once, and its pages, written
 * again from the start after every reset, stay mapped and warm. */
#include "core/arena.h"
#include "core/xalloc.h"

#include <errno.h>
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
	a->head = a->home = NULL;
	a->cur = a->end = NULL;
	a->used = 0;
	a->limit = limit;
}

void arena_release(struct arena *a)
{
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		xfree(c);
		c = next;
	}
	arena_init(a, a->limit);
}

void arena_reset(struct arena *a)
{
	struct arena_chunk *keep = a->home, *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		if (c == a->home) {
			/* kept */
		} else if (!a->home && (!keep || c->size > keep->size)) {
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

int arena_reserve(struct arena *a, size_t n)
{
	if (a->home)
		return a->home->size >= n ? 0 : -EEXIST;
	arena_release(a);
	struct arena_chunk *c = xmalloc(sizeof(*c) + n);
	if (!c)
		return -ENOMEM;
	c->size = n;
	c->next = NULL;
	a->head = a->home = c;
	a->cur = c->data;
	a->end = c->data + n;
	return 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
	size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (need < n)
		return NULL;
	if (a->limit && (need > a->limit || a->used > a->limit - need))
		return NULL;
	if ((size_t)(a->end - a->cur) < need) {
		/* past a home chunk only the request: what does not fit a
		 * memory sized ahead is the exception, and goes at reset */
		size_t size = a->home ? need : a->head ? a->head->size * 2 : ARENA_MIN_CHUNK;
		if (size < need)
			size = need;
		struct arena_chunk *c = xmalloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->next = a->head;
		a->head = c;
		a->cur = c->data;
		a->end = c->data + size;
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
	return max;
}
