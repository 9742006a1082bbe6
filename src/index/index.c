/* SPDX-License-Identifier: MIT */
/* The --index sink: records into SQLite (see index.h; the schema and its
 * rules are in README, "The index").
 *
 * Records arrive as the JSON Lines of README "Records" and SQLite's own JSON
 * functions take them apart, so no second JSON reader exists: a message
 * record in one json_each pass (index_record), whose fields the statements
 * below take as parameters, its lists (addresses, attachments, references)
 * by json_each in the statements that store them; the rarer records (an
 * error, a rename) bound whole as ?1 and read with ->>.
 *
 * Row identity: messages.id is the record's id (README, "Records"), stable
 * under flag changes and moves between folders.  Threads: a message joins the thread of every message
 * it references or that references it or that shares a reference with it
 * (a missing message every one of them names links them, as notmuch's
 * ghost messages do); when it links two threads they become one, under the
 * smaller id.  Deleting a message does not split its thread.
 *
 * State: `files` holds, per file, what --state's file holds (io/state.c),
 * written in the transaction of the batch that carried the file's records.
 * A file whose read failed (io-error) keeps its previous row, as --state
 * keeps the previous entry: the next run sees the difference and reads it. */
#include "index/index.h"
#include "index/addresses.h"
#include "index/db_open.h"
#include "index/fts_build.h"
#include "index/fts_tokenizer.h"
#include "index/json_read.h"
#include "index/vanished.h"
#include "io/maildir.h"
#include "io/state.h"
#include "core/dynbuf.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "sched/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
/* header only: the record's hash (index_record_read) */
#define XXH_INLINE_ALL
#include <xxhash.h>

enum index_stmt {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK,
	ST_DELETE_PATH, ST_DELETE_PATH_ERRORS,
	ST_INSERT_MESSAGE, ST_RECORD_FIELDS, ST_INSERT_ADDRESS, ST_INSERT_ADDRESSES, ST_INSERT_ATTACHMENTS,
	ST_INSERT_REFS,
	ST_FTS_ROW, ST_INSERT_FTS, ST_THREAD_LINKS, ST_THREAD_SET, ST_THREAD_MERGE,
	ST_INSERT_ERROR, ST_UPSERT_FILE, ST_DELETE_FILE, ST_REREAD_FILE, ST_FILE_ID, ST_RENAME_MESSAGES,
	ST_RENAME_FILE, ST_FIND_ID, ST_KEEP_MESSAGE, ST_KEEP_STAT, ST_DELETE_ID, ST_DELETE_PATH_OTHER,
	ST__COUNT
};

/* No statement below makes a temporary table (a CTE used more than once, a
 * UNION ALL subquery in a join, an IN list of more than two values): each
 * is a b-tree SQLite opens, zeroes a page for and frees again; four a
 * message were a tenth of the writer's instructions (bench/INDEX.md). */
#define INDEX_ADDR_ROLES(PASS) \
	PASS("from", "1") " UNION ALL" PASS("sender", "2") " UNION ALL" PASS("reply_to", "3") \
	" UNION ALL" PASS("to", "4") " UNION ALL" PASS("cc", "5") " UNION ALL" PASS("bcc", "6")
#define INDEX_ADDR_PLAIN(role, n) \
	" SELECT ?7, '" role "', key, NULL, value->>'name', value->>'address', NULL" \
	"  FROM json_each(?" n ") WHERE value->>'group' IS NULL"
#define INDEX_ADDR_MEMBERS(role, n) \
	" SELECT ?7, '" role "', e.key, m.key, m.value->>'name', m.value->>'address'," \
	"  e.value->>'group' FROM json_each(?" n ") e, json_each(e.value, '$.members') m" \
	"  WHERE ?8 AND e.value->>'group' IS NOT NULL"
#define INDEX_ADDR_EMPTY(role, n) \
	" SELECT ?7, '" role "', key, NULL, NULL, NULL, value->>'group' FROM json_each(?" n ")" \
	"  WHERE ?8 AND value->>'group' IS NOT NULL AND json_array_length(value, '$.members') = 0"
/* ST_THREAD_LINKS' ids: the References and the two ids after them (a
 * missing one is JSON null, which matches nothing) */
#define INDEX_THREAD_IDS "json_insert(coalesce(?3, '[]'), '$[#]', ?1, '$[#]', ?2)"

/* The text index, in the database; and in the file a build writes it in
 * first, contentless, with its rows' content in the database
 * (fts_build.h), whence its deletions take their values. */
/* ", \"subject\", \"from\", ...": each column after a comma, quoted (from
 * and to are SQL keywords) */
#define INDEX_FTS_COLUMN_SQL(name, tag) ", \"" #name "\""
#define INDEX_FTS_COLUMNS INDEX_FTS_COLUMN_LIST(INDEX_FTS_COLUMN_SQL)
#define INDEX_FTS_TOKENIZE "tokenize = 'unicode61 remove_diacritics 2'"
#define INDEX_FTS_TABLE \
	"CREATE VIRTUAL TABLE mail_fts USING fts5(" INDEX_FTS_TOKENIZE INDEX_FTS_COLUMNS ")"
#define INDEX_FTS_BUILDER \
	"CREATE VIRTUAL TABLE mail_fts USING fts5(content = '', " INDEX_FTS_TOKENIZE \
	INDEX_FTS_COLUMNS ")"
_Static_assert(FTS_ROW_COLUMNS == INDEX_FTS__COUNT, "a builder's row is one of mail_fts");
#define INDEX_FTS_BUILDER_DELETE \
	"INSERT INTO mail_fts(mail_fts, rowid" INDEX_FTS_COLUMNS ")" \
	" SELECT 'delete', id, " FTS_CONTENT_COLUMNS " FROM " FTS_BUILD_GONE

/* ?1 the record, ?2 root, ?3 path, ?4 the message's docid where one is
 * needed (the renames: ?4 the old path, ?5 or ?10 its root).  root is the
 * resolved root (record_io.base), never the PATH argument as spelled:
 * `Maildir`, `./Maildir/` and its absolute path are one root, as for
 * --state (io/state.c) and the ids.  root and path are the exact bytes of
 * record_io: the record's own are lossy for a path that is not UTF-8. */
static const char *const index_sql[ST__COUNT] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_DELETE_PATH] = "DELETE FROM messages WHERE root = ?2 AND path = ?3",
	[ST_DELETE_PATH_ERRORS] = "DELETE FROM errors WHERE root = ?2 AND path = ?3",
	/* REPLACE under recursive_triggers: a message read again replaces
	 * its row, and the delete trigger takes its children along.  ?4 on:
	 * the record's fields, in the order of index_fields (index_record) */
	[ST_INSERT_MESSAGE] =
		"INSERT OR REPLACE INTO messages(id, root, path, folder, subdir, flags, tags, \"offset\","
		" length, size, mtime, message_id, in_reply_to, date, date_raw, subject, list_id,"
		" content_type, parts, warnings, notes, text_truncated, headers, record_hash)"
		" VALUES (?4, ?2, ?3, ?5, ?6, ?7, ingest_tags(?6, ?7), ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
		" ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
	/* the record's top-level members, in one pass over it (index_record) */
	[ST_RECORD_FIELDS] = "SELECT key, value FROM json_each(?1)",
	/* an address row as addresses.h reads it: ?1 the docid, then the
	 * columns */
	[ST_INSERT_ADDRESS] =
		"INSERT INTO addresses(message, role, position, member, name, address, \"group\")"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	/* The same rows, for lists of a shape addresses.h leaves to SQLite:
	 * ?1..?6 the address lists by role, ?7 the docid, ?8 whether a list
	 * may hold a group (index_add_message).  A group's members are rows
	 * with its name in "group"; an empty group (undisclosed-recipients:;)
	 * is one row with no address.  The rows in three passes (addresses,
	 * then groups' members, then empty groups), each by role: the order of
	 * the names in mail_fts' to column */
	[ST_INSERT_ADDRESSES] =
		"INSERT INTO addresses(message, role, position, member, name, address, \"group\")"
		INDEX_ADDR_ROLES(INDEX_ADDR_PLAIN) " UNION ALL"
		INDEX_ADDR_ROLES(INDEX_ADDR_MEMBERS) " UNION ALL"
		INDEX_ADDR_ROLES(INDEX_ADDR_EMPTY),
	/* ?1 the list, ?7 the docid */
	[ST_INSERT_ATTACHMENTS] =
		"INSERT INTO attachments(message, position, filename, content_type, detected_type,"
		" disposition, content_id, size)"
		" SELECT ?7, key, value->>'filename', value->>'content_type', value->>'detected_type',"
		" value->>'disposition', value->>'content_id', value->>'size' FROM json_each(?1)",
	[ST_INSERT_REFS] =
		"INSERT INTO refs(message, position, msgid) SELECT ?7, key, value FROM json_each(?1)",
	/* The columns of a message's FTS row but its text (index_fts_flush):
	 * ?1 the attachments, ?7 the docid; no row for a message replaced or
	 * deleted since.  Names and addresses as words: from:ann and
	 * from:example.org match */
	[ST_FTS_ROW] =
		"SELECT m.subject,"
		" (SELECT group_concat(coalesce(name || ' ', '') || coalesce(address, ''), ' ')"
		"   FROM addresses WHERE message = ?7 AND role IN ('from', 'sender')),"
		" (SELECT group_concat(coalesce(\"group\" || ' ', '') || coalesce(name || ' ', '')"
		"   || coalesce(address, ''), ' ') FROM addresses"
		"   WHERE message = ?7 AND (role = 'to' OR role = 'cc' OR role = 'bcc')),"
		" (SELECT group_concat(value->>'filename', ' ') FROM json_each(?1))"
		" FROM messages m WHERE m.docid = ?7",
	/* one row, VALUES: a statement that writes one row opens no statement
	 * savepoint, and FTS5 (before 3.43) writes its pending terms out as a
	 * segment at every savepoint (index_fts_flush) */
	[ST_INSERT_FTS] =
		"INSERT INTO mail_fts(rowid" INDEX_FTS_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	/* the threads of the messages this one is linked to, through its own
	 * Message-ID (?1), its In-Reply-To (?2) and its References (?3), with
	 * repeats (index_thread keeps each once): one JSON array of them,
	 * each branch's outer loop (a UNION ALL or a CTE of them would be
	 * materialized, see the temporary tables above) */
	[ST_THREAD_LINKS] =
		"SELECT m.thread_id FROM json_each(" INDEX_THREAD_IDS ") ids"
		"  JOIN messages m ON m.message_id = ids.value WHERE m.thread_id IS NOT NULL"
		" UNION ALL SELECT m.thread_id FROM json_each(" INDEX_THREAD_IDS ") ids"
		"  JOIN messages m ON m.in_reply_to = ids.value WHERE m.thread_id IS NOT NULL"
		" UNION ALL SELECT m.thread_id FROM json_each(" INDEX_THREAD_IDS ") ids"
		"  JOIN refs r ON r.msgid = ids.value"
		"  JOIN messages m ON m.docid = r.message WHERE m.thread_id IS NOT NULL AND m.docid <> ?7",
	[ST_THREAD_SET] = "UPDATE messages SET thread_id = ?2 WHERE docid = ?1",
	[ST_THREAD_MERGE] = "UPDATE messages SET thread_id = ?1 WHERE thread_id = ?2",
	[ST_INSERT_ERROR] =
		"INSERT INTO errors(root, path, \"offset\", reason, errno, message, detected_type, size, mtime)"
		" VALUES (?2, ?3, ?1->>'offset', ?1->>'$.error.reason', ?1->>'$.error.errno',"
		" ?1->>'$.error.message', ?1->>'detected_type', ?1->>'size', ?1->>'mtime')",
	[ST_UPSERT_FILE] =
		"INSERT OR REPLACE INTO files(root, path, dev, ino, size, mtime_sec, mtime_nsec, id)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ST_DELETE_FILE] = "DELETE FROM files WHERE root = ?1 AND path = ?2",
	[ST_REREAD_FILE] = "INSERT INTO files(root, path, dev, ino, size, mtime_sec, mtime_nsec, id)"
		" VALUES (?1, ?2, 0, 0, 0, 0, 0, ?3) ON CONFLICT DO UPDATE SET dev = 0, ino = 0",
	[ST_FILE_ID] = "SELECT id FROM files WHERE root = ?1 AND path = ?2",
	[ST_RENAME_MESSAGES] =
		"UPDATE messages SET root = ?2, path = ?3, folder = ?1->>'folder', subdir = ?1->>'subdir',"
		" flags = ?1->>'flags', tags = ingest_tags(?1->>'subdir', ?1->>'flags'),"
		" size = coalesce(?1->>'size', size), mtime = coalesce(?1->>'mtime', mtime)"
		" WHERE root = ?5 AND path = ?4",
	[ST_RENAME_FILE] =
		"UPDATE OR REPLACE files SET root = ?2, path = ?3, dev = ?5, ino = ?6, size = ?7,"
		" mtime_sec = ?8, mtime_nsec = ?9 WHERE root = ?10 AND path = ?4",
	/* a message read again: its row by id, the hash of what it stored,
	 * and where its file was (index_keep_message) */
	[ST_FIND_ID] = "SELECT docid, record_hash, root, path, folder, subdir, flags FROM messages WHERE id = ?4",
	/* the same message, unchanged but for its file: where it is, and the
	 * file's size and mtime; the parameters of ST_INSERT_MESSAGE, ?25
	 * its docid.  ST_KEEP_STAT when it is where it was: a row whose
	 * indexed columns are not set keeps its index entries (an archive
	 * that grew: ~10 % of the re-run's CPU, bench/INDEX.md) */
	[ST_KEEP_MESSAGE] =
		"UPDATE messages SET root = ?2, path = ?3, folder = ?5, subdir = ?6, flags = ?7,"
		" tags = ingest_tags(?6, ?7), size = ?10, mtime = ?11 WHERE docid = ?25",
	[ST_KEEP_STAT] = "UPDATE messages SET size = ?10, mtime = ?11 WHERE docid = ?25",
	/* an archive's message not found again at its offset, or whose
	 * record there is an error now (?4 its id) */
	[ST_DELETE_ID] = "DELETE FROM messages WHERE id = ?4",
	/* the rows another id left at a place a message is renamed into */
	[ST_DELETE_PATH_OTHER] = "DELETE FROM messages WHERE root = ?2 AND path = ?3 AND id != ?4",
};

