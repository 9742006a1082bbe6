/* SPDX-License-Identifier: MIT */
/* RFC 5322 header blocks: header_parse, header_get/count, header_unfold.
 * Names and raw values must be views inside the input; the body offset must
 * not pass its end. */
#include "fuzz.h"
#include "mail/header.h"

#include <errno.h>

static const char *const names[] = {
	"From", "to", "SUBJECT", "Content-Type", "received", "X-Unknown", "",
};

/* ASCII case-insensitive equality of a field name, byte by byte. */
static bool name_eq(struct str a, const char *b)
{
	size_t n = strlen(b);
	if (a.n != n)
		return false;
	for (size_t k = 0; k < n; k++) {
		unsigned char x = (unsigned char)a.p[k], y = (unsigned char)b[k];
		x = x >= 'A' && x <= 'Z' ? (unsigned char)(x + 32) : x;
		y = y >= 'A' && y <= 'Z' ? (unsigned char)(y + 32) : y;
		if (x != y)
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mail_ctx *ctx = fuzz_ctx();
	uint8_t *p = fuzz_dup(data, size);
	struct header_block hb;
	uint64_t warnings = 0;

	int r = header_parse(&ctx->arena, p, size, &hb, &warnings);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	if (r == 0) {
		FUZZ_CHECK(hb.body_offset <= size);
		FUZZ_CHECK(hb.v || hb.n == 0);
		for (size_t i = 0; i < hb.n; i++) {
			const struct header_field *f = &hb.v[i];
			FUZZ_CHECK(fuzz_str_within(f->name, p, size));
			FUZZ_CHECK(fuzz_str_within(f->value, p, size));
			FUZZ_CHECK(f->name.p + f->name.n <= f->value.p);
			/* Fields come before the body. */
			FUZZ_CHECK((size_t)((const uint8_t *)f->value.p - p) + f->value.n <= hb.body_offset);

			struct str u;
			if (header_unfold(&ctx->arena, f->value, &u) == 0) {
				FUZZ_CHECK(u.n <= f->value.n);
				(void)fuzz_str_utf8(u);   /* reads every byte */
				for (size_t j = 0; j < u.n; j++)
					FUZZ_CHECK(u.p[j] != '\n' || j + 1 == u.n ||
					           (u.p[j + 1] != ' ' && u.p[j + 1] != '\t'));
			}
		}
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			/* header_get finds the first field of the name. */
			const struct header_field *first = NULL;
			for (size_t j = 0; j < hb.n && !first; j++)
				if (name_eq(hb.v[j].name, names[i]))
					first = &hb.v[j];
			FUZZ_CHECK(header_get(&hb, names[i]) == first);
		}
	}
	free(p);
	return 0;
}
