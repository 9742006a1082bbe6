/* SPDX-License-Identifier: MIT */
/* The names of database files: see db_open.h. */
#include "index/db_open.h"
#include "core/xalloc.h"
#include "index/db_io.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *db_file_name(const char *path, char **owned)
{
	*owned = NULL;
	/* ":memory:" (and any name SQLite may give a meaning that starts
	 * with ':') and "file:..." */
	if (path[0] != ':' && strncmp(path, "file:", 5) != 0)
		return path;
	size_t n = strlen(path);
	char *name = xmalloc(n + 3);
	if (!name)
		return NULL;
	memcpy(name, "./", 2);
	memcpy(name + 2, path, n + 1);
	*owned = name;
	return name;
}

bool db_path_too_long(const char *path, size_t *full, int *max)
{
	sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
	*max = vfs ? vfs->mxPathname : 0;
	char *owned;
	const char *name = db_file_name(path, &owned);
	*full = name ? strlen(name) : strlen(path);
	xfree(owned);
	if (path[0] != '/') {
		/* relative: SQLite puts the working directory before it */
		char *cwd = getcwd(NULL, 0);
		*full += cwd ? strlen(cwd) + 1 : 0;
		free(cwd);
	}
	return *max > 0 && *full + 1 > (size_t)*max;
}

static int db_open_with(const char *path, sqlite3 **db, int flags, const char *vfs)
{
	char *owned;
	const char *name = db_file_name(path, &owned);
	if (!name) {
		*db = NULL;
		return SQLITE_NOMEM;
	}
	int rc = sqlite3_open_v2(name, db, flags, vfs);
	xfree(owned);
	return rc;
}

int db_open_path(const char *path, sqlite3 **db, int flags)
{
	return db_open_with(path, db, flags, NULL);
}

int db_open_path_counted(const char *path, sqlite3 **db, int flags)
{
	return db_open_with(path, db, flags, db_io_vfs());
}
