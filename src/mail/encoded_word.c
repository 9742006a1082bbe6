/* SPDX-License-Identifier: MIT */
/* RFC 2047 encoded words and raw 8-bit header bytes: see encoded_word.h.
 *
 * One left-to-right pass.  The value is cut into encoded words
 * (`=?charset?B|Q?text?=`, RFC 2047 section 2) and the raw text between
 * them.  Decoded bytes of consecutive adjacent words in the same charset
 * are joined before charset conversion: RFC 2047 section 5 forbids splitting
 * a character across words, but real senders split UTF-8 sequences, and
 * mail readers join them.  White space between adjacent words is dropped
 * (section 6.2).  Raw text is kept when it is valid UTF-8 (RFC 6532) and
 * read in the body's charset or as windows-1252 otherwise, with
 * MAIL_W_UNENCODED_8BIT_HEADER (charset_decode_header).
 *
 * Cost: a word attempt at `=?` scans to at most its third `?`, and the next
 * attempt cannot start before the first of those, so each byte is scanned a
 * bounded number of times: linear in the input whatever it holds.
 *
 * Memory: output is built at the end of ctx->scratch (from its current
 * length, which is restored before returning, so a caller's bytes there
 * survive, though pointers into it may move) and copied into ctx->arena.
 * Pending word bytes live in one arena buffer of the input's size (decoded
 * payloads are never longer than their encoding). */
#include "mail/encoded_word.h"
#include "core/hex.h"
#include "mail/charset.h"
#include "mail/mail_ctx.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

struct encoded_word_word {
	struct str charset;
	const uint8_t *text;    /* encoded text */
	size_t text_n;
	char enc;               /* 'B' or 'Q' */
	size_t end;             /* offset just past `?=` */
};

static inline bool encoded_word_is_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Recognises a word at p[i] (which holds `=?`).  Returns 1 for a well-formed
 * word, 0 for text that is not a word, -1 for a word that started properly
 * (`=?cs?B?`) but has no `?=` end.  Encoded text may hold SP and HTAB
 * (Python and Thunderbird accept the Q words some senders write that way);
 * the charset and encoding may not. */
static int encoded_word_scan(const uint8_t *p, size_t n, size_t i, struct encoded_word_word *w)
{
	size_t j = i + 2, cs = j;
	while (j < n && p[j] != '?' && !encoded_word_is_space(p[j]))
		j++;
	if (j >= n || p[j] != '?' || j == cs)
		return 0;
	w->charset = (struct str){ (const char *)p + cs, j - cs };
	j++;
	if (j + 1 >= n || p[j + 1] != '?')
		return 0;
	char e = (char)(p[j] & ~0x20);
	if (e != 'B' && e != 'Q')
		return 0;
	w->enc = e;
	j += 2;
	size_t t = j;
	while (j < n && p[j] != '?' && p[j] != '\r' && p[j] != '\n')
		j++;
	if (j + 1 >= n || p[j] != '?' || p[j + 1] != '=')
		return -1;
	w->text = p + t;
	w->text_n = j - t;
	w->end = j + 2;
	return 1;
}

