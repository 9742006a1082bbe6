/* SPDX-License-Identifier: MIT */
/* RFC 5322 3.6.4 message ids: Message-ID, In-Reply-To, References.  The
 * list and the first id must agree, and every id is a non-empty view. */
#include "fuzz.h"
#include "mail/msgid.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mail_ctx *ctx = fuzz_ctx();
	uint8_t *p = fuzz_dup(data, size);
	struct str in = { (const char *)p, size };
	struct str *ids = NULL;
	size_t n = 0;

	struct str first = msgid_parse_first(in);
	(void)fuzz_str_utf8(first);
	int r = msgid_parse_list(&ctx->arena, in, &ids, &n);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	if (r == 0) {
		FUZZ_CHECK(ids || n == 0);
		FUZZ_CHECK(n <= size);
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(str_present(ids[i]));
			(void)fuzz_str_utf8(ids[i]);
		}
		FUZZ_CHECK(str_present(first) == (n > 0));
		if (n > 0)
			FUZZ_CHECK(first.n == ids[0].n && memcmp(first.p, ids[0].p, first.n) == 0);
	}
	free(p);
	return 0;
}
