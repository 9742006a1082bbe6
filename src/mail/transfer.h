/* SPDX-License-Identifier: MIT */
/* RFC 2045 section 6: Content-Transfer-Encoding, and uuencode.
 *
 * Every decoder takes pointer + length (never NUL-terminated), never reads
 * outside it, and runs in one linear pass.  The decoders share one shape:
 * they return the full decoded size and write only the first out_cap bytes
 * of the result to out (out may be NULL with out_cap 0).  That gives three
 * uses with one code path, so they can never disagree: a full decode
 * (out_cap >= the input length), the decoded size of an attachment without
 * storing it (out NULL), and size plus a sniffing prefix (out_cap
 * LIMIT_SNIFF_BYTES).  Decoded output is never longer than the input. */
#ifndef INGEST_MAIL_TRANSFER_H
#define INGEST_MAIL_TRANSFER_H

#include "mail/message.h"

enum transfer_encoding {
	TRANSFER_IDENTITY,   /* 7bit, 8bit, binary, or absent */
	TRANSFER_BASE64,
	TRANSFER_QP,
	TRANSFER_UUENCODE,   /* x-uuencode and friends: the body is one block */
	TRANSFER_UNKNOWN,    /* RFC 2045 6.4: treat as application/octet-stream */
};

/* Classifies a Content-Transfer-Encoding value (unfolded; case and
 * surrounding white space ignored).  STR_NULL is TRANSFER_IDENTITY. */
enum transfer_encoding transfer_encoding_parse(struct str v);

/* Base64 (RFC 2045 6.8), lenient: white space is skipped silently; other
 * bytes outside the alphabet are skipped with MAIL_W_BAD_BASE64; missing
 * padding is tolerated; `=` ends a quantum, and decoding goes on after it
 * (concatenated base64 streams are common).  A lone sextet that cannot make
 * a byte (truncated data) sets MAIL_W_BAD_BASE64. */
uint64_t transfer_base64_decode(const uint8_t *p, size_t n, uint8_t *out,
                                size_t out_cap, uint64_t *warnings);

/* The leading run of a base64 body: the bytes of the alphabet and white
 * space before the first other byte (the padding, a delimiter line's
 * dash, garbage), which cannot warn.  The MIME walk counts it while it
 * looks for the part's end (no delimiter starts inside it), so that the
 * size of an attachment costs one pass over its bytes, not two. */
struct transfer_b64_run {
	size_t len;          /* bytes from the body's start */
	uint64_t sextets;    /* alphabet bytes among them */
};

struct transfer_b64_run transfer_base64_run(const uint8_t *p, size_t n);

/* transfer_base64_decode() of p[0..n), given its leading run (NULL: not
 * known; a run longer than n is not used): once the first out_cap bytes
 * are written, the size comes from the run's count instead of a second
 * pass over it.  The same result and warnings as without the run. */
uint64_t transfer_base64_decode_run(const uint8_t *p, size_t n, const struct transfer_b64_run *run,
                                    uint8_t *out, size_t out_cap, uint64_t *warnings);

/* Quoted-printable (RFC 2045 6.7): `=XX` (either case of hex), soft line
 * breaks `=` + optional white space + CRLF or LF, and `=` at the very end.
 * An invalid escape is kept literally with MAIL_W_BAD_QUOTED_PRINTABLE. */
uint64_t transfer_qp_decode(const uint8_t *p, size_t n, uint8_t *out,
                            size_t out_cap, uint64_t *warnings);

/* Any of the above by encoding; TRANSFER_IDENTITY and TRANSFER_UNKNOWN copy.
 * TRANSFER_UUENCODE decodes the first block of the body (or nothing). */
uint64_t transfer_decode(enum transfer_encoding e, const uint8_t *p, size_t n,
                         uint8_t *out, size_t out_cap, uint64_t *warnings);

/* A uuencoded block inside a text body: `begin MODE NAME` ... `end`. */
struct transfer_uu {
	size_t start;        /* offset of the `begin` line */
	size_t end;          /* offset just past the `end` line (or the input end) */
	size_t data;         /* offset of the first encoded line */
	size_t data_end;     /* offset of the `end` line (or the input end) */
	struct str name;   /* view into the input; empty when missing */
	bool terminated;     /* an `end` line was found */
};

/* Finds the first block whose `begin` line starts at or after from.  Only a
 * line `begin` SP 3-4 octal digits SP name counts.  Linear: each call scans
 * from `from` forward, and callers continue after u->end. */
bool transfer_uu_find(const uint8_t *p, size_t n, size_t from, struct transfer_uu *u);

/* Decodes the encoded lines p[0..n) of a block (u->data to u->data_end).
 * Damaged lines (bad characters, a length byte that disagrees with the line)
 * are decoded as far as they go with MAIL_W_BAD_UUENCODE. */
uint64_t transfer_uu_decode(const uint8_t *p, size_t n, uint8_t *out,
                            size_t out_cap, uint64_t *warnings);

#endif
