/* Charsets to UTF-8: see charset.h.
 *
 * Every decoded byte of a message passes through charset_decode(), so it
 * keeps three paths.  US-ASCII and UTF-8 are validated here with no iconv
 * (most mail).  Windows-1252, which is also what ISO-8859-1 and every
 * unknown label mean (as in WHATWG's Encoding Standard, which mail readers
 * follow), is a table here too.  Everything else goes through glibc iconv,
 * one descriptor per normalised label, opened on first use and kept until
 * charset_cache_free(): glibc unloads a gconv module with its last
 * descriptor, so reopening per message would cost syscalls each time.
 *
 * Invariants: output is always valid UTF-8; every input byte that cannot be
 * decoded becomes U+FFFD and is counted in *replaced (never dropped); a
 * cache belongs to one thread (iconv_t is stateful) and holds at most
 * CHARSET_CACHE_SLOTS descriptors, so hostile mail naming a thousand
 * charsets cannot grow it.  No other global state: the tables are const. */
#include "mail/charset.h"
#include "mail/mail_ctx.h"
#include "core/xalloc.h"

#include <errno.h>
#include <iconv.h>
#include <string.h>

#define CHARSET_LABEL_MAX 40
#define CHARSET_CACHE_SLOTS 32

struct charset_slot {
	char label[CHARSET_LABEL_MAX + 1]; /* normalised, NUL-terminated */
	iconv_t cd;                        /* (iconv_t)-1: iconv refused it */
};

struct charset_cache {
	struct charset_slot slot[CHARSET_CACHE_SLOTS];
	size_t n;
};

enum charset_kind {
	CHARSET_UTF8,      /* US-ASCII or UTF-8: validate, replace invalid bytes */
	CHARSET_CP1252,    /* built-in table */
	CHARSET_UNKNOWN,   /* a placeholder label: windows-1252 plus a warning */
	CHARSET_ICONV,     /* name to hand to iconv_open */
};

struct charset_alias {
	const char *label;
	enum charset_kind kind;
	const char *iconv_name;
};

/* Labels as mail writes them, normalised (lower case, trimmed), mapped to
 * what we decode them as.  Mail readers decode the "legacy" labels as their
 * Microsoft supersets, because that is what the senders really used. */
