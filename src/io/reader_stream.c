/* SPDX-License-Identifier: MIT */
/* Files too large to read whole (over reader_stream_threshold): an mbox is
 * split into messages chunk by chunk, each chunk read with the backend's
 * own pread and charged to the budget before it is allocated; any other
 * file is read whole if it fits --max-size, else it is a too-large record.
 * Called by the backends; it calls the per-item rules (reader_item.h) and
 * the backend only through its pread. */
#include "io/reader_stream.h"
#include "io/reader_backend.h"
#include "io/reader_item.h"
#include "io/walk.h"
#include "io/state.h"
#include "mail/mbox.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

/* The item of the archive's message at file offset off (stream_list_offset
 * lists it in the state entry).  The first of them (*first) carries what
 * the file's own record was in the last run (record_io.known and
 * error_document), whose document its record deletes. */
static struct batch_item *stream_message_item(struct batch *b, struct walk_entry *e,
                                              const struct batch_item *st, uint64_t off,
                                              bool *first, int *err)
{
	struct batch_item *it = stream_item(b, e, st, err);
	if (!it)
		return NULL;
	it->io.in_mbox = true;
	it->io.offset = off;
	it->io.error_document = st->io.error_document && *first;
	it->io.known = st->io.known && *first;
	it->archive_state = st->state;
	*first = false;
	return it;
}

/* The state entry lists the message at off (state_each_vanished), unless
 * its record is an error that is no document. */
static void stream_list_offset(const struct batch_item *st, uint64_t off)
{
	if (state_add_mbox_offset(st->state, off) < 0)
		state_mark_unread(st->state);   /* read again next time */
}

/* The record of an archive's message of `length` bytes at file offset
 * off, longer than --max-size, the next message at read_to: not read, the
 * same record whether the archive is read whole or in chunks
 * (record_mbox_too_large). */
static bool stream_too_large(struct batch *b, struct walk_entry *e, const struct batch_item *st,
                             uint64_t off, uint64_t length, uint64_t read_to, bool error_documents,
                             bool *first, int *err)
{
	struct batch_item *it = stream_message_item(b, e, st, off, first, err);
	if (!it)
		return false;
	record_mbox_too_large(&it->io, length);
	it->io.read_to = read_to;
	/* not listed where the error is no document: a document the last run
	 * made at off is then one of the archive's vanished, and goes */
	if (error_documents)
		stream_list_offset(st, off);
	return true;
}

/* The item of a file that is one record, not an archive's messages: it
 * is the file's state entry's, as a file read at once is (what the last
 * run made of it, whether its record is a document). */
static struct batch_item *stream_whole_item(struct batch *b, struct walk_entry *e,
                                            const struct batch_item *st, int *err)
{
	struct batch_item *it = stream_item(b, e, st, err);
	if (it) {
		it->io.known = st->io.known;
		it->state = st->state;
	}
	return it;
}

/* The backend's one read at an offset, for sys.h's loops. */
static ssize_t stream_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
	struct reader *r = ctx;
	return r->pread(r, fd, buf, n, off);
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

/* The archive read to its end (read_to: where it ended) and its gone
 * messages' deletions sent: an item after all of them, with no record,
 * which says so.  An index takes the archive for read only here: a run
 * stopped before it (killed after the last message's batch, before the
 * deletions' batches) reads the archive again. */
