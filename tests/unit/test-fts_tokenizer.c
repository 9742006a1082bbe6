/* SPDX-License-Identifier: MIT */
/* Unit tests for index/fts_tokenizer.c: its tokens, flags and offsets equal
 * SQLite's unicode61 (remove_diacritics 2, as the index's table is made)
 * for every character of the first two planes (its table's) in several
 * places of a token, for bytes that are not UTF-8, for characters past
 * U+1FFFF and folds of four bytes (which it leaves to SQLite) and for a
 * caller that stops the tokenizing. */
#include "index/fts5.h"
#include "index/fts_tokenizer.h"

#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* What a tokenizing gave: each token's flags, offsets and bytes, in a row. */
struct tokens {
	char *p;
	size_t len, cap;
	int count, stop_after, stop_with;
};

static void tokens_put(struct tokens *t, const void *p, size_t n)
{
	if (t->len + n > t->cap) {
		t->cap = 2 * (t->len + n);
		t->p = realloc(t->p, t->cap);
		assert_non_null(t->p);
	}
	memcpy(t->p + t->len, p, n);
	t->len += n;
}

static int on_token(void *ctx, int flags, const char *token, int len, int start, int end)
{
	struct tokens *t = ctx;
	int head[4] = { flags, len, start, end };
	tokens_put(t, head, sizeof(head));
	tokens_put(t, token, (size_t)len);
	if (++t->count == t->stop_after)
		return t->stop_with;
	return SQLITE_OK;
}

struct pair {
	sqlite3 *db;
	fts5_tokenizer sqlite, ours;
	Fts5Tokenizer *sqlite_tok, *our_tok;
};

static int setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	assert_int_equal(sqlite3_open(":memory:", &p->db), SQLITE_OK);
	fts5_api *api;
	assert_int_equal(fts5_api_of(p->db, &api), SQLITE_OK);
	void *ud_sqlite, *ud_ours;
	assert_int_equal(api->xFindTokenizer(api, "unicode61", &ud_sqlite, &p->sqlite), SQLITE_OK);
	assert_int_equal(fts_tokenizer_register(p->db), SQLITE_OK);
	assert_int_equal(api->xFindTokenizer(api, "unicode61", &ud_ours, &p->ours), SQLITE_OK);
	/* the name now finds ours, on this connection */
	assert_ptr_not_equal(p->ours.xTokenize, p->sqlite.xTokenize);
	const char *args[] = { "remove_diacritics", "2" };
	assert_int_equal(p->sqlite.xCreate(ud_sqlite, args, 2, &p->sqlite_tok), SQLITE_OK);
	assert_int_equal(p->ours.xCreate(ud_ours, args, 2, &p->our_tok), SQLITE_OK);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pair *p = *state;
	p->sqlite.xDelete(p->sqlite_tok);
	p->ours.xDelete(p->our_tok);
	sqlite3_close(p->db);
	free(p);
	return 0;
}

/* Both tokenize text alike: the same tokens and the same return. */
static void same(struct pair *p, const char *text, size_t n, int stop_after, int stop_with)
{
	struct tokens a = { .stop_after = stop_after, .stop_with = stop_with };
	struct tokens b = a;
	int ra = p->sqlite.xTokenize(p->sqlite_tok, &a, FTS5_TOKENIZE_DOCUMENT, text, (int)n, on_token);
	int rb = p->ours.xTokenize(p->our_tok, &b, FTS5_TOKENIZE_DOCUMENT, text, (int)n, on_token);
	assert_int_equal(rb, ra);
	assert_int_equal(b.count, a.count);
	assert_int_equal(b.len, a.len);
	if (a.len)
		assert_memory_equal(b.p, a.p, a.len);
	free(a.p);
	free(b.p);
}

