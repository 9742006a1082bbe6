/* SPDX-License-Identifier: MIT */
/* The MIME tree walk: see mime.h.
 *
 * One forward pass over the body with an explicit stack of open multiparts
 * (no recursion, so 1,000-deep nesting costs no C stack).  A cursor moves
 * from line to line; the only lines examined closely are those that start
 * with "--", and each is compared with the open boundaries innermost first.
 * A boundary line (RFC 2046 5.1.1) is "--" boundary, optionally "--" (the
 * close delimiter), then only white space (transport padding) to the line
 * end: "--abcdef" is therefore not a delimiter for boundary "abc".  A
 * delimiter of an outer multipart closes the inner ones (they were never
 * terminated).  The line end before a delimiter belongs to the delimiter.
 *
 * Entities at depth LIMIT_MIME_DEPTH and beyond are not entered (their
 * boundaries are never pushed): what they contain is opaque data that runs
 * to the next open boundary.  After LIMIT_MIME_PARTS entities the walk
 * stops and the rest of the message is opaque.
 *
 * Text is collected in two steps.  While walking, every inline text leaf
 * becomes a candidate (text/plain is transfer-decoded at once, to cut out
 * uuencoded blocks, which become attachments; HTML is left encoded); each
 * multipart/alternative keeps the candidates of its best child (plain over
 * HTML, the first on a tie) and drops those of the others.  After the walk
 * the surviving candidates are converted to UTF-8 and appended, in order,
 * into one buffer capped at mail_options.max_text: conversion stops as soon
 * as it is full, so a huge body costs no more than the text kept.
 *
 * Memory: everything lives in ctx->arena (candidates, attachments, decoded
 * text parts, the text) except the charset conversion's output, which uses
 * ctx->scratch above the length it had on entry. */
#include "mail/mime.h"
#include "mail/charset.h"
#include "mail/flowed.h"
#include "mail/html.h"
#include "mail/mail_ctx.h"
#include "mail/msgid.h"
#include "mail/param.h"
#include "mail/sniff.h"
#include "mail/textbuf.h"
#include "mail/transfer.h"
#include "core/limits.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

/* ---- small helpers ----------------------------------------------------- */

static bool str_is(struct str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.p && s.n == n && memcmp(s.p, lit, n) == 0;
}

static bool str_ieq(struct str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.p && s.n == n && strncasecmp(s.p, lit, n) == 0;
}

/* Copies text with CR LF (and lone CR at a line end) turned into LF. */
static void put_lines(struct textbuf *o, const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && !o->full) {
		const uint8_t *cr = memchr(p + i, '\r', n - i);
		size_t e = cr ? (size_t)(cr - p) : n;
		if (!textbuf_put(o, p + i, e - i) || !cr)
			return;
		i = e + 1;
		if (i < n && p[i] == '\n')
			continue;          /* the LF is copied with the next run */
		textbuf_put(o, "\n", 1);
	}
}

/* ---- the walk ----------------------------------------------------------- */

enum mp_kind { MP_MIXED, MP_ALTERNATIVE, MP_DIGEST };

struct frame {
	const uint8_t *bnd;        /* the boundary, without the leading "--" */
	size_t blen;
	enum mp_kind kind;
	unsigned depth;            /* of the multipart entity */
	size_t body_start;         /* where its preamble starts */
	enum transfer_encoding te; /* for the no-delimiter fallback */
	bool seen_part;            /* a delimiter was seen */
	/* multipart/alternative: the best child so far, the current child. */
	size_t child_lo;
	size_t best_lo, best_hi;
	int best_rank;
	bool have_best;
};

enum cand_kind { CAND_PLAIN, CAND_HTML };

struct cand {
	const uint8_t *p;
	size_t n;
	enum transfer_encoding te;   /* TRANSFER_IDENTITY once decoded */
	struct str charset;
	enum cand_kind kind;
	bool flowed, delsp, dropped;
};

/* What the walk needs from an entity's header block. */
struct entity {
	struct mime_type ct;
	bool has_ct;
	struct mime_type cd;
	bool has_cd;
	enum transfer_encoding te;
	struct str cid;
};

struct mime_walk {
	struct mail_ctx *ctx;
	const struct mail_options *o;
	const uint8_t *p;
	size_t n;
	struct mail_message *m;
	uint64_t *w;

	size_t nfr;

	struct cand *cand;
	size_t ncand, capcand;
	struct mail_attachment *att;
	size_t natt, capatt;
	uint32_t parts;
	bool stopped;             /* LIMIT_MIME_PARTS reached */
	uint32_t uu_blocks;       /* capped like parts */
	uint32_t sniffs;          /* libmagic calls, capped: see LIMIT_SNIFF_CALLS */

