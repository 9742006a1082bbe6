/* SPDX-License-Identifier: MIT */
/* HTML to text.  The full conversion (into an exact-size buffer of the
 * input's length, the documented bound) and a cut one (a capacity picked by
 * the first byte) must stay inside their buffers; a cut lands on a UTF-8
 * boundary; valid UTF-8 in gives valid UTF-8 out. */
#include "fuzz.h"
#include "mail/html.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = fuzz_dup(data, size);
	size_t cap = size ? p[0] % 97 : 0;
	char *full = malloc(size ? size : 1), *cut = malloc(cap ? cap : 1);
	bool full_full = false, cut_full = false;
	bool valid = utf8_valid((const char *)p, size);
	FUZZ_CHECK(full && cut);

	size_t n = html_to_text(p, size, full, size, &full_full);
	FUZZ_CHECK(n <= size);
	FUZZ_CHECK(!valid || utf8_valid(full, n));

	size_t m = html_to_text(p, size, cut, cap, &cut_full);
	FUZZ_CHECK(m <= cap);
	FUZZ_CHECK(!valid || utf8_valid(cut, m));
	FUZZ_CHECK(cut_full || m == n);   /* not cut: the same text */

	/* Named references: any name, any length, no NUL terminator. */
	size_t k = size < 40 ? size : 40;
	char *name = (char *)fuzz_dup(p, k);
	int32_t cp2, cp = html_entity_lookup(name, k, &cp2);
	FUZZ_CHECK(cp == -1 || (cp > 0 && cp <= 0x10FFFF));
	FUZZ_CHECK(cp2 >= 0 && cp2 <= 0x10FFFF);
	free(name);

	free(cut);
	free(full);
	free(p);
	return 0;
}
