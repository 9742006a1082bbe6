/* SPDX-License-Identifier: MIT */
/* The house's hash table: open addressing with linear probing over a
 * power-of-two array of slots, each 1 + an index into the caller's own
 * array of entries (0: empty), at most half full.  The caller keeps its
 * entries (strings, ids) where they are and compares them itself; the
 * table holds 4 bytes a slot and knows only each entry's 64-bit hash.
 *
 *	struct slots t;
 *	if (slots_init(&t, n) < 0) ...
 *	slots_put(&t, hash_of(e[i]), i);
 *	for (struct slots_probe p = slots_probe(&t, h); (k = slots_next(&p));)
 *		if (same(&e[k - 1], key)) ...
 *
 * The run's thread map (pipeline/threads.c) keeps key and thread side by
 * side in its own slots instead: one cache line a probe, on huge pages. */
#ifndef INGEST_CORE_SLOTS_H
#define INGEST_CORE_SLOTS_H

#include "core/hash.h"
#include "core/xalloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct slots {
	uint32_t *at;              /* 1 + an entry's index; 0: empty */
	size_t mask;               /* the number of slots less one */
	size_t n;                  /* entries put */
};

/* The most entries a table takes: an index + 1 fits a slot. */
#define SLOTS_MAX_ENTRIES ((size_t)UINT32_MAX - 1)

/* A table for up to n entries (16 slots at least).  -ENOMEM, or -EOVERFLOW
 * for more than SLOTS_MAX_ENTRIES; the allocation is the caller's fault
 * site (core/fault.h), as with the x*alloc macros. */
static inline int slots_init_(const char *site, struct slots *t, size_t n)
{
	*t = (struct slots){ 0 };
	if (n > SLOTS_MAX_ENTRIES)
		return -EOVERFLOW;
	size_t size = 16;
	while (size < 2 * n)
		size *= 2;
	t->at = xcalloc_(site, size, sizeof(*t->at));
	if (!t->at)
		return -ENOMEM;
	t->mask = size - 1;
	return 0;
}
#define slots_init(t, n) slots_init_(FAULT_SITE, (t), (n))

static inline void slots_free(struct slots *t)
{
	xfree(t->at);
	*t = (struct slots){ 0 };
}

/* Whether one more entry would fill the table past half. */
static inline bool slots_full(const struct slots *t)
{
	return !t->at || 2 * (t->n + 1) > t->mask + 1;
}

/* Files entry index under hash; the table must not be full (slots_full). */
static inline void slots_put(struct slots *t, uint64_t hash, size_t index)
{
	size_t at = (size_t)hash_mix64(hash) & t->mask;
	while (t->at[at])
		at = (at + 1) & t->mask;
	t->at[at] = (uint32_t)(index + 1);
	t->n++;
}

struct slots_probe {
	const struct slots *t;
	size_t at;
};

/* The entries that may have this hash, in probe order (slots_next). */
static inline struct slots_probe slots_probe(const struct slots *t, uint64_t hash)
{
	return (struct slots_probe){ t, (size_t)hash_mix64(hash) & t->mask };
}

/* The next candidate's index + 1, or 0 when there is none. */
static inline size_t slots_next(struct slots_probe *p)
{
	if (!p->t->at)
		return 0;
	uint32_t k = p->t->at[p->at];
	if (k)
		p->at = (p->at + 1) & p->t->mask;
	return k;
}

#endif
