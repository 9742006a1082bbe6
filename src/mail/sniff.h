/* SPDX-License-Identifier: MIT */
/* libmagic content sniffing, for attachments and for inputs that do not
 * look like mail, and the rule for when its answer and a declared type
 * disagree: the declared type stays the attachment's content_type, the
 * answer goes beside it as detected_type, and sniff_types_agree() decides
 * whether the record gets type-mismatch.
 *
 * One cookie per struct mail_ctx, i.e. per worker thread (a magic_t is not
 * thread-safe).  The database is loaded lazily, on the first sniff: a thread
 * that never meets a binary attachment never pays for it.  Only
 * magic_buffer() is used, on a prefix already in memory (never magic_file(),
 * which would open the file again).  Text and encoding tests are switched
 * off: they cost about 1 ms on text (docs/ARCHITECTURE.md, "Batches, the pool and the parser"), and even
 * with them off text costs 150 us, so a prefix with no control bytes is
 * answered "text/plain" without libmagic (unless it starts like PDF,
 * PostScript, RTF or PGP armour, which libmagic names quickly). */
#ifndef INGEST_MAIL_SNIFF_H
#define INGEST_MAIL_SNIFF_H

#include "mail/message.h"

struct sniff_cookie;

/* libmagic's flags (see sniff.c); the tests ask libmagic with the same ones
 * to check that every built-in answer is the one libmagic would give. */
#define SNIFF_MAGIC_FLAGS (MAGIC_MIME_TYPE | MAGIC_ERROR | MAGIC_NO_CHECK_TEXT |  \
                           MAGIC_NO_CHECK_ENCODING | MAGIC_NO_CHECK_TOKENS |      \
                           MAGIC_NO_CHECK_CSV | MAGIC_NO_CHECK_JSON |             \
                           MAGIC_NO_CHECK_COMPRESS)

/* Allocates the holder; does not load anything.  NULL on ENOMEM. */
struct sniff_cookie *sniff_cookie_new(void);
/* Closes the cookie.  Accepts NULL. */
void sniff_cookie_free(struct sniff_cookie *s);

/* The MIME type of p[0..n) (at most LIMIT_SNIFF_BYTES of it are looked at),
 * as a NUL-terminated string owned by the cookie and valid until the next
 * call; NULL when there is no answer (empty input, no cookie, the database
 * failed to load — then it is not retried — or libmagic failed). */
const char *sniff_buffer(struct sniff_cookie *s, const uint8_t *p, size_t n);

/* True when a declared attachment type and libmagic's answer agree, with
 * the leniency docs/LENIENCY.md describes (application/octet-stream agrees
 * with anything, x- prefixes and known aliases are ignored, container
 * formats match their container).  Both lower case. */
bool sniff_types_agree(struct str declared, const char *detected);

#endif
