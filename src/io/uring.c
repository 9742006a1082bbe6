/* SPDX-License-Identifier: MIT */
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
 * Facts this relies on (liburing 2.3, kernel 6.x) are in docs/ARCHITECTURE.md:
 * explicit slots (IORING_FILE_INDEX_ALLOC is broken in liburing 2.3), no
 * O_CLOEXEC on a direct open, a chain is never split across two submits.
 *
 * Counting: liburing makes the syscalls, so they are counted here at each
 * call that is known to make exactly one (submit_and_wait with wait_nr >= 1
 * always enters, and so does a submit with SQEs queued; CQEs are reaped with
 * io_uring_for_each_cqe, which never does).
 *
 * Completions with errors.  Every SQE yields exactly one CQE,
 * whatever its result, and the reader counts CQEs, not successes, so an
 * error never leaves it waiting:
 *   statx, openat, read  -ERRNO: the file becomes an error record naming
 *                        ERRNO (an open's error is the one reported; the
 *                        read's -EBADF after it is not news); the run goes on.
 *   -EAGAIN or -EINTR    transient: the operation is submitted once more (a
 *                        statx alone; an open or read as a whole new chain,
 *                        into the same slot, once every CQE of the batch is
 *                        in); a second transient result is an error record.
 *                        Counted in cqe_retries.
 *   -ECANCELED           not retried (a cancellation is deliberate): an error
 *                        record.  A cancelled close leaves its slot installed;
 *                        that costs nothing, because an open into an occupied
 *                        explicit slot replaces (and releases) the file there,
 *                        and the ring's teardown releases the whole table.
 *   close                its result is ignored: the data is in hand, and a
 *                        read-only close cannot lose any.
 *   read short           fewer than `size` bytes: the file shrank between its
 *                        statx and its read (RECORD_SHRANK, reader_item.c).
 * CQ overflow: in flight there are at most WIN_SIZE stats and 3 x
 * LIMIT_BATCH_FILES chain links, the SQ size, and the CQ is twice that, so
 * the CQ cannot overflow with the production ring.  Were it to (a smaller
 * ring, see INGEST_FAULT_CQ_ENTRIES below), the kernel (IORING_FEAT_NODROP,
 * 5.5+) keeps the extra CQEs in a backlog and flags IORING_SQ_CQ_OVERFLOW;
 * the next enter moves them into the CQ as it is reaped, so nothing is lost
 * as long as the reader waits for no more CQEs than the CQ holds (want is
 * capped at its size) and treats -EBUSY from an enter as "reap, then enter
 * again".  CQEs the kernel dropped for want of memory (*cq.koverflow, or
 * -EBADR from an enter) cannot be accounted for: that is a fatal ring error.
 *
 * Test hooks, compiled only with -Dfault_injection=true (core/fault.h):
 *   INGEST_FAULT=N:ERRNO:sys:cqe_OP   OP = statx, openat, read or close: the
 *        Nth completion of OP carries -ERRNO in place of its result (the
 *        operation itself ran; only what the reader is told changes; "read"
 *        counts the chunk reads of streamed files too);
 *   INGEST_FAULT=N:ERRNO:sys:cqe_read_short   the Nth chain read that
 *        returned data completes with half of it (ERRNO is required by the
 *        syntax and ignored): a file that shrank;
 *   INGEST_FAULT_CQ_ENTRIES=N   a ring of N SQ and N CQ entries (at least 4;
 *        IORING_SETUP_CQSIZE, rounded up to a power of two by the kernel),
 *        small enough for the CQ to overflow for real;
 *   INGEST_FAULT_COUNT=1        at the end, one line on stderr:
 *        "ingest-fault: ring cq_entries=C cq_overflow=O cqes_dropped=D
 *        cqe_retries=R", O counting the enters after which the CQ had a
 *        backlog.
 * The completion hooks consult fault_check() only when INGEST_FAULT names a
 * cqe_ target, so other fault walks keep their numbering. */
#include "config.h"
#include "io/reader_backend.h"
#include "io/reader_stream.h"
#include "io/walk.h"
#include "core/arena.h"
#include "core/fault.h"
#include "core/stats.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

enum uring_kind { U_STAT = 1, U_OPEN, U_READ, U_CLOSE, U_CHUNK };