static const struct charset_alias charset_aliases[] = {
	{ "utf-8", CHARSET_UTF8, NULL },
	{ "utf8", CHARSET_UTF8, NULL },
	{ "unicode-1-1-utf-8", CHARSET_UTF8, NULL },
	{ "x-unicode20utf8", CHARSET_UTF8, NULL },
	{ "us-ascii", CHARSET_UTF8, NULL },
	{ "ascii", CHARSET_UTF8, NULL },
	{ "us", CHARSET_UTF8, NULL },
	{ "ansi_x3.4-1968", CHARSET_UTF8, NULL },
	{ "iso646-us", CHARSET_UTF8, NULL },
	{ "646", CHARSET_UTF8, NULL },
	{ "windows-1252", CHARSET_CP1252, NULL },
	{ "cp1252", CHARSET_CP1252, NULL },
	{ "x-cp1252", CHARSET_CP1252, NULL },
	{ "win-1252", CHARSET_CP1252, NULL },
	{ "iso-8859-1", CHARSET_CP1252, NULL },
	{ "iso8859-1", CHARSET_CP1252, NULL },
	{ "iso_8859-1", CHARSET_CP1252, NULL },
	{ "iso_8859-1:1987", CHARSET_CP1252, NULL },
	{ "latin1", CHARSET_CP1252, NULL },
	{ "latin-1", CHARSET_CP1252, NULL },
	{ "l1", CHARSET_CP1252, NULL },
	{ "cp819", CHARSET_CP1252, NULL },
	{ "ibm819", CHARSET_CP1252, NULL },
	{ "iso-ir-100", CHARSET_CP1252, NULL },
	{ "csisolatin1", CHARSET_CP1252, NULL },
	{ "x-unknown", CHARSET_UNKNOWN, NULL },
	{ "unknown-8bit", CHARSET_UNKNOWN, NULL },
	{ "unknown", CHARSET_UNKNOWN, NULL },
	{ "x-user-defined", CHARSET_UNKNOWN, NULL },
	{ "default", CHARSET_UNKNOWN, NULL },
	{ "charset", CHARSET_UNKNOWN, NULL },
	{ "ks_c_5601-1987", CHARSET_ICONV, "CP949" },
	{ "ks_c_5601-1989", CHARSET_ICONV, "CP949" },
	{ "ks_c_5601", CHARSET_ICONV, "CP949" },
	{ "ksc5601", CHARSET_ICONV, "CP949" },
	{ "ksc_5601", CHARSET_ICONV, "CP949" },
	{ "euc-kr", CHARSET_ICONV, "CP949" },
	{ "korean", CHARSET_ICONV, "CP949" },
	{ "gb2312", CHARSET_ICONV, "GB18030" },
	{ "gbk", CHARSET_ICONV, "GB18030" },
	{ "x-gbk", CHARSET_ICONV, "GB18030" },
	{ "cp936", CHARSET_ICONV, "GB18030" },
	{ "csgb2312", CHARSET_ICONV, "GB18030" },
	{ "euc-cn", CHARSET_ICONV, "GB18030" },
	{ "chinese", CHARSET_ICONV, "GB18030" },
	{ "big5", CHARSET_ICONV, "BIG5-HKSCS" },
	{ "x-x-big5", CHARSET_ICONV, "BIG5-HKSCS" },
	{ "cn-big5", CHARSET_ICONV, "BIG5-HKSCS" },
	{ "shift_jis", CHARSET_ICONV, "CP932" },
	{ "shift-jis", CHARSET_ICONV, "CP932" },
	{ "sjis", CHARSET_ICONV, "CP932" },
	{ "x-sjis", CHARSET_ICONV, "CP932" },
	{ "ms_kanji", CHARSET_ICONV, "CP932" },
	{ "windows-31j", CHARSET_ICONV, "CP932" },
	{ "iso-8859-8-i", CHARSET_ICONV, "ISO-8859-8" },
	{ "iso-8859-8-e", CHARSET_ICONV, "ISO-8859-8" },
	{ "iso-8859-6-i", CHARSET_ICONV, "ISO-8859-6" },
	{ "iso-8859-6-e", CHARSET_ICONV, "ISO-8859-6" },
	{ "tis-620", CHARSET_ICONV, "CP874" },
	{ "iso-8859-11", CHARSET_ICONV, "CP874" },
	{ "windows-874", CHARSET_ICONV, "CP874" },
	{ "unicode-1-1-utf-7", CHARSET_ICONV, "UTF-7" },
	{ "utf7", CHARSET_ICONV, "UTF-7" },
	{ "x-utf-7", CHARSET_ICONV, "UTF-7" },
	{ "x-mac-roman", CHARSET_ICONV, "MACINTOSH" },
	{ "macintosh", CHARSET_ICONV, "MACINTOSH" },
	{ "mac", CHARSET_ICONV, "MACINTOSH" },
	{ "x-mac-cyrillic", CHARSET_ICONV, "MAC-CYRILLIC" },
	{ "x-mac-ukrainian", CHARSET_ICONV, "MACUKRAINIAN" },
	{ "x-mac-ce", CHARSET_ICONV, "MAC-CENTRALEUROPE" },
	{ "x-mac-centraleurroman", CHARSET_ICONV, "MAC-CENTRALEUROPE" },
	{ "x-mac-icelandic", CHARSET_ICONV, "MAC-IS" },
	{ "koi8-u", CHARSET_ICONV, "KOI8-RU" },
};

/* Windows-1252 0x80..0x9F.  The five bytes Microsoft leaves undefined map to
 * the C1 controls of the same value, as WHATWG does: nothing is lost. */
static const uint16_t cp1252_high[32] = {
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
};

struct charset_cache *charset_cache_new(void)
{
	struct charset_cache *c = xmalloc(sizeof(*c));
	if (c)
		c->n = 0;
	return c;
}

void charset_cache_free(struct charset_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		if (c->slot[i].cd != (iconv_t)-1)
			iconv_close(c->slot[i].cd);
	xfree(c);
}

size_t charset_cache_count(const struct charset_cache *c)
{
	return c ? c->n : 0;
}

static inline bool charset_is_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Lower case, without surrounding white space and quotes, and without an
 * RFC 2231 section 5 language suffix (`utf-8*en`).  Returns false for a label
 * that no charset can have (too long, or bytes iconv would interpret, such
 * as the `//TRANSLIT` suffix): those are unknown without asking iconv. */
static bool charset_normalise(struct mail_str in, char out[CHARSET_LABEL_MAX + 1])
{
	const uint8_t *p = (const uint8_t *)in.p;
	size_t n = in.n;
	while (n && (charset_is_space(*p) || *p == '"' || *p == '\'')) {
		p++;
		n--;
	}
	while (n && (charset_is_space(p[n - 1]) || p[n - 1] == '"' || p[n - 1] == '\''))
		n--;
	const uint8_t *star = memchr(p, '*', n);
	if (star)
		n = (size_t)(star - p);
	if (n == 0 || n > CHARSET_LABEL_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c + 32);
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		           c == '-' || c == '_' || c == '.' || c == ':' || c == '+' ||
		           c == '(' || c == ')' || c == '%'))
			return false;
		out[i] = (char)c;
	}
	out[n] = '\0';
	return true;
}

