/* SPDX-License-Identifier: MIT */
/* RFC 5322 section 3.6.4: Message-ID, In-Reply-To, References.  Ids are
 * returned without angle brackets; comments and junk between ids are
 * skipped; an id without brackets (seen in the wild) is taken as a whole
 * word.  Views into the input where possible. */
#ifndef INGEST_MAIL_MSGID_H
#define INGEST_MAIL_MSGID_H

#include "core/arena.h"
#include "mail/message.h"

/* All ids of an unfolded value, in order (the array in the arena). */
int msgid_parse_list(struct arena *a, struct str in,
                     struct str **ids, size_t *n);
/* The first id, or STR_NULL. */
struct str msgid_parse_first(struct str in);

#endif