/* Version 2 (version 1 keyed rows by the root as spelled).  Child rows go with their message through the trigger (no
 * foreign keys: their checks cost on every insert).  mail_fts keeps its own
 * copy of the text: the text is stored nowhere else, so an external-content
 * table would save nothing, and a contentless one deletes a row only given
 * its old values (before SQLite 3.43's contentless_delete), which nothing
 * would keep after a build (fts_build.h), and gives no snippet. */
/* What decides the rows a run stores (index_bind_settings): added to
 * schema_version 2 without a new version, so an index made before it
 * gets it at its next open, empty. */
#define INDEX_SETTINGS_TABLE \
	"CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"

/* Version 3 (from 2: the column and the index below, index_check_schema):
 * record_hash, what index_keep_message compares a message read again
 * with; NULL in the rows of an earlier version, which are replaced.  The
 * offsets of each archive's messages, read whole when a run starts
 * (index_load_state), from an index of those rows alone. */
#define INDEX_ARCHIVE_INDEX \
	"CREATE INDEX messages_archive ON messages(root, path, \"offset\") WHERE \"offset\" IS NOT NULL"

static const char index_schema[] =
	INDEX_SETTINGS_TABLE ";"
	"CREATE TABLE messages ("
	" docid INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
	" root TEXT NOT NULL, path TEXT NOT NULL, folder TEXT, subdir TEXT, flags TEXT,"
	" tags TEXT NOT NULL DEFAULT '[]', \"offset\" INTEGER, length INTEGER, size INTEGER, mtime TEXT,"
	" message_id TEXT, in_reply_to TEXT, date TEXT, date_raw TEXT, subject TEXT, list_id TEXT,"
	" content_type TEXT, parts INTEGER, warnings TEXT, notes TEXT, text_truncated INTEGER,"
	" headers TEXT, thread_id INTEGER, record_hash INTEGER);"
	INDEX_ARCHIVE_INDEX ";"
	"CREATE INDEX messages_path ON messages(root, path);"
	"CREATE INDEX messages_message_id ON messages(message_id);"
	"CREATE INDEX messages_in_reply_to ON messages(in_reply_to);"
	"CREATE INDEX messages_thread ON messages(thread_id);"
	"CREATE INDEX messages_date ON messages(date);"
	"CREATE TABLE addresses (message INTEGER NOT NULL, role TEXT NOT NULL, position INTEGER NOT NULL,"
	" member INTEGER, name TEXT, address TEXT, \"group\" TEXT);"
	"CREATE INDEX addresses_message ON addresses(message);"
	"CREATE INDEX addresses_address ON addresses(address);"
	"CREATE TABLE attachments (message INTEGER NOT NULL, position INTEGER NOT NULL, filename TEXT,"
	" content_type TEXT, detected_type TEXT, disposition TEXT, content_id TEXT, size INTEGER);"
	"CREATE INDEX attachments_message ON attachments(message);"
	"CREATE TABLE refs (message INTEGER NOT NULL, position INTEGER NOT NULL, msgid TEXT NOT NULL);"
	"CREATE INDEX refs_message ON refs(message);"
	"CREATE INDEX refs_msgid ON refs(msgid);"
	"CREATE TABLE errors (root TEXT NOT NULL, path TEXT NOT NULL, \"offset\" INTEGER, reason TEXT,"
	" errno TEXT, message TEXT, detected_type TEXT, size INTEGER, mtime TEXT);"
	"CREATE INDEX errors_path ON errors(root, path);"
	"CREATE TABLE files (root BLOB NOT NULL, path BLOB NOT NULL, dev INTEGER, ino INTEGER,"
	" size INTEGER, mtime_sec INTEGER, mtime_nsec INTEGER, id INTEGER,"
	" PRIMARY KEY (root, path)) WITHOUT ROWID;"
	INDEX_FTS_TABLE ";"
	"CREATE TRIGGER messages_delete AFTER DELETE ON messages BEGIN"
	" DELETE FROM addresses WHERE message = old.docid;"
	" DELETE FROM attachments WHERE message = old.docid;"
	" DELETE FROM refs WHERE message = old.docid;"
	" DELETE FROM mail_fts WHERE rowid = old.docid; END;"
	"CREATE VIEW threads AS SELECT thread_id, min(date) AS first_date, max(date) AS last_date,"
	" count(*) AS messages, (SELECT r.subject FROM messages r WHERE r.thread_id = m.thread_id"
	"  ORDER BY r.date IS NULL, r.date, r.docid LIMIT 1) AS subject"
	" FROM messages m WHERE thread_id IS NOT NULL GROUP BY thread_id;";

/* The fields of a message record the index stores, in the order of the
 * parameters ?4 on of ST_INSERT_MESSAGE, then the lists and the text its
 * other statements take, and the error that makes an error record.
 * json: stored as the record's JSON (what -> gives), not as a value (->>). */
#define INDEX_FIELDS(X) \
	X(ID, "id", false) X(FOLDER, "folder", false) X(SUBDIR, "subdir", false) \
	X(FLAGS, "flags", false) X(OFFSET, "offset", false) X(LENGTH, "length", false) \
	X(SIZE, "size", false) X(MTIME, "mtime", false) X(MESSAGE_ID, "message_id", false) \
	X(IN_REPLY_TO, "in_reply_to", false) X(DATE, "date", false) X(DATE_RAW, "date_raw", false) \
	X(SUBJECT, "subject", false) X(LIST_ID, "list_id", false) \
	X(CONTENT_TYPE, "content_type", false) X(PARTS, "parts", false) \
	X(WARNINGS, "warnings", true) X(NOTES, "notes", true) \
	X(TEXT_TRUNCATED, "text_truncated", false) X(HEADERS, "headers", true) \
	X(FROM, "from", true) X(SENDER, "sender", true) X(REPLY_TO, "reply_to", true) \
	X(TO, "to", true) X(CC, "cc", true) X(BCC, "bcc", true) \
	X(ATTACHMENTS, "attachments", true) X(REFERENCES, "references", true) X(TEXT, "text", false) \
	X(ERROR, "error", true)

enum index_field {
#define INDEX_FIELD_ENUM(id, name, json) IF_##id,
	INDEX_FIELDS(INDEX_FIELD_ENUM)
#undef INDEX_FIELD_ENUM
	IF__COUNT
};

/* the fields ST_INSERT_MESSAGE stores, from ?4 on, then record_hash (?24) */
#define INDEX_MESSAGE_FIELDS (IF_HEADERS + 1)
#define INDEX_MESSAGE_PARAM  4
_Static_assert(INDEX_MESSAGE_PARAM + INDEX_MESSAGE_FIELDS == 24, "record_hash is ?24, a kept docid ?25");

/* One field's value: SQLITE_NULL where the record lacks it (unbound, as
 * -> and ->> give NULL), its text in rec_text at off, NUL-terminated. */
struct index_value {
	int type;
	int64_t i;
	double d;
	size_t off, len;
};

struct index {
	sqlite3 *db;
	sqlite3_stmt *st[ST__COUNT];
	bool in_tx;
	/* A database this run creates is built aside (index_build_begin):
	 * built is FILE.new, locked through build_fd until it is renamed to
	 * final; broken when a statement failed in it (no journal to roll
	 * back: the file is dropped, never renamed). */
	char *built, *final;
	int build_fd;
	/* The database in place, flocked for the whole run (index_lock):
	 * one run writes an index at a time. */
	int lock_fd;
	bool broken;
	/* The FTS rows of the open transaction, written at its commit
	 * (index_fts_flush): per message a struct index_fts_head, then the
	 * text and the attachments' JSON, each with its NUL. */
	struct dynbuf fts_rows;
	/* Built aside, the FTS rows go to the builder's thread and file
	 * (fts_build.h); fts_out holds a transaction's rows as it takes them. */
	struct fts_build *fts;
	sqlite3_stmt *fts_content;   /* with fts: the rows' content (fts_build_content_open) */
	struct dynbuf fts_out;
	/* with fts: the rows handed over, all transactions (counted as they
	 * are queued; a failure after that breaks the build) */
	uint64_t fts_handed;
	struct dynbuf scratch;
	/* the fields of the message record being stored (index_record), and
	 * its hash when it has one (a record read in C) */
	struct index_value rec[IF__COUNT];
	struct dynbuf rec_text;
	int64_t rec_hash;
	bool rec_hashed;
	struct addr_rows addresses;   /* the message's address rows (index_add_addresses) */
	struct index_stats stats;
	struct index_stats committed;   /* stats at the open transaction's BEGIN */
	/* the ENOENT rows of earlier runs (vanished.h); NULL: none */
	struct vanished *vanished;
	char error[256];
	int error_rc;              /* SQLite's result code behind error */
};

static uint64_t index_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* SQLite's result codes as -errno, for the run's one error convention. */
static int index_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK: case SQLITE_DONE: case SQLITE_ROW: return 0;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_READONLY: return -EROFS;
	case SQLITE_PERM: case SQLITE_AUTH: return -EACCES;
	case SQLITE_BUSY: case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_CANTOPEN: return -ENOENT;
	case SQLITE_NOTADB: case SQLITE_CORRUPT: case SQLITE_SCHEMA: return -EINVAL;
	default: return -EIO;
	}
}

static int index_fail(struct index *ix, int rc)
{
	snprintf(ix->error, sizeof(ix->error), "%s", sqlite3_errmsg(ix->db));
	ix->error_rc = rc;
	ix->broken = ix->built != NULL;
	/* SQLite's I/O errors name no cause; the system call's errno does
	 * (a full disk as the -shm file is made is "disk I/O error").  EINVAL
	 * would read as "not an SQLite database" (index_errno), which an I/O
	 * error is not. */
	int sys = (rc & 0xff) == SQLITE_IOERR ? sqlite3_system_errno(ix->db) : 0;
	if (sys > 0 && sys != EINVAL)
		return -sys;
	return index_errno(rc) ? index_errno(rc) : -EIO;
}

/* ingest_tags(subdir, flags): the Maildir flags by name (the letters of the
 * Maildir specification), and "unread" for a Maildir message not seen, as
 * notmuch and mu name them.  A JSON array, [] outside a Maildir. */
static void index_sql_tags(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	char out[128] = "[";
	size_t n = 1;
	if (sqlite3_value_type(argv[0]) != SQLITE_NULL) {
		const char *flags = (const char *)sqlite3_value_text(argv[1]);
		if (!flags)
			flags = "";
		/* the specification's letters in their order; the words are
		 * io/maildir.c's, the records' own */
		for (const char *l = "DFPRST"; *l; l++)
			if (strchr(flags, *l))
				n += (size_t)snprintf(out + n, sizeof(out) - n, "%s\"%s\"", n > 1 ? "," : "",
				                      maildir_flag_tag(*l));
		if (!strchr(flags, 'S'))
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s\"unread\"", n > 1 ? "," : "");
	}
	snprintf(out + n, sizeof(out) - n, "]");
	sqlite3_result_text(cx, out, -1, SQLITE_TRANSIENT);
}

