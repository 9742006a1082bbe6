/* SPDX-License-Identifier: MIT */
/* Unit tests for pipeline/parse_stage: the workers' output buffers, which
 * the stage owns and lends to the batches of a pool run.  Each starts at a
 * quarter of a batch's kept data memory (batch_keep_bytes), in one
 * allocation when its first record comes, not at 256 bytes doubling through
 * malloc's mremap; nothing is allocated before. */
#include "pipeline/parse_stage.h"
#include "core/dynbuf.h"
#include "core/limits.h"
#include "sched/batch.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

static void test_parse_stage_output_first_size(void **state)
{
	(void)state;
	/* --io-only: no parser contexts, the same buffers */
	struct parse_stage s = { .parse = false, .batch_bytes = LIMIT_BATCH_BYTES_DEFAULT };
	assert_int_equal(parse_stage_init(&s, 2), 0);
	const size_t first = (size_t)(batch_keep_bytes(LIMIT_BATCH_BYTES_DEFAULT) / 4);
	for (unsigned w = 0; w < 2; w++) {
		assert_null(s.out[w].p);               /* nothing until a record comes */
		assert_int_equal(s.out[w].first, first);
		assert_int_equal(dynbuf_append(&s.out[w], "{}\n", 3), 0);
		assert_int_equal(s.out[w].cap, first); /* then all of it at once */
	}
	assert_ptr_not_equal(s.out[0].p, s.out[1].p);
	parse_stage_release(&s);
	assert_null(s.out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stage_output_first_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
