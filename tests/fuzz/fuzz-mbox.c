/* SPDX-License-Identifier: MIT */
/* mbox splitting (mail/mbox.c).  The first two bytes pick how the rest is
 * cut into chunks and the Content-Length limit; the rest is the archive.
 *
 * Checked: the archive split whole (as ingest.c does) gives spans inside
 * the data, in order, each ending at or before the next separator; split
 * again in chunks, as reader.c feeds mbox_next_max() (each chunk appended
 * to the bytes not yet cut, in a fresh exact-size buffer that starts at
 * the pending separator), it gives the same spans, for a cut at one offset,
 * for fixed-size chunks, and for one byte at a time; an answer given
 * before EOF is the answer at EOF; mbox_find_separator() returns the first
 * separator, as a plain reference scan of the rule finds it;
 * mbox_scan_keep() keeps what a resumed search needs; mbox_unquote()
 * removes exactly one '>' from each ">+From " line. */
#include "fuzz.h"
#include "mail/mbox.h"
#include "tests/mbox_chunks.h"

#define MAX_SPANS 4096

struct spans {
	size_t n;
	struct mbox_span s[MAX_SPANS];
	size_t next[MAX_SPANS];
};

static struct spans whole, chunked;

static void check_span(const struct mbox_span *m, size_t pos, size_t next, size_t n)
{
	FUZZ_CHECK(m->from == pos);
	FUZZ_CHECK(m->from < m->start);
	FUZZ_CHECK(m->start <= m->end);
	FUZZ_CHECK(m->end <= next);
	FUZZ_CHECK(next <= n);
	FUZZ_CHECK(next > pos);
}

static void split_whole(const uint8_t *p, size_t n, uint64_t max_len, struct spans *out)
{
	out->n = 0;
	size_t pos = 0;
	while (pos < n && out->n < MAX_SPANS) {
		struct mbox_span m, early;
		size_t next, early_next;
		FUZZ_CHECK(mbox_next_max(p, n, pos, true, max_len, &m, &next) == 1);
		check_span(&m, pos, next, n);
		/* what is decided without EOF stays decided */
		if (mbox_next_max(p, n, pos, false, max_len, &early, &early_next)) {
			FUZZ_CHECK(early.from == m.from && early.start == m.start && early.end == m.end);
			FUZZ_CHECK(early_next == next);
		}
		out->s[out->n] = m;
		out->next[out->n++] = next;
		pos = next;
	}
}

static bool add_chunk_span(void *ctx, const uint8_t *buf, size_t len, size_t base, size_t pos,
                           const struct mbox_span *span, size_t next)
{
	(void)buf;
	struct spans *out = ctx;
	struct mbox_span m = *span;
	check_span(&m, pos, next, len);
	m.from += base;
	m.start += base;
	m.end += base;
	out->s[out->n] = m;
	out->next[out->n++] = base + next;
	return out->n < MAX_SPANS;
}

/* reader.c's loop (tests/mbox_chunks.h): cuts[0..k) are the chunk ends,
 * the last one n. */
static void split_chunks(const uint8_t *in, const size_t *cuts, size_t k, uint64_t max_len,
                         struct spans *out)
{
	out->n = 0;
	size_t pending;
	enum mbox_chunks_end end = mbox_split_chunks(in, cuts, k, max_len, add_chunk_span, out, &pending);
	FUZZ_CHECK(end == MBOX_CHUNKS_DONE || end == MBOX_CHUNKS_STOPPED);
}

static void check_same(void)
{
	FUZZ_CHECK(chunked.n == whole.n);
	for (size_t i = 0; i < whole.n; i++) {
		FUZZ_CHECK(chunked.s[i].from == whole.s[i].from);
		FUZZ_CHECK(chunked.s[i].start == whole.s[i].start);
		FUZZ_CHECK(chunked.s[i].end == whole.s[i].end);
		FUZZ_CHECK(chunked.next[i] == whole.next[i]);
	}
}

/* The rule of mbox.h, written plainly, for a line start i > 0: 1 splits,
 * 0 does not, -1 bytes past n decide.  A dated From_ line after an empty
 * line; or "From -" anywhere, or an undated one-word From_ line after an
 * empty line, when a known header field comes within the next
 * MBOX_PEEK_LINES lines and all lines before it are header fields. */
