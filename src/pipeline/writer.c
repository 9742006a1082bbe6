/* SPDX-License-Identifier: MIT */
/* The writer stage: see writer.h.
 *
 * Never leave half a record.  A write that fails part-way cuts a regular
 * output back to the last whole record (output_cut); a pipe cannot be
 * mended, and a closed pipe has no reader to mislead.  The cut's fstat and
 * lseek are made on the failure path only, never in a run that succeeds. */
#include "pipeline/writer.h"
#include "core/clock.h"
#include "core/sys.h"
#include "emit/emit.h"
#include "index/index.h"
#include "sched/batch.h"
#include "pipeline/report.h"
#include "io/state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* Whether the output is a file the writer opens by name ("-" and no
 * name are the standard output). */
static bool output_named(const struct writer *w)
{
	return w->path && strcmp(w->path, "-") != 0;
}

/* A write, fsync or close of the output failed: one report, naming it as
 * the user gave it. */
static void output_failed(struct writer *w, int err)
{
	char name[32];
	if (w->given_fd >= 0)
		snprintf(name, sizeof(name), "fd %d", w->given_fd);
	w->fail(w->fail_ctx, err, "cannot write the output",
	        w->given_fd >= 0 ? name : output_named(w) ? w->path : "stdout");
}

/* After a failed write of which `wrote` bytes went out, cut a regular file
 * back to the last whole record.  A file we opened started empty; a stdout
 * redirected to a file (`> out`, `>> out`) started wherever the shell left
 * it, so it is cut at the current offset minus what this attempt wrote. */
