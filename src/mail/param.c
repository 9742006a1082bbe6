/* SPDX-License-Identifier: MIT */
/* Content-Type and Content-Disposition values with their parameters:
 * see param.h.
 *
 * Two passes.  The first cuts the value into `type/subtype` and raw
 * parameters (name, RFC 2231 section and extended flag, value with quoting
 * removed), scanning each byte once.  The second groups raw parameters by
 * name, in order of first appearance, and assembles each: RFC 2231 sections
 * (section 3) in index order, percent-decoded where extended (section 4),
 * converted from the charset of section 0; a plain value is RFC 2047-decoded
 * leniently (Outlook's `name="=?UTF-8?B?...?="`).  When a name comes both
 * plain and as RFC 2231, the RFC 2231 form wins (it is what the sender meant
 * for readers that understand it; the plain one is the fallback).
 *
 * Grouping is quadratic in the number of parameters, so that number is
 * capped at LIMIT_PARAMS per value (more is hostile: the rest is skipped with
 * MAIL_W_BAD_PARAMETER); everything else is linear.  Views of the input
 * where nothing changes, else copies in the arena. */
#include "core/hex.h"
#include "core/limits.h"
#include "mail/param.h"
#include "mail/header.h"
#include "mail/charset.h"
#include "mail/encoded_word.h"
#include "mail/mail_ctx.h"

#include <errno.h>
#include <string.h>


struct param_raw {
	struct str name;   /* lower case, suffixes removed */
	int section;            /* -1: not a continuation */
	bool extended;          /* RFC 2231 `*`: charset'lang' and %XX */
	struct str value;  /* quotes removed */
	bool used;
};

