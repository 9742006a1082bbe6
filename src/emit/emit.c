/* SPDX-License-Identifier: MIT */
/* The emitter: struct record → one output record (see emit.h).
 *
 * Shape.  A JSON record is its selected fields in enum emit_field order,
 * each written as `,"key":value` only when the record has a value for it
 * (sparse: no message → no mail keys, not Maildir → no folder/subdir/flags,
 * not mbox → no offset/length).  The first comma is then overwritten by the
 * `{`, so no per-field "am I first" test is needed.  Inside lists the
 * objects keep a fixed shape and use null for what is missing (an address
 * without a display name, an attachment without a filename), so consumers
 * can index them without probing.  TSV writes every column of `order`,
 * empty where a value is absent.
 *
 * Failure.  emit_record() notes out->len on entry and truncates back to it
 * on any error, so a record is written whole or not at all; the output of a
 * failed call is never observable.
 *
 * Threads.  Called concurrently by every worker, each with its own dynbuf.
 * Everything here reads the shared options and the record and writes only to
 * that dynbuf: no globals written, no syscalls (strerrorname_np and
 * strerrordesc_np return static strings and never touch errno or locale
 * files, unlike strerror_l), no printf. */
#include "core/hash.h"
#include "emit/emit.h"
#include "mail/mail.h"
#include "emit/json.h"
#include "io/maildir.h"

#include <errno.h>
#include <string.h>

#define BIT(f) EMIT_FIELD_BIT(EMIT_F_##f)

/* Fields that come from the walk and the reader; the rest need a parsed
 * message (detected_type needs one too, but also a non-mail one). */
#define EMIT_IO_FIELDS (BIT(PATH) | BIT(ROOT) | BIT(SIZE) | BIT(MTIME) | \
	BIT(FOLDER) | BIT(SUBDIR) | BIT(FLAGS) | BIT(OFFSET) | BIT(LENGTH) | \
	BIT(NOTES) | BIT(ERROR) | BIT(ID) | BIT(TAGS))

static const char *const emit_names[EMIT_F__COUNT] = {
#define EMIT_FIELD_NAME(id, name) [EMIT_F_##id] = name,
	EMIT_FIELDS(EMIT_FIELD_NAME)
#undef EMIT_FIELD_NAME
};

static const unsigned char emit_name_len[EMIT_F__COUNT] = {
#define EMIT_FIELD_LEN(id, name) [EMIT_F_##id] = sizeof(name) - 1,
	EMIT_FIELDS(EMIT_FIELD_LEN)
#undef EMIT_FIELD_LEN
};

/* `,"key":` for every field, so that a key costs one memcpy. */
static const struct { const char *s; unsigned char n; } emit_json_keys[EMIT_F__COUNT] = {
#define EMIT_FIELD_KEY(id, name) [EMIT_F_##id] = { ",\"" name "\":", sizeof(",\"" name "\":") - 1 },
	EMIT_FIELDS(EMIT_FIELD_KEY)
#undef EMIT_FIELD_KEY
};

/* ---- options ---------------------------------------------------------- */

void emit_options_init(struct emit_options *o)
{
	memset(o, 0, sizeof(*o));
	o->format = EMIT_JSONL;
	o->fields = EMIT_FIELDS_ALL;
	for (size_t i = 0; i < EMIT_F__COUNT; i++)
		o->order[i] = (uint8_t)i;
	o->n_order = EMIT_F__COUNT;
}

const char *emit_field_name(enum emit_field f)
{
	if ((unsigned)f >= EMIT_F__COUNT)
		return NULL;
	return emit_names[f];
}

int emit_field_lookup(const char *name, size_t n)
{
	for (size_t i = 0; i < EMIT_F__COUNT; i++)
		if (emit_name_len[i] == n && memcmp(emit_names[i], name, n) == 0)
			return (int)i;
	return -EINVAL;
}

