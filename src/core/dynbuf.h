/* SPDX-License-Identifier: MIT */
/* A growable byte buffer with a cap (curl's dynbuf idea).
 *
 * Output records and decoded bodies are built in dynbufs.  Growth is
 * geometric; appending past `max` fails with -E2BIG so that hostile input
 * becomes an input error instead of an out-of-memory.  Functions return 0 or
 * -errno. */
#ifndef INGEST_DYNBUF_H
#define INGEST_DYNBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct dynbuf {
	char *p;
	size_t len, cap;
	size_t max;            /* 0 means no cap */
	size_t first;          /* capacity of the first allocation; 0: 256 */
};

void dynbuf_init(struct dynbuf *b, size_t max);
void dynbuf_release(struct dynbuf *b);
/* Empties the buffer, keeps its capacity. */
static inline void dynbuf_reset(struct dynbuf *b) { b->len = 0; }
/* Empties a buffer that is reused for like contents: its memory is kept
 * unless it grew past keep_max (one huge content is not kept for every
 * later one), and an allocation it needs again takes `first` bytes at once. */
void dynbuf_recycle(struct dynbuf *b, size_t first, size_t keep_max);
/* Gives an empty buffer with no memory yet its storage: p, cap bytes from
 * the allocator (malloc's family: dynbuf_release frees it, growth
 * reallocs it), for a caller whose memory must be made its own way
 * (aligned, advised). */
void dynbuf_adopt(struct dynbuf *b, void *p, size_t cap);
int dynbuf_reserve(struct dynbuf *b, size_t extra);
/* Makes room for n more bytes, as dynbuf_reserve, with the common case (the
 * room is there) an inline compare: the JSON and TSV writers call it before
 * every store.  The cap is enforced by dynbuf_reserve (cap <= max + 1). */
static inline int dynbuf_room(struct dynbuf *b, size_t n)
{
	if (b->cap - b->len > n)
		return 0;
	return dynbuf_reserve(b, n);
}
/* dynbuf_append, inline: for the writers' many short stores. */
static inline int dynbuf_put(struct dynbuf *b, const void *p, size_t n)
{
	int r = dynbuf_room(b, n);
	if (r < 0)
		return r;
	__builtin_memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}
int dynbuf_append(struct dynbuf *b, const void *p, size_t n);
int dynbuf_putc(struct dynbuf *b, char c);
int dynbuf_puts(struct dynbuf *b, const char *s);
/* Appends v in decimal: no printf, which formats twice (the length, then
 * the bytes) and parses its format each call; this is per field of every
 * record and every state entry. */
int dynbuf_put_u64(struct dynbuf *b, uint64_t v);
int dynbuf_printf(struct dynbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int dynbuf_vprintf(struct dynbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Hands out the bytes (NUL-terminated) and empties the buffer. */
char *dynbuf_take(struct dynbuf *b, size_t *len);

#endif
