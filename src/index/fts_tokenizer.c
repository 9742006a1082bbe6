/* SPDX-License-Identifier: MIT */
/* unicode61's tokens from a table of characters: see fts_tokenizer.h. */
#include "index/fts_tokenizer.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "index/fts5.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Characters below this are looked up (the Basic Multilingual Plane and
 * the next, where emoji are); from it on SQLite tokenizes. */
#define FT_TABLE 0x20000u

/* An entry: the character's class in bits 26-28 (0 while not yet asked),
 * the length of its fold in bits 24-25 and the fold's UTF-8 bytes in bits
 * 0-23, first byte lowest. */
enum ft_class {
	FT_UNKNOWN,
	FT_SEPARATOR,
	/* starts a token, and continues one (unicode61: a letter or digit) */
	FT_START,
	/* continues a token only (unicode61: a diacritic) */
	FT_INNER,
	/* its fold is longer than an entry holds: SQLite tokenizes */
	FT_ASK,
};
#define FT_ENTRY(cls, len, bytes) ((uint32_t)(cls) << 26 | (uint32_t)(len) << 24 | (bytes))
#define FT_CLASS(e) ((e) >> 26)
#define FT_LEN(e) (((e) >> 24) & 3u)

/* What the registration keeps: SQLite's unicode61, found before ours took
 * its name. */
struct ft_module {
	fts5_tokenizer sqlite;
	void *sqlite_ud;
};

struct ft {
	const struct ft_module *m;
	/* an instance of SQLite's, made with the same arguments */
	Fts5Tokenizer *sqlite;
	uint32_t *table;
	/* a token being made; its capacity keeps 3 bytes spare */
	char *out;
	size_t cap;
	/* no table, or an answer of a shape the probes do not expect:
	 * SQLite tokenizes everything */
	bool sqlite_only;
};

/* One character as unicode61 reads it (SQLite's READ_UTF8): a lead byte
 * takes every continuation byte that follows, whatever their number, in
 * 32-bit arithmetic; an overlong form, a surrogate and U+FFFE/U+FFFF
 * read as U+FFFD; a continuation byte alone is the character of its
 * value. */
static uint32_t ft_read(const unsigned char **pp, const unsigned char *end)
{
	const unsigned char *p = *pp;
	uint32_t c = *p++;
	if (c >= 0xc0) {
		static const unsigned char lead_bits[8] = { 0x1f, 0x1f, 0x1f, 0x1f, 0x0f, 0x0f, 0x07, 0x03 };
		c = c >= 0xfe ? 0 : c >= 0xfc ? c & 0x01 : c & lead_bits[(c >> 3) & 7];
		while (p != end && (*p & 0xc0) == 0x80)
			c = (c << 6) + (*p++ & 0x3fu);
		if (c < 0x80 || (c & 0xfffff800u) == 0xd800 || (c & 0xfffffffeu) == 0xfffe)
			c = 0xfffd;
	}
	*pp = p;
	return c;
}

/* The tokens SQLite's tokenizer gives for a probe of a few bytes: the
 * first two, and whether one had a flag or more bytes than an entry
 * holds (an answer the table cannot say). */
struct ft_probe {
	int n;
	bool odd;
	int start[2], end[2], len[2];
	char bytes[2][6];
};

static int ft_probe_token(void *ctx, int flags, const char *token, int len, int start, int end)
{
	struct ft_probe *p = ctx;
	if (flags != 0 || len < 0 || len > (int)sizeof(p->bytes[0]))
		p->odd = true;
	else if (p->n < 2) {
		p->start[p->n] = start;
		p->end[p->n] = end;
		p->len[p->n] = len;
		memcpy(p->bytes[p->n], token, (size_t)len);
	}
	p->n++;
	return SQLITE_OK;
}

static int ft_ask(struct ft *t, const char *text, size_t n, struct ft_probe *p)
{
	memset(p, 0, sizeof(*p));
	return t->m->sqlite.xTokenize(t->sqlite, p, FTS5_TOKENIZE_DOCUMENT, text, (int)n,
	                              ft_probe_token);
}

