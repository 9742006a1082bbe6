/* SPDX-License-Identifier: MIT */
/* What glibc's iconv answers for a charset, asked one byte or one pair at a
 * time: the questions behind charset.c's table-driven converters.  One home
 * for them, because three places ask: the build (charset_gen.c writes the
 * answers for a fixed list of charsets into charset_tables.h), the run (for
 * any other label iconv takes, once per descriptor) and the unit test that
 * checks the built tables against the iconv it runs with. */
#ifndef INGEST_MAIL_CHARSET_PROBE_H
#define INGEST_MAIL_CHARSET_PROBE_H

#include <iconv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A byte iconv refuses, in a code point table. */
#define CHARSET_SB_BAD 0xFFFF
/* JIS X 0208's rows and cells (0x21..0x7E each). */
#define CHARSET_JIS_SIDE 94

/* Table-driven converters of glibc whose output is always valid UTF-8 (the
 * code points come from tables). */
bool charset_trusted(const char *iconv_name);

/* Does cd turn ASCII (bar the ISO-2022 shifts ESC, SO, SI) into itself? */
bool charset_probe_ascii(iconv_t cd);

/* Fills sb when every byte alone converts to exactly one BMP code point
 * (CHARSET_SB_BAD where iconv refuses the byte); false when the charset is
 * not such a stateless single-byte one. */
bool charset_probe_single_byte(iconv_t cd, const char *iconv_name, uint16_t sb[256]);

/* A single-byte table's entry for code point cp (CHARSET_SB_BAD: U+FFFD
 * for a refused byte): its UTF-8 in the low three bytes, its length in bits
 * 24..26, and bit 31 when it replaces the byte. */
uint32_t charset_sb_entry(uint16_t cp);

/* ISO-2022-JP through cd: JIS X 0208 (ESC $ B) row r, cell k at
 * t[r * CHARSET_JIS_SIDE + k] (0 where iconv maps nothing or leaves the
 * BMP), and JIS-Roman's 0x5C and 0x7E (ESC ( J).  False when iconv maps
 * either of those two to nothing. */
bool charset_probe_jis(iconv_t cd, uint16_t t[CHARSET_JIS_SIDE * CHARSET_JIS_SIDE],
                       uint32_t *roman_5c, uint32_t *roman_7e);

/* GB18030's two-byte codes (GBK's, GB2312's): lead 0x81..0xFE, trail
 * 0x40..0x7E or 0x80..0xFE. */
#define CHARSET_GB_LEADS 126
#define CHARSET_GB_TRAILS 190

/* GB18030 through cd: each two-byte code's code point at
 * t[(lead - 0x81) * CHARSET_GB_TRAILS + trail index] (0 where iconv maps
 * nothing, or more than one character, or past the BMP).  False unless
 * every ASCII byte, ESC, SO and SI included, is itself. */
bool charset_probe_gb(iconv_t cd, uint16_t t[CHARSET_GB_LEADS * CHARSET_GB_TRAILS]);

/* The index of trail byte b in a GB18030 table row, or -1. */
static inline int charset_gb_trail(uint8_t b)
{
	return b >= 0x40 && b <= 0x7E ? b - 0x40 : b >= 0x80 && b <= 0xFE ? b - 0x41 : -1;
}

/* A single-byte charset built in: its label as charset.c hands it to iconv
 * and its table of charset_sb_entry()s. */
struct charset_builtin {
	const char *name;
	const uint32_t *sb;
};

/* The tables charset_gen.c wrote at build time (charset_tables.h), as
 * charset.c uses them: for the unit test that compares them with iconv. */
const struct charset_builtin *charset_builtin_list(size_t *n);
const uint16_t *charset_builtin_jis(uint32_t *roman_5c, uint32_t *roman_7e);
const uint16_t *charset_builtin_gb(void);   /* NULL: none was built */

#endif
