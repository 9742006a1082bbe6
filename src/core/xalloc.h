/* SPDX-License-Identifier: MIT */
/* Every heap allocation of ingest goes through these, so that fault
 * injection can fail any one of them (see core/fault.h) and so that a
 * failure is always a NULL the caller handles, never an abort.  Each is a
 * macro passing the caller's FAULT_SITE to the function of the same name
 * with a trailing underscore, so that a fault names the line that saw it;
 * call the macro.  Memory from any of them (xstrdup included) is freed with
 * xfree. */
#ifndef INGEST_XALLOC_H
#define INGEST_XALLOC_H

#include "core/fault.h"

#include <stddef.h>

void *xmalloc_(const char *site, size_t n);
void *xcalloc_(const char *site, size_t n, size_t size);
void *xrealloc_(const char *site, void *p, size_t n);
/* n bytes at an address that is a multiple of align (a power of two, a
 * multiple of sizeof(void *)); freed with xfree. */
void *xmemalign_(const char *site, size_t align, size_t n);
char *xstrdup_(const char *site, const char *s);
/* The directory a path names a file in: "." for a bare name, "/" for
 * "/name" (dirname(3) without touching path). */
char *xdirname_(const char *site, const char *path);
/* path with suffix after it: a file's sibling ("FILE.lock", "FILE-wal"). */
char *xsuffixed_(const char *site, const char *path, const char *suffix);
void xfree(void *p);

#define xmalloc(n) xmalloc_(FAULT_SITE, (n))
#define xcalloc(n, size) xcalloc_(FAULT_SITE, (n), (size))
#define xrealloc(p, n) xrealloc_(FAULT_SITE, (p), (n))
#define xmemalign(align, n) xmemalign_(FAULT_SITE, (align), (n))
#define xstrdup(s) xstrdup_(FAULT_SITE, (s))
#define xdirname(path) xdirname_(FAULT_SITE, (path))
#define xsuffixed(path, suffix) xsuffixed_(FAULT_SITE, (path), (suffix))

#endif
