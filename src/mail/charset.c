/* SPDX-License-Identifier: MIT */
/* Charsets to UTF-8: see charset.h.
 *
 * Every decoded byte of a message passes through charset_decode(), so it
 * keeps three paths.  US-ASCII and UTF-8 are validated here with no iconv
 * (most mail).  Windows-1252, which is also what ISO-8859-1 and every
 * unknown label mean (as in WHATWG's Encoding Standard, which mail readers
 * follow), is a table here too.  So are the stateless single-byte charsets
 * mail uses (ISO-8859-x, windows-125x, KOI8-R/U, CP866, CP874, the Mac
 * ones), ISO-2022-JP's JIS X 0208 subset and GB18030's two-byte codes (a
 * four-byte sequence still goes to iconv): tables of glibc iconv's own
 * answers, written at build time by charset_gen.c (which lists the charsets
 * and says why) into charset_tables.h, so that output is iconv's without
 * loading a gconv module or asking iconv anything at run time; the unit
 * test compares them with iconv.  Everything else goes through glibc iconv,
 * one descriptor per normalised label, opened on first use and kept until
 * charset_cache_free(): glibc unloads a gconv module with its last
 * descriptor, so reopening per message would cost syscalls each time.
 * Other labels iconv finds single-byte get the same kind of table, asked
 * of iconv once per descriptor (charset_probe.c).
 *
 * Invariants: output is always valid UTF-8; every input byte that cannot be
 * decoded becomes U+FFFD and is counted in *replaced (never dropped); a
 * cache belongs to one thread (iconv_t is stateful) and holds at most
 * CHARSET_CACHE_SLOTS descriptors, so hostile mail naming a thousand
 * charsets cannot grow it.  No other global state: the tables are const. */
#include "core/limits.h"
#include "mail/charset.h"
#include "mail/charset_probe.h"
#include "mail/mail_ctx.h"
#include "core/fault.h"
#include "core/utf8.h"
#include "core/xalloc.h"

#include <errno.h>
#include <iconv.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#define CHARSET_CACHE_SLOTS 32

struct charset_slot {
	char label[LIMIT_CHARSET_LABEL + 1]; /* normalised, NUL-terminated */
	iconv_t cd;                        /* (iconv_t)-1: iconv refused it */
	bool ascii_identity;               /* ASCII text converts to itself */
	bool trusted;                      /* output needs no UTF-8 check */
	/* A stateless single-byte charset: each byte's code point, read
	 * from iconv at open (CHARSET_SB_BAD where iconv refuses the byte),
	 * so conversion is a table lookup with iconv's own answers.  Kept
	 * as each byte's UTF-8 (charset_sb_entry) rather than code points:
	 * text in such a charset is mostly characters outside ASCII. */
	bool single_byte;
	uint32_t sb[256];
};

struct charset_cache {
	struct charset_slot slot[CHARSET_CACHE_SLOTS];
	size_t n;
};

/* struct charset_builtin charset_builtins[], charset_jis0208[] and
 * JIS-Roman's two code points: iconv's answers, written at build time by
 * charset_gen.c (which says which charsets and why). */
#include "charset_tables.h"

#define CHARSET_N_BUILTINS (sizeof(charset_builtins) / sizeof(charset_builtins[0]))

const struct charset_builtin *charset_builtin_list(size_t *n)
{
	*n = CHARSET_N_BUILTINS;
	return charset_builtins;
}

const uint16_t *charset_builtin_jis(uint32_t *roman_5c, uint32_t *roman_7e)
{
	*roman_5c = charset_jis_roman_5c;
	*roman_7e = charset_jis_roman_7e;
	return charset_jis0208;
}

const uint16_t *charset_builtin_gb(void)
{
	return charset_gb_built ? charset_gb2 : NULL;
}

/* The built-in table for the name charset.c would hand to iconv, or NULL. */
static const struct charset_builtin *charset_builtin_find(const char *iconv_name)
{
	char first = (char)tolower((unsigned char)iconv_name[0]);
	for (size_t i = 0; i < CHARSET_N_BUILTINS; i++)
		if (charset_builtins[i].name[0] == first &&
		    strcasecmp(charset_builtins[i].name, iconv_name) == 0)
			return &charset_builtins[i];
	return NULL;
}

