/* What both reader backends share: the per-item rules (what is read, what
 * becomes an error record, what a short or a full read means) and the
 * backend choice.  The backends differ only in how syscalls are issued. */
#include "io/reader.h"
#include "io/reader_backend.h"
#include "io/walk.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

struct batch *reader_batch_get(const struct reader_io *io)
{
	return chan_pop(io->free_batches);
}

int reader_item_init(struct batch *b, struct batch_item *it, struct walk_entry *e)
{
	memset(it, 0, sizeof(*it));
	it->entry = e;
	int r = walk_entry_describe(e, &b->meta, &it->io);
	if (r < 0)
		return r;
	if (e->reason != RECORD_NONE) {
		it->io.reason = e->reason;
		it->io.err = e->err;
	} else if (e->d_type == DT_LNK && !e->follow) {
		it->io.reason = RECORD_SYMLINK;
		it->io.message = "symbolic link not followed while walking";
	} else if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) {
		it->io.reason = RECORD_NOT_REGULAR;
		it->io.message = e->d_type == DT_FIFO ? "FIFO: never opened"
		               : e->d_type == DT_SOCK ? "socket: never opened"
		               : "device: never opened";
	}
	return 0;
}

void reader_item_fail(struct batch_item *it, int neg_errno)
{
	it->io.reason = RECORD_IO;
	it->io.err = -neg_errno;
	it->cap = 0;
	it->data = NULL;
	it->len = 0;
}

uint64_t reader_item_stat(struct reader_common *rc, struct batch_item *it, int res,
                          uint32_t mode, uint64_t size, int64_t mtime_sec,
                          uint32_t mtime_nsec, uint64_t dev, uint64_t ino)
{
	if (res < 0) {
		reader_item_fail(it, res);
		return 0;
	}
	it->io.have_stat = true;
	it->io.size = size;
	it->io.mtime_sec = mtime_sec;
	it->io.mtime_nsec = mtime_nsec;
	it->io.dev = dev;
	it->io.ino = ino;
	if (S_ISDIR(mode)) {
		reader_item_fail(it, -EISDIR);
		return 0;
	}
	if (S_ISLNK(mode)) {
		it->io.reason = RECORD_SYMLINK;
		it->io.message = "symbolic link not followed while walking";
		return 0;
	}
	if (!S_ISREG(mode)) {
		it->io.reason = RECORD_NOT_REGULAR;
		it->io.message = S_ISFIFO(mode) ? "FIFO: never opened"
		               : S_ISSOCK(mode) ? "socket: never opened"
		               : "device: never opened";
		return 0;
	}
	if (size > rc->o.max_size) {
		it->io.reason = RECORD_TOO_LARGE;
		it->io.message = "larger than --max-size: not read";
		return 0;
	}
	it->cap = size + 1;
	return it->cap;
}

/* The file grew between its size query and its read: read on to EOF,
 * doubling the buffer, up to --max-size.  Rare, so plain reads. */
static int reader_read_rest(struct reader_common *rc, struct batch *b, struct batch_item *it,
                            int fd)
{
	uint64_t have = it->cap;
	uint64_t cap = have * 2;
	uint8_t *buf = NULL;
	for (;;) {
		if (cap > rc->o.max_size + 1)
			cap = rc->o.max_size + 1;
		uint8_t *nb = arena_alloc(&b->data, cap);
		if (!nb)
			return -ENOMEM;
		memcpy(nb, buf ? buf : it->data, have);
		buf = nb;
		while (have < cap) {
			/* pread: the ring's descriptor is gone and a reopened file
			 * starts at 0, so the offset is explicit. */
			ssize_t n = sys_pread(fd, buf + have, cap - have, have);
			if (n == -EINTR)
				continue;
			if (n < 0)
				return (int)n;
			if (n == 0)
				goto eof;
			have += (uint64_t)n;
		}
		if (cap > rc->o.max_size) {
			it->io.reason = RECORD_TOO_LARGE;
			it->io.message = "grew past --max-size while being read";
			it->data = NULL;
			it->len = 0;
			return 0;
		}
		cap *= 2;
	}
eof:
	it->data = buf;
	it->len = have;
	it->io.size = have;
	return 0;
}

int reader_item_read_done(struct reader_common *rc, struct batch *b, struct batch_item *it,
                          int64_t got, int fd)
{
	if (got < 0) {
		reader_item_fail(it, (int)got);
		return 0;
	}
	it->len = (size_t)got;
	if ((uint64_t)got < it->cap) {
		if ((uint64_t)got < it->io.size) {
			it->io.notes |= RECORD_SHRANK;
			it->io.size = (uint64_t)got;
			rc->st.shrank++;
		}
		rc->st.bytes += (uint64_t)got;
		return 0;
	}
	it->io.notes |= RECORD_GREW;
	rc->st.grew++;
	int own = -1;
	if (fd < 0) {
		struct walk_entry *e = it->entry;
		own = sys_openat(walk_entry_dirfd(e), e->name,
		                 O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (e->follow ? 0 : O_NOFOLLOW), 0);
		if (own < 0) {
			reader_item_fail(it, own);
			return 0;
		}
		fd = own;
	}
	int r = reader_read_rest(rc, b, it, fd);
	if (own >= 0)
		sys_close(own);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		reader_item_fail(it, r);
	else
		rc->st.bytes += it->len;
	return 0;
}

void reader_free(struct reader *r)
{
	if (r)
		r->free(r);
}

int reader_run(struct reader *r, const struct reader_io *io)
{
	int ret = r->run(r, io);
	chan_close(io->full_batches);
	return ret;
}

void reader_stats_get(const struct reader *r, struct reader_stats *out)
{
	*out = r->c.st;
}