int emit_fields_parse(struct emit_options *o, const char *csv,
                      size_t *bad_off, size_t *bad_len)
{
	uint64_t fields = 0;
	uint8_t order[EMIT_F__COUNT];
	size_t n_order = 0;
	const char *s = csv;

	for (;;) {
		const char *e = strchr(s, ',');
		if (!e)
			e = s + strlen(s);
		const char *a = s, *z = e;
		while (a < z && (*a == ' ' || *a == '\t'))
			a++;
		while (z > a && (z[-1] == ' ' || z[-1] == '\t'))
			z--;
		int f = emit_field_lookup(a, (size_t)(z - a));
		if (f < 0) {
			if (bad_off)
				*bad_off = (size_t)(a - csv);
			if (bad_len)
				*bad_len = (size_t)(z - a);
			return -EINVAL;
		}
		if (!(fields & EMIT_FIELD_BIT(f))) {
			fields |= EMIT_FIELD_BIT(f);
			order[n_order++] = (uint8_t)f;
		}
		if (!*e)
			break;
		s = e + 1;
	}
	o->fields = fields;
	memcpy(o->order, order, n_order);
	o->n_order = n_order;
	return 0;
}

int emit_format_parse(const char *s, enum emit_format *f)
{
	if (strcmp(s, "jsonl") == 0)
		*f = EMIT_JSONL;
	else if (strcmp(s, "es-bulk") == 0)
		*f = EMIT_ES_BULK;
	else if (strcmp(s, "tsv") == 0)
		*f = EMIT_TSV;
	else
		return -EINVAL;
	return 0;
}

/* The fields actually written: the selection minus what the options turn
 * off, so that every format (and TSV's header) agrees. */
static uint64_t emit_active(const struct emit_options *o)
{
	uint64_t f = o->fields & EMIT_FIELDS_ALL;
	if (o->no_text)
		f &= ~(BIT(TEXT) | BIT(TEXT_TRUNCATED));
	if (!o->headers)
		f &= ~BIT(HEADERS);
	return f;
}

/* ---- what a record says ---------------------------------------------- */

struct emit_ctx {
	const struct record *rec;
	const struct record_io *io;
	const struct mail_message *m;   /* the message, NULL unless it is mail */
	const struct mail_message *raw; /* r->mail as given (not-mail too) */
	enum record_reason reason;      /* effective: not-mail from the parser too */
	struct dynbuf *b;
};

static void emit_ctx_init(struct emit_ctx *c, const struct record *r,
                          struct dynbuf *b)
{
	c->rec = r;
	c->io = &r->io;
	c->raw = r->mail;
	c->m = emit_record_message(r);
	c->reason = emit_record_reason(r);
	c->b = b;
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
static const char *emit_errno_name(int e) { return strerrorname_np(e); }
static const char *emit_errno_desc(int e) { return strerrordesc_np(e); }
#else
/* Elsewhere (musl) strerror returns static strings and is thread-safe; the
 * symbolic name is not available, so the caller writes the number. */
static const char *emit_errno_name(int e) { (void)e; return NULL; }
static const char *emit_errno_desc(int e) { return strerror(e); }
#endif

enum record_reason emit_record_reason(const struct record *r)
{
	if (r->io.reason == RECORD_NONE && r->mail && !r->mail->is_mail)
		return RECORD_NOT_MAIL;
	return r->io.reason;
}

const struct mail_message *emit_record_message(const struct record *r)
{
	return r->mail && r->mail->is_mail ? r->mail : NULL;
}

void emit_record_error(const struct record *r, const char **reason, int *err,
                       const char **name, const char **msg)
{
	enum record_reason why = emit_record_reason(r);
	*reason = record_reason_name(why);
	if (!*reason)
		*reason = "internal";   /* an out-of-range reason is our bug */
	*err = r->io.err < 0 ? -r->io.err : r->io.err;
	*name = *err ? emit_errno_name(*err) : NULL;
	*msg = r->io.message;
	if (!*msg && *err)
		*msg = emit_errno_desc(*err);
	if (!*msg)
		*msg = record_reason_text(why);
}

struct str emit_message_str(const struct mail_message *m, enum emit_field f)
{
	return f == EMIT_F_MESSAGE_ID ? m->message_id
	     : f == EMIT_F_IN_REPLY_TO ? m->in_reply_to
	     : f == EMIT_F_SUBJECT ? m->subject
	     : f == EMIT_F_LIST_ID ? m->list_id
	     : f == EMIT_F_CONTENT_TYPE ? m->content_type
	     : m->text;
}

const struct mail_addr_list *emit_message_addrs(const struct mail_message *m, enum emit_field f)
{
	return f == EMIT_F_FROM ? &m->from : f == EMIT_F_SENDER ? &m->sender
	     : f == EMIT_F_REPLY_TO ? &m->reply_to : f == EMIT_F_TO ? &m->to
	     : f == EMIT_F_CC ? &m->cc : &m->bcc;
}

uint64_t emit_record_fields(const struct emit_options *o, const struct record *r)
{
	uint64_t act = emit_active(o);
	if (!emit_record_message(r))
		act &= EMIT_IO_FIELDS | BIT(DETECTED_TYPE);
	return act;
}

/* ---- JSON ------------------------------------------------------------- */

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
		    (r = json_put_u64(b, a->size)) < 0)
			break;
		r = json_put_lit(b, "}");
	}
	return r < 0 ? r : json_put_lit(b, "]");
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
		if (!name)
			continue;
		if (!first && (r = json_put_lit(b, ",")) < 0)
			break;
		first = false;
		r = json_put_cstr(b, name);
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