enum charset_kind {
	CHARSET_UTF8,      /* UTF-8: validate, replace invalid bytes */
	CHARSET_ASCII,     /* US-ASCII or no charset: UTF-8 where valid, other
	                    * bytes windows-1252 (docs/LENIENCY.md) */
	CHARSET_CP1252,    /* built-in table */
	CHARSET_UNKNOWN,   /* a label we cannot read: windows-1252 plus a warning */
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
	{ "us-ascii", CHARSET_ASCII, NULL },
	{ "ascii", CHARSET_ASCII, NULL },
	{ "us", CHARSET_ASCII, NULL },
	{ "ansi_x3.4-1968", CHARSET_ASCII, NULL },
	{ "iso646-us", CHARSET_ASCII, NULL },
	{ "646", CHARSET_ASCII, NULL },
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
	{ "us_ascii", CHARSET_ASCII, NULL },
	/* Placeholders that say "no charset" (RFC 1428's unknown-8bit,
	 * templates never filled in): read as a missing charset is. */
	{ "x-unknown", CHARSET_ASCII, NULL },
	{ "unknown-8bit", CHARSET_ASCII, NULL },
	{ "x-unknown-8bit", CHARSET_ASCII, NULL },
	{ "unknown", CHARSET_ASCII, NULL },
	{ "x-user-defined", CHARSET_ASCII, NULL },
	{ "default", CHARSET_ASCII, NULL },
	{ "default_charset", CHARSET_ASCII, NULL },
	{ "charset", CHARSET_ASCII, NULL },
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
	{ "x-unicode-2-0-utf-7", CHARSET_ICONV, "UTF-7" },   /* Outlook */
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
static bool charset_normalise(struct str in, char out[LIMIT_CHARSET_LABEL + 1])
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
	if (n == 0 || n > LIMIT_CHARSET_LABEL)
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

#define CHARSET_FFFD "\xEF\xBF\xBD"

static int charset_decode_cp1252(const uint8_t *p, size_t n, struct dynbuf *out);

/* Appends p[0..n) with each invalid UTF-8 sequence replaced: by U+FFFD
 * (counted in *replaced), or, when cp1252, by its bytes read as
 * windows-1252 (nothing is replaced: that table maps every byte). */
static int charset_sanitize_as(const uint8_t *p, size_t n, struct dynbuf *out,
                               size_t *replaced, bool cp1252)
{
	size_t i = 0, run = 0;
	int r;
	while (i < n) {
		int l = utf8_seq(p + i, n - i);
		if (l > 0) {
			i += (size_t)l;
			continue;
		}
		size_t bad = (size_t)-l;
		/* Flush the valid run before i, then the replacement. */
		if ((r = dynbuf_append(out, p + run, i - run)) < 0)
			return r;
		if (cp1252)
			r = charset_decode_cp1252(p + i, bad, out);
		else if ((r = dynbuf_append(out, CHARSET_FFFD, 3)) >= 0)
			(*replaced)++;
		if (r < 0)
			return r;
		i += bad;
		run = i;
	}
	return dynbuf_append(out, p + run, n - run);
}

static int charset_sanitize(const uint8_t *p, size_t n, struct dynbuf *out,
                            size_t *replaced)
{
	return charset_sanitize_as(p, n, out, replaced, false);
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
	char *d = out->p + out->len;
	size_t i = 0;
	while (i < n) {
		/* ASCII a block at a time (the reserve above leaves room). */
		i = utf8_ascii_run(&d, p, n, i, true);
		if (i >= n)
			break;
		uint8_t c = p[i++];
		uint32_t cp = c >= 0x80 && c < 0xA0 ? cp1252_high[c - 0x80] : c;
		if (cp < 0x80) {
			*d++ = (char)cp;
		} else if (cp < 0x800) {
			*d++ = (char)(0xC0 | (cp >> 6));
			*d++ = (char)(0x80 | (cp & 0x3F));
		} else {
			*d++ = (char)(0xE0 | (cp >> 12));
			*d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
			*d++ = (char)(0x80 | (cp & 0x3F));
		}
	}
	out->len = (size_t)(d - out->p);
	return 0;
}

/* A single-byte charset by its table of charset_sb_entry()s; a byte the
 * table refuses becomes U+FFFD, counted and warned of. */
static int charset_decode_sb(const uint32_t sb[256], const uint8_t *p, size_t n,
                             struct dynbuf *out, uint64_t *warnings, uint64_t *replaced)
{
	/* Three bytes out for one at most, and one more for the last
	 * entry's four-byte store. */
	int r = dynbuf_reserve(out, n > SIZE_MAX / 3 - 1 ? SIZE_MAX : n * 3 + 1);
	if (r < 0)
		return r;
	char *d = out->p + out->len;
	size_t i = 0;
	uint64_t bad = 0;
	while (i < n) {
		i = utf8_ascii_run(&d, p, n, i, true);    /* ASCII is itself (probed) */
		if (i >= n)
			break;
		/* The bytes up to the next ASCII block, a look-up and a
		 * store each: an entry's first three bytes in memory, little
		 * endian, are its UTF-8; its fourth (the length) is written
		 * over by the next character or left in the reserve's last
		 * byte, past out->len. */
		const uint8_t *q = p + i, *end = p + n;
		do {
			uint32_t e = sb[*q++];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			memcpy(d, &e, 4);
#else
			uint8_t u[4] = { (uint8_t)e, (uint8_t)(e >> 8), (uint8_t)(e >> 16), 0 };
			memcpy(d, u, 4);
#endif
			d += e >> 24 & 7;
			bad += e >> 31;
		} while (q < end && (*q >= 0x80 || end - q < 8));
		i = (size_t)(q - p);
	}
	out->len = (size_t)(d - out->p);
	*replaced += bad;
	if (bad)
		mail_warn(warnings, MAIL_W_INVALID_BYTES_REPLACED);
	return 0;
}

/* True when p[0..n) is ASCII with no ISO-2022 shift (ESC, SO, SI). */
static bool charset_plain_ascii(const uint8_t *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (w & UINT64_C(0x8080808080808080))
			return false;
	}
	for (; i < n; i++)
		if (p[i] & 0x80)
			return false;
	return memchr(p, 0x1B, n) == NULL && memchr(p, 0x0E, n) == NULL &&
	       memchr(p, 0x0F, n) == NULL;
}

