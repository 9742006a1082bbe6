/* SPDX-License-Identifier: MIT */
/* JSON Lines: a record as one JSON object (see emit.c for its shape), and
 * --state's change records, which es-bulk writes as JSON too. */
#include "emit/format.h"
#include "emit/json.h"
#include "io/maildir.h"
#include "mail/mail.h"

#include <string.h>

/* `,"key":` for every field, so that a key costs one memcpy. */
static const struct { const char *s; unsigned char n; } emit_json_keys[EMIT_F__COUNT] = {
#define EMIT_FIELD_KEY(id, name) [EMIT_F_##id] = { ",\"" name "\":", sizeof(",\"" name "\":") - 1 },
	EMIT_FIELDS(EMIT_FIELD_KEY)
#undef EMIT_FIELD_KEY
};

/* The same keys zero-padded to a fixed size: a copy of a length known
 * only at run time became `rep movsq`, whose start-up cost is more than a
 * key's worth of bytes.  Two 16-byte stores and a length are cheaper. */
#define EMIT_KEY_PAD 32
static const char emit_json_keys_pad[EMIT_F__COUNT][EMIT_KEY_PAD] = {
#define EMIT_FIELD_KEY_PAD(id, name) [EMIT_F_##id] = ",\"" name "\":",
	EMIT_FIELDS(EMIT_FIELD_KEY_PAD)
#undef EMIT_FIELD_KEY_PAD
};

static inline int emit_key(struct dynbuf *b, enum emit_field f)
{
	/* Near the buffer's cap, the exact copy: the padding must not make
	 * a record that fits fail. */
	if (b->cap - b->len <= EMIT_KEY_PAD)
		return json_put_raw(b, emit_json_keys[f].s, emit_json_keys[f].n);
	memcpy(b->p + b->len, emit_json_keys_pad[f], EMIT_KEY_PAD);
	b->len += emit_json_keys[f].n;
	return 0;
}

static inline int emit_json_str(struct dynbuf *b, struct str s)
{
	return json_put_str(b, s.p, s.n);
}

/* A string, or null when absent. */
static inline int emit_json_nstr(struct dynbuf *b, struct str s)
{
	if (!s.p)
		return json_put_lit(b, "null");
	return json_put_str(b, s.p, s.n);
}

static int emit_json_mailbox(struct dynbuf *b, const struct mail_addr *a)
{
	int r;
	if ((r = json_put_lit(b, "{\"name\":")) < 0 ||
	    (r = emit_json_nstr(b, a->name)) < 0 ||
	    (r = json_put_lit(b, ",\"address\":")) < 0 ||
	    (r = emit_json_str(b, a->address)) < 0)
		return r;
	return json_put_lit(b, "}");
}

static int emit_json_addrs(struct dynbuf *b, const struct mail_addr_list *l)
{
	int r = json_put_lit(b, "[");
	for (size_t i = 0; r == 0 && i < l->n; i++) {
		const struct mail_addr *a = &l->v[i];
		if (i && (r = json_put_lit(b, ",")) < 0)
			break;
		if (!a->is_group) {
			r = emit_json_mailbox(b, a);
			continue;
		}
		/* RFC 5322 3.4: a group's members are mailboxes, never groups,
		 * so members are written as mailboxes whatever they claim. */
		if ((r = json_put_lit(b, "{\"group\":")) < 0 ||
		    (r = emit_json_str(b, a->name)) < 0 ||
		    (r = json_put_lit(b, ",\"members\":[")) < 0)
			break;
		for (size_t j = 0; r == 0 && j < a->n_members; j++) {
			if (j && (r = json_put_lit(b, ",")) < 0)
				break;
			r = emit_json_mailbox(b, &a->members[j]);
		}
		if (r == 0)
			r = json_put_lit(b, "]}");
	}
	if (r < 0)
		return r;
	return json_put_lit(b, "]");
}

static int emit_json_strs(struct dynbuf *b, const struct str *v, size_t n)
{
	int r = json_put_lit(b, "[");
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (i && (r = json_put_lit(b, ",")) < 0)
			break;
		r = emit_json_str(b, v[i]);
	}
	return r < 0 ? r : json_put_lit(b, "]");
}