static uint32_t ft_fold_entry(enum ft_class cls, const char *bytes, int len)
{
	if (len > 3)
		return FT_ENTRY(FT_ASK, 0, 0);
	uint32_t b = 0;
	for (int i = 0; i < len; i++)
		b |= (uint32_t)(unsigned char)bytes[i] << (8 * i);
	return FT_ENTRY(cls, len, b);
}

/* Asks SQLite what c is: alone, a token means it starts one (the token is
 * its fold); between two `a`s, one token means it continues one, two mean
 * it separates.  0 for an answer of another shape. */
static uint32_t ft_learn(struct ft *t, uint32_t c)
{
	char probe[8];
	size_t n = (size_t)(utf8_put(probe + 1, c) - (probe + 1));
	struct ft_probe p;
	if (ft_ask(t, probe + 1, n, &p) != SQLITE_OK || p.odd)
		return FT_UNKNOWN;
	if (p.n == 1)
		return p.start[0] == 0 && p.end[0] == (int)n ? ft_fold_entry(FT_START, p.bytes[0], p.len[0])
		                                             : FT_UNKNOWN;
	if (p.n != 0)
		return FT_UNKNOWN;
	probe[0] = 'a';
	probe[n + 1] = 'a';
	if (ft_ask(t, probe, n + 2, &p) != SQLITE_OK || p.odd)
		return FT_UNKNOWN;
	if (p.n == 2 && p.len[0] == 1 && p.len[1] == 1 && p.end[0] == 1 && p.start[1] == (int)n + 1)
		return FT_ENTRY(FT_SEPARATOR, 0, 0);
	if (p.n == 1 && p.start[0] == 0 && p.end[0] == (int)n + 2 && p.len[0] >= 2 &&
	    p.bytes[0][0] == 'a' && p.bytes[0][p.len[0] - 1] == 'a')
		return ft_fold_entry(FT_INNER, p.bytes[0] + 1, p.len[0] - 2);
	return FT_UNKNOWN;
}

static inline uint32_t ft_entry(struct ft *t, uint32_t c)
{
	uint32_t e = t->table[c];
	if (e == FT_UNKNOWN) {
		e = ft_learn(t, c);
		if (e == FT_UNKNOWN)
			t->sqlite_only = true;
		t->table[c] = e;
	}
	return e;
}

/* c's entry, or 0 where SQLite is to tokenize from the token c is in. */
static inline uint32_t ft_lookup(struct ft *t, uint32_t c)
{
	if (c >= FT_TABLE)
		return 0;
	uint32_t e = ft_entry(t, c);
	return t->sqlite_only || FT_CLASS(e) == FT_ASK ? 0 : e;
}

/* The probes' neighbour must be a letter of its own fold. */
static bool ft_usable(struct ft *t)
{
	uint32_t e = ft_entry(t, 'a');
	return !t->sqlite_only && FT_CLASS(e) == FT_START && FT_LEN(e) == 1 && (e & 0xff) == 'a';
}

static int ft_create(void *ud, const char **argv, int argc, Fts5Tokenizer **out)
{
	const struct ft_module *m = ud;
	*out = NULL;
	struct ft *t = xcalloc(1, sizeof(*t));
	if (!t)
		return SQLITE_NOMEM;
	t->m = m;
	int rc = m->sqlite.xCreate(m->sqlite_ud, argv, argc, &t->sqlite);
	if (rc != SQLITE_OK) {
		xfree(t);
		return rc;
	}
	/* untouched pages of the table cost nothing: a text meets few of
	 * the characters */
	t->table = xcalloc(FT_TABLE, sizeof(*t->table));
	t->cap = 64;
	t->out = xmalloc(t->cap + 3);
	t->sqlite_only = !t->table || !t->out || !ft_usable(t);
	*out = (Fts5Tokenizer *)t;
	return SQLITE_OK;
}

