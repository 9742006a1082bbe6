/* SPDX-License-Identifier: MIT */
/* Elasticsearch/OpenSearch _bulk: an action line before each JSON object
 * of jsonl.c, and the actions of --state's change records. */
#include "emit/format.h"
#include "emit/json.h"

#include <string.h>

/* `{"verb":{"_index":...,"_id":"..."}}` and its newline.  The id is the
 * record's, never its Message-ID: that one is the sender's to choose, and
 * two copies of a message are two documents.  has_id false (bytes parsed
 * from memory, which have no identity): no _id, so that the engine makes
 * one, where "_id":"0000000000000000" made every such document replace
 * the one before. */
static int emit_es_action_line(const struct emit_options *o, const char *verb,
                               uint64_t id, bool has_id, struct dynbuf *b)
{
	int r;

	if ((r = json_put_lit(b, "{\"")) < 0 || (r = json_put_raw(b, verb, strlen(verb))) < 0 ||
	    (r = json_put_lit(b, "\":{")) < 0)
		return r;
	if (o->es_index) {
		if ((r = json_put_lit(b, "\"_index\":")) < 0 ||
		    (r = json_put_cstr(b, o->es_index)) < 0 ||
		    (has_id && (r = json_put_lit(b, ",")) < 0))
			return r;
	}
	if (has_id && ((r = json_put_lit(b, "\"_id\":")) < 0 || (r = json_put_id(b, id)) < 0))
		return r;
	return json_put_lit(b, "}}\n");
}

int emit_es_action(const struct emit_options *o, const struct record *rec,
                   const struct emit_ctx *c)
{
	return emit_es_action_line(o, "index", record_id(&rec->io), !rec->io.anonymous, c->b);
}

int emit_es_error(const struct emit_options *o, const struct record *rec, struct dynbuf *b)
{
	if (!rec->io.known)
		return 0;
	return emit_es_action_line(o, "delete", record_id(&rec->io), true, b);
}

int emit_es_change(const struct emit_options *o, const struct record *rec, struct dynbuf *b)
{
	const struct record_io *io = &rec->io;
	int r = emit_es_action_line(o, io->kind == RECORD_DELETED ? "delete" : "update",
	                            record_id(io), true, b);
	if (r < 0 || io->kind == RECORD_DELETED)
		return r;
	if ((r = json_put_lit(b, "{\"doc\":{")) < 0)
		return r;
	return json_put_bytes_member(b, "path", io->path.p, io->path.n);
}
