/* SPDX-License-Identifier: MIT */
/* The emitter: one struct record → the bytes of one output record, in one
 * of three formats (JSON Lines, Elasticsearch/OpenSearch _bulk, TSV).
 *
 * Workers call emit_record() in parallel, each on its own output dynbuf;
 * the options are shared and only read.  Pure: no globals written, no
 * syscalls, no locale.  A record is all or nothing: on failure the output
 * buffer is truncated back to where it was, so no partial line can reach a
 * file.  The schema is documented in README ("Records"). */
#ifndef INGEST_EMIT_EMIT_H
#define INGEST_EMIT_EMIT_H

#include "core/dynbuf.h"
#include "core/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every output field, in the order JSON records list them.  The names are
 * the schema's keys and --fields' vocabulary: stable; add new ones at the
 * end (at most 64). */
#define EMIT_FIELDS(X)                          \
	X(PATH, "path")                             \
	X(ROOT, "root")                             \
	X(SIZE, "size")                             \
	X(MTIME, "mtime")                           \
	X(FOLDER, "folder")                         \
	X(SUBDIR, "subdir")                         \
	X(FLAGS, "flags")                           \
	X(OFFSET, "offset")                         \
	X(LENGTH, "length")                         \
	X(NOTES, "notes")                           \
	X(ERROR, "error")                           \
	X(MESSAGE_ID, "message_id")                 \
	X(IN_REPLY_TO, "in_reply_to")               \
	X(REFERENCES, "references")                 \
	X(DATE, "date")                             \
	X(DATE_RAW, "date_raw")                     \
	X(FROM, "from")                             \
	X(SENDER, "sender")                         \
	X(REPLY_TO, "reply_to")                     \
	X(TO, "to")                                 \
	X(CC, "cc")                                 \
	X(BCC, "bcc")                               \
	X(SUBJECT, "subject")                       \
	X(LIST_ID, "list_id")                       \
	X(CONTENT_TYPE, "content_type")             \
	X(TEXT, "text")                             \
	X(TEXT_TRUNCATED, "text_truncated")         \
	X(ATTACHMENTS, "attachments")               \
	X(PARTS, "parts")                           \
	X(WARNINGS, "warnings")                     \
	X(DETECTED_TYPE, "detected_type")           \
	X(HEADERS, "headers")                       \
	X(ID, "id")                                 \
	X(THREAD_ID, "thread_id")                   \
	X(TAGS, "tags")

enum emit_field {
#define EMIT_FIELD_ENUM(id, name) EMIT_F_##id,
	EMIT_FIELDS(EMIT_FIELD_ENUM)
#undef EMIT_FIELD_ENUM
	EMIT_F__COUNT
};

#define EMIT_FIELD_BIT(f) (UINT64_C(1) << (f))
#define EMIT_FIELDS_ALL   ((UINT64_C(1) << EMIT_F__COUNT) - 1)

enum emit_format {
	EMIT_JSONL,      /* one JSON object a line */
	EMIT_ES_BULK,    /* _bulk: an action line, then the JSONL object */
	EMIT_TSV,        /* one line of tab-separated columns, in `order` */
};

/* Shared, read-only while workers emit.  Set it up with emit_options_init()
 * and, for --fields, emit_fields_parse(), which keep `fields` and `order`
 * in agreement. */
struct emit_options {
	enum emit_format format;
	/* The selected fields, as EMIT_FIELD_BIT()s: JSON writes the selected
	 * ones in enum order. */
	uint64_t fields;
	/* The selected fields in the order the user listed them: TSV's
	 * columns.  A field is a column when it is in order[] and in fields. */
	uint8_t order[EMIT_F__COUNT];
	size_t n_order;
	bool no_text;           /* --no-text: text and text_truncated are not written */
	bool headers;           /* --headers: the headers field is written */
	const char *es_index;   /* es-bulk's "_index"; NULL: none (the URL names it) */
	bool es_errors;         /* es-bulk: error records are documents too */
};

/* Defaults: JSONL, every field in enum order, text on, headers off. */
void emit_options_init(struct emit_options *o);

/* The stable name of a field ("message_id"), or NULL when out of range. */
const char *emit_field_name(enum emit_field f);

/* The field named by the n bytes at name, or -EINVAL. */
int emit_field_lookup(const char *name, size_t n);

