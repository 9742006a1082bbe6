/* The io_uring reader: the only file that includes liburing.h.
 *
 * Per file: one IORING_OP_STATX (its answer is cached in the batch item and
 * never asked again), then a chain OPENAT (into direct slot i) →HARDLINK→
 * READ of size + 1 bytes from slot i →HARDLINK→ CLOSE slot i.  A read of
 * size + 1 is always short at EOF, and a short read breaks a soft link (the
 * close would be cancelled), hence hard links; with them a failed open still
 * runs the read and the close, which then fail with -EBADF: expected.
 *
 * The pipeline, one io_uring_enter per step:
 *
 *   enter k:  [open/read/close chains of batch k] + [statx of batch k+1]
 *   enter k+1:[open/read/close chains of batch k+1] + [statx of batch k+2]
 *
 * statx always runs on an io-wq worker (it cannot complete inline), so it
 * overlaps the chains of the batch before it; reads of cached pages complete
 * inline.  The window of statted entries is a FIFO; a batch is cut from its
 * head by count (LIMIT_BATCH_FILES, the number of direct slots) and bytes
 * (--batch-bytes), so sizes are known before the batch's arena is sized.
 *
 * Slots are reused only after every CQE of the previous batch has been
 * reaped, so a slot's close has always completed before it is opened again.
 * Facts this relies on (liburing 2.3, kernel 6.x) are in ARCHITECTURE.md:
 * explicit slots (IORING_FILE_INDEX_ALLOC is broken in liburing 2.3), no
 * O_CLOEXEC on a direct open, a chain is never split across two submits.
 *
 * Counting: liburing makes the syscalls, so they are counted here at each
 * call that is known to make exactly one (submit_and_wait with wait_nr >= 1
 * always enters; CQEs are reaped with io_uring_for_each_cqe, which never
 * does). */
#include "io/reader_backend.h"
#include "io/walk.h"
#include "core/stats.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

enum uring_kind { U_STAT = 1, U_OPEN, U_READ, U_CLOSE, U_CHUNK };

struct uring_slot {
	struct walk_entry *e;
	struct statx stx;
	int res;
	bool needs_stat;      /* false: an error or non-regular entry */
	bool done;            /* its statx completed */
};

struct uring_reader {
	struct reader r;
	struct io_uring ring;
	bool ring_up;
	/* the stat window: a FIFO of entries not yet in a batch */
	struct uring_slot *win;
	size_t win_head, win_count;
	size_t stats_in_flight;
	bool walk_done;
	/* the batch whose chains are in flight */
	size_t chains_pending;
	/* a streamed file's chunk read */
	bool chunk_pending;
	int chunk_res;
};

#define WIN_SIZE LIMIT_BATCH_FILES

static inline uint64_t uring_tag(enum uring_kind k, size_t i)
{
	return ((uint64_t)k << 32) | (uint64_t)i;
}

static void uring_free(struct reader *r)
{
	struct uring_reader *u = (struct uring_reader *)r;
	if (u->ring_up) {
		io_uring_queue_exit(&u->ring);
		sys_count(SC_close);
	}
	xfree(u->win);
	xfree(u);
}

