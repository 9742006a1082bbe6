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
 * From_ line after an empty line, as a plain reference scan finds it;
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

/* The rule of mbox.h, written plainly: a line start after `from` whose
 * line is a From_ line and whose previous line is empty (offset 0 being a
 * line start). */
static size_t ref_find(const uint8_t *p, size_t n, size_t from)
{
	for (size_t i = from + 1; i < n; i++) {
		if (p[i - 1] != '\n')
			continue;
		bool empty = i == 1 || p[i - 2] == '\n' ||
		             (p[i - 2] == '\r' && (i == 2 || p[i - 3] == '\n'));
		if (empty && mbox_is_separator(p + i, n - i))
			return i;
	}
	return n;
}

static void check_find(const uint8_t *p, size_t n, size_t cut)
{
	FUZZ_CHECK(mbox_find_separator(p, n, 0) == ref_find(p, n, 0));
	if (n)
		FUZZ_CHECK(mbox_find_separator(p, n, n - 1) == n);
	/* a search resumed over the kept bytes finds what one search finds */
	if (cut > n || mbox_find_separator(p, cut, 0) != cut)
		return;
	size_t keep = mbox_scan_keep(p, cut, 0);
	FUZZ_CHECK(keep <= cut && cut - keep <= MBOX_LINE_MAX + 4);
	FUZZ_CHECK(keep + mbox_find_separator(p + keep, n - keep, 0) == mbox_find_separator(p, n, 0));
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
