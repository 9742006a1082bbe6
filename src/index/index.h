/* SPDX-License-Identifier: MIT */
/* --index=FILE: the records of a run kept in an SQLite database (README,
 * "The index").
 *
 * The index is a sink of the pipeline: it runs on the thread that writes
 * records, takes each batch in input order, and stores the records it is
 * given (the `--format=jsonl` bytes of README "Records", one line each)
 * together with what the reader knew of the file (struct record_io: the stat
 * that --state keeps).  One transaction per batch: a run killed at any point
 * leaves the batches committed before it, and the `files` table, written in
 * the same transaction as the messages, is the state the next run starts
 * from (index_load_state), so that run reads exactly what is missing.
 *
 * Threads: index_open and index_load_state before the pipeline starts,
 * index_add_* on the thread that writes the records (the parse thread, or
 * the caller's when no thread was started), index_close after it joined.  One
 * connection, used by one thread at a time; a database built aside has a
 * second one for its text index, on a thread of its own (fts_build.h). */
#ifndef INGEST_INDEX_H
#define INGEST_INDEX_H

#include "core/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dynbuf;
struct index;
struct state;

/* The schema this build writes (PRAGMA user_version of the database). */
#define INDEX_SCHEMA_VERSION 3

/* "ingt" in the database header: `file` and sqlite3 show it, and a
 * database of another application is told apart before anything is read. */
#define INDEX_APPLICATION_ID 0x696e6774

/* The columns of the text index mail_fts, in its schema's order: the one
 * list the schema and its inserts (index.c) and a query's column filters
 * and prefixes (search.c) are written from.  X(name, TAG) per column. */
#define INDEX_FTS_COLUMN_LIST(X) \
	X(subject, SUBJECT) X(from, FROM) X(to, TO) X(text, TEXT) X(attachments, ATTACHMENTS)

enum index_fts_column {
#define INDEX_FTS_COLUMN_TAG(name, tag) INDEX_FTS_##tag,
	INDEX_FTS_COLUMN_LIST(INDEX_FTS_COLUMN_TAG)
#undef INDEX_FTS_COLUMN_TAG
	INDEX_FTS__COUNT
};

/* A column's name as a C string, for INDEX_FTS_COLUMN_LIST. */
#define INDEX_FTS_COLUMN_NAME(name, tag) #name,

/* Opens FILE, creating it and its schema when it does not exist or is an
 * empty database.  Refused, the file left as it was: not an SQLite database,
 * another application's database, a newer schema, a file or directory that
 * cannot be written.  0, or -errno with *why (static text) saying which. */
int index_open(const char *path, struct index **out, const char **why);
/* A database this run created is built aside and appears at FILE only
 * here, whole (README, "A database the run creates"): call once the last batch is in.
 * 0, or -errno with index_error saying what failed; nothing to do for a
 * database that existed. */
int index_finish(struct index *ix);
/* What a run says of the place of an earlier run's row. */
enum index_place {
	INDEX_PLACE_OTHER,    /* not this run's to judge */
	INDEX_PLACE_JUDGED,   /* under one of its roots, in a directory it listed */
	INDEX_PLACE_NAMED,    /* a file it named under another spelling: its
	                       * record is this run's (walk_named) */
};
/* Drops the `errors` rows of files that vanished while an earlier run
 * read them (io-error, ENOENT; index/vanished.h) where this run did not
 * write the path and place(ctx, root, path) says it named the file
 * another way, or judged the place and the path names nothing now (a
 * file no longer in the archive, which no later run would meet) or a
 * file that met(ctx, dev, ino) says this run met under another place
 * (named in a list and walked: one record, the walk's).  Call after a
 * complete run, before index_finish.  0, or -errno with index_error. */
int index_drop_vanished(struct index *ix,
                        enum index_place (*place)(void *ctx, struct str root, struct str path),
                        bool (*met)(void *ctx, uint64_t dev, uint64_t ino), void *ctx);
/* Writes pending work (an open batch is rolled back) and closes; a
 * database built aside and not finished is removed. */
void index_close(struct index *ix);
/* The --state view of the files table, for the reader. 0 or -errno. */
int index_load_state(struct index *ix, struct state **out);
/* The settings that decide what a run stores of a message (name[i] =
 * value[i], such as no-text=1): an index takes the first run's, and a run
 * with others is refused, since the rows of messages it does not read
 * again would keep the others (the same rule as --state's; README, "The
 * index").  0; 1 when they differ, why naming the first difference; or
 * -errno with index_error. */
int index_bind_settings(struct index *ix, size_t n, const char *const name[],
                        const char *const value[], char *why, size_t why_n);

/* One batch: begin, the items in input order, commit.  An item is what one
 * input produced: its record_io and its records (zero, one, or one per mbox
 * message, each ending in '\n').  -errno on failure (-ENOSPC, -EIO: the
 * batch is rolled back), with index_error saying what SQLite said. */
int index_begin(struct index *ix);
int index_add_item(struct index *ix, const struct record_io *io, const char *records, size_t len);
int index_commit(struct index *ix);
void index_rollback(struct index *ix);
const char *index_error(const struct index *ix);
/* The same for a whole batch of the pipeline, in one transaction (items
 * with no output are files --state found unchanged). */
struct batch;
int index_add_batch(struct index *ix, const struct batch *b);

/* What the database did, for --stats: transactions committed, rows
 * written by kind, nanoseconds spent inside SQLite. */
struct index_stats {
	uint64_t transactions, messages, errors, deleted, renamed;
	uint64_t unchanged;   /* messages read again and found as stored (kept) */
	uint64_t ns;
};
void index_stats_get(const struct index *ix, struct index_stats *out);

/* Test seam: when set, records and their address lists are read by
 * SQLite's JSON functions only (json_read.h's fallback), so that a test
 * can compare what both readings store. */
extern bool index_sql_reading;

#endif
