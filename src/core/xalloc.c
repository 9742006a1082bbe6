/* SPDX-License-Identifier: MIT */
/* Fallible allocation: see xalloc.h.  The only reason these wrap malloc is
 * fault injection; with it compiled out they are malloc itself. */
#include "core/xalloc.h"
#include "core/fault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void *xmalloc_(const char *site, size_t n)
{
	if (fault_check_at(FAULT_ALLOC, "malloc", site)) {
		errno = ENOMEM;
		return NULL;
	}
	return malloc(n ? n : 1);
}

void *xcalloc_(const char *site, size_t n, size_t size)
{
	if (fault_check_at(FAULT_ALLOC, "calloc", site)) {
		errno = ENOMEM;
		return NULL;
	}
	return calloc(n ? n : 1, size ? size : 1);
}

void *xrealloc_(const char *site, void *p, size_t n)
{
	if (fault_check_at(FAULT_ALLOC, "realloc", site)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n ? n : 1);
}

void *xmemalign_(const char *site, size_t align, size_t n)
{
	if (fault_check_at(FAULT_ALLOC, "posix_memalign", site)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = NULL;
	int r = posix_memalign(&p, align, n ? n : 1);
	if (r) {
		errno = r;
		return NULL;
	}
	return p;
}

char *xstrdup_(const char *site, const char *s)
{
	if (fault_check_at(FAULT_ALLOC, "strdup", site)) {
		errno = ENOMEM;
		return NULL;
	}
	return strdup(s);
}

char *xdirname_(const char *site, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup_(site, ".");
	size_t n = slash == path ? 1 : (size_t)(slash - path);
	char *d = xmalloc_(site, n + 1);
	if (d) {
		memcpy(d, path, n);
		d[n] = '\0';
	}
	return d;
}

char *xsuffixed_(const char *site, const char *path, const char *suffix)
{
	size_t n = strlen(path), k = strlen(suffix);
	char *s = xmalloc_(site, n + k + 1);
	if (s) {
		memcpy(s, path, n);
		memcpy(s + n, suffix, k + 1);
	}
	return s;
}

void xfree(void *p)
{
	free(p);
}
