/* SPDX-License-Identifier: MIT */
/* Bump allocator: see arena.h.  Chunks grow geometrically (64 KiB upwards) so
 * that a message with a large decoded body costs few mallocs; reset keeps the
 * largest chunk so that the steady state allocates nothing.  An arena with a
 * home chunk (arena_reserve) keeps that one instead, whatever else grew:
 * memory whose size is known ahead is allocated once, and its pages, written
 * again from the start after every reset, stay mapped and warm. */
#include "core/arena.h"
#include "core/hugepage.h"
#include "core/xalloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct arena_chunk {
	struct arena_chunk *next;
	void *block;          /* what the allocator handed out: the chunk, or
	                       * memory before it (arena_reserve, huge pages) */
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
	a->huge_fill = 0;
}

void arena_release(struct arena *a)
{
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		xfree(c->block);
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
				xfree(keep->block);
			keep = c;
		} else {
			xfree(c->block);
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

/* A home chunk whose data starts on a huge page (the header sits at the
 * end of the page before it); which of its bytes go on huge pages is
 * decided at its first use (arena_expect): the first 2 MiB only when that
 * use fills them, since a batch of small files may fill less, while the
 * reads into a first 2 MiB of 4 KiB pages fault inside the kernel's copy
 * (docs/ARCHITECTURE.md, "Batches, the pool and the parser"). */
static struct arena_chunk *arena_huge_chunk(size_t n)
{
	char *block = xmemalign(HUGE_PAGE_SIZE, HUGE_PAGE_SIZE + n);
	if (!block)
		return NULL;
	struct arena_chunk *c =
		(struct arena_chunk *)(block + HUGE_PAGE_SIZE - offsetof(struct arena_chunk, data));
	c->block = block;
	return c;
}

void arena_expect(struct arena *a, size_t n)
{
	if (!a->huge_fill)
		return;
	huge_advise(a->home->data, a->home->size, n >= HUGE_PAGE_SIZE ? 0 : HUGE_PAGE_SIZE, a->huge_fill);
	a->huge_fill = 0;
}

int arena_reserve(struct arena *a, size_t n, size_t filled)
{
	if (a->home)
		return a->home->size >= n ? 0 : -EEXIST;
	arena_release(a);
	if (filled > n)
		filled = n;
	bool huge = filled >= HUGE_FILL_MIN;
	struct arena_chunk *c = huge ? arena_huge_chunk(n) : xmalloc(sizeof(*c) + n);
	if (!c)
		return -ENOMEM;
	if (!huge)
		c->block = c;
	c->size = n;
	c->next = NULL;
	a->head = a->home = c;
	a->cur = c->data;
	a->end = c->data + n;
	a->huge_fill = huge ? filled : 0;
	return 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
	size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (need < n)
		return NULL;
	if (a->limit && (need > a->limit || a->used > a->limit - need))
		return NULL;
	if (a->huge_fill)
		arena_expect(a, 0);   /* a first use that did not say its size */
	if ((size_t)(a->end - a->cur) < need) {
		/* past a home chunk only the request: what does not fit a
		 * memory sized ahead is the exception, and goes at reset */
		size_t size = a->home ? need : a->head ? a->head->size * 2 : ARENA_MIN_CHUNK;
		if (size < need)
			size = need;
		struct arena_chunk *c = xmalloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->block = c;
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