static int charset_put_cp(struct dynbuf *out, uint32_t cp)
{
	char b[4];
	size_t n;
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	}
	return dynbuf_append(out, b, n);
}

#define CHARSET_FFFD "\xEF\xBF\xBD"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid; then
 * *bad is the length of the maximal invalid subpart to replace by one
 * U+FFFD (Unicode 15, 3.9 "U+FFFD substitution of maximal subparts"). */
static size_t utf8_seq(const uint8_t *p, size_t n, size_t *bad)
{
	uint8_t c = p[0];
	size_t len;
	uint8_t lo = 0x80, hi = 0xBF;
	*bad = 1;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;          /* overlong */
		else if (c == 0xED)
			hi = 0x9F;          /* surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;          /* overlong */
		else if (c == 0xF4)
			hi = 0x8F;          /* past U+10FFFF */
	} else
		return 0;
	for (size_t i = 1; i < len; i++) {
		if (i >= n)
			return 0;
		uint8_t t = p[i];
		if (t < (i == 1 ? lo : 0x80) || t > (i == 1 ? hi : 0xBF))
			return 0;
		*bad = i + 1;
	}
	return len;
}

bool utf8_valid(const uint8_t *p, size_t n)
{
	size_t i = 0, bad;
	while (i < n) {
		/* ASCII runs dominate: take them eight bytes at a time. */
		while (i + 8 <= n) {
			uint64_t w;
			memcpy(&w, p + i, 8);
			if (w & UINT64_C(0x8080808080808080))
				break;
			i += 8;
		}
		if (i >= n)
			break;
		size_t l = utf8_seq(p + i, n - i, &bad);
		if (!l)
			return false;
		i += l;
	}
	return true;
}

static int charset_sanitize(const uint8_t *p, size_t n, struct dynbuf *out,
                            size_t *replaced)
{
	size_t i = 0, run = 0, bad;
	int r;
	while (i < n) {
		size_t l = utf8_seq(p + i, n - i, &bad);
		if (l) {
			i += l;
			continue;
		}
		/* Flush the valid run before i, then the replacement. */
		if ((r = dynbuf_append(out, p + run, i - run)) < 0 ||
		    (r = dynbuf_append(out, CHARSET_FFFD, 3)) < 0)
			return r;
		(*replaced)++;
		i += bad;
		run = i;
	}
	return dynbuf_append(out, p + run, n - run);
}

/* On allocation failure the output stops early (the count stays right for
 * what was appended); callers that must know use charset_decode(). */
size_t utf8_sanitize(const uint8_t *p, size_t n, struct dynbuf *out)
{
	size_t replaced = 0;
	charset_sanitize(p, n, out, &replaced);
	return replaced;
}

/* Replaces the invalid sequences of out->p[start..len) in place (through a
 * copy of that tail).  Rare: only a converter that misbehaved gets here. */
static int charset_resanitize(struct dynbuf *out, size_t start, uint64_t *replaced)
{
	size_t k = out->len - start, rep = 0;
	uint8_t *tmp = xmalloc(k ? k : 1);
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, out->p + start, k);
	out->len = start;
	int r = charset_sanitize(tmp, k, out, &rep);
	xfree(tmp);
	*replaced += rep;
	return r;
}

static int charset_decode_cp1252(const uint8_t *p, size_t n, struct dynbuf *out)
{
	/* At most three output bytes per input byte: reserve once. */
	int r = dynbuf_reserve(out, n > SIZE_MAX / 3 ? SIZE_MAX : n * 3);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		uint32_t cp = c >= 0x80 && c < 0xA0 ? cp1252_high[c - 0x80] : c;
		if (cp < 0x80)
			out->p[out->len++] = (char)cp;
		else if ((r = charset_put_cp(out, cp)) < 0)
			return r;
	}
	return 0;
}

/* The descriptor for a normalised label, opened on first use.  Returns
 * (iconv_t)-1 when iconv does not know the label.  *transient is set when
 * the cache is full and the caller must close the descriptor itself. */
static iconv_t charset_open(struct charset_cache *c, const char *label,
                            const char *iconv_name, bool *transient)
{
	*transient = false;
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->slot[i].label, label) == 0)
			return c->slot[i].cd;
	iconv_t cd = iconv_open("UTF-8", iconv_name);
	if (c->n < CHARSET_CACHE_SLOTS) {
		struct charset_slot *s = &c->slot[c->n++];
		strcpy(s->label, label);
		s->cd = cd;
	} else if (cd != (iconv_t)-1) {
		*transient = true;
	}
	return cd;
}

