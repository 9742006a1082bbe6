/* SPDX-License-Identifier: MIT */
/* What glibc's iconv answers for a charset: see charset_probe.h. */
#include "mail/charset_probe.h"
#include "core/utf8.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#define CHARSET_FFFD "\xEF\xBF\xBD"

/* Anything else, UTF-8 under another name (ISO-IR-193, CSUTF8), UCS-4,
 * UTF-16..., has its output checked. */
bool charset_trusted(const char *iconv_name)
{
	static const char *const prefixes[] = {
		"iso-8859-", "windows-125", "cp125", "koi8-", "iso-2022-jp", "euc-jp", "cp949",
		"gb18030", "big5", "cp932", "cp874", "macintosh", "mac-", "cp866", NULL,
	};
	for (const char *const *q = prefixes; *q; q++)
		if (strncasecmp(iconv_name, *q, strlen(*q)) == 0)
			return true;
	return false;
}

/* Asked once per descriptor, so the answer is iconv's own, whatever the
 * charset; the ISO-2022 shifts are never taken by the fast path. */
bool charset_probe_ascii(iconv_t cd)
{
	char in[128], outb[512];
	size_t k = 0;
	for (int c = 1; c < 128; c++)
		if (c != 0x0E && c != 0x0F && c != 0x1B)
			in[k++] = (char)c;
	char *ip = in, *op = outb;
	size_t il = k, ol = sizeof(outb);
	iconv(cd, NULL, NULL, NULL, NULL);
	size_t r = iconv(cd, &ip, &il, &op, &ol);
	if (r != (size_t)-1)
		iconv(cd, NULL, NULL, &op, &ol);     /* flush a stateful tail */
	bool same = r != (size_t)-1 && il == 0 && (size_t)(op - outb) == k &&
	            memcmp(outb, in, k) == 0;
	iconv(cd, NULL, NULL, NULL, NULL);
	return same;
}

/* Only for the table-driven charsets of charset_trusted, minus
 * windows-1258 and windows-1255, whose glibc converters compose
 * characters. */
bool charset_probe_single_byte(iconv_t cd, const char *iconv_name, uint16_t sb[256])
{
	if (!charset_trusted(iconv_name) || strcasestr(iconv_name, "1258") ||
	    strcasestr(iconv_name, "1255") ||
	    strncasecmp(iconv_name, "iso-2022", 8) == 0 || strncasecmp(iconv_name, "euc", 3) == 0 ||
	    strncasecmp(iconv_name, "cp9", 3) == 0 || strncasecmp(iconv_name, "gb", 2) == 0 ||
	    strncasecmp(iconv_name, "big5", 4) == 0)
		return false;
	bool ok = true;
	for (int b = 0; b < 256 && ok; b++) {
		char in = (char)b, outb[16];
		char *ip = &in, *op = outb;
		size_t il = 1, ol = sizeof(outb);
		iconv(cd, NULL, NULL, NULL, NULL);
		size_t r = iconv(cd, &ip, &il, &op, &ol);
		if (r == (size_t)-1) {
			if (errno != EILSEQ)
				ok = false;          /* EINVAL: a lead byte */
			sb[b] = CHARSET_SB_BAD;
			continue;
		}
		/* No flush: a converter that holds a character back (to
		 * compose it with a following mark, as glibc's CP1255 and
		 * CP1258 do) writes nothing here, and is not stateless. */
		const uint8_t *u = (const uint8_t *)outb;
		if (op == outb) {
			ok = false;
			continue;
		}
		uint32_t cp = utf8_decode(&u);
		if ((const char *)u != op || cp >= 0xFFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			ok = false;
		sb[b] = (uint16_t)cp;
	}
	iconv(cd, NULL, NULL, NULL, NULL);
	return ok;
}

uint32_t charset_sb_entry(uint16_t cp)
{
	char u[4] = { 0 };
	size_t k = cp == CHARSET_SB_BAD ? 3 : (size_t)(utf8_put(u, cp) - u);
	if (cp == CHARSET_SB_BAD)
		memcpy(u, CHARSET_FFFD, 3);
	return (uint32_t)(uint8_t)u[0] | (uint32_t)(uint8_t)u[1] << 8 | (uint32_t)(uint8_t)u[2] << 16 |
	       (uint32_t)k << 24 | (cp == CHARSET_SB_BAD ? UINT32_C(1) << 31 : 0);
}

/* The code point of in[0..k) as one BMP character through cd, or 0. */
static uint32_t charset_probe_one(iconv_t cd, const char *in, size_t k)
{
	char buf[16], outb[16];
	memcpy(buf, in, k);
	char *ip = buf, *op = outb;
	size_t il = k, ol = sizeof(outb);
	iconv(cd, NULL, NULL, NULL, NULL);
	if (iconv(cd, &ip, &il, &op, &ol) == (size_t)-1 || il != 0 || op == outb)
		return 0;
	const uint8_t *u = (const uint8_t *)outb;
	uint32_t c = utf8_decode(&u);
	/* exactly one character, in the BMP, not a surrogate */
	return (const char *)u == op && c <= 0xFFFF && (c < 0xD800 || c > 0xDFFF) ? c : 0;
}

bool charset_probe_gb(iconv_t cd, uint16_t t[CHARSET_GB_LEADS * CHARSET_GB_TRAILS])
{
	static const char shifts[] = { 0x0E, 0x0F, 0x1B };
	bool ascii = charset_probe_ascii(cd);
	for (size_t i = 0; i < sizeof(shifts); i++)
		ascii = ascii && charset_probe_one(cd, &shifts[i], 1) == (uint32_t)shifts[i];
	for (int l = 0; l < CHARSET_GB_LEADS; l++)
		for (int b = 0x40; b <= 0xFE; b++) {
			int k = charset_gb_trail((uint8_t)b);
			if (k < 0)
				continue;
			char in[2] = { (char)(0x81 + l), (char)b };
			t[l * CHARSET_GB_TRAILS + k] = (uint16_t)charset_probe_one(cd, in, 2);
		}
	iconv(cd, NULL, NULL, NULL, NULL);
	return ascii;
}

/* One two-byte character (or a JIS-Roman byte) after an escape. */
static uint32_t charset_jis_probe(iconv_t cd, const char *esc, const uint8_t *b, size_t k)
{
	char in[8];
	size_t el = strlen(esc);
	memcpy(in, esc, el);
	memcpy(in + el, b, k);
	return charset_probe_one(cd, in, el + k);
}

bool charset_probe_jis(iconv_t cd, uint16_t t[CHARSET_JIS_SIDE * CHARSET_JIS_SIDE],
                       uint32_t *roman_5c, uint32_t *roman_7e)
{
	for (int r = 0; r < CHARSET_JIS_SIDE; r++)
		for (int k = 0; k < CHARSET_JIS_SIDE; k++) {
			uint8_t b[2] = { (uint8_t)(0x21 + r), (uint8_t)(0x21 + k) };
			t[r * CHARSET_JIS_SIDE + k] = (uint16_t)charset_jis_probe(cd, "\x1b$B", b, 2);
		}
	*roman_5c = charset_jis_probe(cd, "\x1b(J", (const uint8_t *)"\\", 1);
	*roman_7e = charset_jis_probe(cd, "\x1b(J", (const uint8_t *)"~", 1);
	iconv(cd, NULL, NULL, NULL, NULL);
	return *roman_5c && *roman_7e;
}
