/* SPDX-License-Identifier: MIT */
/* RFC 3676 format=flowed, on its own as each standard of the parser is:
 * the MIME walk (mime.c) calls it for a text/plain part that declares
 * format=flowed, when it builds the search text.  A pure function over
 * bytes already transfer-decoded and converted to UTF-8. */
#ifndef INGEST_MAIL_FLOWED_H
#define INGEST_MAIL_FLOWED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RFC 3676 format=flowed: joins flowed lines (a line ending in a space,
 * other than the signature separator "-- ") with the next line of the same
 * quote depth, removes space-stuffing, and with delsp the space that marked
 * the line as flowed.  Line ends in the output are LF.  Writes at most cap
 * bytes (cut on a UTF-8 boundary, *full set) and returns the length. */
size_t flowed_decode(const uint8_t *p, size_t n, bool delsp, char *out, size_t cap,
                   bool *full);

#endif
