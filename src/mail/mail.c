/* SPDX-License-Identifier: MIT */
/* The parser's entry point: bytes of one message → struct mail_message.
 *
 * Order of work: a cheap "does this start like mail" test (a header field
 * or an mbox From_ line at the first byte, after a UTF-8 BOM); when it does
 * not, the input is not mail and, only if its first bytes look binary,
 * libmagic names its type (text is never sniffed: it costs about 1 ms,
 * docs/ARCHITECTURE.md).  Then the header block (header_parse), the fields of the
 * record in one pass over it, and the MIME walk (mime_parse).
 *
 * Fields that RFC 5322 3.6 allows once (Date, From, Sender, Reply-To, To,
 * Cc, Bcc, Message-ID, In-Reply-To, References, Subject) take their first
 * occurrence; a second sets MAIL_W_DUPLICATED_HEADER.  The first is what
 * the sender's client wrote before any list software or relay added more.
 * The recipient lists (To, Cc, Bcc) are the exception: list servers add a
 * second Cc, and its recipients are as real as the first's, so every
 * occurrence is appended in order (still with the warning), as GMime and
 * Python's email do.
 *
 * Invariants: pure (no syscalls but libmagic's lazy load, no globals); all
 * output is views of p or lives in ctx->arena, which is reset on entry, so a
 * message stays valid until the next mail_parse() on the same ctx. */
#include "mail/mail.h"
#include "mail/address.h"
#include "mail/charset.h"
#include "mail/date.h"
#include "mail/encoded_word.h"
#include "mail/header.h"
#include "mail/mail_ctx.h"
#include "mail/mbox.h"
#include "mail/mime.h"
#include "mail/msgid.h"
#include "mail/sniff.h"
#include "core/xalloc.h"
#include "core/limits.h"

#include <errno.h>
#include <string.h>

static const char *const warning_names[] = {
#define MAIL_WARNING_NAME(id, name) name,
	MAIL_WARNINGS(MAIL_WARNING_NAME)
#undef MAIL_WARNING_NAME
};

_Static_assert(MAIL_W__COUNT <= 64, "warnings are a 64-bit set");

const char *mail_warning_name(enum mail_warning w)
{
	return (unsigned)w < MAIL_W__COUNT ? warning_names[w] : NULL;
}

struct mail_ctx *mail_ctx_new(void)
{
	struct mail_ctx *ctx = xcalloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	arena_init(&ctx->arena, LIMIT_SCRATCH_BYTES);
	ctx->hint_done = true;   /* no message, no hint */
	dynbuf_init(&ctx->scratch, LIMIT_SCRATCH_BYTES);
	ctx->charsets = charset_cache_new();
	ctx->sniff = sniff_cookie_new();
	if (!ctx->charsets || !ctx->sniff) {
		mail_ctx_free(ctx);
		return NULL;
	}
	return ctx;
}

void mail_ctx_free(struct mail_ctx *ctx)
{
	if (!ctx)
		return;
	arena_release(&ctx->arena);
	dynbuf_release(&ctx->scratch);
	if (ctx->charsets)
		charset_cache_free(ctx->charsets);
	sniff_cookie_free(ctx->sniff);
	xfree(ctx);
}

/* ---- is it mail? -------------------------------------------------------- */

static size_t skip_bom(const uint8_t *p, size_t n)
{
	return n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF ? 3 : 0;
}

/* Does the line at p[i] start with a header field name (RFC 5322 3.6.8
 * ftext, then optional white space, RFC 5322 4.5, then a colon)? */
static bool field_at(const uint8_t *p, size_t n, size_t i)
{
	size_t s = i;
	while (i < n && p[i] >= 33 && p[i] <= 126 && p[i] != ':')
		i++;
	if (i == s)
		return false;
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	return i < n && p[i] == ':';
}

/* An mbox From_ line: "From " that is not the obsolete "From :" field. */
static bool from_line_at(const uint8_t *p, size_t n, size_t i)
{
	return mbox_from_prefix(p + i, n - i);
}

