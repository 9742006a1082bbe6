/* SPDX-License-Identifier: MIT */
/* The synchronous reader: openat, fstat, read(size + 1), close — four
 * syscalls a file, the same contract as the ring with one call per step.
 * Used where io_uring is unavailable (old kernels, seccomp profiles that
 * refuse it, kernel.io_uring_disabled) or when asked for.
 *
 * A name the walk could not type (d_type unknown: PATH and --files-from
 * names) is statted before it is opened, so that FIFOs, sockets and devices
 * never are: statx, openat, read, close, four calls still.
 *
 * The byte budget is taken file by file; when it is exhausted while a batch
 * is half full, that batch is sent on first, since waiting while holding it
 * would wait on ourselves. */
#include "io/reader_backend.h"
#include "io/reader_stream.h"
#include "io/state.h"
#include "io/walk.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static void sync_free(struct reader *r)
{
	xfree(r);
}

/* The outcome of opening and sizing one file, before it has a batch slot. */
struct sync_open {
	int fd;                   /* -1 when there is nothing to read */
	struct batch_item probe;  /* the stat fields and any error */
};

static int sync_statx(int dirfd, const struct walk_entry *e, struct statx *stx)
{
	memset(stx, 0, sizeof(*stx));
	return sys_statx(dirfd, e->name, (e->follow ? 0 : AT_SYMLINK_NOFOLLOW) | AT_STATX_DONT_SYNC,
	                 STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_INO, stx);
}

/* A statx answer (res) judged as the ring judges its own
 * (reader_item_stat): 0 when that settles the entry (no read), otherwise
 * the bytes to read. */
static uint64_t sync_judge(struct reader *r, struct sync_open *so, int res, const struct statx *stx)
{
	return reader_item_stat(&r->c, &so->probe, res, stx->stx_mode, stx->stx_size,
	                        stx->stx_mtime.tv_sec, stx->stx_mtime.tv_nsec,
	                        makedev(stx->stx_dev_major, stx->stx_dev_minor), stx->stx_ino);
}

/* With --state the probe carries the entry's root and path (in `names`,
 * reset file by file): --state judges a file by its path at stat time,
 * before the file has a batch slot; nothing else reads them (the item's
 * own strings come from reader_item_init).  0, or -ENOMEM. */
static int sync_probe(struct reader *r, struct walk_entry *e, struct arena *names,
                      struct sync_open *so)
{
	memset(so, 0, sizeof(*so));
	so->fd = -1;
	so->probe.entry = e;   /* a listed directory is handed to the walk */
	if (r->c.o.state) {
		arena_reset(names);
		if (walk_entry_describe(e, names, &so->probe.io) < 0)
			return -ENOMEM;
	}
	/* O_NONBLOCK: a file swapped for a FIFO after its type was known must
	 * not block the open; reads of regular files ignore the flag. */
	int dirfd = walk_entry_dirfd(e);
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (e->follow ? 0 : O_NOFOLLOW);
	uint64_t cap;
	int fd;
	if (e->d_type == DT_UNKNOWN) {
		/* A name the walk could not type (a PATH or --files-from name):
		 * FIFOs, sockets and devices are never opened, so the size query
		 * comes first, and its answer serves the read.  Still four calls:
		 * statx, openat, read, close. */
		struct statx stx;
		cap = sync_judge(r, so, sync_statx(dirfd, e, &stx), &stx);
		if (!cap)
			return 0;
		fd = sys_openat(dirfd, e->name, flags, 0);
		if (fd < 0) {
			reader_item_fail(&so->probe, fd);
			return 0;
		}
	} else {
		fd = sys_openat(dirfd, e->name, flags, 0);
		struct statx stx;
		if (fd < 0 && fd != -ENOENT && sync_statx(dirfd, e, &stx) == 0) {
			/* a file there that cannot be opened (EACCES): judged by
			 * its size and mtime as the ring, which asks for them
			 * first, judges it, so that both give one record for it
			 * (with them), or none when --state finds it unchanged;
			 * a call more, only when the open fails */
			if (sync_judge(r, so, 0, &stx))
				reader_item_fail(&so->probe, fd);
			return 0;
		}
		if (fd < 0) {
			reader_item_fail(&so->probe, fd);
			if (reader_item_not_found(&r->c, &so->probe, fd) < 0)
				return -ENOMEM;
			return 0;
		}
		struct stat st;
		int res = sys_fstat(fd, &st);
		cap = reader_item_stat(&r->c, &so->probe, res, st.st_mode, (uint64_t)st.st_size,
		                       st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec,
		                       st.st_dev, st.st_ino);
		if (!cap) {
			sys_close(fd);
			return 0;
		}
	}
	/* test seam: between the size query and the read (NULL in production) */
	if (r->c.o.after_stat)
		r->c.o.after_stat(r->c.o.after_stat_arg, e->name);
	so->fd = fd;
	return 0;
}

/* What the probe decided moves to the item that now has a batch slot (the
 * item's own strings come from reader_item_init). */
