/* SPDX-License-Identifier: MIT */
/* UTF-8 validation: see utf8.h.
 *
 * Every header value and every decoded text is checked once, so ASCII
 * goes a block at a time and the common forms of other scripts (two- and
 * three-byte characters) are tested inline; only the rest takes
 * utf8_seq(). */
#include "core/utf8.h"

bool utf8_valid(const void *v, size_t n)
{
	const uint8_t *p = v;
	size_t i = 0;
	while (i < n) {
		/* ASCII runs dominate: take them a block at a time. */
		i = utf8_ascii_run(NULL, p, n, i, false);
		/* Then characters one at a time, the common forms inline (the
		 * text of a non-Latin script is all two- or three-byte forms):
		 * ASCII; C2..DF + one continuation; E1..EC or EE..EF + two (E0
		 * and ED have narrower second bytes: utf8_seq checks them). */
		while (i < n) {
			uint8_t c = p[i];
			if (c < 0x80) {
				i++;
				if (i + 8 <= n && !(p[i] & 0x80))
					break;          /* back to the block loop */
			} else if (c >= 0xC2 && c <= 0xDF && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
				i += 2;
			} else if (c >= 0xE1 && c <= 0xEF && c != 0xED && i + 2 < n &&
			           (p[i + 1] & 0xC0) == 0x80 && (p[i + 2] & 0xC0) == 0x80) {
				i += 3;
			} else {
				int l = utf8_seq(p + i, n - i);
				if (l < 0)
					return false;
				i += (size_t)l;
			}
		}
	}
	return true;
}
