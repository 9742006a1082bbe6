/* Fallible allocation: see xalloc.h.  The only reason these wrap malloc is
 * fault injection; with it compiled out they are malloc itself. */
#include "core/xalloc.h"
#include "core/fault.h"

#include <errno.h>
#include <stdlib.h>

void *xmalloc(size_t n)
{
	if (fault_check(FAULT_ALLOC, NULL)) {
		errno = ENOMEM;
		return NULL;
	}
	return malloc(n ? n : 1);
}

void *xcalloc(size_t n, size_t size)
{
	if (fault_check(FAULT_ALLOC, NULL)) {
		errno = ENOMEM;
		return NULL;
	}
	return calloc(n ? n : 1, size ? size : 1);
}

void *xrealloc(void *p, size_t n)
{
	if (fault_check(FAULT_ALLOC, NULL)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n ? n : 1);
}

void xfree(void *p)
{
	free(p);
}
