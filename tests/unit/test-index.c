/* SPDX-License-Identifier: MIT */
/* Unit tests for index/index.c: the schema and its refusals, records into
 * rows, identity, threads, deletions and renames, and the --state view of
 * the files table.  Rows are read back with plain SQL, as a user would. */
#include "core/dynbuf.h"
#include "index/index.h"
#include "io/maildir.h"
#include "io/state.h"
#include "core/record.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#define S(lit) ((struct str){ (lit), sizeof(lit) - 1 })

static char dir[64], db_path[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-index-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(db_path, sizeof(db_path), "%s/mail.db", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The first column of the first row of sql, as text ("" when none). */
static const char *query(const char *sql)
{
	static char out[2048];
	sqlite3 *db;
	sqlite3_stmt *s;
	out[0] = '\0';
	assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, sizeof(out), "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return out;
}

static void write_file(const char *path, const char *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, n, f), n);
	fclose(f);
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static struct record_io maildir_io(const char *path)
{
	struct record_io io;
	memset(&io, 0, sizeof(io));
	io.root = S("Maildir");
	io.base = io.root;
	io.path = (struct str){ path, strlen(path) };
	/* the walk's identity: the unique name, whatever the flags */
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	io.id = maildir_id(io.base.p, io.base.n, name, strlen(name));
	io.have_stat = true;
	io.dev = 1;
	io.ino = 42;
	io.size = 100;
	io.mtime_sec = 1700000000;
	io.maildir = true;
	return io;
}

static struct index *open_index(void)
{
	struct index *ix;
	const char *why;
	assert_int_equal(index_open(db_path, &ix, &why), 0);
	return ix;
}

/* The end of a run: a database built aside is put in place. */
static void finish(struct index *ix)
{
	assert_int_equal(index_finish(ix), 0);
	index_close(ix);
}

/* An index that exists already, written in place (WAL) batch by batch,
 * so that a test can read it back between batches. */
static struct index *open_existing(void)
{
	finish(open_index());
	return open_index();
}

static void add(struct index *ix, const struct record_io *io, const char *rec)
{
	assert_int_equal(index_begin(ix), 0);
	assert_int_equal(index_add_item(ix, io, rec, strlen(rec)), 0);
	assert_int_equal(index_commit(ix), 0);
}

static void test_index_creates_schema(void **state)
{
	(void)state;
	struct index *ix;
	const char *why;
	assert_int_equal(index_open(db_path, &ix, &why), 0);
	finish(ix);
	assert_string_equal(query("PRAGMA user_version"), "3");
	assert_string_equal(query("PRAGMA journal_mode"), "wal");
	assert_string_equal(query("SELECT count(*) FROM sqlite_master WHERE name IN ('messages',"
	                          " 'addresses', 'attachments', 'refs', 'errors', 'files', 'mail_fts',"
	                          " 'threads')"), "8");
	/* and it opens again as its own */
	assert_int_equal(index_open(db_path, &ix, &why), 0);
	finish(ix);
}

static void refused_untouched(const char *bytes, size_t n, const char *expect_why)
{
	write_file(db_path, bytes, n);
	struct index *ix;
	const char *why;
	assert_true(index_open(db_path, &ix, &why) < 0);
	assert_null(ix);
	assert_non_null(strstr(why, expect_why));
	char back[65536];
	assert_int_equal(read_file(db_path, back, sizeof(back)), n);
	assert_memory_equal(back, bytes, n);
	char wal[128];
	snprintf(wal, sizeof(wal), "%s-wal", db_path);
	assert_int_equal(access(wal, F_OK), -1);
	unlink(db_path);
}

static void make_db(const char *sql, char *bytes, size_t *n)
{
	sqlite3 *db;
	unlink(db_path);
	assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	*n = read_file(db_path, bytes, 65536);
}

static void test_index_refuses_foreign(void **state)
{
	(void)state;
	static const char text[] = "From: not a database\n";
	refused_untouched(text, sizeof(text) - 1, "not an SQLite database");
	char bytes[65536];
	size_t n;
	make_db("CREATE TABLE notes(x)", bytes, &n);
	refused_untouched(bytes, n, "another application");
	make_db("PRAGMA application_id = 1768843124; PRAGMA user_version = 4; CREATE TABLE messages(x)",
	        bytes, &n);
	refused_untouched(bytes, n, "newer ingest");
	make_db("PRAGMA application_id = 1768843124; PRAGMA user_version = 1; CREATE TABLE messages(x)",
	        bytes, &n);
	refused_untouched(bytes, n, "older ingest");
}

/* An index of schema_version 2 (no record_hash, no messages_archive) is
 * migrated in place when opened for writing, its rows kept: the hashes of
 * its messages are NULL, so that a file read again replaces them. */
static void test_index_migrates_version_2(void **state)
{
	(void)state;
	struct index *ix = open_index();
	struct record_io io = maildir_io("cur/1.M1.h:2,S");
	add(ix, &io, "{\"id\":\"00000000000000aa\",\"subject\":\"kept\"}\n");
	finish(ix);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "DROP INDEX messages_archive; ALTER TABLE messages DROP COLUMN"
	                              " record_hash; PRAGMA user_version = 2", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	const char *why;
	assert_int_equal(index_open(db_path, &ix, &why), 0);
	finish(ix);
	assert_string_equal(query("PRAGMA user_version"), "3");
	assert_string_equal(query("SELECT subject || ',' || (record_hash IS NULL) FROM messages"), "kept,1");
	assert_string_equal(query("SELECT count(*) FROM sqlite_master WHERE name = 'messages_archive'"), "1");
}

/* An index of this schema_version with a table dropped (by hand, by
 * another program) is refused as one not ours is (-EINVAL: exit 2), its
 * reason naming what differs, the file as it was; it used to fail as an
 * I/O error, exit 1. */
static void test_index_refuses_changed_tables(void **state)
{
	(void)state;
	finish(open_index());
	sqlite3 *db;
	assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "DROP TABLE refs", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	static char before[1 << 20], after[1 << 20];
	size_t n = read_file(db_path, before, sizeof(before));
	assert_true(n > 0 && n < sizeof(before));
	struct index *ix;
	const char *why;
	assert_int_equal(index_open(db_path, &ix, &why), -EINVAL);
	assert_null(ix);
	assert_non_null(strstr(why, "tables were changed"));
	assert_non_null(strstr(why, "refs"));
	assert_int_equal(read_file(db_path, after, sizeof(after)), n);
	assert_memory_equal(before, after, n);
}

/* A database the run creates is FILE.new until index_finish renames it;
 * closed unfinished (a failed run), nothing of it stays. */
static void test_index_built_aside(void **state)
{
	(void)state;
	char aside[128];
	snprintf(aside, sizeof(aside), "%s.new", db_path);
	struct index *ix = open_index();
	struct record_io io = maildir_io("cur/1.M1.h:2,S");
	add(ix, &io, "{\"path\":\"cur/1.M1.h:2,S\",\"id\":\"00000000000000a1\",\"subject\":\"x\"}\n");
	assert_int_equal(access(db_path, F_OK), -1);
	assert_int_equal(access(aside, F_OK), 0);
	/* a second first run while this one builds is refused */
	struct index *other;
	const char *why;
	assert_int_equal(index_open(db_path, &other, &why), -EBUSY);
	assert_non_null(strstr(why, "another run"));
	index_close(ix);
	assert_int_equal(access(db_path, F_OK), -1);
	assert_int_equal(access(aside, F_OK), -1);
	ix = open_index();
	add(ix, &io, "{\"path\":\"cur/1.M1.h:2,S\",\"id\":\"00000000000000a1\",\"subject\":\"x\"}\n");
	finish(ix);
	assert_int_equal(access(aside, F_OK), -1);
	assert_string_equal(query("SELECT count(*) FROM messages"), "1");
	assert_string_equal(query("PRAGMA journal_mode"), "wal");
	assert_string_equal(query("PRAGMA integrity_check"), "ok");
}

/* Built aside there is no journal: a transaction rolled back (a failure
 * that was not SQLite's, such as no memory for a record) leaves what it
 * wrote, so the build is dropped, never put in place. */
static void test_index_built_rollback_drops(void **state)
{
	(void)state;
	char aside[128];
	snprintf(aside, sizeof(aside), "%s.new", db_path);
	struct index *ix = open_index();
	struct record_io a = maildir_io("cur/1.M1.h:2,S"), b = maildir_io("cur/2.M2.h:2,S");
	add(ix, &a, "{\"path\":\"cur/1.M1.h:2,S\",\"id\":\"00000000000000f1\",\"subject\":\"x\"}\n");
	static const char rb[] = "{\"path\":\"cur/2.M2.h:2,S\",\"id\":\"00000000000000f2\",\"subject\":\"y\"}\n";
	assert_int_equal(index_begin(ix), 0);
	assert_int_equal(index_add_item(ix, &b, rb, strlen(rb)), 0);
	index_rollback(ix);
	assert_int_equal(index_finish(ix), 0);
	index_close(ix);
	assert_int_equal(access(db_path, F_OK), -1);
	assert_int_equal(access(aside, F_OK), -1);
}

static void test_index_refuses_read_only(void **state)
{
	(void)state;
	struct index *ix;
	const char *why;
	assert_int_equal(index_open(db_path, &ix, &why), 0);
	finish(ix);
	if (geteuid() == 0)
		skip();   /* root writes a 0444 file; the CLI suite checks as a user */
	chmod(db_path, 0444);
	assert_int_equal(index_open(db_path, &ix, &why), -EACCES);
	assert_non_null(strstr(why, "not writable"));
}

static const char rec_a[] =
	"{\"path\":\"cur/1.M1.h:2,S\",\"id\":\"00000000000000a1\",\"root\":\"Maildir\",\"size\":100,\"folder\":\"\",\"subdir\":\"cur\","
	"\"flags\":\"S\",\"message_id\":\"a@x\",\"date\":\"2023-01-02T00:00:00Z\","
	"\"from\":[{\"name\":\"Ann Émile\",\"address\":\"ann@example.org\"}],"
	"\"to\":[{\"name\":null,\"address\":\"bob@example.org\"},{\"group\":\"team\",\"members\":"
	"[{\"name\":\"Carol\",\"address\":\"carol@example.org\"}]},{\"group\":\"undisclosed-recipients\","
	"\"members\":[]}],\"subject\":\"Q3 report\",\"content_type\":\"multipart/mixed\","
	"\"text\":\"Numbers \\\"error\\\":{ attached.\",\"text_truncated\":false,\"attachments\":[{\"filename\":"
	"\"report.pdf\",\"content_type\":\"application/pdf\",\"detected_type\":\"application/pdf\","
	"\"disposition\":\"attachment\",\"content_id\":null,\"size\":48}],\"parts\":2,"
	"\"warnings\":[\"duplicated-header\"]}\n";

static void test_index_message_rows(void **state)
{
	(void)state;
	struct index *ix = open_index();
	struct record_io io = maildir_io("cur/1.M1.h:2,S");
	add(ix, &io, rec_a);
	finish(ix);
	assert_string_equal(query("SELECT id || '|' || subject || '|' || tags || '|' || warnings ||"
	                          " '|' || parts FROM messages"),
	                    "00000000000000a1|Q3 report|[\"seen\"]|[\"duplicated-header\"]|2");
	assert_string_equal(query("SELECT group_concat(role || ':' || position || ':' ||"
	                          " coalesce(\"group\", '-') || ':' || coalesce(address, '-'), ' ')"
	                          " FROM addresses"),
	                    "from:0:-:ann@example.org to:0:-:bob@example.org to:1:team:carol@example.org"
	                    " to:2:undisclosed-recipients:-");
	assert_string_equal(query("SELECT filename || ' ' || size FROM attachments"), "report.pdf 48");
	/* diacritics folded: "emile" finds "Émile"; attachment names are words */
	assert_string_equal(query("SELECT count(*) FROM mail_fts WHERE mail_fts MATCH 'from:emile'"), "1");
	assert_string_equal(query("SELECT count(*) FROM mail_fts WHERE mail_fts MATCH 'report AND pdf'"),
	                    "1");
	assert_string_equal(query("SELECT count(*) FROM errors"), "0");
}

static void test_index_error_records(void **state)
{
	(void)state;
	struct index *ix = open_index();
	struct record_io io = maildir_io("cur/2.M2.h:2,");
	io.reason = RECORD_IO;
	io.err = EACCES;
	add(ix, &io, "{\"path\":\"cur/2.M2.h:2,\",\"id\":\"0000000000000002\",\"root\":\"Maildir\",\"error\":{\"reason\":\"io-error\","
	             "\"errno\":\"EACCES\",\"message\":\"Permission denied\"}}\n");
	finish(ix);
	assert_string_equal(query("SELECT reason || ' ' || errno || ' ' || message FROM errors"),
	                    "io-error EACCES Permission denied");
	assert_string_equal(query("SELECT count(*) FROM messages"), "0");
	/* an unreadable file leaves a state row with no inode: the next run
	 * reads it again, or, the name gone, deletes its error row */
	assert_string_equal(query("SELECT dev || ' ' || ino FROM files"), "0 0");
}

static void test_index_threads_merge(void **state)
{
	(void)state;
	struct index *ix = open_existing();
	struct record_io io = maildir_io("cur/1.M1.h:2,");
	add(ix, &io, "{\"path\":\"cur/1.M1.h:2,\",\"id\":\"0000000000000001\",\"message_id\":\"a@x\"}\n");
	io.path = S("cur/3.M3.h:2,");
	add(ix, &io, "{\"path\":\"cur/3.M3.h:2,\",\"id\":\"0000000000000003\",\"message_id\":\"c@x\",\"references\":[\"b@x\"]}\n");
	io.path = S("cur/4.M4.h:2,");
	add(ix, &io, "{\"path\":\"cur/4.M4.h:2,\",\"id\":\"0000000000000004\",\"message_id\":\"d@x\",\"references\":[\"b@x\"]}\n");
	assert_string_equal(query("SELECT count(DISTINCT thread_id) FROM messages"), "2");
	/* b links a (which it answers) with c and d (which answer it) */
	io.path = S("cur/2.M2.h:2,");
	add(ix, &io, "{\"path\":\"cur/2.M2.h:2,\",\"id\":\"0000000000000002\",\"message_id\":\"b@x\",\"in_reply_to\":\"a@x\"}\n");
	finish(ix);
	assert_string_equal(query("SELECT count(DISTINCT thread_id) FROM messages"), "1");
	assert_string_equal(query("SELECT messages FROM threads"), "4");
}

/* A message that links more threads than one pass merges (20 roots, each
 * its own thread) joins them all, as notmuch does: 16 merged and the
 * other 4 left apart before. */
static void test_index_threads_merge_many(void **state)
{
	(void)state;
	struct index *ix = open_existing();
	char path[64], rec[2048], refs[1024] = "";
	struct record_io io = maildir_io("cur/0.M0.h:2,");
	for (int i = 1; i <= 20; i++) {
		snprintf(path, sizeof(path), "cur/%d.M%d.h:2,", i, i);
		io.path = (struct str){ path, strlen(path) };
		snprintf(rec, sizeof(rec), "{\"path\":\"%s\",\"id\":\"%016x\",\"message_id\":\"r%d@x\"}\n",
		         path, i, i);
		add(ix, &io, rec);
		snprintf(refs + strlen(refs), sizeof(refs) - strlen(refs), "%s\"r%d@x\"", i > 1 ? "," : "", i);
	}
	assert_string_equal(query("SELECT count(DISTINCT thread_id) FROM messages"), "20");
	io.path = S("cur/99.M99.h:2,");
	snprintf(rec, sizeof(rec), "{\"path\":\"cur/99.M99.h:2,\",\"id\":\"0000000000000099\","
	         "\"message_id\":\"all@x\",\"references\":[%s]}\n", refs);
	add(ix, &io, rec);
	finish(ix);
	assert_string_equal(query("SELECT count(DISTINCT thread_id) FROM messages"), "1");
	assert_string_equal(query("SELECT count(*) || ' ' || max(messages) FROM threads"), "1 21");
}

/* FTS5's own check over the database: every index entry matches the
 * content, and the content every row. */
static void fts_integrity_ok(void)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO mail_fts(mail_fts) VALUES ('integrity-check')", NULL,
	                              NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* One message left, and one FTS row, its own, with this text. */
static void one_fts_row(const char *text)
{
	char want[64];
	snprintf(want, sizeof(want), "1 %s", text);
	assert_string_equal(query("SELECT count(*) FROM messages"), "1");
	assert_string_equal(query("SELECT group_concat(f.rowid = m.docid) || ' ' || group_concat(f.text)"
	                          " FROM mail_fts f, messages m"), want);
}

/* The FTS rows of a transaction are written at its commit: a message
 * replaced (the same id again) or deleted before it leaves no FTS row. */
static void test_index_fts_rows_at_commit(void **state)
{
	(void)state;
	struct index *ix = open_existing();
	struct record_io a = maildir_io("cur/1.M1.h:2,S"), b = maildir_io("cur/1.M1.h:2,RS");
	struct record_io c = maildir_io("cur/2.M2.h:2,S"), del = maildir_io("cur/2.M2.h:2,S");
	del.kind = RECORD_DELETED;
	static const char ra[] = "{\"path\":\"cur/1.M1.h:2,S\",\"id\":\"00000000000000c1\",\"text\":\"first\"}\n",
	                  rb[] = "{\"path\":\"cur/1.M1.h:2,RS\",\"id\":\"00000000000000c1\",\"text\":\"second\"}\n",
	                  rc[] = "{\"path\":\"cur/2.M2.h:2,S\",\"id\":\"00000000000000c2\",\"text\":\"gone\"}\n",
	                  rd[] = "{\"deleted\":\"cur/2.M2.h:2,S\",\"root\":\"Maildir\"}\n";
	assert_int_equal(index_begin(ix), 0);
	assert_int_equal(index_add_item(ix, &a, ra, strlen(ra)), 0);
	assert_int_equal(index_add_item(ix, &b, rb, strlen(rb)), 0);
	assert_int_equal(index_add_item(ix, &c, rc, strlen(rc)), 0);
	assert_int_equal(index_add_item(ix, &del, rd, strlen(rd)), 0);
	assert_int_equal(index_commit(ix), 0);
	finish(ix);
	one_fts_row("second");
}

/* A database built aside writes its FTS index into a file of its own, one
 * transaction for the run, and copies it in at the end beside the content
 * the writer stored: a message replaced in a later batch (its identity
 * met again) leaves one FTS row, its last one, and the copy passes FTS5's
 * own check. */
static void test_index_built_replaced(void **state)
{
	(void)state;
	struct index *ix = open_index();
	struct record_io a = maildir_io("cur/1.M1.h:2,S"), b = maildir_io("new/1.M1.h");
	static const char ra[] = "{\"path\":\"cur/1.M1.h:2,S\",\"id\":\"00000000000000d1\",\"text\":\"first\"}\n",
	                  rb[] = "{\"path\":\"new/1.M1.h\",\"id\":\"00000000000000d1\",\"text\":\"second\"}\n";
	assert_int_equal(index_begin(ix), 0);
	assert_int_equal(index_add_item(ix, &a, ra, strlen(ra)), 0);
	assert_int_equal(index_commit(ix), 0);
	assert_int_equal(index_begin(ix), 0);
	assert_int_equal(index_add_item(ix, &b, rb, strlen(rb)), 0);
	assert_int_equal(index_commit(ix), 0);
	finish(ix);
	one_fts_row("second");
	assert_string_equal(query("SELECT count(*) FROM mail_fts WHERE mail_fts MATCH 'first'"), "0");
	assert_string_equal(query("SELECT count(*) FROM mail_fts WHERE mail_fts MATCH 'second'"), "1");
	fts_integrity_ok();
	assert_string_equal(query("PRAGMA journal_mode"), "wal");
	/* nothing left beside the database */
	char aside[128];
	snprintf(aside, sizeof(aside), "%s.new-fts", db_path);
	assert_int_equal(access(aside, F_OK), -1);
}

/* Built aside, the builder's index is contentless and the writer keeps
 * the content: a message replaced or deleted in a later batch leaves the
 * index by the values it went in with, a text holding a NUL included;
 * the content table is FTS5's at the end, and a later run in place
 * deletes through it. */
static void test_index_built_deletes_by_value(void **state)
{
	(void)state;
	struct index *ix = open_index();
	struct record_io a = maildir_io("cur/1.M1.h:2,S"), b = maildir_io("cur/2.M2.h:2,S");
	struct record_io a2 = maildir_io("new/1.M1.h"), del = maildir_io("cur/2.M2.h:2,S");
	del.kind = RECORD_DELETED;
	static const char ra[] = "{\"path\":\"cur/1.M1.h:2,S\",\"id\":\"00000000000000e1\","
	                         "\"text\":\"alpha\\u0000omega\",\"subject\":\"first\"}\n",
	                  rb[] = "{\"path\":\"cur/2.M2.h:2,S\",\"id\":\"00000000000000e2\",\"text\":\"bravo\"}\n",
	                  ra2[] = "{\"path\":\"new/1.M1.h\",\"id\":\"00000000000000e1\",\"text\":\"second\"}\n",
	                  rd[] = "{\"deleted\":\"cur/2.M2.h:2,S\",\"root\":\"Maildir\"}\n";
	assert_int_equal(index_begin(ix), 0);
	assert_int_equal(index_add_item(ix, &a, ra, strlen(ra)), 0);
	assert_int_equal(index_add_item(ix, &b, rb, strlen(rb)), 0);
	assert_int_equal(index_commit(ix), 0);
	add(ix, &a2, ra2);
	add(ix, &del, rd);
	finish(ix);
	fts_integrity_ok();
	one_fts_row("second");
	for (const char *const *w = (const char *const[]){ "alpha", "omega", "first", "bravo", NULL }; *w; w++) {
		char sql[128];
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM mail_fts WHERE mail_fts MATCH '%s'", *w);
		assert_string_equal(query(sql), "0");
	}
	assert_string_equal(query("SELECT (SELECT count(*) FROM mail_fts_content) || ' '"
	                          " || (SELECT count(*) FROM mail_fts_docsize) || ' '"
	                          " || (SELECT count(*) FROM sqlite_master WHERE name = 'built_fts_content')"),
	                    "1 1 0");
	/* a later run, in place: FTS5 deletes through the content it was given */
	ix = open_index();
	struct record_io a3 = maildir_io("cur/1.M1.h:2,RS");
	add(ix, &a3, "{\"path\":\"cur/1.M1.h:2,RS\",\"id\":\"00000000000000e1\",\"text\":\"third\"}\n");
	finish(ix);
	fts_integrity_ok();
	one_fts_row("third");
	assert_string_equal(query("SELECT count(*) FROM mail_fts WHERE mail_fts MATCH 'second'"), "0");
}

/* Records read in C (index/json_read.h, index/addresses.h) give the rows
 * SQLite's JSON functions give: each record stored as written, then, into
 * a second database, read by SQLite only (index_sql_reading), and, into a
 * third, with a space after its first brace, which leaves the record to
 * SQLite by the fallback; every stored column equal, with its type. */
static void index_records_into(const char *path, const char *const *recs, size_t n, int how)
{
	snprintf(db_path, sizeof(db_path), "%s/%s", dir, path);
	index_sql_reading = how == 1;
	struct index *ix = open_existing();
	for (size_t i = 0; i < n; i++) {
		char name[32], rec[1024];
		snprintf(name, sizeof(name), "cur/%zu.M%zu.h:2,S", i, i);
		snprintf(rec, sizeof(rec), "{%s\"path\":\"%s\",%s\n", how == 2 ? " " : "", name, recs[i]);
		struct record_io io = maildir_io(name);
		add(ix, &io, rec);
	}
	finish(ix);
	index_sql_reading = false;
}

static void test_index_records_read_as_sqlite(void **state)
{
	(void)state;
	static const char *const recs[] = {
		/* first, so that the address rows' text has no buffer yet: empty
		 * strings stay empty strings (To: "" :;) */
		"\"id\":\"00000000000000f0\",\"from\":[{\"name\":null,\"address\":\"\"}],"
		"\"to\":[{\"group\":\"\",\"members\":[]}]}",
		"\"id\":\"00000000000000f1\",\"subject\":\"tab\\there \\\"q\\\" \\u00e9 \\/ \\u4e2d\","
		"\"size\":6015,\"parts\":3,\"text_truncated\":true,\"warnings\":[\"a\",\"b\\n\"],"
		"\"headers\":{\"X-A\":[\"1\"]},\"from\":[{\"name\":\"Ann\",\"address\":\"a@x\"}],"
		"\"to\":[{\"group\":\"G\",\"members\":[{\"name\":null,\"address\":\"b@x\"}]}],"
		"\"references\":[\"r@x\"],\"attachments\":[{\"filename\":\"f.pdf\",\"size\":10}],"
		"\"text\":\"body\\r\\nline\",\"unknown\":{\"deep\":[1,2,{\"x\":null}]}}",
		"\"id\":\"00000000000000f2\",\"subject\":null,\"notes\":null,\"text_truncated\":false,"
		"\"date\":\"2024-01-02T03:04:05Z\",\"subject\":\"second key\"}",
		"\"id\":\"00000000000000f3\",\"text\":\"cut\\u0000here\",\"size\":-1}",
	};
	const size_t n = sizeof(recs) / sizeof(recs[0]);
	static const char rows[] =
		"SELECT group_concat(r, ';') FROM (SELECT quote(id) || quote(folder) || quote(subdir) ||"
		" quote(flags) || quote(tags) || quote(size) || quote(subject) || quote(parts) ||"
		" quote(warnings) || quote(notes) || quote(text_truncated) || quote(headers) || quote(date) ||"
		" quote(thread_id) || coalesce((SELECT group_concat(quote(role) || quote(position) ||"
		" quote(member) || quote(name) || quote(address) || quote(\"group\"), ',') FROM addresses"
		" WHERE message = docid), '') || coalesce((SELECT group_concat(quote(msgid)) FROM refs"
		" WHERE message = docid), '') || coalesce((SELECT group_concat(quote(filename) ||"
		" quote(size)) FROM attachments WHERE message = docid), '') ||"
		" (SELECT quote(c0) || quote(c1) || quote(c2) || quote(c3) || quote(c4) FROM mail_fts_content"
		" WHERE id = docid) AS r FROM messages ORDER BY docid)";
	index_records_into("c.db", recs, n, 0);
	char in_c[2048];
	snprintf(in_c, sizeof(in_c), "%s", query(rows));
	index_records_into("sqlite.db", recs, n, 1);
	assert_string_equal(in_c, query(rows));
	index_records_into("fallback.db", recs, n, 2);
	assert_string_equal(in_c, query(rows));
	/* and what was read is there: the escapes undone, the first of a
	 * key met twice, the text SQLite cut at its NUL */
	assert_non_null(strstr(in_c, "'tab\there \"q\" \xc3\xa9 / \xe4\xb8\xad'"));
	assert_non_null(strstr(in_c, "6015"));
	assert_non_null(strstr(in_c, "'[\"a\",\"b\\n\"]'"));
	assert_non_null(strstr(in_c, "'body\r\nline'"));
	assert_null(strstr(in_c, "second key"));
	assert_non_null(strstr(in_c, "'cut'"));
	assert_non_null(strstr(in_c, "'from'0NULLNULL''NULL"));
	assert_non_null(strstr(in_c, "'to'0NULLNULLNULL''"));
	/* an address list that is a number: SQLite's json_each makes it a
	 * row the table refuses, both ways */
	for (int spaced = 0; spaced < 2; spaced++) {
		snprintf(db_path, sizeof(db_path), "%s/number%d.db", dir, spaced);
		struct index *ix = open_existing();
		struct record_io io = maildir_io("cur/9.M9.h:2,S");
		char rec[160];
		snprintf(rec, sizeof(rec), "{%s\"path\":\"cur/9.M9.h:2,S\",\"id\":\"00000000000000f9\",\"from\":5}\n",
		         spaced ? " " : "");
		assert_int_equal(index_begin(ix), 0);
		assert_int_equal(index_add_item(ix, &io, rec, strlen(rec)), -EIO);
		index_close(ix);
	}
}

static void test_index_rename_delete(void **state)
{
	(void)state;
	struct index *ix = open_existing();
	struct record_io io = maildir_io("new/1.M1.h");
	add(ix, &io, "{\"path\":\"new/1.M1.h\",\"id\":\"00000000000000b1\",\"root\":\"Maildir\",\"folder\":\"\",\"subdir\":\"new\","
	             "\"flags\":\"\",\"message_id\":\"a@x\",\"subject\":\"hello\"}\n");
	assert_string_equal(query("SELECT id || ' ' || tags FROM messages"), "00000000000000b1 [\"unread\"]");
	struct record_io rn = maildir_io("cur/1.M1.h:2,RS");
	rn.kind = RECORD_RENAMED;
	rn.old_path = S("new/1.M1.h");
	add(ix, &rn, "{\"renamed\":{\"from\":\"new/1.M1.h\",\"to\":\"cur/1.M1.h:2,RS\"},\"root\":\"Maildir\","
	             "\"folder\":\"\",\"subdir\":\"cur\",\"flags\":\"RS\"}\n");
	assert_string_equal(query("SELECT id || ' ' || path || ' ' || tags FROM messages"),
	                    "00000000000000b1 cur/1.M1.h:2,RS [\"replied\",\"seen\"]");
	assert_string_equal(query("SELECT path FROM files"), "cur/1.M1.h:2,RS");
	/* read again under the same identity: replaced, not added */
	io = maildir_io("cur/1.M1.h:2,RS");
	add(ix, &io, "{\"path\":\"cur/1.M1.h:2,RS\",\"id\":\"00000000000000b1\",\"root\":\"Maildir\",\"subdir\":\"cur\",\"flags\":\"RS\","
	             "\"message_id\":\"a@x\",\"subject\":\"hello again\"}\n");
	assert_string_equal(query("SELECT count(*) || ' ' || max(subject) FROM messages"), "1 hello again");
	assert_string_equal(query("SELECT count(*) FROM mail_fts"), "1");
	struct record_io del = maildir_io("cur/1.M1.h:2,RS");
	del.kind = RECORD_DELETED;
	add(ix, &del, "{\"deleted\":\"cur/1.M1.h:2,RS\",\"root\":\"Maildir\"}\n");
	finish(ix);
	assert_string_equal(query("SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM files)"
	                          " + (SELECT count(*) FROM mail_fts) + (SELECT count(*) FROM addresses)"), "0");
}

/* A streamed archive's message item (record_io.in_mbox) at offset off. */
static struct record_io archive_io(uint64_t off, uint64_t size)
{
	struct record_io io;
	memset(&io, 0, sizeof(io));
	io.root = S("/r");
	io.base = io.root;
	io.path = S("a.mbox");
	io.id = 0xa;
	io.have_stat = true;
	io.size = size;
	io.in_mbox = true;
	io.offset = off;
	io.read_to = size;
	return io;
}

/* An archive message's record, its id record_io's; size first or last. */
static const char *archive_rec(const struct record_io *io, const char *subject, bool size_first)
{
	static char out[512];
	char id[17];
	record_id_hex(record_id(io), id);
	if (size_first)
		snprintf(out, sizeof(out), "{\"size\":%llu,\"path\":\"a.mbox\",\"offset\":%llu,\"id\":\"%s\","
		         "\"subject\":\"%s\",\"text\":\"%s words\"}\n", (unsigned long long)io->size,
		         (unsigned long long)io->offset, id, subject, subject);
	else
		snprintf(out, sizeof(out), "{\"path\":\"a.mbox\",\"offset\":%llu,\"id\":\"%s\","
		         "\"subject\":\"%s\",\"text\":\"%s words\",\"size\":%llu}\n",
		         (unsigned long long)io->offset, id, subject, subject, (unsigned long long)io->size);
	return out;
}

/* A message read again as it was stored keeps its row (docid, thread,
 * text index row), its file's size written; one that changed is
 * replaced; an archive's message gone is deleted by id (a streamed
 * archive's deletion is an item of its own). */
static void test_index_keeps_unchanged(void **state)
{
	(void)state;
	struct index *ix = open_existing();
	struct record_io a = archive_io(10, 100), b = archive_io(60, 100), c = archive_io(80, 100);
	add(ix, &a, archive_rec(&a, "first", false));
	add(ix, &b, archive_rec(&b, "second", false));
	add(ix, &c, archive_rec(&c, "third", false));
	char id_a[17], kept[64];
	record_id_hex(record_id(&a), id_a);
	char sql[160];
	snprintf(sql, sizeof(sql), "SELECT docid FROM messages WHERE id = '%s'", id_a);
	snprintf(kept, sizeof(kept), "%s", query(sql));
	/* the archive grew: the first unchanged but for the file's size (and
	 * its members in another order), the second changed, the third gone */
	a.size = b.size = c.size = 300;
	add(ix, &a, archive_rec(&a, "first", true));
	add(ix, &b, archive_rec(&b, "second!", false));
	c.kind = RECORD_DELETED;
	assert_int_equal(index_begin(ix), 0);
	assert_int_equal(index_add_item(ix, &c, NULL, 0), 0);
	assert_int_equal(index_commit(ix), 0);
	struct index_stats st;
	index_stats_get(ix, &st);
	assert_int_equal(st.unchanged, 1);
	finish(ix);
	assert_string_equal(query(sql), kept);
	assert_string_equal(query("SELECT group_concat(\"offset\" || ',' || size || ',' || subject, ' ') FROM"
	                          " (SELECT * FROM messages ORDER BY \"offset\")"),
	                    "10,300,first 60,300,second!");
	assert_string_equal(query("SELECT count(*) FROM mail_fts"), "2");
	assert_string_equal(query("SELECT count(*) FROM mail_fts WHERE mail_fts MATCH 'first'"), "1");
	assert_string_equal(query("SELECT count(*) FROM mail_fts WHERE mail_fts MATCH 'third'"), "0");
	assert_string_equal(query("PRAGMA integrity_check"), "ok");
}

static void test_index_state_view(void **state)
{
	(void)state;
	struct index *ix = open_index();
	struct record_io io = maildir_io("cur/1.M1.h:2,S");
	add(ix, &io, rec_a);
	struct state *st;
	assert_int_equal(index_load_state(ix, &st), 0);
	enum state_verdict v;
	struct str op, ob;
	struct state_entry *e;
	assert_int_equal(state_check(st, &io, &v, &op, &ob, &e), 0);
	assert_int_equal(v, STATE_UNCHANGED);
	struct record_io moved = maildir_io("cur/1.M1.h:2,RS");
	assert_int_equal(state_check(st, &moved, &v, &op, &ob, &e), 0);
	/* the same file (id and inode) met twice in one run: one entry */
	assert_int_equal(v, STATE_UNCHANGED);
	assert_null(e);
	state_free(st);
	assert_int_equal(index_load_state(ix, &st), 0);
	assert_int_equal(state_check(st, &moved, &v, &op, &ob, &e), 0);
	assert_int_equal(v, STATE_RENAMED);
	state_free(st);
	finish(ix);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_index_creates_schema, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_refuses_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_refuses_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_built_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_records_read_as_sqlite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_built_rollback_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_message_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_error_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_refuses_changed_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_threads_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_threads_merge_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_fts_rows_at_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_built_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_built_deletes_by_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_rename_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_state_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_keeps_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_migrates_version_2, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
