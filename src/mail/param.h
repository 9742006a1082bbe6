/* SPDX-License-Identifier: MIT */
/* Content-Type and Content-Disposition values (RFC 2045 5.1, RFC 2183) with
 * their parameters: RFC 2231 continuations (`name*0*=`), charset and language
 * (`utf-8'en'%E2%82%AC`), percent-decoding; and, leniently, RFC 2047 encoded
 * words inside quoted values (`name="=?UTF-8?B?...?="`), which Outlook and
 * others send.  Names are lower-cased; values are decoded to UTF-8.  A
 * malformed parameter is skipped with MAIL_W_BAD_PARAMETER. */
#ifndef INGEST_MAIL_PARAM_H
#define INGEST_MAIL_PARAM_H

#include "mail/message.h"

struct mail_ctx;

struct mime_param {
	struct str name;     /* lower case, without the RFC 2231 suffixes */
	struct str value;    /* decoded, UTF-8 */
};

struct mime_type {
	struct str type;     /* lower case; for a disposition, the token */
	struct str subtype;  /* lower case; empty for a disposition */
	struct mime_param *params;
	size_t n_params;
};

/* in: an unfolded value.  A missing or unparseable type leaves type.p NULL
 * (the caller applies the RFC 2045 default).  A lone token (`attachment`,
 * or a broken `text`) gives that type and an empty subtype: a Content-Type
 * caller treats subtype.n == 0 as unparseable.  Uses the end of
 * ctx->scratch like encoded_word_decode(). */
int param_parse(struct mail_ctx *ctx, struct str in, struct mime_type *out,
                uint64_t *warnings);
/* The value of a parameter by lower-case name, or STR_NULL. */
struct str param_get(const struct mime_type *t, const char *name);

#endif