/* The first line is a header field or an mbox From_ line, after any stray
 * continuation lines (which header_parse drops with a warning, as Python's
 * email does: RFC 5322 2.2.3, a continuation needs a field). */
static bool starts_like_mail(const uint8_t *p, size_t n)
{
	size_t i = skip_bom(p, n);
	if (from_line_at(p, n, i))
		return true;
	while (i < n && (p[i] == ' ' || p[i] == '\t')) {
		const uint8_t *nl = memchr(p + i, '\n', n - i);
		if (!nl)
			return false;
		i = (size_t)(nl - p) + 1;
	}
	return field_at(p, n, i);
}

/* Binary when the first bytes hold NUL or C0 controls that text does not
 * use (tab, line ends, form feed and escape, for ISO-2022, are text). */
static bool looks_binary(const uint8_t *p, size_t n)
{
	size_t k = n < 512 ? n : 512;
	for (size_t i = 0; i < k; i++) {
		uint8_t c = p[i];
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1B)
			return true;
		if (c == 0x7F)
			return true;
	}
	return false;
}

static int not_mail(struct mail_ctx *ctx, const uint8_t *p, size_t n, struct mail_message *m)
{
	const char *t;
	m->is_mail = false;
	/* sniff_buffer answers text itself without libmagic, unless it
	 * starts like a text-based format libmagic names quickly (a PDF
	 * whose first binary bytes are >= 0x80 and no C0 control, say). */
	if (n == 0)
		t = "application/x-empty";
	else
		t = sniff_buffer(ctx->sniff, p, n);
	if (!t)
		t = looks_binary(p, n) ? "application/octet-stream" : "text/plain";
	size_t k = strlen(t);
	char *c = arena_memdup(&ctx->arena, t, k);
	if (!c)
		return -ENOMEM;
	m->detected_type = (struct str){ c, k };
	return 0;
}

/* ---- fields ------------------------------------------------------------- */

#define MAIL_FIELDS(X)                      \
	X(DATE, "date", true)                   \
	X(FROM, "from", true)                   \
	X(SENDER, "sender", true)               \
	X(REPLY_TO, "reply-to", true)           \
	X(TO, "to", true)                       \
	X(CC, "cc", true)                       \
	X(BCC, "bcc", true)                     \
	X(MESSAGE_ID, "message-id", true)       \
	X(IN_REPLY_TO, "in-reply-to", true)     \
	X(REFERENCES, "references", true)       \
	X(SUBJECT, "subject", true)             \
	X(LIST_ID, "list-id", false)

enum mail_field {
#define MAIL_FIELD_ENUM(id, name, once) F_##id,
	MAIL_FIELDS(MAIL_FIELD_ENUM)
#undef MAIL_FIELD_ENUM
	F__COUNT
};

static const struct {
	const char *name;
	size_t len;
	bool once;
} field_names[] = {
#define MAIL_FIELD_NAME(id, name, once) { name, sizeof(name) - 1, once },
	MAIL_FIELDS(MAIL_FIELD_NAME)
#undef MAIL_FIELD_NAME
};

/* ASCII lowercase of the bytes of a word (SWAR: a byte from 'A' to 'Z'
 * gains 0x20; a byte from 0x80 stays as it is, so it matches no name). */
