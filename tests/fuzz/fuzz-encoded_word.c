/* SPDX-License-Identifier: MIT */
/* RFC 2047 encoded words and raw 8-bit header bytes: whatever the value,
 * encoded_word_decode's output is valid UTF-8. */
#include "fuzz.h"
#include "mail/encoded_word.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mail_ctx *ctx = fuzz_ctx();
	uint8_t *p = fuzz_dup(data, size);
	struct str out = STR_NULL;
	uint64_t warnings = 0;

	/* The scratch buffer is the caller's too: encoded_word_decode must leave what
	 * is in it alone (the MIME walk keeps decoded bytes there). */
	FUZZ_CHECK(dynbuf_append(&ctx->scratch, "keep", 4) == 0);
	int r = encoded_word_decode(ctx, (struct str){ (const char *)p, size }, &out, &warnings);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	if (r == 0) {
		FUZZ_CHECK(out.p || out.n == 0);
		FUZZ_CHECK(fuzz_str_utf8(out));
	}
	FUZZ_CHECK(ctx->scratch.len >= 4 && memcmp(ctx->scratch.p, "keep", 4) == 0);
	FUZZ_CHECK(warnings >> MAIL_W__COUNT == 0);
	free(p);
	return 0;
}
