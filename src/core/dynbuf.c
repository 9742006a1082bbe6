/* SPDX-License-Identifier: MIT */
/* Growable capped buffer: see dynbuf.h. */
#include "core/dynbuf.h"
#include "core/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void dynbuf_init(struct dynbuf *b, size_t max)
{
	b->p = NULL;
	b->len = b->cap = 0;
	b->max = max;
	b->first = 0;
}

/* Empty and unallocated, with its cap and first size. */
static void dynbuf_forget(struct dynbuf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
}

void dynbuf_release(struct dynbuf *b)
{
	xfree(b->p);
	dynbuf_forget(b);
}

void dynbuf_recycle(struct dynbuf *b, size_t first, size_t keep_max)
{
	b->len = 0;
	if (b->cap > keep_max)
		dynbuf_release(b);
	b->first = first;
}

void dynbuf_adopt(struct dynbuf *b, void *p, size_t cap)
{
	b->p = p;
	b->cap = cap;
	b->len = 0;
}

/* The capacity for need bytes, doubling from `from`, within the cap. */
static size_t dynbuf_cap_for(size_t from, size_t need, size_t max)
{
	size_t cap = from;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (max && cap > max + 1)
		cap = max + 1;
	return cap;
}

int dynbuf_reserve(struct dynbuf *b, size_t extra)
{
	if (extra > SIZE_MAX - b->len - 1)
		return -E2BIG;
	size_t need = b->len + extra + 1;   /* room for dynbuf_take's NUL */
	if (b->max && need > b->max + 1)
		return -E2BIG;
	if (need <= b->cap)
		return 0;
	size_t cap = dynbuf_cap_for(b->cap ? b->cap : b->first > 256 ? b->first : 256, need, b->max);
	char *p = xrealloc(b->p, cap);
	/* The first size is a guess at the working size, not a need: where the
	 * allocator cannot give it (an address-space limit, many workers), the
	 * room asked for may still fit, as a record must, or at least the error
	 * record that replaces it (pipeline/parse_stage.c). */
	if (!p && !b->cap && cap > need && b->first > 256) {
		cap = dynbuf_cap_for(256, need, b->max);
		p = xrealloc(NULL, cap);
	}
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int dynbuf_append(struct dynbuf *b, const void *p, size_t n)
{
	int r = dynbuf_reserve(b, n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

int dynbuf_putc(struct dynbuf *b, char c)
{
	if (b->len + 1 < b->cap) {
		b->p[b->len++] = c;
		return 0;
	}
	return dynbuf_append(b, &c, 1);
}

int dynbuf_puts(struct dynbuf *b, const char *s)
{
	return dynbuf_append(b, s, strlen(s));
}

int dynbuf_put_u64(struct dynbuf *b, uint64_t v)
{
	char tmp[20];
	char *e = tmp + sizeof(tmp), *q = e;
	do {
		*--q = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return dynbuf_put(b, q, (size_t)(e - q));
}

int dynbuf_vprintf(struct dynbuf *b, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	int r = n < 0 ? -EINVAL : dynbuf_reserve(b, (size_t)n);
	if (r == 0) {
		vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
	return r;
}

int dynbuf_printf(struct dynbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = dynbuf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

char *dynbuf_take(struct dynbuf *b, size_t *len)
{
	if (dynbuf_reserve(b, 0) < 0)
		return NULL;
	b->p[b->len] = '\0';
	char *p = b->p;
	if (len)
		*len = b->len;
	dynbuf_forget(b);
	return p;
}
