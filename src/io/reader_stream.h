/* SPDX-License-Identifier: MIT */
/* Streaming files too large to read whole (reader_stream.c), for the
 * backends. */
#ifndef INGEST_IO_READER_STREAM_H
#define INGEST_IO_READER_STREAM_H

#include "io/reader.h"

struct batch;
struct batch_item;
struct walk_entry;

/* Streams a file too large to read whole: an mbox is split into messages
 * batch by batch; anything else is read whole if it fits --max-size, or
 * becomes a too-large record.  *bp is the batch in hand (it may be pushed
 * and replaced).  0 or -errno (fatal). */
int reader_stream(struct reader *r, const struct reader_io *io, struct batch **bp,
                  struct walk_entry *e, const struct batch_item *stat_item);

#endif
