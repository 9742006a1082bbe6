/* The synchronous reader: openat, fstat, read(size + 1), close — four
 * syscalls a file, the same contract as the ring with one call per step.
 * Used where io_uring is unavailable (old kernels, seccomp profiles that
 * refuse it, kernel.io_uring_disabled) or when asked for.
 *
 * The byte budget is taken file by file; when it is exhausted while a batch
 * is half full, that batch is sent on first, since waiting while holding it
 * would wait on ourselves. */
#include "io/reader_backend.h"
#include "io/walk.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

static void sync_free(struct reader *r)
{
	xfree(r);
}

/* The outcome of opening and sizing one file, before it has a batch slot. */
struct sync_open {
	int fd;                   /* -1 when there is nothing to read */
	struct batch_item probe;  /* the stat fields and any error */
};

static void sync_probe(struct reader *r, struct walk_entry *e, struct sync_open *so)
{
	memset(so, 0, sizeof(*so));
	so->fd = -1;
	/* O_NONBLOCK: a file swapped for a FIFO after the walk must not block
	 * the open; reads of regular files ignore the flag. */
	int fd = sys_openat(walk_entry_dirfd(e), e->name,
	                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (e->follow ? 0 : O_NOFOLLOW), 0);
	if (fd < 0) {
		reader_item_fail(&so->probe, fd);
		return;
	}
	struct stat st;
	int res = sys_fstat(fd, &st);
	uint64_t cap = reader_item_stat(&r->c, &so->probe, res, st.st_mode, (uint64_t)st.st_size,
	                                st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec,
	                                st.st_dev, st.st_ino);
	if (!cap) {
		sys_close(fd);
		return;
	}
	/* test seam: between the fstat and the read (NULL in production) */
	if (r->c.o.after_stat)
		r->c.o.after_stat(r->c.o.after_stat_arg, e->name);
	so->fd = fd;
}

static int sync_run(struct reader *r, const struct reader_io *io)
{
	struct batch *b = NULL;
	uint64_t bytes = 0;
	int ret = 0;
	for (;;) {
		struct walk_entry *e;
		int w = atomic_load_explicit(io->stop, memory_order_relaxed) ? 0 : walk_next(io->walk, &e);
		if (w <= 0) {
			ret = w;
			break;
		}
		struct sync_open so;
		bool readable = e->reason == RECORD_NONE &&
		                (e->d_type == DT_REG || e->d_type == DT_UNKNOWN);
		if (readable)
			sync_probe(r, e, &so);
		uint64_t cap = readable ? so.probe.cap : 0;
		/* Take the budget before the batch slot: when it is exhausted, the
		 * half-full batch in hand is sent first, since waiting while holding
		 * it would wait on ourselves. */
		if (cap && !budget_try_acquire(io->budget, cap)) {
			if (b && b->n) {
				r->c.st.batches++;
				chan_push(io->full_batches, b);
				b = NULL;
			}
			if (!budget_acquire(io->budget, cap)) {
				sys_close(so.fd);
				walk_entry_done(io->walk, e);
				break;
			}
		}
		if (!b) {
			b = reader_batch_get(io);
			bytes = 0;
			if (!b) {
				if (cap) {
					sys_close(so.fd);
					budget_release(io->budget, cap);
				}
				walk_entry_done(io->walk, e);
				break;
			}
		}
		if (readable && so.probe.stream) {
			/* too large to hold: streamed in chunks, an mbox split */
			r->c.st.files++;
			ret = reader_stream(r, io, &b, e, &so.probe);
			walk_entry_done(io->walk, e);
			if (ret < 0)
				break;
			if (b->n >= LIMIT_BATCH_FILES / 2) {
				r->c.st.batches++;
				chan_push(io->full_batches, b);
				b = NULL;
			}
			continue;
		}
		struct batch_item *it = &b->items[b->n++];
		r->c.st.files++;
		b->budget += cap;
		ret = reader_item_init(b, it, e);
		if (ret == 0 && readable) {
			struct record_io *p = &so.probe.io;
			it->io.have_stat = p->have_stat;
			it->io.size = p->size;
			it->io.mtime_sec = p->mtime_sec;
			it->io.mtime_nsec = p->mtime_nsec;
			it->io.dev = p->dev;
			it->io.ino = p->ino;
			it->io.reason = p->reason;
			it->io.err = p->err;
			it->io.message = p->message;
			it->cap = cap;
		}
		if (ret == 0 && cap) {
			uint8_t *buf = arena_alloc(&b->data, cap);
			if (!buf) {
				ret = -ENOMEM;
			} else {
				it->data = buf;
				ssize_t got;
				do
					got = sys_read(so.fd, buf, cap);
				while (got == -EINTR);
				ret = reader_item_read_done(&r->c, b, it, got, so.fd);
			}
		}
		if (cap)
			sys_close(so.fd);
		if (ret == 0)
			ret = reader_item_retry_renamed(&r->c, io->budget, b, it);
		walk_entry_done(io->walk, e);
		if (ret < 0)
			break;
		bytes += cap;
		if (b->n == LIMIT_BATCH_FILES || bytes >= r->c.o.batch_bytes) {
			r->c.st.batches++;
			chan_push(io->full_batches, b);
			b = NULL;
		}
	}
	/* What was read is still written, even when the run stops early. */
	if (b) {
		r->c.st.batches++;
		chan_push(io->full_batches, b);
	}
	return ret;
}

static ssize_t sync_pread(struct reader *r, int fd, void *buf, size_t n, uint64_t off)
{
	(void)r;
	return sys_pread(fd, buf, n, off);
}

int reader_sync_new(const struct reader_options *o, struct reader **out)
{
	struct reader *r = xcalloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->c.o = *o;
	r->c.st.backend = READER_SYNC;
	r->run = sync_run;
	r->free = sync_free;
	r->pread = sync_pread;
	*out = r;
	return 0;
}
