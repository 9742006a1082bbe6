/* What both reader backends share: the per-item rules (what is read, what
 * becomes an error record, what a short or a full read means) and the
 * backend choice.  The backends differ only in how syscalls are issued.
 *
 * The byte budget: every buffer a batch's data arena hands out is charged
 * to the budget before it is allocated (one gap left: see reader_read_rest)
 * and the writer gives it back, so `used` and its peak are what is held.
 * The reader must never wait for budget that only its own unsent batch
 * holds.  Where the batch in hand may go (between files, between chunks of
 * a streamed file), it is sent on first, and the bytes of the file it held
 * without an item are read again rather than copied along.  Where it may
 * not (completing a batch: the rest of a file that grew, a Maildir message
 * re-read under its new name), budget_acquire_held waits for the others'
 * bytes only.  Hence the bound: --max-inflight, or one grant larger than
 * that when nothing else is in flight (a file, or the buffer of an mbox
 * message, with its own first chunk), or a batch in completion plus its
 * re-reads when that alone is more. */
#include "io/reader.h"
#include "io/reader_backend.h"
#include "io/walk.h"
#include "io/state.h"
#include "io/maildir.h"
#include "mail/mbox.h"
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

/* The budget comes back when a batch is written, its memory only when the
 * reader resets it (the arenas were allocated on this thread, and are freed
 * here).  Batches back in the free channel are reset now rather than on
 * their next turn, so that an arena grown for one large file does not
 * outlive its bytes by a whole round of the pipeline.  Called before large
 * allocations: after taking a batch, and after waiting for budget. */
static void reader_trim(const struct reader_io *io)
{
	struct batch *back[8];
	size_t n = 0;
	while (n < sizeof(back) / sizeof(back[0]) && (back[n] = chan_try_pop(io->free_batches)))
		batch_reset(back[n++], io->keep_bytes);
	for (size_t i = 0; i < n; i++)
		chan_push(io->free_batches, back[i]);
}

struct batch *reader_batch_get(const struct reader_io *io)
{
	struct batch *b = chan_pop(io->free_batches);
	if (!b)
		return NULL;
	batch_reset(b, io->keep_bytes);
	reader_trim(io);
	return b;
}

