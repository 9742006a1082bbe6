/* SPDX-License-Identifier: MIT */
/* Memory that will be written through, on transparent huge pages.
 *
 * A page fault costs ~10 us on a VM (docs/ARCHITECTURE.md, "Batches, the
 * pool and the parser"), and a buffer written from end to end faults once
 * a 4 KiB page.  On a 2 MiB boundary and advised MADV_HUGEPAGE, it faults
 * once a 2 MiB page instead; a huge page is backed whole at its first
 * touch, so the callers advise bytes that will all, or mostly, be written
 * (their rules: arena.c's arena_expect, pipeline/threads.c,
 * pipeline/parse_stage.c's output buffers). */
#ifndef INGEST_HUGEPAGE_H
#define INGEST_HUGEPAGE_H

#include <stddef.h>

/* The transparent huge page of x86-64 and arm64 (with 4 KiB pages). */
#define HUGE_PAGE_SIZE ((size_t)2 << 20)
/* The least a buffer's expected fill for its callers to ask for huge pages
 * (4 MiB): a batch that fills less is one closed by its count of small
 * files, whose huge pages would be backed whole for a fraction of their
 * bytes (the batches' data, arena.c; the workers' output buffers,
 * pipeline/parse_stage.c). */
#define HUGE_FILL_MIN (2 * HUGE_PAGE_SIZE)

/* n bytes at a HUGE_PAGE_SIZE boundary; the huge pages wholly inside
 * bytes [from, to) of them advised as transparent huge pages (advice: a
 * kernel without them refuses it, and 4 KiB pages do).  Freed with xfree;
 * NULL when memory runs out. */
void *huge_alloc(size_t n, size_t from, size_t to);
/* The huge pages wholly inside bytes [from, to) of p[0..n), p on a
 * HUGE_PAGE_SIZE boundary, advised as huge_alloc does. */
void huge_advise(void *p, size_t n, size_t from, size_t to);

#endif