static int emit_json_hex(struct dynbuf *b, uint64_t id)
{
	char hex[19];
	record_id_hex(id, hex + 1);
	hex[0] = hex[17] = '"';
	return json_put_raw(b, hex, 18);
}

/* The words of the flags the Maildir specification defines, in the order
 * the letters are written (the specification keeps them sorted). */
static int emit_json_tags(struct dynbuf *b, struct str flags)
{
	int r = json_put_lit(b, "[");
	bool first = true;
	for (size_t i = 0; r == 0 && i < flags.n; i++) {
		const char *t = maildir_flag_tag(flags.p[i]);
		if (!t)
			continue;
		if (!first && (r = json_put_lit(b, ",")) < 0)
			break;
		first = false;
		r = json_put_cstr(b, t);
	}
	return r < 0 ? r : json_put_lit(b, "]");
}

/* A thread's identity: the first msg-id of References, else In-Reply-To,
 * else the message's own Message-ID; 0 when it has none of them.  Within a
 * run, pipeline/threads.c may join it to a thread met earlier. */
static uint64_t emit_thread_root(const struct mail_message *m)
{
	struct str root = m->n_references && m->references[0].n ? m->references[0]
	                     : m->in_reply_to.n ? m->in_reply_to : m->message_id;
	return record_thread_key(root);
}

/* A thread of one when the message names no msg-id at all. */
static uint64_t emit_thread_id(const struct emit_ctx *c)
{
	uint64_t t = emit_thread_root(c->m);
	return t ? t : record_id(c->io);
}