	/* Last, and never cleared or copied as a whole: fr[0..nfr) are set
	 * when pushed, and the 6 KiB of the rest cost more to clear for every
	 * message than the walk of most messages. */
	struct frame fr[LIMIT_MIME_DEPTH];
};
#define MIME_WALK_STATE offsetof(struct mime_walk, fr)


/* A boundary line found by scan(). */
struct delim {
	bool eof;
	size_t start, next;       /* the line, and the line after it */
	size_t frame;
	bool close;
};

/* Is the line [i, e) a delimiter of an open multipart?  Innermost first, so
 * that a nested multipart reusing its parent's boundary gets its own lines
 * until it is closed. */
static bool delim_match(const struct mime_walk *w, size_t i, size_t e, struct delim *d)
{
	const uint8_t *p = w->p;
	if (e - i < 2 || p[i] != '-' || p[i + 1] != '-')
		return false;
	for (size_t f = w->nfr; f-- > 0;) {
		const struct frame *F = &w->fr[f];
		if (e - i - 2 < F->blen || memcmp(p + i + 2, F->bnd, F->blen) != 0)
			continue;
		size_t r = i + 2 + F->blen;
		bool close = false;
		if (e - r >= 2 && p[r] == '-' && p[r + 1] == '-') {
			close = true;
			r += 2;
		}
		while (r < e && (p[r] == ' ' || p[r] == '\t'))
			r++;
		if (r != e)
			continue;
		d->frame = f;
		d->close = close;
		return true;
	}
	return false;
}

/* The next delimiter line at or after pos (a line start), looked for
 * from `from` (>= pos: the bytes before it are known to hold no dash). */
static struct delim scan_from(const struct mime_walk *w, size_t pos, size_t from)
{
	struct delim d = { .eof = true, .start = w->n, .next = w->n };
	const uint8_t *p = w->p;
	size_t n = w->n, i = from;
	if (w->nfr == 0)
		return d;
	/* Every delimiter line starts with "--": look for dashes, not line
	 * ends.  Base64 has no '-' at all, so an attachment is one memchr,
	 * instead of one call per 77-byte line. */
	while (i < n) {
		const uint8_t *dash = memchr(p + i, '-', n - i);
		if (!dash)
			break;
		size_t j = (size_t)(dash - p);
		if ((j == pos || p[j - 1] == '\n') && j + 1 < n && p[j + 1] == '-') {
			size_t next, e = textbuf_line(p, n, j, &next);
			if (delim_match(w, j, e, &d)) {
				d.eof = false;
				d.start = j;
				d.next = next;
				return d;
			}
			i = next;
			continue;
		}
		i = j + 1;
	}
	return d;
}

static struct delim scan(const struct mime_walk *w, size_t pos)
{
	return scan_from(w, pos, pos);
}

/* The next delimiter after a base64 body at bs, and the body's leading
 * run (transfer.h), counted in the same pass: a delimiter starts with a
 * dash, which base64 lacks, so the dashes are looked for after the run,
 * and the attachment's size (leaf) need not count it again. */
static struct delim scan_base64(const struct mime_walk *w, size_t bs, struct transfer_b64_run *run)
{
	*run = transfer_base64_run(w->p + bs, w->n - bs);
	return scan_from(w, bs, bs + run->len);
}

/* End of a part's content before the delimiter at `start` (RFC 2046 5.1.1:
 * the CRLF preceding the delimiter belongs to it). */
static size_t content_end(const uint8_t *p, size_t body, const struct delim *d)
{
	size_t start = d->start;
	if (!d->eof && start > body && p[start - 1] == '\n') {
		start--;
		if (start > body && p[start - 1] == '\r')
			start--;
	}
	return start;
}