static int stream_end(struct reader *r, const struct reader_io *io, struct batch **bp,
                      struct walk_entry *e, const struct batch_item *st, uint64_t read_to)
{
	int err = stream_room(r, io, bp);
	struct batch_item *it = err < 0 ? NULL : stream_item(*bp, e, st, &err);
	if (!it)
		return err;
	it->no_output = true;
	it->stream_end = true;
	it->io.in_mbox = true;
	it->io.read_to = read_to;
	/* changed while read: the next run reads it again */
	if (read_to != st->io.size)
		it->io.notes |= read_to < st->io.size ? RECORD_SHRANK : RECORD_GREW;
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
		if (!(it = stream_whole_item(*bp, e, st, &err)))
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
	if (!(it = stream_whole_item(*bp, e, st, &err)))
		return err;
	uint8_t *whole = arena_alloc(&(*bp)->data, cap);
	if (!whole)
		return -ENOMEM;
	if (len)
		memcpy(whole, head, len);
	it->data = whole;
	it->cap = cap;
	int64_t total = (int64_t)len;
	if (!eof && len < cap) {
		ssize_t got = sys_pread_full_by(stream_pread, r, fd, whole + len, cap - len, len);
		total = got < 0 ? got : total + got;
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
		/* the state's entry, made when it was statted, is not a read:
		 * the next run reads the file again (state_mark_unread) */
		state_mark_unread(st->state);
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
	uint64_t skip_from = 0;   /* skipping: where that message starts */
	bool first_message = true;   /* stream_message_item */
	/* The file changed while read (written to, cut): the messages past
	 * its stat size note grew, the last one before an end short of it
	 * shrank (the records keep the stat size: those before were sent
	 * with it), and the next run reads it again (state_mark_reread), as
	 * one read whole. */
	uint64_t file_end = UINT64_MAX;
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
			/* The buffers of a batch that holds no message yet
			 * (reading a long message, or skipping one too large)
			 * go back before the next is taken, pend read again
			 * rather than copied: they would all stay in the batch's
			 * arena until it is sent.  A long message's batch is sent
			 * on first, so that it is read whole into one buffer, and
			 * never further than shows that it cannot fit --max-size:
			 * its From_ line, --max-size, and what the separator's
			 * decision needs beyond (the skip below).  One message
			 * too large to be read held up to four times --max-size
			 * in flight (a 40 MiB one 63 MiB at --max-size=20M). */
			if (pend_len > chunk) {
				if ((*bp)->n) {
					if ((err = stream_send(r, io, bp)) < 0)
						break;
					batch_from = pend_off;
				}
				uint64_t most = r->c.o.max_size + MBOX_LINE_MAX + MBOX_KEEP_MAX + 6;
				if (most > pend_len && want > most - pend_len)
					want = (size_t)(most - pend_len);
			}
			if (!(*bp)->n) {
				stream_forget(r, &pend, pend_len);
				reader_batch_drop_charge(io, *bp);
			}
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
			ssize_t got = sys_pread_restart_by(stream_pread, r, fd, nbuf + kept, ask,
			                                   pend_off + kept);
			if (got < 0) {
				state_mark_unread(st->state);   /* as a failed open */
				struct batch_item *it = stream_room(r, io, bp) == 0
				                      ? stream_item(*bp, e, st, &err) : NULL;
				if (it)
					reader_item_fail(it, (int)got);
				eof = false;   /* its end is not known: nothing vanished, nothing shrank */
				break;
			}
			r->c.st.bytes += (uint64_t)got;
			eof = (size_t)got < ask;
			if (eof)
				file_end = pend_off + kept + (uint64_t)got;
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
				/* in an oversized message: on to the next separator,
				 * where its record is made (record_mbox_too_large) */
				size_t at = mbox_find_separator(buf, len, pos, eof);
				if (at == len && !eof) {
					/* a From_ line cut by the chunk's end is kept */
					pos = mbox_scan_keep(buf, len, pos);
					break;
				}
				/* full: read again from pos into the next batch */
				if ((*bp)->n == LIMIT_BATCH_FILES)
					break;
				uint64_t end = base + mbox_message_end(buf, pos, at);
				if (!stream_too_large(*bp, e, st, skip_from, end - skip_from, base + at,
				                      r->c.o.error_documents, &first_message, &err))
					goto out;
				pos = at;
				skipping = false;
				continue;
			}
			if (!mbox_next_max(buf, len, pos, eof, r->c.o.max_size, &m, &next)) {
				/* Past --max-size and a separator's decision beyond it,
				 * the message cannot end within --max-size: skip it,
				 * keeping only what the separator's search needs. */
				const uint8_t *nl = memchr(buf + pos, '\n', len - pos);
				size_t start = nl ? (size_t)(nl - buf) + 1 : len;
				if (len - start > r->c.o.max_size + MBOX_KEEP_MAX + 3) {
					skipping = true;
					skip_from = base + start;
					pos = start;
					continue;
				}
				break;
			}
			/* full: this message and the rest are read again into
			 * the next batch */
			if ((*bp)->n == LIMIT_BATCH_FILES)
				break;
			if (m.end - m.start > r->c.o.max_size) {
				if (!stream_too_large(*bp, e, st, base + m.start, m.end - m.start, base + next,
				                      r->c.o.error_documents, &first_message, &err))
					goto out;
				pos = next;
				continue;
			}
			struct batch_item *it = stream_message_item(*bp, e, st, base + m.start,
			                                            &first_message, &err);
			if (!it)
				goto out;
			stream_list_offset(st, base + m.start);
			it->io.length = m.end - m.start;
			it->io.read_to = base + next;
			if (base + m.end > st->io.size) {
				it->io.notes |= RECORD_GREW;
				state_mark_reread(st->state);
			}
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
	if (err == 0 && eof && file_end < st->io.size) {
		/* the last message, if the batch in hand holds it (one sent on
		 * is another thread's now) */
		struct batch_item *last = (*bp)->n ? &(*bp)->items[(*bp)->n - 1] : NULL;
		if (last && last->entry == e)
			last->io.notes |= RECORD_SHRANK;
		state_mark_reread(st->state);
	}
	if (err == 0 && eof && !pend_len && !atomic_load_explicit(io->stop, memory_order_relaxed)) {
		struct stream_vanished v = { r, io, bp, e, st };
		err = state_each_vanished(st->state, stream_vanished, &v);
		/* an archive's (one message read whole wrote its own state) */
		if (err == 0 && !first_message)
			err = stream_end(r, io, bp, e, st, file_end);
	}
out:
	sys_close(fd);
	reader_batch_drop_charge(io, *bp);
	return err == -ECANCELED ? 0 : err;
}