static inline bool param_is_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Lower case copy, or a view when already lower case. */
static int param_lower(struct arena *a, const char *p, size_t n, struct str *out)
{
	size_t i = 0;
	while (i < n && !(p[i] >= 'A' && p[i] <= 'Z'))
		i++;
	if (i == n) {
		*out = (struct str){ p, n };
		return 0;
	}
	char *d = arena_alloc(a, n + 1);
	if (!d)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		d[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
	d[n] = '\0';
	*out = (struct str){ d, n };
	return 0;
}

/* Skips white space and RFC 5322 comments. */
static size_t param_skip_cfws(const uint8_t *p, size_t n, size_t i)
{
	while (i < n) {
		if (param_is_space(p[i])) {
			i++;
		} else if (p[i] == '(') {
			i = header_skip_comment(p, n, i);
		} else {
			break;
		}
	}
	return i;
}

static inline bool param_is_tspecial_end(uint8_t c)
{
	return param_is_space(c) || c == ';' || c == '/' || c == '(' || c == '"' || c == '=';
}

/* Splits an RFC 2231 name (`title*0*`) into base, section and flag. */
static void param_split_name(struct param_raw *r)
{
	const char *p = r->name.p;
	size_t n = r->name.n;
	r->section = -1;
	r->extended = false;
	if (n > 1 && p[n - 1] == '*') {
		r->extended = true;
		n--;
	}
	size_t d = n;
	while (d > 0 && p[d - 1] >= '0' && p[d - 1] <= '9')
		d--;
	if (d < n && d > 1 && p[d - 1] == '*' && n - d <= 4) {
		int v = 0;
		for (size_t k = d; k < n; k++)
			v = v * 10 + (p[k] - '0');
		if (v <= LIMIT_PARAM_SECTION) {
			r->section = v;
			n = d - 1;
		}
	}
	r->name.n = n;
}

/* Parses one value at p[*i] (after `=` and white space): a quoted string,
 * whose `\"` and `\\` are unescaped (other backslashes are kept: Windows
 * paths in filenames), or a token running to `;`, without a trailing
 * comment.  Leaves *i at the `;` or the end. */
static int param_value(struct arena *a, const uint8_t *p, size_t n, size_t *i,
                       struct str *out, uint64_t *warnings)
{
	size_t j = *i;
	if (j < n && p[j] == '"') {
		size_t s = ++j;
		bool esc = false;
		while (j < n && p[j] != '"') {
			if (p[j] == '\\' && j + 1 < n && (p[j + 1] == '"' || p[j + 1] == '\\')) {
				esc = true;
				j++;
			}
			j++;
		}
		size_t e = j < n ? j : n;
		if (j >= n)
			mail_warn(warnings, MAIL_W_BAD_PARAMETER);   /* unterminated */
		if (!esc) {
			*out = (struct str){ (const char *)p + s, e - s };
		} else {
			char *d = arena_alloc(a, e - s + 1);
			if (!d)
				return -ENOMEM;
			size_t k = 0;
			for (size_t x = s; x < e; x++) {
				if (p[x] == '\\' && x + 1 < e && (p[x + 1] == '"' || p[x + 1] == '\\'))
					x++;
				d[k++] = (char)p[x];
			}
			d[k] = '\0';
			*out = (struct str){ d, k };
		}
		const uint8_t *semi = j < n ? memchr(p + j, ';', n - j) : NULL;
		*i = semi ? (size_t)(semi - p) : n;
		return 0;
	}
	const uint8_t *semi = memchr(p + j, ';', n - j);
	size_t e = semi ? (size_t)(semi - p) : n;
	*i = e;
	/* `charset=us-ascii (Plain text)`: a comment after white space ends
	 * the token (white space inside is kept: `name=my file.pdf`). */
	for (size_t k = j + 1; k < e; k++) {
		if (p[k] == '(' && param_is_space(p[k - 1])) {
			e = k;
			break;
		}
	}
	while (e > j && param_is_space(p[e - 1]))
		e--;
	*out = (struct str){ (const char *)p + j, e - j };
	return 0;
}

/* Appends p[0..n) to d, percent-decoded when extended (RFC 2231 4; an
 * invalid escape is kept as written). */
static size_t param_bytes(struct str v, bool extended, uint8_t *d, uint64_t *warnings)
{
	const uint8_t *p = (const uint8_t *)v.p;
	size_t k = 0;
	for (size_t i = 0; i < v.n; i++) {
		int h, l;
		if (extended && p[i] == '%' && i + 2 < v.n &&
		    (h = hex_digit(p[i + 1])) >= 0 && (l = hex_digit(p[i + 2])) >= 0) {
			d[k++] = (uint8_t)(h << 4 | l);
			i += 2;
		} else {
			/* RFC 2231 7: ext-octet is "%" 2HEXDIG. */
			if (extended && p[i] == '%')
				mail_warn(warnings, MAIL_W_BAD_PARAMETER);
			d[k++] = p[i];
		}
	}
	return k;
}

/* Assembles the RFC 2231 parameters of raw[] named `name`. */
static int param_assemble_2231(struct mail_ctx *ctx, struct param_raw *raw, size_t n_raw,
                               struct str name, struct str *out,
                               uint64_t *warnings)
{
	/* Order: a lone `name*` first, then sections by index. */
	size_t total = 0;
	for (size_t k = 0; k < n_raw; k++)
		if (raw[k].name.n == name.n && memcmp(raw[k].name.p, name.p, name.n) == 0 &&
		    (raw[k].extended || raw[k].section >= 0))
			total += raw[k].value.n;
	uint8_t *buf = arena_alloc(&ctx->arena, total + 1);
	if (!buf)
		return -ENOMEM;
	size_t len = 0;
	struct str charset = STR_NULL;
	bool first = true;
	int last = -2;
	for (;;) {
		/* The smallest section above the last one taken (duplicates of a
		 * section are ignored, gaps are closed). */
		struct param_raw *best = NULL;
		for (size_t k = 0; k < n_raw; k++) {
			struct param_raw *r = &raw[k];
			if (r->name.n != name.n || memcmp(r->name.p, name.p, name.n) != 0 ||
			    !(r->extended || r->section >= 0) || r->section <= last)
				continue;
			if (!best || r->section < best->section)
				best = r;
		}
		if (!best)
			break;
		last = best->section;
		struct str v = best->value;
		if (first && best->extended) {
			/* RFC 2231 4: charset'language'value.  Without both
			 * quotes the value is taken whole, charset unknown. */
			const char *q1 = memchr(v.p, '\'', v.n);
			const char *q2 = q1 ? memchr(q1 + 1, '\'', v.n - (size_t)(q1 + 1 - v.p)) : NULL;
			if (q2) {
				if (q1 > v.p)
					charset = (struct str){ v.p, (size_t)(q1 - v.p) };
				v = (struct str){ q2 + 1, v.n - (size_t)(q2 + 1 - v.p) };
			}
		}
		first = false;
		len += param_bytes(v, best->extended, buf + len, warnings);
		if (best->section < 0)
			break;     /* `name*`: not a continuation, the whole value */
	}
	struct dynbuf *sb = &ctx->scratch;
	size_t base = sb->len;
	uint64_t replaced = 0;
	int r = charset_decode(ctx, charset, buf, len, sb, warnings, &replaced);
	if (r < 0) {
		sb->len = base;
		return r;
	}
	char *d = arena_memdup(&ctx->arena, sb->p + base, sb->len - base);
	*out = (struct str){ d, sb->len - base };
	sb->len = base;
	return d ? 0 : -ENOMEM;
}

int param_parse(struct mail_ctx *ctx, struct str in, struct mime_type *out,
                uint64_t *warnings)
{
	const uint8_t *p = (const uint8_t *)in.p;
	size_t n = in.n, i;
	uint64_t w_dummy = 0;
	int r;
	if (!warnings)
		warnings = &w_dummy;
	*out = (struct mime_type){ 0 };

	/* type/subtype, or a disposition token (subtype empty). */
	i = param_skip_cfws(p, n, 0);
	size_t ts = i;
	while (i < n && !param_is_tspecial_end(p[i]))
		i++;
	size_t te = i;
	i = param_skip_cfws(p, n, i);
	if (te > ts) {
		if ((r = param_lower(&ctx->arena, (const char *)p + ts, te - ts, &out->type)) < 0)
			return r;
		out->subtype = (struct str){ "", 0 };
		if (i < n && p[i] == '/') {
			i = param_skip_cfws(p, n, i + 1);
			size_t ss = i;
			while (i < n && !param_is_tspecial_end(p[i]))
				i++;
			if ((r = param_lower(&ctx->arena, (const char *)p + ss, i - ss, &out->subtype)) < 0)
				return r;
			if (i == ss)
				out->type = STR_NULL;   /* `text/`: unparseable */
		}
	}

	/* Raw parameters. */
	size_t cap = 0;
	for (const uint8_t *q = memchr(p, ';', n); q && cap < LIMIT_PARAMS;
	     q = memchr(q + 1, ';', n - (size_t)(q + 1 - p)))
		cap++;
	if (!cap)
		return 0;
	struct param_raw *raw = arena_alloc(&ctx->arena, cap * sizeof(*raw));
	if (!raw)
		return -ENOMEM;
	size_t n_raw = 0;
	const uint8_t *semi = i < n ? memchr(p + i, ';', n - i) : NULL;
	i = semi ? (size_t)(semi - p) : n;
	while (i < n) {
		i = param_skip_cfws(p, n, i + 1);       /* past the `;` */
		if (i >= n)
			break;
		size_t ns = i;
		while (i < n && !param_is_tspecial_end(p[i]) && p[i] != '/')
			i++;
		size_t ne = i;
		while (i < n && param_is_space(p[i]))
			i++;
		if (ne == ns || i >= n || p[i] != '=') {
			/* `;;` is harmless; anything else is not a parameter. */
			if (!(ne == ns && i < n && p[i] == ';'))
				mail_warn(warnings, MAIL_W_BAD_PARAMETER);
			semi = i < n ? memchr(p + i, ';', n - i) : NULL;
			i = semi ? (size_t)(semi - p) : n;
			continue;
		}
		i++;
		while (i < n && param_is_space(p[i]))
			i++;
		if (n_raw == cap) {
			mail_warn(warnings, MAIL_W_BAD_PARAMETER);   /* past LIMIT_PARAMS */
			break;
		}
		struct param_raw *pr = &raw[n_raw];
		*pr = (struct param_raw){ 0 };
		if ((r = param_lower(&ctx->arena, (const char *)p + ns, ne - ns, &pr->name)) < 0 ||
		    (r = param_value(&ctx->arena, p, n, &i, &pr->value, warnings)) < 0)
			return r;
		param_split_name(pr);
		n_raw++;
	}
	if (!n_raw)
		return 0;

	/* Assembly, one output parameter per name. */
	struct mime_param *v = arena_alloc(&ctx->arena, n_raw * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t nv = 0;
	for (size_t k = 0; k < n_raw; k++) {
		if (raw[k].used)
			continue;
		struct str name = raw[k].name;
		bool rfc2231 = false;
		struct param_raw *plain = NULL;
		for (size_t j = k; j < n_raw; j++) {
			if (raw[j].name.n != name.n || memcmp(raw[j].name.p, name.p, name.n) != 0)
				continue;
			raw[j].used = true;
			if (raw[j].extended || raw[j].section >= 0)
				rfc2231 = true;
			else if (!plain)
				plain = &raw[j];   /* the first of duplicates wins */
		}
		struct mime_param *mp = &v[nv++];
		mp->name = name;
		/* Not RFC 2231 means raw[k] itself is plain, so plain is set;
		 * the test says so to the compiler (-Wnull-dereference). */
		if (rfc2231 || !plain)
			r = param_assemble_2231(ctx, raw, n_raw, name, &mp->value, warnings);
		else
			r = encoded_word_decode(ctx, plain->value, &mp->value, warnings);
		if (r < 0)
			return r;
	}
	out->params = v;
	out->n_params = nv;
	return 0;
}

struct str param_get(const struct mime_type *t, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < t->n_params; i++)
		if (t->params[i].name.n == len && memcmp(t->params[i].name.p, name, len) == 0)
			return t->params[i].value;
	return STR_NULL;
}