int reader_item_init(struct batch *b, struct batch_item *it, struct walk_entry *e)
{
	memset(it, 0, sizeof(*it));
	it->entry = e;
	int r = walk_entry_describe(e, &b->meta, &it->io);
	if (r < 0) {
		/* No memory for its name: the run fails, and the item, already
		 * in the batch for some callers, is an error record that names
		 * nothing rather than a half-built one (NULL strings with
		 * lengths reached the emitter and the error summary). */
		memset(&it->io, 0, sizeof(it->io));
		it->io.root = it->io.path = (struct mail_str){ "", 0 };
		it->io.reason = RECORD_INTERNAL;
		it->io.message = "out of memory while copying its name";
		return r;
	}
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

/* A file of it->io.size bytes read whole: its buffer capacity (size + 1, so
 * that a short read proves EOF), or 0 and a too-large record past
 * --max-size. */
static uint64_t reader_item_whole(struct reader_common *rc, struct batch_item *it)
{
	if (it->io.size > rc->o.max_size) {
		it->io.reason = RECORD_TOO_LARGE;
		it->io.message = "larger than --max-size: not read";
		return 0;
	}
	it->cap = it->io.size + 1;
	return it->cap;
}

uint64_t reader_item_stat(struct reader_common *rc, struct batch_item *it, int res,
                          uint32_t mode, uint64_t size, int64_t mtime_sec,
                          uint32_t mtime_nsec, uint64_t dev, uint64_t ino)
{
	/* a --files-from entry is sharded here, once its type is known (a
	 * directory's files are sharded each by the walk) */
	if (it->entry && rc->walk && !walk_entry_listed_in_shard(rc->walk, it->entry, res >= 0 && S_ISDIR(mode))) {
		it->no_output = true;
		return 0;
	}
	if (res < 0) {
		reader_item_fail(it, res);
		/* there, but its stat failed (EIO, EACCES): not a deletion */
		if (res != -ENOENT && rc->o.state && state_not_read(rc->o.state, &it->io) < 0) {
			it->io.reason = RECORD_INTERNAL;
			it->io.message = "out of memory in --state";
		}
		return 0;
	}
	it->io.have_stat = true;
	it->io.size = size;
	it->io.mtime_sec = mtime_sec;
	it->io.mtime_nsec = mtime_nsec;
	it->io.dev = dev;
	it->io.ino = ino;
	if (S_ISDIR(mode)) {
		/* a directory in --files-from is walked like a PATH argument */
		int r = it->entry && rc->walk ? walk_expand_dir(rc->walk, it->entry) : -EISDIR;
		if (r == 0) {
			it->no_output = true;
			rc->st.expanded++;
		} else {
			reader_item_fail(it, r);
		}
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
	if (rc->o.state) {
		enum state_verdict v;
		struct state_entry *se;
		if (state_check(rc->o.state, &it->io, &v, &it->io.old_path, &se) < 0) {
			it->io.reason = RECORD_INTERNAL;
			it->io.message = "out of memory in --state";
			return 0;
		}
		it->state = se;
		if (v == STATE_UNCHANGED) {
			/* not read, no record: that is the point of --state */
			rc->st.unchanged++;
			it->no_output = true;
			return 0;
		}
		if (v == STATE_RENAMED) {
			/* a Maildir flag change or new/ → cur/: same message */
			rc->st.moved++;
			it->io.kind = RECORD_RENAMED;
			return 0;
		}
		rc->st.changed += v == STATE_CHANGED;
	}
	if (size > reader_stream_threshold(&rc->o)) {
		/* not read here: reader_stream() decides (an mbox is split in
		 * chunks whatever its size; anything else must fit --max-size) */
		it->stream = true;
		it->no_output = true;
		return 0;
	}
	return reader_item_whole(rc, it);
}

/* The file grew between its size query and its read: read on to EOF,
 * doubling the buffer, up to --max-size.  Rare, so plain reads.
 *
 * The batch cannot be sent before this item is complete, so each larger
 * buffer is charged with budget_acquire_held: it waits for the others'
 * bytes only, never for this batch's own.  budget is NULL where the caller
 * has none to give (the backends' first reads, for now): those buffers are
 * then not counted. */
static int reader_read_rest(struct reader_common *rc, struct budget *budget, struct batch *b,
                            struct batch_item *it, int fd)
{
	uint64_t have = it->cap;
	uint64_t cap = have * 2;
	uint8_t *buf = NULL;
	for (;;) {
		if (cap > rc->o.max_size + 1)
			cap = rc->o.max_size + 1;
		if (budget) {
			if (!budget_acquire_held(budget, cap, b->budget))
				return -ECANCELED;
			b->budget += cap;
		}
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

int reader_item_read_done(struct reader_common *rc, struct budget *budget, struct batch *b,
                          struct batch_item *it, int64_t got, int fd)
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
	int r = reader_read_rest(rc, budget, b, it, fd);
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
	int ret = r->run(r, io);
	/* What the last run saw and this one did not is gone — known only when
	 * the walk ran to its end. */
	if (ret == 0 && r->c.o.state && !atomic_load(io->stop)) {
		struct reader_deleted_ctx c = { r, io, NULL };
		/* entries under a directory that could not be listed are kept */
		state_set_walk(r->c.o.state, io->walk);
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

uint64_t reader_stream_threshold(const struct reader_options *o)
{
	/* Past four batches' worth a file is not worth holding whole; an mbox
	 * of any size then costs one chunk of memory at a time. */
	uint64_t t = 4 * (o->batch_bytes > 1024 * 1024 ? o->batch_bytes : 1024 * 1024);
	return t < o->max_size ? t : o->max_size;
}

/* Sends the batch in hand on and takes a fresh one.  Nothing is carried
 * over: bytes of the file that the old batch holds and no item refers to
 * are read again into the new one, so that every buffer of a batch was
 * charged to the budget before it was allocated. */
static int stream_send(struct reader *r, const struct reader_io *io, struct batch **bp)
{
	struct batch *nb = reader_batch_get(io);
	if (!nb)
		return -ECANCELED;
	r->c.st.batches++;
	chan_push(io->full_batches, *bp);
	*bp = nb;
	return 0;
}

/* The batch that held *pend was sent on: those bytes are read again (and
 * counted again) into the next buffer. */
static void stream_forget(struct reader *r, const uint8_t **pend, size_t pend_len)
{
	if (*pend) {
		r->c.st.bytes -= pend_len;
		*pend = NULL;
	}
}

/* A new item for the streamed file, with its stat fields. */
static struct batch_item *stream_item(struct batch *b, struct walk_entry *e,
                                      const struct batch_item *st, int *err)
{
	struct batch_item *it = &b->items[b->n++];
	if ((*err = reader_item_init(b, it, e)) < 0)
		return NULL;
	it->io.have_stat = true;
	it->io.size = st->io.size;
	it->io.mtime_sec = st->io.mtime_sec;
	it->io.mtime_nsec = st->io.mtime_nsec;
	it->io.dev = st->io.dev;
	it->io.ino = st->io.ino;
	return it;
}

/* Room for one more item: a full batch is sent on first. */
static int stream_room(struct reader *r, const struct reader_io *io, struct batch **bp)
{
	if ((*bp)->n < LIMIT_BATCH_FILES)
		return 0;
	return stream_send(r, io, bp);
}

struct stream_vanished {
	struct reader *r;
	const struct reader_io *io;
	struct batch **bp;
	struct walk_entry *e;
	const struct batch_item *st;
};

/* A message of the archive's last run not found in it now: a deletion
 * record after the archive's messages (README, "Incremental runs"). */
static int stream_vanished(void *ctx, uint64_t off)
{
	struct stream_vanished *v = ctx;
	int err = stream_room(v->r, v->io, v->bp);
	struct batch_item *it = err < 0 ? NULL : stream_item(*v->bp, v->e, v->st, &err);
	if (!it)
		return err;
	it->io.kind = RECORD_DELETED;
	it->io.in_mbox = true;
	it->io.offset = off;
	v->r->c.st.deleted++;
	return 0;
}

/* Not an mbox after all: the file is one message, read whole when it fits
 * --max-size (the first chunk is already in `head`).
 *
 * The whole buffer is charged before it is allocated.  When it does not
 * fit and the batch in hand holds other files, that batch is sent on
 * before waiting, or we would wait on ourselves; the head goes with it and
 * is read again.  When the batch holds nothing but the head, the wait is
 * for the others' bytes only: a file larger than the budget is then read
 * alone with its own first chunk, rather than sending an empty batch round
 * the pipeline, whose arena would outlive the bytes it held. */
static int stream_whole(struct reader *r, const struct reader_io *io, struct batch **bp,
                        struct walk_entry *e, const struct batch_item *st, int fd,
                        const uint8_t *head, size_t len, bool eof)
{
	int err = 0;
	struct batch_item *it;
	if (st->io.size > r->c.o.max_size) {
		if (stream_room(r, io, bp) < 0)
			return 0;
		if (!(it = stream_item(*bp, e, st, &err)))
			return err;
		it->io.reason = RECORD_TOO_LARGE;
		it->io.message = "larger than --max-size: not read";
		return 0;
	}
	uint64_t cap = (st->io.size > len ? st->io.size : len) + 1;
	/* the head was counted when it was read: read_done counts the whole */
	r->c.st.bytes -= len;
	if ((*bp)->n == LIMIT_BATCH_FILES || !budget_try_acquire(io->budget, cap)) {
		if ((*bp)->n) {
			if (stream_send(r, io, bp) < 0)
				return 0;
			head = NULL;
			len = 0;
			eof = false;
		}
		if (!budget_acquire_held(io->budget, cap, (*bp)->budget))
			return 0;
		reader_trim(io);
	}
	(*bp)->budget += cap;
	if (!(it = stream_item(*bp, e, st, &err)))
		return err;
	uint8_t *whole = arena_alloc(&(*bp)->data, cap);
	if (!whole)
		return -ENOMEM;
	if (len)
		memcpy(whole, head, len);
	it->data = whole;
	it->cap = cap;
	int64_t total = (int64_t)len;
	while (!eof && (uint64_t)total < cap) {
		ssize_t got = r->pread(r, fd, whole + total, cap - (uint64_t)total, (uint64_t)total);
		if (got == -EINTR)
			continue;
		if (got < 0)
			total = got;
		if (got <= 0)
			break;
		total += got;
	}
	return reader_item_read_done(&r->c, io->budget, *bp, it, total, fd);
}

int reader_stream(struct reader *r, const struct reader_io *io, struct batch **bp,
                  struct walk_entry *e, const struct batch_item *st)
{
	size_t chunk = r->c.o.batch_bytes < 64 * 1024 ? 64 * 1024 : (size_t)r->c.o.batch_bytes;
	int err = 0;
	int fd = sys_openat(walk_entry_dirfd(e), e->name,
	                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (e->follow ? 0 : O_NOFOLLOW), 0);
	if (fd < 0) {
		struct batch_item *it = stream_room(r, io, bp) == 0 ? stream_item(*bp, e, st, &err) : NULL;
		if (it)
			reader_item_fail(it, fd);
		return err;
	}
	/* pend: the file's bytes [pend_off, pend_off + pend_len), read but not
	 * yet cut into messages.  They are in the batch in hand, or pend is
	 * NULL when that batch was sent on without them: they are then read
	 * again, which costs what copying them would and holds them once. */
	const uint8_t *pend = NULL;
	size_t pend_len = 0;
	uint64_t pend_off = 0;
	/* A batch takes LIMIT_BATCH_FILES messages at most: when a chunk holds
	 * more, the rest is read again for the next batch, and only as much
	 * of it as the full batch took (a quarter more, and 4 KiB), so that
	 * small messages are read about once rather than once per batch.
	 * batch_from: the file offset of the batch's first message. */
	size_t want_next = chunk;
	uint64_t batch_from = 0;
	bool eof = false, first = true, skipping = false;
	while (!eof || pend_len) {
		/* Ctrl-C: the messages already cut are written, no more are read */
		if (atomic_load_explicit(io->stop, memory_order_relaxed))
			break;
		const uint8_t *buf;
		size_t len;
		uint64_t base = pend_off;
		if (!eof || !pend) {
			/* A message longer than a chunk doubles the read, so that
			 * carrying it over costs linear copying, not quadratic. */
			size_t want = pend_len > chunk ? pend_len : want_next;
			want_next = chunk;
			/* Over --max-size, only an mbox is read at all: a few KiB
			 * are enough to recognise one. */
			if (first && st->io.size > r->c.o.max_size)
				want = 4096;
			uint64_t need = pend_len + want + 1;
			if (!budget_try_acquire(io->budget, need)) {
				/* the batch in hand is part of what is in flight (even
				 * with no item yet, its buffers hold budget): send it on
				 * before waiting, or we would wait on ourselves; pend
				 * goes with it and is read again */
				if ((*bp)->n || (*bp)->budget) {
					if ((err = stream_send(r, io, bp)) < 0)
						break;
					stream_forget(r, &pend, pend_len);
				}
				if (!budget_acquire(io->budget, need)) {
					err = -ECANCELED;
					break;
				}
				reader_trim(io);
			}
			(*bp)->budget += need;
			uint8_t *nbuf = arena_alloc(&(*bp)->data, need);
			if (!nbuf) {
				err = -ENOMEM;
				break;
			}
			size_t kept = pend ? pend_len : 0;
			if (kept)
				memcpy(nbuf, pend, kept);
			size_t ask = pend_len - kept + want;
			ssize_t got;
			do
				got = r->pread(r, fd, nbuf + kept, ask, pend_off + kept);
			while (got == -EINTR);
			if (got < 0) {
				struct batch_item *it = stream_room(r, io, bp) == 0
				                      ? stream_item(*bp, e, st, &err) : NULL;
				if (it)
					reader_item_fail(it, (int)got);
				break;
			}
			r->c.st.bytes += (uint64_t)got;
			eof = (size_t)got < ask;
			buf = nbuf;
			len = kept + (size_t)got;
			if (first) {
				first = false;
				if (!mbox_is_separator(buf, len) ||
				    mbox_never_split(walk_entry_in_maildir(e), e->name, strlen(e->name))) {
					err = stream_whole(r, io, bp, e, st, fd, buf, len, eof);
					break;
				}
			}
		} else {
			buf = pend;
			len = pend_len;
		}
		size_t pos = 0;
		while (pos < len) {
			struct mbox_span m;
			size_t next;
			if (skipping) {
				/* past an oversized message: on to the next separator */
				size_t at = mbox_find_separator(buf, len, pos);
				if (at == len && !eof) {
					/* a From_ line cut by the chunk's end is kept */
					pos = mbox_scan_keep(buf, len, pos);
					break;
				}
				pos = at;
				skipping = false;
				continue;
			}
			if (!mbox_next_max(buf, len, pos, eof, r->c.o.max_size, &m, &next)) {
				if (len - pos > r->c.o.max_size) {
					/* buf is not looked at again: the batch may go */
					if ((err = stream_room(r, io, bp)) < 0)
						goto out;
					struct batch_item *it = stream_item(*bp, e, st, &err);
					if (!it)
						goto out;
					it->io.in_mbox = true;
					it->io.offset = base + pos;
					if (state_add_mbox_offset(st->state, it->io.offset) < 0)
						state_mark_unread(st->state);
					it->io.reason = RECORD_TOO_LARGE;
					it->io.message = "mbox message larger than --max-size: skipped";
					skipping = true;
					pos = len;
				}
				break;
			}
			/* full: this message and the rest are read again into
			 * the next batch */
			if ((*bp)->n == LIMIT_BATCH_FILES)
				break;
			struct batch_item *it = stream_item(*bp, e, st, &err);
			if (!it)
				goto out;
			it->io.in_mbox = true;
			it->io.offset = base + m.start;
			if (state_add_mbox_offset(st->state, it->io.offset) < 0)
				state_mark_unread(st->state);   /* read again next time */
			it->io.length = m.end - m.start;
			it->data = buf + m.start;
			it->len = m.end - m.start;
			pos = next;
		}
		pend_len = len - pos;
		pend_off = base + pos;
		pend = pend_len ? buf + pos : NULL;
		bool full = (*bp)->n == LIMIT_BATCH_FILES;
		if (eof && pend_len && pos == 0 && !full)
			break;   /* no progress is possible: cannot happen, but never spin */
		/* A batch holds about one chunk: memory stays bounded by the
		 * budget however large the archive. */
		if (full || ((*bp)->n && (*bp)->budget >= chunk && (!eof || pend_len))) {
			if ((err = stream_send(r, io, bp)) < 0)
				break;
			stream_forget(r, &pend, pend_len);
			if (full && pend_len) {
				/* whole messages may follow: read on from pend_off
				 * afresh, as much as this batch took */
				uint64_t took = pend_off - batch_from;
				want_next = took + took / 4 + 4096 < chunk ? (size_t)(took + took / 4 + 4096)
				                                           : chunk;
				pend_len = 0;
				eof = false;
			}
			batch_from = pend_off;
		}
	}
	if (err == 0 && eof && !pend_len && !atomic_load_explicit(io->stop, memory_order_relaxed)) {
		struct stream_vanished v = { r, io, bp, e, st };
		err = state_each_vanished(st->state, stream_vanished, &v);
	}
out:
	sys_close(fd);
	return err == -ECANCELED ? 0 : err;
}

int reader_item_retry_renamed(struct reader_common *rc, struct budget *budget, struct batch *b,
                              struct batch_item *it)
{
	struct walk_entry *e = it->entry;
	if (it->io.reason != RECORD_IO || it->io.err != ENOENT || !e || !walk_entry_in_maildir(e))
		return 0;
	const char *name;
	int r = walk_entry_find_renamed(e, &b->meta, &name);
	if (r <= 0)
		return r == -ENOMEM ? r : 0;
	int fd = sys_openat(walk_entry_dirfd(e), name,
	                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd < 0)
		return 0;   /* renamed again: the ENOENT record stands */
	struct stat st;
	int res = sys_fstat(fd, &st);
	it->io.reason = RECORD_NONE;
	it->io.err = 0;
	/* The record names the message where it is now (and so does --state,
	 * which reader_item_stat consults below). */
	const char *sub = name + 3;                 /* "cur/x" after "../" */
	const char *base = sub + 4;
	size_t old_tail = 4 + strlen(e->name);      /* "cur/" + old name */
	size_t keep = it->io.path.n >= old_tail ? it->io.path.n - old_tail : 0;
	size_t bl = strlen(base);
	char *p = arena_alloc(&b->meta, keep + 4 + bl + 1);
	if (p) {
		memcpy(p, it->io.path.p, keep);
		memcpy(p + keep, sub, 4 + bl + 1);
		it->io.path = (struct mail_str){ p, keep + 4 + bl };
		it->io.subdir = (struct mail_str){ p + keep, 3 };
		maildir_flags_view(p + keep + 4, bl, &it->io.flags.p, &it->io.flags.n);
	}
	uint64_t cap = reader_item_stat(rc, it, res, st.st_mode, (uint64_t)st.st_size,
	                                st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec,
	                                st.st_dev, st.st_ino);
	if (it->stream) {
		/* past the stream threshold, but a Maildir message is never an
		 * mbox: read whole here when it fits --max-size (streaming is
		 * for the walk's own order, which this batch has left) */
		it->stream = false;
		it->no_output = false;
		cap = reader_item_whole(rc, it);
	}
	rc->st.renamed++;
	int ret = 0;
	if (cap) {
		/* This batch cannot be sent before all its items are read:
		 * wait only for the budget that others hold. */
		if (!budget_acquire_held(budget, cap, b->budget)) {
			sys_close(fd);
			reader_item_fail(it, -ECANCELED);
			return 0;
		}
		b->budget += cap;
		uint8_t *buf = arena_alloc(&b->data, cap);
		if (!buf) {
			sys_close(fd);
			return -ENOMEM;
		}
		it->data = buf;
		it->cap = cap;
		ssize_t got;
		do
			got = sys_read(fd, buf, cap);
		while (got == -EINTR);
		ret = reader_item_read_done(rc, budget, b, it, got, fd);
	}
	sys_close(fd);
	return ret;
}
