/* SPDX-License-Identifier: MIT */
/* An mbox archive split as reader.c streams it, shared by tests/unit/test-mbox.c
 * and tests/fuzz/fuzz-mbox.c so that both check the same driving loop: each
 * chunk is appended to the bytes not yet cut into messages, in a fresh
 * exact-size buffer (a read past its end is an ASan report) that starts at
 * the pending message's separator, and mbox_next_max() runs until it asks
 * for more bytes. */
#ifndef INGEST_TESTS_MBOX_CHUNKS_H
#define INGEST_TESTS_MBOX_CHUNKS_H

#include "mail/mbox.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One message: m's offsets are into buf (len bytes, buf[0] being archive
 * offset base), found by a search from pos.  Returning false stops. */
typedef bool (*mbox_chunk_fn)(void *ctx, const uint8_t *buf, size_t len, size_t base, size_t pos,
                              const struct mbox_span *m, size_t next);

enum mbox_chunks_end {
	MBOX_CHUNKS_DONE,            /* every chunk fed; *pending bytes left uncut */
	MBOX_CHUNKS_STOPPED,         /* fn returned false */
	MBOX_CHUNKS_UNDECIDED_AT_EOF,/* mbox_next_max asked for more after the last chunk */
	MBOX_CHUNKS_NOMEM,
};

/* cuts[0..k) are the chunk ends in `in`, increasing, the last one its length. */
static inline enum mbox_chunks_end mbox_split_chunks(const uint8_t *in, const size_t *cuts, size_t k,
                                                     uint64_t max_len, mbox_chunk_fn fn, void *ctx,
                                                     size_t *pending)
{
	uint8_t *pend = NULL;
	size_t pend_len = 0, base = 0, off = 0;
	enum mbox_chunks_end end = MBOX_CHUNKS_DONE;
	for (size_t c = 0; c < k && end == MBOX_CHUNKS_DONE; c++) {
		size_t got = cuts[c] - off;
		bool eof = c + 1 == k;
		size_t len = pend_len + got;
		uint8_t *buf = malloc(len ? len : 1);
		if (!buf) {
			end = MBOX_CHUNKS_NOMEM;
			break;
		}
		if (pend_len)
			memcpy(buf, pend, pend_len);
		if (got)
			memcpy(buf + pend_len, in + off, got);
		off += got;
		free(pend);
		pend = NULL;
		size_t pos = 0;
		while (pos < len) {
			struct mbox_span m;
			size_t next;
			if (!mbox_next_max(buf, len, pos, eof, max_len, &m, &next)) {
				if (eof)
					end = MBOX_CHUNKS_UNDECIDED_AT_EOF;
				break;
			}
			if (!fn(ctx, buf, len, base, pos, &m, next)) {
				end = MBOX_CHUNKS_STOPPED;
				break;
			}
			pos = next;
		}
		pend_len = len - pos;
		pend = malloc(pend_len ? pend_len : 1);
		if (!pend) {
			free(buf);
			end = MBOX_CHUNKS_NOMEM;
			break;
		}
		if (pend_len)
			memcpy(pend, buf + pos, pend_len);
		base += pos;
		free(buf);
	}
	free(pend);
	*pending = pend_len;
	return end;
}

#endif
