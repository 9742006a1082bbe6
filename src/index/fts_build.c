/* SPDX-License-Identifier: MIT */
/* The FTS rows of a database built aside: see fts_build.h. */
#include "index/fts_build.h"
#include "core/clock.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "index/db_open.h"
#include "index/fts_tokenizer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* FTS5 writes its pending terms out as a segment when this many bytes are
 * pending (its default is 1 MiB); each flush is a segment merged later.  A
 * build of 20,000 messages stays under it (one segment); larger ones flush
 * a few times (bench/INDEX.md).  Set in the builder's own file only: the
 * database's mail_fts_config is not copied. */
#define FTS_BUILD_HASHSIZE (64 << 20)

struct fts_build {
	sqlite3 *db;
	sqlite3_stmt *ins;
	pthread_t thread;
	bool threaded;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* queued: rows handed over and not yet taken by the thread (empty
	 * when none); done: no more will come; rc: the first failure,
	 * sticky, after which rows are dropped */
	struct dynbuf queued, taken;
	bool done;
	int rc;
	uint64_t ns;
	char error[256];
};

int fts_rows_add(struct dynbuf *b, int64_t rowid, const char *const col[FTS_ROW_COLUMNS],
                 const int64_t len[FTS_ROW_COLUMNS])
{
	int r = dynbuf_append(b, &rowid, sizeof(rowid));
	for (int i = 0; r == 0 && i < FTS_ROW_COLUMNS; i++) {
		int64_t n = col[i] ? len[i] : -1;
		r = dynbuf_append(b, &n, sizeof(n));
		if (r == 0 && col[i])
			r = dynbuf_append(b, col[i], (size_t)n);
		if (r == 0 && col[i])
			r = dynbuf_putc(b, '\0');
	}
	return r;
}

