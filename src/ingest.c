/* ingest_run(): builds the stages in order, runs them, tears them down in
 * reverse.
 *
 *            (this thread)              ingest-parse + ingest-wN            ingest-out
 *   walk ─▶ reader ──[full]──▶ pool_run(batch): parse + format ──[done]──▶ writev
 *              ▲                                                            │
 *              └──────────[free batches] + budget_release(bytes) ◀──────────┘
 *
 * Only this thread touches the ring (it creates it).  The parse thread is
 * the pool's caller and worker 0; it parses batch k while the reader reads
 * k+1 and the writer writes k-1.  When batch k alone would not give every
 * worker something to do (a batch of one or two large messages: batches
 * close at --batch-bytes), the batches already waiting behind it join the
 * same pool run (see parse_main).  Batches travel in order through FIFO
 * channels, so records leave in input order.  PIPELINE_DEPTH batch structs
 * circulate; the byte budget bounds their bytes.
 *
 * The counted window (README, "Syscall accounting"): with --stats, the
 * counters are reset and a marker faccessat("/.ingest-stats-window-begin")
 * is issued before anything else of the run; the end marker follows the last
 * write, before threads are joined and descriptors closed.  strace and the
 * counters must agree on every syscall name of core/sys.h between them. */
#include "core/clock.h"
#include "ingest.h"
#include "options.h"
#include "core/stats.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "io/walk.h"
#include "io/reader.h"
#include "io/state.h"
#include "mail/mail.h"
#include "mail/mbox.h"
#include "emit/emit.h"
#include "sched/batch.h"
#include "sched/chan.h"
#include "sched/parallelism.h"
#include "sched/pool.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define PIPELINE_DEPTH 4

static atomic_int ingest_stop;

void ingest_interrupt(void)
{
	atomic_store(&ingest_stop, 1);
}

struct run {
	const struct ingest_options *o;
	struct ingest_report *rep;
	struct walk *walk;
	struct state *state;          /* --state, or NULL */
	struct reader *reader;
	struct pool *pool;
	unsigned workers;
	unsigned threads;             /* --threads, or the machine's parallelism */
	struct mail_ctx **mctx;       /* one per worker */
	struct chan free_batches, full_batches, done_batches;
	struct budget budget;
	struct batch *batches[PIPELINE_DEPTH];
	/* the batches the pool is parsing: group[k] holds items
	 * [group_first[k], group_first[k] + group[k]->n) of the pool run */
	struct batch *group[PIPELINE_DEPTH];
	size_t group_first[PIPELINE_DEPTH];
	unsigned group_n;
	int out_fd;
	bool out_regular;             /* a file we may truncate on failure */
	uint64_t out_bytes;           /* bytes of whole records written */
	atomic_int failed;            /* -errno of the first fatal error */
	atomic_bool output_closed;
	_Atomic uint32_t writer_done;   /* futex word: the writer has drained */
	atomic_int writer_exited;       /* ...and made its last syscall */
	pthread_t parse_thread, write_thread;
	bool parse_started, write_started;
	uint64_t parse_wait_ns, write_wait_ns;
	uint64_t progress_last;       /* ns of the last progress line */
	uint64_t total;               /* inputs, when known before the end (lists) */
};


/* The first fatal error wins; every stage then stops at its next step. */
static void run_fail(struct run *run, int err, const char *what, const char *arg)
{
	int expected = 0;
	if (atomic_compare_exchange_strong(&run->failed, &expected, err))
		report_set_error(run->rep, err, "%s%s%s%s", what, arg ? " '" : "", arg ? arg : "",
		                 arg ? "'" : "");
	budget_cancel(&run->budget);
}

/* Parses one message and formats its record into out. */
static void run_record(struct run *run, unsigned w, struct record rec, const uint8_t *data,
                       size_t len, struct dynbuf *out, uint32_t *count,
                       struct state_entry *state_entry)
{
	(*count)++;
	if (state_entry && rec.io.reason == RECORD_IO)
		state_mark_unread(state_entry);
	struct mail_message msg;
	if (run->o->parse && rec.io.reason == RECORD_NONE && data) {
		int r = mail_parse(run->mctx[w], &run->o->mail, data, len, &msg);
		if (r < 0) {
			rec.io.reason = RECORD_INTERNAL;
			rec.io.err = -r;
			rec.io.message = "parser scratch limit reached";
		} else {
			rec.mail = &msg;
			if (state_entry)
				state_set_message_id(state_entry, msg.message_id);
			if (!msg.is_mail) {
				rec.io.reason = RECORD_NOT_MAIL;
				rec.io.message = "not a mail message";
			}
		}
	}
	if (emit_record(&run->o->emit, &rec, out) < 0) {
		/* A record too large to format still gets a record. */
		rec.mail = NULL;
		rec.io.reason = RECORD_INTERNAL;
		rec.io.err = ENOMEM;
		rec.io.message = "record could not be formatted";
		emit_record(&run->o->emit, &rec, out);
	}
}