uint64_t emit_record_thread_id(const struct record *r)
{
	const struct mail_message *m = emit_record_message(r);
	uint64_t t = m ? emit_thread_root(m) : 0;
	return t ? t : record_id(&r->io);
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
		         (r = json_put_u64(b, (uint64_t)err)) == 0)
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
		return json_put_u64(b, io->size);
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
		return json_put_u64(b, f == EMIT_F_OFFSET ? io->offset : io->length);
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
	case EMIT_F_MESSAGE_ID:
	case EMIT_F_IN_REPLY_TO:
	case EMIT_F_SUBJECT:
	case EMIT_F_LIST_ID:
	case EMIT_F_CONTENT_TYPE:
	case EMIT_F_TEXT: {
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
	case EMIT_F_FROM:
	case EMIT_F_SENDER:
	case EMIT_F_REPLY_TO:
	case EMIT_F_TO:
	case EMIT_F_CC:
	case EMIT_F_BCC: {
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
		return json_put_u64(b, m->parts);
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
		return emit_json_hex(b, record_id(io));
	case EMIT_F_THREAD_ID:
		if ((r = emit_key(b, f)) < 0)
			return r;
		return emit_json_hex(b, emit_thread_id(c));
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
static int emit_json_object(const struct emit_options *o, const struct emit_ctx *c)
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

/* ---- es-bulk ---------------------------------------------------------- */

static int emit_es_action(const struct emit_options *o, const struct record *rec,
                          const struct emit_ctx *c)
{
	struct dynbuf *b = c->b;
	int r;

	if ((r = json_put_lit(b, "{\"index\":{")) < 0)
		return r;
	if (o->es_index) {
		if ((r = json_put_lit(b, "\"_index\":")) < 0 ||
		    (r = json_put_cstr(b, o->es_index)) < 0 ||
		    (r = json_put_lit(b, ",")) < 0)
			return r;
	}
	/* The record's id, never its Message-ID: that one is the sender's to
	 * choose, and two copies of a message are two documents. */
	if ((r = json_put_lit(b, "\"_id\":")) < 0 || (r = emit_json_hex(b, record_id(&rec->io))) < 0)
		return r;
	return json_put_lit(b, "}}\n");
}

/* ---- TSV -------------------------------------------------------------- */

/* 0: copy; 1: escape (C0 controls and '\\'); 2: first byte of non-ASCII. */
static const unsigned char emit_tsv_class[256] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	['\\'] = 1,
	[0x80 ... 0xFF] = 2,
};

static inline void emit_tsv_hexbyte(struct dynbuf *b, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char *o = b->p + b->len;
	o[0] = '\\';
	o[1] = 'x';
	o[2] = hex[c >> 4];
	o[3] = hex[c & 15];
	b->len += 4;
}

/* A TSV value: tab, newline, CR and backslash as \t \n \r \\; any other
 * byte that would be a control character or invalid UTF-8 as \xHH (the
 * convention of PostgreSQL's COPY text format), so the column is valid
 * UTF-8, one line, and still lossless. */
static int emit_tsv_str(struct dynbuf *b, const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	int r;
	if ((r = json_room(b, n)) < 0)
		return r;
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && emit_tsv_class[s[j]] == 0)
			j++;
		if (j > i) {
			if ((r = json_room(b, j - i)) < 0)
				return r;
			memcpy(b->p + b->len, s + i, j - i);
			b->len += j - i;
			i = j;
			if (i == n)
				break;
		}
		unsigned char c = s[i];
		if (c < 0x80) {
			if ((r = json_room(b, 4)) < 0)
				return r;
			char e = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r'
			       : c == '\\' ? '\\' : 0;
			if (e) {
				b->p[b->len++] = '\\';
				b->p[b->len++] = e;
			} else
				emit_tsv_hexbyte(b, c);
			i++;
			continue;
		}
		int k = json_utf8_seq(s + i, n - i);
		size_t len = (size_t)(k > 0 ? k : -k);
		if ((r = json_room(b, k > 0 ? len : 4 * len)) < 0)
			return r;
		if (k > 0) {
			memcpy(b->p + b->len, s + i, len);
			b->len += len;
		} else {
			for (size_t t = 0; t < len; t++)
				emit_tsv_hexbyte(b, s[i + t]);
		}
		i += len;
	}
	return 0;
}

int emit_escape_terminal(struct dynbuf *b, const char *p, size_t n)
{
	/* TSV's escaping, and besides DEL and the C1 controls (U+0080 to
	 * U+009F, valid UTF-8 that some terminals take for ESC sequences) */
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, from = 0;
	int r = 0;
	while (i < n && r == 0) {
		size_t k = s[i] == 0x7f ? 1 : s[i] == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f ? 2 : 0;
		if (!k) {
			i++;
			continue;
		}
		if ((r = emit_tsv_str(b, p + from, i - from)) == 0 && (r = json_room(b, 4 * k)) == 0)
			for (size_t t = 0; t < k; t++)
				emit_tsv_hexbyte(b, s[i + t]);
		i += k;
		from = i;
	}
	return r ? r : emit_tsv_str(b, p + from, n - from);
}

static inline int emit_tsv_mstr(struct dynbuf *b, struct str s)
{
	return emit_tsv_str(b, s.p, s.n);
}

static inline int emit_tsv_cstr(struct dynbuf *b, const char *s)
{
	return emit_tsv_str(b, s, strlen(s));
}

/* A display name, quoted RFC 5322-style when it holds a character that would
 * make the ", "-joined list ambiguous. */
static int emit_tsv_name(struct dynbuf *b, struct str s)
{
	bool quote = false;
	for (size_t i = 0; i < s.n && !quote; i++)
		quote = memchr(",;:<>\"\\", s.p[i], 7) != NULL;
	if (!quote)
		return emit_tsv_mstr(b, s);
	int r = json_put_lit(b, "\"");
	size_t i = 0, j = 0;
	for (; r == 0 && j < s.n; j++) {
		if (s.p[j] != '"' && s.p[j] != '\\')
			continue;
		/* `\"` and `\\` inside the quotes, then TSV doubles the '\\'. */
		if ((r = emit_tsv_str(b, s.p + i, j - i)) == 0 &&
		    (r = json_put_lit(b, "\\\\")) == 0)
			r = emit_tsv_str(b, s.p + j, 1);
		i = j + 1;
	}
	if (r == 0 && (r = emit_tsv_str(b, s.p + i, s.n - i)) == 0)
		r = json_put_lit(b, "\"");
	return r;
}

