/* SPDX-License-Identifier: MIT */
/* HTML to plain text for search (the HTML part of a message when it has no
 * text/plain alternative).
 *
 * Not a browser: tags are removed, character references decoded (the HTML5
 * named set, and numeric ones), a link's target kept after its text when
 * it differs (`text (url)`), an image's alt text kept, the content of script, style and
 * head dropped, comments dropped, block elements turned into line breaks and
 * white space collapsed.  Robust to unclosed tags, comments and quotes: the
 * way browsers treat them (the rest of the input is inside them).  One
 * forward pass; linear in the input. */
#ifndef INGEST_MAIL_HTML_H
#define INGEST_MAIL_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Converts in[0..n) (UTF-8) to text in out[0..cap).  Returns the bytes
 * written.  When the output fills before the input ends, *full is set and
 * the text is cut on a UTF-8 character boundary.  Never longer than n. */
size_t html_to_text(const uint8_t *in, size_t n, char *out, size_t cap, bool *full);

/* The code point of a named character reference (name without & and ;),
 * or -1 when unknown; *second (if not NULL) is the second code point of the
 * few references that have two (`&NotEqualTilde;`), else 0.  The HTML5
 * list; case-sensitive, as in HTML. */
int32_t html_entity_lookup(const char *name, size_t n, int32_t *second);

#endif
