/* SPDX-License-Identifier: MIT */
/* The interface the two reader backends implement (uring.c,
 * reader_sync.c): reader.c builds one and calls it through these function
 * pointers; the backends call down into reader_item.h and reader_stream.h,
 * never back into reader.c.  Each struct reader starts with struct
 * reader_common, the part the per-item rules keep. */
#ifndef INGEST_READER_BACKEND_H
#define INGEST_READER_BACKEND_H

#include "io/reader.h"
#include "io/reader_item.h"

#include <stddef.h>
#include <sys/types.h>

struct reader {
	struct reader_common c;
	int (*run)(struct reader *r, const struct reader_io *io);
	void (*free)(struct reader *r);
	/* One read at an offset, the backend's way (streamed archives). */
	ssize_t (*pread)(struct reader *r, int fd, void *buf, size_t n, uint64_t off);
};

/* 0, or -errno with the reason written to why. */
int reader_uring_new(const struct reader_options *o, struct reader **out, char *why, size_t whylen);
int reader_sync_new(const struct reader_options *o, struct reader **out);

#endif