static int emit_json_attachments(struct dynbuf *b, const struct mail_message *m)
{
	int r = json_put_lit(b, "[");
	for (size_t i = 0; r == 0 && i < m->n_attachments; i++) {
		const struct mail_attachment *a = &m->attachments[i];
		if ((i && (r = json_put_lit(b, ",")) < 0) ||
		    (r = json_put_lit(b, "{\"filename\":")) < 0 ||
		    (r = emit_json_nstr(b, a->filename)) < 0 ||
		    (r = json_put_lit(b, ",\"content_type\":")) < 0 ||
		    (r = emit_json_nstr(b, a->content_type)) < 0 ||
		    (r = json_put_lit(b, ",\"detected_type\":")) < 0 ||
		    (r = emit_json_nstr(b, a->detected_type)) < 0 ||
		    (r = json_put_lit(b, ",\"disposition\":")) < 0 ||
		    (r = emit_json_nstr(b, a->disposition)) < 0 ||
		    (r = json_put_lit(b, ",\"content_id\":")) < 0 ||
		    (r = emit_json_nstr(b, a->content_id)) < 0 ||
		    (r = json_put_lit(b, ",\"size\":")) < 0 ||
		    (r = dynbuf_put_u64(b, a->size)) < 0)
			break;
		r = json_put_lit(b, "}");
	}
	return r < 0 ? r : json_put_lit(b, "]");
}

/* One name of a JSON list of names (warnings, tags): the comma before
 * all but the first. */
static int emit_json_list_name(struct dynbuf *b, bool *first, const char *name)
{
	int r = *first ? 0 : json_put_lit(b, ",");
	*first = false;
	return r < 0 ? r : json_put_cstr(b, name);
}

static int emit_json_warnings(struct dynbuf *b, uint64_t set)
{
	int r = json_put_lit(b, "[");
	bool first = true;
	set &= MAIL_W__COUNT >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << MAIL_W__COUNT) - 1;
	while (r == 0 && set) {
		enum mail_warning w = (enum mail_warning)__builtin_ctzll(set);
		set &= set - 1;
		const char *name = mail_warning_name(w);
		if (name)
			r = emit_json_list_name(b, &first, name);
	}
	return r < 0 ? r : json_put_lit(b, "]");
}

static int emit_json_headers(struct dynbuf *b, const struct mail_message *m)
{
	int r = json_put_lit(b, "[");
	for (size_t i = 0; r == 0 && i < m->n_headers; i++) {
		if ((i && (r = json_put_lit(b, ",")) < 0) ||
		    (r = json_put_lit(b, "[")) < 0 ||
		    (r = emit_json_str(b, m->headers[i].name)) < 0 ||
		    (r = json_put_lit(b, ",")) < 0 ||
		    (r = emit_json_str(b, m->headers[i].value)) < 0)
			break;
		r = json_put_lit(b, "]");
	}
	return r < 0 ? r : json_put_lit(b, "]");
}

/* The words of the flags the Maildir specification defines, in the order
 * the letters are written (the specification keeps them sorted). */
static int emit_json_tags(struct dynbuf *b, struct str flags)
{
	int r = json_put_lit(b, "[");
	bool first = true;
	for (size_t i = 0; r == 0 && i < flags.n; i++) {
		const char *t = maildir_flag_tag(flags.p[i]);
		if (t)
			r = emit_json_list_name(b, &first, t);
	}
	return r < 0 ? r : json_put_lit(b, "]");
}

static int emit_json_error(const struct emit_ctx *c)
{
	struct dynbuf *b = c->b;
	const char *reason, *name, *msg;
	int err, r;

	emit_record_error(c->rec, &reason, &err, &name, &msg);
	if ((r = json_put_lit(b, "{\"reason\":")) < 0 ||
	    (r = json_put_cstr(b, reason)) < 0)
		return r;
	if (err) {
		if ((r = json_put_lit(b, ",\"errno\":")) < 0)
			return r;
		if (name)
			r = json_put_cstr(b, name);
		else if ((r = json_put_lit(b, "\"")) == 0 &&
		         (r = dynbuf_put_u64(b, (uint64_t)err)) == 0)
			r = json_put_lit(b, "\"");
		if (r < 0)
			return r;
	}
	if ((r = json_put_lit(b, ",\"message\":")) < 0 ||
	    (r = json_put_cstr(b, msg)) < 0)
		return r;
	return json_put_lit(b, "}");
}