struct uring_slot {
	struct walk_entry *e;
	struct statx stx;
	int res;
	bool needs_stat;      /* false: an error or non-regular entry */
	bool done;            /* its statx completed */
	bool retried;         /* its statx was submitted again (-EAGAIN, -EINTR) */
};

/* A batch item's chain after a transient completion (-EAGAIN, -EINTR). */
enum uring_again { AGAIN_NONE, AGAIN_PENDING, AGAIN_DONE };

struct uring_reader {
	struct reader r;
	struct io_uring ring;
	bool ring_up;
	unsigned cq_entries;  /* a wait asks for no more CQEs than this */
	/* the stat window: a FIFO of entries not yet in a batch */
	struct uring_slot *win;
	size_t win_head, win_count;
	size_t stats_in_flight;
	bool walk_done;
	/* the batch whose chains are in flight */
	size_t chains_pending;
	uint8_t again[LIMIT_BATCH_FILES];   /* enum uring_again, per batch item */
	uint8_t *buf[LIMIT_BATCH_FILES];    /* per batch item: its read buffer */
	/* a streamed file's chunk read */
	bool chunk_pending;
	int chunk_res;
	/* what the ring did besides reading (see the header) */
	bool cqe_faults;         /* test: INGEST_FAULT names a cqe_ target */
};

#define WIN_SIZE LIMIT_BATCH_FILES

static inline uint64_t uring_tag(enum uring_kind k, size_t i)
{
	return ((uint64_t)k << 32) | (uint64_t)i;
}

/* The test hooks of the header, and what the ring reports about itself. */
#if INGEST_FAULT_INJECTION
static const char *const uring_cqe_names[] = {
	[U_STAT] = "cqe_statx", [U_OPEN] = "cqe_openat", [U_READ] = "cqe_read",
	[U_CLOSE] = "cqe_close", [U_CHUNK] = "cqe_read",
};

static int uring_cqe_fault(struct uring_reader *u, enum uring_kind kind, int res)
{
	if (!u->cqe_faults)
		return res;
	/* no site: each name is its own entry in INGEST_FAULT_COUNT's table */
	int f = fault_check_at(FAULT_SYS, uring_cqe_names[kind], NULL);
	if (f)
		return f;
	if (kind == U_READ && res > 0 && fault_check_at(FAULT_SYS, "cqe_read_short", NULL))
		return res / 2;
	return res;
}

static unsigned uring_test_cq_entries(void)
{
	const char *v = getenv("INGEST_FAULT_CQ_ENTRIES");
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;
	if (!n)
		return 0;
	return n < 4 ? 4 : n > LIMIT_RING_ENTRIES ? LIMIT_RING_ENTRIES : (unsigned)n;
}

static void uring_test_report(const struct uring_reader *u)
{
	const char *count = getenv("INGEST_FAULT_COUNT");
	if (!count || *count != '1')
		return;
	/* test machinery, like core/fault.c's own lines (one write(2), not
	 * counted): library code prints nothing otherwise */
	char line[160];
	int n = snprintf(line, sizeof(line), "ingest-fault: ring cq_entries=%u cq_overflow=%llu "
	                 "cqes_dropped=%u cqe_retries=%llu\n", u->cq_entries,
	                 (unsigned long long)u->r.c.st.cq_overflows, *u->ring.cq.koverflow,
	                 (unsigned long long)u->r.c.st.cqe_retries);
	if (n > 0 && (size_t)n < sizeof(line) && write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
#else
static inline int uring_cqe_fault(struct uring_reader *u, enum uring_kind kind, int res)
{
	(void)u;
	(void)kind;
	return res;
}

static inline unsigned uring_test_cq_entries(void)
{
	return 0;
}

static inline void uring_test_report(const struct uring_reader *u)
{
	(void)u;
}
#endif

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
	/* test: a CQ small enough to overflow (the kernel wants SQ <= CQ) */
	unsigned test_cq = uring_test_cq_entries();
	int r = -EINVAL;
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i];
		if (test_cq) {
			p.flags |= IORING_SETUP_CQSIZE;
			p.cq_entries = test_cq;
		}
		int fault = sys_fault(SC_io_uring_setup);
		if (fault) {
			r = fault;
		} else {
			sys_count(SC_io_uring_setup);
			r = io_uring_queue_init_params(test_cq ? test_cq : LIMIT_RING_ENTRIES, &u->ring, &p);
		}
		if (r != -EINVAL)
			break;
	}
	if (r < 0) {
		snprintf(why, whylen, "io_uring_setup: %s", strerror(-r));
		return r;
	}
	u->ring_up = true;
	u->cq_entries = u->ring.cq.ring_entries;
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
 * may be woken early by statx completions and loop).  want 0: submit only,
 * and only with SQEs queued (liburing enters only then).  0 or -errno;
 * after 0 the caller reaps. */
