/* SPDX-License-Identifier: MIT */
/* RFC 2047 encoded words, and the raw 8-bit bytes real mail puts in headers.
 *
 * encoded_word_decode() turns an unfolded header value into UTF-8: encoded words
 * (B and Q, any charset charset_decode() knows, UTF-7 included) are decoded;
 * white space between two adjacent encoded words is dropped (RFC 2047 6.2);
 * raw bytes that are valid UTF-8 are kept; other 8-bit bytes are decoded in
 * the charset the body declares when that reads them cleanly, else as
 * windows-1252, with MAIL_W_UNENCODED_8BIT_HEADER (charset_decode_header).
 * Raw 8-bit bytes inside an encoded word are decoded with the word's declared charset.  A malformed
 * word is kept literally with MAIL_W_INVALID_ENCODED_WORD.  Lenient, as
 * mail readers are: words inside quoted strings and words glued to text are
 * decoded too (docs/LENIENCY.md).  Cost is linear in the input. */
#ifndef INGEST_MAIL_ENCODED_WORD_H
#define INGEST_MAIL_ENCODED_WORD_H

#include "mail/message.h"

struct mail_ctx;

/* out is in ctx->arena (or a view of in when it is plain ASCII).  Works at
 * the end of ctx->scratch and restores its length: a caller's bytes there
 * survive, but pointers into scratch may move (so in must not point there). */
int encoded_word_decode(struct mail_ctx *ctx, struct str in, struct str *out,
              uint64_t *warnings);

#endif