static bool output_cut(struct writer *w, uint64_t wrote)
{
	if (w->regular)
		return sys_ftruncate(w->fd, w->split_bytes ? w->file_bytes : w->bytes) == 0;
	struct stat st;
	if (sys_fstat(w->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	int64_t off = sys_lseek(w->fd, 0, SEEK_CUR);
	return off >= 0 && (uint64_t)off >= wrote && sys_ftruncate(w->fd, (uint64_t)off - wrote) == 0;
}

/* What a write of records (a batch's, the TSV header row) came to: a
 * reader that went away (EPIPE, or a sink's -EPIPE) ends the writing as a
 * closed output, and the reading with it; another error fails the run,
 * naming the sink or the output. */
static void output_result(struct writer *w, int r)
{
	if (r == 0)
		return;
	if (r == -EPIPE) {
		atomic_store(&w->output_closed, true);
		budget_cancel(w->budget);
	} else if (w->sink) {
		w->fail(w->fail_ctx, r, "the sink failed", NULL);
	} else {
		output_failed(w, r);
	}
	w->writing = false;
}

/* Writes all of iov; -errno on failure with *written set to what went. */
static int write_all(struct writer *w, struct iovec *iov, int n, uint64_t *written)
{
	return sys_writev_full(w->fd, iov, n, written);
}

/* An item some of whose records went out (or were handed to a sink that
 * then said stop): its --state entry is marked, whose file a run that
 * stops early saves as one an index may now hold (state_save). */
static void item_reached(const struct batch_item *it)
{
	if (it->out_records)
		state_mark_written(it->state ? it->state : it->archive_state);
}

/* An item whose records all went out: counted (the report's "written")
 * and marked. */
static void item_out(struct writer *w, const struct batch_item *it)
{
	w->records += it->out_records;
	item_reached(it);
}

/* The sink's answer: a positive return is no errno, taken as EIO. */
static int sink_call(struct writer *w, const char *p, size_t len, size_t count)
{
	int r = w->sink(w->sink_ctx, p, len, count);
	return r > 0 ? -EIO : r;
}

/* The sink's call for one batch: its records in order, in one buffer.
 * Records of one worker that follow each other are contiguous already; a
 * batch that is one such run (every inline batch) goes without a copy. */
static int sink_batch(struct writer *w, struct batch *b)
{
	const char *first = NULL;
	size_t len = 0, count = 0;
	bool contiguous = true;
	dynbuf_reset(&w->sink_buf);
	for (size_t i = 0; i < b->n; i++) {
		struct batch_item *it = &b->items[i];
		count += it->out_records;
		if (!it->out_len)
			continue;
		const char *p = b->out[it->out_worker].p + it->out_off;
		if (contiguous && first && first + len != p) {
			contiguous = false;
			if (dynbuf_append(&w->sink_buf, first, len) < 0)
				return -ENOMEM;
		}
		if (!contiguous) {
			if (dynbuf_append(&w->sink_buf, p, it->out_len) < 0)
				return -ENOMEM;
		} else if (!first) {
			first = p;
		}
		len += it->out_len;
	}
	if (!contiguous)
		first = w->sink_buf.p;
	if (!count && !len)
		return 0;
	int r = sink_call(w, first, len, count);
	if (r == 0)
		w->bytes += len;
	for (size_t i = 0; i < b->n && (r == 0 || r == -EPIPE); i++) {
		/* -EPIPE: a sink that has seen enough may have kept this batch */
		if (r == 0)
			item_out(w, &b->items[i]);
		else
			item_reached(&b->items[i]);
	}
	return r;
}

/* A place in a group of batches: batch g, item i. */
struct group_pos {
	size_t g, i;
};

/* Moves p past the ends of batches (an empty one included) up to the
 * next item of the group of nb batches, or to { nb, 0 } past its last. */
static void group_pos_settle(struct batch *const *bs, size_t nb, struct group_pos *p)
{
	while (p->g < nb && p->i >= bs[p->g]->n) {
		p->g++;
		p->i = 0;
	}
}

/* The items from `from` up to `to` whose bytes all went out, of `wrote`
 * bytes written from `from` on (UINT64_MAX: all of them), counted
 * (item_out).  An item of several records (an mbox read whole) cut
 * part-way counts none. */
static void records_out(struct writer *w, struct batch *const *bs, struct group_pos from,
                        struct group_pos to, uint64_t wrote)
{
	for (struct group_pos p = from;; p.i++) {
		/* past ended batches, but not into batch to.g's end, which
		 * may be the group's */
		group_pos_settle(bs, to.g, &p);
		if (p.g == to.g && p.i >= to.i)
			break;
		const struct batch_item *it = &bs[p.g]->items[p.i];
		if (it->out_len > wrote) {
			if (wrote)
				item_reached(it);   /* a part of an mbox's records */
			break;
		}
		wrote -= it->out_len;
		item_out(w, it);
	}
}

/* The name of a split output's file number k. */
static int split_name(const struct writer *w, unsigned k, char name[PATH_MAX])
{
	int n = snprintf(name, PATH_MAX, "%s.%03u", w->path, k);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* Opens path.NNN, the next file of a split output. */
static int split_open(struct writer *w)
{
	char name[PATH_MAX];
	int r = split_name(w, w->file_no, name);
	int fd = r < 0 ? r : sys_openat(AT_FDCWD, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fd;
	w->fd = fd;
	w->file_bytes = 0;
	return 0;
}

/* The files an earlier run split its output into go when this run opens
 * its first, as -o truncates its file: left, PREFIX.001 of a run of three
 * files beside the PREFIX.000 of a run of one would be sent again by the
 * loop that sends PREFIX.[0-9]* (README), and bring back what this run
 * deleted.  They run from .001 without a gap; the first name missing
 * ends them. */
static int split_remove_stale(const struct writer *w)
{
	char name[PATH_MAX];
	for (unsigned k = 1; k < UINT_MAX; k++) {
		int r = split_name(w, k, name);
		if (r == 0)
			r = sys_unlinkat(AT_FDCWD, name, 0);
		if (r == -ENOENT)
			return 0;
		if (r < 0)
			return r;
	}
	return 0;
}

/* The run's state is saved after the writer finishes, and says which
 * messages were sent: a crash after its rename must not lose records that
 * still sat in the page cache, or the next run would not send them again
 * (README, "Incremental runs").  Only a regular file is synced: a pipe's or a
 * socket's reader keeps what it read, and /dev/null keeps nothing (fsync
 * fails on both with EINVAL).  An output the writer gave up on is failed
 * already. */
static int output_sync(struct writer *w)
{
	if (!w->durable || !w->writing || w->sink || w->index)
		return 0;
	struct stat st;
	int r = sys_fstat(w->fd, &st);
	if (r < 0 || !S_ISREG(st.st_mode))
		return r;
	return sys_fsync(w->fd);
}

static int split_next(struct writer *w)
{
	int r = output_sync(w);
	int c = sys_close(w->fd);
	w->fd = -1;
	if (r == 0)
		r = c;
	if (r < 0)
		return r;
	w->file_no++;
	return split_open(w);
}

/* Where the record after p[0..n) may start a new file: a line start, and
 * for _bulk an action line ({"index":, {"update":, {"delete":), never the
 * source line that belongs to the action before it. */
static bool split_boundary(const struct writer *w, const char *p, size_t n)
{
	if (!w->es_bulk)
		return true;
	return (n >= 9 && !memcmp(p, "{\"index\":", 9)) || (n >= 10 && !memcmp(p, "{\"update\":", 10)) ||
	       (n >= 10 && !memcmp(p, "{\"delete\":", 10));
}

/* One input's records into the split files: a file is closed before a
 * record that would take it past split_bytes. */
static int split_write(struct writer *w, const char *p, size_t n)
{
	while (n) {
		/* the longest run of whole records that fits the room left */
		uint64_t room = w->split_bytes > w->file_bytes ? w->split_bytes - w->file_bytes : 0;
		size_t take = 0, first = 0;
		for (size_t at = 0; at < n;) {
			const char *nl = memchr(p + at, '\n', n - at);
			size_t end = nl ? (size_t)(nl - p) + 1 : n;
			if (end < n && !split_boundary(w, p + end, n - end)) {
				at = end;
				continue;
			}
			if (!first)
				first = end;
			if (end > room)
				break;
			take = end;
			at = end;
		}
		if (!take && w->file_bytes) {
			int r = split_next(w);
			if (r < 0)
				return r;
			continue;
		}
		if (!take)
			take = first;   /* one record larger than a file: a file alone */
		struct iovec iov = { (void *)(uintptr_t)p, take };
		uint64_t wrote;
		int r = write_all(w, &iov, 1, &wrote);
		if (r < 0) {
			if (wrote)
				output_cut(w, wrote);
			return r;
		}
		w->bytes += take;
		w->file_bytes += take;
		p += take;
		n -= take;
	}
	return 0;
}

/* The split and sink outputs, a batch at a time. */
static int write_batch(struct writer *w, struct batch *b)
{
	if (w->sink)
		return sink_batch(w, b);
	for (size_t i = 0; i < b->n; i++) {
		struct batch_item *it = &b->items[i];
		int r = it->out_len ? split_write(w, b->out[it->out_worker].p + it->out_off, it->out_len) : 0;
		if (r < 0)
			return r;
		item_out(w, it);
	}
	return 0;
}

/* The records of a group of batches, in order, in as few writev as
 * IOV_MAX allows: a group is the batches one pool run parsed together
 * (parse_stage.c), all ready at once, so writing them one call each only
 * cost calls. */
static int write_group(struct writer *w, struct batch *const *bs, size_t nb)
{
	if (w->sink || w->split_bytes) {
		for (size_t g = 0; g < nb; g++) {
			int r = write_batch(w, bs[g]);
			if (r < 0)
				return r;
		}
		return 0;
	}
	struct iovec iov[IOV_MAX];
	int n = 0;
	struct group_pos from = { 0, 0 };   /* the first item of the writev being built */
	struct group_pos p = { 0, 0 };
	for (;;) {
		group_pos_settle(bs, nb, &p);
		bool end = p.g == nb;
		if (!end) {
			struct batch *b = bs[p.g];
			struct batch_item *it = &b->items[p.i];
			char *at = b->out[it->out_worker].p + it->out_off;
			if (!it->out_len) {
				p.i++;
				continue;
			}
			/* consecutive records of one worker are one iovec */
			if (n && (char *)iov[n - 1].iov_base + iov[n - 1].iov_len == at) {
				iov[n - 1].iov_len += it->out_len;
				p.i++;
				continue;
			}
			if (n < IOV_MAX) {
				iov[n++] = (struct iovec){ at, it->out_len };
				p.i++;
				continue;
			}
		}
		if (n) {
			uint64_t want = 0, wrote;
			for (int k = 0; k < n; k++)
				want += iov[k].iov_len;
			int r = write_all(w, iov, n, &wrote);
			if (r < 0) {
				/* a file cut back keeps nothing of this writev; a
				 * pipe keeps what its reader took */
				if (wrote && !output_cut(w, wrote))
					records_out(w, bs, from, p, wrote);
				return r;
			}
			w->bytes += want;
			records_out(w, bs, from, p, UINT64_MAX);
			n = 0;
			from = p;   /* the record that did not fit starts the next writev */
		}
		if (end)
			return 0;
	}
}

/* --state's journal (io/state.h): what a run that stops early would save
 * for the records of these batches, appended before any of them goes out,
 * so that the run after one killed reads their files again.  A streamed
 * archive's messages are one entry, with their offsets, for each run of
 * them. */
/* The journal's entry for the run of archive's messages gathered in
 * journal_offs, which it empties. */
static int journal_messages(struct writer *w, const struct state_entry *archive)
{
	const uint64_t *offs = (const uint64_t *)(const void *)w->journal_offs.p;
	int r = state_journal_messages(&w->journal, archive, offs, w->journal_offs.len / sizeof(*offs));
	dynbuf_reset(&w->journal_offs);
	return r;
}

static int journal_group(struct writer *w, struct batch *const *bs, size_t nb)
{
	dynbuf_reset(&w->journal);
	dynbuf_reset(&w->journal_offs);
	const struct state_entry *archive = NULL;
	int r = 0;
	for (size_t g = 0; g < nb && r == 0; g++) {
		for (size_t i = 0; i < bs[g]->n && r == 0; i++) {
			const struct batch_item *it = &bs[g]->items[i];
			if (!it->out_records)
				continue;
			if (archive && it->archive_state != archive) {
				r = journal_messages(w, archive);
				archive = NULL;
			}
			if (r == 0 && it->archive_state) {
				archive = it->archive_state;
				r = dynbuf_append(&w->journal_offs, &it->io.offset, sizeof(it->io.offset));
			} else if (r == 0 && it->state) {
				r = state_journal_record(&w->journal, it->state);
			}
		}
	}
	if (r == 0 && archive)
		r = journal_messages(w, archive);
	return r == 0 ? state_journal_write(w->state, &w->journal) : r;
}

/* Progress: told at most ten times a second by the writer, which knows
 * what is done; nothing at all unless the embedder asked (the command asks
 * when stderr is a terminal, a check it makes before the run). */
static void progress_tell(struct writer *w, bool final)
{
	uint64_t now = clock_now_ns();
	if (!final && now - w->progress_last < 100000000u)
		return;
	w->progress_last = now;
	uint64_t bytes = w->held_bytes, errors = w->held_errors, files = w->held_inputs;
	if (w->writing)
		files = report_records(w->rep, &bytes, &errors);
	/* a run refused before it began has no start: 0 ns */
	uint64_t t0 = report_started_ns(w->rep);
	w->progress(w->progress_ctx, files, bytes, errors, w->total, t0 ? now - t0 : 0, final);
}

void writer_put(struct writer *w, struct batch *const *bs, size_t n)
{
	if (w->writing)
		w->held_inputs = report_records(w->rep, &w->held_bytes, &w->held_errors);
	for (size_t g = 0; g < n; g++)
		report_count_batch(w->rep, bs[g]);
	if (w->writing && !atomic_load(w->failed) && w->index) {
		/* the sink: one transaction per batch, rolled back whole on
		 * failure (ENOSPC, EIO), so the next run resumes */
		for (size_t g = 0; g < n && w->writing; g++) {
			int r = index_add_batch(w->index, bs[g]);
			if (r < 0) {
				char what[320];
				snprintf(what, sizeof(what), "cannot write the index (%s)",
				         index_error(w->index) ? index_error(w->index) : "SQLite");
				w->fail(w->fail_ctx, r, what, w->index_path);
				w->writing = false;
			}
		}
	} else if (w->writing && !atomic_load(w->failed)) {
		int r = w->state ? journal_group(w, bs, n) : 0;
		if (r < 0) {
			w->fail(w->fail_ctx, r, "cannot write the state's journal", NULL);
			w->writing = false;
		} else {
			output_result(w, write_group(w, bs, n));
		}
	}
	if (w->progress)
		progress_tell(w, false);
	/* the reader resets them: their arenas were allocated on the
	 * reader's thread, and freeing them there keeps glibc's arena lock
	 * (an uncounted futex) out of the way.  Pushed before the budget is
	 * released, so that a reader woken by the release finds them and
	 * frees their memory before reading more. */
	for (size_t g = 0; g < n; g++) {
		uint64_t held = bs[g]->budget;
		bs[g]->budget = 0;
		chan_push(w->free_batches, bs[g]);
		budget_release(w->budget, held);
	}
}

/* The records of `last`, written as a batch's are (to the sink, the split
 * files or the output), while nothing has stopped the writing. */
static void write_last(struct writer *w)
{
	if (!w->last || !w->writing || atomic_load(w->failed) || w->index)
		return;
	struct dynbuf out;
	dynbuf_init(&out, 0);
	size_t count = 0;
	int r = w->last(w->last_ctx, &out, &count);
	if (r < 0) {
		w->fail(w->fail_ctx, r, "cannot format the closing records", NULL);
		w->writing = false;
	} else if (out.len) {
		uint64_t wrote = 0;
		struct iovec iov = { out.p, out.len };
		r = w->sink ? sink_call(w, out.p, out.len, count)
		  : w->split_bytes ? split_write(w, out.p, out.len)
		  : write_all(w, &iov, 1, &wrote);
		if (r == 0 && !w->split_bytes)
			w->bytes += out.len;
		if (r == 0)
			w->records += count;
		else if (!w->sink && !w->split_bytes && wrote)
			output_cut(w, wrote);
		output_result(w, r);
	}
	dynbuf_release(&out);
}

void writer_end(struct writer *w)
{
	write_last(w);
	if (w->progress)
		progress_tell(w, true);
	if (!w->threaded)
		return;
	atomic_store(&w->drained, 1);
	sys_futex_wake((uint32_t *)(uintptr_t)&w->drained, 1);
	/* the wake above is the writing thread's last counted syscall: the
	 * end marker waits for this, so that strace and the counters see the
	 * same calls */
	atomic_store(&w->exited, 1);
}

bool writer_to_stdout(const struct writer *w)
{
	return !w->sink && w->given_fd < 0 && !w->split_bytes && !w->index_path && !output_named(w);
}

int writer_open(struct writer *w)
{
	w->fd = STDOUT_FILENO;
	w->writing = true;
	dynbuf_init(&w->sink_buf, 0);
	dynbuf_init(&w->journal, 0);
	dynbuf_init(&w->journal_offs, 0);
	if (w->sink)
		return 0;
	if (w->given_fd >= 0) {
		w->fd = w->given_fd;
		return 0;
	}
	if (w->split_bytes) {
		int r = split_open(w);
		if (r < 0) {
			w->fail(w->fail_ctx, r, "cannot open the output", w->path);
			return r;
		}
		w->regular = true;
		r = split_remove_stale(w);
		if (r < 0)
			w->fail(w->fail_ctx, r, "cannot remove the files an earlier run split its output into",
			        w->path);
		return r;
	}
	if (output_named(w)) {
		int fd = sys_openat(AT_FDCWD, w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			w->fail(w->fail_ctx, fd, "cannot open the output", w->path);
			return fd;
		}
		w->fd = fd;
		w->regular = true;
	}
	return 0;
}

int writer_write_header(struct writer *w, const struct emit_options *eo)
{
	struct dynbuf h;
	dynbuf_init(&h, 0);
	int r = emit_tsv_header(eo, &h);
	if (r == 0 && h.len) {
		uint64_t wrote;
		struct iovec iov = { h.p, h.len };
		r = w->sink ? sink_call(w, h.p, h.len, 0) : write_all(w, &iov, 1, &wrote);
		if (r == 0)
			w->bytes += h.len;
		output_result(w, r);
	}
	dynbuf_release(&h);
	return r;
}

void writer_wait_drained(struct writer *w)
{
	if (!w->threaded)
		return;
	/* Our own futex rather than pthread_join: glibc's join makes an
	 * uncounted futex, which must fall after the end marker. */
	while (atomic_load(&w->drained) == 0)
		sys_futex_wait((uint32_t *)(uintptr_t)&w->drained, 0);
	while (!atomic_load(&w->exited))
		;   /* a few instructions: the wake syscall returning */
}

void writer_finish(struct writer *w)
{
	int r = output_sync(w);
	if (w->regular) {
		/* a close can report a write the kernel deferred (NFS, quotas) */
		int c = sys_close(w->fd);
		if (r == 0 && w->writing)
			r = c;
	}
	if (r < 0 && !atomic_load(w->failed))
		output_failed(w, r);
	w->regular = false;
	dynbuf_release(&w->sink_buf);
	dynbuf_release(&w->journal);
	dynbuf_release(&w->journal_offs);
}