int fts_rows_insert(sqlite3_stmt *ins, const char *p, size_t n)
{
	int rc = SQLITE_OK;
	for (size_t at = 0; rc == SQLITE_OK && at < n;) {
		int64_t v;
		memcpy(&v, p + at, sizeof(v));
		at += sizeof(v);
		sqlite3_bind_int64(ins, 1, v);
		for (int i = 0; i < FTS_ROW_COLUMNS; i++) {
			memcpy(&v, p + at, sizeof(v));
			at += sizeof(v);
			if (v < 0)
				continue;
			/* terminated and bound as such: SQLite copies text it
			 * must terminate itself, FTS5's tokenizer among its users
			 * (bench/INDEX.md); a column holding a NUL keeps its length */
			const char *t = p + at;
			sqlite3_bind_text(ins, 2 + i, t, memchr(t, '\0', (size_t)v) ? (int)v : -1, SQLITE_STATIC);
			at += (size_t)v + 1;
		}
		rc = sqlite3_step(ins);
		sqlite3_reset(ins);
		sqlite3_clear_bindings(ins);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	return rc;
}

static int fts_build_fail(struct fts_build *fb, int rc, const char *what)
{
	if (fb->error[0] == '\0')
		snprintf(fb->error, sizeof(fb->error), "%s: %s", what, sqlite3_errmsg(fb->db));
	return rc;
}

static int fts_build_exec(struct fts_build *fb, const char *sql, const char *what)
{
	int rc = sqlite3_exec(fb->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? rc : fts_build_fail(fb, rc, what);
}

/* Inserts rows: SQLITE_OK or the failing code. */
static int fts_build_insert(struct fts_build *fb, const struct dynbuf *rows)
{
	uint64_t t0 = clock_now_ns();
	int rc = fts_rows_insert(fb->ins, rows->p, rows->len);
	fb->ns += clock_now_ns() - t0;
	return rc == SQLITE_OK ? rc : fts_build_fail(fb, rc, "cannot index the text");
}

static void *fts_build_main(void *arg)
{
	struct fts_build *fb = arg;
	sys_set_thread_name("ingest-fts");
	pthread_mutex_lock(&fb->mu);
	for (;;) {
		while (!fb->queued.len && !fb->done)
			pthread_cond_wait(&fb->cv, &fb->mu);
		if (!fb->queued.len)
			break;
		struct dynbuf t = fb->taken;
		fb->taken = fb->queued;
		fb->queued = t;
		dynbuf_reset(&fb->queued);
		/* the writer may queue the next rows meanwhile; after a
		 * failure (or a close) rows are taken and dropped */
		bool failed = fb->rc != SQLITE_OK;
		pthread_cond_broadcast(&fb->cv);
		pthread_mutex_unlock(&fb->mu);
		int rc = failed ? SQLITE_OK : fts_build_insert(fb, &fb->taken);
		dynbuf_reset(&fb->taken);
		pthread_mutex_lock(&fb->mu);
		if (fb->rc == SQLITE_OK)
			fb->rc = rc;
	}
	pthread_mutex_unlock(&fb->mu);
	return NULL;
}

int fts_build_open(const char *path, const char *create_sql, const char *insert_sql,
                   struct fts_build **out)
{
	*out = NULL;
	struct fts_build *fb = xcalloc(1, sizeof(*fb));
	if (!fb)
		return SQLITE_NOMEM;
	dynbuf_init(&fb->queued, 0);
	dynbuf_init(&fb->taken, 0);
	pthread_mutex_init(&fb->mu, NULL);
	pthread_cond_init(&fb->cv, NULL);
	/* a file left by a run killed before it removed the name: replaced */
	sys_unlinkat(AT_FDCWD, path, 0);
	int rc = db_open_path_counted(path, &fb->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                      SQLITE_OPEN_NOMUTEX);
	/* 64 KiB pages: the file is read and written a page a syscall, and
	 * the end of a build writes its segments, reads them back and
	 * copies them, alone on its thread (bench/INDEX.md).  The
	 * database's own pages stay SQLite's default */
	char setup[256];
	snprintf(setup, sizeof(setup),
	         "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
	         " PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY; BEGIN;");
	if (rc == SQLITE_OK)
		rc = fts_build_exec(fb, setup, "cannot set up");
	/* the table's unicode61 is then the one of fts_tokenizer.h: the same
	 * tokens, faster; without it, SQLite's */
	if (rc == SQLITE_OK)
		fts_tokenizer_register(fb->db);
	if (rc == SQLITE_OK)
		rc = fts_build_exec(fb, create_sql, "cannot create the table");
	if (rc == SQLITE_OK) {
		snprintf(setup, sizeof(setup), "INSERT INTO mail_fts(mail_fts, rank) VALUES ('hashsize', %d)",
		         FTS_BUILD_HASHSIZE);
		rc = fts_build_exec(fb, setup, "cannot set up");
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(fb->db, insert_sql, -1, SQLITE_PREPARE_PERSISTENT, &fb->ins, NULL);
	/* the connection holds the file (its lock taken, no journal to open
	 * by name): the name can go */
	if (rc == SQLITE_OK && sys_unlinkat(AT_FDCWD, path, 0) < 0)
		rc = SQLITE_CANTOPEN;
	if (rc != SQLITE_OK) {
		if (fb->db)
			sys_unlinkat(AT_FDCWD, path, 0);
		fts_build_close(fb);
		return rc;
	}
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) == 0) {
		/* no asynchronous signal for it, as for the pool's workers */
		sigset_t all;
		sigfillset(&all);
		pthread_attr_setsigmask_np(&attr, &all);
		fb->threaded = sys_thread_create(&fb->thread, &attr, fts_build_main, fb) == 0;
		pthread_attr_destroy(&attr);
	}
	*out = fb;
	return SQLITE_OK;
}

int fts_build_put(struct fts_build *fb, struct dynbuf *b)
{
	if (!fb->threaded) {
		if (fb->rc == SQLITE_OK && b->len)
			fb->rc = fts_build_insert(fb, b);
		dynbuf_reset(b);
		return fb->rc;
	}
	pthread_mutex_lock(&fb->mu);
	while (fb->queued.len && fb->rc == SQLITE_OK)
		pthread_cond_wait(&fb->cv, &fb->mu);
	int rc = fb->rc;
	if (rc == SQLITE_OK && b->len) {
		struct dynbuf t = fb->queued;
		fb->queued = *b;
		*b = t;
		dynbuf_reset(b);
		pthread_cond_broadcast(&fb->cv);
	}
	pthread_mutex_unlock(&fb->mu);
	return rc;
}

/* Lets the thread finish what it has and end. */
static void fts_build_join(struct fts_build *fb)
{
	if (!fb->threaded)
		return;
	pthread_mutex_lock(&fb->mu);
	fb->done = true;
	pthread_cond_broadcast(&fb->cv);
	pthread_mutex_unlock(&fb->mu);
	pthread_join(fb->thread, NULL);
	fb->threaded = false;
}

_Static_assert(sizeof(FTS_CONTENT_COLUMNS) == 4 * FTS_ROW_COLUMNS - 1,
               "one content column (\"cN, \") per FTS row column");

/* The content sits under a name of its own until the end: in the FTS
 * table's own content table, the delete trigger of a message replaced
 * during the build would find it, and FTS5 would then delete a row from
 * an index that counts none, which it reports as corruption. */
int fts_build_content_open(sqlite3 *db, sqlite3_stmt **insert)
{
	/* the layout of FTS5's content table, which this one becomes */
	int rc = sqlite3_exec(db, "CREATE TABLE " FTS_BUILD_CONTENT "(id INTEGER PRIMARY KEY, "
	                      FTS_CONTENT_COLUMNS ")", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(db, "INSERT INTO " FTS_BUILD_CONTENT " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		                        -1, SQLITE_PREPARE_PERSISTENT, insert, NULL);
	return rc;
}

/* The shadow tables of an FTS5 table that make its index (not its content,
 * written beside it, nor its configuration, the same in both: the version,
 * which the builder's `hashsize` does not change in the database), each
 * copied whole by SQLite's transfer of rows between tables of one
 * layout. */
static const char *const fts_shadow[] = { "data", "idx", "docsize" };

int fts_build_finish(struct fts_build *fb, const char *dst, const char *delete_sql)
{
	fts_build_join(fb);
	if (fb->rc != SQLITE_OK)
		return fb->rc;
	uint64_t t0 = clock_now_ns();
	int rc = fts_build_exec(fb, "COMMIT", "cannot commit");
	sqlite3_stmt *s = NULL;
	char *dst_owned = NULL;
	const char *dst_name = rc == SQLITE_OK ? db_file_name(dst, &dst_owned) : NULL;
	if (rc == SQLITE_OK && !dst_name)
		rc = SQLITE_NOMEM;
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(fb->db, "ATTACH ?1 AS dst", -1, &s, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(s, 1, dst_name, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		rc = rc == SQLITE_DONE ? SQLITE_OK : fts_build_fail(fb, rc, "cannot open the database");
	}
	sqlite3_finalize(s);
	xfree(dst_owned);
	/* built aside as the database's writer built it: no journal, no
	 * fsync (index.c, index_build_begin) */
	if (rc == SQLITE_OK)
		rc = fts_build_exec(fb, "PRAGMA dst.journal_mode = OFF; PRAGMA dst.synchronous = OFF",
		                    "cannot open the database");
	/* A message replaced or deleted after its FTS row was handed over
	 * (the same identity met twice) left a row with no message: it goes,
	 * by its values from the content, and FTS5 commits its deletion
	 * before the rows are copied */
	if (rc == SQLITE_OK && delete_sql)
		rc = fts_build_exec(fb, "BEGIN", "cannot drop the rows of replaced messages");
	if (rc == SQLITE_OK && delete_sql)
		rc = fts_build_exec(fb, delete_sql, "cannot drop the rows of replaced messages");
	if (rc == SQLITE_OK && delete_sql)
		rc = fts_build_exec(fb, "DELETE FROM " FTS_BUILD_GONE "; COMMIT",
		                    "cannot drop the rows of replaced messages");
	if (rc == SQLITE_OK)
		rc = fts_build_exec(fb, "BEGIN", "cannot copy the text index");
	for (size_t i = 0; rc == SQLITE_OK && i < sizeof(fts_shadow) / sizeof(fts_shadow[0]); i++) {
		char sql[160];
		snprintf(sql, sizeof(sql), "DELETE FROM dst.mail_fts_%s; INSERT INTO dst.mail_fts_%s"
		         " SELECT * FROM main.mail_fts_%s", fts_shadow[i], fts_shadow[i], fts_shadow[i]);
		rc = fts_build_exec(fb, sql, "cannot copy the text index");
	}
	/* the content written beside the build becomes the table's: FTS5
	 * finds its content table by name */
	if (rc == SQLITE_OK)
		rc = fts_build_exec(fb, "DROP TABLE dst.mail_fts_content;"
		                    " ALTER TABLE dst." FTS_BUILD_CONTENT " RENAME TO mail_fts_content",
		                    "cannot copy the text index");
	/* the database is put in place in WAL mode, what later runs and
	 * readers use (index.c, index_finish) */
	if (rc == SQLITE_OK)
		rc = fts_build_exec(fb, "COMMIT; PRAGMA dst.journal_mode = WAL; DETACH dst",
		                    "cannot copy the text index");
	fb->ns += clock_now_ns() - t0;
	return rc;
}

void fts_build_close(struct fts_build *fb)
{
	if (!fb)
		return;
	if (fb->threaded) {
		/* rows still queued are not wanted: the build is dropped */
		pthread_mutex_lock(&fb->mu);
		if (fb->rc == SQLITE_OK)
			fb->rc = SQLITE_ABORT;
		pthread_mutex_unlock(&fb->mu);
		fts_build_join(fb);
	}
	pthread_cond_destroy(&fb->cv);
	pthread_mutex_destroy(&fb->mu);
	sqlite3_finalize(fb->ins);
	sqlite3_close(fb->db);
	dynbuf_release(&fb->queued);
	dynbuf_release(&fb->taken);
	xfree(fb);
}

const char *fts_build_error(const struct fts_build *fb)
{
	return fb->error[0] ? fb->error : NULL;
}

uint64_t fts_build_ns(const struct fts_build *fb)
{
	return fb->ns;
}
