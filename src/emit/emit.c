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
 * Files.  This one holds the options and what a record says (shared by
 * every format and by pydict.c); dispatch.c picks the format, each of which
 * has its own file (jsonl.c, esbulk.c, tsv.c) and calls down to this one,
 * never back up; their shared internals are in format.h, and the escaping
 * they share is in json.c and escape.h.
 *
 * Threads.  Called concurrently by every worker, each with its own dynbuf.
 * Everything here reads the shared options and the record and writes only to
 * that dynbuf: no globals written, no syscalls (strerrorname_np and
 * strerrordesc_np return static strings and never touch errno or locale
 * files, unlike strerror_l), no printf. */
#include "emit/format.h"
#include "emit/json.h"
#include "mail/mail.h"

#include <errno.h>
#include <string.h>

const char *const emit_names[EMIT_F__COUNT] = {
#define EMIT_FIELD_NAME(id, name) [EMIT_F_##id] = name,
	EMIT_FIELDS(EMIT_FIELD_NAME)
#undef EMIT_FIELD_NAME
};

const unsigned char emit_name_len[EMIT_F__COUNT] = {
#define EMIT_FIELD_LEN(id, name) [EMIT_F_##id] = sizeof(name) - 1,
	EMIT_FIELDS(EMIT_FIELD_LEN)
#undef EMIT_FIELD_LEN
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

uint64_t emit_active(const struct emit_options *o)
{
	uint64_t f = o->fields & EMIT_FIELDS_ALL;
	if (o->no_text)
		f &= ~(BIT(TEXT) | BIT(TEXT_TRUNCATED));
	if (!o->headers)
		f &= ~BIT(HEADERS);
	return f;
}

/* ---- what a record says ---------------------------------------------- */

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

bool emit_errors_written(const struct emit_options *o)
{
	/* es-bulk writes an error record only when asked (--es-errors) */
	return o->format != EMIT_ES_BULK || o->es_errors;
}

bool emit_change_dropped(const struct emit_options *o, const struct record_io *io)
{
	bool errors_written = emit_errors_written(o);
	if (io->kind != RECORD_DELETED || io->in_mbox)
		return false;
	if (io->place_only)
		return true;   /* the index's alone (record_io) */
	/* a file whose record was an error, gone: es-bulk indexed nothing
	 * under its id (a delete would find no document); replaced by an
	 * error record of its id, written, that record stands instead, and
	 * not written, only a file that had a document has one to delete
	 * (a walk's error record of a symbolic link listed by --files-from
	 * under the same id had none: its delete, beside the link's, would
	 * be a second) */
	if (io->replaced)
		return errors_written || !io->known;
	return !io->known && !errors_written;
}

uint64_t emit_record_fields(const struct emit_options *o, const struct record *r)
{
	uint64_t act = emit_active(o);
	if (!emit_record_message(r))
		act &= EMIT_IO_FIELDS | BIT(DETECTED_TYPE);
	return act;
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
uint64_t emit_thread_id(const struct emit_ctx *c)
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
