/* SPDX-License-Identifier: MIT */
/* The MIME tree (RFC 2045, RFC 2046): text for search and attachments.
 *
 * mime_parse() walks the body of a message whose header block is already
 * parsed, in one forward pass with a stack of open multiparts, and fills
 * m->content_type, m->text, m->text_truncated, m->attachments, m->parts and
 * warnings.  Cost is linear in the message (each byte is scanned once; each
 * line that starts with "--" is compared with at most LIMIT_MIME_DEPTH open
 * boundaries), whatever the number of parts or the nesting. */
#ifndef INGEST_MAIL_MIME_H
#define INGEST_MAIL_MIME_H

#include "mail/header.h"
#include "mail/message.h"

struct mail_ctx;

/* p[0..n) is the whole message; hb its top-level header block (from
 * header_parse on the same bytes).  0, or -ENOMEM / -E2BIG on the scratch
 * cap. */
int mime_parse(struct mail_ctx *ctx, const struct mail_options *o,
               const uint8_t *p, size_t n, const struct header_block *hb,
               struct mail_message *m);

#endif