static int emit_tsv_mailbox(struct dynbuf *b, const struct mail_addr *a)
{
	int r;
	if (!a->name.p || !a->name.n)
		return emit_tsv_mstr(b, a->address);
	if ((r = emit_tsv_name(b, a->name)) < 0 || (r = json_put_lit(b, " <")) < 0 ||
	    (r = emit_tsv_mstr(b, a->address)) < 0)
		return r;
	return json_put_lit(b, ">");
}

static int emit_tsv_addrs(struct dynbuf *b, const struct mail_addr_list *l)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < l->n; i++) {
		const struct mail_addr *a = &l->v[i];
		if (i && (r = json_put_lit(b, ", ")) < 0)
			break;
		if (!a->is_group) {
			r = emit_tsv_mailbox(b, a);
			continue;
		}
		if ((r = emit_tsv_name(b, a->name)) < 0 || (r = json_put_lit(b, ":")) < 0)
			break;
		for (size_t j = 0; r == 0 && j < a->n_members; j++) {
			r = j ? json_put_lit(b, ", ") : json_put_lit(b, " ");
			if (r == 0)
				r = emit_tsv_mailbox(b, &a->members[j]);
		}
		if (r == 0)
			r = json_put_lit(b, ";");
	}
	return r;
}

static int emit_tsv_error(const struct emit_ctx *c)
{
	struct dynbuf *b = c->b;
	const char *reason, *name, *msg;
	int err, r;

	emit_record_error(c->rec, &reason, &err, &name, &msg);
	if ((r = emit_tsv_cstr(b, reason)) < 0 || (r = json_put_lit(b, ": ")) < 0)
		return r;
	if (err) {
		if (name)
			r = emit_tsv_cstr(b, name);
		else
			r = json_put_u64(b, (uint64_t)err);
		if (r < 0 || (r = json_put_lit(b, ": ")) < 0)
			return r;
	}
	return emit_tsv_cstr(b, msg);
}