/* Parses --fields=a,b,c into o->fields and o->order.  Spaces around names
 * are ignored; a repeated name keeps its first position.  Any field may be
 * left out, path included (a TSV of subjects needs no path); es-bulk's _id
 * does not depend on the selection.  Returns 0, or
 * -EINVAL for an unknown or empty name (an empty list included), in which
 * case *bad_off and *bad_len (either may be NULL) locate the bad name in csv
 * and o is unchanged. */
int emit_fields_parse(struct emit_options *o, const char *csv,
                      size_t *bad_off, size_t *bad_len);

/* Parses --format's value: "jsonl", "es-bulk" or "tsv".  0 or -EINVAL. */
int emit_format_parse(const char *s, enum emit_format *f);

/* Appends exactly one complete record to out: a JSONL line; the _bulk action
 * line and source line (nothing for an error record unless es_errors); or a
 * TSV line.  Returns 0, or -errno (-E2BIG at the
 * dynbuf's cap, -ENOMEM) with out->len as it was on entry. */
int emit_record(const struct emit_options *o, const struct record *r,
                struct dynbuf *out);

/* Whether error records are written as records (documents): in every
 * format but es-bulk without --es-errors. */
bool emit_errors_written(const struct emit_options *o);

/* Whether change record io is left out of format o's output: the
 * deletion of a file named and missing (io->replaced) when this run wrote
 * its error record, a document under the same id, in its place (a delete
 * after it would leave nothing where a clean run leaves the error); and
 * with es-bulk without --es-errors, the deletion of a file whose record was
 * an error (!io->known): no document was indexed under its id.  An
 * archive's messages have ids of their own: their deletions stay. */
bool emit_change_dropped(const struct emit_options *o, const struct record_io *io);

/* The fields r's JSON record has keys for, at most (each is left out when
 * the record has no value for it): the selection, minus what the options
 * turn off, minus the mail fields when r has no message.  In enum order;
 * the Python module's dicts walk the same set (python/). */
uint64_t emit_record_fields(const struct emit_options *o, const struct record *r);

/* The string of a string field of m (message_id, in_reply_to, subject,
 * list_id, content_type, text), and the list of an address field (from,
 * sender, reply_to, to, cc, bcc): one selection for every format. */
struct str emit_message_str(const struct mail_message *m, enum emit_field f);
const struct mail_addr_list *emit_message_addrs(const struct mail_message *m, enum emit_field f);
/* Their case labels, for the field switches of every format (the Python
 * module's included), so that each lists the same fields. */
#define EMIT_CASE_MESSAGE_STR                                           \
	case EMIT_F_MESSAGE_ID: case EMIT_F_IN_REPLY_TO: case EMIT_F_SUBJECT: \
	case EMIT_F_LIST_ID: case EMIT_F_CONTENT_TYPE: case EMIT_F_TEXT
#define EMIT_CASE_MESSAGE_ADDRS                                         \
	case EMIT_F_FROM: case EMIT_F_SENDER: case EMIT_F_REPLY_TO:     \
	case EMIT_F_TO: case EMIT_F_CC: case EMIT_F_BCC

/* r's message when it is mail, else NULL. */
const struct mail_message *emit_record_message(const struct record *r);

/* Why r is an error record (RECORD_NONE: it is not), the parser's
 * not-mail included. */
enum record_reason emit_record_reason(const struct record *r);
/* The record's thread_id before a run joins threads (pipeline/threads.c):
 * its References root's, else its own id. */
uint64_t emit_record_thread_id(const struct record *r);

/* The members of r's "error" object: the reason's name, the positive
 * errno (0: none), its symbolic name (NULL: none, or unknown here, when
 * the number is written as a string) and the message. */
void emit_record_error(const struct record *r, const char **reason, int *err,
                       const char **name, const char **msg);

/* Appends TSV's header line (the column names, tab-separated, '\n').
 * 0 or -errno with out unchanged. */
int emit_tsv_header(const struct emit_options *o, struct dynbuf *out);

/* Appends p[0..n) for a terminal: TSV's escaping (tab, newline, CR and
 * backslash as \t \n \r \\, other control bytes and invalid UTF-8 as
 * \xHH), plus DEL and the C1 controls as \xHH, so that a file name cannot
 * move the cursor, recolour the terminal or forge a line.  0 or -errno. */
int emit_escape_terminal(struct dynbuf *b, const char *p, size_t n);

#endif
