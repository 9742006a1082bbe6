/* One output record: what the I/O layer knows of an input, and, when its
 * bytes were parsed, the message.  Built by the worker that parsed the input,
 * formatted by emit/emit.c on that same worker. */
#ifndef INGEST_RECORD_H
#define INGEST_RECORD_H

#include "mail/mail.h"

#include <stdbool.h>
#include <stdint.h>

/* Why an input produced no message.  Stable names are in the output
 * ("reason"); the errno name is added when a syscall failed. */
#define RECORD_REASONS(X)                                     \
	X(NONE, NULL)                                             \
	X(IO, "io-error")               /* a syscall failed; errno set */ \
	X(NOT_REGULAR, "not-regular")   /* FIFO, socket, device: never opened */ \
	X(SYMLINK, "symlink")           /* met while walking: not followed */ \
	X(TOO_LARGE, "too-large")       /* over --max-size: not read */ \
	X(NOT_MAIL, "not-mail")         /* read, but not a mail message */ \
	X(INTERNAL, "internal")         /* a bug or resource limit of ours */

enum record_reason {
#define RECORD_REASON_ENUM(id, name) RECORD_##id,
	RECORD_REASONS(RECORD_REASON_ENUM)
#undef RECORD_REASON_ENUM
};

const char *record_reason_name(enum record_reason r);

enum record_notes {
	RECORD_GREW = 1 << 0,      /* the file grew between statx and read */
	RECORD_SHRANK = 1 << 1,    /* the read was shorter than the stat size */
};

/* With --state, a record may report a change instead of a message. */
enum record_kind {
	RECORD_MESSAGE,    /* a message, or an error record */
	RECORD_DELETED,    /* {"deleted": path}: gone since the last run */
	RECORD_RENAMED,    /* {"renamed": {"from", "to"}}: a Maildir rename */
};

/* What the walk and the reader know.  Strings are bytes (a path need not be
 * UTF-8); the emitter makes them valid JSON losslessly. */
struct record_io {
	struct mail_str root;      /* the PATH argument the input came from */
	struct mail_str path;      /* relative to root ("" for a file argument) */
	bool have_stat;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t dev, ino;

	bool maildir;              /* the file is in a Maildir's cur/ or new/ */
	struct mail_str folder;    /* Maildir++ folder (".Sent" → "Sent"), "" for INBOX */
	struct mail_str subdir;    /* "cur" or "new" */
	struct mail_str flags;     /* letters after ":2,", sorted as written */

	bool in_mbox;              /* a message split out of an mbox file */
	uint64_t offset, length;   /* its byte range in that file */

	enum record_reason reason;
	int err;                   /* positive errno when reason is RECORD_IO */
	const char *message;       /* human text for the error, or NULL */
	uint32_t notes;            /* enum record_notes */

	enum record_kind kind;
	struct mail_str old_path;  /* RECORD_RENAMED: the path it had */
	struct mail_str old_msgid; /* RECORD_DELETED/RENAMED: its Message-ID, if known */
};

struct record {
	struct record_io io;
	const struct mail_message *mail;   /* NULL when not parsed */
};

#endif