static inline uint64_t field_lower8(uint64_t v)
{
	const uint64_t ones = UINT64_C(0x0101010101010101);
	uint64_t x = v & ones * 0x7F;
	uint64_t ge_a = x + ones * (0x80 - 'A');
	uint64_t gt_z = x + ones * (0x80 - 'Z' - 1);
	uint64_t upper = ge_a & ~gt_z & ~v & ones * 0x80;
	return v | upper >> 2;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "field_load() and the padded names assume little endian"
#endif

/* The n bytes at p (n from 2 to 11) as two little-endian words, zeros
 * above: overlapping loads rather than byte stores and a word load, which
 * the store forwarding of most cores cannot serve. */
static inline void field_load(const char *p, size_t n, uint64_t *lo, uint64_t *hi)
{
	*hi = 0;
	if (n >= 8) {
		memcpy(lo, p, 8);
		if (n > 8) {
			memcpy(hi, p + n - 8, 8);
			*hi >>= (16 - n) * 8;
		}
	} else if (n >= 4) {
		uint32_t a, z;
		memcpy(&a, p, 4);
		memcpy(&z, p + n - 4, 4);
		*lo = a | (uint64_t)z << ((n - 4) * 8);   /* the overlap agrees */
	} else {
		const uint8_t *u = (const uint8_t *)p;
		*lo = u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[n - 1] << ((n - 1) * 8);
	}
}

static int field_of(struct str name)
{
	/* A message has dozens of fields (Received, DKIM-Signature, X-*)
	 * and a dozen names to match: dispatch on the length, which leaves
	 * at most two candidates, and compare those as words. */
	static const uint8_t by_len[12][2] = {   /* enum mail_field + 1; 0: none */
		[2] = { F_TO + 1, F_CC + 1 },
		[3] = { F_BCC + 1 },
		[4] = { F_DATE + 1, F_FROM + 1 },
		[6] = { F_SENDER + 1 },
		[7] = { F_SUBJECT + 1, F_LIST_ID + 1 },
		[8] = { F_REPLY_TO + 1 },
		[10] = { F_MESSAGE_ID + 1, F_REFERENCES + 1 },
		[11] = { F_IN_REPLY_TO + 1 },
	};
	/* The names zero-padded, to be loaded as two words. */
	static const char padded[F__COUNT][16] = {
#define MAIL_FIELD_PADDED(id, name, once) { name },
		MAIL_FIELDS(MAIL_FIELD_PADDED)
#undef MAIL_FIELD_PADDED
	};
	if (name.n < 2 || name.n > 11 || !by_len[name.n][0])
		return -1;
	uint64_t l0, l1;
	field_load(name.p, name.n, &l0, &l1);
	l0 = field_lower8(l0);
	l1 = field_lower8(l1);
	for (int k = 0; k < 2 && by_len[name.n][k]; k++) {
		int f = by_len[name.n][k] - 1;
		uint64_t f0, f1;
		memcpy(&f0, padded[f], 8);
		memcpy(&f1, padded[f] + 8, 8);
		if (l0 == f0 && l1 == f1)
			return f;
	}
	return -1;
}

/* RFC 2919 2: List-Id is a phrase and the id in angle brackets; an id
 * written without brackets is taken whole. */
static struct str list_id(struct str v)
{
	const char *lt = v.n ? memrchr(v.p, '<', v.n) : NULL;
	if (lt) {
		size_t off = (size_t)(lt - v.p) + 1;
		const char *gt = memchr(lt + 1, '>', v.n - off);
		if (gt && gt > lt + 1)
			return (struct str){ lt + 1, (size_t)(gt - lt - 1) };
	}
	return v.n ? v : STR_NULL;
}

static int fields(struct mail_ctx *ctx, const struct header_block *hb, struct mail_message *m)
{
	const struct header_field *first[F__COUNT] = { 0 };
	size_t first_at[F__COUNT] = { 0 }, count[F__COUNT] = { 0 };
	uint64_t *w = &m->warnings;
	struct arena *a = &ctx->arena;
	int r;

	for (size_t i = 0; i < hb->n; i++) {
		int f = field_of(hb->v[i].name);
		if (f < 0)
			continue;
		if (!count[f]++) {
			first[f] = &hb->v[i];
			first_at[f] = i;
		} else if (field_names[f].once) {
			mail_warn(w, MAIL_W_DUPLICATED_HEADER);
		}
	}

	for (int f = 0; f < F__COUNT; f++) {
		if (!first[f])
			continue;
		struct str v;
		if ((r = header_unfold(a, first[f]->value, &v)) < 0)
			return r;
		switch ((enum mail_field)f) {
		case F_DATE:
			if (date_parse(v, &m->date) == 0) {
				m->has_date = true;
			} else {
				m->date_raw = v;
				mail_warn(w, MAIL_W_BAD_DATE);
			}
			break;
		case F_FROM:
		case F_SENDER:
		case F_REPLY_TO:
		case F_TO:
		case F_CC:
		case F_BCC: {
			struct mail_addr_list *l = f == F_FROM ? &m->from : f == F_SENDER ? &m->sender
			                         : f == F_REPLY_TO ? &m->reply_to : f == F_TO ? &m->to
			                         : f == F_CC ? &m->cc : &m->bcc;
			if ((r = address_parse_list(ctx, v, l, w)) < 0)
				return r;
			l->present = true;
			bool merge = f == F_TO || f == F_CC || f == F_BCC;
			for (size_t i = first_at[f] + 1; merge && count[f] > 1 && i < hb->n; i++) {
				if (field_of(hb->v[i].name) != f)
					continue;
				if ((r = header_unfold(a, hb->v[i].value, &v)) < 0 ||
				    (r = address_parse_list(ctx, v, l, w)) < 0)
					return r;
			}
			break;
		}
		case F_MESSAGE_ID:
			m->message_id = msgid_parse_first(v);
			break;
		case F_IN_REPLY_TO:
			m->in_reply_to = msgid_parse_first(v);
			break;
		case F_REFERENCES:
			if ((r = msgid_parse_list(a, v, &m->references, &m->n_references)) < 0)
				return r;
			break;
		case F_SUBJECT:
			if ((r = encoded_word_decode(ctx, v, &m->subject, w)) < 0)
				return r;
			break;
		case F_LIST_ID:
			m->list_id = list_id(v);
			break;
		case F__COUNT:
			break;
		}
	}
	return 0;
}

/* --headers: every field, in order, unfolded and RFC 2047-decoded. */
static int all_headers(struct mail_ctx *ctx, const struct header_block *hb, struct mail_message *m)
{
	if (!hb->n)
		return 0;
	struct mail_header *v = arena_alloc(&ctx->arena, hb->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < hb->n; i++) {
		/* The record's warnings must not depend on this option: they
		 * come from the fields the record parses (fields()), whose
		 * decoding here warns the same again; other fields add none. */
		struct str u;
		uint64_t ignored = 0;
		int r = header_unfold(&ctx->arena, hb->v[i].value, &u);
		if (r < 0 || (r = encoded_word_decode(ctx, u, &v[i].value, &ignored)) < 0)
			return r;
		v[i].name = hb->v[i].name;
	}
	m->headers = v;
	m->n_headers = hb->n;
	return 0;
}

int mail_parse(struct mail_ctx *ctx, const struct mail_options *o,
               const uint8_t *p, size_t n, struct mail_message *m)
{
	arena_reset(&ctx->arena);
	dynbuf_reset(&ctx->scratch);
	memset(m, 0, sizeof(*m));

	if (!starts_like_mail(p, n))
		return not_mail(ctx, p, n, m);
	m->is_mail = true;

	/* An mbox From_ line is not a header field: the message starts after
	 * it (the BOM, if any, goes with it). */
	size_t skip = skip_bom(p, n);
	if (from_line_at(p, n, skip)) {
		const uint8_t *nl = memchr(p + skip, '\n', n - skip);
		skip = nl ? (size_t)(nl - p) + 1 : n;
	} else {
		skip = 0;          /* header_parse skips the BOM itself */
	}
	p += skip;
	n -= skip;

	struct header_block hb;
	int r = header_parse(&ctx->arena, p, n, &hb, &m->warnings);
	if (r < 0)
		return r;
	/* Raw 8-bit header text is read in the body's charset when it can
	 * be (charset_decode_header); the hint points into p, so it ends with
	 * this call. */
	const struct header_field *ct = header_get(&hb, "content-type");
	ctx->hint_type = ct ? ct->value : STR_NULL;
	ctx->hint_body = (struct str){ (const char *)p + hb.body_offset, n - hb.body_offset };
	ctx->header_charset = STR_NULL;
	ctx->hint_done = false;
	if ((r = fields(ctx, &hb, m)) >= 0 && (!o->want_headers || (r = all_headers(ctx, &hb, m)) >= 0))
		r = mime_parse(ctx, o, p, n, &hb, m);
	ctx->hint_type = ctx->hint_body = ctx->header_charset = STR_NULL;
	ctx->hint_done = true;
	return r;
}
