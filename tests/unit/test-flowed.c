/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/flowed.c (RFC 3676 format=flowed); test-mime.c checks
 * the same through a whole message. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "mail/flowed.h"

static void test_flowed_decode_direct(void **state)
{
	(void)state;
	char out[64];
	bool full = true;
	size_t k = flowed_decode((const uint8_t *)"a \r\nb\r\n>x \r\ny\r\n", 15, false, out, sizeof(out), &full);
	assert_int_equal(k, 10);
	assert_memory_equal(out, "a b\n>x \ny\n", 10);
	assert_false(full);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flowed_decode_direct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
