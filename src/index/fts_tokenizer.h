/* SPDX-License-Identifier: MIT */
/* The tokens of FTS5's `unicode61`, each character's class and fold read
 * from a table rather than searched for: what the connections that write
 * an index tokenize with (the database's, and the builder's of a first
 * index, fts_build.h).  Searches, and any other reader of the database,
 * tokenize with SQLite's.
 *
 * Why (bench/INDEX.md, "a table of characters for the tokenizer"): a first
 * index is bounded by the thread that tokenizes, and about a sixth of the
 * generated corpus's text is outside ASCII; for each such character
 * unicode61 runs three binary searches (its category, then its fold and
 * the diacritic it drops), about 8% of a first index's CPU.
 *
 * The table is SQLite's answer, not a second copy of Unicode: each entry
 * is filled the first time its character is met, by asking SQLite's own
 * unicode61 (created with the same arguments) to tokenize the character
 * alone and between two letters.  The table holds the Basic Multilingual
 * Plane and the next (emoji: a quarter of the generated corpus's text
 * comes after one).  What it cannot hold (a character past U+1FFFF, a
 * fold of four bytes, an answer of another shape) is left to SQLite's
 * tokenizer, from the start of the token it falls in to the end of the
 * text, so the tokens and their offsets are SQLite's byte for byte;
 * tests/unit/test-fts_tokenizer.c compares the two over every character
 * of both planes and over bytes that are not UTF-8. */
#ifndef INGEST_INDEX_FTS_TOKENIZER_H
#define INGEST_INDEX_FTS_TOKENIZER_H

#include <sqlite3.h>

/* Registers the tokenizer on db under the name `unicode61`, which from then
 * on, on this connection only, names it (FTS5 looks its tokenizers up
 * newest first); SQLite's stays reachable to it.  SQLITE_OK or a code,
 * after which the connection's unicode61 is SQLite's as before. */
int fts_tokenizer_register(sqlite3 *db);

#endif
