/* SPDX-License-Identifier: MIT */
/* FTS5's API of a connection, found the documented way: `SELECT fts5(?1)`
 * with a pointer bound to the parameter. */
#ifndef INGEST_INDEX_FTS5_H
#define INGEST_INDEX_FTS5_H

#include <sqlite3.h>
#include <stddef.h>

/* SQLITE_OK with *out set, or a code (SQLITE_ERROR where SQLite has no
 * FTS5) with *out NULL. */
static inline int fts5_api_of(sqlite3 *db, fts5_api **out)
{
	fts5_api *api = NULL;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_pointer(st, 1, &api, "fts5_api_ptr", NULL);
		sqlite3_step(st);
		rc = sqlite3_finalize(st);
	}
	if (rc == SQLITE_OK && !api)
		rc = SQLITE_ERROR;
	*out = rc == SQLITE_OK ? api : NULL;
	return rc;
}

#endif
