/* SPDX-License-Identifier: MIT */
/* The invariants of a parsed struct mail_message that hold whatever the
 * input (mail.h's contract), checked by the message and emit targets.
 * Every byte of every string is read, so a view that outlives its bytes or
 * runs past them is an AddressSanitizer report here rather than garbage in
 * a record later. */
#ifndef INGEST_FUZZ_CHECK_MESSAGE_H
#define INGEST_FUZZ_CHECK_MESSAGE_H

#include "fuzz.h"
#include "core/limits.h"

/* A decoded string: mail.h says "Every string it returns is UTF-8 (valid
 * ...)", and for these the parser does the decoding. */
static inline void fuzz_check_str(struct str s)
{
	FUZZ_CHECK(fuzz_str_utf8(s));
}

/* A view of the input "as written" (addr-spec, msg-id, the raw date, ...):
 * read whole, but raw 8-bit bytes may pass through (the emitter repairs
 * them), so UTF-8 is not asserted. */
static inline void fuzz_check_view(struct str s)
{
	(void)fuzz_str_utf8(s);
}

static inline void fuzz_check_addrs(const struct mail_addr_list *l)
{
	FUZZ_CHECK(l->v || l->n == 0);
	FUZZ_CHECK(l->present || l->n == 0);
	for (size_t i = 0; i < l->n; i++) {
		const struct mail_addr *a = &l->v[i];
		fuzz_check_str(a->name);
		fuzz_check_view(a->address);
		FUZZ_CHECK(a->members || a->n_members == 0);
		FUZZ_CHECK(a->is_group || a->n_members == 0);
		for (size_t j = 0; j < a->n_members; j++) {
			FUZZ_CHECK(!a->members[j].is_group);
			fuzz_check_str(a->members[j].name);
			fuzz_check_view(a->members[j].address);
		}
	}
}

static inline void fuzz_check_message(const struct mail_options *o,
                                      const struct mail_message *m)
{
	fuzz_check_str(m->detected_type);
	fuzz_check_view(m->message_id);
	fuzz_check_view(m->in_reply_to);
	FUZZ_CHECK(m->references || m->n_references == 0);
	for (size_t i = 0; i < m->n_references; i++) {
		FUZZ_CHECK(str_present(m->references[i]));
		fuzz_check_view(m->references[i]);
	}
	fuzz_check_view(m->date_raw);
	fuzz_check_addrs(&m->from);
	fuzz_check_addrs(&m->sender);
	fuzz_check_addrs(&m->reply_to);
	fuzz_check_addrs(&m->to);
	fuzz_check_addrs(&m->cc);
	fuzz_check_addrs(&m->bcc);
	fuzz_check_str(m->subject);
	fuzz_check_view(m->list_id);
	fuzz_check_view(m->content_type);
	fuzz_check_str(m->text);
	FUZZ_CHECK(m->text.n <= o->max_text);
	FUZZ_CHECK(m->attachments || m->n_attachments == 0);
	FUZZ_CHECK(m->n_attachments <= LIMIT_MIME_PARTS);
	FUZZ_CHECK(m->parts <= LIMIT_MIME_PARTS);
	for (size_t i = 0; i < m->n_attachments; i++) {
		const struct mail_attachment *a = &m->attachments[i];
		fuzz_check_str(a->filename);
		fuzz_check_view(a->content_type);
		fuzz_check_str(a->detected_type);
		fuzz_check_view(a->disposition);
		fuzz_check_view(a->content_id);
	}
	FUZZ_CHECK(m->headers || m->n_headers == 0);
	FUZZ_CHECK(o->want_headers || m->n_headers == 0);
	for (size_t i = 0; i < m->n_headers; i++) {
		fuzz_check_view(m->headers[i].name);
		fuzz_check_str(m->headers[i].value);
	}
	FUZZ_CHECK(m->warnings >> MAIL_W__COUNT == 0);
	FUZZ_CHECK(!m->replaced_bytes || (m->warnings & (UINT64_C(1) << MAIL_W_INVALID_BYTES_REPLACED)));
}

#endif
