/* The two reader backends, behind reader.c's dispatch.  Each struct reader
 * starts with struct reader_common, so reader.c can reach the shared part. */
#ifndef INGEST_READER_BACKEND_H
#define INGEST_READER_BACKEND_H

#include "io/reader.h"

#include <stddef.h>

struct reader {
	struct reader_common c;
	int (*run)(struct reader *r, const struct reader_io *io);
	void (*free)(struct reader *r);
};

/* 0, or -errno with the reason written to why. */
int reader_uring_new(const struct reader_options *o, struct reader **out, char *why, size_t whylen);
int reader_sync_new(const struct reader_options *o, struct reader **out);

#endif
