/* SPDX-License-Identifier: MIT */
/* The score `ingest search` orders its hits by: FTS5's bm25, computed by
 * an auxiliary function of our own, `ingest_bm25`, that gives the same
 * numbers as FTS5's `bm25` for the same weights and walks the matches
 * fewer times.
 *
 * Why (bench/INDEX.md, "2026-12-05: search, bm25 counted once; queries that
 * group"): FTS5's bm25 counts the rows of each phrase of the query (its
 * IDF) with a walk of its own over the phrase's matches, once per cursor
 * that calls it, and a query ordered by rank has two: the one that sorts
 * every match and the one that prints the first rows' rank.  Here the counts
 * are taken once per search and shared by both cursors; and for a query of
 * one phrase (a word, `from:ann`), whose matches are the phrase's rows, the
 * sort's own walk counts them: the sort orders by the score without its IDF
 * (one positive factor common to every match, so the order is the same) and
 * the printed rank, computed after the sort, is the whole score.  A query of
 * several phrases counts each phrase as FTS5 does.  Each match's length is
 * read from FTS5's table of lengths through a blob handle, not a statement
 * per match.
 *
 * Beside it, `ingest_matches(mail_fts)`, a row's matches: FTS5's snippet()
 * scores each match of a row against every other, so a row of 40,000
 * matches (a prefix such as t* against a 270 KB text) took 11 s; the
 * search asks for a snippet only below a bound of matches (search.c).
 *
 * The function relies on FTS5's plan for ORDER BY rank (the sorting
 * cursor calls it for every match before the printing cursor calls it at
 * all); tests/cli/test_index.py checks the printed ranks equal FTS5's
 * bm25 on the same index. */
#ifndef INGEST_INDEX_RANK_H
#define INGEST_INDEX_RANK_H

#include <sqlite3.h>
#include <stdbool.h>

struct rank;

/* Registers `ingest_bm25(w_col0, w_col1, ...)` and `ingest_matches()` on
 * db for one ranked
 * statement; *out is its state, which rank_free() releases after the
 * statement is finalized and before db is closed (it holds a blob handle
 * on the database).  best: 0, or the statement prints the first `best`
 * rows of FTS5's sort and nothing after them (no condition or join drops
 * a row between the sort and the lines), so that a row that cannot be
 * among them is sorted by a bound of its score, below theirs, rather than
 * by its score; above 10,000 (RANK_BEST_MAX) every row is scored.
 * SQLITE_OK or an SQLite code, with *out NULL. */
/* sorted: the statement orders by rank, FTS5's sort calling the function
 * first on every match; false (hits in date order): every call is a
 * printed row's, each phrase's IDF counted by FTS5 at the first. */
int rank_register(sqlite3 *db, unsigned long best, bool sorted, struct rank **out);
/* The query's matches, counted by the caller before the statement runs:
 * for a query of one phrase, the count its IDF needs, which an unsorted
 * statement would otherwise have FTS5 walk the phrase for (rk NULL is
 * ignored). */
void rank_set_matches(struct rank *rk, sqlite3_int64 matches);
void rank_free(struct rank *rk);

#endif