static void sync_take_probe(struct batch_item *it, const struct sync_open *so, uint64_t cap)
{
	const struct record_io *p = &so->probe.io;
	it->io.have_stat = p->have_stat;
	it->io.size = p->size;
	it->io.mtime_sec = p->mtime_sec;
	it->io.mtime_nsec = p->mtime_nsec;
	it->io.dev = p->dev;
	it->io.ino = p->ino;
	it->io.reason = p->reason;
	it->io.err = p->err;
	it->io.message = p->message;
	/* --state's verdict: unchanged (no record) or renamed */
	it->io.kind = p->kind;
	it->io.old_path = p->old_path;     /* all three owned by the state */
	it->io.old_base = p->old_base;
	it->io.known = p->known;
	it->io.error_document = p->error_document;
	it->no_output = so->probe.no_output;
	it->state = so->probe.state;
	it->cap = cap;
}

/* A streamed archive's place in the batch, before its messages, as the
 * ring reader leaves it (its item marked stream, no output): no record,
 * but where a sink that keeps what each file held (the index) drops the
 * archive's old messages, which would otherwise stay beside the new ones
 * at offsets the archive no longer has.  0 or -ENOMEM. */
static int sync_stream_place(struct batch *b, struct walk_entry *e, const struct sync_open *so)
{
	struct batch_item *it = &b->items[b->n++];
	int ret = reader_item_init(b, it, e);
	if (ret < 0)
		return ret;
	sync_take_probe(it, so, 0);
	it->stream = true;
	it->no_output = true;
	return 0;
}

/* Vanished messages a batch holds before it settles (sync_settle): one
 * listing of their Maildir finds this many at once, and their bytes,
 * read at the settle, are counted before the batch takes more. */
#define SYNC_SETTLE_VANISHED 64

/* The batch's reads so far are complete: its Maildir messages that
 * vanished are looked for under new names, with one listing for them all
 * (not one each: a client marking a folder read renames most of a batch),
 * and its entries are done with.  After a fatal error (ok false) only the
 * latter.  A batch may settle more than once: what settled has no entry. */
static int sync_settle(struct reader *r, const struct reader_io *io, struct batch *b, bool ok)
{
	int ret = ok ? reader_batch_retry_renamed(&r->c, io->budget, b) : 0;
	reader_items_done(io->walk, b->items, b->n, NULL);
	return ret;
}

static int sync_run(struct reader *r, const struct reader_io *io)
{
	struct batch *b = NULL;
	int ret = 0;
	size_t held = 0;   /* vanished messages in b, not yet settled */
	struct arena names;
	arena_init(&names, 0);
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
		if (readable && (ret = sync_probe(r, e, &names, &so)) < 0) {
			walk_entry_done(io->walk, e);
			break;
		}
		uint64_t cap = readable ? so.probe.cap : 0;
		/* Take the budget before the batch slot: when it is exhausted, the
		 * half-full batch in hand is sent first, since waiting while holding
		 * it would wait on ourselves. */
		if (cap && !budget_try_acquire(io->budget, cap)) {
			if (b && b->n) {
				ret = sync_settle(r, io, b, true);
				held = 0;
				r->c.st.batches++;
				chan_push(io->full_batches, b);
				b = NULL;
				if (ret < 0) {
					sys_close(so.fd);
					walk_entry_done(io->walk, e);
					break;
				}
			}
			if (!budget_acquire(io->budget, cap)) {
				sys_close(so.fd);
				walk_entry_done(io->walk, e);
				break;
			}
		}
		if (!b) {
			b = reader_batch_get(io);
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
			/* the batch may be sent from inside: settled first */
			if ((ret = sync_settle(r, io, b, true)) == 0)
				ret = sync_stream_place(b, e, &so);
			if (ret == 0)
				ret = reader_stream(r, io, &b, e, &so.probe);
			held = 0;
			for (size_t i = 0; i < b->n; i++)
				if (b->items[i].entry == e)
					b->items[i].entry = NULL;
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
		ret = reader_item_take(&r->c, b, it, e);
		if (ret == 0 && readable)
			sync_take_probe(it, &so, cap);
		if (ret == 0 && cap) {
			uint8_t *buf = arena_alloc(&b->data, cap);
			if (!buf) {
				ret = -ENOMEM;
			} else {
				it->data = buf;
				ssize_t got = sys_read_restart(so.fd, buf, cap);
				ret = reader_item_read_done(&r->c, io->budget, b, it, got, so.fd);
			}
		}
		if (cap)
			sys_close(so.fd);
		/* a vanished message keeps its entry until the batch settles */
		if (ret < 0 || !reader_item_vanished(it)) {
			reader_items_done(io->walk, it, 1, NULL);
		} else if (++held == SYNC_SETTLE_VANISHED) {
			/* their bytes are read at the settle: settled this
			 * often, the batch passes --batch-bytes by the files
			 * of one settle at most (the size check below) */
			ret = sync_settle(r, io, b, true);
			held = 0;
		}
		if (ret < 0)
			break;
		/* the batch's charge counts re-read and grown bytes too */
		if (b->n == LIMIT_BATCH_FILES || b->budget >= r->c.o.batch_bytes) {
			ret = sync_settle(r, io, b, true);
			held = 0;
			r->c.st.batches++;
			chan_push(io->full_batches, b);
			b = NULL;
			if (ret < 0)
				break;
		}
	}
	/* What was read is still written, even when the run stops early. */
	if (b) {
		int s = sync_settle(r, io, b, ret == 0);
		if (ret == 0)
			ret = s;
		r->c.st.batches++;
		chan_push(io->full_batches, b);
	}
	arena_release(&names);
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
