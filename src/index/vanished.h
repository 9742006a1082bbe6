/* SPDX-License-Identifier: MIT */
/* The `errors` rows of files that vanished while an earlier run read them
 * (io-error, ENOENT): such a row has no `files` row (a file that comes
 * back is read as new), so no later run's deletions reach it.  Found when
 * a run starts; the rows whose path the run writes (index.c's deletions by
 * path) are its own to replace; the others go at the end of a complete run
 * that judged their place, if their path names nothing then, or that named
 * the file under another spelling (index.c, index_drop_vanished).  Rows a
 * run writes itself stay: a file named on the command line or in a
 * --files-from list that does not exist is reported again by every run
 * that names it. */
#ifndef INGEST_INDEX_VANISHED_H
#define INGEST_INDEX_VANISHED_H

#include "core/str.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

struct vanished;

/* The ENOENT rows of db now; *out NULL when there are none.  SQLite's
 * result code. */
int vanished_load(sqlite3 *db, struct vanished **out);
/* This run writes the rows of root/path: its earlier row is not one to drop. */
void vanished_met(struct vanished *v, struct str root, struct str path);
/* Calls drop(ctx, rowid, root, path) for each row not met; stops at and
 * returns the first nonzero result. */
int vanished_each_unmet(const struct vanished *v,
                        int (*drop)(void *ctx, int64_t rowid, struct str root, struct str path),
                        void *ctx);
void vanished_free(struct vanished *v);

#endif