static int uring_setup(struct uring_reader *u, char *why, size_t whylen)
{
	struct io_uring_params p;
	/* Newest flags first; each is dropped on -EINVAL (older kernels). */
	static const unsigned flag_sets[] = {
		IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
			IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int r = -EINVAL;
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i];
		int fault = sys_fault(SC_io_uring_setup);
		if (fault) {
			r = fault;
		} else {
			sys_count(SC_io_uring_setup);
			r = io_uring_queue_init_params(LIMIT_RING_ENTRIES, &u->ring, &p);
		}
		if (r != -EINVAL)
			break;
	}
	if (r < 0) {
		snprintf(why, whylen, "io_uring_setup: %s", strerror(-r));
		return r;
	}
	u->ring_up = true;
	struct io_uring_probe *probe = io_uring_get_probe_ring(&u->ring);
	sys_count(SC_io_uring_register);
	if (!probe) {
		snprintf(why, whylen, "io_uring probe refused");
		return -EOPNOTSUPP;
	}
	static const int ops[] = { IORING_OP_STATX, IORING_OP_OPENAT, IORING_OP_READ, IORING_OP_CLOSE };
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!io_uring_opcode_supported(probe, ops[i])) {
			io_uring_free_probe(probe);
			snprintf(why, whylen, "io_uring lacks opcode %d", ops[i]);
			return -EOPNOTSUPP;
		}
	}
	io_uring_free_probe(probe);
	int fault = sys_fault(SC_io_uring_register);
	if (fault) {
		r = fault;
	} else {
		sys_count(SC_io_uring_register);
		r = io_uring_register_files_sparse(&u->ring, LIMIT_BATCH_FILES);
	}
	if (r < 0) {
		snprintf(why, whylen, "io_uring direct descriptors: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* Submits what is queued and waits until `want` CQEs are ready: one enter
 * (the kernel counts every CQE toward want, so a caller waiting for chains
 * may be woken early by statx completions and loop). */
static int uring_enter(struct uring_reader *u, unsigned want)
{
	for (;;) {
		int fault = sys_fault(SC_io_uring_enter);
		int r;
		if (fault) {
			r = fault;
		} else {
			sys_count(SC_io_uring_enter);
			u->r.c.st.enters++;
			r = io_uring_submit_and_wait(&u->ring, want ? want : 1);
		}
		if (r >= 0)
			return 0;
		/* counted so that --stats says the ring pushed back (issue 7) */
		if (r == -EINTR || r == -EAGAIN || r == -EBUSY)
			u->r.c.st.enter_retries++;
		/* EINTR: a signal; EAGAIN/EBUSY: the kernel is short of memory
		 * or the CQ is full — both clear once we wait or reap, so retry
		 * after reaping (the caller reaps). */
		if (r == -EINTR)
			continue;
		if (r == -EAGAIN || r == -EBUSY)
			return 0;
		return r;
	}
}

static struct uring_slot *win_at(struct uring_reader *u, size_t i)
{
	return &u->win[(u->win_head + i) % WIN_SIZE];
}

/* Tops the stat window up from the walk, queueing a statx per entry. */
static int uring_fill_window(struct uring_reader *u, const struct reader_io *io)
{
	struct walk *walk = io->walk;
	/* Ctrl-C: what is already statted is still read and written. */
	if (atomic_load_explicit(io->stop, memory_order_relaxed))
		u->walk_done = true;
	while (!u->walk_done && u->win_count < WIN_SIZE) {
		if (io_uring_sq_space_left(&u->ring) < 1)
			break;
		struct walk_entry *e;
		int w = walk_next(walk, &e);
		if (w < 0)
			return w;
		if (w == 0) {
			u->walk_done = true;
			break;
		}
		size_t idx = (u->win_head + u->win_count) % WIN_SIZE;
		struct uring_slot *s = &u->win[idx];
		u->win_count++;
		s->e = e;
		s->res = 0;
		s->done = true;
		s->needs_stat = e->reason == RECORD_NONE &&
		                (e->d_type == DT_REG || e->d_type == DT_UNKNOWN);
		if (!s->needs_stat)
			continue;
		s->done = false;
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
		io_uring_prep_statx(sqe, walk_entry_dirfd(e), e->name,
		                    (e->follow ? 0 : AT_SYMLINK_NOFOLLOW) | AT_STATX_DONT_SYNC,
		                    STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_INO,
		                    &s->stx);
		io_uring_sqe_set_data64(sqe, uring_tag(U_STAT, idx));
		u->stats_in_flight++;
		stats_count_ring(STATS_OP_statx, 1);
	}
	return 0;
}

static void uring_reap(struct uring_reader *u, struct batch *b)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	io_uring_for_each_cqe(&u->ring, head, cqe) {
		seen++;
		uint64_t tag = io_uring_cqe_get_data64(cqe);
		enum uring_kind kind = (enum uring_kind)(tag >> 32);
		size_t i = (size_t)(tag & 0xffffffffu);
		if (kind == U_CHUNK) {
			u->chunk_res = cqe->res;
			u->chunk_pending = false;
			continue;
		}
		if (kind == U_STAT) {
			u->win[i].res = cqe->res;
			u->win[i].done = true;
			u->stats_in_flight--;
			continue;
		}
		u->chains_pending--;
		if (!b)
			continue;   /* draining after a fatal error: the batch is gone */
		struct batch_item *it = &b->items[i];
		if (kind == U_OPEN) {
			if (cqe->res < 0)
				reader_item_fail(it, cqe->res);
		} else if (kind == U_READ) {
			/* an open failure is reported already; the read's -EBADF
			 * (or -ECANCELED) that follows it is not news */
			it->read_res = cqe->res;
		}
		/* close: nothing to learn; a failed open makes it -EBADF */
	}
	io_uring_cq_advance(&u->ring, seen);
}

static bool uring_slot_streams(struct uring_reader *u, struct uring_slot *s)
{
	return s->needs_stat && s->res >= 0 && S_ISREG(s->stx.stx_mode) &&
	       s->stx.stx_size > reader_stream_threshold(&u->r.c.o);
}

static uint64_t uring_slot_need(struct uring_reader *u, struct uring_slot *s)
{
	if (!s->needs_stat || s->res < 0 || uring_slot_streams(u, s))
		return 0;
	if (!S_ISREG(s->stx.stx_mode) || s->stx.stx_size > u->r.c.o.max_size)
		return 0;
	return s->stx.stx_size + 1;
}

/* A fatal error (out of memory, a broken ring) in the middle of a batch:
 * the items not finished become error records with that errno, rather than
 * records of bytes never read, and their entries go back to the walk, which
 * would otherwise keep their directories (and explicit entries) forever. */
static void uring_batch_abort(const struct reader_io *io, struct batch *b, int err)
{
	for (size_t i = 0; i < b->n; i++) {
		struct batch_item *it = &b->items[i];
		if (!it->entry)
			continue;
		if (it->io.reason == RECORD_NONE)
			reader_item_fail(it, err);
		walk_entry_done(io->walk, it->entry);
		it->entry = NULL;
	}
}

static int uring_run(struct reader *r, const struct reader_io *io)
{
	struct uring_reader *u = (struct uring_reader *)r;
	int ret = uring_fill_window(u, io);
	while (ret == 0 && (u->win_count || !u->walk_done)) {
		if (!u->win_count) {
			ret = uring_fill_window(u, io);
			continue;
		}
		/* The head of the window must be statted to cut a batch; wait for
		 * every stat in flight at once, so that the batch is cut whole
		 * (they run in parallel on io-wq and finish close together). */
		while (!win_at(u, 0)->done) {
			if ((ret = uring_enter(u, (unsigned)u->stats_in_flight)) < 0)
				break;
			uring_reap(u, NULL);
		}
		if (ret < 0)
			break;
		/* Cut a batch from the statted head of the window. */
		size_t n = 0;
		uint64_t bytes = 0;
		while (n < u->win_count && n < LIMIT_BATCH_FILES) {
			struct uring_slot *s = win_at(u, n);
			if (!s->done)
				break;
			uint64_t need = uring_slot_need(u, s);
			if (n && bytes + need > r->c.o.batch_bytes)
				break;
			bytes += need;
			n++;
			/* a streamed file ends its batch, so that its messages,
			 * which follow in batches of their own, stay in input order */
			if (uring_slot_streams(u, s))
				break;
		}
		struct batch *b = reader_batch_get(io);
		if (!b)
			break;
		if (!budget_acquire(io->budget, bytes)) {
			chan_push(io->free_batches, b);
			break;
		}
		b->budget = bytes;
		for (size_t i = 0; i < n; i++) {
			struct uring_slot *s = win_at(u, i);
			struct batch_item *it = &b->items[b->n++];
			r->c.st.files++;
			if ((ret = reader_item_init(b, it, s->e)) < 0)
				break;
			if (!s->needs_stat || it->io.reason != RECORD_NONE)
				continue;
			uint64_t cap = reader_item_stat(&r->c, it, s->res, s->stx.stx_mode, s->stx.stx_size,
			                                s->stx.stx_mtime.tv_sec, s->stx.stx_mtime.tv_nsec,
			                                makedev(s->stx.stx_dev_major, s->stx.stx_dev_minor),
			                                s->stx.stx_ino);
			if (!cap)
				continue;
			/* test seam: the statx is done, the chain not yet prepared
			 * (NULL in production) */
			if (r->c.o.after_stat)
				r->c.o.after_stat(r->c.o.after_stat_arg, s->e->name);
			uint8_t *buf = arena_alloc(&b->data, cap);
			it->data = buf;
			if (!buf) {
				ret = -ENOMEM;
				break;
			}
			/* Three SQEs, reserved together: a chain cannot span submits,
			 * and the ring always has room (4 SQEs per batch slot). */
			struct io_uring_sqe *o = io_uring_get_sqe(&u->ring);
			struct io_uring_sqe *rd = io_uring_get_sqe(&u->ring);
			struct io_uring_sqe *c = io_uring_get_sqe(&u->ring);
			struct walk_entry *e = s->e;
			io_uring_prep_openat_direct(o, walk_entry_dirfd(e), e->name,
			                            O_RDONLY | O_NOCTTY | (e->follow ? 0 : O_NOFOLLOW), 0,
			                            (unsigned)i);
			io_uring_sqe_set_flags(o, IOSQE_IO_HARDLINK);
			io_uring_sqe_set_data64(o, uring_tag(U_OPEN, i));
			io_uring_prep_read(rd, (int)i, buf, (unsigned)cap, 0);
			io_uring_sqe_set_flags(rd, IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK);
			io_uring_sqe_set_data64(rd, uring_tag(U_READ, i));
			io_uring_prep_close_direct(c, (unsigned)i);
			io_uring_sqe_set_data64(c, uring_tag(U_CLOSE, i));
			u->chains_pending += 3;
			it->read_res = -ECANCELED;
			stats_count_ring(STATS_OP_openat, 1);
			stats_count_ring(STATS_OP_read, 1);
			stats_count_ring(STATS_OP_close, 1);
		}
		/* The window's slots now belong to the batch (b->n of them: fewer
		 * than n when an item failed; the rest stay in the window). */
		u->win_head = (u->win_head + b->n) % WIN_SIZE;
		u->win_count -= b->n;
		if (ret < 0) {
			uring_batch_abort(io, b, ret);
			chan_push(io->full_batches, b);
			break;
		}
		/* The stats of the next batch ride in the same enter. */
		if ((ret = uring_fill_window(u, io)) < 0) {
			uring_batch_abort(io, b, ret);
			chan_push(io->full_batches, b);
			break;
		}
		while (u->chains_pending) {
			if ((ret = uring_enter(u, (unsigned)u->chains_pending)) < 0)
				break;
			uring_reap(u, b);
		}
		struct batch_item *streamed = NULL;
		for (size_t i = 0; i < b->n && ret == 0; i++) {
			struct batch_item *it = &b->items[i];
			if (it->stream) {
				streamed = it;   /* the last item: handled below */
				continue;
			}
			if (it->cap && it->io.reason == RECORD_NONE)
				ret = reader_item_read_done(&r->c, b, it, it->read_res, -1);
			if (ret == 0)
				ret = reader_item_retry_renamed(&r->c, io->budget, b, it);
			walk_entry_done(io->walk, it->entry);
			it->entry = NULL;
		}
		if (ret < 0)
			uring_batch_abort(io, b, ret);
		struct batch_item st;
		if (streamed)
			st = *streamed;
		r->c.st.batches++;
		chan_push(io->full_batches, b);
		if (streamed && ret == 0) {
			struct batch *sb = reader_batch_get(io);
			if (sb) {
				ret = reader_stream(r, io, &sb, st.entry, &st);
				if (sb->n) {
					r->c.st.batches++;
					chan_push(io->full_batches, sb);
				} else {
					chan_push(io->free_batches, sb);
				}
			}
			walk_entry_done(io->walk, st.entry);
		}
	}
	/* A fatal error leaves stats in flight: let them land before the ring
	 * and the entries they point into go away.  Chains queued but never
	 * submitted (the enter that failed) are submitted by this enter: wait
	 * for them too, since they read into a batch's arena. */
	while ((u->stats_in_flight || u->chains_pending) &&
	       uring_enter(u, (unsigned)(u->stats_in_flight + u->chains_pending)) == 0)
		uring_reap(u, NULL);
	while (u->win_count) {
		walk_entry_done(io->walk, win_at(u, 0)->e);
		u->win_head = (u->win_head + 1) % WIN_SIZE;
		u->win_count--;
	}
	return ret;
}

/* One read of a streamed file on the ring; only the reader thread calls
 * it, between batches, so nothing else is in flight but stats. */
static ssize_t uring_pread(struct reader *r, int fd, void *buf, size_t n, uint64_t off)
{
	struct uring_reader *u = (struct uring_reader *)r;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (!sqe)
		return sys_pread(fd, buf, n, off);
	io_uring_prep_read(sqe, fd, buf, (unsigned)n, off);
	io_uring_sqe_set_data64(sqe, uring_tag(U_CHUNK, 0));
	stats_count_ring(STATS_OP_read, 1);
	u->chunk_pending = true;
	while (u->chunk_pending) {
		int ret = uring_enter(u, 1);
		if (ret < 0) {
			u->chunk_pending = false;
			return ret;
		}
		uring_reap(u, NULL);
	}
	return u->chunk_res;
}

int reader_uring_new(const struct reader_options *o, struct reader **out, char *why, size_t whylen)
{
	struct uring_reader *u = xcalloc(1, sizeof(*u));
	if (!u) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	u->r.c.o = *o;
	u->r.c.st.backend = READER_URING;
	u->r.run = uring_run;
	u->r.free = uring_free;
	u->r.pread = uring_pread;
	u->win = xcalloc(WIN_SIZE, sizeof(*u->win));
	int r = u->win ? uring_setup(u, why, whylen) : -ENOMEM;
	if (r < 0) {
		uring_free(&u->r);
		return r;
	}
	*out = &u->r;
	return 0;
}
