/* SPDX-License-Identifier: MIT */
/* The whole parser: bytes → struct mail_message, as a worker runs it (one
 * mail_ctx for every input, text and headers on).  Odd-sized inputs get a
 * small --max-text so that the cut on a UTF-8 boundary is exercised too. */
#include "check_message.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mail_ctx *ctx;
	if (!ctx && !(ctx = mail_ctx_new()))
		abort();

	struct mail_options o = {
		.max_text = size & 1 ? 61 : LIMIT_MAX_TEXT_DEFAULT,
		.want_text = true,
		.want_headers = true,
	};
	struct mail_message m;
	uint8_t *p = fuzz_dup(data, size);
	int r = mail_parse(ctx, &o, p, size, &m);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	if (r == 0)
		fuzz_check_message(&o, &m);
	free(p);
	return 0;
}
