/* SPDX-License-Identifier: MIT */
/* RFC 5322 section 3.4 address lists, with the obsolete forms of 4.4:
 * groups (their name kept, `undisclosed-recipients:;` is an empty group),
 * comments, quoted local parts, routes (@a,@b:user@c drops the route),
 * missing angle brackets, stray commas.  Display names are RFC 2047-decoded
 * and unquoted.  Garbage that yields no mailbox is skipped with
 * MAIL_W_BAD_ADDRESS.  Linear in the input (1 MiB of `::::` included). */
#ifndef INGEST_MAIL_ADDRESS_H
#define INGEST_MAIL_ADDRESS_H

#include "mail/message.h"

struct mail_ctx;

/* in: an unfolded field value.  Appends nothing on empty input. */
int address_parse_list(struct mail_ctx *ctx, struct str in,
                       struct mail_addr_list *out, uint64_t *warnings);

#endif
