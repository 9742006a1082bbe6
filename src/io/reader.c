/* SPDX-License-Identifier: MIT */
/* The reader's facade: chooses the backend (io_uring, or the plain
 * syscalls it falls back to), runs it over the walk, and after a complete
 * walk turns what the state knew and the walk did not meet into deleted
 * records.  The one-way chain of the reader:
 *
 *   reader.c ──▶ uring.c | reader_sync.c   (they implement reader_backend.h)
 *                   │
 *                   ├──▶ reader_stream.c   (files too large to read whole)
 *                   └──▶ reader_item.c     (what each input becomes)
 *
 * Nothing below calls back up but through the backend's own function
 * pointers (run, free, pread). */
#include "io/reader.h"
#include "io/reader_backend.h"
#include "io/reader_item.h"
#include "io/state.h"
#include "core/limits.h"

#include <errno.h>
#include <string.h>

void reader_options_fit(struct reader_options *o)
{
	uint64_t half = o->max_inflight / 2 > 64 * KiB ? o->max_inflight / 2 : 64 * KiB;
	if (o->max_inflight && o->batch_bytes > half)
		o->batch_bytes = half;
}

int reader_new(const struct reader_options *o, struct reader **out, struct reader_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (o->backend != READER_SYNC) {
		int r = reader_uring_new(o, out, st->fallback, sizeof(st->fallback));
		if (r == 0)
			return 0;
		if (o->backend == READER_URING)
			return r;
	}
	int r = reader_sync_new(o, out);
	if (r == 0)
		memcpy((*out)->c.st.fallback, st->fallback, sizeof(st->fallback));
	return r;
}

void reader_free(struct reader *r)
{
	if (r)
		r->free(r);
}

struct reader_deleted_ctx {
	struct reader *r;
	const struct reader_io *io;
	struct batch *b;
};

static int reader_add_deleted(void *arg, const struct record_io *gone)
{
	struct reader_deleted_ctx *c = arg;
	if (c->b && c->b->n == LIMIT_BATCH_FILES) {
		c->r->c.st.batches++;
		chan_push(c->io->full_batches, c->b);
		c->b = NULL;
	}
	if (!c->b && !(c->b = reader_batch_get(c->io)))
		return -ECANCELED;
	/* the state's strings live until the run ends, longer than the batch */
	struct batch_item *it = &c->b->items[c->b->n++];
	memset(it, 0, sizeof(*it));
	it->io = *gone;
	c->r->c.st.deleted++;
	return 0;
}

int reader_run(struct reader *r, const struct reader_io *io)
{
	r->c.walk = io->walk;
	/* the state asks where this run's PATHs lie as files are met
	 * (state_check), and which directories it could not list at the end */
	if (r->c.o.state)
		state_set_walk(r->c.o.state, io->walk);
	int ret = r->run(r, io);
	/* What the last run saw and this one did not is gone — known only when
	 * the walk ran to its end. */
	if (ret == 0 && r->c.o.state && !atomic_load(io->stop)) {
		struct reader_deleted_ctx c = { r, io, NULL };
		/* entries under a directory that could not be listed are kept */
		ret = state_deleted(r->c.o.state, reader_add_deleted, &c);
		if (c.b) {
			r->c.st.batches++;
			chan_push(io->full_batches, c.b);
		}
		if (ret == -ECANCELED)
			ret = 0;
	}
	chan_close(io->full_batches);
	return ret;
}

void reader_stats_get(const struct reader *r, struct reader_stats *out)
{
	*out = r->c.st;
}