static int ref_splits(const uint8_t *p, size_t n, size_t i)
{
	static const char *const known[] = {
		"return-path", "received", "from", "to", "cc", "date", "subject", "message-id",
		"delivered-to", "sender", "reply-to", "mime-version", "x-mozilla-status",
		"x-mozilla-status2", "x-mozilla-keys", "x-account-key", "x-uidl", "envelope-to",
		"x-original-to", "x-gm-thrid", "x-gmail-labels", "status", "x-status", "content-type",
	};
	const uint8_t *nl = memchr(p + i, '\n', n - i);
	if (!nl)
		return n - i <= MBOX_LINE_MAX + 1 && !memcmp(p + i, "From ", n - i < 5 ? n - i : 5) ? -1 : 0;
	if (!mbox_is_separator(p + i, n - i))
		return 0;
	bool empty = i == 1 || p[i - 2] == '\n' || (p[i - 2] == '\r' && (i == 2 || p[i - 3] == '\n'));
	if (empty && mbox_is_from_line(p + i, n - i))
		return 1;
	char line[MBOX_LINE_MAX + 1], word[MBOX_LINE_MAX + 1], more[2];
	size_t len = (size_t)(nl - (p + i));
	memcpy(line, p + i, len);
	line[len] = '\0';
	if (len && line[len - 1] == '\r')
		line[len - 1] = '\0';
	for (char *t = line; *t; t++)
		if (*t == '\t')
			*t = ' ';
	bool dash = !strcmp(line, "From -") || !strncmp(line, "From - ", 7);
	bool undated = sscanf(line + 5, "%s %1s", word, more) <= 1;
	if (!dash && !(empty && undated))
		return 0;
	size_t j = (size_t)(nl - p) + 1;
	for (int l = 0; l < MBOX_PEEK_LINES; l++) {
		size_t e = j;
		while (e < n && e - j < MBOX_LINE_MAX + 2 && p[e] != '\n')
			e++;
		char name[80] = "";
		size_t k = 0;
		while (j + k < e && k < 77 && p[j + k] > ' ' && p[j + k] < 0x7f && p[j + k] != ':') {
			name[k] = (char)p[j + k];
			k++;
		}
		name[k] = '\0';
		size_t c = j + k;
		while (c < e && (p[c] == ' ' || p[c] == '\t'))
			c++;
		bool field = k && c < e && p[c] == ':';
		for (size_t t = 0; field && t < sizeof(known) / sizeof(known[0]); t++)
			if (!strcasecmp(name, known[t]))
				return 1;
		if (e == n && e - j < MBOX_LINE_MAX + 2)
			return -1;
		if (e == n || p[e] != '\n')
			return 0;
		bool folded = l > 0 && (p[j] == ' ' || p[j] == '\t');
		if (folded) {
			folded = false;
			for (size_t t = j + 1; t < e; t++)
				folded |= p[t] != ' ' && p[t] != '\t' && p[t] != '\r';
		}
		if (!field && !folded)
			return 0;
		j = e + 1;
	}
	return 0;
}

static size_t ref_find(const uint8_t *p, size_t n, size_t from)
{
	for (size_t i = from + 1; i < n; i++) {
		if (p[i - 1] != '\n')
			continue;
		int r = ref_splits(p, n, i);
		if (r)
			return r > 0 ? i : n;
	}
	return n;
}

static void check_find(const uint8_t *p, size_t n, size_t cut)
{
	FUZZ_CHECK(mbox_find_separator(p, n, 0, false) == ref_find(p, n, 0));
	if (n)
		FUZZ_CHECK(mbox_find_separator(p, n, n - 1, false) == n);
	/* a search resumed over the kept bytes finds what one search finds */
	if (cut > n || mbox_find_separator(p, cut, 0, false) != cut)
		return;
	size_t keep = mbox_scan_keep(p, cut, 0);
	FUZZ_CHECK(keep <= cut && cut - keep <= MBOX_KEEP_MAX);
	FUZZ_CHECK(keep + mbox_find_separator(p + keep, n - keep, 0, false) == mbox_find_separator(p, n, 0, false));
}

/* Unquoting in place against a plain copy that drops the first byte of
 * every line matching ">+From ". */
static void check_unquote(const uint8_t *p, size_t n)
{
	uint8_t *a = fuzz_dup(p, n), *b = malloc(n ? n : 1);
	FUZZ_CHECK(b);
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		size_t e = i;
		while (e < n && p[e] != '\n')
			e++;
		if (e < n)
			e++;
		size_t k = i;
		while (k < e && p[k] == '>')
			k++;
		size_t skip = k > i && e - k >= 5 && !memcmp(p + k, "From ", 5);
		memcpy(b + w, p + i + skip, e - i - skip);
		w += e - i - skip;
		i = e;
	}
	FUZZ_CHECK(mbox_unquote(a, n) == w);
	FUZZ_CHECK(!w || !memcmp(a, b, w));
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t cut_sel = data[0], lim_sel = data[1];
	const uint8_t *in = data + 2;
	size_t n = size - 2;
	uint8_t *p = fuzz_dup(in, n);
	/* mostly no limit; else a small one, so that it is reached */
	uint64_t max_len = lim_sel < 0xc0 ? UINT64_MAX : (uint64_t)(lim_sel - 0xc0) * 64;

	split_whole(p, n, max_len, &whole);
	/* every byte of every message, for ASan */
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < whole.n; i++)
		for (size_t k = whole.s[i].start; k < whole.s[i].end; k++)
			sink ^= p[k];
	(void)sink;

	size_t cut = (size_t)cut_sel * n / 255;
	size_t two[2] = { cut, n };
	split_chunks(p, two, 2, max_len, &chunked);
	check_same();

	size_t *cuts = malloc((n + 1) * sizeof(*cuts));
	FUZZ_CHECK(cuts);
	size_t step = 1 + cut_sel % 61, k = 0;
	for (size_t e = step; e < n; e += step)
		cuts[k++] = e;
	cuts[k++] = n;
	split_chunks(p, cuts, k, max_len, &chunked);
	check_same();
	if (n <= 1024) {
		k = 0;
		for (size_t e = 1; e < n; e++)
			cuts[k++] = e;
		cuts[k++] = n;
		split_chunks(p, cuts, k, max_len, &chunked);
		check_same();
	}
	free(cuts);

	check_find(p, n, cut);
	check_unquote(p, n);
	free(p);
	return 0;
}
