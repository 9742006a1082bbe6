/* SPDX-License-Identifier: MIT */
/* TSV: one line of tab-separated columns a record, in the order --fields
 * lists them. */
#include "emit/format.h"
#include "emit/escape.h"
#include "emit/json.h"
#include "io/maildir.h"
#include "mail/mail.h"

#include <string.h>

static inline void emit_tsv_hexbyte(char *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	o[0] = '\\';
	o[1] = 'x';
	o[2] = hex[c >> 4];
	o[3] = hex[c & 15];
}

/* The letter of the two-byte escapes; 0 for \xHH. */
static const char emit_tsv_esc_short[0x60] = {
	['\t'] = 't', ['\n'] = 'n', ['\r'] = 'r', ['\\'] = '\\',
};

/* Tab, newline, CR and backslash as \t \n \r \\, the other C0 controls as
 * \xHH (c is one of them: escape_put() asks for no other). */
static size_t emit_tsv_escape(char *o, unsigned char c)
{
	char e = emit_tsv_esc_short[c];
	if (!e) {
		emit_tsv_hexbyte(o, c);
		return 4;
	}
	o[0] = '\\';
	o[1] = e;
	return 2;
}

/* Each byte of an ill-formed sequence as \xHH. */
static size_t emit_tsv_hexbytes(char *o, const unsigned char *s, size_t k)
{
	for (size_t t = 0; t < k; t++)
		emit_tsv_hexbyte(o + 4 * t, s[t]);
	return 4 * k;
}

static const struct escape_style emit_tsv_style = {
	.quote = false,
	.ascii_room = 4, .ascii = emit_tsv_escape,
	.bad_room = 0, .bad_room_per_byte = 4, .bad = emit_tsv_hexbytes,
};

/* A TSV value: tab, newline, CR and backslash as \t \n \r \\; any other
 * byte that would be a control character or invalid UTF-8 as \xHH (the
 * convention of PostgreSQL's COPY text format), so the column is valid
 * UTF-8, one line, and still lossless. */
static int emit_tsv_str(struct dynbuf *b, const char *p, size_t n)
{
	int r;
	if ((r = dynbuf_room(b, n)) < 0)
		return r;
	return escape_put(b, (const unsigned char *)p, 0, n, &emit_tsv_style);
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
		if ((r = emit_tsv_str(b, p + from, i - from)) == 0 && (r = dynbuf_room(b, 4 * k)) == 0)
			b->len += emit_tsv_hexbytes(b->p + b->len, s + i, k);
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
			r = dynbuf_put_u64(b, (uint64_t)err);
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
		return io->have_stat ? dynbuf_put_u64(b, io->size) : 0;
	case EMIT_F_MTIME:
		return io->have_stat ? json_put_iso8601(b, io->mtime_sec) : 0;
	case EMIT_F_FOLDER:
		return io->maildir ? emit_tsv_mstr(b, io->folder) : 0;
	case EMIT_F_SUBDIR:
		return io->maildir ? emit_tsv_mstr(b, io->subdir) : 0;
	case EMIT_F_FLAGS:
		return io->maildir ? emit_tsv_mstr(b, io->flags) : 0;
	case EMIT_F_OFFSET:
		return io->in_mbox ? dynbuf_put_u64(b, io->offset) : 0;
	case EMIT_F_LENGTH:
		return io->in_mbox ? dynbuf_put_u64(b, io->length) : 0;
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
	EMIT_CASE_MESSAGE_STR:
		return emit_tsv_mstr(b, emit_message_str(m, f));
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
	EMIT_CASE_MESSAGE_ADDRS:
		return emit_tsv_addrs(b, emit_message_addrs(m, f));
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
		return dynbuf_put_u64(b, m->parts);
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

int emit_tsv_line(const struct emit_options *o, const struct emit_ctx *c)
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

