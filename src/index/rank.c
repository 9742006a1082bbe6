/* SPDX-License-Identifier: MIT */
/* bm25 with the phrases' counts taken once per search: see rank.h. */
#include "index/rank.h"
#include "core/xalloc.h"
#include "index/fts5.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* FTS5's bm25 constants (its fts5_aux.c), which the score must equal */
#define RANK_K1 1.2
#define RANK_B 0.75

struct rank {
	sqlite3 *db;
	sqlite3_blob *sizes;  /* mail_fts_docsize's sz, moved from row to row */
	int phrases;          /* of the query; -1 before the first call */
	int cursors;          /* cursors that have called the function */
	sqlite3_int64 rows;   /* of the table */
	double avgdl;         /* tokens per row */
	bool idf_known;
	bool unsorted;        /* no sort: every cursor prints (rank_register) */
	sqlite3_int64 matches; /* the query's, counted by the caller, or -1 */
	sqlite3_int64 sorted; /* one phrase: matches the sort has scored */
	double *idf, *freq;   /* per phrase */
	size_t best;          /* rows printed, if the sort meets every match, or 0 */
	double *kept;         /* a min-heap of the `best` highest scores sorted */
	size_t n_kept;
};

/* Above this --limit no match is left unscored (rank_bm25): the heap's
 * size, and with most matches printed there is little to leave. */
#define RANK_BEST_MAX 10000

/* A cursor's role, kept as its auxdata: the first cursor to call sorts
 * every match, a later one prints the rows the sort handed over. */
static char rank_sorts, rank_prints;

void rank_set_matches(struct rank *rk, sqlite3_int64 matches)
{
	if (rk)
		rk->matches = matches;
}

void rank_free(struct rank *rk)
{
	if (rk) {
		sqlite3_blob_close(rk->sizes);
		xfree(rk->idf);
		xfree(rk->kept);
	}
	xfree(rk);
}

/* The row's tokens, every column's: what xColumnSize(-1) answers, read
 * from the same table (mail_fts_docsize, a varint per column) through a
 * blob handle moved from row to row, where FTS5 runs an SQL statement per
 * row: a third of a word query's instructions went there (bench/INDEX.md,
 * "2026-12-05: search, bm25 counted once; queries that group").  Anything
 * unexpected (no such table, a blob too long) is left to FTS5. */
static int rank_row_tokens(struct rank *rk, const Fts5ExtensionApi *api, Fts5Context *fts, int *tokens)
{
	sqlite3_int64 id = api->xRowid(fts);
	int rc = rk->sizes ? sqlite3_blob_reopen(rk->sizes, id)
	                   : sqlite3_blob_open(rk->db, "main", "mail_fts_docsize", "sz", id, 0, &rk->sizes);
	unsigned char b[64];
	int n = rc == SQLITE_OK ? sqlite3_blob_bytes(rk->sizes) : 0;
	if (rc != SQLITE_OK || n > (int)sizeof(b) || sqlite3_blob_read(rk->sizes, b, n, 0) != SQLITE_OK)
		return api->xColumnSize(fts, -1, tokens);
	unsigned sum = 0;
	for (int i = 0; i < n;) {
		unsigned v = 0;
		do
			v = (v << 7) | (b[i] & 0x7f);
		while (b[i++] & 0x80 && i < n);
		sum += v;
	}
	*tokens = (int)sum;
	return SQLITE_OK;
}

static int rank_count(const Fts5ExtensionApi *api, Fts5Context *fts, void *hits)
{
	(void)api;
	(void)fts;
	++*(sqlite3_int64 *)hits;
	return SQLITE_OK;
}

/* bm25's IDF of a phrase found in `hits` of `rows` rows, as FTS5's. */
static double rank_idf(sqlite3_int64 rows, sqlite3_int64 hits)
{
	double idf = log(((double)(rows - hits) + 0.5) / ((double)hits + 0.5));
	return idf <= 0.0 ? 1e-6 : idf;
}

