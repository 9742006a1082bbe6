/* Every heap allocation of ingest goes through these, so that issue-7 fault
 * injection can fail any one of them (see core/fault.h) and so that a
 * failure is always a NULL the caller handles, never an abort. */
#ifndef INGEST_XALLOC_H
#define INGEST_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
void xfree(void *p);

#endif
