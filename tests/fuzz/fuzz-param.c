/* SPDX-License-Identifier: MIT */
/* Content-Type and Content-Disposition values with their parameters (RFC
 * 2045 5.1, RFC 2183, RFC 2231 continuations and charsets, encoded words
 * in quoted values): type, subtype and names are lower case (tokens as
 * written, so raw 8-bit bytes may stay); values are decoded, valid UTF-8. */
#include "fuzz.h"
#include "mail/param.h"

#include <errno.h>

static const char *const lookups[] = {
	"charset", "boundary", "name", "filename", "format", "delsp", "",
};

static void check_lower(struct str s)
{
	(void)fuzz_str_utf8(s);   /* reads every byte */
	for (size_t i = 0; i < s.n; i++)
		FUZZ_CHECK(s.p[i] < 'A' || s.p[i] > 'Z');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mail_ctx *ctx = fuzz_ctx();
	uint8_t *p = fuzz_dup(data, size);
	struct mime_type t;
	uint64_t warnings = 0;

	memset(&t, 0, sizeof(t));
	int r = param_parse(ctx, (struct str){ (const char *)p, size }, &t, &warnings);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	if (r == 0) {
		check_lower(t.type);
		check_lower(t.subtype);
		FUZZ_CHECK(t.params || t.n_params == 0);
		for (size_t i = 0; i < t.n_params; i++) {
			check_lower(t.params[i].name);
			FUZZ_CHECK(fuzz_str_utf8(t.params[i].value));
		}
		for (size_t i = 0; i < sizeof(lookups) / sizeof(lookups[0]); i++)
			FUZZ_CHECK(fuzz_str_utf8(param_get(&t, lookups[i])));
	}
	FUZZ_CHECK(warnings >> MAIL_W__COUNT == 0);
	free(p);
	return 0;
}
