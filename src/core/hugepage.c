/* SPDX-License-Identifier: MIT */
/* Memory on transparent huge pages: see hugepage.h. */
#include "core/hugepage.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <stdint.h>
#include <sys/mman.h>

void *huge_alloc(size_t n, size_t from, size_t to)
{
	char *p = xmemalign(HUGE_PAGE_SIZE, n);
	if (!p)
		return NULL;
	if (to > n)
		to = n;
	from = (from + HUGE_PAGE_SIZE - 1) & ~(HUGE_PAGE_SIZE - 1);
	to &= ~(HUGE_PAGE_SIZE - 1);
	if (to > from)
		(void)sys_madvise(p + from, to - from, MADV_HUGEPAGE);
	return p;
}