/* Writes field f's value, or nothing when absent. */
static int emit_tsv_field(const struct emit_ctx *c, enum emit_field f)
{
	const struct record_io *io = c->io;
	const struct mail_message *m = c->m;
	struct dynbuf *b = c->b;
	int r = 0;

	if (!m && !(EMIT_FIELD_BIT(f) & (EMIT_IO_FIELDS | BIT(DETECTED_TYPE))))
		return 0;
	switch (f) {
	case EMIT_F_PATH:
		return emit_tsv_mstr(b, io->path);
	case EMIT_F_ROOT:
		return emit_tsv_mstr(b, io->root);
	case EMIT_F_SIZE:
		return io->have_stat ? json_put_u64(b, io->size) : 0;
	case EMIT_F_MTIME:
		return io->have_stat ? json_put_iso8601(b, io->mtime_sec) : 0;
	case EMIT_F_FOLDER:
		return io->maildir ? emit_tsv_mstr(b, io->folder) : 0;
	case EMIT_F_SUBDIR:
		return io->maildir ? emit_tsv_mstr(b, io->subdir) : 0;
	case EMIT_F_FLAGS:
		return io->maildir ? emit_tsv_mstr(b, io->flags) : 0;
	case EMIT_F_OFFSET:
		return io->in_mbox ? json_put_u64(b, io->offset) : 0;
	case EMIT_F_LENGTH:
		return io->in_mbox ? json_put_u64(b, io->length) : 0;
	case EMIT_F_NOTES:
		if ((io->notes & RECORD_GREW) && (io->notes & RECORD_SHRANK))
			return json_put_lit(b, "grew, shrank");
		if (io->notes & RECORD_GREW)
			return json_put_lit(b, "grew");
		if (io->notes & RECORD_SHRANK)
			return json_put_lit(b, "shrank");
		return 0;
	case EMIT_F_ERROR:
		return c->reason == RECORD_NONE ? 0 : emit_tsv_error(c);
	case EMIT_F_MESSAGE_ID:
		return emit_tsv_mstr(b, m->message_id);
	case EMIT_F_IN_REPLY_TO:
		return emit_tsv_mstr(b, m->in_reply_to);
	case EMIT_F_REFERENCES:
		for (size_t i = 0; r == 0 && i < m->n_references; i++) {
			if (i && (r = json_put_lit(b, ", ")) < 0)
				break;
			r = emit_tsv_mstr(b, m->references[i]);
		}
		return r;
	case EMIT_F_DATE:
		return m->has_date ? json_put_iso8601(b, m->date) : 0;
	case EMIT_F_DATE_RAW:
		return m->has_date ? 0 : emit_tsv_mstr(b, m->date_raw);
	case EMIT_F_FROM:     return emit_tsv_addrs(b, &m->from);
	case EMIT_F_SENDER:   return emit_tsv_addrs(b, &m->sender);
	case EMIT_F_REPLY_TO: return emit_tsv_addrs(b, &m->reply_to);
	case EMIT_F_TO:       return emit_tsv_addrs(b, &m->to);
	case EMIT_F_CC:       return emit_tsv_addrs(b, &m->cc);
	case EMIT_F_BCC:      return emit_tsv_addrs(b, &m->bcc);
	case EMIT_F_SUBJECT:
		return emit_tsv_mstr(b, m->subject);
	case EMIT_F_LIST_ID:
		return emit_tsv_mstr(b, m->list_id);
	case EMIT_F_CONTENT_TYPE:
		return emit_tsv_mstr(b, m->content_type);
	case EMIT_F_TEXT:
		return emit_tsv_mstr(b, m->text);
	case EMIT_F_TEXT_TRUNCATED:
		return m->text_truncated ? json_put_lit(b, "true") : json_put_lit(b, "false");
	case EMIT_F_ATTACHMENTS:
		/* Names; an attachment without one is shown by its type. */
		for (size_t i = 0; r == 0 && i < m->n_attachments; i++) {
			const struct mail_attachment *a = &m->attachments[i];
			if (i && (r = json_put_lit(b, ", ")) < 0)
				break;
			r = emit_tsv_mstr(b, a->filename.p ? a->filename : a->content_type);
		}
		return r;
	case EMIT_F_PARTS:
		return json_put_u64(b, m->parts);
	case EMIT_F_WARNINGS: {
		uint64_t set = m->warnings;
		bool first = true;
		while (r == 0 && set) {
			enum mail_warning w = (enum mail_warning)__builtin_ctzll(set);
			set &= set - 1;
			const char *name = w < MAIL_W__COUNT ? mail_warning_name(w) : NULL;
			if (!name)
				continue;
			if (!first && (r = json_put_lit(b, ", ")) < 0)
				break;
			first = false;
			r = emit_tsv_cstr(b, name);
		}
		return r;
	}
	case EMIT_F_DETECTED_TYPE:
		return c->raw ? emit_tsv_mstr(b, c->raw->detected_type) : 0;
	case EMIT_F_HEADERS:
		/* One "Name: value" per header, separated by newlines (which
		 * TSV writes as \n): values are full of ", ". */
		for (size_t i = 0; r == 0 && i < m->n_headers; i++) {
			if ((i && (r = json_put_lit(b, "\\n")) < 0) ||
			    (r = emit_tsv_mstr(b, m->headers[i].name)) < 0 ||
			    (r = json_put_lit(b, ": ")) < 0)
				break;
			r = emit_tsv_mstr(b, m->headers[i].value);
		}
		return r;
	case EMIT_F_ID:
	case EMIT_F_THREAD_ID: {
		char hex[17];
		record_id_hex(f == EMIT_F_ID ? record_id(io) : emit_thread_id(c), hex);
		return json_put_raw(b, hex, 16);
	}
	case EMIT_F_TAGS: {
		bool first = true;
		for (size_t i = 0; r == 0 && io->maildir && i < io->flags.n; i++) {
			const char *t = maildir_flag_tag(io->flags.p[i]);
			if (!t)
				continue;
			if (!first && (r = json_put_lit(b, ", ")) < 0)
				break;
			first = false;
			r = json_put_raw(b, t, strlen(t));
		}
		return r;
	}
	case EMIT_F__COUNT:
		break;
	}
	return 0;
}