static bool run_one_message_file(const struct record_io *io)
{
	const char *p = io->path.n ? io->path.p : io->root.p;
	size_t n = io->path.n ? io->path.n : io->root.n;
	return mbox_never_split(io->maildir, p, n);
}

/* Turns one input into its records in the worker's output buffer: one,
 * or one per message of an mbox read whole. */
static void run_item(void *ctx, size_t i, unsigned w)
{
	struct run *run = ctx;
	unsigned g = run->group_n - 1;
	while (g && i < run->group_first[g])
		g--;
	struct batch *b = run->group[g];
	i -= run->group_first[g];
	struct batch_item *it = &b->items[i];
	struct dynbuf *out = &b->out[w];
	size_t off = out->len;
	it->out_records = 0;
	/* The batch owns its bytes: unquoting ">From " in place is ours to do. */
	uint8_t *data = (uint8_t *)(uintptr_t)it->data;
	struct record rec = { .io = it->io, .mail = NULL };
	if (it->no_output) {
		/* a streamed file: its messages are records of later batches */
	} else if (rec.io.in_mbox && data) {
		run_record(run, w, rec, data, mbox_unquote(data, it->len), out, &it->out_records, NULL);
	} else if (run->o->parse && data && rec.io.reason == RECORD_NONE &&
	           mbox_is_separator(data, it->len) && !run_one_message_file(&rec.io)) {
		size_t pos = 0, next;
		struct mbox_span m;
		rec.io.in_mbox = true;
		while (pos < it->len && mbox_next(data, it->len, pos, true, &m, &next)) {
			rec.io.offset = m.start;
			rec.io.length = m.end - m.start;
			run_record(run, w, rec, data + m.start, mbox_unquote(data + m.start, m.end - m.start), out,
			           &it->out_records, NULL);
			if (next <= pos)
				break;
			pos = next;
		}
	} else if (rec.io.kind != RECORD_MESSAGE) {
		run_record(run, w, rec, NULL, 0, out, &it->out_records, NULL);
	} else {
		run_record(run, w, rec, data, it->len, out, &it->out_records, it->state);
	}
	it->out_worker = w;
	it->out_off = off;
	it->out_len = out->len - off;
}

static uint64_t batch_bytes(const struct batch *b)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < b->n; i++)
		bytes += b->items[i].len;
	return bytes;
}

/* One pool run per group of batches.  A group starts with the next batch
 * (waiting for it if need be) and takes the batches already queued behind
 * it, without waiting, for as long as pool_wants_more() says the byte gate
 * would give the group fewer workers than --threads: a batch of one 768 KiB
 * message otherwise gets one worker whatever the thread count.  A batch that is not there yet
 * is never waited for, so grouping adds no latency and no syscall.  Records
 * keep their order: items are numbered across the group in batch order, and
 * the batches go to the writer in that order. */
static void *parse_main(void *arg)
{
	struct run *run = arg;
	sys_set_thread_name("ingest-parse");
	for (;;) {
		uint64_t t0 = clock_now_ns();
		struct batch *b = chan_pop(&run->full_batches);
		run->parse_wait_ns += clock_now_ns() - t0;
		if (!b)
			break;
		size_t items = b->n;
		uint64_t bytes = batch_bytes(b);
		run->group[0] = b;
		run->group_first[0] = 0;
		run->group_n = 1;
		while (run->group_n < PIPELINE_DEPTH && pool_wants_more(run->pool, items, bytes) &&
		       (b = chan_try_pop(&run->full_batches))) {
			run->group[run->group_n] = b;
			run->group_first[run->group_n] = items;
			run->group_n++;
			items += b->n;
			bytes += batch_bytes(b);
		}
		unsigned used = pool_run(run->pool, items, bytes, run_item, run);
		for (unsigned g = 0; g < run->group_n; g++) {
			run->group[g]->workers_used = used;
			chan_push(&run->done_batches, run->group[g]);
		}
	}
	chan_close(&run->done_batches);
	return NULL;
}

