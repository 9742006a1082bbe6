/* The two reader backends, behind reader.c's dispatch.  Each struct reader
 * starts with struct reader_common, so reader.c can reach the shared part. */
#ifndef INGEST_READER_BACKEND_H
#define INGEST_READER_BACKEND_H

#include "io/reader.h"

#include <stddef.h>
#include <sys/types.h>

struct reader {
	struct reader_common c;
	int (*run)(struct reader *r, const struct reader_io *io);
	void (*free)(struct reader *r);
	/* One read at an offset, the backend's way (streamed archives). */
	ssize_t (*pread)(struct reader *r, int fd, void *buf, size_t n, uint64_t off);
};

/* Streams a file too large to read whole: an mbox is split into messages
 * batch by batch; anything else is read whole if it fits --max-size, or
 * becomes a too-large record.  *bp is the batch in hand (it may be pushed
 * and replaced).  0 or -errno (fatal). */
int reader_stream(struct reader *r, const struct reader_io *io, struct batch **bp,
                  struct walk_entry *e, const struct batch_item *stat_item);
/* Files above this many bytes are streamed. */
uint64_t reader_stream_threshold(const struct reader_options *o);

/* 0, or -errno with the reason written to why. */
int reader_uring_new(const struct reader_options *o, struct reader **out, char *why, size_t whylen);
int reader_sync_new(const struct reader_options *o, struct reader **out);

#endif
