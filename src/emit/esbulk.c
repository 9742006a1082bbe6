/* SPDX-License-Identifier: MIT */
/* Elasticsearch/OpenSearch _bulk: an action line before each JSON object
 * of jsonl.c. */
#include "emit/format.h"
#include "emit/json.h"

/* ---- es-bulk ---------------------------------------------------------- */

int emit_es_action(const struct emit_options *o, const struct record *rec,
                          const struct emit_ctx *c)
{
	struct dynbuf *b = c->b;
	int r;

	if ((r = json_put_lit(b, "{\"index\":{")) < 0)
		return r;
	if (o->es_index) {
		if ((r = json_put_lit(b, "\"_index\":")) < 0 ||
		    (r = json_put_cstr(b, o->es_index)) < 0 ||
		    (r = json_put_lit(b, ",")) < 0)
			return r;
	}
	/* The record's id, never its Message-ID: that one is the sender's to
	 * choose, and two copies of a message are two documents. */
	if ((r = json_put_lit(b, "\"_id\":")) < 0 || (r = emit_json_hex(b, record_id(&rec->io))) < 0)
		return r;
	return json_put_lit(b, "}}\n");
}

