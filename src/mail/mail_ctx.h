/* SPDX-License-Identifier: MIT */
/* The inside of struct mail_ctx, shared by the parser's modules (not by the
 * rest of ingest, which sees the type as opaque through mail.h). */
#ifndef INGEST_MAIL_CTX_H
#define INGEST_MAIL_CTX_H

#include "core/arena.h"
#include "core/dynbuf.h"
#include "core/str.h"

#include <stdbool.h>

struct charset_cache;   /* mail/charset.c: iconv descriptors by label */
struct sniff_cookie;    /* mail/sniff.c: the libmagic cookie, loaded lazily */

struct mail_ctx {
	struct arena arena;            /* reset at every mail_parse() */
	struct dynbuf scratch;         /* reusable work buffer for decoders */
	struct charset_cache *charsets;
	struct sniff_cookie *sniff;
	/* Where raw 8-bit header text finds the message's charset
	 * (charset_decode_header), set by mail_parse(): the top-level
	 * Content-Type value, the start of the body, and the answer once
	 * looked up. */
	struct str hint_type, hint_body, header_charset;
	bool hint_done;
};

#endif
