/* SPDX-License-Identifier: MIT */
/* The per-item rules both reader backends share: what is read, what
 * becomes an error record, what a short or a full read means, and a
 * Maildir message that vanished looked for under its new name.  The
 * backends differ only in how syscalls are issued.
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
#include "io/reader_item.h"
#include "io/walk.h"
#include "io/state.h"
#include "io/maildir.h"
#include "core/diag.h"
#include "core/limits.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* A batch's data memory, kept from batch to batch: twice a full batch
 * plus 1 MiB, of which a full batch fills the first batch_bytes
 * (docs/ARCHITECTURE.md, "Batches, the pool and the parser"). */
static void reader_batch_reset(const struct reader_io *io, struct batch *b)
{
	batch_reset(b, batch_keep_bytes(io->batch_bytes), io->batch_bytes);
}

/* The budget comes back when a batch is written, its memory only when the
 * reader resets it (the arenas were allocated on this thread, and are freed
 * here).  Batches back in the free channel are reset now rather than on
 * their next turn, so that an arena grown for one large file does not
 * outlive its bytes by a whole round of the pipeline.  Called before large
 * allocations: after taking a batch, and after waiting for budget. */
void reader_trim(const struct reader_io *io)
{
	struct batch *back[8];
	size_t n = 0;
	while (n < sizeof(back) / sizeof(back[0]) && (back[n] = chan_try_pop(io->free_batches)))
		reader_batch_reset(io, back[n++]);
	for (size_t i = 0; i < n; i++)
		chan_push(io->free_batches, back[i]);
}

void reader_batch_drop_charge(const struct reader_io *io, struct batch *b)
{
	if (b->n || !b->budget)
		return;
	budget_release(io->budget, b->budget);
	reader_batch_reset(io, b);
}

