/* SPDX-License-Identifier: MIT */
/* Charsets to UTF-8 through iconv.
 *
 * Labels are normalised and aliased first (`latin1`, `utf8`, `cp1252`,
 * `x-unknown`, `%CHARSET`, `unicode-1-1-utf-7`, `ks_c_5601-1987`, `gb2312` →
 * GB18030 as mail readers do ...).  The single-byte charsets mail uses and
 * ISO-2022-JP's JIS X 0208 and GB18030's two-byte codes are tables of
 * iconv's answers made at build time (charset.c, charset_gen.c): no iconv
 * at run time.  iconv descriptors are opened once per
 * label per thread and kept for the life of the cache: glibc unloads a gconv
 * module when its last descriptor closes, so opening per message costs an
 * openat and an mmap each time (GMime's mistake).  An unknown label falls
 * back to windows-1252 with MAIL_W_UNKNOWN_CHARSET.  Invalid input bytes
 * become U+FFFD, are counted, and set MAIL_W_INVALID_BYTES_REPLACED: never
 * dropped silently.  US-ASCII and UTF-8 take a fast path with no iconv. */
#ifndef INGEST_MAIL_CHARSET_H
#define INGEST_MAIL_CHARSET_H

#include "core/dynbuf.h"
#include "mail/message.h"
/* utf8_valid(), which callers use to decide whether to decode at all */
#include "core/utf8.h"

struct mail_ctx;
struct charset_cache;

struct charset_cache *charset_cache_new(void);
void charset_cache_free(struct charset_cache *c);
/* Descriptors held (labels iconv refused included); for tests and stats. */
size_t charset_cache_count(const struct charset_cache *c);

/* Appends the UTF-8 form of p[0..n) to out.  label STR_NULL means
 * US-ASCII as real mail uses it: UTF-8 where valid, the other bytes
 * windows-1252 (nothing replaced).
 * *replaced is incremented per invalid byte sequence.  0 or -errno. */
int charset_decode(struct mail_ctx *ctx, struct str label,
                   const uint8_t *p, size_t n, struct dynbuf *out,
                   uint64_t *warnings, uint64_t *replaced);

/* Raw 8-bit header text (RFC 6532 allows UTF-8; older clients wrote their
 * own charset unlabelled): appends p[0..n) as is when it is valid UTF-8,
 * else decoded in ctx->header_charset (the charset the message's body
 * declares) when that reads it with nothing replaced, else as
 * windows-1252.  Sets MAIL_W_UNENCODED_8BIT_HEADER unless valid UTF-8. */
int charset_decode_header(struct mail_ctx *ctx, const uint8_t *p, size_t n, struct dynbuf *out,
                          uint64_t *warnings);

#endif