/* The table's size and, for a query of several phrases, each one's IDF. */
static int rank_start(struct rank *rk, const Fts5ExtensionApi *api, Fts5Context *fts)
{
	sqlite3_int64 tokens = 0;
	int n = api->xPhraseCount(fts);
	int rc = api->xRowCount(fts, &rk->rows);
	if (rc == SQLITE_OK)
		rc = api->xColumnTotalSize(fts, -1, &tokens);
	if (rc != SQLITE_OK)
		return rc;
	rk->avgdl = (double)tokens / (double)rk->rows;
	xfree(rk->idf);   /* a failed start called again */
	rk->idf = xcalloc(2 * ((size_t)n + 1), sizeof(double));
	if (!rk->idf)
		return SQLITE_NOMEM;
	rk->freq = rk->idf + n + 1;
	for (int i = 0; (n != 1 || rk->unsorted) && i < n; i++) {
		/* one phrase: its matches are the query's, when counted */
		sqlite3_int64 hits = n == 1 ? rk->matches : -1;
		if (hits < 0) {
			hits = 0;
			rc = api->xQueryPhrase(fts, i, &hits, rank_count);
		}
		if (rc != SQLITE_OK)
			return rc;
		rk->idf[i] = rank_idf(rk->rows, hits);
	}
	rk->idf_known = n != 1 || rk->unsorted;
	rk->phrases = n;
	return SQLITE_OK;
}

/* bm25 of the phrases' frequencies (rk->freq) in a row of d tokens, the
 * same operations in the same order as FTS5's, so the same bits; without
 * the IDF unless scaled. */
static double rank_score(const struct rank *rk, double d, bool scaled)
{
	double score = 0.0;
	for (int i = 0; i < rk->phrases; i++) {
		double f = rk->freq[i];
		double tf = (f * (RANK_K1 + 1.0)) / (f + RANK_K1 * (1 - RANK_B + RANK_B * d / rk->avgdl));
		score += scaled ? rk->idf[i] * tf : tf;
	}
	return score;
}

/* Keeps score among the `best` highest sorted so far (kept[0] the lowest). */
static void rank_keep(struct rank *rk, double score)
{
	double *h = rk->kept;
	size_t i;
	if (rk->n_kept < rk->best) {
		for (i = rk->n_kept++; i > 0 && h[(i - 1) / 2] > score; i = (i - 1) / 2)
			h[i] = h[(i - 1) / 2];
		h[i] = score;
		return;
	}
	if (!(score > h[0]))
		return;
	for (i = 0;;) {
		size_t c = 2 * i + 1;
		if (c >= rk->n_kept)
			break;
		if (c + 1 < rk->n_kept && h[c + 1] < h[c])
			c++;
		if (!(h[c] < score))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = score;
}

/* The function's value: the rank, as a double, for a row printed; for the
 * sort, an integer of the same order, because SQLite's sorter compares
 * records whose first field is an integer with a comparison of its own and
 * a double with the general one, 2.4x the instructions per comparison
 * (bench/INDEX.md, "2026-12-05: search, less work in the sort").  The
 * sort only orders by it: FTS5 calls the function again on the printing
 * cursor for the rank a line shows. */
static void rank_result(sqlite3_context *cx, const void *role, double v)
{
	if (role != &rank_sorts) {
		sqlite3_result_double(cx, v);
		return;
	}
	v += 0.0;   /* -0.0 is 0.0: one key */
	int64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	/* IEEE 754's order is sign and magnitude: a negative number's other
	 * bits count the wrong way as a two's complement integer */
	sqlite3_result_int64(cx, bits < 0 ? bits ^ INT64_MAX : bits);
}

/* Phrase p's matches in the row, each phrase's own position list walked
 * (xPhraseFirst/xPhraseNext: what xInst gives, without its merge of every
 * phrase's lists, whose time is the phrases times the matches): *count of
 * them, and *weighted, the sum of their columns' weights (argv; 1.0 for
 * a column past argc). */
static int rank_phrase_matches(const Fts5ExtensionApi *api, Fts5Context *fts, int p, int argc,
                               sqlite3_value **argv, int *count, double *weighted)
{
	Fts5PhraseIter it;
	int col, off;
	int rc = api->xPhraseFirst(fts, p, &it, &col, &off);
	for (; rc == SQLITE_OK && col >= 0; api->xPhraseNext(fts, &it, &col, &off)) {
		++*count;
		*weighted += argc > col ? sqlite3_value_double(argv[col]) : 1.0;
	}
	return rc;
}

static void rank_bm25(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *cx, int argc,
                      sqlite3_value **argv)
{
	struct rank *rk = api->xUserData(fts);
	int rc = SQLITE_OK;
	void *role = api->xGetAuxdata(fts, 0);
	if (!role) {
		role = rk->cursors++ ? &rank_prints : &rank_sorts;
		rc = api->xSetAuxdata(fts, role, NULL);
	}
	if (rc == SQLITE_OK && rk->phrases < 0)
		rc = rank_start(rk, api, fts);
	/* one phrase: the sort counts its matches; the first row printed
	 * comes after the last one sorted */
	bool scaled = rk->idf_known;
	if (rc == SQLITE_OK && !scaled && role == &rank_sorts)
		rk->sorted++;
	if (rc == SQLITE_OK && !scaled && role == &rank_prints) {
		rk->idf[0] = rank_idf(rk->rows, rk->sorted);
		rk->idf_known = scaled = true;
	}
	if (rc == SQLITE_OK)
		memset(rk->freq, 0, sizeof(double) * (size_t)rk->phrases);
	int matches = 0;
	for (int p = 0; rc == SQLITE_OK && p < rk->phrases; p++)
		rc = rank_phrase_matches(api, fts, p, argc, argv, &matches, &rk->freq[p]);
	/* A row that cannot be among the best printed, whatever its length
	 * (the score grows as the length falls, so a length of 0 bounds it),
	 * is sorted by that bound, which is below every row printed: its
	 * length, a B-tree search, is not read.  Only where every match is
	 * sorted and the first `best` are printed (rank_register); a quarter
	 * of a word query's instructions were those searches (bench/INDEX.md,
	 * "2026-12-05: search, less work in the sort"). */
	bool pruning = rc == SQLITE_OK && role == &rank_sorts && rk->best;
	if (pruning && rk->n_kept == rk->best) {
		double bound = rank_score(rk, 0.0, scaled);
		if (bound < rk->kept[0]) {
			rank_result(cx, role, -1.0 * bound);
			return;
		}
	}
	int tokens = 0;
	if (rc == SQLITE_OK)
		rc = rank_row_tokens(rk, api, fts, &tokens);
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(cx, rc);
		return;
	}
	double score = rank_score(rk, (double)tokens, scaled);
	if (pruning)
		rank_keep(rk, score);
	rank_result(cx, role, -1.0 * score);
}