static int entity_read(struct mime_walk *w, const struct header_block *hb, struct entity *e)
{
	bool ct = false, cte = false, cd = false, cid = false;
	int r;
	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < hb->n; i++) {
		const struct header_field *f = &hb->v[i];
		/* The first letter turns away nearly every other field
		 * before the call. */
		if (f->name.n < 10 || (f->name.p[0] | 0x20) != 'c' ||
		    strncasecmp(f->name.p, "content-", 8) != 0)
			continue;
		struct str name = { f->name.p + 8, f->name.n - 8 }, v;
		bool *seen = str_ieq(name, "type") ? &ct : str_ieq(name, "transfer-encoding") ? &cte
		           : str_ieq(name, "disposition") ? &cd : str_ieq(name, "id") ? &cid : NULL;
		if (!seen || *seen)
			continue;      /* the first occurrence wins, as in header fields */
		*seen = true;
		if ((r = header_unfold(&w->ctx->arena, f->value, &v)) < 0)
			return r;
		if (seen == &ct) {
			if ((r = param_parse(w->ctx, v, &e->ct, w->w)) < 0)
				return r;
			e->has_ct = e->ct.type.p != NULL;
		} else if (seen == &cd) {
			if ((r = param_parse(w->ctx, v, &e->cd, w->w)) < 0)
				return r;
			e->has_cd = e->cd.type.p != NULL;
		} else if (seen == &cte) {
			e->te = transfer_encoding_parse(v);
		} else {
			e->cid = msgid_parse_first(v);
		}
	}
	return 0;
}

/* Headers of a body part or encapsulated message starting at pos: up to the
 * blank line, a delimiter line, or EOF (which is truncation when a
 * multipart is open).  *body is where the content starts. */
static int part_headers(struct mime_walk *w, size_t pos, struct entity *e, size_t *body)
{
	const uint8_t *p = w->p;
	size_t n = w->n, i = pos, end = n;
	bool blank = false;
	struct delim d;
	while (i < n) {
		size_t next, le = textbuf_line(p, n, i, &next);
		if (le == i) {
			end = next;
			blank = true;
			break;
		}
		if (delim_match(w, i, le, &d)) {
			end = i;
			blank = true;        /* no headers-vs-body ambiguity */
			break;
		}
		i = next;
	}
	if (!blank && w->nfr)
		mail_warn(w->w, MAIL_W_TRUNCATED_MESSAGE);
	struct header_block hb;
	int r = header_parse(&w->ctx->arena, p + pos, end - pos, &hb, w->w);
	if (r < 0)
		return r;
	*body = pos + (hb.body_offset < end - pos ? hb.body_offset : end - pos);
	return entity_read(w, &hb, e);
}

