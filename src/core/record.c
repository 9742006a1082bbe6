/* SPDX-License-Identifier: MIT */
/* Names and texts of record reasons: see record.h.  The tables are
 * generated from the RECORD_REASONS X-macro so that an added reason cannot
 * lack either. */
#include "core/record.h"
#include "core/hash.h"

static const char *const record_reason_names[] = {
#define RECORD_REASON_NAME(id, name, text) [RECORD_##id] = name,
	RECORD_REASONS(RECORD_REASON_NAME)
#undef RECORD_REASON_NAME
};

static const char *const record_reason_texts[] = {
#define RECORD_REASON_TEXT(id, name, text) [RECORD_##id] = text,
	RECORD_REASONS(RECORD_REASON_TEXT)
#undef RECORD_REASON_TEXT
};

const char *record_reason_name(enum record_reason r)
{
	if ((unsigned)r >= RECORD__COUNT)
		return NULL;
	return record_reason_names[r];
}

const char *record_reason_text(enum record_reason r)
{
	if ((unsigned)r >= RECORD__COUNT || !record_reason_texts[r])
		return "internal error";
	return record_reason_texts[r];
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

uint64_t record_thread_key(struct str msgid)
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

void record_mbox_too_large(struct record_io *io, uint64_t length)
{
	io->length = length;
	io->reason = RECORD_TOO_LARGE;
	io->message = "mbox message larger than --max-size: not read";
}
