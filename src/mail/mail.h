/* SPDX-License-Identifier: MIT */
/* The parser's contract with the rest of ingest.
 *
 * mail_parse() turns the bytes of one message into a struct mail_message
 * (message.h, with the other types the sub-parsers share).  It is a pure
 * function of its inputs: no syscalls, no globals.  Every decoded
 * string it returns (names, subject, text, header values, file names) is
 * valid UTF-8, always carried with its length; tokens copied as written
 * (addr-specs, message ids, content types, content ids) may carry raw 8-bit
 * bytes from the message, which the emitter replaces with U+FFFD so that
 * every output line is valid UTF-8 all the same.  Each string lives either
 * in the input bytes (a view) or in ctx->arena, so it stays valid until the
 * next mail_parse() on the same ctx or until mail_ctx_free().
 *
 * Threads: a struct mail_ctx belongs to one thread (it holds that thread's
 * libmagic cookie and iconv descriptors, neither of which is thread-safe).
 * The bytes being parsed are only read. */
#ifndef INGEST_MAIL_H
#define INGEST_MAIL_H

#include "mail/message.h"

#include <stddef.h>
#include <stdint.h>

/* Returns the stable name ("bad-date") of a warning. */
const char *mail_warning_name(enum mail_warning w);

/* Per-thread parser state: scratch arena, iconv descriptor cache, the
 * lazily loaded libmagic cookie.  NULL on allocation failure. */
struct mail_ctx *mail_ctx_new(void);
void mail_ctx_free(struct mail_ctx *ctx);

/* Parses n bytes at p.  Returns 0 (malformed input is reported through
 * m->warnings, never as failure) or -ENOMEM / -E2BIG when the scratch cap of
 * limits.h is reached.  m is overwritten. */
int mail_parse(struct mail_ctx *ctx, const struct mail_options *o,
               const uint8_t *p, size_t n, struct mail_message *m);

#endif