static int cand_push(struct mime_walk *w, const struct cand *c)
{
	if (w->ncand == w->capcand) {
		size_t cap = w->capcand ? w->capcand * 2 : 8;
		struct cand *v = arena_alloc(&w->ctx->arena, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		if (w->ncand)
			memcpy(v, w->cand, w->ncand * sizeof(*v));
		w->cand = v;
		w->capcand = cap;
	}
	w->cand[w->ncand++] = *c;
	return 0;
}

static struct mail_attachment *att_push(struct mime_walk *w)
{
	if (w->natt == w->capatt) {
		size_t cap = w->capatt ? w->capatt * 2 : 4;
		struct mail_attachment *v = arena_alloc(&w->ctx->arena, cap * sizeof(*v));
		if (!v)
			return NULL;
		if (w->natt)
			memcpy(v, w->att, w->natt * sizeof(*v));
		w->att = v;
		w->capatt = cap;
	}
	struct mail_attachment *a = &w->att[w->natt++];
	memset(a, 0, sizeof(*a));
	return a;
}

/* Copies libmagic's answer and checks it against the declared type. */
static int sniff_into(struct mime_walk *w, struct mail_attachment *a, const uint8_t *pre, size_t k)
{
	struct mail_ctx *ctx = w->ctx;
	if (!ctx->sniff || k == 0 || w->sniffs >= LIMIT_SNIFF_CALLS)
		return 0;
	w->sniffs++;
	const char *t = sniff_buffer(ctx->sniff, pre, k);
	if (!t)
		return 0;
	size_t tn = strlen(t);
	char *c = arena_memdup(&ctx->arena, t, tn);
	if (!c)
		return -ENOMEM;
	a->detected_type = (struct str){ c, tn };
	if (!sniff_types_agree(a->content_type, c))
		mail_warn(w->w, MAIL_W_TYPE_MISMATCH);
	return 0;
}

/* Raw bytes of the body used as a string (a uuencode file name) as valid
 * UTF-8, like raw 8-bit header bytes: itself when it is valid UTF-8, else
 * decoded as windows-1252 (which maps every byte). */
static int utf8_view(struct mime_walk *w, struct str s, struct str *out)
{
	if (utf8_valid((const uint8_t *)s.p, s.n)) {
		*out = s;
		return 0;
	}
	struct dynbuf *sb = &w->ctx->scratch;
	size_t base = sb->len;
	int r = charset_decode(w->ctx, (struct str){ "windows-1252", 12 },
	                       (const uint8_t *)s.p, s.n, sb, w->w, &w->m->replaced_bytes);
	if (r == 0) {
		char *d = arena_memdup(&w->ctx->arena, sb->p + base, sb->len - base);
		*out = (struct str){ d, sb->len - base };
		r = d ? 0 : -ENOMEM;
	}
	sb->len = base;
	return r;
}

/* uuencoded blocks of a decoded text/plain part: each becomes an
 * attachment, the text around them candidates. */
static int plain_split(struct mime_walk *w, const struct cand *base)
{
	const uint8_t *p = base->p;
	size_t n = base->n, from = 0;
	struct transfer_uu u;
	int r;
	while (transfer_uu_find(p, n, from, &u)) {
		if (w->uu_blocks >= LIMIT_MIME_PARTS) {
			/* The rest stays text, as past the MIME parts cap. */
			mail_warn(w->w, MAIL_W_TOO_MANY_PARTS);
			break;
		}
		w->uu_blocks++;
		if (u.start > from) {
			struct cand c = *base;
			c.p = p + from;
			c.n = u.start - from;
			if ((r = cand_push(w, &c)) < 0)
				return r;
		}
		struct mail_attachment *a = att_push(w);
		if (!a)
			return -ENOMEM;
		if (u.name.n && (r = utf8_view(w, u.name, &a->filename)) < 0)
			return r;
		a->content_type = (struct str){ "application/octet-stream", 24 };
		if (!u.terminated)
			mail_warn(w->w, MAIL_W_BAD_UUENCODE);
		uint8_t pre[LIMIT_SNIFF_BYTES];
		a->size = transfer_uu_decode(p + u.data, u.data_end - u.data, pre, sizeof(pre), w->w);
		if ((r = sniff_into(w, a, pre, a->size < sizeof(pre) ? (size_t)a->size : sizeof(pre))) < 0)
			return r;
		from = u.end;
	}
	if (from < n) {
		struct cand c = *base;
		c.p = p + from;
		c.n = n - from;
		return cand_push(w, &c);
	}
	return 0;
}

static struct str type_string(struct mime_walk *w, const struct entity *e, const char *dflt)
{
	if (!e->has_ct || !e->ct.subtype.p || !e->ct.subtype.n) {
		if (e->has_ct && str_is(e->ct.type, "text"))
			return (struct str){ "text/plain", 10 };
		return (struct str){ dflt, strlen(dflt) };
	}
	size_t k = e->ct.type.n + 1 + e->ct.subtype.n;
	char *s = arena_alloc(&w->ctx->arena, k + 1);
	if (!s)
		return STR_NULL;
	memcpy(s, e->ct.type.p, e->ct.type.n);
	s[e->ct.type.n] = '/';
	memcpy(s + e->ct.type.n + 1, e->ct.subtype.p, e->ct.subtype.n);
	s[k] = '\0';
	return (struct str){ s, k };
}

/* An attachment's decoded size, and its first out_cap bytes.  A run
 * ends at the delimiter's dash at the latest, and be (content_end) is at
 * most the CR LF before that dash, so a run longer than the content
 * holds no sextet past it: the same count, cut to the content. */
static uint64_t attachment_decode(enum transfer_encoding te, const uint8_t *body, size_t n,
                                  const struct transfer_b64_run *run, uint8_t *out, size_t out_cap,
                                  uint64_t *warnings)
{
	if (te != TRANSFER_BASE64 || !run)
		return transfer_decode(te, body, n, out, out_cap, warnings);
	struct transfer_b64_run cut = { run->len < n ? run->len : n, run->sextets };
	return transfer_base64_decode_run(body, n, &cut, out, out_cap, warnings);
}

/* A leaf's content p[bs..be): text candidate and/or attachment.  run:
 * a base64 body's leading run from scan_base64(), or NULL. */
static int leaf(struct mime_walk *w, const struct entity *e, const char *dflt, size_t bs, size_t be,
                const struct transfer_b64_run *run)
{
	struct mail_ctx *ctx = w->ctx;
	const uint8_t *body = w->p + bs;
	size_t n = be - bs;
	int r;

	struct str type = type_string(w, e, dflt);
	if (!type.p)
		return -ENOMEM;
	enum transfer_encoding te = e->te;
	bool unknown_te = te == TRANSFER_UNKNOWN;
	if (unknown_te)
		mail_warn(w->w, MAIL_W_UNKNOWN_TRANSFER_ENCODING);

	/* RFC 2183 2.8: an unknown disposition is treated as attachment. */
	struct str disp = STR_NULL;
	if (e->has_cd)
		disp = str_is(e->cd.type, "inline") ? (struct str){ "inline", 6 }
		                                     : (struct str){ "attachment", 10 };
	bool attach_disp = str_is(disp, "attachment");
	struct str fname = e->has_cd ? param_get(&e->cd, "filename") : STR_NULL;
	if (!fname.p && e->has_ct)
		fname = param_get(&e->ct, "name");
	if (fname.p && fname.n == 0)
		fname = STR_NULL;

	/* RFC 2046 4.1.4: unknown text subtypes are treated as text/plain.
	 * RFC 2045 6.4: an unknown transfer encoding makes the part opaque. */
	bool is_text = type.n >= 5 && memcmp(type.p, "text/", 5) == 0 && !unknown_te;
	bool is_html = str_is(type, "text/html");

	uint64_t size = 0;
	bool sized = false;
	if (is_text && !attach_disp) {
		struct cand c = {
			.p = body, .n = n, .te = te, .kind = is_html ? CAND_HTML : CAND_PLAIN,
		};
		if (e->has_ct) {
			c.charset = param_get(&e->ct, "charset");
			struct str f = param_get(&e->ct, "format");
			c.flowed = str_ieq(f, "flowed");
			c.delsp = str_ieq(param_get(&e->ct, "delsp"), "yes");
		}
		if (c.kind == CAND_PLAIN) {
			if (te != TRANSFER_IDENTITY) {
				uint8_t *d = arena_alloc(&ctx->arena, n ? n : 1);
				if (!d)
					return -ENOMEM;
				c.n = (size_t)transfer_decode(te, body, n, d, n, w->w);
				c.p = d;
				c.te = TRANSFER_IDENTITY;
			}
			size = c.n;
			sized = true;
			if ((r = plain_split(w, &c)) < 0)
				return r;
		} else if (n && (r = cand_push(w, &c)) < 0) {
			return r;
		}
		if (!fname.p)
			return 0;
	}

	struct mail_attachment *a = att_push(w);
	if (!a)
		return -ENOMEM;
	a->filename = fname;
	a->content_type = type;
	a->disposition = disp;
	if (e->cid.p && e->cid.n)
		a->content_id = e->cid;
	bool sniffable = !is_text && !unknown_te && strncmp(type.p, "text/", 5) != 0 &&
	                 strncmp(type.p, "message/", 8) != 0 && strncmp(type.p, "multipart/", 10) != 0;
	if (sized) {
		a->size = size;
	} else if (sniffable) {
		uint8_t pre[LIMIT_SNIFF_BYTES];
		a->size = attachment_decode(te, body, n, run, pre, sizeof(pre), w->w);
		r = sniff_into(w, a, pre, a->size < sizeof(pre) ? (size_t)a->size : sizeof(pre));
		if (r < 0)
			return r;
	} else {
		a->size = unknown_te ? n : attachment_decode(te, body, n, run, NULL, 0, w->w);
	}
	return 0;
}

/* multipart/alternative: the child that just ended competes with the best
 * so far; the loser's candidates are dropped. */
static void alt_child_end(struct mime_walk *w, struct frame *F)
{
	size_t lo = F->child_lo, hi = w->ncand;
	int rank = 0;
	for (size_t i = lo; i < hi; i++) {
		if (w->cand[i].dropped)
			continue;
		int k = w->cand[i].kind == CAND_PLAIN ? 2 : 1;
		if (k > rank)
			rank = k;
	}
	if (rank == 0)
		return;
	if (!F->have_best || rank > F->best_rank) {
		if (F->have_best)
			for (size_t i = F->best_lo; i < F->best_hi; i++)
				w->cand[i].dropped = true;
		F->best_lo = lo;
		F->best_hi = hi;
		F->best_rank = rank;
		F->have_best = true;
	} else {
		for (size_t i = lo; i < hi; i++)
			w->cand[i].dropped = true;
	}
}

/* Closes the innermost frame; `end` is where its content ends. */
static int frame_close(struct mime_walk *w, size_t end, bool terminated)
{
	struct frame *F = &w->fr[w->nfr - 1];
	if (!F->seen_part) {
		/* No delimiter at all: RFC 2046 requires one body part.  Keep
		 * the content as text rather than lose it. */
		mail_warn(w->w, MAIL_W_MALFORMED_MULTIPART);
		w->nfr--;
		if (w->stopped)
			return 0;
		struct entity e;
		memset(&e, 0, sizeof(e));
		e.te = F->te;
		return leaf(w, &e, "text/plain", F->body_start, end, NULL);
	}
	if (!terminated && !w->stopped)
		mail_warn(w->w, MAIL_W_UNTERMINATED_MULTIPART);
	if (F->kind == MP_ALTERNATIVE)
		alt_child_end(w, F);
	w->nfr--;
	return 0;
}

static int walk_run_at(struct mime_walk *w, struct entity *top, size_t bs, unsigned depth);

/* A message/rfc822 part in base64 or quoted-printable (RFC 2046 5.2.1
 * forbids it; clients send it): its content decoded and walked like any
 * attached message, by a walk of its own over the decoded bytes (the
 * offsets of a walk are into its bytes), which adds its parts, texts and
 * attachments to this one's.  The caller scans on past the part. */
static int encoded_message(struct mime_walk *w, const struct entity *e, size_t bs, size_t ce,
                           unsigned depth)
{
	size_t n = ce - bs;
	uint8_t *dec = arena_alloc(&w->ctx->arena, n ? n : 1);
	struct mime_walk *iw = arena_alloc(&w->ctx->arena, sizeof(*iw));
	if (!dec || !iw)
		return -ENOMEM;
	mail_warn(w->w, MAIL_W_ENCODED_MESSAGE);
	size_t dn = (size_t)transfer_decode(e->te, w->p + bs, n, dec, n, w->w);
	memcpy(iw, w, MIME_WALK_STATE);
	iw->p = dec;
	iw->n = dn;
	iw->nfr = 0;
	struct entity inner;
	size_t ibs;
	int r = part_headers(iw, 0, &inner, &ibs);
	if (r >= 0)
		r = walk_run_at(iw, &inner, ibs, depth);
	/* What the inner walk found belongs to this one. */
	w->cand = iw->cand, w->ncand = iw->ncand, w->capcand = iw->capcand;
	w->att = iw->att, w->natt = iw->natt, w->capatt = iw->capatt;
	w->parts = iw->parts, w->uu_blocks = iw->uu_blocks, w->sniffs = iw->sniffs;
	w->stopped = iw->stopped;
	return r;
}

/* Enters the entity whose headers are e and content starts at bs.  Returns
 * the position where scanning goes on: for a multipart, its body; for a
 * leaf, the delimiter that ends it (*d). */
static int entity(struct mime_walk *w, struct entity *e, size_t bs, unsigned depth,
                  enum mp_kind parent, struct delim *d)
{
	const char *dflt = parent == MP_DIGEST ? "message/rfc822" : "text/plain";
	int r;
	for (;;) {
		if (w->parts >= LIMIT_MIME_PARTS) {
			mail_warn(w->w, MAIL_W_TOO_MANY_PARTS);
			w->stopped = true;
			d->eof = true;
			return 0;
		}
		w->parts++;
		struct str type = e->has_ct ? e->ct.type : STR_NULL;
		struct str sub = e->has_ct ? e->ct.subtype : STR_NULL;
		if (!e->has_ct && parent == MP_DIGEST)
			type = (struct str){ "message", 7 }, sub = (struct str){ "rfc822", 6 };
		/* An attached message (disposition other than inline, or a
		 * file name) is one opaque attachment, not walked into. */
		bool attach = (e->has_cd && (!str_is(e->cd.type, "inline") ||
		                             param_get(&e->cd, "filename").p)) ||
		              (e->has_ct && param_get(&e->ct, "name").p);

		if (str_is(type, "multipart")) {
			struct str b = param_get(&e->ct, "boundary");
			if (!b.p || b.n == 0) {
				/* Treat as a single text part. */
				mail_warn(w->w, MAIL_W_MISSING_BOUNDARY);
				struct entity t;
				memset(&t, 0, sizeof(t));
				t.te = e->te;
				*d = scan(w, bs);
				return leaf(w, &t, "text/plain", bs, content_end(w->p, bs, d), NULL);
			}
			if (depth >= LIMIT_MIME_DEPTH) {
				mail_warn(w->w, MAIL_W_NESTING_OVERFLOW);
				*d = scan(w, bs);       /* opaque */
				return 0;
			}
			for (size_t f = 0; f < w->nfr; f++)
				if (w->fr[f].blen == b.n && memcmp(w->fr[f].bnd, b.p, b.n) == 0) {
					mail_warn(w->w, MAIL_W_MALFORMED_MULTIPART);
					break;
				}
			struct frame *F = &w->fr[w->nfr++];
			memset(F, 0, sizeof(*F));
			F->bnd = (const uint8_t *)b.p;
			F->blen = b.n;
			F->kind = str_is(sub, "alternative") ? MP_ALTERNATIVE
			        : str_is(sub, "digest") ? MP_DIGEST : MP_MIXED;
			F->depth = depth;
			F->body_start = bs;
			F->te = e->te;
			*d = scan(w, bs);
			return 0;
		}
		if (str_is(type, "message") && (str_is(sub, "rfc822") || str_is(sub, "global")) &&
		    !attach && (e->te == TRANSFER_BASE64 || e->te == TRANSFER_QP)) {
			if (depth >= LIMIT_MIME_DEPTH) {
				mail_warn(w->w, MAIL_W_NESTING_OVERFLOW);
				*d = scan(w, bs);
				return 0;
			}
			*d = scan(w, bs);
			return encoded_message(w, e, bs, content_end(w->p, bs, d), depth + 1);
		}
		if (str_is(type, "message") && (str_is(sub, "rfc822") || str_is(sub, "global")) &&
		    !attach && (e->te == TRANSFER_IDENTITY)) {
			/* An inline encapsulated message: walk into it.  Its header
			 * block is its own, never the outer message's. */
			if (depth >= LIMIT_MIME_DEPTH) {
				mail_warn(w->w, MAIL_W_NESTING_OVERFLOW);
				*d = scan(w, bs);
				return 0;
			}
			struct entity inner;
			size_t ibs;
			if ((r = part_headers(w, bs, &inner, &ibs)) < 0)
				return r;
			*e = inner;
			bs = ibs;
			depth++;
			parent = MP_MIXED;
			dflt = "text/plain";
			continue;
		}
		/* a text part that is no attachment is decoded whole (leaf):
		 * its count would be a pass more, not one less; no type is
		 * text/plain */
		bool text = type.p ? str_is(type, "text") : parent != MP_DIGEST;
		struct transfer_b64_run run;
		bool counted = e->te == TRANSFER_BASE64 && w->nfr > 0 && (!text || attach);
		*d = counted ? scan_base64(w, bs, &run) : scan(w, bs);
		return leaf(w, e, dflt, bs, content_end(w->p, bs, d), counted ? &run : NULL);
	}
}

static int walk_run_at(struct mime_walk *w, struct entity *top, size_t bs, unsigned depth0)
{
	struct delim d;
	int r = entity(w, top, bs, depth0, MP_MIXED, &d);
	if (r < 0)
		return r;
	for (;;) {
		if (w->stopped) {
			while (w->nfr)
				if ((r = frame_close(w, w->n, true)) < 0)
					return r;
			return 0;
		}
		if (d.eof) {
			if (w->nfr && w->n && w->p[w->n - 1] != '\n')
				mail_warn(w->w, MAIL_W_TRUNCATED_MESSAGE);
			while (w->nfr)
				if ((r = frame_close(w, w->n, false)) < 0)
					return r;
			return 0;
		}
		/* Delimiters of an outer multipart close the inner ones. */
		while (w->nfr > d.frame + 1)
			if ((r = frame_close(w, content_end(w->p, w->fr[w->nfr - 1].body_start, &d), false)) < 0)
				return r;
		struct frame *F = &w->fr[d.frame];
		if (F->seen_part && F->kind == MP_ALTERNATIVE)
			alt_child_end(w, F);
		if (d.close) {
			if (!F->seen_part) {
				/* "--b--" with no part before it. */
				if ((r = frame_close(w, content_end(w->p, F->body_start, &d), true)) < 0)
					return r;
			} else {
				w->nfr--;
			}
			/* The epilogue (RFC 2046 5.1.1) is ignored: scan on. */
			d = scan(w, d.next);
			continue;
		}
		F->seen_part = true;
		F->child_lo = w->ncand;
		struct entity e;
		size_t pbs;
		if ((r = part_headers(w, d.next, &e, &pbs)) < 0)
			return r;
		unsigned depth = F->depth + 1;
		if ((r = entity(w, &e, pbs, depth, F->kind, &d)) < 0)
			return r;
	}
}

/* ---- text --------------------------------------------------------------- */

/* Labels whose encoding keeps ASCII bytes (LF above all) as themselves, so
 * that the input to convert can be cut at a line end. */
static bool ascii_compatible(struct str cs)
{
	if (!cs.p)
		return true;
	return (cs.n >= 5 && strncasecmp(cs.p, "utf-8", 5) == 0) ||
	       (cs.n >= 8 && strncasecmp(cs.p, "us-ascii", 8) == 0) ||
	       (cs.n >= 8 && strncasecmp(cs.p, "iso-8859", 8) == 0) ||
	       (cs.n >= 10 && strncasecmp(cs.p, "windows-12", 10) == 0);
}

static int text_build(struct mime_walk *w)
{
	struct mail_ctx *ctx = w->ctx;
	struct mail_message *m = w->m;
	size_t est = 0, any = 0;
	for (size_t i = 0; i < w->ncand; i++) {
		if (w->cand[i].dropped)
			continue;
		any++;
		size_t k = w->cand[i].n;
		est += (k > SIZE_MAX / 8 ? SIZE_MAX / 8 : k) * 3 + 16;
		if (est > w->o->max_text)
			break;
	}
	if (!any)
		return 0;
	size_t cap = est < w->o->max_text ? est : w->o->max_text;
	char *buf = arena_alloc(&ctx->arena, cap + 1);
	if (!buf)
		return -ENOMEM;
	struct textbuf o = { .p = buf, .cap = cap };
	struct dynbuf *s = &ctx->scratch;
	size_t base = s->len;
	int r = 0;

	for (size_t i = 0; i < w->ncand && !o.full; i++) {
		struct cand *c = &w->cand[i];
		if (c->dropped)
			continue;
		if (o.len && buf[o.len - 1] != '\n' && !textbuf_put(&o, "\n", 1))
			break;
		const uint8_t *p = c->p;
		size_t n = c->n;
		if (c->te != TRANSFER_IDENTITY) {
			uint8_t *d = arena_alloc(&ctx->arena, n ? n : 1);
			if (!d) {
				r = -ENOMEM;
				break;
			}
			n = (size_t)transfer_decode(c->te, p, n, d, n, w->w);
			p = d;
		}
		/* Plain text in an ASCII-compatible charset cannot shrink below
		 * a quarter in UTF-8, so more input than that is never needed:
		 * cut it at a line end so that no character is split. */
		size_t room = o.cap - o.len;
		if (c->kind == CAND_PLAIN && ascii_compatible(c->charset) && room < SIZE_MAX / 8 &&
		    n > room * 4 + 64) {
			size_t k = room * 4 + 64;
			const uint8_t *nl = memrchr(p, '\n', k);
			n = nl ? (size_t)(nl - p) + 1 : k;
		}
		s->len = base;
		if ((r = charset_decode(ctx, c->charset, p, n, s, w->w, &m->replaced_bytes)) < 0)
			break;
		const uint8_t *u = (const uint8_t *)s->p + base;
		size_t un = s->len - base;
		bool full = false;
		if (c->kind == CAND_HTML) {
			o.len += html_to_text(u, un, o.p + o.len, o.cap - o.len, &full);
		} else if (c->flowed) {
			o.len += flowed_decode(u, un, c->delsp, o.p + o.len, o.cap - o.len, &full);
		} else {
			put_lines(&o, u, un);
		}
		if (full)
			o.full = true;
	}
	s->len = base;
	if (r < 0)
		return r;
	/* Trailing line ends and spaces carry nothing for search. */
	while (o.len && (buf[o.len - 1] == '\n' || buf[o.len - 1] == ' '))
		o.len--;
	size_t lead = 0;
	while (lead < o.len && (buf[lead] == '\n' || buf[lead] == ' '))
		lead++;
	buf[o.len] = '\0';
	m->text = (struct str){ buf + lead, o.len - lead };
	if (o.full) {
		m->text_truncated = true;
		mail_warn(&m->warnings, MAIL_W_TEXT_TRUNCATED);
	}
	return 0;
}

int mime_parse(struct mail_ctx *ctx, const struct mail_options *o,
               const uint8_t *p, size_t n, const struct header_block *hb,
               struct mail_message *m)
{
	struct mime_walk *w = arena_alloc(&ctx->arena, sizeof(*w));
	if (!w)
		return -ENOMEM;
	memset(w, 0, MIME_WALK_STATE);
	w->ctx = ctx;
	w->o = o;
	w->p = p;
	w->n = n;
	w->m = m;
	w->w = &m->warnings;

	struct entity top;
	int r = entity_read(w, hb, &top);
	if (r < 0)
		return r;
	m->content_type = type_string(w, &top, "text/plain");
	if (!m->content_type.p)
		return -ENOMEM;
	size_t bs = hb->body_offset < n ? hb->body_offset : n;
	if ((r = walk_run_at(w, &top, bs, 0)) < 0)
		return r;
	m->parts = w->parts;
	m->attachments = w->att;
	m->n_attachments = w->natt;
	if (o->want_text)
		return text_build(w);
	return 0;
}
