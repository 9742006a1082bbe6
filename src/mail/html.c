/* SPDX-License-Identifier: MIT */
/* HTML to text: see html.h.
 *
 * One forward pass over the input with a small state: the pending separator
 * (none, space, line break, paragraph break) that the next text will be
 * preceded by, whether we are inside <head>, and the <pre> depth.  Separators
 * are only written when text follows, so the output never starts or ends
 * with white space and never holds two separators in a row.  Skipping a
 * comment, a tag or the raw text of script/style searches forward with
 * memchr/memmem from where the scan is, so every byte is visited a bounded
 * number of times (linear even on unclosed constructs, which run to the end
 * of the input as in browsers).  No allocation: the caller's buffer is the
 * only output, and writing stops cleanly when it is full. */
#include "mail/html.h"
#include "core/utf8.h"

#include <string.h>
#include <strings.h>

struct html_entity {
	const char *name;
	int32_t cp, cp2;
};

#include "mail/html_entities.h"

int32_t html_entity_lookup(const char *name, size_t n, int32_t *second)
{
	if (second)
		*second = 0;
	size_t lo = 0, hi = sizeof(entities) / sizeof(entities[0]);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *e = entities[mid].name;
		size_t en = strlen(e);
		int c = memcmp(name, e, n < en ? n : en);
		if (c == 0)
			c = n < en ? -1 : n > en ? 1 : 0;
		if (c == 0) {
			if (second)
				*second = entities[mid].cp2;
			return entities[mid].cp;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* HTML5 8.2.4: numeric references 0x80..0x9F mean windows-1252. */
static const uint16_t cp1252_c1[32] = {
	0x20AC, 0xFFFD, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0xFFFD, 0x017D, 0xFFFD,
	0xFFFD, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0xFFFD, 0x017E, 0x0178,
};

enum sep { SEP_NONE, SEP_SPACE, SEP_LINE, SEP_PARA };

struct html {
	const uint8_t *p;
	size_t n, i;
	char *out;
	size_t cap, len;
	enum sep sep;
	bool in_head;
	unsigned pre;
	bool full;
	bool in_link;             /* inside <a href>: its text starts at link_out */
	size_t link_out, href_s, href_e;
};

/* Byte classes of text content. */
enum { C_TEXT = 0, C_WS = 1, C_LT = 2, C_AMP = 3, C_C2 = 4 };
static const uint8_t text_class[256] = {
	['\t'] = C_WS, ['\n'] = C_WS, ['\f'] = C_WS, ['\r'] = C_WS, [' '] = C_WS,
	['<'] = C_LT, ['&'] = C_AMP, [0xC2] = C_C2,
};

static inline void want_sep(struct html *h, enum sep s)
{
	if (s > h->sep)
		h->sep = s;
}

/* Writes the pending separator; false when the output is full. */
static bool flush_sep(struct html *h)
{
	static const char seps[][3] = { "", " ", "\n", "\n\n" };
	size_t k = h->sep == SEP_PARA ? 2 : h->sep == SEP_NONE ? 0 : 1;
	if (h->len == 0 || k == 0) {     /* never lead with white space */
		h->sep = SEP_NONE;
		return true;
	}
	if (h->cap - h->len < k) {
		h->full = true;
		return false;
	}
	memcpy(h->out + h->len, seps[h->sep], k);
	h->len += k;
	h->sep = SEP_NONE;
	return true;
}

/* Appends text (flushing the separator first).  On a full buffer the text is
 * cut on a character boundary. */
static bool put(struct html *h, const uint8_t *s, size_t k)
{
	if (h->in_head)
		return true;         /* <head> content is dropped */
	if (!flush_sep(h))
		return false;
	size_t room = h->cap - h->len;
	if (k > room) {
		size_t cut = utf8_cut((const uint8_t *)s, room);
		memcpy(h->out + h->len, s, cut);
		h->len += cut;
		h->full = true;
		return false;
	}
	memcpy(h->out + h->len, s, k);
	h->len += k;
	return true;
}

static bool put_cp(struct html *h, uint32_t cp)
{
	uint8_t b[4];
	size_t k;
	if (cp == 0xA0 || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\f' || cp == ' ') {
		if (h->pre && cp != 0xA0) {
			b[0] = (uint8_t)cp;
			return put(h, b, 1);
		}
		want_sep(h, SEP_SPACE);
		return true;
	}
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp < 0x20 || cp == 0x7F)
		cp = 0xFFFD;
	if (cp < 0x80) {
		b[0] = (uint8_t)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (uint8_t)(0xC0 | cp >> 6);
		b[1] = (uint8_t)(0x80 | (cp & 0x3F));
		k = 2;
	} else if (cp < 0x10000) {
		b[0] = (uint8_t)(0xE0 | cp >> 12);
		b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (uint8_t)(0x80 | (cp & 0x3F));
		k = 3;
	} else {
		b[0] = (uint8_t)(0xF0 | cp >> 18);
		b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (uint8_t)(0x80 | (cp & 0x3F));
		k = 4;
	}
	return put(h, b, k);     /* whole or not at all: put cuts on a boundary */
}

static inline bool is_alnum(uint8_t c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* The bytes of code point cp in UTF-8. */
static size_t utf8_len(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* At `&`: decodes a character reference, or writes the `&` literally. */
static bool entity(struct html *h)
{
	const uint8_t *p = h->p;
	size_t n = h->n, i = h->i + 1;
	if (i < n && p[i] == '#') {
		bool hex = i + 1 < n && (p[i + 1] == 'x' || p[i + 1] == 'X');
		size_t j = i + 1 + hex, digits = 0;
		uint32_t v = 0;
		for (; j < n; j++, digits++) {
			uint8_t c = p[j], d;
			if (c >= '0' && c <= '9')
				d = (uint8_t)(c - '0');
			else if (hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
				d = (uint8_t)((c | 0x20) - 'a' + 10);
			else
				break;
			v = v > 0x10FFFF ? v : v * (hex ? 16 : 10) + d;
		}
		if (digits) {
			if (j < n && p[j] == ';')
				j++;
			h->i = j;
			if (v >= 0x80 && v <= 0x9F)
				v = cp1252_c1[v - 0x80];
			return put_cp(h, v);
		}
	} else {
		size_t j = i;
		while (j < n && j - i < 32 && is_alnum(p[j]))
			j++;
		if (j > i) {
			int32_t cp2, cp = html_entity_lookup((const char *)p + i, j - i, &cp2);
			size_t end = j < n && p[j] == ';' ? j + 1 : j;
			/* The text is never longer than the HTML it came from
			 * (html.h): the few references whose characters take more
			 * bytes than they do (two code points under a short name,
			 * as &nLt;) stay as written. */
			if (cp >= 0 && utf8_len((uint32_t)cp) + (cp2 ? utf8_len((uint32_t)cp2) : 0) <= end - h->i) {
				h->i = end;
				return put_cp(h, (uint32_t)cp) && (!cp2 || put_cp(h, (uint32_t)cp2));
			}
		}
	}
	h->i++;
	return put(h, (const uint8_t *)"&", 1);
}

/* Text up to the next `<` (or the end). */
static bool text(struct html *h)
{
	const uint8_t *p = h->p;
	size_t n = h->n;
	while (h->i < n) {
		size_t s = h->i, i = s;
		/* One space between two words is written as itself (put()
		 * flushes the separator it asks for as one space), so it
		 * joins the run: a run is then a line, not a word. */
		bool join = !h->pre && !h->in_head;
		for (;;) {
			while (i < n && text_class[p[i]] == C_TEXT)
				i++;
			if (!join || i == s || n - i < 2 || p[i] != ' ' || text_class[p[i + 1]] != C_TEXT)
				break;
			i += 2;
		}
		if (i > s && !put(h, p + s, i - s))
			return false;
		h->i = i;
		if (i == n)
			break;
		switch (text_class[p[i]]) {
		case C_WS:
			if (h->pre) {
				if (!put(h, p + i, 1))
					return false;
			} else {
				want_sep(h, SEP_SPACE);
			}
			h->i++;
			break;
		case C_LT:
			return true;
		case C_AMP:
			if (!entity(h))
				return false;
			break;
		case C_C2:
			/* U+00A0 written raw is white space, as &nbsp; is. */
			if (i + 1 < n && p[i + 1] == 0xA0) {
				want_sep(h, SEP_SPACE);
				h->i += 2;
			} else {
				/* The whole character (lead and continuation
				 * byte), so that a full buffer never cuts it. */
				size_t k = i + 1 < n && (p[i + 1] & 0xC0) == 0x80 ? 2 : 1;
				if (!put(h, p + i, k))
					return false;
				h->i += k;
			}
			break;
		}
	}
	return true;
}

static bool name_is(const char *name, size_t k, const char *lit)
{
	/* Each tag is compared with a few dozen names: the first letter
	 * turns most away before strlen. */
	if (k && lit[0] != name[0])
		return false;
	return strlen(lit) == k && memcmp(name, lit, k) == 0;
}

static bool name_in(const char *name, size_t k, const char *const *list)
{
	for (; *list; list++)
		if (name_is(name, k, *list))
			return true;
	return false;
}

/* Elements that end a line, and those that end a paragraph. */
static const char *const line_tags[] = {
	"address", "article", "aside", "caption", "center", "dd", "details", "dir",
	"div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
	"frame", "header", "li", "main", "menu", "nav", "option", "section",
	"summary", "tbody", "tfoot", "thead", "tr", NULL,
};
static const char *const para_tags[] = {
	"blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "ol", "p",
	"table", "ul", NULL,
};

/* Skips raw text up to the end tag `</name` (case-insensitive). */
static void skip_raw(struct html *h, const char *name, size_t k)
{
	const uint8_t *p = h->p;
	size_t n = h->n, i = h->i;
	while (i < n) {
		const uint8_t *lt = memchr(p + i, '<', n - i);
		if (!lt)
			break;
		i = (size_t)(lt - p) + 1;
		if (i + k < n && p[i] == '/') {
			size_t m = 0;
			while (m < k && (p[i + 1 + m] | 0x20) == (uint8_t)name[m])
				m++;
			if (m == k && (i + 1 + k >= n || !is_alnum(p[i + 1 + k]))) {
				h->i = i - 1;    /* the end tag itself is parsed normally */
				return;
			}
		}
	}
	h->i = n;
}

/* The value of attribute `want` (lower case) among the attributes at
 * p[s..e) (after the tag name, up to its `>`), as browsers split them. */
static bool attr_get(const uint8_t *p, size_t s, size_t e, const char *want, size_t *vs, size_t *ve)
{
	size_t i = s, wn = strlen(want);
	while (i < e) {
		while (i < e && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n' || p[i] == '/'))
			i++;
		size_t ns = i;
		while (i < e && p[i] != '=' && p[i] != ' ' && p[i] != '\t' && p[i] != '\r' &&
		       p[i] != '\n' && p[i] != '/')
			i++;
		size_t ne = i;
		while (i < e && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
			i++;
		size_t a = i, b = i;
		if (i < e && p[i] == '=') {
			i++;
			while (i < e && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
				i++;
			if (i < e && (p[i] == '"' || p[i] == '\'')) {
				const uint8_t *q = memchr(p + i + 1, p[i], e - i - 1);
				a = i + 1;
				b = q ? (size_t)(q - p) : e;
				i = q ? b + 1 : e;
			} else {
				a = i;
				while (i < e && p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
					i++;
				b = i;
			}
		}
		if (ne - ns == wn) {
			size_t k = 0;
			while (k < wn && (p[ns + k] | 0x20) == want[k])
				k++;
			if (k == wn) {
				*vs = a;
				*ve = b;
				return true;
			}
		}
		if (ne == ns && i == a)
			i++;      /* a stray byte: never stall */
	}
	return false;
}

/* Writes p[s..e) (an attribute value) as text: references decoded, white
 * space collapsed. */
static bool put_value(struct html *h, size_t s, size_t e)
{
	const uint8_t *p = h->p;
	size_t n = h->n, i = h->i;
	h->n = e;
	h->i = s;
	bool ok = true;
	while (ok && h->i < e) {
		ok = text(h);
		if (ok && h->i < e) {       /* a `<` inside the value is text */
			ok = put(h, (const uint8_t *)"<", 1);
			h->i++;
		}
	}
	h->p = p;
	h->n = n;
	h->i = i;
	return ok;
}

/* "scheme://" and a trailing "/" left out, for comparing a target with
 * the text that shows it. */
static void strip_url(const char **s, size_t *k)
{
	static const char *const schemes[] = { "mailto:", "http://", "https://", NULL };
	for (const char *const *sc = schemes; *sc; sc++) {
		size_t l = strlen(*sc);
		if (*k >= l && !strncasecmp(*s, *sc, l)) {
			*s += l;
			*k -= l;
			break;
		}
	}
	if (*k && (*s)[*k - 1] == '/')
		(*k)--;
}

/* At the end of a link: its target in parentheses after its text, unless
 * the text shows it already (`http://x.org` for http://x.org/, `a@b` for
 * mailto:a@b), there is no text (an image without alt: a tracking link,
 * most often), or it leads nowhere a reader can go (`#top`, javascript:).
 * The target is written, then compared with the text, and taken back when
 * it is not wanted. */
static bool link_end(struct html *h)
{
	h->in_link = false;
	const char *u = (const char *)h->p + h->href_s;
	size_t un = h->href_e - h->href_s;
	while (un && (*u == ' ' || *u == '\t' || *u == '\r' || *u == '\n'))
		u++, un--;
	if (h->in_head || !un || *u == '#' || (un >= 11 && !strncasecmp(u, "javascript:", 11)))
		return true;
	size_t before = h->len;
	enum sep sep = h->sep;
	want_sep(h, SEP_SPACE);
	if (!put(h, (const uint8_t *)"(", 1))
		return false;
	size_t url_at = h->len;
	if (!put_value(h, (size_t)(u - (const char *)h->p), h->href_e))
		return false;
	size_t url_end = h->len;
	if (!put(h, (const uint8_t *)")", 1))
		return false;
	const char *t = h->out + h->link_out, *v = h->out + url_at;
	size_t tn = before - h->link_out, vn = url_end - url_at;
	while (tn && (*t == ' ' || *t == '\n'))
		t++, tn--;
	while (tn && (t[tn - 1] == ' ' || t[tn - 1] == '\n'))
		tn--;
	strip_url(&t, &tn);
	strip_url(&v, &vn);
	if (tn == 0 || (tn == vn && !strncasecmp(t, v, tn))) {
		h->len = before;
		h->sep = sep;
	} else {
		want_sep(h, SEP_SPACE);
	}
	return true;
}

/* At `<`.  Returns false when the output is full. */
static bool tag(struct html *h)
{
	const uint8_t *p = h->p;
	size_t n = h->n, i = h->i + 1;

	if (i >= n) {
		h->i = n;
		return put(h, (const uint8_t *)"<", 1);
	}
	if (p[i] == '!') {
		if (i + 2 < n && p[i + 1] == '-' && p[i + 2] == '-') {
			/* Comment: to `-->`; unclosed runs to the end.  Each `>`
			 * is looked at once (memmem would restart its search,
			 * and sanitizers check its whole haystack per call). */
			size_t j = i + 3;
			h->i = n;
			while (j < n) {
				const uint8_t *gt = memchr(p + j, '>', n - j);
				if (!gt)
					break;
				size_t g = (size_t)(gt - p);
				if (g >= i + 3 && p[g - 1] == '-' && p[g - 2] == '-') {
					h->i = g + 1;
					break;
				}
				j = g + 1;
			}
			return true;
		}
		const uint8_t *e = memchr(p + i, '>', n - i);   /* <!DOCTYPE ...> */
		h->i = e ? (size_t)(e - p) + 1 : n;
		return true;
	}
	if (p[i] == '?') {
		const uint8_t *e = memchr(p + i, '>', n - i);
		h->i = e ? (size_t)(e - p) + 1 : n;
		return true;
	}
	bool end = p[i] == '/';
	if (end)
		i++;
	if (i >= n || !((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'z')) {
		/* Not a tag (`a < b`, `</ 3`): the `<` is text. */
		h->i++;
		return put(h, (const uint8_t *)"<", 1);
	}
	char name[16];
	size_t k = 0;
	while (i < n && is_alnum(p[i])) {
		if (k < sizeof(name))
			name[k] = (char)(p[i] | 0x20);
		k++;
		i++;
	}
	if (k > sizeof(name))
		k = 0;          /* too long to be one we know */
	size_t name_end_at = i;
	/* Attributes, to `>`.  A quote opens a value only after `=`, as in
	 * browsers; an unclosed quote or tag runs to the end of the input. */
	bool after_eq = false, self_close = false;
	while (i < n && p[i] != '>') {
		uint8_t c = p[i];
		if ((c == '"' || c == '\'') && after_eq) {
			const uint8_t *q = i + 1 < n ? memchr(p + i + 1, c, n - i - 1) : NULL;
			i = q ? (size_t)(q - p) + 1 : n;
			after_eq = false;
			continue;
		}
		if (c == '=')
			after_eq = true;
		else if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			after_eq = false;
		self_close = c == '/';
		i++;
	}
	size_t attrs = name_end_at, attrs_end = i;
	h->i = i < n ? i + 1 : n;
	if (k == 0)
		return true;

	if (name_is(name, k, "a")) {
		if (h->in_link && !link_end(h))
			return false;
		size_t vs, ve;
		if (!end && attr_get(p, attrs, attrs_end, "href", &vs, &ve)) {
			h->in_link = true;
			h->link_out = h->len;
			h->href_s = vs;
			h->href_e = ve;
		}
		return true;
	}
	if (name_is(name, k, "img") && !end) {
		size_t vs, ve;
		if (attr_get(p, attrs, attrs_end, "alt", &vs, &ve) && ve > vs) {
			want_sep(h, SEP_SPACE);
			if (!put_value(h, vs, ve))
				return false;
			want_sep(h, SEP_SPACE);
		}
		return true;
	}

	if (!end && (name_is(name, k, "script") || name_is(name, k, "style") ||
	             name_is(name, k, "title") || name_is(name, k, "textarea") ||
	             name_is(name, k, "xmp"))) {
		if (!self_close) {
			if (name_is(name, k, "textarea") || name_is(name, k, "xmp"))
				return true;     /* raw text, but shown: keep it */
			skip_raw(h, name, k);
		}
		return true;
	}
	if (name_is(name, k, "head")) {
		h->in_head = !end;
		return true;
	}
	if (name_is(name, k, "body")) {
		h->in_head = false;
		return true;
	}
	if (name_is(name, k, "br")) {
		h->sep = h->sep < SEP_LINE ? SEP_LINE : SEP_PARA;
		return true;
	}
	if (name_is(name, k, "pre")) {
		if (end && h->pre)
			h->pre--;
		else if (!end)
			h->pre++;
		want_sep(h, SEP_PARA);
		return true;
	}
	if (name_is(name, k, "td") || name_is(name, k, "th")) {
		want_sep(h, SEP_SPACE);
		return true;
	}
	if (name_in(name, k, para_tags))
		want_sep(h, SEP_PARA);
	else if (name_in(name, k, line_tags))
		want_sep(h, SEP_LINE);
	return true;
}

size_t html_to_text(const uint8_t *in, size_t n, char *out, size_t cap, bool *full)
{
	struct html h = { .p = in, .n = n, .out = out, .cap = cap };
	while (h.i < n) {
		if (!text(&h))
			break;
		if (h.i < n && !tag(&h))
			break;
	}
	if (h.in_link && !h.full)
		link_end(&h);     /* an unclosed <a> ends with the input */
	if (full)
		*full = h.full;
	return h.len;
}
