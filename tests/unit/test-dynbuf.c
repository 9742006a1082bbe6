/* SPDX-License-Identifier: MIT */
/* Unit tests for core/dynbuf: growth, the cap as -E2BIG with the buffer
 * unchanged, printf, take handing out a NUL-terminated string. */
#include "core/dynbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

static void test_dynbuf_grows_and_keeps_bytes(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(dynbuf_putc(&b, (char)('a' + i % 26)), 0);
	assert_int_equal(b.len, 10000);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(b.p[i], 'a' + i % 26);
	assert_true(b.cap > b.len);            /* room for take's NUL */
	dynbuf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_true(b.cap > 10000);            /* reset keeps the capacity */
	dynbuf_release(&b);
	assert_null(b.p);
}

static void test_dynbuf_cap_fails_whole(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 8);
	assert_int_equal(dynbuf_puts(&b, "12345"), 0);
	assert_int_equal(dynbuf_puts(&b, "6789"), -E2BIG);   /* 9 > 8 */
	assert_int_equal(b.len, 5);                          /* nothing appended */
	assert_int_equal(dynbuf_puts(&b, "678"), 0);         /* exactly 8 */
	assert_int_equal(dynbuf_putc(&b, 'x'), -E2BIG);
	assert_int_equal(dynbuf_printf(&b, "%d", 1), -E2BIG);
	assert_int_equal(dynbuf_reserve(&b, SIZE_MAX), -E2BIG);
	assert_memory_equal(b.p, "12345678", 8);
	dynbuf_release(&b);
}

static void test_dynbuf_printf_and_take(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(dynbuf_printf(&b, "%s=%llu", "n", 18446744073709551615ull), 0);
	assert_int_equal(dynbuf_append(&b, "", 0), 0);
	size_t n;
	char *s = dynbuf_take(&b, &n);
	assert_string_equal(s, "n=18446744073709551615");
	assert_int_equal(n, strlen(s));
	assert_null(b.p);                      /* the buffer is empty again */
	assert_int_equal(b.len, 0);
	free(s);
	/* take of an empty buffer is an empty string, not NULL */
	s = dynbuf_take(&b, NULL);
	assert_string_equal(s, "");
	free(s);
}

/* first: the size of the first allocation, kept by a release and a take
 * (the next allocation starts there again), still under the cap. */
static void test_dynbuf_first_size(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	b.first = 100000;
	assert_int_equal(dynbuf_append(&b, "x", 1), 0);
	assert_int_equal(b.cap, 100000);
	dynbuf_release(&b);
	assert_int_equal(b.first, 100000);
	assert_int_equal(dynbuf_append(&b, "y", 1), 0);
	assert_int_equal(b.cap, 100000);
	size_t len;
	char *p = dynbuf_take(&b, &len);
	assert_non_null(p);
	free(p);
	assert_int_equal(b.first, 100000);
	dynbuf_init(&b, 5000);
	b.first = 100000;
	assert_int_equal(dynbuf_append(&b, "z", 1), 0);
	assert_int_equal(b.cap, 5001);
	dynbuf_release(&b);
}

/* The first size is a hint: one the allocator refuses still leaves the
 * room asked for, from 256 bytes as without it (an error record must get
 * out when the working size cannot be had). */
static void test_dynbuf_first_size_refused(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	skip();   /* the sanitizers' allocators abort rather than return NULL */
#else
	struct dynbuf b;
	dynbuf_init(&b, 0);
	b.first = SIZE_MAX / 4;   /* 4 EiB: no allocator gives that */
	assert_int_equal(dynbuf_append(&b, "x", 1), 0);
	assert_int_equal(b.cap, 256);
	assert_int_equal(dynbuf_append(&b, "y", 1), 0);
	assert_memory_equal(b.p, "xy", 2);
	dynbuf_release(&b);
#endif
}

/* recycle: emptied, the memory kept up to keep_max and given back past it;
 * the next allocation then takes `first` at once. */
static void test_dynbuf_recycle(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	dynbuf_recycle(&b, 64 * 1024, 1 << 20);
	assert_null(b.p);                      /* nothing until a byte comes */
	assert_int_equal(dynbuf_append(&b, "{}\n", 3), 0);
	assert_int_equal(b.cap, 64 * 1024);
	char *p = b.p;
	dynbuf_recycle(&b, 64 * 1024, 1 << 20);
	assert_int_equal(b.len, 0);
	assert_ptr_equal(b.p, p);              /* kept */
	assert_int_equal(dynbuf_reserve(&b, 2 << 20), 0);
	dynbuf_recycle(&b, 64 * 1024, 1 << 20);
	assert_null(b.p);                      /* past keep_max: given back */
	assert_int_equal(b.cap, 0);
	assert_int_equal(dynbuf_append(&b, "{}\n", 3), 0);
	assert_int_equal(b.cap, 64 * 1024);    /* and large again at once */
	assert_memory_equal(b.p, "{}\n", 3);
	dynbuf_release(&b);
}

/* adopt: memory made elsewhere becomes the buffer's, written from its
 * start, grown by realloc past it, freed by release. */
static void test_dynbuf_adopt(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	char *p = malloc(64);
	assert_non_null(p);
	dynbuf_adopt(&b, p, 64);
	assert_int_equal(dynbuf_append(&b, "{}\n", 3), 0);
	assert_ptr_equal(b.p, p);              /* no allocation of its own */
	assert_int_equal(b.cap, 64);
	char big[100];
	memset(big, 'x', sizeof(big));
	assert_int_equal(dynbuf_append(&b, big, sizeof(big)), 0);
	assert_int_equal(b.len, 103);
	assert_true(b.cap >= 104);
	assert_memory_equal(b.p, "{}\nxxx", 6);
	dynbuf_release(&b);
	assert_null(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dynbuf_grows_and_keeps_bytes),
		cmocka_unit_test(test_dynbuf_cap_fails_whole),
		cmocka_unit_test(test_dynbuf_printf_and_take),
		cmocka_unit_test(test_dynbuf_first_size),
		cmocka_unit_test(test_dynbuf_first_size_refused),
		cmocka_unit_test(test_dynbuf_recycle),
		cmocka_unit_test(test_dynbuf_adopt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
