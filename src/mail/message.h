/* SPDX-License-Identifier: MIT */
/* What the parser makes and what it is asked: the message and its parts
 * (addresses, attachments, header fields), the warning codes, the options.
 * mail.c and every sub-parser (header.c, address.c, mime.c, ...) fill these
 * types, so they stand here, below all of them: a sub-parser includes this
 * header, never mail.h, and mail.h (mail_parse, for the rest of ingest)
 * includes it too.  The ownership rules of the strings are mail.h's. */
#ifndef INGEST_MAIL_MESSAGE_H
#define INGEST_MAIL_MESSAGE_H

#include "core/str.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An address list entry: a mailbox ({name, address}) or a group (RFC 5322
 * 3.4: `name: member, member;`) whose members are mailboxes. */
struct mail_addr {
	struct str name;        /* display name, decoded; p NULL when absent */
	struct str address;     /* addr-spec as written (no angle brackets) */
	bool is_group;
	struct mail_addr *members;   /* groups only */
	size_t n_members;
};

struct mail_addr_list {
	struct mail_addr *v;
	size_t n;
	bool present;                /* the header field exists (even if empty) */
};

struct mail_attachment {
	struct str filename;        /* decoded; p NULL when none */
	struct str content_type;    /* declared, lower case type/subtype */
	struct str detected_type;   /* libmagic MIME type; p NULL when not sniffed */
	struct str disposition;     /* "attachment", "inline", or NULL */
	struct str content_id;      /* without angle brackets */
	uint64_t size;                   /* decoded bytes */
};

/* One header field as it appeared, in order (for --headers). */
struct mail_header {
	struct str name;    /* as written */
	struct str value;   /* unfolded, RFC 2047-decoded, UTF-8 */
};

/* Stable warning codes: their names are part of the output schema, in this
 * order (the order records list them in).  Add new codes at the end. */
#define MAIL_WARNINGS(X)                                  \
	X(DUPLICATED_HEADER, "duplicated-header")             \
	X(UNENCODED_8BIT_HEADER, "unencoded-8bit-header")     \
	X(INVALID_ENCODED_WORD, "invalid-encoded-word")       \
	X(MALFORMED_MULTIPART, "malformed-multipart")         \
	X(MISSING_BOUNDARY, "missing-boundary")               \
	X(UNTERMINATED_MULTIPART, "unterminated-multipart")   \
	X(TRUNCATED_MESSAGE, "truncated-message")             \
	X(NESTING_OVERFLOW, "nesting-overflow")               \
	X(TOO_MANY_PARTS, "too-many-parts")                   \
	X(HEADER_TOO_LARGE, "header-too-large")               \
	X(BAD_BASE64, "bad-base64")                           \
	X(BAD_QUOTED_PRINTABLE, "bad-quoted-printable")       \
	X(BAD_UUENCODE, "bad-uuencode")                       \
	X(UNKNOWN_CHARSET, "unknown-charset")                 \
	X(INVALID_BYTES_REPLACED, "invalid-bytes-replaced")   \
	X(BAD_DATE, "bad-date")                               \
	X(BAD_ADDRESS, "bad-address")                         \
	X(TYPE_MISMATCH, "type-mismatch")                     \
	X(MALFORMED_HEADER, "malformed-header")               \
	X(BAD_PARAMETER, "bad-parameter")                     \
	X(UNKNOWN_TRANSFER_ENCODING, "unknown-transfer-encoding") \
	X(TEXT_TRUNCATED, "text-truncated")                   \
	X(ENCODED_MESSAGE, "encoded-message")

enum mail_warning {
#define MAIL_WARNING_ENUM(id, name) MAIL_W_##id,
	MAIL_WARNINGS(MAIL_WARNING_ENUM)
#undef MAIL_WARNING_ENUM
	MAIL_W__COUNT
};

static inline void mail_warn(uint64_t *set, enum mail_warning w)
{
	*set |= UINT64_C(1) << w;
}

struct mail_message {
	bool is_mail;                  /* false: "not a mail message" */
	struct str detected_type; /* libmagic type of a non-mail input */

	struct str message_id;    /* without angle brackets */
	struct str in_reply_to;   /* first msg-id, without angle brackets */
	struct str *references;   /* msg-ids in order, without brackets */
	size_t n_references;

	bool has_date;
	int64_t date;                  /* seconds since the epoch, UTC */
	struct str date_raw;      /* the field as written, when unparseable */

	struct mail_addr_list from, sender, reply_to, to, cc, bcc;
	struct str subject;       /* decoded */
	struct str list_id;       /* the id inside <...> */
	struct str content_type;  /* top-level type/subtype, lower case */

	struct str text;          /* search text, UTF-8 */
	bool text_truncated;

	struct mail_attachment *attachments;
	size_t n_attachments;
	uint32_t parts;                /* MIME parts, the top level included */

	struct mail_header *headers;   /* only with mail_options.want_headers */
	size_t n_headers;

	uint64_t warnings;             /* set of enum mail_warning bits */
	uint64_t replaced_bytes;       /* invalid bytes turned into U+FFFD */
};

struct mail_options {
	size_t max_text;      /* bytes of text kept; the rest is cut */
	bool want_text;       /* false: text is not extracted (--no-text) */
	bool want_headers;    /* fill headers[] (--headers) */
};

#endif
