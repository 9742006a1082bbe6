/* SPDX-License-Identifier: MIT */
/* Memory on transparent huge pages: see hugepage.h. */
#include "core/hugepage.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <stdint.h>
#include <sys/mman.h>

void huge_advise(void *p, size_t n, size_t from, size_t to)
{
	if (to > n)
		to = n;
	from = (from + HUGE_PAGE_SIZE - 1) & ~(HUGE_PAGE_SIZE - 1);
	to &= ~(HUGE_PAGE_SIZE - 1);
	if (to > from)
		(void)sys_madvise((char *)p + from, to - from, MADV_HUGEPAGE);
}

void *huge_alloc(size_t n, size_t from, size_t to)
{
	char *p = xmemalign(HUGE_PAGE_SIZE, n);
	if (p)
		huge_advise(p, n, from, to);
	return p;
}