/* Writes `,"key":value` for field f when the record has a value; nothing
 * otherwise.  The caller has already dropped fields that need a message
 * when there is none. */
static int emit_json_field(const struct emit_ctx *c, enum emit_field f)
{
	const struct record_io *io = c->io;
	const struct mail_message *m = c->m;
	struct dynbuf *b = c->b;
	int r;

	switch (f) {
	case EMIT_F_PATH:
		if ((r = json_put_lit(b, ",")) < 0)
			return r;
		return json_put_bytes_member(b, "path", io->path.p, io->path.n);
	case EMIT_F_ROOT:
		if (!io->root.p)
			return 0;
		if ((r = json_put_lit(b, ",")) < 0)
			return r;
		return json_put_bytes_member(b, "root", io->root.p, io->root.n);
	case EMIT_F_SIZE:
		if (!io->have_stat)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return dynbuf_put_u64(b, io->size);
	case EMIT_F_MTIME:
		if (!io->have_stat)
			return 0;
		if ((r = emit_key(b, f)) < 0 || (r = json_put_lit(b, "\"")) < 0 ||
		    (r = json_put_iso8601(b, io->mtime_sec)) < 0)
			return r;
		return json_put_lit(b, "\"");
	case EMIT_F_FOLDER:
	case EMIT_F_SUBDIR:
	case EMIT_F_FLAGS: {
		if (!io->maildir)
			return 0;
		struct str s = f == EMIT_F_FOLDER ? io->folder
		                  : f == EMIT_F_SUBDIR ? io->subdir : io->flags;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_str(b, s);   /* NULL is "" (INBOX, no flags) */
	}
	case EMIT_F_OFFSET:
	case EMIT_F_LENGTH:
		if (!io->in_mbox)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return dynbuf_put_u64(b, f == EMIT_F_OFFSET ? io->offset : io->length);
	case EMIT_F_NOTES:
		if (!(io->notes & (RECORD_GREW | RECORD_SHRANK)))
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		if ((io->notes & RECORD_GREW) && (io->notes & RECORD_SHRANK))
			return json_put_lit(b, "[\"grew\",\"shrank\"]");
		if (io->notes & RECORD_GREW)
			return json_put_lit(b, "[\"grew\"]");
		return json_put_lit(b, "[\"shrank\"]");
	case EMIT_F_ERROR:
		if (c->reason == RECORD_NONE)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_error(c);
	EMIT_CASE_MESSAGE_STR: {
		struct str s = emit_message_str(m, f);
		if (!s.p)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		/* text and subject are decoded, hence valid UTF-8 (mail.h); the
		 * others are views of the input as written */
		if (f == EMIT_F_TEXT || f == EMIT_F_SUBJECT)
			return json_put_utf8(b, s.p, s.n);
		return emit_json_str(b, s);
	}
	case EMIT_F_REFERENCES:
		if (!m->n_references)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_strs(b, m->references, m->n_references);
	case EMIT_F_DATE:
		if (m->has_date) {
			if ((r = emit_key(b, f)) < 0 || (r = json_put_lit(b, "\"")) < 0 ||
			    (r = json_put_iso8601(b, m->date)) < 0)
				return r;
			return json_put_lit(b, "\"");
		}
		if (!m->date_raw.p)
			return 0;   /* no Date field at all */
		if ((r = emit_key(b, f)) < 0)
			return r;
		return json_put_lit(b, "null");
	case EMIT_F_DATE_RAW:
		if (m->has_date || !m->date_raw.p)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_str(b, m->date_raw);
	EMIT_CASE_MESSAGE_ADDRS: {
		const struct mail_addr_list *l = emit_message_addrs(m, f);
		if (!l->present)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_addrs(b, l);
	}
	case EMIT_F_TEXT_TRUNCATED:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return m->text_truncated ? json_put_lit(b, "true") : json_put_lit(b, "false");
	case EMIT_F_ATTACHMENTS:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_attachments(b, m);
	case EMIT_F_PARTS:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return dynbuf_put_u64(b, m->parts);
	case EMIT_F_WARNINGS:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_warnings(b, m->warnings);
	case EMIT_F_DETECTED_TYPE:
		if (!c->raw || !c->raw->detected_type.p)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_str(b, c->raw->detected_type);
	case EMIT_F_HEADERS:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_headers(b, m);
	case EMIT_F_ID:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return json_put_id(b, record_id(io));
	case EMIT_F_THREAD_ID:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return json_put_id(b, emit_thread_id(c));
	case EMIT_F_TAGS:
		if (!io->maildir)
			return 0;
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_tags(b, io->flags);
	case EMIT_F__COUNT:
		break;
	}
	return 0;
}