static int index_exec(struct index *ix, const char *sql)
{
	int rc = sqlite3_exec(ix->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : index_fail(ix, rc);
}

int index_bind_settings(struct index *ix, size_t n, const char *const name[],
                        const char *const value[], char *why, size_t why_n)
{
	why[0] = '\0';
	/* read and written in one write transaction, so that two first runs
	 * cannot both take theirs; a first index is inside its build's */
	bool own = sqlite3_get_autocommit(ix->db);
	int r = own ? index_exec(ix, "BEGIN IMMEDIATE") : 0;
	if (r < 0)
		return r;
	sqlite3_stmt *get = NULL, *put = NULL;
	int rc = sqlite3_prepare_v2(ix->db, "SELECT value FROM settings WHERE name = ?1", -1, &get, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(ix->db, "INSERT INTO settings(name, value) VALUES (?1, ?2)", -1,
		                        &put, NULL);
	r = rc == SQLITE_OK ? 0 : index_fail(ix, rc);
	for (size_t i = 0; r == 0 && i < n; i++) {
		sqlite3_reset(get);
		sqlite3_bind_text(get, 1, name[i], -1, SQLITE_STATIC);
		rc = sqlite3_step(get);
		if (rc == SQLITE_ROW) {
			const char *was = (const char *)sqlite3_column_text(get, 0);
			if (was && strcmp(was, value[i])) {
				snprintf(why, why_n, "the index was made with %s=%s, this run has %s=%s",
				         name[i], was, name[i], value[i]);
				r = 1;
			}
			continue;
		}
		if (rc != SQLITE_DONE) {
			r = index_fail(ix, rc);
			break;
		}
		/* a new index, or one made before settings were kept: this
		 * run's are its own from now on */
		sqlite3_reset(put);
		sqlite3_bind_text(put, 1, name[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(put, 2, value[i], -1, SQLITE_STATIC);
		rc = sqlite3_step(put);
		if (rc != SQLITE_DONE)
			r = index_fail(ix, rc);
	}
	sqlite3_finalize(get);
	sqlite3_finalize(put);
	if (own && r == 0)
		r = index_exec(ix, "COMMIT");
	else if (own)
		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

static int index_pragma_int(struct index *ix, const char *sql, int64_t *v)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(ix->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return index_fail(ix, rc);
	rc = sqlite3_step(s);
	*v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : index_fail(ix, rc);
}

/* Whether a database of this application_id and user_version, holding
 * tables or not, is another program's or a newer ingest's: the one rule,
 * asked of the header read raw, of a read-only connection and of the
 * run's own.  0, or -EINVAL with why set. */
static int index_judge(int64_t app, int64_t version, bool tables, const char **why)
{
	if (tables && app != INDEX_APPLICATION_ID) {
		*why = "not an ingest index (another application's database): left as it is";
		return -EINVAL;
	}
	if (version > INDEX_SCHEMA_VERSION) {
		*why = "written by a newer ingest (a later schema_version): left as it is";
		return -EINVAL;
	}
	return 0;
}

static uint32_t index_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A database that is not ours, judged by its header read raw before SQLite
 * opens it: an open for writing rolls back another program's hot journal
 * and checkpoints its WAL, changing the file that index_check_schema then
 * refuses as "left as it is".  The header's application_id (offset 68)
 * and user_version (60) are what index_check_schema asks SQLite; a file of
 * one page holds no table (an empty database, ours to fill), unless its
 * tables are in a WAL never checkpointed (index_refuse_by_wal).  size: the
 * file's, from index_open's stat.  0, or -EINVAL with why set. */
static int index_refuse_by_header(int fd, uint64_t size, const char **why)
{
	uint8_t h[100];
	ssize_t n = sys_pread(fd, h, sizeof(h), 0);
	if (n <= 0)
		return 0;   /* empty: a new database; a read error: SQLite's to say */
	if (n < (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16) != 0) {
		*why = "not an SQLite database";
		return -EINVAL;
	}
	uint32_t page = (uint32_t)h[16] << 8 | h[17];
	if (page == 1)
		page = 65536;
	return index_judge(index_be32(h + 68), index_be32(h + 60), size > page, why);
}

/* A database beside a WAL that is not empty (its tables may all be there,
 * never checkpointed, the file one page), judged by a read-only
 * connection, which neither checkpoints nor removes the WAL when it
 * closes.  0, or -EINVAL with why set; a database the connection cannot
 * read is left to the open. */
static int index_refuse_by_wal(const char *path, const char **why)
{
	char *wal = xsuffixed(path, "-wal");
	if (!wal)
		return 0;
	struct stat st;
	bool any = stat(wal, &st) == 0 && st.st_size > 0;
	xfree(wal);
	if (!any)
		return 0;
	sqlite3 *db = NULL;
	int r = 0;
	if (db_open_path_counted(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX) == SQLITE_OK) {
		sqlite3_stmt *s = NULL;
		if (sqlite3_prepare_v2(db, "SELECT (SELECT application_id FROM pragma_application_id),"
		                       " (SELECT user_version FROM pragma_user_version),"
		                       " (SELECT count(*) FROM sqlite_master)", -1, &s, NULL) == SQLITE_OK &&
		    sqlite3_step(s) == SQLITE_ROW) {
			r = index_judge(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
			                sqlite3_column_int64(s, 2) > 0, why);
		}
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	return r;
}

/* Decides, reading only, whether the database is ours; then creates or
 * migrates the schema in one transaction, which also proves it writable. */
static int index_check_schema(struct index *ix, const char **why)
{
	int64_t app = 0, version = 0, tables = 0;
	int r = index_pragma_int(ix, "PRAGMA application_id", &app);
	if (r == 0)
		r = index_pragma_int(ix, "PRAGMA user_version", &version);
	if (r == 0)
		r = index_pragma_int(ix, "SELECT count(*) FROM sqlite_master", &tables);
	if (r == -EINVAL) {
		/* a file that is no database, or one that is damaged (both
		 * EINVAL, index_errno) */
		*why = (ix->error_rc & 0xff) == SQLITE_CORRUPT
		     ? "a damaged SQLite database (remove it, and its -journal, -wal and -shm, to index afresh): left as it is"
		     : "not an SQLite database";
		return r;
	}
	if (r < 0) {
		*why = "cannot read the database";
		return r;
	}
	if ((r = index_judge(app, version, tables > 0, why)) < 0)
		return r;
	if (tables && version == 1) {
		/* its roots are spellings relative to a working directory it did
		 * not record: nothing to migrate from */
		*why = "written by an older ingest (schema_version 1, roots as spelled): remove it and"
		       " index again";
		return -EINVAL;
	}
	if (tables && version == 2) {
		/* one transaction: an index of version 2 or of 3, never between
		 * (the write lock proves the file writable, as below) */
		r = index_exec(ix, "BEGIN IMMEDIATE; ALTER TABLE messages ADD COLUMN record_hash INTEGER;"
		               INDEX_ARCHIVE_INDEX ";" INDEX_SETTINGS_TABLE "; PRAGMA user_version = 3; COMMIT");
		if (r < 0) {
			sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
			*why = "cannot migrate the index from schema_version 2";
		}
		return r;
	}
	_Static_assert(INDEX_SCHEMA_VERSION == 3, "the migration above ends at this version");
	if (tables && version == INDEX_SCHEMA_VERSION) {
		/* the write lock proves the file and its directory writable */
		r = index_exec(ix, "BEGIN IMMEDIATE;" INDEX_SETTINGS_TABLE "; COMMIT");
		if (r < 0)
			*why = "cannot write the database";
		return r;
	}
	/* New (version 0, no table): a later version adds the migration from
	 * this one here, keyed by version. */
	if (tables) {
		*why = "an ingest index of an unknown schema_version";
		return -EINVAL;
	}
	char pragmas[96];
	snprintf(pragmas, sizeof(pragmas), "PRAGMA application_id = %d; PRAGMA user_version = %d;",
	         INDEX_APPLICATION_ID, INDEX_SCHEMA_VERSION);
	r = index_exec(ix, "BEGIN IMMEDIATE");
	if (r == 0)
		r = index_exec(ix, index_schema);
	if (r == 0)
		r = index_exec(ix, pragmas);
	if (r == 0)
		r = index_exec(ix, "COMMIT");
	if (r < 0) {
		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
		*why = "cannot create the schema";
	}
	return r;
}

/* path opened (flags: O_RDONLY, or O_RDWR | O_CREAT) and flocked: the
 * descriptor, -EBUSY when another run holds the flock, or -errno. */
static int index_open_flocked(const char *path, int flags)
{
	int fd = sys_openat(AT_FDCWD, path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno == EWOULDBLOCK ? -EBUSY : -errno;
		sys_close(fd);
		return e;
	}
	return fd;
}

/* A new database is built aside, as FILE.new, with no journal and no
 * fsync, and renamed to FILE at the end (index_finish): a run killed
 * before that leaves no FILE, and the next run starts over, truncating
 * the FILE.new it finds.  With journal_mode=OFF a failed statement cannot
 * be rolled back, so a build that failed is dropped whole.  The flock on
 * FILE.new keeps a second first run from truncating it under this one
 * (flock, not a record lock: SQLite's record locks on the same file would
 * be dropped by our close).  1 when this run builds aside, 0 when FILE
 * appeared meanwhile (open it as it is), -errno. */
static int index_build_begin(struct index *ix, const char *path)
{
	ix->built = xsuffixed(path, ".new");
	ix->final = xstrdup(path);
	if (!ix->built || !ix->final)
		return -ENOMEM;
	/* the file is ours (index_close removes it) only once it is locked:
	 * another first run's build must not lose its name to our refusal */
	int fd = index_open_flocked(ix->built, O_RDWR | O_CREAT);
	if (fd < 0)
		return fd;
	ix->build_fd = fd;
	if (access(path, F_OK) == 0) {
		/* another first run finished between our check and the lock */
		sys_unlinkat(AT_FDCWD, ix->built, 0);
		return 0;
	}
	int r = sys_ftruncate(fd, 0);
	return r < 0 ? r : 1;
}

/* Removes FILE-journal, FILE-wal and FILE-shm if they are there: 0 or
 * -errno. */
static int index_drop_orphans(const char *path)
{
	static const char *const ends[] = { "-journal", "-wal", "-shm" };
	int r = 0;
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]) && r == 0; i++) {
		char *name = xsuffixed(path, ends[i]);
		r = name ? sys_unlinkat(AT_FDCWD, name, 0) : -ENOMEM;
		xfree(name);
		if (r == -ENOENT)
			r = 0;
	}
	return r;
}

/* One run writes an index at a time: two in place would each work from
 * the files they loaded at the start, and interleave their batches (two
 * runs over nested roots made a message two rows; a message one run read
 * before another moved it went back under its old path).  The database
 * in place is flocked for the whole run, the descriptor kept open until
 * SQLite has closed its own (closing one would drop SQLite's record
 * locks on the file; flock and record locks do not meet).  A first run
 * holds FILE.new's flock, which the rename carries to FILE.  Readers
 * (ingest search, sqlite3) take no flock and are not kept out.  0,
 * -EBUSY when another run holds it, -errno. */
static int index_lock(struct index *ix, const char *path)
{
	int fd = index_open_flocked(path, O_RDONLY);
	if (fd < 0)
		return fd;
	ix->lock_fd = fd;
	return 0;
}

/* Whether a build's text index may hold rows of messages gone since they
 * were handed over (replaced or deleted later in the run).  Each message
 * stored had its row handed over at its transaction's commit, and no docid
 * is used twice (AUTOINCREMENT), so the rows of messages gone are the rows
 * handed over beyond the messages there are.  When the two are equal
 * (most first indexes: a message replaced within its own transaction hands
 * no row over) there is nothing to delete, and looking for it would read
 * the whole content table twice (bench/INDEX.md).  True when the count
 * cannot be had. */
static bool index_fts_may_hold_gone(struct index *ix)
{
	sqlite3_stmt *s = NULL;
	bool may = true;
	if (sqlite3_prepare_v2(ix->db, "SELECT count(*) FROM messages", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		may = (uint64_t)sqlite3_column_int64(s, 0) != ix->fts_handed;
	sqlite3_finalize(s);
	return may;
}

/* Publishes a database built aside: the rollback journal becomes WAL (what
 * later runs and readers use), the file is made durable, then renamed. */
int index_finish(struct index *ix)
{
	if (!ix || !ix->built || ix->broken || ix->in_tx)
		return 0;
	bool gone = ix->fts && index_fts_may_hold_gone(ix);
	/* with a builder, its connection copies the text index in and turns
	 * the file to WAL once this one has closed it: in WAL the copy would
	 * be written twice */
	int r = ix->fts ? 0 : index_exec(ix, "PRAGMA locking_mode = NORMAL; PRAGMA journal_mode = WAL");
	for (int i = 0; i < ST__COUNT; i++) {
		sqlite3_finalize(ix->st[i]);
		ix->st[i] = NULL;
	}
	sqlite3_finalize(ix->fts_content);
	ix->fts_content = NULL;
	if (sqlite3_close(ix->db) != SQLITE_OK && r == 0)
		r = -EIO;
	ix->db = NULL;
	if (r == 0 && ix->fts) {
		int rc = fts_build_finish(ix->fts, ix->built, gone ? INDEX_FTS_BUILDER_DELETE : NULL);
		ix->stats.ns += fts_build_ns(ix->fts);
		if (rc != SQLITE_OK) {
			r = index_errno(rc) ? index_errno(rc) : -EIO;
			snprintf(ix->error, sizeof(ix->error), "%s", fts_build_error(ix->fts) ?
			         fts_build_error(ix->fts) : sqlite3_errstr(rc));
		}
		fts_build_close(ix->fts);
		ix->fts = NULL;
	}
	if (r == 0)
		r = sys_fsync(ix->build_fd);
	/* A -wal and -shm, or a -journal, left beside no database (a run
	 * killed in place, another program's transaction cut short, then the
	 * database removed by hand) would be taken for the new file's: SQLite
	 * replays a -wal, and rolls a hot journal back, onto the database of
	 * its name, and the index would be corrupt for good.  They belong to
	 * no database now, and this run holds the only lock that creates
	 * one. */
	if (r == 0)
		r = index_drop_orphans(ix->final);
	if (r == 0)
		r = sys_renameat(AT_FDCWD, ix->built, AT_FDCWD, ix->final);
	if (r == 0) {
		/* the rename itself durable: the directory's entry */
		char *dir = xdirname(ix->final);
		int dfd = dir ? sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) : -ENOMEM;
		xfree(dir);
		if (dfd >= 0) {
			r = sys_fsync(dfd);
			sys_close(dfd);
		}
		xfree(ix->built);
		ix->built = NULL;
	}
	if (r < 0 && !ix->error[0])
		snprintf(ix->error, sizeof(ix->error), "cannot put the new database in place");
	return r;
}


struct index_drop {
	struct index *ix;
	enum index_place (*place)(void *ctx, struct str root, struct str path);
	bool (*met)(void *ctx, uint64_t dev, uint64_t ino);
	void *ctx;
	sqlite3_stmt *del;         /* prepared at the first row to drop */
};

/* Whether root/path (path alone when absolute: a file named on the
 * command line) names nothing, itself a symbolic link included, or a
 * directory (through a link too): a directory's records are its files',
 * none is filed at its own place, so a clean run has no row there (a
 * listed path missing for a run, then made a directory).  Else *met is
 * whether what it names, through a link too, is a regular file this run
 * met (d->met). */
static bool index_path_no_file(const struct index_drop *d, struct str root, struct str path, bool *met)
{
	*met = false;
	char *full = xmalloc(root.n + path.n + 2);
	if (!full)
		return false;
	size_t n = 0;
	if (!path.n || path.p[0] != '/') {
		memcpy(full, root.p, root.n);
		full[root.n] = '/';
		n = root.n + 1;
	}
	memcpy(full + n, path.p, path.n);
	full[n + path.n] = '\0';
	struct statx stx = { 0 };
	int r = sys_statx(AT_FDCWD, full, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
	                  STATX_TYPE | STATX_INO, &stx);
	/* a link the run named is followed, and one it walked has its record
	 * at its place (as a walk spells it): what it leads to decides */
	if (r == 0 && S_ISLNK(stx.stx_mode))
		r = sys_statx(AT_FDCWD, full, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &stx);
	xfree(full);
	if (r == 0 && S_ISREG(stx.stx_mode))
		*met = d->met(d->ctx, makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino);
	return r == -ENOENT || (r == 0 && S_ISDIR(stx.stx_mode));
}

static int index_drop_row(void *ctx, int64_t rowid, struct str root, struct str path)
{
	struct index_drop *d = ctx;
	enum index_place p = d->place(d->ctx, root, path);
	if (p == INDEX_PLACE_OTHER)
		return 0;
	/* a file there that this run did not meet (one in a Maildir's
	 * tmp/, one made after its directory was listed) keeps the row; one
	 * it met at another place (a list naming a file the walk met first,
	 * a link named beside another spelling of its file: a second meeting
	 * makes no record) has its record there */
	bool met;
	if (p == INDEX_PLACE_JUDGED && !index_path_no_file(d, root, path, &met) && !met)
		return 0;
	int rc;
	if (!d->del) {
		rc = sqlite3_prepare_v2(d->ix->db, "DELETE FROM errors WHERE rowid = ?1", -1, &d->del, NULL);
		if (rc != SQLITE_OK)
			return index_fail(d->ix, rc);
		int r = index_begin(d->ix);
		if (r < 0)
			return r;
	}
	sqlite3_bind_int64(d->del, 1, rowid);
	rc = sqlite3_step(d->del);
	sqlite3_reset(d->del);
	return rc == SQLITE_DONE ? 0 : index_fail(d->ix, rc);
}

int index_drop_vanished(struct index *ix,
                        enum index_place (*place)(void *ctx, struct str root, struct str path),
                        bool (*met)(void *ctx, uint64_t dev, uint64_t ino), void *ctx)
{
	if (!ix || !ix->db || ix->broken || !ix->vanished)
		return 0;
	/* a transaction only when there is a row to drop: an unchanged
	 * re-run takes no lock */
	struct index_drop d = { ix, place, met, ctx, NULL };
	int r = vanished_each_unmet(ix->vanished, index_drop_row, &d);
	if (d.del) {
		sqlite3_finalize(d.del);
		if (r == 0 && ix->in_tx)
			r = index_commit(ix);
		else if (ix->in_tx)
			index_rollback(ix);
	}
	return r;
}

/* index_open's reason with SQLite's own words where they add to it (a
 * table dropped by hand: "no such table: main.refs"; a full disk), kept
 * here since the index that held them is freed before the caller prints
 * the reason.  A refusal of ingest's own (-EINVAL: not ours, another
 * version) says all there is. */
static _Thread_local char index_open_why[512];

static void index_open_why_sqlite(const struct index *ix, int r, const char **why)
{
	if (!*why || r == -EINVAL || !ix->error[0])
		return;
	snprintf(index_open_why, sizeof(index_open_why), "%s (SQLite: %s)", *why, ix->error);
	*why = index_open_why;
}

int index_open(const char *path, struct index **out, const char **why)
{
	*out = NULL;
	*why = NULL;
	struct index *ix = xcalloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	/* before any index_close: 0 is a descriptor (standard input) */
	ix->build_fd = -1;
	ix->lock_fd = -1;
	dynbuf_init(&ix->scratch, 0);
	dynbuf_init(&ix->fts_rows, 0);
	dynbuf_init(&ix->fts_out, 0);
	dynbuf_init(&ix->rec_text, 0);
	addr_rows_init(&ix->addresses);
	/* Only a regular file is a database: SQLite's own words for a
	 * directory ("No such file or directory") or /dev/null (an I/O error
	 * at the schema) would not say what is wrong. */
	struct stat st;
	int there = stat(path, &st) == 0 ? 0 : -errno;
	if (there == 0 && !S_ISREG(st.st_mode)) {
		*why = S_ISDIR(st.st_mode) ? "a directory, not a database file" : "not a regular file";
		index_close(ix);
		return -EINVAL;
	}
	/* A link to nothing: a first run builds FILE.new and renames it to
	 * FILE, which would put a database where the link was instead of
	 * where it leads (SQLite, given the link, writes at its target). */
	if (there == -ENOENT && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		*why = "a symbolic link to a file that is not there: name the file it should lead to";
		index_close(ix);
		return -EINVAL;
	}
	/* A file we may not write is refused before SQLite opens it read-only
	 * behind our back (it would fail only at the first batch). */
	if (there == 0 && access(path, W_OK) < 0) {
		int e = -errno;
		*why = "the database is not writable";
		index_close(ix);
		return e;
	}
	/* Nor its directory: WAL keeps its -wal and -shm files beside it,
	 * and SQLite would say "Read-only file system" at the first pragma. */
	char *dir = xdirname(path);
	int w = dir ? sys_faccessat(AT_FDCWD, dir, W_OK | X_OK) : -ENOMEM;
	xfree(dir);
	if (w < 0 && w != -ENOENT) {
		*why = w == -ENOMEM ? "no memory"
		     : "the database's directory is not writable (WAL keeps its -wal and -shm files there)";
		index_close(ix);
		return w;
	}
	int r = there == -ENOENT ? index_build_begin(ix, path) : 0;
	if (r < 0) {
		*why = r == -EBUSY ? "another run is creating it" : "cannot create the database";
		index_close(ix);
		return r;
	}
	if (r == 0) {
		xfree(ix->built);
		ix->built = NULL;
		r = index_lock(ix, path);
		if (r < 0) {
			*why = r == -EBUSY ? "another run is writing it (one run at a time)"
			                   : "cannot open the database";
			index_close(ix);
			return r;
		}
		/* the size stat gave; a file that appeared since (another first
		 * run put it in place) is taken to hold tables */
		uint64_t size = there == 0 ? (uint64_t)st.st_size : UINT64_MAX;
		if ((r = index_refuse_by_header(ix->lock_fd, size, why)) < 0 ||
		    (r = index_refuse_by_wal(path, why)) < 0) {
			index_close(ix);
			return r;
		}
	}
	const char *file = ix->built ? ix->built : path;
	int rc = db_open_path_counted(file, &ix->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                              SQLITE_OPEN_NOMUTEX);
	r = rc == SQLITE_OK ? 0 : index_fail(ix, rc);
	if (r == 0 && sqlite3_db_readonly(ix->db, "main") == 1)
		r = -EROFS;
	size_t full;
	int max;
	if (r < 0 && rc == SQLITE_CANTOPEN && db_path_too_long(file, &full, &max)) {
		snprintf(index_open_why, sizeof(index_open_why),
		         "cannot open the database: its absolute path has %zu bytes%s, SQLite takes %d at most",
		         full, ix->built ? " as built (FILE.new)" : "", max - 1);
		*why = index_open_why;
		index_close(ix);
		return -ENAMETOOLONG;
	}
	if (r < 0)
		*why = "cannot open the database";
	if (r == 0) {
		sqlite3_busy_timeout(ix->db, 5000);
		r = sqlite3_create_function(ix->db, "ingest_tags", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, ix,
		                            index_sql_tags, NULL, NULL) ? -ENOMEM : 0;
		/* the same tokens as SQLite's unicode61, faster; without it,
		 * SQLite's (fts_tokenizer.h) */
		fts_tokenizer_register(ix->db);
	}
	if (r == 0)
		r = index_check_schema(ix, why);
	/* WAL: a reader (sqlite3 mail.db) queries while a run writes; with
	 * synchronous=NORMAL a commit is durable at the next checkpoint, and a
	 * crash loses at most the last commits, never consistency.  Built
	 * aside, no reader can see the file and a crash drops it: no journal,
	 * no fsync, one lock for the run (bench/INDEX.md). */
	static const char wal[] = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;";
	static const char aside[] = "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
	                            " PRAGMA locking_mode = EXCLUSIVE;";
	if (r == 0 && ((r = index_exec(ix, ix->built ? aside : wal)) < 0 ||
	               (r = index_exec(ix, "PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;"
	                               " PRAGMA recursive_triggers = ON")) < 0))
		*why = "cannot set up the database";
	for (int i = 0; i < ST__COUNT && r == 0; i++) {
		rc = sqlite3_prepare_v3(ix->db, index_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &ix->st[i], NULL);
		if (rc != SQLITE_OK) {
			r = index_fail(ix, rc);
			*why = "cannot prepare the statements";
		}
		if (rc == SQLITE_ERROR && (strstr(ix->error, "no such table") || strstr(ix->error, "no such column") ||
		                           strstr(ix->error, "has no column named"))) {
			/* the schema_version's tables, one missing or changed
			 * (by hand, by another program): refused as one not
			 * ours is, with SQLite's words for what differs (and
			 * only then: an SQLite without FTS5, "no such module",
			 * is no fault of the file) */
			snprintf(index_open_why, sizeof(index_open_why),
			         "an ingest index whose tables were changed (SQLite: %s): left as it is (remove it to"
			         " index again)", ix->error);
			*why = index_open_why;
			r = -EINVAL;
		}
	}
	if (r == 0 && ix->built) {
		/* the text index built in a file and on a thread of its own
		 * (fts_build.h), FILE.new-fts, whose name goes as soon as it is
		 * open; if that fails, in the database, as when written in place */
		char *aux = xsuffixed(ix->built, "-fts");
		if (aux)
			fts_build_open(aux, INDEX_FTS_BUILDER, index_sql[ST_INSERT_FTS], &ix->fts);
		xfree(aux);
		/* with no journal, a failure here cannot be undone: the
		 * build is dropped.  Most of what the database then takes is
		 * the text index's content, never read again: a 64 MiB page
		 * cache held 50 MiB of it and made the run slower
		 * (bench/INDEX.md) */
		if (ix->fts) {
			rc = fts_build_content_open(ix->db, &ix->fts_content);
			r = rc != SQLITE_OK ? index_fail(ix, rc) : index_exec(ix, "PRAGMA cache_size = -16384");
			if (r < 0)
				*why = "cannot set up the database";
		}
	}
	if (r < 0) {
		index_open_why_sqlite(ix, r, why);
		index_close(ix);
		return r;
	}
	*out = ix;
	return 0;
}

void index_close(struct index *ix)
{
	if (!ix)
		return;
	if (ix->in_tx)
		index_rollback(ix);
	vanished_free(ix->vanished);
	fts_build_close(ix->fts);
	for (int i = 0; i < ST__COUNT; i++)
		sqlite3_finalize(ix->st[i]);
	sqlite3_finalize(ix->fts_content);
	sqlite3_close(ix->db);
	/* built aside and not put in place (failed, or index_finish not
	 * reached): nothing of it stays */
	if (ix->built && ix->build_fd >= 0)
		sys_unlinkat(AT_FDCWD, ix->built, 0);
	if (ix->build_fd >= 0)
		sys_close(ix->build_fd);
	if (ix->lock_fd >= 0)
		sys_close(ix->lock_fd);
	xfree(ix->built);
	xfree(ix->final);
	dynbuf_release(&ix->fts_rows);
	dynbuf_release(&ix->fts_out);
	dynbuf_release(&ix->scratch);
	dynbuf_release(&ix->rec_text);
	addr_rows_release(&ix->addresses);
	xfree(ix);
}

const char *index_error(const struct index *ix)
{
	return ix->error[0] ? ix->error : NULL;
}

void index_stats_get(const struct index *ix, struct index_stats *out)
{
	*out = ix->stats;
}

/* The rows of an mbox archive's messages, in the order of `files`: root,
 * path, then offset (index_load_state walks both at once). */
struct index_archive_rows {
	sqlite3_stmt *s;
	int rc;   /* SQLITE_ROW while s is on a row */
	struct dynbuf offs;   /* uint64_t: the offsets of the file at hand */
};

/* The offsets of the archive at root/path into a->offs (empty for a file
 * that is no archive).  0, or -errno. */
static int index_archive_offsets(struct index *ix, struct index_archive_rows *a, struct str root,
                                 struct str path)
{
	dynbuf_reset(&a->offs);
	while (a->rc == SQLITE_ROW) {
		struct str r = { sqlite3_column_blob(a->s, 0), (size_t)sqlite3_column_bytes(a->s, 0) };
		struct str p = { sqlite3_column_blob(a->s, 1), (size_t)sqlite3_column_bytes(a->s, 1) };
		int c = str_cmp(r, root);
		if (c == 0)
			c = str_cmp(p, path);
		if (c > 0)
			break;
		if (c == 0) {
			uint64_t off = (uint64_t)sqlite3_column_int64(a->s, 2);
			if (dynbuf_append(&a->offs, &off, sizeof(off)) < 0)
				return -ENOMEM;
		}
		a->rc = sqlite3_step(a->s);
	}
	return a->rc == SQLITE_ROW || a->rc == SQLITE_DONE ? 0 : index_fail(ix, a->rc);
}

int index_load_state(struct index *ix, struct state **out)
{
	*out = NULL;
	vanished_free(ix->vanished);
	int rc = vanished_load(ix->db, &ix->vanished);
	if (rc != SQLITE_OK)
		return index_fail(ix, rc);
	sqlite3_stmt *s;
	/* no_document: the file's record was an error (a file-level error row,
	 * no offset); the few such paths are joined, not probed per file, as
	 * blobs (files keeps its names as the bytes they are, errors as the
	 * records' text) */
	rc = sqlite3_prepare_v2(ix->db, "SELECT f.root, f.path, f.id, f.dev, f.ino, f.size, f.mtime_sec,"
	                        " f.mtime_nsec, e.path IS NOT NULL FROM files f LEFT JOIN"
	                        " (SELECT DISTINCT CAST(root AS BLOB) AS root, CAST(path AS BLOB) AS path"
	                        " FROM errors WHERE \"offset\" IS NULL) e"
	                        " ON e.root = f.root AND e.path = f.path ORDER BY f.root, f.path", -1, &s, NULL);
	if (rc != SQLITE_OK)
		return index_fail(ix, rc);
	/* An archive's entry lists its messages' offsets, as --state's does:
	 * a run that reads it again then keeps the messages still there by id
	 * and deletes those gone (index_add_records), and never takes it for
	 * one message of the file's id.  From messages_archive, which holds
	 * those rows only: a Maildir's index reads nothing more. */
	struct index_archive_rows a = { NULL, SQLITE_DONE, { 0 } };
	dynbuf_init(&a.offs, 0);
	rc = sqlite3_prepare_v2(ix->db, "SELECT root, path, \"offset\" FROM messages INDEXED BY messages_archive"
	                        " WHERE \"offset\" IS NOT NULL ORDER BY root, path, \"offset\"", -1, &a.s, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(s);
		return index_fail(ix, rc);
	}
	a.rc = sqlite3_step(a.s);
	struct dynbuf b;
	dynbuf_init(&b, 0);
	int r = state_format_begin(&b);
	size_t entries = 0;
	while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		entries++;
		struct str f[2];
		for (int i = 0; i < 2; i++)
			f[i] = (struct str){ sqlite3_column_blob(s, i), (size_t)sqlite3_column_bytes(s, i) };
		r = index_archive_offsets(ix, &a, f[0], f[1]);
		if (r == 0)
			r = state_format_file(&b, f[0], f[1], (uint64_t)sqlite3_column_int64(s, 2),
			                      (uint64_t)sqlite3_column_int64(s, 3), (uint64_t)sqlite3_column_int64(s, 4),
			                      (uint64_t)sqlite3_column_int64(s, 5), sqlite3_column_int64(s, 6),
			                      (uint32_t)sqlite3_column_int64(s, 7), sqlite3_column_int(s, 8) != 0,
			                      (const uint64_t *)(const void *)a.offs.p, a.offs.len / sizeof(uint64_t));
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = index_fail(ix, rc);
	/* the offsets' own failure, where no files row asked for them */
	if (r == 0 && a.rc != SQLITE_ROW && a.rc != SQLITE_DONE)
		r = index_fail(ix, a.rc);
	if (r == 0)
		r = state_format_end(&b, entries);
	sqlite3_finalize(s);
	sqlite3_finalize(a.s);
	dynbuf_release(&a.offs);
	if (r < 0) {
		dynbuf_release(&b);
		return r;
	}
	size_t n;
	char *bytes = dynbuf_take(&b, &n);
	return bytes ? state_load_bytes(bytes, n, out) : -ENOMEM;
}

/* Runs statement k to completion with what the caller bound. */

static int index_run(struct index *ix, enum index_stmt k)
{
	sqlite3_stmt *s = ix->st[k];
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		;
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : index_fail(ix, rc);
}

/* Text that ends in a NUL at p[n] (terminated) and holds none before it is
 * bound as a C string: SQLite marks it terminated and never copies it to
 * terminate it, as it did for each JSON function of a statement and for
 * FTS5's tokenizer (bench/INDEX.md).  Other text keeps its length. */
static void index_bind_text(sqlite3_stmt *s, int param, const char *p, size_t n, bool terminated)
{
	int len = terminated && !memchr(p, '\0', n) ? -1 : (int)n;
	sqlite3_bind_text(s, param, p, len, SQLITE_STATIC);
}

/* ?1 record, ?2 root, ?3 path, as index_sql's comment says; rec is
 * NUL-terminated (index_add_item's copy) or not (terminated). */
static void index_bind(struct index *ix, enum index_stmt k, const char *rec, size_t n,
                       bool terminated, const struct record_io *io)
{
	sqlite3_stmt *s = ix->st[k];
	int params = sqlite3_bind_parameter_count(s);
	if (rec && params >= 1)
		index_bind_text(s, 1, rec, n, terminated);
	if (params >= 3) {
		sqlite3_bind_text(s, 2, io->base.p, (int)io->base.n, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, io->path.p, (int)io->path.n, SQLITE_STATIC);
	}
}

/* A message's FTS row, kept until its transaction commits: the text and
 * the attachments' JSON follow it, in this order, each NUL-terminated; a
 * length (without the NUL) of -1 is NULL. */
struct index_fts_head {
	int64_t docid;
	int64_t text_len, attachments_len;
};

/* The bytes a kept column takes after the head: its text and NUL, or
 * nothing for NULL (-1). */
static size_t index_kept_size(int64_t len)
{
	return len >= 0 ? (size_t)len + 1 : 0;
}

/* Keeps the message's text and attachments (index_record's) for its FTS
 * row. */
static int index_fts_keep(struct index *ix, int64_t docid)
{
	const struct index_value *t = &ix->rec[IF_TEXT], *a = &ix->rec[IF_ATTACHMENTS];
	struct index_fts_head h = {
		docid, t->type == SQLITE_TEXT ? (int64_t)t->len : -1,
		a->type == SQLITE_TEXT ? (int64_t)a->len : -1,
	};
	/* each with its NUL, bound with it (index_bind_kept) */
	int r = dynbuf_append(&ix->fts_rows, &h, sizeof(h));
	if (r == 0 && h.text_len >= 0)
		r = dynbuf_append(&ix->fts_rows, ix->rec_text.p + t->off, index_kept_size(h.text_len));
	if (r == 0 && h.attachments_len >= 0)
		r = dynbuf_append(&ix->fts_rows, ix->rec_text.p + a->off, index_kept_size(h.attachments_len));
	return r;
}

static void index_bind_kept(sqlite3_stmt *s, int param, const char *p, int64_t n)
{
	if (n >= 0)
		index_bind_text(s, param, p, (size_t)n, true);
}

/* Writes the FTS rows of the transaction, after all its other statements.
 * FTS5 of SQLite before 3.43 writes its pending terms out as a new segment
 * whenever a statement opens a savepoint (one that writes several rows or
 * fires a trigger: the message's REPLACE, the addresses' INSERT ... SELECT,
 * the per-file DELETE), so an FTS row inserted between them became a
 * segment of one message, and FTS5 merged them all again: half of a first
 * index's instructions (bench/INDEX.md).  Written last, one VALUES insert
 * each, the batch's terms stay pending until the commit writes them as
 * one segment.  A message replaced or deleted later in the transaction
 * has no row to select: its FTS row is not written. */
static int index_fts_flush(struct index *ix)
{
	sqlite3_stmt *row = ix->st[ST_FTS_ROW];
	int r = 0;
	dynbuf_reset(&ix->fts_out);
	for (size_t at = 0; r == 0 && at < ix->fts_rows.len;) {
		struct index_fts_head h;
		memcpy(&h, ix->fts_rows.p + at, sizeof(h));
		const char *text = ix->fts_rows.p + at + sizeof(h);
		const char *att = text + index_kept_size(h.text_len);
		at += sizeof(h) + index_kept_size(h.text_len) + index_kept_size(h.attachments_len);
		index_bind_kept(row, 1, att, h.attachments_len);
		sqlite3_bind_int64(row, 7, h.docid);
		int rc = sqlite3_step(row);
		if (rc == SQLITE_ROW) {
			/* subject, from, to, text, attachments: the insert's order */
			const char *col[FTS_ROW_COLUMNS];
			int64_t len[FTS_ROW_COLUMNS];
			for (int c = 0, k = 0; c < FTS_ROW_COLUMNS; c++) {
				if (c == 3) {
					col[c] = h.text_len >= 0 ? text : NULL;
					len[c] = h.text_len;
					continue;
				}
				col[c] = (const char *)sqlite3_column_text(row, k);
				len[c] = sqlite3_column_bytes(row, k++);
			}
			r = fts_rows_add(&ix->fts_out, h.docid, col, len);
			if (r == 0 && ix->fts)
				ix->fts_handed++;
		} else if (rc != SQLITE_DONE) {
			r = index_fail(ix, rc);
		}
		sqlite3_reset(row);
		sqlite3_clear_bindings(row);
	}
	dynbuf_reset(&ix->fts_rows);
	if (r == 0 && ix->fts) {
		/* the content here, the index on the builder's thread */
		int rc = fts_rows_insert(ix->fts_content, ix->fts_out.p, ix->fts_out.len);
		if (rc != SQLITE_OK)
			return index_fail(ix, rc);
		rc = fts_build_put(ix->fts, &ix->fts_out);
		if (rc != SQLITE_OK) {
			snprintf(ix->error, sizeof(ix->error), "%s", fts_build_error(ix->fts) ?
			         fts_build_error(ix->fts) : sqlite3_errstr(rc));
			ix->broken = true;
			r = index_errno(rc) ? index_errno(rc) : -EIO;
		}
	} else if (r == 0) {
		int rc = fts_rows_insert(ix->st[ST_INSERT_FTS], ix->fts_out.p, ix->fts_out.len);
		if (rc != SQLITE_OK)
			r = index_fail(ix, rc);
	}
	return r;
}

int index_begin(struct index *ix)
{
	uint64_t t0 = index_now_ns();
	int r = index_run(ix, ST_BEGIN);
	ix->in_tx = r == 0;
	ix->committed = ix->stats;
	ix->stats.ns += index_now_ns() - t0;
	return r;
}

int index_commit(struct index *ix)
{
	uint64_t t0 = index_now_ns();
	int r = index_fts_flush(ix);
	if (r == 0)
		r = index_run(ix, ST_COMMIT);
	if (r < 0)
		index_rollback(ix);
	else
		ix->stats.transactions++;
	ix->in_tx = false;
	ix->stats.ns += index_now_ns() - t0;
	return r;
}

void index_rollback(struct index *ix)
{
	/* built aside there is no journal: what the transaction wrote stays,
	 * so the build cannot be put in place */
	ix->broken = ix->broken || ix->built != NULL;
	/* after SQLITE_FULL SQLite may have rolled back already: harmless */
	if (sqlite3_get_autocommit(ix->db) == 0)
		index_run(ix, ST_ROLLBACK);
	dynbuf_reset(&ix->fts_rows);
	/* --stats counts the rows committed, not those rolled back */
	if (ix->in_tx) {
		uint64_t ns = ix->stats.ns;
		ix->stats = ix->committed;
		ix->stats.ns = ns;
	}
	ix->in_tx = false;
}

static const struct {
	const char *name;
	size_t n;
	bool json;
} index_fields[IF__COUNT] = {
#define INDEX_FIELD_NAME(id, name, json) [IF_##id] = { name, sizeof(name) - 1, json },
	INDEX_FIELDS(INDEX_FIELD_NAME)
#undef INDEX_FIELD_NAME
};

static int index_field_of(const char *key, size_t n)
{
	for (int f = 0; f < IF__COUNT; f++)
		if (index_fields[f].n == n && !memcmp(index_fields[f].name, key, n))
			return f;
	return -1;
}

/* A value read by json_read.h into ix->rec[f] (stepped over for a field
 * the index does not store, f -1, and for a key met again: the first
 * counts, as in index_record), or JSON_READ_OTHER for one left to
 * SQLite. */
static int index_record_value(struct index *ix, struct json_read *j, int f, bool *seen)
{
	if (f < 0 || seen[f])
		return json_read_skip(j);
	seen[f] = true;
	struct index_value *v = &ix->rec[f];
	const char *start = j->p;
	int r = 0;
	if (j->p < j->end && *j->p == '"') {
		/* a string: its bytes, unescaped */
		v->type = SQLITE_TEXT;
		v->off = ix->rec_text.len;
		r = json_read_string(j, &ix->rec_text);
		v->len = ix->rec_text.len - v->off;
	} else if (json_read_word(j, "true", 4) || json_read_word(j, "false", 5)) {
		v->type = SQLITE_INTEGER;
		v->i = *start == 't';
		return 0;
	} else if (j->p < j->end && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
		v->type = SQLITE_INTEGER;
		return json_read_integer(j, &v->i);
	} else {
		/* null, an array or an object: as JSON (compact, so its text is
		 * what SQLite renders) where the field is stored as JSON */
		bool null = json_read_word(j, "null", 4);
		if (!null && (r = json_read_skip(j)) != 0)
			return r;
		if (null && !index_fields[f].json) {
			v->type = SQLITE_NULL;
			return 0;
		}
		v->type = SQLITE_TEXT;
		v->off = ix->rec_text.len;
		v->len = (size_t)(j->p - start);
		r = dynbuf_append(&ix->rec_text, start, v->len);
	}
	if (r == 0)
		r = dynbuf_putc(&ix->rec_text, '\0');
	return r;
}

/* The members a record's hash leaves out: where its file is and what the
 * file's stat says (a message read again unchanged in an archive that grew,
 * or in a file renamed, has other values there and is the same message),
 * and its thread, which the index keeps itself (index_thread). */
static bool index_hash_skips(const char *key, size_t n)
{
	/* every member of every record asks: the lengths are the table's,
	 * as index_fields' */
#define INDEX_SKIP(name) { name, sizeof(name) - 1 }
	static const struct {
		const char *name;
		size_t n;
	} skip[] = {
		INDEX_SKIP("path"), INDEX_SKIP("root"), INDEX_SKIP("path_b64"), INDEX_SKIP("root_b64"),
		INDEX_SKIP("size"), INDEX_SKIP("mtime"), INDEX_SKIP("folder"), INDEX_SKIP("subdir"),
		INDEX_SKIP("flags"), INDEX_SKIP("tags"), INDEX_SKIP("thread_id"),
	};
#undef INDEX_SKIP
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (skip[i].n == n && !memcmp(skip[i].name, key, n))
			return true;
	return false;
}

/* The record's fields into ix->rec, read in C (json_read.h), and its hash
 * (XXH3 of its members as written, each key and value, but those
 * index_hash_skips names) into ix->rec_hash: 0, JSON_READ_OTHER for a
 * record left to SQLite, -ENOMEM. */
static int index_record_read(struct index *ix, const char *rec, size_t n)
{
	struct json_read j = { rec, rec + n };
	bool seen[IF__COUNT] = { false };
	uint64_t h = 0;   /* of each member hashed, key and value, in order */
	if (!json_read_eat(&j, '{'))
		return JSON_READ_OTHER;
	if (json_read_eat(&j, '}'))
		return j.p == j.end ? 0 : JSON_READ_OTHER;
	do {
		/* keys are plain names: one with an escape is SQLite's */
		const char *key = j.p + 1;
		int r = json_read_string(&j, NULL);
		if (r != 0)
			return r;
		if (memchr(key, '\\', (size_t)(j.p - 1 - key)) || !json_read_eat(&j, ':'))
			return JSON_READ_OTHER;
		size_t key_n = (size_t)(j.p - 2 - key);
		r = index_record_value(ix, &j, index_field_of(key, key_n), seen);
		if (r != 0)
			return r;
		if (!index_hash_skips(key, key_n))
			h = XXH3_64bits_withSeed(key - 1, (size_t)(j.p - (key - 1)), h);
	} while (json_read_eat(&j, ','));
	if (!json_read_eat(&j, '}') || j.p != j.end)
		return JSON_READ_OTHER;
	ix->rec_hash = (int64_t)h;
	ix->rec_hashed = true;
	return 0;
}

static void index_record_clear(struct index *ix)
{
	ix->rec_hashed = false;
	for (int f = 0; f < IF__COUNT; f++)
		ix->rec[f].type = SQLITE_NULL;
	dynbuf_reset(&ix->rec_text);
}

/* Takes a message record apart into ix->rec: in C (json_read.h), or for a
 * record it leaves to SQLite, in one json_each pass over it.  A ->> or ->
 * per field looked the record up in SQLite's JSON cache (comparing it
 * whole with the cached one) and walked its members again (bench/INDEX.md).
 * json_each's value is what ->> gives for a scalar and what -> gives for an
 * array or an object, which the fields stored as JSON are (README,
 * "Records"); for a JSON null -> gives the text null.  The first of two
 * equal keys counts, as for ->>. */
bool index_sql_reading;

static int index_record(struct index *ix, const char *rec, size_t n)
{
	index_record_clear(ix);
	int r = index_sql_reading ? JSON_READ_OTHER : index_record_read(ix, rec, n);
	if (r != JSON_READ_OTHER)
		return r;
	/* what the C reading left is dropped */
	index_record_clear(ix);
	sqlite3_stmt *s = ix->st[ST_RECORD_FIELDS];
	bool seen[IF__COUNT] = { false };
	index_bind_text(s, 1, rec, n, true);
	int rc;
	r = 0;
	while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		/* as blobs: the bytes as they are, where text would copy the
		 * value to put a NUL after it (rec_text has its own) */
		int f = index_field_of((const char *)sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0));
		if (f < 0 || seen[f])
			continue;
		seen[f] = true;
		struct index_value *v = &ix->rec[f];
		v->type = sqlite3_column_type(s, 1);
		if (v->type == SQLITE_INTEGER) {
			v->i = sqlite3_column_int64(s, 1);
			continue;
		}
		if (v->type == SQLITE_FLOAT) {
			v->d = sqlite3_column_double(s, 1);
			continue;
		}
		if (v->type == SQLITE_NULL && !index_fields[f].json)
			continue;
		const char *p = v->type == SQLITE_NULL ? "null" : (const char *)sqlite3_column_blob(s, 1);
		v->len = v->type == SQLITE_NULL ? 4 : (size_t)sqlite3_column_bytes(s, 1);
		v->type = SQLITE_TEXT;
		v->off = ix->rec_text.len;
		r = v->len ? dynbuf_append(&ix->rec_text, p, v->len) : 0;
		if (r == 0)
			r = dynbuf_putc(&ix->rec_text, '\0');
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (r < 0)
		return r;
	return rc == SQLITE_DONE ? 0 : index_fail(ix, rc);
}

/* Binds field f of the record index_record took apart; a field the record
 * lacks stays NULL. */
static void index_bind_field(struct index *ix, sqlite3_stmt *s, int param, enum index_field f)
{
	const struct index_value *v = &ix->rec[f];
	if (v->type == SQLITE_INTEGER)
		sqlite3_bind_int64(s, param, v->i);
	else if (v->type == SQLITE_FLOAT)
		sqlite3_bind_double(s, param, v->d);
	else if (v->type == SQLITE_TEXT)
		index_bind_text(s, param, ix->rec_text.p + v->off, v->len, true);
}

/* Joins the message (docid) to the threads it links to, merging them. */
static int index_thread(struct index *ix, int64_t docid)
{
	sqlite3_stmt *s = ix->st[ST_THREAD_LINKS];
	int64_t found[16], thread = docid;
	bool more;
	do {
		size_t nf = 0;
		int rc;
		more = false;
		index_bind_field(ix, s, 1, IF_MESSAGE_ID);
		index_bind_field(ix, s, 2, IF_IN_REPLY_TO);
		index_bind_field(ix, s, 3, IF_REFERENCES);
		sqlite3_bind_int64(s, 7, docid);
		/* found: the smallest distinct threads, ascending */
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			int64_t t = sqlite3_column_int64(s, 0);
			size_t at = 0;
			while (at < nf && found[at] < t)
				at++;
			if (at < nf && found[at] == t)
				continue;
			more = more || nf == sizeof(found) / sizeof(found[0]);
			if (at < sizeof(found) / sizeof(found[0])) {
				nf -= nf == sizeof(found) / sizeof(found[0]);
				memmove(found + at + 1, found + at, (nf - at) * sizeof(found[0]));
				found[at] = t;
				nf++;
			}
			if (t < thread)
				thread = t;
		}
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		if (rc != SQLITE_DONE)
			return index_fail(ix, rc);
		/* the 16 smallest merge; a message that links more threads
		 * than that merges the rest on the next pass, which finds the
		 * merged ones as one (notmuch merges every thread a message
		 * links) */
		for (size_t i = 0; i < nf; i++) {
			if (found[i] == thread)
				continue;
			sqlite3_bind_int64(ix->st[ST_THREAD_MERGE], 1, thread);
			sqlite3_bind_int64(ix->st[ST_THREAD_MERGE], 2, found[i]);
			int r = index_run(ix, ST_THREAD_MERGE);
			if (r < 0)
				return r;
		}
	} while (more);
	sqlite3_bind_int64(ix->st[ST_THREAD_SET], 1, docid);
	sqlite3_bind_int64(ix->st[ST_THREAD_SET], 2, thread);
	return index_run(ix, ST_THREAD_SET);
}

/* The message's address rows: read from its lists in C (addresses.h),
 * or, for lists of another shape (a number or true among them, which
 * SQLite's json_each turns into a row the table refuses), by
 * ST_INSERT_ADDRESSES. */
static int index_add_addresses(struct index *ix, int64_t docid)
{
	struct str lists[ADDR_ROLES];
	_Static_assert(IF_BCC - IF_FROM + 1 == ADDR_ROLES, "one list a role, in addr_role_names' order");
	int r = index_sql_reading ? JSON_READ_OTHER : 0;
	for (int k = 0; k < ADDR_ROLES; k++) {
		const struct index_value *v = &ix->rec[IF_FROM + k];
		lists[k] = v->type == SQLITE_TEXT ? (struct str){ ix->rec_text.p + v->off, v->len } : STR_NULL;
		if (v->type != SQLITE_TEXT && v->type != SQLITE_NULL)
			r = JSON_READ_OTHER;
	}
	if (r == 0)
		r = addr_rows_read(&ix->addresses, lists);
	if (r < 0)
		return r;
	sqlite3_stmt *st;
	if (r == 0) {
		size_t n;
		const struct addr_row *row = addr_rows_get(&ix->addresses, &n);
		/* a text of empty strings only has no buffer yet: bound as
		 * NULL, an empty string would be stored as SQL NULL */
		const char *text = ix->addresses.text.p ? ix->addresses.text.p : "";
		st = ix->st[ST_INSERT_ADDRESS];
		for (size_t i = 0; r == 0 && i < n; i++, row++) {
			sqlite3_bind_int64(st, 1, docid);
			sqlite3_bind_text(st, 2, addr_role_names[row->role], -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 3, row->position);
			if (row->member >= 0)
				sqlite3_bind_int64(st, 4, row->member);
			if (row->name >= 0)
				sqlite3_bind_text(st, 5, text + row->name, (int)row->name_len, SQLITE_STATIC);
			if (row->address >= 0)
				sqlite3_bind_text(st, 6, text + row->address, (int)row->address_len, SQLITE_STATIC);
			if (row->group >= 0)
				sqlite3_bind_text(st, 7, text + row->group, (int)row->group_len, SQLITE_STATIC);
			r = index_run(ix, ST_INSERT_ADDRESS);
		}
		return r;
	}
	st = ix->st[ST_INSERT_ADDRESSES];
	for (int k = 0; k <= IF_BCC - IF_FROM; k++)
		index_bind_field(ix, st, k + 1, (enum index_field)(IF_FROM + k));
	sqlite3_bind_int64(st, 7, docid);
	/* a group's "group" key in the record's JSON: without it no list
	 * holds a group, and the passes for groups are skipped */
	bool group = false;
	for (int f = IF_FROM; f <= IF_BCC && !group; f++)
		group = ix->rec[f].type == SQLITE_TEXT &&
		        memmem(ix->rec_text.p + ix->rec[f].off, ix->rec[f].len, "\"group\":", 8);
	sqlite3_bind_int(st, 8, group);
	return index_run(ix, ST_INSERT_ADDRESSES);
}

/* Whether column c of s holds the bytes p[0..n), or is NULL when p is. */
static bool index_column_is(sqlite3_stmt *s, int c, const char *p, size_t n)
{
	if (sqlite3_column_type(s, c) == SQLITE_NULL)
		return !p;
	const void *v = sqlite3_column_blob(s, c);
	return p && (size_t)sqlite3_column_bytes(s, c) == n && (!n || !memcmp(v, p, n));
}

/* Whether column c of s holds field f of the record (index_bind_field's
 * value: text, or NULL where the record lacks it). */
static bool index_column_is_field(struct index *ix, sqlite3_stmt *s, int c, enum index_field f)
{
	const struct index_value *v = &ix->rec[f];
	if (v->type != SQLITE_TEXT && v->type != SQLITE_NULL)
		return false;
	return index_column_is(s, c, v->type == SQLITE_TEXT ? ix->rec_text.p + v->off : NULL, v->len);
}

/* A message already stored (its id found) whose row holds the same record
 * (the hash of index_record_read): the row stays, with its addresses,
 * attachments, references, thread and text index row; only the file's
 * size and mtime are written, and where it is when it moved.  A file read again
 * is most often an mbox archive that grew: its earlier messages are then
 * neither deleted and inserted again nor tokenized twice (README, "The
 * index").  A database being built holds no row to keep.  1 when kept, 0
 * when the record is to be stored, -errno. */
static int index_keep_message(struct index *ix, const struct record_io *io)
{
	if (ix->built || !ix->rec_hashed || ix->rec[IF_ID].type != SQLITE_TEXT)
		return 0;
	sqlite3_stmt *s = ix->st[ST_FIND_ID];
	index_bind_field(ix, s, 4, IF_ID);
	int rc = sqlite3_step(s);
	bool same = rc == SQLITE_ROW && sqlite3_column_type(s, 1) == SQLITE_INTEGER &&
	            sqlite3_column_int64(s, 1) == ix->rec_hash;
	int64_t docid = same ? sqlite3_column_int64(s, 0) : 0;
	bool in_place = same && index_column_is(s, 2, io->base.p, io->base.n) &&
	                index_column_is(s, 3, io->path.p, io->path.n) &&
	                index_column_is_field(ix, s, 4, IF_FOLDER) && index_column_is_field(ix, s, 5, IF_SUBDIR) &&
	                index_column_is_field(ix, s, 6, IF_FLAGS);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return index_fail(ix, rc);
	if (!same)
		return 0;
	enum index_stmt k = in_place ? ST_KEEP_STAT : ST_KEEP_MESSAGE;
	s = ix->st[k];
	index_bind(ix, k, NULL, 0, false, io);
	for (int f = 0; f < INDEX_MESSAGE_FIELDS; f++)
		index_bind_field(ix, s, INDEX_MESSAGE_PARAM + f, (enum index_field)f);
	sqlite3_bind_int64(s, INDEX_MESSAGE_PARAM + INDEX_MESSAGE_FIELDS + 1, docid);
	int r = index_run(ix, k);
	if (r < 0)
		return r;
	ix->stats.unchanged++;
	return 1;
}

/* Stores the message record index_record took apart. */
static int index_add_message(struct index *ix, const struct record_io *io)
{
	int r = index_keep_message(ix, io);
	if (r != 0)
		return r < 0 ? r : 0;
	sqlite3_stmt *st = ix->st[ST_INSERT_MESSAGE];
	index_bind(ix, ST_INSERT_MESSAGE, NULL, 0, false, io);
	for (int f = 0; f < INDEX_MESSAGE_FIELDS; f++)
		index_bind_field(ix, st, INDEX_MESSAGE_PARAM + f, (enum index_field)f);
	if (ix->rec_hashed)
		sqlite3_bind_int64(st, INDEX_MESSAGE_PARAM + INDEX_MESSAGE_FIELDS, ix->rec_hash);
	r = index_run(ix, ST_INSERT_MESSAGE);
	if (r < 0)
		return r;
	/* the row just inserted (the delete trigger REPLACE fires inserts
	 * no row) */
	int64_t docid = sqlite3_last_insert_rowid(ix->db);
	r = index_add_addresses(ix, docid);
	static const struct { enum index_stmt st; enum index_field field; } lists[] = {
		{ ST_INSERT_ATTACHMENTS, IF_ATTACHMENTS }, { ST_INSERT_REFS, IF_REFERENCES },
	};
	for (size_t i = 0; r == 0 && i < sizeof(lists) / sizeof(lists[0]); i++) {
		/* no list or [] (most messages' attachments): no row to
		 * write, and the statement not run */
		const struct index_value *v = &ix->rec[lists[i].field];
		if (v->type != SQLITE_TEXT || (v->len == 2 && !memcmp(ix->rec_text.p + v->off, "[]", 2)))
			continue;
		st = ix->st[lists[i].st];
		index_bind_field(ix, st, 1, lists[i].field);
		sqlite3_bind_int64(st, 7, docid);
		r = index_run(ix, lists[i].st);
	}
	if (r == 0)
		r = index_fts_keep(ix, docid);
	if (r == 0)
		r = index_thread(ix, docid);
	if (r == 0)
		ix->stats.messages++;
	return r;
}

static int index_file_row(struct index *ix, enum index_stmt k, const struct record_io *io)
{
	sqlite3_stmt *s = ix->st[k];
	sqlite3_bind_blob(s, 1, io->base.p, (int)io->base.n, SQLITE_STATIC);
	sqlite3_bind_blob(s, 2, io->path.p, (int)io->path.n, SQLITE_STATIC);
	if (k == ST_UPSERT_FILE) {
		/* An mbox streamed over several batches (so several transactions)
		 * is its messages' items: their rows claim the bytes read up to
		 * the next message after the last one stored (the blank line that
		 * ends a message belongs to no message), with no inode, and the
		 * item that ends the archive, after the deletions of its gone
		 * messages, claims the whole file (index_add_batch).  A run killed
		 * before that leaves a row that differs from the file, and the
		 * next run reads the archive again. */
		uint64_t size = io->in_mbox ? io->read_to : io->size;
		sqlite3_bind_int64(s, 3, (int64_t)io->dev);
		sqlite3_bind_int64(s, 4, (int64_t)io->ino);
		sqlite3_bind_int64(s, 5, (int64_t)size);
		sqlite3_bind_int64(s, 6, io->mtime_sec);
		sqlite3_bind_int64(s, 7, io->mtime_nsec);
		/* the file's identity (README, "Records"), what the state finds
		 * a file by on the next run */
		sqlite3_bind_int64(s, 8, (int64_t)io->id);
	} else if (k == ST_REREAD_FILE) {
		sqlite3_bind_int64(s, 3, (int64_t)io->id);
	}
	return index_run(ix, k);
}

/* The files row of a statted file: its stat, with no inode when the next
 * run is to read it again whatever it finds (again), which a row never
 * matches (io/state.c, state_check). */
static int index_stat_row(struct index *ix, const struct record_io *io, bool again)
{
	if (!again)
		return index_file_row(ix, ST_UPSERT_FILE, io);
	struct record_io reread = *io;
	reread.dev = reread.ino = 0;
	return index_file_row(ix, ST_UPSERT_FILE, &reread);
}

/* What a file held before its records are written again: its errors, and
 * its messages unless it was an archive (whose messages are kept or
 * replaced by id and deleted by offset: index_add_records).  A file named
 * and missing (io->replaced) keeps the error row this run wrote for it,
 * as a clean run's (io/state.h, state_named_missing). */
static int index_clear_file(struct index *ix, const struct record_io *io, bool archive)
{
	vanished_met(ix->vanished, io->base, io->path);
	int r = 0;
	if (!archive) {
		index_bind(ix, ST_DELETE_PATH, NULL, 0, false, io);
		r = index_run(ix, ST_DELETE_PATH);
	}
	/* the error row this run wrote at this very place stays; another
	 * place's of the id goes (a FIFO renamed, a copy removed) */
	if (r == 0 && !io->replaced_here) {
		index_bind(ix, ST_DELETE_PATH_ERRORS, NULL, 0, false, io);
		r = index_run(ix, ST_DELETE_PATH_ERRORS);
	}
	return r;
}

/* A file gone: its messages, its errors (and, index_file_row, its state
 * row). */
static int index_delete_file(struct index *ix, const struct record_io *io)
{
	return index_clear_file(ix, io, false);
}

/* The row of an archive's message, by id (its hex id): one of the last
 * run found at no offset now, in the archive still there (a message
 * removed, the file rewritten), or one whose record at its offset is an
 * error now.  Its errors went with the file's (index_clear_file). */
static int index_delete_message(struct index *ix, const char *id, size_t id_n)
{
	sqlite3_bind_text(ix->st[ST_DELETE_ID], 4, id, (int)id_n, SQLITE_STATIC);
	return index_run(ix, ST_DELETE_ID);
}

/* A file read again under another name than the one it was known or met
 * under (record_io's old_path and old_base: a Maildir message renamed and
 * changed at once, or found renamed during the run; a file named by
 * another spelling and changed): what that name held goes. */
static int index_delete_old_path(struct index *ix, const struct record_io *io)
{
	if (!io->old_path.n)
		return 0;
	struct record_io was = *io;
	was.base = record_old_base(io);
	was.path = io->old_path;
	was.replaced = false;   /* the gone name's error rows go too */
	int r = index_delete_file(ix, &was);
	return r == 0 ? index_file_row(ix, ST_DELETE_FILE, &was) : r;
}

static int index_rename(struct index *ix, const struct record_io *io, const char *rec, size_t n)
{
	/* The place it moves to may hold the rows of a file of another id
	 * that the last run met there, gone now (a file named through a
	 * symbolic link that now names another message, or that is a file
	 * of its own again: io/state.c, state_check); that file's deletion
	 * finds its place taken and leaves the rows (index_place_taken), so
	 * they go here, as a file read at a place replaces what the place
	 * held (index_clear_file). */
	char id[17];
	record_id_hex(record_id(io), id);
	sqlite3_stmt *s = ix->st[ST_DELETE_PATH_OTHER];
	index_bind(ix, ST_DELETE_PATH_OTHER, NULL, 0, false, io);
	sqlite3_bind_text(s, 4, id, (int)strlen(id), SQLITE_STATIC);
	int r = index_run(ix, ST_DELETE_PATH_OTHER);
	if (r < 0)
		return r;
	s = ix->st[ST_RENAME_MESSAGES];
	index_bind(ix, ST_RENAME_MESSAGES, rec, n, false, io);
	struct str old_base = record_old_base(io);
	sqlite3_bind_text(s, 4, io->old_path.p, (int)io->old_path.n, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, old_base.p, (int)old_base.n, SQLITE_STATIC);
	r = index_run(ix, ST_RENAME_MESSAGES);
	if (r < 0)
		return r;
	ix->stats.renamed++;
	s = ix->st[ST_RENAME_FILE];
	sqlite3_bind_blob(s, 2, io->base.p, (int)io->base.n, SQLITE_STATIC);
	sqlite3_bind_blob(s, 3, io->path.p, (int)io->path.n, SQLITE_STATIC);
	sqlite3_bind_blob(s, 4, io->old_path.p, (int)io->old_path.n, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, (int64_t)io->dev);
	sqlite3_bind_int64(s, 6, (int64_t)io->ino);
	sqlite3_bind_int64(s, 7, (int64_t)io->size);
	sqlite3_bind_int64(s, 8, io->mtime_sec);
	sqlite3_bind_int64(s, 9, io->mtime_nsec);
	sqlite3_bind_blob(s, 10, old_base.p, (int)old_base.n, SQLITE_STATIC);
	r = index_run(ix, ST_RENAME_FILE);
	if (r == 0) {
		/* the name it has now may hold the error row of a file that
		 * vanished under it in an earlier run: stale, the message is
		 * there (and the row is not an earlier run's to drop) */
		vanished_met(ix->vanished, io->base, io->path);
		index_bind(ix, ST_DELETE_PATH_ERRORS, NULL, 0, false, io);
		r = index_run(ix, ST_DELETE_PATH_ERRORS);
	}
	return r;
}

/* Whether a file of another id stands at the place of io, gone: one this
 * run wrote (a files row has one place, written in the batch of its
 * record, before the end of the run says what is gone).  A place changes
 * ids when its directory becomes a Maildir or stops being one (README,
 * "Records": a Maildir message's id is its unique name's, another file's
 * its path's).  The rows at that place are then the new file's: this
 * run's record replaced the old ones already (index_add_item). */
static int index_place_taken(struct index *ix, const struct record_io *io, bool *taken)
{
	sqlite3_stmt *s = ix->st[ST_FILE_ID];
	sqlite3_bind_blob(s, 1, io->base.p, (int)io->base.n, SQLITE_STATIC);
	sqlite3_bind_blob(s, 2, io->path.p, (int)io->path.n, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	*taken = rc == SQLITE_ROW && sqlite3_column_int64(s, 0) != (int64_t)io->id;
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : index_fail(ix, rc);
}

/* An error record (README "Records"): its top-level "error" key, an object,
 * in the record index_record took apart. */
static bool index_is_error(const struct index *ix)
{
	const struct index_value *v = &ix->rec[IF_ERROR];
	return v->type == SQLITE_TEXT && v->len && ix->rec_text.p[v->off] == '{';
}

/* A change record among a file's records: its own id deleted before its
 * archive's first message (pipeline/parse_stage.c), whose rows went with
 * the file's already (index_clear_file below, or a streamed archive's
 * placeholder in index_add_batch); or, with an offset, a message of the
 * archive's last run found at no offset now (index_add_records). */
static bool index_is_change(const char *rec, size_t n)
{
	static const char deleted[] = "{\"deleted\":";
	return n >= sizeof(deleted) - 1 && memcmp(rec, deleted, sizeof(deleted) - 1) == 0;
}

/* An item's records (index_add_item); archive: the file was an mbox
 * archive in the last run (state_was_archive), whose messages are not
 * all dropped when it is read whole again: each still at its offset is
 * kept or replaced by id (index_add_message), each gone comes as a
 * deletion (a streamed archive's items are its messages, whose file the
 * placeholder cleared: index_add_batch). */
static int index_add_records(struct index *ix, const struct record_io *io, const char *records,
                             size_t len, bool archive)
{
	uint64_t t0 = index_now_ns();
	int r = 0;
	if (io->kind == RECORD_DELETED) {
		/* A streamed archive's message gone from it (the archive is
		 * there: statted) goes by its id; so does a gone archive's
		 * where a file of another id stands now (its directory became
		 * a Maildir, a named link leads elsewhere), the place's rows
		 * being that file's.  Anything else gone goes with all its
		 * file held, where no file of another id took the place. */
		bool taken = false;
		if (!(io->in_mbox && io->have_stat))
			r = index_place_taken(ix, io, &taken);
		if (r == 0 && io->in_mbox && (io->have_stat || taken)) {
			char id[17];
			record_id_hex(record_id(io), id);
			r = index_delete_message(ix, id, strlen(id));
		} else if (r == 0 && !taken) {
			r = index_delete_file(ix, io);
			/* the row at a place whose file turned FIFO is that
			 * FIFO's error record's now, which the run that no
			 * longer finds it deletes by */
			if (r == 0 && !io->replaced_here)
				r = index_file_row(ix, ST_DELETE_FILE, io);
		}
		ix->stats.deleted++;
	} else if (io->kind == RECORD_RENAMED) {
		r = index_rename(ix, io, records, len);
	} else if (len) {
		/* a file read again replaces what it held; an archive read
		 * has its messages kept or replaced by id, and those no longer
		 * at their offsets come as deletions (a streamed one's
		 * placeholder cleared what it held the same way,
		 * index_add_batch); one that could not be read has its error
		 * row instead, as any file.  Read: no reason, or the one the
		 * parse gave it (its first error record's, not mail:
		 * pipeline/parse_stage.c, parse_record; an internal error
		 * there makes every message written again, which is right if
		 * not the least work) */
		bool read = io->reason == RECORD_NONE || io->reason == RECORD_NOT_MAIL;
		if (!io->in_mbox)
			r = index_clear_file(ix, io, archive && read);
		if (r == 0)
			r = index_delete_old_path(ix, io);
		for (size_t at = 0; r == 0 && at < len;) {
			const char *nl = memchr(records + at, '\n', len - at);
			size_t n = nl ? (size_t)(nl - records) - at : len - at;
			/* a terminated copy, bound as such (index_bind_text) */
			dynbuf_reset(&ix->scratch);
			r = dynbuf_append(&ix->scratch, records + at, n);
			if (r == 0)
				r = dynbuf_putc(&ix->scratch, '\0');
			if (r < 0)
				break;
			const char *rec = ix->scratch.p;
			at += n + 1;
			r = index_record(ix, rec, n);
			if (r < 0)
				break;
			/* an archive's message (an offset): gone, or an error now
			 * where the last run stored a message */
			const struct index_value *id = &ix->rec[IF_ID], *off = &ix->rec[IF_OFFSET];
			bool in_archive = id->type == SQLITE_TEXT && off->type == SQLITE_INTEGER;
			if (index_is_change(rec, n)) {
				if (in_archive) {
					r = index_delete_message(ix, ix->rec_text.p + id->off, id->len);
					ix->stats.deleted++;
				}
				continue;
			}
			if (index_is_error(ix)) {
				if (in_archive)
					r = index_delete_message(ix, ix->rec_text.p + id->off, id->len);
				if (r == 0) {
					index_bind(ix, ST_INSERT_ERROR, rec, n, true, io);
					r = index_run(ix, ST_INSERT_ERROR);
				}
				ix->stats.errors++;
			} else {
				r = index_add_message(ix, io);
			}
		}
		/* the state row: what --state would save (io/state.c).  A file
		 * that could not be read has a row with no inode, so that the
		 * next run reads it again, changed or not (its error row
		 * replaced its messages here), or, renamed or gone by then,
		 * deletes the error row at this place: one statted (a directory
		 * that cannot be listed too) gets a row of its stat with no
		 * inode; one not statted keeps the row it had with no inode, or
		 * gets a row of zeros */
		if (r == 0 && io->reason == RECORD_IO && io->err == ENOENT) {
			r = index_file_row(ix, ST_DELETE_FILE, io);
		} else if (r == 0 && (record_no_file(io) || (io->have_stat && (io->reason == RECORD_IO ||
		                                                    (io->notes & RECORD_CHANGED_WHILE_READ) ||
		                                                    io->in_mbox)))) {
			/* and one that changed while it was read: its record may
			 * hold two versions' bytes, its stat the last one's
			 * (state_mark_reread); a streamed archive's message,
			 * until the item that ends the archive (index_add_batch)
			 * says it was read to its end and its gone messages were
			 * deleted: a run stopped between the two reads it again;
			 * and no file at all (a FIFO, a symbolic link not
			 * followed: state_not_a_file), whose row the run that no
			 * longer finds it deletes its error row by */
			r = index_stat_row(ix, io, true);
		} else if (r == 0 && io->reason == RECORD_IO) {
			r = index_file_row(ix, ST_REREAD_FILE, io);
		} else if (r == 0 && io->have_stat) {
			r = index_stat_row(ix, io, false);
		}
	}
	ix->stats.ns += index_now_ns() - t0;
	return r;
}

int index_add_item(struct index *ix, const struct record_io *io, const char *records, size_t len)
{
	return index_add_records(ix, io, records, len, false);
}

int index_add_batch(struct index *ix, const struct batch *b)
{
	/* a batch of files found unchanged writes nothing: no transaction
	 * (an unchanged re-run would otherwise take and drop the write lock
	 * once per batch) */
	size_t live = 0;
	for (size_t i = 0; i < b->n; i++)
		live += !b->items[i].no_output || b->items[i].stream || b->items[i].stream_end;
	if (!live)
		return 0;
	int r = index_begin(ix);
	for (size_t i = 0; r == 0 && i < b->n; i++) {
		const struct batch_item *it = &b->items[i];
		if (it->no_output && it->stream) {
			/* an archive (or a message too large to hold) about to be
			 * streamed: its old messages go (unless it was an archive:
			 * index_add_records), and those of its old name */
			uint64_t t0 = index_now_ns();
			r = index_clear_file(ix, &it->io, state_was_archive(it->state));
			if (r == 0)
				r = index_delete_old_path(ix, &it->io);
			ix->stats.ns += index_now_ns() - t0;
		} else if (it->stream_end) {
			/* a streamed archive read to its end: its files row as
			 * --state would save it (one that changed while read is
			 * read again next time) */
			uint64_t t0 = index_now_ns();
			r = index_stat_row(ix, &it->io, (it->io.notes & RECORD_CHANGED_WHILE_READ) != 0);
			ix->stats.ns += index_now_ns() - t0;
		} else if (!it->no_output) {
			r = index_add_records(ix, &it->io, b->out[it->out_worker].p + it->out_off, it->out_len,
			                      state_was_archive(it->state));
		}
	}
	if (r < 0) {
		index_rollback(ix);
		return r;
	}
	/* One transaction per batch (about --batch-bytes of input): against
	 * one per 32 MB of records the CPU time was the same within noise
	 * (bench/INDEX.md), and a batch is what a crash or Ctrl-C can lose */
	return index_commit(ix);
}