/* ingest_matches(mail_fts): the row's matches (FTS5's instances), a
 * walk of its position lists that FTS5's snippet() makes too, before it
 * scores every match against every other (rank.h). */
static void rank_matches(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *cx,
                         int argc, sqlite3_value **argv)
{
	(void)argc;
	int inst = 0, rc = SQLITE_OK;
	double weighted = 0.0;   /* not asked for: no weights (argc 0) */
	for (int p = 0, n = api->xPhraseCount(fts); rc == SQLITE_OK && p < n; p++)
		rc = rank_phrase_matches(api, fts, p, 0, argv, &inst, &weighted);
	if (rc == SQLITE_OK)
		sqlite3_result_int(cx, inst);
	else
		sqlite3_result_error_code(cx, rc);
}

int rank_register(sqlite3 *db, unsigned long best, bool sorted, struct rank **out)
{
	fts5_api *fts5;
	int rc = fts5_api_of(db, &fts5);
	struct rank *rk = rc == SQLITE_OK ? xcalloc(1, sizeof(*rk)) : NULL;
	if (rc == SQLITE_OK && !rk)
		rc = SQLITE_NOMEM;
	if (rc == SQLITE_OK) {
		rk->phrases = -1;
		rk->db = db;
		/* no sort: no cursor is the sort's, and no sort counts a
		 * phrase's matches (FTS5 counts them, rank_start) */
		rk->unsorted = !sorted;
		rk->cursors = !sorted;
		rk->matches = -1;
		if (best && best <= RANK_BEST_MAX) {
			rk->kept = xmalloc(best * sizeof(double));
			rk->best = rk->kept ? best : 0;
			rc = rk->kept ? SQLITE_OK : SQLITE_NOMEM;
		}
		if (rc == SQLITE_OK)
			rc = fts5->xCreateFunction(fts5, "ingest_bm25", rk, rank_bm25, NULL);
		if (rc == SQLITE_OK)
			rc = fts5->xCreateFunction(fts5, "ingest_matches", NULL, rank_matches, NULL);
		if (rc != SQLITE_OK)
			rank_free(rk);
	}
	*out = rc == SQLITE_OK ? rk : NULL;
	return rc;
}
