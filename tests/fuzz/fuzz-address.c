/* SPDX-License-Identifier: MIT */
/* RFC 5322 3.4 address lists (groups, comments, routes, obsolete forms):
 * names are decoded UTF-8, every string is read whole. */
#include "fuzz.h"
#include "mail/address.h"

#include <errno.h>

static void check_addr(const struct mail_addr *a, int member)
{
	FUZZ_CHECK(fuzz_str_utf8(a->name));
	(void)fuzz_str_utf8(a->address);
	FUZZ_CHECK(!member || !a->is_group);
	FUZZ_CHECK(a->members || a->n_members == 0);
	for (size_t j = 0; j < a->n_members; j++)
		check_addr(&a->members[j], 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mail_ctx *ctx = fuzz_ctx();
	uint8_t *p = fuzz_dup(data, size);
	struct mail_addr_list l = { 0 };
	uint64_t warnings = 0;

	int r = address_parse_list(ctx, (struct str){ (const char *)p, size }, &l, &warnings);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	if (r == 0) {
		FUZZ_CHECK(l.v || l.n == 0);
		/* Each entry needs at least one input byte. */
		FUZZ_CHECK(l.n <= size);
		for (size_t i = 0; i < l.n; i++)
			check_addr(&l.v[i], 0);
	}
	FUZZ_CHECK(warnings >> MAIL_W__COUNT == 0);
	free(p);
	return 0;
}