static iconv_t charset_open(struct charset_cache *c, const char *label,
                            const char *iconv_name, bool *transient,
                            const struct charset_slot **slot)
{
	*transient = false;
	*slot = NULL;
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->slot[i].label, label) == 0) {
			*slot = &c->slot[i];
			return c->slot[i].cd;
		}
	iconv_t cd = fault_lib("iconv_open") < 0 ? (iconv_t)-1 : iconv_open("UTF-8", iconv_name);
	if (c->n < CHARSET_CACHE_SLOTS) {
		struct charset_slot *s = &c->slot[c->n++];
		strcpy(s->label, label);
		s->cd = cd;
		s->ascii_identity = cd != (iconv_t)-1 && charset_probe_ascii(cd);
		s->trusted = charset_trusted(iconv_name);
		uint16_t sb[256];
		s->single_byte = s->ascii_identity &&
		                 charset_probe_single_byte(cd, iconv_name, sb);
		for (int b = 0; s->single_byte && b < 256; b++)
			s->sb[b] = charset_sb_entry(sb[b]);
		*slot = s;
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

/* ---- ISO-2022-JP without iconv ------------------------------------------
 *
 * glibc's ISO-2022-JP converter costs tens of instructions a byte (it is
 * the ISO-2022-JP-2 machine, through UCS-4).  Mail in ISO-2022-JP (RFC 1468)
 * uses three sets: ASCII (ESC ( B), JIS-Roman (ESC ( J) and JIS X 0208
 * (ESC $ @, ESC $ B).  That subset is decoded here with a table iconv
 * itself wrote at build time (so the code points are iconv's); anything else (other
 * escapes, 8-bit bytes, SO/SI, a control or an unmapped pair inside a
 * two-byte run, a cut pair) gives up and the caller runs iconv on the whole
 * input, so output never differs from iconv's. */

/* 1: decoded into out; 0: not the simple subset (out unchanged). */
static int charset_decode_iso2022jp(const uint8_t *p, size_t n, struct dynbuf *out)
{
	/* At most 3 output bytes per input byte (a pair gives at most 3). */
	int r = dynbuf_reserve(out, n > SIZE_MAX / 3 ? SIZE_MAX : n * 3);
	if (r < 0)
		return r;
	char *d0 = out->p + out->len, *d = d0;
	enum { ASCII, ROMAN, JIS } st = ASCII;
	size_t i = 0;
	while (i < n) {
		uint8_t b = p[i];
		if (b == 0x1B) {
			if (n - i >= 3 && p[i + 1] == '(' && p[i + 2] == 'B')
				st = ASCII;
			else if (n - i >= 3 && p[i + 1] == '(' && p[i + 2] == 'J')
				st = ROMAN;
			else if (n - i >= 3 && p[i + 1] == '$' && (p[i + 2] == 'B' || p[i + 2] == '@'))
				st = JIS;
			else
				return 0;
			i += 3;
			continue;
		}
		if (b >= 0x80 || b == 0x0E || b == 0x0F)
			return 0;
		if (st == JIS) {
			if (n - i < 2 || b < 0x21 || b > 0x7E || p[i + 1] < 0x21 || p[i + 1] > 0x7E)
				return 0;
			uint16_t cp = charset_jis0208[(b - 0x21) * CHARSET_JIS_SIDE + (p[i + 1] - 0x21)];
			if (!cp)
				return 0;
			d = utf8_put(d, cp);
			i += 2;
			continue;
		}
		if (st == ROMAN && (b == 0x5C || b == 0x7E))
			d = utf8_put(d, b == 0x5C ? charset_jis_roman_5c : charset_jis_roman_7e);
		else
			*d++ = (char)b;
		i++;
	}
	out->len += (size_t)(d - d0);
	return 1;
}

/* GB18030 by its two-byte table (ASCII is itself, the generator checked):
 * 1 decoded into out; 0: something the table does not hold (a four-byte
 * sequence, 0x80 or 0xFF, a cut pair, an unmapped code), out unchanged,
 * and the caller runs iconv on the whole input. */
static int charset_decode_gb(const uint8_t *p, size_t n, struct dynbuf *out)
{
	/* At most 3 output bytes per input byte (a pair gives at most 3). */
	int r = dynbuf_reserve(out, n > SIZE_MAX / 3 ? SIZE_MAX : n * 3);
	if (r < 0)
		return r;
	char *d0 = out->p + out->len, *d = d0;
	size_t i = 0;
	while (i < n) {
		i = utf8_ascii_run(&d, p, n, i, true);   /* whole words of ASCII */
		if (i >= n)
			break;
		uint8_t b = p[i];
		if (b < 0x80) {
			*d++ = (char)b;
			i++;
			continue;
		}
		int k = n - i >= 2 && b >= 0x81 && b <= 0xFE ? charset_gb_trail(p[i + 1]) : -1;
		uint16_t cp = k >= 0 ? charset_gb2[(b - 0x81) * CHARSET_GB_TRAILS + k] : 0;
		if (!cp)
			return 0;
		d = utf8_put(d, cp);
		i += 2;
	}
	out->len += (size_t)(d - d0);
	return 1;
}

int charset_decode(struct mail_ctx *ctx, struct str label,
                   const uint8_t *p, size_t n, struct dynbuf *out,
                   uint64_t *warnings, uint64_t *replaced)
{
	uint64_t w_dummy = 0, r_dummy = 0;
	if (!warnings)
		warnings = &w_dummy;
	if (!replaced)
		replaced = &r_dummy;

	char norm[LIMIT_CHARSET_LABEL + 1];
	enum charset_kind kind = CHARSET_ASCII;
	const char *iconv_name = NULL;
	if (label.p) {
		if (!charset_normalise(label, norm)) {
			kind = CHARSET_UNKNOWN;
		} else if (norm[0] == '%') {
			kind = CHARSET_UNKNOWN;   /* an unexpanded template: %CHARSET */
		} else {
			kind = CHARSET_ICONV;
			iconv_name = norm;
			/* Every text part and encoded word comes here: the first
			 * letter turns away most of the table before strcmp. */
			for (size_t i = 0; i < sizeof(charset_aliases) / sizeof(charset_aliases[0]); i++) {
				if (charset_aliases[i].label[0] == norm[0] &&
				    strcmp(charset_aliases[i].label, norm) == 0) {
					kind = charset_aliases[i].kind;
					if (charset_aliases[i].iconv_name)
						iconv_name = charset_aliases[i].iconv_name;
					break;
				}
			}
		}
	}

	if (kind == CHARSET_ICONV) {
		/* A charset built in: no descriptor, no cache (charset_gen.c).
		 * Every one maps ASCII to itself (the generator checked). */
		const struct charset_builtin *bt = charset_builtin_find(iconv_name);
		if (bt) {
			if (charset_plain_ascii(p, n))
				return dynbuf_append(out, p, n);
			return charset_decode_sb(bt->sb, p, n, out, warnings, replaced);
		}
		/* ISO-2022-JP's RFC 1468 subset and GB18030's two-byte codes
		 * by table; text with anything else goes to iconv below. */
		int (*subset)(const uint8_t *, size_t, struct dynbuf *) = NULL;
		if (charset_jis_roman_5c && strcmp(norm, "iso-2022-jp") == 0)
			subset = charset_decode_iso2022jp;
		else if (charset_gb_built && strcasecmp(iconv_name, "gb18030") == 0)
			subset = charset_decode_gb;
		if (subset) {
			if (charset_plain_ascii(p, n))
				return dynbuf_append(out, p, n);
			int j = subset(p, n, out);
			if (j != 0)
				return j < 0 ? j : 0;
		}
		bool transient;
		const struct charset_slot *slot = NULL;
		iconv_t cd = ctx && ctx->charsets
			? charset_open(ctx->charsets, norm, iconv_name, &transient, &slot)
			: (iconv_t)-1;
		if (cd != (iconv_t)-1) {
			/* Plain ASCII in a charset that maps ASCII to itself
			 * (most legacy-labelled mail is): no iconv at all. */
			if (slot && slot->ascii_identity && charset_plain_ascii(p, n))
				return dynbuf_append(out, p, n);
			if (slot && slot->single_byte)
				return charset_decode_sb(slot->sb, p, n, out, warnings, replaced);
			uint64_t before = *replaced;
			size_t start = out->len;
			int r = charset_decode_iconv(cd, p, n, out, replaced);
			if (transient)
				iconv_close(cd);
			/* glibc's own UTF-8 decoder (reached through aliases
			 * such as ISO-IR-193 or CSUTF8) lets 5- and 6-byte
			 * forms through: the promise of valid output is kept
			 * here, whatever iconv did, except for the table-driven
			 * converters that cannot produce such forms. */
			if (r == 0 && !(slot && slot->trusted) &&
			    !utf8_valid((const uint8_t *)out->p + start, out->len - start))
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

	/* UTF-8, and US-ASCII, which real mail uses to mean "whatever": as
	 * UTF-8 where that is valid, the rest as windows-1252 (what 8-bit
	 * mail without a charset was written in), with nothing replaced. */
	if (utf8_valid(p, n))
		return dynbuf_append(out, p, n);
	size_t k = 0;
	int r = charset_sanitize_as(p, n, out, &k, kind == CHARSET_ASCII);
	if (r < 0)
		return r;
	if (k) {
		*replaced += k;
		mail_warn(warnings, MAIL_W_INVALID_BYTES_REPLACED);
	}
	return 0;
}

/* The value of the first "charset=" in s (quoted or a token), or
 * STR_NULL. */
static struct str charset_param_in(struct str s)
{
	for (size_t i = 0; s.p && i + 8 < s.n; i++) {
		if (strncasecmp(s.p + i, "charset=", 8) || (i && isalnum((unsigned char)s.p[i - 1])))
			continue;
		size_t b = i + 8, e;
		if (s.p[b] == '"')
			b++;
		for (e = b; e < s.n && (isalnum((unsigned char)s.p[e]) || (s.p[e] && strchr("-_.:+()", s.p[e]))); e++)
			;
		return e > b ? (struct str){ s.p + b, e - b } : STR_NULL;
	}
	return STR_NULL;
}

/* Looked up only when a header needs it: the top-level Content-Type's
 * charset, or, for a multipart, the first one its body declares within
 * CHARSET_HINT_BODY bytes (the first text part's, as a rule). */
#define CHARSET_HINT_BODY 4096
static struct str charset_hint(struct mail_ctx *ctx)
{
	if (!ctx->hint_done) {
		ctx->hint_done = true;
		struct str t = ctx->hint_type, b = ctx->hint_body;
		ctx->header_charset = charset_param_in(t);
		/* t is the header's bytes, not a C string: the blanks are
		 * skipped and "multipart" compared within its length */
		size_t sp = 0;
		while (sp < t.n && (t.p[sp] == ' ' || t.p[sp] == '\t'))
			sp++;
		if (!ctx->header_charset.p && t.n - sp >= 9 && !strncasecmp(t.p + sp, "multipart", 9)) {
			b.n = b.n < CHARSET_HINT_BODY ? b.n : CHARSET_HINT_BODY;
			ctx->header_charset = charset_param_in(b);
		}
	}
	return ctx->header_charset;
}

int charset_decode_header(struct mail_ctx *ctx, const uint8_t *p, size_t n, struct dynbuf *out,
                          uint64_t *warnings)
{
	if (utf8_valid(p, n))
		return dynbuf_append(out, p, n);
	mail_warn(warnings, MAIL_W_UNENCODED_8BIT_HEADER);
	struct str hint = ctx ? charset_hint(ctx) : STR_NULL;
	if (hint.p) {
		/* Big5, GB2312 and KOI8-R mail wrote its headers in the body's
		 * charset; one that does not read them cleanly did not. */
		size_t base = out->len;
		uint64_t w = 0, replaced = 0;
		int r = charset_decode(ctx, hint, p, n, out, &w, &replaced);
		if (r < 0 || (!replaced && !(w & (UINT64_C(1) << MAIL_W_UNKNOWN_CHARSET))))
			return r;
		out->len = base;
	}
	return charset_decode(ctx, (struct str){ "windows-1252", 12 }, p, n, out, warnings, NULL);
}
