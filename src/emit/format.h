/* SPDX-License-Identifier: MIT */
/* What the format writers (jsonl.c, esbulk.c, tsv.c) share with the
 * dispatch and the record walk of emit.c.  Internal to src/emit/: the
 * emitter's interface is emit.h. */
#ifndef INGEST_EMIT_FORMAT_H
#define INGEST_EMIT_FORMAT_H

#include "emit/emit.h"

#define BIT(f) EMIT_FIELD_BIT(EMIT_F_##f)

/* Fields that come from the walk and the reader; the rest need a parsed
 * message (detected_type needs one too, but also a non-mail one). */
#define EMIT_IO_FIELDS (BIT(PATH) | BIT(ROOT) | BIT(SIZE) | BIT(MTIME) | \
	BIT(FOLDER) | BIT(SUBDIR) | BIT(FLAGS) | BIT(OFFSET) | BIT(LENGTH) | \
	BIT(NOTES) | BIT(ERROR) | BIT(ID) | BIT(TAGS))

extern const char *const emit_names[EMIT_F__COUNT];
extern const unsigned char emit_name_len[EMIT_F__COUNT];

/* What one emit_record() call writes from, and to. */
struct emit_ctx {
	const struct record *rec;
	const struct record_io *io;
	const struct mail_message *m;   /* the message, NULL unless it is mail */
	const struct mail_message *raw; /* r->mail as given (not-mail too) */
	enum record_reason reason;      /* effective: not-mail from the parser too */
	struct dynbuf *b;
};

/* The fields actually written: the selection minus what the options turn
 * off, so that every format (and TSV's header) agrees. */
uint64_t emit_active(const struct emit_options *o);

/* The record's thread_id: its root's, a thread of one without one. */
uint64_t emit_thread_id(const struct emit_ctx *c);

/* jsonl.c: one JSON object, no newline; --state's change records (JSONL
 * and es-bulk). */
int emit_json_object(const struct emit_options *o, const struct emit_ctx *c);
int emit_change(const struct emit_options *o, const struct record *rec, struct dynbuf *b);

/* esbulk.c: the _bulk action line before a document; a change record's
 * action (delete, or update), and for an update the start of its "doc"
 * up to its path member, which emit_change() goes on from. */
int emit_es_action(const struct emit_options *o, const struct record *rec,
                   const struct emit_ctx *c);
int emit_es_change(const struct emit_options *o, const struct record *rec, struct dynbuf *b);
/* An error record without --es-errors, which is no document: nothing, or
 * with --state, when the last run may have indexed the file's id as a
 * message (record_io.known: a message rewritten as something that is no
 * mail), a delete of that id, whose document a clean run would not have. */
int emit_es_error(const struct emit_options *o, const struct record *rec, struct dynbuf *b);

/* tsv.c: one TSV line, newline included. */
int emit_tsv_line(const struct emit_options *o, const struct emit_ctx *c);

#endif
