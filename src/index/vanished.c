/* SPDX-License-Identifier: MIT */
/* The ENOENT rows of earlier runs: see vanished.h.  A run meets few or
 * none, so they are kept as they were read, with a hash table by root and
 * path (core/slots.h) for the check every written file makes. */
#include "index/vanished.h"
#include "core/hash.h"
#include "core/slots.h"
#include "core/xalloc.h"

#include <string.h>

struct vanished_row {
	int64_t rowid;
	char *mem;                 /* root then path */
	struct str root, path;     /* in mem */
	bool met;
};

struct vanished {
	struct vanished_row *rows;
	size_t n;
	struct slots by_place;     /* indexes into rows, by root and path */
};

static uint64_t vanished_hash(struct str root, struct str path)
{
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, root.p, root.n);
	h = hash_fnv1a(h, "", 1);
	return hash_fnv1a(h, path.p, path.n);
}

static bool vanished_same(const struct vanished_row *r, struct str root, struct str path)
{
	return r->root.n == root.n && r->path.n == path.n && !memcmp(r->root.p, root.p, root.n) &&
	       !memcmp(r->path.p, path.p, path.n);
}

void vanished_free(struct vanished *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++)
		xfree(v->rows[i].mem);
	xfree(v->rows);
	slots_free(&v->by_place);
	xfree(v);
}

static int vanished_add(struct vanished *v, size_t *cap, int64_t rowid, const void *root, size_t root_n,
                        const void *path, size_t path_n)
{
	if (v->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct vanished_row *nr = xrealloc(v->rows, nc * sizeof(*nr));
		if (!nr)
			return SQLITE_NOMEM;
		v->rows = nr;
		*cap = nc;
	}
	char *mem = xmalloc(root_n + path_n + 1);
	if (!mem)
		return SQLITE_NOMEM;
	if (root_n)
		memcpy(mem, root, root_n);
	if (path_n)
		memcpy(mem + root_n, path, path_n);
	v->rows[v->n++] = (struct vanished_row){
		.rowid = rowid, .mem = mem, .root = { mem, root_n }, .path = { mem + root_n, path_n },
	};
	return SQLITE_OK;
}

int vanished_load(sqlite3 *db, struct vanished **out)
{
	*out = NULL;
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(db, "SELECT rowid, root, path FROM errors WHERE errno = 'ENOENT'", -1,
	                            &s, NULL);
	if (rc != SQLITE_OK)
		return rc;
	struct vanished *v = xcalloc(1, sizeof(*v));
	size_t cap = 0;
	if (!v)
		rc = SQLITE_NOMEM;
	while (v && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		rc = vanished_add(v, &cap, sqlite3_column_int64(s, 0), sqlite3_column_blob(s, 1),
		                  (size_t)sqlite3_column_bytes(s, 1), sqlite3_column_blob(s, 2),
		                  (size_t)sqlite3_column_bytes(s, 2));
		if (rc != SQLITE_OK)
			break;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE || !v->n) {
		vanished_free(v);
		return rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	if (slots_init(&v->by_place, v->n) < 0) {
		vanished_free(v);
		return SQLITE_NOMEM;
	}
	for (size_t i = 0; i < v->n; i++)
		slots_put(&v->by_place, vanished_hash(v->rows[i].root, v->rows[i].path), i);
	*out = v;
	return SQLITE_OK;
}

void vanished_met(struct vanished *v, struct str root, struct str path)
{
	if (!v)
		return;
	struct slots_probe p = slots_probe(&v->by_place, vanished_hash(root, path));
	for (size_t k; (k = slots_next(&p));) {
		struct vanished_row *r = &v->rows[k - 1];
		if (vanished_same(r, root, path))
			r->met = true;   /* one path may have several rows: go on */
	}
}

int vanished_each_unmet(const struct vanished *v,
                        int (*drop)(void *ctx, int64_t rowid, struct str root, struct str path),
                        void *ctx)
{
	for (size_t i = 0; v && i < v->n; i++) {
		if (v->rows[i].met)
			continue;
		int r = drop(ctx, v->rows[i].rowid, v->rows[i].root, v->rows[i].path);
		if (r)
			return r;
	}
	return 0;
}
