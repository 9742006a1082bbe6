/* SPDX-License-Identifier: MIT */
/* A hexadecimal digit's value, either case: what quoted-printable in
 * encoded words, RFC 2231's percent escapes and JSON's \u escapes read. */
#ifndef INGEST_CORE_HEX_H
#define INGEST_CORE_HEX_H

/* 0..15, or -1 for a byte that is not a hex digit. */
static inline int hex_digit(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

#endif