static size_t utf8(uint32_t c, char *out)
{
	unsigned char *o = (unsigned char *)out;
	if (c < 0x80) {
		o[0] = (unsigned char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (unsigned char)(0xc0 | c >> 6);
		o[1] = (unsigned char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (unsigned char)(0xe0 | c >> 12);
		o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | c >> 18);
	o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (c & 0x3f));
	return 4;
}

/* Each character alone, first, inside and last in a token, twice in a row
 * and beside a letter with a diacritic; surrogates and U+FFFE/U+FFFF, which
 * both read as U+FFFD, included.  A chunk of characters a call, so that
 * characters met before change nothing. */
static void test_every_character_of_the_table(void **state)
{
	struct pair *p = *state;
	enum { CHUNK = 2048 };
	char *text = malloc(CHUNK * 40);
	assert_non_null(text);
	for (uint32_t from = 1; from < 0x20000; from += CHUNK) {
		size_t n = 0;
		for (uint32_t c = from; c < from + CHUNK; c++) {
			char u[4];
			size_t k = utf8(c, u);
#define PUT(s) (memcpy(text + n, (s), strlen(s)), n += strlen(s))
#define PUTC() (memcpy(text + n, u, k), n += k)
			PUTC(); PUT(" b"); PUTC(); PUT("c "); PUTC(); PUT("D ");
			PUTC(); PUTC(); PUT(" e\xcc\x81"); PUTC(); PUT("\xc3\x89 ");
#undef PUT
#undef PUTC
		}
		same(p, text, n, 0, 0);
	}
	free(text);
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Bytes that are not UTF-8: continuation bytes alone, leads of every kind
 * followed by any number of continuation bytes (SQLite reads them all into
 * one character), overlong forms, NULs, among letters and spaces. */
static void test_bytes_not_utf8(void **state)
{
	struct pair *p = *state;
	static const char pick[] = "aZ9 .\xc3\xa9\xcc\x81\x80\xbf\xc0\xc1\xdf\xe0\xed\xef\xf0\xf4\xf8\xfc\xfe\xff";
	uint64_t seed = 0x9e3779b97f4a7c15u;
	char text[400];
	for (int i = 0; i < 20000; i++) {
		size_t n = next(&seed) % sizeof(text);
		for (size_t j = 0; j < n; j++) {
			uint64_t r = next(&seed);
			text[j] = r % 4 == 0 ? (char)(r >> 8) : pick[(r >> 8) % (sizeof(pick) - 1)];
		}
		same(p, text, n, 0, 0);
	}
}

/* Past U+1FFFF, and for a fold of four bytes (Deseret's capitals), SQLite
 * tokenizes, from the start of the token the character falls in or from
 * the character itself between tokens. */
static void test_past_the_table(void **state)
{
	struct pair *p = *state;
	static const char *const texts[] = {
		"\xf0\x9f\x98\x80", "ab\xf0\x9f\x98\x80" "cd", "x \xf0\x9d\x90\x80\xf0\x9d\x90\x81 y",
		"\xc3\xa9\xf0\x9d\x90\x80\xc3\x89 z", "one two \xf0\x9f\x98\x80 three", "a\xcc\x81\xf0\x9f\x98\x80",
		"\xf0\x9d\x90\x80", "word \xf4\x8f\xbf\xbf", "ab\xf0\xa0\x80\x80" "cd \xf0\x90\x90\x80x y", "ab\xc3\xa9\x80\x80\x80\x80 cd",
		"\xc3\x80\x80\x80 tail", "\xf8\x88\x80\x80\x80 five", "\xfc\x84\x80\x80\x80\x80 six",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		same(p, texts[i], strlen(texts[i]), 0, 0);
	/* supplementary letters (math bold, Deseret with its case, a CJK
	 * ideograph of plane 2) among BMP ones */
	char text[4096];
	uint64_t seed = 42;
	static const uint32_t chars[] = { 'a', 'Q', ' ', 0xe9, 0x301, 0x410, 0x4e2d, 0x1d400, 0x10400,
	                                  0x10428, 0x1f600, 0x20000, 0x3000 };
	for (int i = 0; i < 2000; i++) {
		size_t n = 0, want = next(&seed) % 200;
		for (size_t j = 0; j < want; j++)
			n += utf8(chars[next(&seed) % (sizeof(chars) / sizeof(chars[0]))], text + n);
		same(p, text, n, 0, 0);
	}
}

/* A token longer than any buffer the tokenizer starts with. */
static void test_long_token(void **state)
{
	struct pair *p = *state;
	enum { N = 30000 };
	char *text = malloc(3 * N + 8);
	assert_non_null(text);
	size_t n = 0;
	for (int i = 0; i < N; i++)
		n += utf8(i % 3 == 0 ? 0xc9 : i % 3 == 1 ? 'A' : 0x1e9e, text + n);
	memcpy(text + n, " end", 4);
	same(p, text, n + 4, 0, 0);
	free(text);
}

/* A caller that stops it (SQLITE_DONE, which is success) or fails it: the
 * same tokens given and the same code returned, on either side of the
 * table's edge. */
static void test_caller_stops(void **state)
{
	struct pair *p = *state;
	static const char text[] = "one two thr\xc3\xa9\xc3\xa9 four \xf0\x9f\x98\x80 five six";
	for (int after = 1; after <= 7; after++) {
		same(p, text, sizeof(text) - 1, after, SQLITE_DONE);
		same(p, text, sizeof(text) - 1, after, SQLITE_NOMEM);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_character_of_the_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bytes_not_utf8, setup, teardown),
		cmocka_unit_test_setup_teardown(test_past_the_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caller_stops, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
