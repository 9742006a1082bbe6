/* SPDX-License-Identifier: MIT */
/* The run's thread map: see threads.h.  Open addressing over 64-bit keys
 * (FNV-1a of a msg-id, record_thread_key) with their thread, side by side
 * in a slot rather than in core/slots.h's indexes: one cache line a probe,
 * no array of entries beside it.  It doubles up to LIMIT_THREAD_MAP_SLOTS
 * and then takes no new ids. */
#include "pipeline/threads.h"
#include "core/hash.h"
#include "core/hugepage.h"
#include "core/limits.h"
#include "core/xalloc.h"
#include "core/record.h"

#include <errno.h>
#include <string.h>

struct thread_slot {
	uint64_t key, thread;      /* key 0: empty (record_thread_key is never 0 for an id) */
};

struct thread_map {
	struct thread_slot *v;
	size_t mask, n;
};

struct thread_map *thread_map_new(void)
{
	return xcalloc(1, sizeof(struct thread_map));
}

void thread_map_free(struct thread_map *m)
{
	if (!m)
		return;
	xfree(m->v);
	xfree(m);
}

static size_t thread_slot_of(uint64_t key, size_t mask)
{
	return (size_t)hash_mix64(key) & mask;
}

static uint64_t thread_map_get(const struct thread_map *m, uint64_t key)
{
	if (!m->v || !key)
		return 0;
	for (size_t i = thread_slot_of(key, m->mask); m->v[i].key; i = (i + 1) & m->mask)
		if (m->v[i].key == key)
			return m->v[i].thread;
	return 0;
}

static bool thread_map_grow(struct thread_map *m)
{
	size_t size = m->v ? 2 * (m->mask + 1) : 4096;
	if (size > LIMIT_THREAD_MAP_SLOTS)
		return false;
	/* Written through before the first probe: calloc's fresh pages, read
	 * first, map the shared zero page, and the first store then copies
	 * it and flushes the other threads' TLBs (an IPI each, costly on a
	 * VM), where a store first is one fault a page; and a table of 2 MiB
	 * or more (65,536 ids on) is on huge pages, whole since it is all
	 * written (core/hugepage.h). */
	size_t bytes = size * sizeof(struct thread_slot);
	struct thread_slot *v = bytes >= HUGE_PAGE_SIZE ? huge_alloc(bytes, 0, bytes) : xmalloc(bytes);
	if (!v)
		return false;
	memset(v, 0, bytes);
	for (size_t i = 0; m->v && i <= m->mask; i++) {
		if (!m->v[i].key)
			continue;
		size_t j = thread_slot_of(m->v[i].key, size - 1);
		while (v[j].key)
			j = (j + 1) & (size - 1);
		v[j] = m->v[i];
	}
	xfree(m->v);
	m->v = v;
	m->mask = size - 1;
	return true;
}

/* Enters key under thread unless it has one; a full map takes no more. */
static void thread_map_put(struct thread_map *m, uint64_t key, uint64_t thread)
{
	if (!key)
		return;
	if ((!m->v || 2 * (m->n + 1) > m->mask + 1) && !thread_map_grow(m) &&
	    (!m->v || m->n + 1 > m->mask - m->mask / 4))
		return;
	size_t i = thread_slot_of(key, m->mask);
	for (; m->v[i].key; i = (i + 1) & m->mask)
		if (m->v[i].key == key)
			return;
	m->v[i] = (struct thread_slot){ key, thread };
	m->n++;
}

static int thread_hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

uint64_t thread_map_settle(struct thread_map *m, const struct thread_note *n, uint64_t own)
{
	uint64_t thread = 0;
	for (int i = 0; i < 4 && !thread; i++)
		thread = thread_map_get(m, n->keys[i]);
	/* the root, In-Reply-To and itself: what later messages name */
	uint64_t ends = thread ? thread : own;
	thread_map_put(m, n->keys[0], ends);
	thread_map_put(m, n->keys[2], ends);
	thread_map_put(m, n->keys[3], ends);
	return thread;
}

void thread_map_resolve(struct thread_map *m, const struct thread_note *n, char *hex)
{
	/* the thread the worker wrote: its References root's */
	uint64_t own = 0;
	for (int i = 0; i < 16; i++)
		own = own << 4 | (uint64_t)thread_hexval(hex[i]);
	uint64_t thread = thread_map_settle(m, n, own);
	if (thread) {
		char d[17];
		record_id_hex(thread, d);
		memcpy(hex, d, 16);
	}
}

/* Adds the note of m at off, unless m names no id at all: a thread of its
 * own, nothing to join. */
static int thread_note_put(struct dynbuf *notes, uint64_t off, const struct mail_message *m,
                           uint64_t own)
{
	struct thread_note note = {
		.off = off,
		.keys = {
			m->n_references ? record_thread_key(m->references[0]) : 0,
			m->n_references ? record_thread_key(m->references[m->n_references - 1]) : 0,
			record_thread_key(m->in_reply_to),
			record_thread_key(m->message_id),
		},
		.own = own,
	};
	if (!note.keys[0] && !note.keys[2] && !note.keys[3])
		return 0;
	int r = dynbuf_append(notes, &note, sizeof(note));
	return r < 0 ? r : 1;
}

int thread_note_add(struct dynbuf *notes, const struct dynbuf *out, size_t start,
                    const struct mail_message *m)
{
	static const char key[] = "\"thread_id\":\"";
	size_t kn = sizeof(key) - 1;
	if (!m || out->len - start < kn + 16)
		return 0;
	/* A JSON record holds these bytes once: in a string value every
	 * quote is escaped, and headers are [name, value] pairs, so only the
	 * thread_id member can have them.  It is written after the text and
	 * the attachments, with at most the tags after it (emit.h's field
	 * order), so the search starts from the end: a forward search read
	 * the whole text first (4% of a run's instructions). */
	for (size_t i = out->len - kn - 16 + 1; i-- > start;)
		if (out->p[i] == '"' && memcmp(out->p + i, key, kn) == 0)
			return thread_note_put(notes, (uint64_t)(i + kn), m, 0);
	return 0;
}

int thread_note_add_at(struct dynbuf *notes, size_t start, const struct mail_message *m,
                       uint64_t own)
{
	return m ? thread_note_put(notes, start, m, own) : 0;
}