static void ft_delete(Fts5Tokenizer *tok)
{
	struct ft *t = (struct ft *)tok;
	if (!t)
		return;
	t->m->sqlite.xDelete(t->sqlite);
	xfree(t->table);
	xfree(t->out);
	xfree(t);
}

typedef int ft_token_fn(void *ctx, int flags, const char *token, int len, int start, int end);

/* SQLite's tokens of text[from..n), their offsets counted from text. */
struct ft_shift {
	void *ctx;
	ft_token_fn *token;
	int by;
};

static int ft_shifted(void *ctx, int flags, const char *token, int len, int start, int end)
{
	struct ft_shift *s = ctx;
	return s->token(s->ctx, flags, token, len, start + s->by, end + s->by);
}

static int ft_sqlite_from(struct ft *t, void *ctx, int flags, const char *text, int n, int from,
                          ft_token_fn *token)
{
	struct ft_shift s = { ctx, token, from };
	return t->m->sqlite.xTokenize(t->sqlite, &s, flags, text + from, n - from, ft_shifted);
}

static int ft_tokenize(Fts5Tokenizer *tok, void *ctx, int flags, const char *text, int n,
                       ft_token_fn *token)
{
	struct ft *t = (struct ft *)tok;
	if (t->sqlite_only)
		return t->m->sqlite.xTokenize(t->sqlite, ctx, flags, text, n, token);
	const unsigned char *base = (const unsigned char *)text, *p = base, *end = base + n;
	int rc = SQLITE_OK;
	while (rc == SQLITE_OK) {
		/* between tokens: to the next character that starts one */
		const unsigned char *start;
		uint32_t e;
		do {
			if (p >= end)
				return SQLITE_OK;
			start = p;
			if (!(e = ft_lookup(t, ft_read(&p, end))))
				return ft_sqlite_from(t, ctx, flags, text, n, (int)(start - base), token);
		} while (FT_CLASS(e) != FT_START);
		/* the token: each character's fold, to the first that separates */
		size_t len = 0;
		const unsigned char *last;
		for (;;) {
			if (len >= t->cap) {
				char *grown = xrealloc(t->out, 2 * t->cap + 3);
				if (!grown)
					return SQLITE_NOMEM;
				t->out = grown;
				t->cap *= 2;
			}
			t->out[len] = (char)(e & 0xff);
			t->out[len + 1] = (char)((e >> 8) & 0xff);
			t->out[len + 2] = (char)((e >> 16) & 0xff);
			len += FT_LEN(e);
			last = p;
			if (p >= end)
				break;
			const unsigned char *next = p;
			if (!(e = ft_lookup(t, ft_read(&next, end))))
				return ft_sqlite_from(t, ctx, flags, text, n, (int)(start - base), token);
			if (FT_CLASS(e) == FT_SEPARATOR)
				break;
			p = next;
		}
		rc = token(ctx, 0, t->out, (int)len, (int)(start - base), (int)(last - base));
	}
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void ft_module_free(void *ud)
{
	xfree(ud);
}

int fts_tokenizer_register(sqlite3 *db)
{
	fts5_api *api;
	int rc = fts5_api_of(db, &api);
	struct ft_module *m = rc == SQLITE_OK ? xcalloc(1, sizeof(*m)) : NULL;
	if (rc == SQLITE_OK && !m)
		rc = SQLITE_NOMEM;
	if (rc == SQLITE_OK)
		rc = api->xFindTokenizer(api, "unicode61", &m->sqlite_ud, &m->sqlite);
	if (rc == SQLITE_OK) {
		fts5_tokenizer ours = { ft_create, ft_delete, ft_tokenize };
		/* FTS5 copies the methods; the destructor is called when the
		 * connection closes, not when the registration fails */
		rc = api->xCreateTokenizer(api, "unicode61", m, &ours, ft_module_free);
		if (rc == SQLITE_OK)
			return rc;
	}
	xfree(m);
	return rc;
}
