/* SPDX-License-Identifier: MIT */
/* The index's reading of record JSON (index/json_read.h) and of address
 * lists (index/addresses.h): any bytes give 0, JSON_READ_OTHER or -ENOMEM,
 * never a read past the input, and every row read points inside the
 * rows' text. */
#include "fuzz.h"
#include "index/addresses.h"
#include "index/json_read.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = fuzz_dup(data, size);
	const char *s = (const char *)p;

	struct json_read j = { s, s + size };
	int r = json_read_skip(&j);
	FUZZ_CHECK(r == 0 || r == JSON_READ_OTHER);
	FUZZ_CHECK(j.p >= s && j.p <= s + size);

	struct dynbuf out;
	dynbuf_init(&out, 0);
	j = (struct json_read){ s, s + size };
	r = json_read_string(&j, &out);
	FUZZ_CHECK(r == 0 || r == JSON_READ_OTHER || r == -ENOMEM);
	FUZZ_CHECK(r != 0 || out.len <= size);
	dynbuf_release(&out);

	/* the input as the first list and, after its first NUL, the fourth */
	struct str lists[ADDR_ROLES] = { { s, size }, STR_NULL, STR_NULL, STR_NULL, STR_NULL, STR_NULL };
	const char *nul = memchr(s, '\0', size);
	if (nul) {
		lists[0].n = (size_t)(nul - s);
		lists[3] = (struct str){ nul + 1, size - lists[0].n - 1 };
	}
	struct addr_rows a;
	addr_rows_init(&a);
	r = addr_rows_read(&a, lists);
	FUZZ_CHECK(r == 0 || r == JSON_READ_OTHER || r == -ENOMEM);
	if (r == 0) {
		size_t n;
		const struct addr_row *row = addr_rows_get(&a, &n);
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(row[i].role >= 0 && row[i].role < ADDR_ROLES);
			FUZZ_CHECK(row[i].name < 0 || (size_t)row[i].name + row[i].name_len <= a.text.len);
			FUZZ_CHECK(row[i].address < 0 || (size_t)row[i].address + row[i].address_len <= a.text.len);
			FUZZ_CHECK(row[i].group < 0 || (size_t)row[i].group + row[i].group_len <= a.text.len);
		}
	}
	addr_rows_release(&a);
	free(p);
	return 0;
}