static int encoded_word_b64(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes the payload of w into dst (room for w->text_n bytes).  Returns the
 * length, or -1 when the payload is not valid for its encoding. */
static long encoded_word_payload(const struct encoded_word_word *w, uint8_t *dst)
{
	const uint8_t *s = w->text;
	size_t n = w->text_n, k = 0;
	if (w->enc == 'Q') {
		/* RFC 2047 4.2: `_` is SP, `=XX` a byte; other bytes as they are
		 * (raw 8-bit bytes included: decoded with the word's charset). */
		for (size_t i = 0; i < n; i++) {
			if (s[i] == '_') {
				dst[k++] = ' ';
			} else if (s[i] == '=') {
				int h, l;
				if (i + 2 >= n)
					return -1;
				h = hex_digit(s[i + 1]);
				l = hex_digit(s[i + 2]);
				if (h < 0 || l < 0)
					return -1;
				dst[k++] = (uint8_t)(h << 4 | l);
				i += 2;
			} else {
				dst[k++] = s[i];
			}
		}
		return (long)k;
	}
	/* B (RFC 2047 4.1, base64 of RFC 2045 6.8): padding optional at the
	 * end, as many senders omit it; a lone sextet is invalid. */
	uint32_t acc = 0;
	size_t bits = 0, i = 0, pad = 0;
	for (; i < n; i++) {
		if (s[i] == '=') {
			pad++;
			continue;
		}
		if (pad)
			return -1;          /* data after padding */
		int v = encoded_word_b64(s[i]);
		if (v < 0) {
			if (s[i] == ' ' || s[i] == '\t')
				continue;
			return -1;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dst[k++] = (uint8_t)(acc >> bits);
		}
	}
	if (bits >= 6 || pad > 2)
		return -1;
	return (long)k;
}

struct encoded_word_state {
	struct mail_ctx *ctx;
	uint64_t *warnings;
	uint8_t *pend;            /* decoded bytes of adjacent words, not yet converted */
	size_t pend_n;
	struct str pend_cs;  /* their charset */
};

static int encoded_word_flush(struct encoded_word_state *st)
{
	if (!st->pend_n)
		return 0;
	uint64_t replaced = 0;
	int r = charset_decode(st->ctx, st->pend_cs, st->pend, st->pend_n,
	                       &st->ctx->scratch, st->warnings, &replaced);
	st->pend_n = 0;
	return r;
}

/* Raw text between words: charset_decode_header(). */
static int encoded_word_raw(struct encoded_word_state *st, const uint8_t *p, size_t n)
{
	if (!n)
		return 0;
	int r = encoded_word_flush(st);
	if (r < 0)
		return r;
	return charset_decode_header(st->ctx, p, n, &st->ctx->scratch, st->warnings);
}

static bool encoded_word_same_charset(struct str a, struct str b)
{
	return a.n == b.n && strncasecmp(a.p, b.p, a.n) == 0;
}

int encoded_word_decode(struct mail_ctx *ctx, struct str in, struct str *out,
              uint64_t *warnings)
{
	const uint8_t *p = (const uint8_t *)in.p;
	size_t n = in.n;
	uint64_t w_dummy = 0;
	if (!warnings)
		warnings = &w_dummy;

	/* Fast path: plain ASCII with no `=?` is its own decoding. */
	bool plain = true;
	for (size_t i = 0; i < n; i++) {
		if (p[i] >= 0x80 || (p[i] == '=' && i + 1 < n && p[i + 1] == '?')) {
			plain = false;
			break;
		}
	}
	if (plain) {
		*out = in;
		return 0;
	}

	struct encoded_word_state st = { .ctx = ctx, .warnings = warnings };
	size_t base = ctx->scratch.len;
	int r = 0;
	st.pend = arena_alloc(&ctx->arena, n);
	if (!st.pend)
		return -ENOMEM;

	size_t text = 0;           /* start of raw text not yet emitted */
	size_t i = 0;
	bool after_word = false;   /* text since the last word is white space only */
	while (i < n) {
		if (!(p[i] == '=' && i + 1 < n && p[i + 1] == '?')) {
			if (!encoded_word_is_space(p[i]))
				after_word = false;
			i++;
			continue;
		}
		struct encoded_word_word w;
		int k = encoded_word_scan(p, n, i, &w);
		if (k == 0) {
			after_word = false;
			i += 1;
			continue;
		}
		if (k < 0) {
			/* `=?cs?Q?...` never closed: literal text. */
			mail_warn(warnings, MAIL_W_INVALID_ENCODED_WORD);
			after_word = false;
			i += 2;
			continue;
		}
		/* Text before this word: emitted unless it is only the white
		 * space between two words (RFC 2047 6.2), which is dropped. */
		if (!after_word) {
			if ((r = encoded_word_raw(&st, p + text, i - text)) < 0)
				goto fail;
			text = i;
		}
		/* Decode after the pending bytes of an adjacent word in the same
		 * charset, so that a character split across words survives. */
		bool join = after_word && st.pend_n && encoded_word_same_charset(st.pend_cs, w.charset);
		if (!join && (r = encoded_word_flush(&st)) < 0)
			goto fail;
		long len = encoded_word_payload(&w, st.pend + st.pend_n);
		if (len < 0) {
			/* Kept literally, with the white space before it: both
			 * stay in the raw text from `text`. */
			mail_warn(warnings, MAIL_W_INVALID_ENCODED_WORD);
			after_word = false;
			i = w.end;
			continue;
		}
		if (!join)
			st.pend_cs = w.charset;
		st.pend_n += (size_t)len;
		i = text = w.end;
		after_word = true;
	}
	if ((r = encoded_word_flush(&st)) < 0 || (r = encoded_word_raw(&st, p + text, n - text)) < 0)
		goto fail;

	char *s = arena_memdup(&ctx->arena, ctx->scratch.p + base, ctx->scratch.len - base);
	if (!s) {
		r = -ENOMEM;
		goto fail;
	}
	*out = (struct str){ s, ctx->scratch.len - base };
	ctx->scratch.len = base;
	return 0;
fail:
	ctx->scratch.len = base;
	return r;
}
