/* SPDX-License-Identifier: MIT */
/* The name SQLite is given for a file path the user gave.  SQLite reads a
 * name that starts with "file:" as a URI where URIs are enabled (Debian's
 * builds enable them at compile time, and no flag of sqlite3_open_v2 or
 * ATTACH turns them off), and ":memory:" as a database in memory:
 * `--index=file:mail.db` opened a database named by the URI, and
 * `--index=:memory:` one in memory, while ingest's own calls made,
 * renamed and removed the literal path, so the run failed or left its
 * index where no search would find it (or nowhere).  Every open and
 * ATTACH of a path goes through here. */
#ifndef INGEST_INDEX_DB_OPEN_H
#define INGEST_INDEX_DB_OPEN_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

/* path itself, or for a relative path that starts "file:" or ':' the same
 * file as "./file:..." or "./:...", which SQLite takes as a plain name, in
 * a new string left in *owned (NULL otherwise; xfree it).  NULL without
 * memory. */
const char *db_file_name(const char *path, char **owned);

/* Whether SQLite's unix VFS cannot open path for its length alone: it
 * makes the name absolute and refuses one of its mxPathname bytes or more
 * with SQLITE_CANTOPEN, whose words ("unable to open database file") say
 * nothing of why.  *full is the absolute name's length, *max the limit. */
bool db_path_too_long(const char *path, size_t *full, int *max);

/* sqlite3_open_v2(db_file_name(path), db, flags), with SQLite's default
 * VFS (a search, a host's own use). */
int db_open_path(const char *path, sqlite3 **db, int flags);

/* The same through the VFS that counts the database's file operations
 * (db_io.h): the connections of an --index run, and only those. */
int db_open_path_counted(const char *path, sqlite3 **db, int flags);

#endif
