/* SPDX-License-Identifier: MIT */
/* One output record: what the I/O layer knows of an input, and, when its
 * bytes were parsed, the message.  Built by the worker that parsed the input,
 * formatted by emit/emit.c on that same worker. */
#ifndef INGEST_RECORD_H
#define INGEST_RECORD_H

#include "core/str.h"

#include <stdbool.h>
#include <stdint.h>

/* Why an input produced no message: the stable name written in the
 * output ("reason"), and the text written as "message" when neither the
 * record nor an errno says more.  The one table of reasons: the emitter
 * and the report both read it. */
#define RECORD_REASONS(X)                                                        \
	X(NONE, NULL, NULL)                                                          \
	X(IO, "io-error", "input/output error")          /* a syscall failed; errno set */ \
	X(NOT_REGULAR, "not-regular", "not a regular file") /* FIFO, socket, device: never opened */ \
	X(SYMLINK, "symlink", "symbolic link, not followed") /* met while walking */ \
	X(TOO_LARGE, "too-large", "larger than --max-size")  /* not read */          \
	X(NOT_MAIL, "not-mail", "not a mail message")    /* read, but not mail */    \
	X(INTERNAL, "internal", "internal error")        /* a bug or resource limit of ours */

enum record_reason {
#define RECORD_REASON_ENUM(id, name, text) RECORD_##id,
	RECORD_REASONS(RECORD_REASON_ENUM)
#undef RECORD_REASON_ENUM
	RECORD__COUNT
};

/* The stable name; NULL for RECORD_NONE and out-of-range values. */
const char *record_reason_name(enum record_reason r);
/* The default human text; "internal error" for out-of-range values. */
const char *record_reason_text(enum record_reason r);

enum record_notes {
	RECORD_GREW = 1 << 0,      /* the file grew between statx and read */
	RECORD_SHRANK = 1 << 1,    /* the read was shorter than the stat size */
};

/* The file changed while it was read: the next --state or --index run
 * reads it again (state_mark_reread). */
#define RECORD_CHANGED_WHILE_READ (RECORD_GREW | RECORD_SHRANK)

/* With --state, a record may report a change instead of a message. */
enum record_kind {
	RECORD_MESSAGE,    /* a message, or an error record */
	RECORD_DELETED,    /* {"deleted": path}: gone since the last run */
	RECORD_RENAMED,    /* {"renamed": {"from", "to"}}: a Maildir rename */
};

/* What the walk and the reader know.  Strings are bytes (a path need not be
 * UTF-8); the emitter makes them valid JSON losslessly. */
struct record_io {
	struct str root;      /* the PATH argument the input came from */
	struct str path;      /* relative to root ("" for a file argument) */
	struct str base;      /* root resolved: what ids and --state know */
	uint64_t id;               /* the file's identity (record_file_id) */
	bool anonymous;            /* bytes parsed from memory (ingest_parse): no
	                              file, so no identity; id stays 0, and its
	                              es-bulk action names no _id (emit/esbulk.c) */
	bool have_stat;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t dev, ino;

	bool maildir;              /* the file is in a Maildir's cur/ or new/ */
	struct str folder;    /* Maildir++ folder (".Sent" → "Sent"), "" for INBOX */
	struct str subdir;    /* "cur" or "new" */
	struct str flags;     /* letters after ":2,", sorted as written */

	bool in_mbox;              /* a message split out of an mbox file */
	uint64_t offset, length;   /* its byte range in that file */
	uint64_t read_to;          /* where the file's next message starts, or
	                              where it ends after the last one: how far
	                              the archive is read once this one is in */

	enum record_reason reason;
	int err;                   /* positive errno when reason is RECORD_IO */
	const char *message;       /* human text for the error, or NULL */
	uint32_t notes;            /* enum record_notes */

	enum record_kind kind;
	struct str old_path;  /* a file's earlier path, when it had another: in
	                         the state (a Maildir message renamed,
	                         RECORD_RENAMED, or changed too; a file named
	                         by another spelling and changed), or where
	                         this run met it before it was found renamed */
	struct str old_base;  /* with old_path, the base it was under when
	                         another ({0}: base; record_old_base) */
	bool error_document;  /* --state: the last run's record of this file was
	                         an error, which JSON Lines and --es-errors make
	                         a document under the file's id
	                         (state_had_error_record); the reader sets it on
	                         the file's item, and of an archive's messages
	                         only the first keeps it, before whose record
	                         the file's id is deleted (parse_stage.c) */
	bool known;           /* --state: the last run may have made a document
	                         of this file's id (state_had_document; a
	                         deletion: its record was no error); of an
	                         archive's messages only the first keeps it,
	                         as error_document */
	bool place_only;      /* RECORD_DELETED: the gone file's rows at its
	                         place alone (the index), no delete of the
	                         document: a copy under the same unique name,
	                         read by this run, has the id, and its record
	                         decides (state_deleted) */
	bool replaced;        /* RECORD_DELETED: another record of this run
	                         stands in the gone file's place, under its id:
	                         its error record (a file named and missing,
	                         no file: io/state.h, emit_change_dropped) */
	bool replaced_here;   /* RECORD_DELETED, replaced: that error record is
	                         at the gone file's very place (the file turned
	                         FIFO), whose index row is now the record's */
};

/* A record of a place that holds no file: a FIFO, a socket, a device, a
 * symbolic link not followed (the state keeps it as its error record). */
static inline bool record_no_file(const struct record_io *io)
{
	return io->reason == RECORD_NOT_REGULAR || io->reason == RECORD_SYMLINK;
}

/* The base old_path is under: a file named by another spelling from
 * another working directory had another. */
static inline struct str record_old_base(const struct record_io *io)
{
	return io->old_base.n ? io->old_base : io->base;
}

struct mail_message;

struct record {
	struct record_io io;
	const struct mail_message *mail;   /* NULL when not parsed */
};

struct dynbuf;
/* Formats a record in place of emit_record(), on the worker that parsed
 * it: appends the record's form to out (the Python module appends a
 * reference to the dict it built from rec).  0, or -errno with out as it
 * was. */
typedef int record_visit_fn(void *ctx, const struct record *rec, struct dynbuf *out);
/* Within a run, on the parse stage's thread and in input order, before
 * the record is handed on: the record a visitor formatted at obj (where
 * out stood when it was called) joins thread, met earlier in the run
 * (pipeline/threads.h); the visitor's form takes that thread_id. */
typedef void record_thread_fn(void *ctx, char *obj, uint64_t thread);
/* The identity of a record: the file's, and for an mbox message the
 * file's with its offset. */
uint64_t record_id(const struct record_io *io);
/* The key of one msg-id, what a thread's identity hashes (emit.c's
 * emit_thread_root: the first msg-id of References, else In-Reply-To,
 * else the message's own Message-ID); 0 for none. */
uint64_t record_thread_key(struct str msgid);
/* 16 lower-case hex digits and a NUL: the form ids take in the output. */
void record_id_hex(uint64_t id, char hex[17]);

/* An archive's message of `length` bytes, longer than --max-size: a
 * too-large record, not read, at its own offset and length whatever the
 * chunks the archive is streamed in (an archive read whole is at most
 * --max-size: io/reader_stream.c alone meets one). */
void record_mbox_too_large(struct record_io *io, uint64_t length);

#endif