static int uring_enter(struct uring_reader *u, unsigned want)
{
	/* CQEs the kernel could not even keep in its backlog are lost: the
	 * counts the reader waits on would never be reached */
	if (*u->ring.cq.koverflow)
		return -EBADR;
	/* a wait for more CQEs than the CQ holds may never end (the rest sit
	 * in the kernel's backlog until we reap) */
	if (want > u->cq_entries)
		want = u->cq_entries;
	for (;;) {
		int fault = sys_fault(SC_io_uring_enter);
		int r;
		if (fault) {
			r = fault;
		} else {
			sys_count(SC_io_uring_enter);
			u->r.c.st.enters++;
			r = want ? io_uring_submit_and_wait(&u->ring, want) : io_uring_submit(&u->ring);
			if (io_uring_cq_has_overflow(&u->ring))
				u->r.c.st.cq_overflows++;
		}
		if (r >= 0)
			return 0;
		/* counted so that --stats says the ring pushed back */
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

static bool uring_transient(int res)
{
	return res == -EAGAIN || res == -EINTR;
}

/* Queues the statx of window slot idx into its own buffer.  False when the
 * SQ is full. */
static bool uring_queue_stat(struct uring_reader *u, size_t idx)
{
	struct uring_slot *s = &u->win[idx];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (!sqe)
		return false;
	struct walk_entry *e = s->e;
	io_uring_prep_statx(sqe, walk_entry_dirfd(e), e->name,
	                    (e->follow ? 0 : AT_SYMLINK_NOFOLLOW) | AT_STATX_DONT_SYNC,
	                    STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_INO,
	                    &s->stx);
	io_uring_sqe_set_data64(sqe, uring_tag(U_STAT, idx));
	stats_count_ring(STATS_OP_statx, 1);
	return true;
}

/* A statx that completed with -EAGAIN or -EINTR, submitted once more (its
 * window slot, name and buffer are still there).  False when the SQ is full
 * (only a test ring can be): the error then stands. */
static bool uring_stat_again(struct uring_reader *u, size_t idx)
{
	if (!uring_queue_stat(u, idx))
		return false;
	u->win[idx].retried = true;
	u->r.c.st.cqe_retries++;
	return true;
}

/* Takes every CQE there is.  b is the batch whose chains are in flight
 * (NULL when none are, or when it is gone after a fatal error). */
static void uring_reap(struct uring_reader *u, struct batch *b)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	io_uring_for_each_cqe(&u->ring, head, cqe) {
		seen++;
		uint64_t tag = io_uring_cqe_get_data64(cqe);
		enum uring_kind kind = (enum uring_kind)(tag >> 32);
		size_t i = (size_t)(tag & 0xffffffffu);
		int res = uring_cqe_fault(u, kind, cqe->res);
		if (kind == U_CHUNK) {
			u->chunk_res = res;
			u->chunk_pending = false;
			continue;
		}
		if (kind == U_STAT) {
			if (uring_transient(res) && !u->win[i].retried && uring_stat_again(u, i))
				continue;   /* still in flight */
			u->win[i].res = res;
			u->win[i].done = true;
			u->stats_in_flight--;
			continue;
		}
		u->chains_pending--;
		if (!b)
			continue;   /* draining after a fatal error: the batch is gone */
		struct batch_item *it = &b->items[i];
		if (kind == U_CLOSE)
			continue;   /* nothing to learn: see the header */
		if (uring_transient(res) && u->again[i] == AGAIN_NONE) {
			/* the chain runs again once the batch's CQEs are in */
			u->again[i] = AGAIN_PENDING;
			continue;
		}
		if (kind == U_OPEN) {
			if (res < 0)
				reader_item_fail(it, res);
		} else {
			/* an open failure is reported already; the read's -EBADF
			 * that follows it is not news */
			it->read_res = res;
		}
	}
	io_uring_cq_advance(&u->ring, seen);
}

/* Makes room in the SQ for n SQEs.  The production ring always has room
 * (4 SQEs per batch slot); a test ring (INGEST_FAULT_CQ_ENTRIES) fills up:
 * what is queued is submitted without waiting and without reaping, so that
 * completions pile up past the CQ as they would under a burst; they are
 * reaped when the kernel refuses the submission (-EBUSY: its backlog cannot
 * be flushed into a full CQ) and after the batch.  b: as for uring_reap. */
static int uring_sq_room(struct uring_reader *u, unsigned n, struct batch *b)
{
	while (io_uring_sq_space_left(&u->ring) < n) {
		int r = uring_enter(u, 0);
		if (r < 0)
			return r;
		if (io_uring_sq_space_left(&u->ring) < n)
			uring_reap(u, b);   /* refused: make the kernel room */
	}
	return 0;
}

/* Tops the stat window up from the walk, queueing a statx per entry.  b:
 * the batch whose chains are queued (NULL: none), as for uring_reap. */
static int uring_fill_window(struct uring_reader *u, const struct reader_io *io, struct batch *b)
{
	struct walk *walk = io->walk;
	/* Ctrl-C: what is already statted is still read and written. */
	if (atomic_load_explicit(io->stop, memory_order_relaxed))
		u->walk_done = true;
	/* a directory named in --files-from, met after the walk ran dry */
	else if (u->walk_done && walk_take_reopened(walk))
		u->walk_done = false;
	while (!u->walk_done && u->win_count < WIN_SIZE) {
		int r = uring_sq_room(u, 1, b);
		if (r < 0)
			return r;
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
		s->retried = false;
		s->needs_stat = e->reason == RECORD_NONE &&
		                (e->d_type == DT_REG || e->d_type == DT_UNKNOWN);
		if (!s->needs_stat)
			continue;
		s->done = false;
		(void)uring_queue_stat(u, idx);   /* room reserved above: cannot fail */
		u->stats_in_flight++;
	}
	return 0;
}

/* Queues the chain OPENAT → READ → CLOSE of batch item i, into direct slot
 * i and buffer u->buf[i] of it->cap bytes.  Its three SQEs are reserved
 * together: a chain cannot span submits. */
static int uring_chain(struct uring_reader *u, struct batch *b, size_t i)
{
	int r = uring_sq_room(u, 3, b);
	if (r < 0)
		return r;
	struct batch_item *it = &b->items[i];
	struct walk_entry *e = it->entry;
	struct io_uring_sqe *o = io_uring_get_sqe(&u->ring);
	struct io_uring_sqe *rd = io_uring_get_sqe(&u->ring);
	struct io_uring_sqe *c = io_uring_get_sqe(&u->ring);
	io_uring_prep_openat_direct(o, walk_entry_dirfd(e), e->name,
	                            O_RDONLY | O_NOCTTY | (e->follow ? 0 : O_NOFOLLOW), 0,
	                            (unsigned)i);
	io_uring_sqe_set_flags(o, IOSQE_IO_HARDLINK);
	io_uring_sqe_set_data64(o, uring_tag(U_OPEN, i));
	io_uring_prep_read(rd, (int)i, u->buf[i], (unsigned)it->cap, 0);
	io_uring_sqe_set_flags(rd, IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK);
	io_uring_sqe_set_data64(rd, uring_tag(U_READ, i));
	io_uring_prep_close_direct(c, (unsigned)i);
	io_uring_sqe_set_data64(c, uring_tag(U_CLOSE, i));
	u->chains_pending += 3;
	it->read_res = -ECANCELED;
	stats_count_ring(STATS_OP_openat, 1);
	stats_count_ring(STATS_OP_read, 1);
	stats_count_ring(STATS_OP_close, 1);
	return 0;
}

/* Once every CQE of the batch is in (so every slot's close has completed),
 * the chains that met -EAGAIN or -EINTR run once more.  0 or -errno. */
static int uring_chains_again(struct uring_reader *u, struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		if (u->again[i] != AGAIN_PENDING)
			continue;
		u->again[i] = AGAIN_DONE;
		struct batch_item *it = &b->items[i];
		if (it->io.reason != RECORD_NONE || !it->data)
			continue;   /* the open failed for good: reported */
		u->r.c.st.cqe_retries++;
		int r = uring_chain(u, b, i);
		if (r < 0)
			return r;
	}
	return 0;
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

/* A fatal error with chains of the batch in flight, or queued and not yet
 * submitted: they read into its arena, so they must land before the batch
 * goes on (the enter submits what is queued). */
static void uring_drain_chains(struct uring_reader *u)
{
	while (u->chains_pending && uring_enter(u, (unsigned)u->chains_pending) == 0)
		uring_reap(u, NULL);
}

static int uring_run_batches(struct reader *r, const struct reader_io *io)
{
	struct uring_reader *u = (struct uring_reader *)r;
	int ret = uring_fill_window(u, io, NULL);
	while (ret == 0 && (u->win_count || !u->walk_done)) {
		if (!u->win_count) {
			ret = uring_fill_window(u, io, NULL);
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
		/* the first use of the batch's memory decides its huge pages
		 * for the run (arena_expect): the reads of a full batch land
		 * on them from the first byte */
		arena_expect(&b->data, (size_t)bytes);
		memset(u->again, AGAIN_NONE, sizeof(u->again));
		for (size_t i = 0; i < n; i++) {
			struct uring_slot *s = win_at(u, i);
			struct batch_item *it = &b->items[b->n++];
			r->c.st.files++;
			if ((ret = reader_item_take(&r->c, b, it, s->e)) < 0)
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
			it->data = u->buf[i] = arena_alloc(&b->data, cap);
			if (!it->data) {
				ret = -ENOMEM;
				break;
			}
			if ((ret = uring_chain(u, b, i)) < 0)
				break;
		}
		/* The window's slots now belong to the batch (b->n of them: fewer
		 * than n when an item failed; the rest stay in the window). */
		u->win_head = (u->win_head + b->n) % WIN_SIZE;
		u->win_count -= b->n;
		/* The stats of the next batch ride in the same enter. */
		if (ret == 0)
			ret = uring_fill_window(u, io, b);
		if (ret < 0) {
			uring_drain_chains(u);
			uring_batch_abort(io, b, ret);
			chan_push(io->full_batches, b);
			break;
		}
		/* Wait for the next batch's stats too: they were submitted with
		 * these chains and run beside them on io-wq, the next batch
		 * cannot be cut without them, and a wait for the chains alone
		 * is woken early by every stat that lands first (the kernel
		 * counts every CQE toward the wait): one enter, not two. */
		while (u->chains_pending) {
			if ((ret = uring_enter(u, (unsigned)(u->chains_pending + u->stats_in_flight))) < 0)
				break;
			uring_reap(u, b);
			if (!u->chains_pending && (ret = uring_chains_again(u, b)) < 0)
				break;
		}
		struct batch_item *streamed = NULL;
		size_t complete = 0;   /* items before this one are read */
		for (; ret == 0 && complete < b->n; complete++) {
			struct batch_item *it = &b->items[complete];
			if (it->stream) {
				streamed = it;   /* the last item: handled below */
				continue;
			}
			if (it->cap && it->io.reason == RECORD_NONE &&
			    (ret = reader_item_read_done(&r->c, io->budget, b, it, it->read_res, -1)) < 0)
				break;
		}
		/* after every read of the batch: one listing finds all its renames */
		if (ret == 0)
			ret = reader_batch_retry_renamed(&r->c, io->budget, b);
		/* the complete items are done with; an abort fails the others */
		reader_items_done(io->walk, b->items, complete, streamed);
		if (ret < 0) {
			uring_drain_chains(u);
			uring_batch_abort(io, b, ret);
		}
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

/* The ring's counts are final when the run returns: the fault tests' line
 * is printed then, not when the ring is freed (the command leaves that to
 * the process's exit). */
static int uring_run(struct reader *r, const struct reader_io *io)
{
	int ret = uring_run_batches(r, io);
	uring_test_report((const struct uring_reader *)r);
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
	for (bool again = false;; again = true) {
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
		/* transient: once more, as for the chains */
		if (again || !uring_transient(u->chunk_res) || !(sqe = io_uring_get_sqe(&u->ring)))
			return u->chunk_res;
		u->r.c.st.cqe_retries++;
	}
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
#if INGEST_FAULT_INJECTION
	const char *spec = getenv("INGEST_FAULT");
	u->cqe_faults = spec && strstr(spec, ":cqe_");
#endif
	int r = u->win ? uring_setup(u, why, whylen) : -ENOMEM;
	if (r < 0) {
		uring_free(&u->r);
		return r;
	}
	*out = &u->r;
	return 0;
}
