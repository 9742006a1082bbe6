/* SPDX-License-Identifier: MIT */
/* The FTS rows of a database built aside (index.c, index_build_begin),
 * written by a thread and a connection of their own into a second SQLite
 * file, and copied into the database when it is finished.
 *
 * Why (bench/INDEX.md): in the database itself, every statement of the
 * other tables that opens a savepoint makes FTS5 (before SQLite 3.43)
 * write its pending terms out, so the FTS rows can only go in at a
 * transaction's end and each transaction makes a segment, which FTS5 then
 * merges again and again.  In a file of its own, written by one
 * transaction, FTS5 keeps its terms until `hashsize` bytes are pending and
 * merges a few large segments; and on a thread of its own the tokenizing
 * runs while the writer's thread inserts the other rows.
 *
 * The builder's table is contentless: what FTS5 would store as the rows'
 * content the writer's connection stores itself, in a table of the
 * database (fts_build_content_open) that the end of the build makes the
 * FTS table's content table.  So the thread that bounds a first index
 * only tokenizes, and the text is written once, not into the second file
 * and then copied (bench/INDEX.md).
 *
 * The rows travel as bytes (fts_rows_add): the writer hands a buffer of
 * rows over (fts_build_put) and goes on while the thread inserts them.  The
 * same bytes are what a database written in place inserts, on the
 * writer's thread (fts_rows_insert). */
#ifndef INGEST_INDEX_FTS_BUILD_H
#define INGEST_INDEX_FTS_BUILD_H

#include "core/dynbuf.h"

#include <sqlite3.h>
#include <stdint.h>

/* A row's columns after its rowid, in the order of the insert's ?2..?6. */
#define FTS_ROW_COLUMNS 5
/* FTS5's names for them in its content table, which the content written
 * beside a build (fts_build_content_open) takes */
#define FTS_CONTENT_COLUMNS "c0, c1, c2, c3, c4"

/* Appends a row: its rowid and its columns, col[i] NULL for SQL NULL, else
 * len[i] bytes followed by a NUL.  0 or -ENOMEM. */
int fts_rows_add(struct dynbuf *b, int64_t rowid, const char *const col[FTS_ROW_COLUMNS],
                 const int64_t len[FTS_ROW_COLUMNS]);
/* Runs ins (rowid ?1, columns ?2..?6) for each row of p[0..n): SQLITE_OK
 * or the failing step's code. */
int fts_rows_insert(sqlite3_stmt *ins, const char *p, size_t n);

struct fts_build;

/* Creates `path` with the contentless table of create_sql, opens one
 * transaction on it and removes the file's name (the connection keeps it
 * open: a run killed leaves nothing), then starts the thread (or, if it
 * cannot start, inserts on the caller's thread).  insert_sql inserts a row
 * (rowid ?1, columns ?2..?6).  SQLITE_OK, or a code with *out NULL. */
int fts_build_open(const char *path, const char *create_sql, const char *insert_sql,
                   struct fts_build **out);
/* In the database being built (the writer's connection): creates the
 * table that holds the rows' content and prepares its insert (rowid ?1,
 * columns ?2..?6, for fts_rows_insert).  SQLITE_OK or a code, after
 * which the build is to be dropped. */
int fts_build_content_open(sqlite3 *db, sqlite3_stmt **insert);
/* The rows of that table whose message is gone (replaced or deleted after
 * its row was handed over), seen from the builder's connection with the
 * database attached as dst: "SELECT ... FROM " FTS_BUILD_GONE. */
#define FTS_BUILD_CONTENT "built_fts_content"
#define FTS_BUILD_GONE \
	"dst." FTS_BUILD_CONTENT " WHERE id IN (SELECT id FROM dst." FTS_BUILD_CONTENT \
	" EXCEPT SELECT docid FROM dst.messages)"
/* Hands rows over: takes b's bytes and leaves b empty (with a buffer to
 * reuse).  Waits while the thread still has a buffer queued.  SQLITE_OK,
 * or the code of an earlier failure of the thread (nothing is taken). */
int fts_build_put(struct fts_build *fb, struct dynbuf *b);
/* Waits for the thread, commits, deletes the rows of messages gone from
 * the table (delete_sql: by their values from FTS_BUILD_GONE, as a
 * contentless table wants; NULL when the caller knows there are none) and
 * from dst's content, copies the table's index into the table of the same
 * name in the database at dst (closed by its writer, its index empty but
 * for the totals deletions through it rewrote), makes the content written
 * beside it the table's own, then turns dst to WAL.  SQLITE_OK or a code,
 * with fts_build_error saying what failed. */
int fts_build_finish(struct fts_build *fb, const char *dst, const char *delete_sql);
/* Stops the thread and closes; what was not copied is gone. */
void fts_build_close(struct fts_build *fb);
const char *fts_build_error(const struct fts_build *fb);
/* Nanoseconds the thread spent inside SQLite, for --stats. */
uint64_t fts_build_ns(const struct fts_build *fb);

#endif