/* One JSON object, no newline. */
int emit_json_object(const struct emit_options *o, const struct emit_ctx *c)
{
	struct dynbuf *b = c->b;
	size_t start = b->len;
	uint64_t act = emit_record_fields(o, c->rec);
	int r;

	while (act) {
		enum emit_field f = (enum emit_field)__builtin_ctzll(act);
		act &= act - 1;
		if ((r = emit_json_field(c, f)) < 0)
			return r;
	}
	if (b->len == start)
		return json_put_lit(b, "{}");
	b->p[start] = '{';   /* every member began with a comma */
	return json_put_lit(b, "}");
}

/* --state's change records.  JSONL:
 *   {"deleted":"cur/x:2,S","root":"Maildir","id":"..."}   (root: as this run spells it)
 *   {"renamed":{"from":"new/x","to":"cur/x:2,S"},"root":...,"folder":...,"subdir":...,"flags":...,"tags":...,"id":...}
 * es-bulk: a delete action, or an update of the renamed document's location,
 * under the id the message was indexed with (a rename keeps it). */
int emit_change(const struct emit_options *o, const struct record *rec, struct dynbuf *b)
{
	const struct record_io *io = &rec->io;
	int r = 0;
	if (o->format == EMIT_ES_BULK) {
		r = emit_es_change(o, rec, b);
		if (r < 0 || io->kind == RECORD_DELETED)
			return r;
	} else if (io->kind == RECORD_DELETED) {
		r = json_put_lit(b, "{");
		if (r == 0)
			r = json_put_bytes_member(b, "deleted", io->path.p, io->path.n);
	} else {
		r = json_put_lit(b, "{\"renamed\":{");
		if (r == 0)
			r = json_put_bytes_member(b, "from", io->old_path.p, io->old_path.n);
		if (r == 0 && (r = json_put_lit(b, ",")) == 0)
			r = json_put_bytes_member(b, "to", io->path.p, io->path.n);
		if (r == 0)
			r = json_put_lit(b, "}");
	}
	if (r == 0 && (r = json_put_lit(b, ",")) == 0)
		r = json_put_bytes_member(b, "root", io->root.p, io->root.n);
	if (r == 0 && io->maildir && io->kind == RECORD_RENAMED) {
		if ((r = json_put_lit(b, ",\"folder\":")) == 0 && (r = emit_json_str(b, io->folder)) == 0 &&
		    (r = json_put_lit(b, ",\"subdir\":")) == 0 && (r = emit_json_str(b, io->subdir)) == 0 &&
		    (r = json_put_lit(b, ",\"flags\":")) == 0)
			r = emit_json_str(b, io->flags);
	}
	if (r == 0 && io->maildir && io->kind == RECORD_RENAMED &&
	    (r = json_put_lit(b, ",\"tags\":")) == 0)
		r = emit_json_tags(b, io->flags);
	if (r == 0 && io->in_mbox && o->format != EMIT_ES_BULK &&
	    (r = json_put_lit(b, ",\"offset\":")) == 0)
		r = dynbuf_put_u64(b, io->offset);
	if (r == 0 && o->format != EMIT_ES_BULK && (r = json_put_lit(b, ",\"id\":")) == 0)
		r = json_put_id(b, record_id(io));
	if (r == 0)
		r = o->format == EMIT_ES_BULK ? json_put_lit(b, "}}\n") : json_put_lit(b, "}\n");
	return r;
}

