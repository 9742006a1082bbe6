/* SPDX-License-Identifier: MIT */
/* RFC 5322 section 2.2 and 3.6: the header block.
 *
 * header_parse() splits the block into fields without copying: names and
 * values are views into the message bytes, values still folded.  Bare LF and
 * CRLF are both line ends; a UTF-8 BOM before the first field is skipped; a
 * block may end at EOF with no blank line.  Obsolete syntax (RFC 5322 4.5:
 * white space before the colon) is accepted.  A line that is neither a field
 * nor a continuation, after the first line, is MAIL_W_MALFORMED_HEADER: when
 * a field of a name mail headers use (To, Message-ID, X-*, Content-*, ...)
 * follows it (after at most four continuation lines, themselves dropped)
 * it is dropped and the block goes on, as GMime does, so that the
 * fields after a broken line are kept; otherwise, or when it starts with
 * "-" (a boundary), it ends the block and starts the body (body_offset is
 * that line).  On the first line the block simply has no fields: a message
 * or MIME part that lacks the blank line keeps all its body lines, as with
 * Python's email.  (An mbox From_
 * line is not seen here: mail_parse skips it first.)  A continuation line
 * with no field before it is dropped with MAIL_W_MALFORMED_HEADER.  Past
 * LIMIT_HEADER_BYTES the rest of the block is skipped with
 * MAIL_W_HEADER_TOO_LARGE. */
#ifndef INGEST_MAIL_HEADER_H
#define INGEST_MAIL_HEADER_H

#include "core/arena.h"
#include "mail/message.h"

struct header_field {
	struct str name;    /* as written, no trailing white space */
	struct str value;   /* raw: after the colon, folded, no final line end */
};

struct header_block {
	struct header_field *v;  /* in arena, in order of appearance */
	size_t n;
	size_t body_offset;      /* first byte of the body; the input length when none */
};

/* Returns 0 or -ENOMEM (arena cap). */
int header_parse(struct arena *a, const uint8_t *p, size_t n,
                 struct header_block *out, uint64_t *warnings);
/* First field with this name (ASCII case-insensitive), or NULL. */
const struct header_field *header_get(const struct header_block *h, const char *name);
/* Unfolds (line ends before white space removed) and trims surrounding white
 * space.  out is a view when nothing had to change, else in the arena. */
int header_unfold(struct arena *a, struct str raw, struct str *out);

/* Offset after the RFC 5322 3.2.2 comment opening at p[i] (nested, with
 * quoted-pairs), or n when it never closes. */
size_t header_skip_comment(const uint8_t *p, size_t n, size_t i);

#endif