struct batch *reader_batch_get(const struct reader_io *io)
{
	struct batch *b = chan_pop(io->free_batches);
	if (!b)
		return NULL;
	reader_batch_reset(io, b);
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
		it->io.root = it->io.path = (struct str){ "", 0 };
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

int reader_item_not_found(struct reader_common *rc, const struct batch_item *it, int neg_errno)
{
	if (!rc->o.state)
		return 0;
	if (neg_errno != -ENOENT)
		return state_not_read(rc->o.state, &it->io);
	if (it->entry && it->entry->follow)
		state_named_missing(rc->o.state, &it->io);
	return 0;
}

/* No regular file at the item's place (state_not_a_file). */
static void reader_item_not_a_file(struct reader_common *rc, struct batch_item *it)
{
	/* its entry, so that the writer journals it (a killed run) */
	struct state_entry *e = rc->o.state ? state_not_a_file(rc->o.state, &it->io) : NULL;
	if (e && !it->state)
		it->state = e;
}

int reader_item_take(struct reader_common *rc, struct batch *b, struct batch_item *it,
                     struct walk_entry *e)
{
	int r = reader_item_init(b, it, e);
	if (r == 0 && e->reason == RECORD_IO)
		r = reader_item_not_found(rc, it, -e->err);
	if (r == 0 && record_no_file(&it->io))
		reader_item_not_a_file(rc, it);
	return r;
}

/* reader_item_fail, and the state told (reader_item_not_found). */
static void reader_item_fail_kept(struct reader_common *rc, struct batch_item *it, int neg_errno)
{
	reader_item_fail(it, neg_errno);
	if (reader_item_not_found(rc, it, neg_errno) < 0) {
		it->io.reason = RECORD_INTERNAL;
		it->io.message = "out of memory in --state";
	}
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
		reader_item_fail_kept(rc, it, res);
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
			/* its error record, kept in the state as a stat's failure
			 * is, so that the run that can list it deletes it */
			reader_item_fail_kept(rc, it, r);
		}
		return 0;
	}
	if (S_ISLNK(mode)) {
		it->io.reason = RECORD_SYMLINK;
		it->io.message = "symbolic link not followed while walking";
		reader_item_not_a_file(rc, it);
		return 0;
	}
	if (!S_ISREG(mode)) {
		it->io.reason = RECORD_NOT_REGULAR;
		it->io.message = S_ISFIFO(mode) ? "FIFO: never opened"
		               : S_ISSOCK(mode) ? "socket: never opened"
		               : "device: never opened";
		reader_item_not_a_file(rc, it);
		return 0;
	}
	if (rc->o.state && it->state) {
		/* statted again where it was found after vanishing at its read
		 * (reader_item_reopen): its entry follows it and its first
		 * verdict stands.  Judged again, it would meet that entry as a
		 * file met twice in this run, and have no record at all. */
		if (state_follow(it->state, &it->io) < 0) {
			it->io.reason = RECORD_INTERNAL;
			it->io.message = "out of memory in --state";
			return 0;
		}
	} else if (rc->o.state && !(it->entry && walk_entry_is_stdin(it->entry))) {
		/* Standard input is not kept: it has no place to be judged
		 * at or found gone from, and a state of every message ever
		 * piped in (an MDA's) would grow for good, loaded whole by
		 * every delivery; it is emitted every time, as without
		 * --state. */
		enum state_verdict v;
		struct state_entry *se;
		if (state_check(rc->o.state, &it->io, &v, &it->io.old_path, &it->io.old_base,
		                &se) < 0) {
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
		it->io.known = v == STATE_CHANGED && state_had_document(rc->o.state, se);
		if (it->io.known)
			state_mark_told(se);
		it->io.error_document = v == STATE_CHANGED && state_had_error_record(se);
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
		/* pread: the ring's descriptor is gone and a reopened file
		 * starts at 0, so the offset is explicit. */
		ssize_t n = sys_pread_full(fd, buf + have, cap - have, have);
		if (n < 0)
			return (int)n;
		have += (uint64_t)n;
		if (have < cap)
			goto eof;
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

uint64_t reader_stream_threshold(const struct reader_options *o)
{
	/* Past four batches' worth, or an eighth of the in-flight budget, a
	 * file is not worth holding whole; an mbox of any size then costs one
	 * chunk of memory at a time.  The budget's share keeps the threshold
	 * where the memory bound puts it whatever the batch size (8 MiB under
	 * the default 64 MiB), never below 1 MiB. */
	uint64_t t = 4 * (o->batch_bytes > MiB ? o->batch_bytes : MiB);
	uint64_t share = o->max_inflight / 8 > MiB ? o->max_inflight / 8 : MiB;
	if (o->max_inflight && share < t)
		t = share;
	return t < o->max_size ? t : o->max_size;
}

/* Reads the vanished item it under the name the walk found for it. */
static int reader_item_reopen(struct reader_common *rc, struct budget *budget, struct batch *b,
                              struct batch_item *it, const char *name)
{
	struct walk_entry *e = it->entry;
	if (rc->o.after_stat)
		rc->o.after_stat(rc->o.after_stat_arg, name);   /* test seam (reader.h) */
	int fd = sys_openat(walk_entry_dirfd(e), name,
	                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOENT;   /* 1: renamed again since the listing */
	struct stat st;
	int res = sys_fstat(fd, &st);
	/* The record names the message where it is now (and so does --state,
	 * which reader_item_stat consults below). */
	ingest_assert(name[0] == '.' && name[1] == '.' && name[2] == '/' && name[6] == '/');
	const char *sub = name + 3;                 /* "cur/x" after "../" */
	const char *base = sub + 4;
	size_t old_tail = 4 + strlen(e->name);      /* "cur/" + old name */
	size_t keep = it->io.path.n >= old_tail ? it->io.path.n - old_tail : 0;
	size_t bl = strlen(base);
	char *p = arena_alloc(&b->meta, keep + 4 + bl + 1);
	if (!p) {
		sys_close(fd);
		return -ENOMEM;   /* not the new file's bytes under the old name */
	}
	it->io.reason = RECORD_NONE;
	it->io.err = 0;
	memcpy(p, it->io.path.p, keep);
	memcpy(p + keep, sub, 4 + bl + 1);
	/* what the name it was met under held goes (the index's rows of
	 * it), unless its state already names an older path */
	if (!it->io.old_path.n)
		it->io.old_path = it->io.path;
	it->io.path = (struct str){ p, keep + 4 + bl };
	it->io.subdir = (struct str){ p + keep, 3 };
	maildir_flags_view(p + keep + 4, bl, &it->io.flags.p, &it->io.flags.n);
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
		ssize_t got = sys_read_restart(fd, buf, cap);
		ret = reader_item_read_done(rc, budget, b, it, got, fd);
	}
	/* read under its new name (what --stats calls renamed while read) */
	if (ret == 0 && it->io.reason != RECORD_IO)
		rc->st.renamed++;
	sys_close(fd);
	return ret;
}

void reader_items_done(struct walk *w, struct batch_item *items, size_t n,
                       const struct batch_item *keep)
{
	for (size_t i = 0; i < n; i++)
		if (items[i].entry && &items[i] != keep) {
			walk_entry_done(w, items[i].entry);
			items[i].entry = NULL;
		}
}

bool reader_item_vanished(const struct batch_item *it)
{
	return it->io.reason == RECORD_IO && it->io.err == ENOENT && it->entry &&
	       it->entry->d_type != DT_DIR && walk_entry_in_maildir(it->entry);
}

/* Listings a batch's vanished messages get, at most: a few, since a name
 * found is opened within microseconds and each listing reads the whole
 * folder. */
#define READER_RENAME_ROUNDS 3

/* One listing for the batch's vanished messages, and an open of each under
 * the name found.  The number renamed again between the two, or -errno. */
static int reader_batch_find_renamed(struct reader_common *rc, struct budget *budget,
                                     struct batch *b)
{
	size_t n = 0;
	for (size_t i = 0; i < b->n; i++)
		n += reader_item_vanished(&b->items[i]);
	if (!n)
		return 0;
	struct walk_renamed *v = xmalloc(n * sizeof(*v));
	size_t *at = xmalloc(n * sizeof(*at));
	int r = v && at ? 0 : -ENOMEM;
	for (size_t i = 0, k = 0; i < b->n && r == 0; i++)
		if (reader_item_vanished(&b->items[i])) {
			v[k].e = b->items[i].entry;
			at[k++] = i;
		}
	if (r == 0)
		r = walk_find_renamed(rc->walk, v, n, &b->meta);
	/* A listing that failed leaves its messages' ENOENT records standing;
	 * only memory ends the run. */
	if (r < 0 && r != -ENOMEM)
		r = 0;
	int again = 0;
	for (size_t k = 0; k < n && r == 0; k++) {
		struct batch_item *it = &b->items[at[k]];
		if (!v[k].name)
			continue;   /* gone: its ENOENT record stands */
		int opened = reader_item_reopen(rc, budget, b, it, v[k].name);
		if (opened < 0) {
			r = opened;
			reader_item_fail(it, r);   /* the run ends; the batch's other items stand */
		}
		again += opened == 1;
	}
	xfree(v);
	xfree(at);
	return r < 0 ? r : again;
}

int reader_batch_retry_renamed(struct reader_common *rc, struct budget *budget, struct batch *b)
{
	/* A client that changes flags as fast as ingest reads can rename a
	 * message again between the listing and its open: it is looked for
	 * once more, a listing a round, while some were; past the rounds its
	 * ENOENT record stands. */
	for (int round = 0; round < READER_RENAME_ROUNDS; round++) {
		int r = reader_batch_find_renamed(rc, budget, b);
		if (r <= 0)
			return r;
	}
	return 0;
}