static int charset_decode_iconv(iconv_t cd, const uint8_t *p, size_t n,
                                struct dynbuf *out, uint64_t *replaced)
{
	char *in = (char *)(uintptr_t)p;   /* iconv's prototype lacks const */
	size_t inleft = n;
	int r;
	iconv(cd, NULL, NULL, NULL, NULL);      /* initial shift state */
	while (inleft) {
		if ((r = dynbuf_reserve(out, inleft * 2 + 16)) < 0)
			return r;
		char *o = out->p + out->len;
		size_t oleft = out->cap - out->len - 1;
		size_t k = iconv(cd, &in, &inleft, &o, &oleft);
		int e = errno;
		out->len = (size_t)(o - out->p);
		if (k != (size_t)-1 || e == E2BIG)
			continue;
		/* EILSEQ: an invalid sequence; EINVAL: an incomplete one at the
		 * end.  Either way one U+FFFD, one byte skipped, and go on: the
		 * next byte may start a valid sequence. */
		if ((r = dynbuf_append(out, CHARSET_FFFD, 3)) < 0)
			return r;
		(*replaced)++;
		in++;
		inleft--;
		iconv(cd, NULL, NULL, NULL, NULL);
	}
	/* Stateful encodings (ISO-2022-JP, UTF-7) may hold output back. */
	if ((r = dynbuf_reserve(out, 32)) < 0)
		return r;
	char *o = out->p + out->len;
	size_t oleft = out->cap - out->len - 1;
	iconv(cd, NULL, NULL, &o, &oleft);
	out->len = (size_t)(o - out->p);
	return 0;
}

int charset_decode(struct mail_ctx *ctx, struct mail_str label,
                   const uint8_t *p, size_t n, struct dynbuf *out,
                   uint64_t *warnings, uint64_t *replaced)
{
	uint64_t w_dummy = 0, r_dummy = 0;
	if (!warnings)
		warnings = &w_dummy;
	if (!replaced)
		replaced = &r_dummy;

	char norm[CHARSET_LABEL_MAX + 1];
	enum charset_kind kind = CHARSET_UTF8;
	const char *iconv_name = NULL;
	if (label.p) {
		if (!charset_normalise(label, norm)) {
			kind = CHARSET_UNKNOWN;
		} else if (norm[0] == '%') {
			kind = CHARSET_UNKNOWN;   /* an unexpanded template: %CHARSET */
		} else {
			kind = CHARSET_ICONV;
			iconv_name = norm;
			for (size_t i = 0; i < sizeof(charset_aliases) / sizeof(charset_aliases[0]); i++) {
				if (strcmp(charset_aliases[i].label, norm) == 0) {
					kind = charset_aliases[i].kind;
					if (charset_aliases[i].iconv_name)
						iconv_name = charset_aliases[i].iconv_name;
					break;
				}
			}
		}
	}

	if (kind == CHARSET_ICONV) {
		bool transient;
		iconv_t cd = ctx && ctx->charsets
			? charset_open(ctx->charsets, norm, iconv_name, &transient)
			: (iconv_t)-1;
		if (cd != (iconv_t)-1) {
			uint64_t before = *replaced;
			size_t start = out->len;
			int r = charset_decode_iconv(cd, p, n, out, replaced);
			if (transient)
				iconv_close(cd);
			/* glibc's own UTF-8 decoder (reached through aliases
			 * such as ISO-IR-193 or CSUTF8) lets 5- and 6-byte
			 * forms through: the promise of valid output is kept
			 * here, whatever iconv did. */
			if (r == 0 && !utf8_valid((const uint8_t *)out->p + start, out->len - start))
				r = charset_resanitize(out, start, replaced);
			if (*replaced != before)
				mail_warn(warnings, MAIL_W_INVALID_BYTES_REPLACED);
			return r;
		}
		kind = CHARSET_UNKNOWN;
	}
	if (kind == CHARSET_UNKNOWN) {
		mail_warn(warnings, MAIL_W_UNKNOWN_CHARSET);
		kind = CHARSET_CP1252;
	}
	if (kind == CHARSET_CP1252)
		return charset_decode_cp1252(p, n, out);

	/* UTF-8 (and US-ASCII, which real mail uses to mean "whatever"). */
	if (utf8_valid(p, n))
		return dynbuf_append(out, p, n);
	size_t k = 0;
	int r = charset_sanitize(p, n, out, &k);
	if (r < 0)
		return r;
	if (k) {
		*replaced += k;
		mail_warn(warnings, MAIL_W_INVALID_BYTES_REPLACED);
	}
	return 0;
}