static int emit_tsv_line(const struct emit_options *o, const struct emit_ctx *c)
{
	uint64_t act = emit_active(o);
	bool first = true;
	int r;
	for (size_t i = 0; i < o->n_order && i < EMIT_F__COUNT; i++) {
		enum emit_field f = (enum emit_field)o->order[i];
		if (f >= EMIT_F__COUNT || !(act & EMIT_FIELD_BIT(f)))
			continue;
		if (!first && (r = json_put_lit(c->b, "\t")) < 0)
			return r;
		first = false;
		if ((r = emit_tsv_field(c, f)) < 0)
			return r;
	}
	return json_put_lit(c->b, "\n");
}

int emit_tsv_header(const struct emit_options *o, struct dynbuf *out)
{
	size_t start = out->len;
	uint64_t act = emit_active(o);
	bool first = true;
	int r = 0;
	for (size_t i = 0; r == 0 && i < o->n_order && i < EMIT_F__COUNT; i++) {
		enum emit_field f = (enum emit_field)o->order[i];
		if (f >= EMIT_F__COUNT || !(act & EMIT_FIELD_BIT(f)))
			continue;
		if (!first && (r = json_put_lit(out, "\t")) < 0)
			break;
		first = false;
		r = json_put_raw(out, emit_names[f], emit_name_len[f]);
	}
	if (r == 0)
		r = json_put_lit(out, "\n");
	if (r < 0)
		out->len = start;
	return r;
}

/* ---- the entry point -------------------------------------------------- */

/* --state's change records.  JSONL:
 *   {"deleted":"cur/x:2,S","root":"/home/u/Maildir","id":"..."}
 *   {"renamed":{"from":"new/x","to":"cur/x:2,S"},"root":...,"folder":...,"subdir":...,"flags":...,"tags":...,"id":...}
 * es-bulk: a delete action, or an update of the renamed document's location,
 * under the id the message was indexed with (a rename keeps it). */
static int emit_change(const struct emit_options *o, const struct record *rec, struct dynbuf *b)
{
	const struct record_io *io = &rec->io;
	int r = 0;
	if (o->format == EMIT_ES_BULK) {
		r = io->kind == RECORD_DELETED ? json_put_lit(b, "{\"delete\":{") : json_put_lit(b, "{\"update\":{");
		if (r == 0 && o->es_index && (r = json_put_lit(b, "\"_index\":")) == 0 &&
		    (r = json_put_cstr(b, o->es_index)) == 0)
			r = json_put_lit(b, ",");
		if (r == 0 && (r = json_put_lit(b, "\"_id\":")) == 0)
			r = emit_json_hex(b, record_id(io));
		if (r == 0)
			r = json_put_lit(b, "}}\n");
		if (r < 0 || io->kind == RECORD_DELETED)
			return r;
		r = json_put_lit(b, "{\"doc\":{");
		if (r == 0)
			r = json_put_bytes_member(b, "path", io->path.p, io->path.n);
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
		r = json_put_u64(b, io->offset);
	if (r == 0 && o->format != EMIT_ES_BULK && (r = json_put_lit(b, ",\"id\":")) == 0)
		r = emit_json_hex(b, record_id(io));
	if (r == 0)
		r = o->format == EMIT_ES_BULK ? json_put_lit(b, "}}\n") : json_put_lit(b, "}\n");
	return r;
}

int emit_record(const struct emit_options *o, const struct record *rec,
                struct dynbuf *out)
{
	size_t start = out->len;
	struct emit_ctx c;
	int r;

	if (rec->io.kind != RECORD_MESSAGE) {
		if ((r = o->format == EMIT_TSV ? -EINVAL : emit_change(o, rec, out)) < 0)
			out->len = start;
		return r;
	}
	emit_ctx_init(&c, rec, out);
	switch (o->format) {
	case EMIT_ES_BULK:
		/* An error record is not a document of the index's shape (no
		 * message, an error object): left out unless asked for, and
		 * still counted by --stats and the error summary. */
		if (c.reason != RECORD_NONE && !o->es_errors)
			return 0;
		if ((r = emit_es_action(o, rec, &c)) < 0)
			break;
		__attribute__((fallthrough));
	case EMIT_JSONL:
		if ((r = emit_json_object(o, &c)) == 0)
			r = json_put_lit(out, "\n");
		break;
	case EMIT_TSV:
		r = emit_tsv_line(o, &c);
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r < 0)
		out->len = start;
	return r;
}
