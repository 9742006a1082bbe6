/* SPDX-License-Identifier: MIT */
/* emit_record(): a record in the chosen format (emit.h).  The one file that
 * knows every format, so that the formats (jsonl.c, esbulk.c, tsv.c) and
 * what they share (emit.c) depend on nothing above them.
 *
 * Failure.  emit_record() notes out->len on entry and truncates back to it
 * on any error, so a record is written whole or not at all; the output of a
 * failed call is never observable. */
#include "emit/format.h"
#include "emit/json.h"

#include <errno.h>

static void emit_ctx_init(struct emit_ctx *c, const struct record *r,
                          struct dynbuf *b)
{
	c->rec = r;
	c->io = &r->io;
	c->raw = r->mail;
	c->m = emit_record_message(r);
	c->reason = emit_record_reason(r);
	c->b = b;
}

int emit_record(const struct emit_options *o, const struct record *rec,
                struct dynbuf *out)
{
	size_t start = out->len;
	struct emit_ctx c;
	int r;

	if (rec->io.kind != RECORD_MESSAGE) {
		if (emit_change_dropped(o, &rec->io))
			return 0;
		if ((r = o->format == EMIT_TSV ? -EINVAL : emit_change(o, rec, out)) < 0)
			out->len = start;
		return r;
	}
	emit_ctx_init(&c, rec, out);
	switch (o->format) {
	case EMIT_ES_BULK:
		/* An error record is not a document of the index's shape (no
		 * message, an error object): left out unless asked for, and
		 * still counted by --stats and the error summary; what the last
		 * run indexed under its id goes. */
		if (c.reason != RECORD_NONE && !o->es_errors) {
			r = emit_es_error(o, rec, out);
			break;
		}
		if ((r = emit_es_action(o, rec, &c)) < 0)
			break;
		__attribute__((fallthrough));
	case EMIT_JSONL:
		if ((r = emit_json_object(o, &c)) == 0)
			r = json_put_lit(out, "\n");
		break;
	case EMIT_TSV:
		r = emit_tsv_line(o, &c);
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r < 0)
		out->len = start;
	return r;
}
