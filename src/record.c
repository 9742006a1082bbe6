/* Names of record reasons: see record.h.  The table is generated from the
 * RECORD_REASONS X-macro so that an added reason cannot lack a name. */
#include "record.h"
#include "core/hash.h"
#include "io/maildir.h"

static const char *const record_reason_names[] = {
#define RECORD_REASON_NAME(id, name) [RECORD_##id] = name,
	RECORD_REASONS(RECORD_REASON_NAME)
#undef RECORD_REASON_NAME
};

/* NULL for RECORD_NONE (no error to name) and for values out of range. */
const char *record_reason_name(enum record_reason r)
{
	if ((unsigned)r >= sizeof(record_reason_names) / sizeof(record_reason_names[0]))
		return NULL;
	return record_reason_names[r];
}

uint64_t record_file_id(struct mail_str base, struct mail_str dir, struct mail_str name,
                        bool maildir)
{
	if (maildir)
		return maildir_id(base.p, base.n, name.p, name.n);
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, "file", 5);   /* the NUL too */
	h = hash_fnv1a(h, base.p, base.n);
	/* fed piece by piece: the same value as the joined path */
	if (dir.n) {
		h = hash_fnv1a(h, "/", 1);
		h = hash_fnv1a(h, dir.p, dir.n);
	}
	if (name.n) {
		h = hash_fnv1a(h, "/", 1);
		h = hash_fnv1a(h, name.p, name.n);
	}
	return h;
}

uint64_t record_id(const struct record_io *io)
{
	if (!io->in_mbox)
		return io->id;
	/* Offsets survive appends, which is how mbox archives grow; a rewrite
	 * that removes a message moves the ones after it (README,
	 * "Incremental runs"). */
	char dec[21];
	char *e = dec + sizeof(dec), *q = e;
	uint64_t v = io->offset;
	do {
		*--q = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	*--q = '#';   /* decimal: the same on every machine, unlike raw bytes */
	return hash_fnv1a(io->id, q, (size_t)(e - q));
}

uint64_t record_thread_id(const struct mail_message *m)
{
	struct mail_str root = m->n_references && m->references[0].n ? m->references[0]
	                     : m->in_reply_to.n ? m->in_reply_to : m->message_id;
	return record_thread_key(root);
}

uint64_t record_thread_key(struct mail_str msgid)
{
	if (!msgid.p || !msgid.n)
		return 0;
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, "thread", 7);
	return hash_fnv1a(h, msgid.p, msgid.n);
}

void record_id_hex(uint64_t id, char hex[17])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 15; i >= 0; i--) {
		hex[i] = digits[id & 15];
		id >>= 4;
	}
	hex[16] = '\0';
}