/* Never leave half a record (issue 7): after a failed write of which
 * `wrote` bytes went out, cut a regular file back to the last whole record.
 * A file we opened started empty; a stdout redirected to a file (`> out`,
 * `>> out`) started wherever the shell left it, so it is cut at the current
 * offset minus what this attempt wrote.  fstat and lseek are made here, on
 * the failure path only, never in a run that succeeds.  A pipe cannot be
 * mended, and a closed pipe has no reader to mislead. */
static void output_cut(struct run *run, uint64_t wrote)
{
	if (run->out_regular) {
		sys_ftruncate(run->out_fd, run->out_bytes);
		return;
	}
	struct stat st;
	if (sys_fstat(run->out_fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	int64_t off = sys_lseek(run->out_fd, 0, SEEK_CUR);
	if (off >= 0 && (uint64_t)off >= wrote)
		sys_ftruncate(run->out_fd, (uint64_t)off - wrote);
}

/* Writes all of buf; -errno on failure with *written set to what went. */
static int write_all(struct run *run, struct iovec *iov, int n, uint64_t *written)
{
	*written = 0;
	while (n > 0) {
		ssize_t w = sys_writev(run->out_fd, iov, n);
		if (w == -EINTR)
			continue;
		if (w < 0)
			return (int)w;
		*written += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int write_batch(struct run *run, struct batch *b)
{
	struct iovec iov[IOV_MAX];
	int n = 0;
	for (size_t i = 0; i <= b->n; i++) {
		if (i < b->n) {
			struct batch_item *it = &b->items[i];
			char *p = b->out[it->out_worker].p + it->out_off;
			if (!it->out_len)
				continue;
			/* consecutive records of one worker are one iovec */
			if (n && (char *)iov[n - 1].iov_base + iov[n - 1].iov_len == p) {
				iov[n - 1].iov_len += it->out_len;
				continue;
			}
			if (n < IOV_MAX) {
				iov[n++] = (struct iovec){ p, it->out_len };
				continue;
			}
		}
		if (!n)
			continue;
		uint64_t want = 0, wrote;
		for (int k = 0; k < n; k++)
			want += iov[k].iov_len;
		int r = write_all(run, iov, n, &wrote);
		if (r < 0) {
			if (wrote)
				output_cut(run, wrote);
			return r;
		}
		run->out_bytes += want;
		n = 0;
		if (i < b->n)
			i--;   /* the record that did not fit starts the next writev */
	}
	return 0;
}

/* The progress line: redrawn at most ten times a second by the writer,
 * which knows what is done; nothing at all unless asked for (main.c asks
 * when stderr is a terminal, a check it makes before the run). */
static void progress_draw(struct run *run, bool final)
{
	uint64_t now = clock_now_ns();
	if (!final && now - run->progress_last < 100000000u)
		return;
	run->progress_last = now;
	uint64_t bytes, errors;
	uint64_t files = report_records(run->rep, &bytes, &errors);
	double secs = (double)(now - report_started_ns(run->rep)) / 1e9;
	char line[160];
	int n = snprintf(line, sizeof(line), "\r\033[K%llu files, %.1f MB, %.0f files/s, %llu errors",
	                 (unsigned long long)files, (double)bytes / 1e6,
	                 secs > 0 ? (double)files / secs : 0.0, (unsigned long long)errors);
	if (run->total && files < run->total && files && n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", ETA %.0f s",
		              secs / (double)files * (double)(run->total - files));
	if (final)
		n = snprintf(line, sizeof(line), "\r\033[K");
	if (n > 0)
		sys_write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void *write_main(void *arg)
{
	struct run *run = arg;
	bool writing = true;
	sys_set_thread_name("ingest-out");
	for (;;) {
		uint64_t t0 = clock_now_ns();
		struct batch *b = chan_pop(&run->done_batches);
		run->write_wait_ns += clock_now_ns() - t0;
		if (!b)
			break;
		report_count_batch(run->rep, b);
		if (writing && !atomic_load(&run->failed)) {
			int r = write_batch(run, b);
			if (r == -EPIPE) {
				atomic_store(&run->output_closed, true);
				budget_cancel(&run->budget);
				writing = false;
			} else if (r < 0) {
				run_fail(run, r, "cannot write the output", run->o->output ? run->o->output : "stdout");
				writing = false;
			}
		}
		if (run->o->progress)
			progress_draw(run, false);
		/* the reader resets it: its arenas were allocated on the reader's
		 * thread, and freeing them there keeps glibc's arena lock (an
		 * uncounted futex) out of the way.  Pushed before the budget is
		 * released, so that a reader woken by the release finds it and
		 * frees its memory before reading more. */
		uint64_t held = b->budget;
		b->budget = 0;
		chan_push(&run->free_batches, b);
		budget_release(&run->budget, held);
	}
	if (run->o->progress)
		progress_draw(run, true);
	atomic_store(&run->writer_done, 1);
	sys_futex_wake((uint32_t *)(uintptr_t)&run->writer_done, 1);
	/* the wake above is the writer's last counted syscall: the end marker
	 * waits for this, so that strace and the counters see the same calls */
	atomic_store(&run->writer_exited, 1);
	return NULL;
}

static int run_open_output(struct run *run)
{
	run->out_fd = STDOUT_FILENO;
	if (run->o->output && strcmp(run->o->output, "-")) {
		int fd = sys_openat(AT_FDCWD, run->o->output,
		                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			run_fail(run, fd, "cannot open the output", run->o->output);
			return fd;
		}
		run->out_fd = fd;
		run->out_regular = true;
	}
	return 0;
}

static int run_setup_inputs(struct run *run)
{
	const struct ingest_options *o = run->o;
	for (size_t i = 0; i < o->n_paths; i++)
		if (walk_add_path(run->walk, o->paths[i]) < 0)
			return -ENOMEM;
	if (o->files_from) {
		int fd = STDIN_FILENO;
		if (strcmp(o->files_from, "-")) {
			fd = sys_openat(AT_FDCWD, o->files_from, O_RDONLY | O_CLOEXEC, 0);
			if (fd < 0) {
				run_fail(run, fd, "cannot open the list", o->files_from);
				return fd;
			}
		}
		int r = walk_add_list(run->walk, fd, o->null_separated);
		if (r >= 0 && !o->n_paths && !o->shard_n)
			run->total = walk_total(run->walk);
		if (fd != STDIN_FILENO)
			sys_close(fd);
		if (r < 0) {
			run_fail(run, r, "cannot read the list", o->files_from);
			return r;
		}
	}
	return 0;
}

static int run_start(struct run *run)
{
	const struct ingest_options *o = run->o;
	unsigned threads = run->threads;
	run->pool = pool_new(threads);
	if (!run->pool)
		return -ENOMEM;
	run->workers = threads;
	run->mctx = xcalloc(threads, sizeof(*run->mctx));
	if (!run->mctx)
		return -ENOMEM;
	if (o->parse)
		for (unsigned i = 0; i < threads; i++)
			if (!(run->mctx[i] = mail_ctx_new()))
				return -ENOMEM;
	for (int i = 0; i < PIPELINE_DEPTH; i++) {
		if (!(run->batches[i] = batch_new(threads)))
			return -ENOMEM;
		chan_push(&run->free_batches, run->batches[i]);
	}
	if (o->emit.format == EMIT_TSV) {
		/* The header row is the first record of the output. */
		struct dynbuf h;
		dynbuf_init(&h, 0);
		int r = emit_tsv_header(&o->emit, &h);
		uint64_t wrote;
		struct iovec iov = { h.p, h.len };
		if (r == 0 && h.len)
			r = write_all(run, &iov, 1, &wrote);
		if (r == 0)
			run->out_bytes += h.len;
		dynbuf_release(&h);
		if (r < 0 && r != -EPIPE)
			return r;
	}
	int r = sys_thread_create(&run->write_thread, NULL, write_main, run);
	if (r < 0)
		return r;
	run->write_started = true;
	r = sys_thread_create(&run->parse_thread, NULL, parse_main, run);
	if (r < 0)
		return r;
	run->parse_started = true;
	return 0;
}

int ingest_run(const struct ingest_options *o, struct ingest_report **report)
{
	struct run run_storage, *run = &run_storage;
	memset(run, 0, sizeof(*run));
	run->o = o;
	run->out_fd = -1;
	*report = run->rep = report_new();
	if (!run->rep)
		return -ENOMEM;
	chan_init(&run->free_batches);
	chan_init(&run->full_batches);
	chan_init(&run->done_batches);
	budget_init(&run->budget, o->max_inflight);
	atomic_store(&ingest_stop, 0);

	/* Probed before the window: pthread_once wakes with a futex of glibc's. */
	run->threads = o->threads ? o->threads : parallelism_default();
	if (o->stats) {
		stats_reset_all();
		sys_faccessat(AT_FDCWD, "/.ingest-stats-window-begin", F_OK);
	}
	report_start(run->rep);
	int r = 0;
	if (!(run->walk = walk_new()))
		r = -ENOMEM;
	else if (o->shard_n)
		walk_set_shard(run->walk, o->shard_k, o->shard_n);
	if (r == 0)
		r = run_setup_inputs(run);
	if (r == 0)
		r = run_open_output(run);
	struct reader_stats rst;
	struct reader_options ro = o->reader;
	if (r == 0 && o->state && o->emit.format == EMIT_TSV) {
		r = -EINVAL;
		run_fail(run, r, "--state reports deletions and renames, which TSV cannot carry: use jsonl or es-bulk", NULL);
	}
	if (r == 0 && o->state) {
		r = state_load(o->state, &run->state);
		if (r < 0)
			run_fail(run, r, "cannot load the state", o->state);
		ro.state = run->state;
	}
	if (r == 0) {
		r = reader_new(&ro, &run->reader, &rst);
		if (r < 0 && ro.backend == READER_URING && rst.fallback[0]) {
			/* "io_uring is unavailable (io_uring_setup): Operation not
			 * permitted": the step from the fallback text, the errno once */
			char what[224];
			snprintf(what, sizeof(what), "io_uring is unavailable (%.*s)",
			         (int)strcspn(rst.fallback, ":"), rst.fallback);
			run_fail(run, r, what, NULL);
		} else if (r < 0) {
			/* not io_uring's fault: the sync reader (chosen, or fallen
			 * back to) or the uring reader's own memory */
			run_fail(run, r, ro.backend == READER_URING ? "cannot set up the io_uring reader"
			                                            : "cannot set up the reader", NULL);
		}
	}
	if (r == 0)
		r = run_start(run);
	if (r < 0 && !atomic_load(&run->failed))
		run_fail(run, r, "cannot start the pipeline", NULL);
	if (r == 0) {
		struct reader_io io = {
			.walk = run->walk, .budget = &run->budget,
			.free_batches = &run->free_batches, .full_batches = &run->full_batches,
			.stop = &ingest_stop,
			.keep_bytes = 2 * o->reader.batch_bytes + (1 << 20),
		};
		r = reader_run(run->reader, &io);
		if (r < 0)
			run_fail(run, r, "reading stopped", NULL);
	} else {
		chan_close(&run->full_batches);
	}
	if (!run->parse_started)
		chan_close(&run->done_batches);
	/* The writer is the last stage: when it has drained, the counted
	 * window ends.  Waiting for it on our own futex keeps glibc's join
	 * (an uncounted futex) after the end marker. */
	if (run->write_started) {
		while (atomic_load(&run->writer_done) == 0)
			sys_futex_wait((uint32_t *)(uintptr_t)&run->writer_done, 0);
		while (!atomic_load(&run->writer_exited))
			;   /* a few instructions: the wake syscall returning */
	}
	if (o->stats)
		sys_faccessat(AT_FDCWD, "/.ingest-stats-window-end", F_OK);
	if (run->parse_started)
		pthread_join(run->parse_thread, NULL);
	if (run->write_started)
		pthread_join(run->write_thread, NULL);
	report_finish(run->rep, run->reader, run->walk, run->pool, &run->budget,
	              run->parse_wait_ns, run->write_wait_ns, atomic_load(&run->full_batches.waited_ns));
	report_set_flags(run->rep, atomic_load(&run->output_closed), atomic_load(&ingest_stop));

	/* The new state replaces the old only after a complete run: an
	 * interrupted or failed one leaves the next run the whole job. */
	if (run->state && !atomic_load(&run->failed) && !atomic_load(&ingest_stop) &&
	    !atomic_load(&run->output_closed)) {
		int sr = state_save(run->state, o->state);
		if (sr < 0) {
			run_fail(run, sr, "cannot save the state", o->state);
		}
	}
	state_free(run->state);
	pool_free(run->pool);
	if (run->mctx)
		for (unsigned i = 0; i < run->workers; i++)
			mail_ctx_free(run->mctx[i]);
	xfree(run->mctx);
	for (int i = 0; i < PIPELINE_DEPTH; i++)
		batch_free(run->batches[i]);
	reader_free(run->reader);
	walk_free(run->walk);
	if (run->out_regular)
		sys_close(run->out_fd);
	int failed = atomic_load(&run->failed);
	return failed ? failed : 0;
}
