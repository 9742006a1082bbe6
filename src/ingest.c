/* SPDX-License-Identifier: MIT */
/* ingest_run(): builds the stages in order, runs them, tears them down in
 * reverse.
 *
 *            (this thread)               ingest-parse (+ ingest-wN)
 *   walk ─▶ reader ──[full]──▶ pipeline/parse_stage.c ─▶ pipeline/writer.c
 *            │ ▲                       ▲                         │
 *            │ └──────[free batches] + budget_release(bytes) ◀───┘
 *            └── about to sleep: the pool's last worker ─┘
 *
 * Only this thread touches the ring (it creates it).  Batches travel in
 * order through FIFO channels, so records leave in input order.  The
 * thread that parses a batch also writes it: one handoff per batch each
 * way, not two.
 *
 * The parse thread starts late: the first full batch is held back
 * (run_on_full) until a second one comes or the reader is about to wait
 * for budget that only the held batch could give back (run_on_wait).  A
 * run whose input fits one batch therefore never starts a thread: when
 * the reader is done, this thread parses and writes that batch itself, on
 * one worker (README, "Decisions and known limits").  If the thread cannot
 * be started, this thread parses and writes every batch as it is sent.
 *
 * LIMIT_PIPELINE_DEPTH batch structs circulate; the byte budget bounds
 * their bytes.  The file map of every stage is in docs/ARCHITECTURE.md.
 *
 * The counted window (docs/ARCHITECTURE.md, "Syscall accounting"): with
 * --stats, the counters are reset and a marker
 * faccessat("/.ingest-stats-window-begin") is issued before anything else
 * of the run; the end marker follows the last write, before threads are
 * joined and descriptors closed.  strace and the counters must agree on
 * every syscall name of core/sys.h between them. */
#include "ingest.h"
#include "options.h"
#include "core/stats.h"
#include "core/dynbuf.h"
#include "core/hash.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "io/walk.h"
#include "mail/mbox.h"
#include "io/reader.h"
#include "io/state.h"
#include "index/index.h"
#include "index/db_io.h"
#include "emit/emit.h"
#include "sched/batch.h"
#include "sched/budget.h"
#include "sched/chan.h"
#include "sched/parallelism.h"
#include "pipeline/parse_stage.h"
#include "pipeline/writer.h"
#include "pipeline/report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static atomic_int ingest_stop;
/* One run at a time: the syscall counters and ingest_stop are the process's. */
static atomic_flag ingest_running = ATOMIC_FLAG_INIT;

void ingest_interrupt(void)
{
	atomic_store(&ingest_stop, 1);
}

void ingest_interrupt_clear(void)
{
	atomic_store(&ingest_stop, 0);
}

/* A child of fork() made during a run has none of its threads: the run
 * is not its, and a run of its own may start. */
static void ingest_forked(void)
{
	atomic_flag_clear(&ingest_running);
	atomic_store(&ingest_stop, 0);
}

static void ingest_at_fork(void)
{
	pthread_atfork(NULL, NULL, ingest_forked);
}

struct run {
	const struct ingest_options *o;
	struct ingest_report *rep;
	struct walk *walk;
	struct state *state;          /* --state, or NULL */
	int state_lock;               /* its lock's descriptor, or -1 */
	int stdin_fd;                 /* `-`: the memory file of standard input, or -1 */
	struct index *index;          /* --index, or NULL */
	struct reader *reader;
	struct parse_stage parse;
	struct writer writer;
	unsigned threads;             /* --threads, or the machine's parallelism */
	struct chan free_batches, full_batches;
	struct batch *held;           /* the first full batch, before the parse thread */
	bool spawn_tried;             /* run_spawn() has run */
	struct budget budget;
	struct batch *batches[LIMIT_PIPELINE_DEPTH];
	atomic_int failed;            /* -errno of the first fatal error */
};

/* The first fatal error wins, its text fmt's (then strerror(-shown)
 * unless shown is 0), whole however long the paths it names; every stage
 * then stops at its next step. */
static void run_failv(struct run *run, int err, int shown, bool refused, const char *fmt, va_list ap)
{
	int expected = 0;
	if (atomic_compare_exchange_strong(&run->failed, &expected, err)) {
		report_set_errorv(run->rep, shown, fmt, ap);
		if (refused)
			report_set_refused(run->rep);
	}
	budget_cancel(&run->budget);
}

__attribute__((format(printf, 3, 4)))
static void run_failf(struct run *run, int err, const char *fmt, ...)
{
	/* -EINVAL before any input was read: the run was refused for what it
	 * was asked, which the caller must change (the command exits 2); the
	 * message says why, and strerror's "Invalid argument" after it would
	 * only repeat it less clearly */
	bool refused = err == -EINVAL && !run->reader;
	va_list ap;
	va_start(ap, fmt);
	run_failv(run, err, refused ? 0 : err, refused, fmt, ap);
	va_end(ap);
}

/* run_failf's "what 'arg'", arg NULL for what alone. */
static void run_fail(struct run *run, int err, const char *what, const char *arg)
{
	run_failf(run, err, "%s%s%s%s", what, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
}

static void run_fail_cb(void *ctx, int err, const char *what, const char *arg)
{
	run_fail(ctx, err, what, arg);
}

/* The state's failures the user must act on (exit 2 in the command):
 * another run holds it, it is corrupt, a symlink or no regular file, or
 * its directory cannot take the new state. */
static bool run_state_refusal(int err)
{
	return err == -EAGAIN || err == -EINVAL || err == -ELOOP || err == -EACCES || err == -EPERM ||
	       err == -EROFS || err == -ENOENT || err == -ENOTDIR || err == -EISDIR || err == -ENOTSUP;
}

/* A failure of the state: fmt's text, then strerror(-shown) unless shown
 * is 0. */
__attribute__((format(printf, 4, 5)))
static void run_fail_state(struct run *run, int err, int shown, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	run_failv(run, err, shown, false, fmt, ap);
	va_end(ap);
	if (run_state_refusal(err))
		report_set_refused(run->rep);
}

static int run_bind_state(struct run *run);

/* --state: locked, checked and loaded before any input is read, so that a
 * second run, a corrupt file or an unwritable directory stops the run
 * before it has done anything.  1 when a stopping signal came while
 * waiting for the lock (the run then does nothing), 0, or -errno. */
static int run_open_state(struct run *run)
{
	const struct ingest_options *o = run->o;
	char why[256];
	if (o->emit.format == EMIT_TSV) {
		run_fail(run, -EINVAL, "--state reports deletions and renames, which TSV cannot carry: use jsonl or es-bulk", NULL);
		return -EINVAL;
	}
	int r = run->state_lock = state_lock(o->state, o->state_wait, &ingest_stop, why, sizeof(why));
	if (r == -EINTR && atomic_load(&ingest_stop))
		return 1;
	if (r < 0) {
		if (!why[0])
			run_fail_state(run, r, r, "cannot use the state '%s'", o->state);
		else if (r == -EAGAIN)
			run_fail_state(run, r, 0, "state '%s' is %s (--wait-state waits for it)", o->state, why);
		else
			run_fail_state(run, r, 0, "state '%s': %s", o->state, why);
		return r;
	}
	r = state_load(o->state, o->state_reset, &run->state);
	if (r < 0) {
		const char *bad = state_load_error(run->state);
		if (!bad)
			run_fail_state(run, r, r, "cannot use the state '%s'", o->state);
		else if (r == -EINVAL)
			run_fail_state(run, r, 0, "state '%s' is corrupt: %s (--state-reset starts it afresh)",
			               o->state, bad);
		else
			run_fail_state(run, r, 0, "state '%s' is %s", o->state, bad);
		return r;
	}
	r = run_bind_state(run);
	if (r < 0 && r != -EINVAL)
		run_fail(run, r, "cannot use the state", o->state);
	if (r < 0)
		return r;
	/* what a killed run's journal says is taken in before anything is
	 * judged; this run's is written before its records go out */
	r = state_journal_open(run->state, o->state, !o->state_reset);
	if (r < 0) {
		const char *bad = state_load_error(run->state);
		if (bad) {
			run_fail_state(run, r, 0, "state '%s' is %s", o->state, bad);
		} else {
			run_fail(run, r, "cannot use the state's journal", o->state);
		}
		return r;
	}
	run->writer.state = run->state;
	return 0;
}

/* The --files-from list, read whole before the reader starts.  1 when a
 * stopping signal or an interrupt came while it waited for a pipe or a
 * FIFO that nobody wrote to (the run then does nothing), 0, or -errno. */
static int run_setup_inputs(struct run *run)
{
	const struct ingest_options *o = run->o;
	if (o->files_from) {
		int fd = STDIN_FILENO;
		if (strcmp(o->files_from, "-")) {
			/* O_NONBLOCK: a FIFO's open would wait for a writer where
			 * nothing looks at the stop; its reads wait in polls
			 * (sys_read_stoppable), and a regular file ignores it */
			fd = sys_openat(AT_FDCWD, o->files_from, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
			if (fd < 0) {
				run_fail(run, fd, "cannot open the list", o->files_from);
				return fd;
			}
		}
		int r = walk_add_list(run->walk, fd, o->null_separated, &ingest_stop);
		if (r >= 0 && !o->n_paths && !o->shard_n)
			run->writer.total = walk_total(run->walk);
		if (fd != STDIN_FILENO)
			sys_close(fd);
		if (r == -EINTR && atomic_load(&ingest_stop))
			return 1;
		if (r < 0) {
			run_fail(run, r, "cannot read the list", o->files_from);
			return r;
		}
	}
	return 0;
}

/* A state file or an index made by a run whose records differ (what,
 * path): refused before any input is read, the first difference named
 * (why), with what to do instead (hint). */
static void run_refuse_made(struct run *run, const char *what, const char *path, const char *why,
                            const char *hint)
{
	atomic_store(&run->failed, -EINVAL);
	report_set_refused(run->rep);
	report_set_error(run->rep, 0, "cannot use the %s '%s': %s (%s)", what, path, why, hint);
}

/* The options that decide what a message's record holds, which a state
 * file's run (run_describe) and an index's settings (run_bind_index) both
 * keep: their names, and their values in this run. */
enum { RUN_ROW_SETTINGS = 3 };
static const char *const run_row_names[RUN_ROW_SETTINGS] = { "no-text", "max-text", "headers" };

struct run_row_values {
	char text[RUN_ROW_SETTINGS][24];
	const char *v[RUN_ROW_SETTINGS];
};

static void run_row_values(const struct ingest_options *o, struct run_row_values *rv)
{
	snprintf(rv->text[0], sizeof(rv->text[0]), "%d", o->emit.no_text);
	snprintf(rv->text[1], sizeof(rv->text[1]), "%zu", o->mail.max_text);
	snprintf(rv->text[2], sizeof(rv->text[2]), "%d", o->emit.headers);
	for (int i = 0; i < RUN_ROW_SETTINGS; i++)
		rv->v[i] = rv->text[i];
}

/* The index keeps what decides its rows, as a state file does: a
 * --no-text run after a full one would otherwise leave the text of every
 * message it does not read again, and a full run after a --no-text one
 * would leave those messages unsearchable. */
static int run_bind_index(struct run *run)
{
	const struct ingest_options *o = run->o;
	struct run_row_values rv;
	run_row_values(o, &rv);
	char why[256];
	int r = index_bind_settings(run->index, RUN_ROW_SETTINGS, run_row_names, rv.v, why, sizeof(why));
	if (r == 1) {
		run_refuse_made(run, "index", o->index, why, "index into another file");
		return -EINVAL;
	}
	if (r < 0) {
		const char *e = index_error(run->index);
		run_failf(run, r, "%s: cannot keep the index's settings: %s", o->index, e ? e : "SQLite");
	}
	return r;
}

/* --index=FILE: the database is the state (README, "The index"), so
 * --state is refused rather than kept in two places; records go into the
 * database in the one format it reads, so an output (a path, the
 * library's descriptor or sink, which would get nothing) and another
 * format are refused too. */
static int run_open_index(struct run *run, struct reader_options *ro)
{
	const struct ingest_options *o = run->o;
	const char *clash = o->state ? "--state (the index keeps its own state)"
	                  : o->output ? "--output (records go into the index)"
	                  : o->sink ? "a sink (records go into the index)"
	                  : o->output_fd >= 0 ? "an output descriptor (records go into the index)"
	                  : o->emit.format != EMIT_JSONL ? "--format (records go into the index)"
	                  : o->emit.fields != EMIT_FIELDS_ALL ? "--fields (the index keeps every field)"
	                  : !o->parse ? "--io-only (the index is of parsed messages)" : NULL;
	if (clash) {
		run_fail(run, -EINVAL, "--index cannot be combined with", clash);
		return -EINVAL;
	}
	const char *why;
	db_io_reset();
	int r = index_open(o->index, &run->index, &why);
	if (r == 0 && (r = index_load_state(run->index, &run->state)) < 0)
		why = "cannot read the index's state";
	if (r < 0) {
		run_failf(run, r, "%s: %s", o->index, why ? why : "cannot open the index");
		/* a database or directory this user cannot write, or a path
		 * longer than SQLite opens: the caller's to change, as for the
		 * state (exit 2) */
		if (r == -EACCES || r == -EPERM || r == -EROFS || r == -ENAMETOOLONG)
			report_set_refused(run->rep);
		return r;
	}
	if ((r = run_bind_index(run)) < 0)
		return r;
	ro->state = run->state;
	run->writer.index = run->index;
	return 0;
}

/* Starts the parse thread, once, and queues the held batch for it; if the
 * thread cannot start, this thread parses the held batch now, and
 * run_on_full every later one. */
static void run_spawn(struct run *run)
{
	if (run->spawn_tried)
		return;
	run->spawn_tried = true;
	struct batch *held = run->held;
	run->held = NULL;
	/* set before the thread exists, which reads it at its end */
	run->writer.threaded = true;
	if (parse_stage_start(&run->parse) == 0) {
		run->full_batches.push_hook = NULL;
		if (held)
			chan_push(&run->full_batches, held);
	} else {
		run->writer.threaded = false;
		if (held)
			parse_stage_inline(&run->parse, held);
	}
}

static bool run_on_full(void *ctx, struct batch *b)
{
	struct run *run = ctx;
	if (!run->spawn_tried && !run->held) {
		run->held = b;
		return true;
	}
	run_spawn(run);
	if (run->parse.started)
		return false;   /* queued behind the held batch */
	parse_stage_inline(&run->parse, b);
	return true;
}

/* The reader about to sleep on the budget: the parse thread must run,
 * and the reader parses with it meanwhile if it can. */
static bool run_on_wait(void *ctx)
{
	struct run *run = ctx;
	run_spawn(run);
	/* the held batch, queued just now below `full`'s wake_at */
	chan_flush(&run->full_batches);
	return parse_stage_help(&run->parse);
}

/* The reader about to sleep on a free batch. */
static bool run_free_ready(void *ctx)
{
	struct run *run = ctx;
	return chan_any(&run->free_batches);
}

static bool run_on_idle(void *ctx)
{
	struct run *run = ctx;
	return parse_stage_help_poll(&run->parse, run_free_ready, run);
}

/* A pool run opened while the reader sleeps on one of the two: it looks
 * again, and helps (run_on_wait, run_on_idle). */
static void run_wake_helper(void *ctx)
{
	struct run *run = ctx;
	chan_nudge(&run->free_batches);
	budget_nudge(&run->budget);
}

/* A place this run's walk judged (walk_judged), for the index. */
static enum index_place run_place(void *ctx, struct str root, struct str path)
{
	struct run *run = ctx;
	struct str shown;
	if (!walk_judged(run->walk, root, path, &shown))
		return INDEX_PLACE_OTHER;
	return walk_named(run->walk, root, path) ? INDEX_PLACE_NAMED : INDEX_PLACE_JUDGED;
}

/* A file this run met, for the index (state_met_file). */
static bool run_met(void *ctx, uint64_t dev, uint64_t ino)
{
	const struct run *run = ctx;
	return run->state && state_met_file(run->state, dev, ino);
}

/* The closing deletions (state_orphans): one change record an id, with
 * no root or path (a delete needs its id alone).  Only es-bulk asks for
 * them (emit_errors_written), which a visitor (the Python module's, whose
 * records are dicts) never formats. */
struct run_orphans {
	const struct run *run;
	struct dynbuf *out;
	size_t count;
};

static int run_orphan(void *ctx, uint64_t id)
{
	struct run_orphans *c = ctx;
	const struct run *run = c->run;
	struct record rec = { .io = { .kind = RECORD_DELETED, .id = id, .known = true } };
	int r = parse_stage_emit(&run->o->emit, run->parse.visit, run->parse.visit_ctx, &rec, c->out);
	c->count += r >= 0;
	return r < 0 ? r : 0;
}

/* writer_end's last records: where errors are no documents (es-bulk
 * without --es-errors), a complete run deletes the documents that no
 * file of their id stands for any more and that no record deleted (all
 * copies under one unique name turned errors at once: io/state.h).  A run
 * that stopped has not judged every file: the next one decides. */
static int run_last(void *ctx, struct dynbuf *out, size_t *count)
{
	struct run *run = ctx;
	if (!run->state || atomic_load(&ingest_stop) || atomic_load(&run->writer.output_closed))
		return 0;
	struct run_orphans c = { run, out, 0 };
	int r = state_orphans(run->state, run_orphan, &c);
	*count = c.count;
	return r;
}

/* Standard input and output, when the run reads or writes them, must be
 * open before the run opens anything: closed, fd 0 or 1 is the next
 * descriptor made (the state's lock, the index's database, the ring, the
 * memory file of `-`).  Input read from there would be an empty list, and
 * a run reading it would delete every message the state or the index
 * knew; records written there would go into the state's lock file, while
 * the state said them delivered.  0, or -EBADF with the run failed. */
static int run_std_open(struct run *run, int fd, const char *what, const char *arg)
{
	if (fcntl(fd, F_GETFD) >= 0)
		return 0;
	run_fail(run, -EBADF, what, arg);
	return -EBADF;
}

static int run_stdin_open(struct run *run, const char *what, const char *arg)
{
	return run_std_open(run, STDIN_FILENO, what, arg);
}

/* Standard input taken on fd (its content's hash h), or r < 0 why not: the
 * walk's input, or the run failed.  1 when a stopping signal or an
 * interrupt came meanwhile (the run then does nothing), 0, or -errno. */
static int run_stdin_taken(struct run *run, int fd, uint64_t h, int r)
{
	if (r == 0) {
		run->stdin_fd = fd;
		r = walk_add_stdin(run->walk, fd, h);
	} else {
		close(fd);
	}
	if (r == -EINTR && atomic_load(&ingest_stop))
		return 1;
	if (r < 0 && r != -ENOMEM)
		run_fail(run, r, "cannot read standard input", NULL);
	return r;
}

/* `ingest - < archive.mbox`: standard input that is a regular file, read
 * from its start, needs no copy (which would hold a whole archive in
 * memory): a duplicate of fd 0 is the input, opened again by the reader
 * as /dev/fd/N, and hashed for its id by a pass of reads at offsets (fd
 * 0's own offset is left as it was).  0, -errno, or -ENOTSUP for any
 * other standard input (a pipe, a terminal, a file read part-way), which
 * is copied. */
static int run_stdin_file(struct run *run)
{
	struct stat st;
	if (fstat(STDIN_FILENO, &st) < 0 || !S_ISREG(st.st_mode) || lseek(STDIN_FILENO, 0, SEEK_CUR) != 0)
		return -ENOTSUP;
	int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -ENOTSUP;
	char buf[65536];
	uint64_t h = HASH_FNV1A_INIT, off = 0;
	ssize_t n;
	while ((n = sys_pread_full(fd, buf, sizeof(buf), off)) > 0) {
		h = hash_fnv1a(h, buf, (size_t)n);
		off += (uint64_t)n;
		if (atomic_load(&ingest_stop))
			break;
	}
	int r = n < 0 ? (int)n : atomic_load(&ingest_stop) ? -EINTR : 0;
	return run_stdin_taken(run, fd, h, r);
}

/* `ingest -`: standard input is copied whole into a memory file, which the
 * reader opens as /dev/fd/N, a regular file of known size (a pipe has
 * neither), and hashed for its id.  The file is the run's, closed at its
 * end: the process's fd 0 is left as it was (a library never takes a
 * descriptor it was not given).  Before the counted window, like the
 * roots' realpath.  1 when a stopping signal or an interrupt came while it
 * waited for a writer (the run then does nothing), 0, or -errno. */
static int run_take_stdin(struct run *run)
{
	int fd = run_stdin_open(run, "cannot read standard input", NULL);
	if (fd < 0)
		return fd;
	fd = run_stdin_file(run);
	if (fd != -ENOTSUP)
		return fd;
	fd = memfd_create("ingest-stdin", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[65536];
	uint8_t head[4096];
	size_t head_n = 0;
	uint64_t h = HASH_FNV1A_INIT, total = 0;
	int r = 0;
	bool may_block = sys_may_block(STDIN_FILENO), keep = true;
	for (;;) {
		ssize_t n = sys_read_stoppable(STDIN_FILENO, buf, sizeof(buf), may_block, &ingest_stop);
		if (n <= 0) {
			r = (int)n;
			break;
		}
		h = hash_fnv1a(h, buf, (size_t)n);
		size_t more = (size_t)n < sizeof(head) - head_n ? (size_t)n : sizeof(head) - head_n;
		memcpy(head + head_n, buf, more);
		head_n += more;
		/* Past --max-size, what is no mbox is a too-large record that
		 * is never read: the rest is hashed, for the id, and counted,
		 * for the record's size (the file's length set at the end,
		 * with no memory behind it), not kept.  An mbox is kept whole,
		 * to be streamed. */
		if (keep && total + (uint64_t)n > run->o->reader.max_size && !mbox_is_separator(head, head_n))
			keep = false;
		if (keep && (r = sys_write_full(fd, buf, (size_t)n)) < 0)
			break;
		total += (uint64_t)n;
	}
	if (r == 0 && !keep)
		r = sys_ftruncate(fd, (off_t)total);
	return run_stdin_taken(run, fd, h, r);
}

static int run_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What decides the records a run emits, for --state (state_bind_run): a
 * state made by one run and read by another that emits other records
 * would report their difference as changes, or none at all (a state of a
 * --no-text run made a full run emit nothing).  The roots are the
 * resolved ones, sorted and each once: a root spelled another way, or
 * given twice, is the same run. */
static int run_describe(const struct run *run, struct dynbuf *d)
{
	const struct ingest_options *o = run->o;
	const struct emit_options *e = &o->emit;
	size_t n = 0;
	const char **roots = xcalloc(o->n_paths + 1, sizeof(*roots));
	if (!roots)
		return -ENOMEM;
	for (size_t i = 0; walk_source_base(run->walk, i) || i < o->n_paths; i++)
		if (walk_source_base(run->walk, i))
			roots[n++] = walk_source_base(run->walk, i);
	qsort(roots, n, sizeof(*roots), run_cmp_str);
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!i || strcmp(roots[i], roots[i - 1]))
			r = dynbuf_printf(d, "root=%s\n", roots[i]);
	xfree(roots);
	static const char *const formats[] = { "jsonl", "es-bulk", "tsv" };
	if (r == 0)
		r = dynbuf_printf(d, "files-from=%d\nshard=%u/%u\nformat=%s\nfields=", o->files_from != NULL,
		                  o->shard_k, o->shard_n, formats[e->format]);
	for (size_t i = 0; r == 0 && i < e->n_order; i++)
		r = dynbuf_printf(d, "%s%s", i ? "," : "", emit_field_name((enum emit_field)e->order[i]));
	struct run_row_values rv;
	run_row_values(o, &rv);
	if (r == 0)
		r = dynbuf_printf(d, "\nparse=%d", o->parse);
	for (int i = 0; r == 0 && i < RUN_ROW_SETTINGS; i++)
		r = dynbuf_printf(d, "\n%s=%s", run_row_names[i], rv.v[i]);
	if (r == 0)
		r = dynbuf_printf(d, "\nes-index=%s", e->es_index ? e->es_index : "");
	return r;
}

static int run_bind_state(struct run *run)
{
	struct dynbuf d;
	dynbuf_init(&d, 0);
	char why[512];
	int r = run_describe(run, &d);
	if (r == 0)
		r = state_bind_run(run->state, d.p, d.len, why, sizeof(why));
	dynbuf_release(&d);
	if (r == -EINVAL)
		run_refuse_made(run, "state", run->o->state, why, "give this run its own state file");
	return r;
}

static int run_start(struct run *run, uint64_t batch_bytes)
{
	const struct ingest_options *o = run->o;
	unsigned threads = run->threads;
	struct parse_stage *ps = &run->parse;
	ps->parse = o->parse;
	ps->mail = &o->mail;
	ps->emit = &o->emit;
	ps->visit = o->visit;
	ps->visit_ctx = o->visit_ctx;
	ps->visit_thread = o->visit_thread;
	ps->full = &run->full_batches;
	ps->writer = &run->writer;
	/* The reader parses as the pool's last worker whenever it would sleep
	 * (docs/ARCHITECTURE.md, "The pipeline and its threads"): on two
	 * CPUs there is no ingest-w1 to post to and to put back to sleep. */
	ps->helper_wake = run_wake_helper;
	ps->helper_wake_ctx = run;
	ps->fail = run_fail_cb;
	ps->fail_ctx = run;
	ps->batch_bytes = batch_bytes;
	ps->max_size = o->reader.max_size;
	int r = parse_stage_init(ps, threads);
	if (r < 0)
		return r;
	for (int i = 0; i < LIMIT_PIPELINE_DEPTH; i++) {
		if (!(run->batches[i] = batch_new()))
			return -ENOMEM;
		chan_push(&run->free_batches, run->batches[i]);
	}
	if (o->emit.format == EMIT_TSV) {
		/* The header row is the first record of the output. */
		r = writer_write_header(&run->writer, &o->emit);
		if (r < 0 && r != -EPIPE)
			return r;
	}
	run->full_batches.push_hook = run_on_full;
	run->full_batches.hook_ctx = run;
	run->budget.wait_hook = run_on_wait;
	run->budget.wait_ctx = run;
	run->free_batches.idle = run_on_idle;
	run->free_batches.idle_ctx = run;
	return 0;
}

/* The run's memory when the process exits right after it (the command):
 * the batches' arenas, the workers' output buffers, the parse contexts, the ring and
 * the walk, about twenty mappings of glibc's allocator.  Unmapping them one
 * by one is work the exit does anyway, in one pass over the address space,
 * and costs a syscall each (0.002 a message at 10,000 files, a tenth of the
 * syscall budget; docs/ARCHITECTURE.md, "Syscall accounting"); compilers skip
 * freeing at exit for the same reason.  Kept reachable here, so that a leak
 * checker sees memory still in use, not lost (its pointers into this
 * stack frame are never followed again).  The threads are joined and the
 * output closed as before. */
static struct run run_left_to_exit;

static void run_leave_to_exit(struct run *run)
{
	parse_stage_stop(&run->parse);
	memcpy(&run_left_to_exit, run, sizeof(*run));
}

static int run_once(const struct ingest_options *o, struct ingest_report **report)
{
	struct run run_storage, *run = &run_storage;
	memset(run, 0, sizeof(*run));
	run->o = o;
	run->state_lock = -1;
	run->stdin_fd = -1;
	run->writer = (struct writer){
		.path = o->output, .free_batches = &run->free_batches,
		.budget = &run->budget, .failed = &run->failed, .fail = run_fail_cb, .fail_ctx = run,
		.progress = o->progress, .progress_ctx = o->progress_ctx, .fd = -1,
		.given_fd = o->output_fd, .sink = o->sink, .sink_ctx = o->sink_ctx,
		.split_bytes = o->split_bytes, .es_bulk = o->emit.format == EMIT_ES_BULK,
		.index_path = o->index,
		.durable = o->state != NULL,
		.last = o->state && !emit_errors_written(&o->emit) ? run_last : NULL, .last_ctx = run,
	};
	*report = run->rep = report_new();
	if (!run->rep)
		return -ENOMEM;
	run->writer.rep = run->rep;
	chan_init(&run->free_batches);
	chan_init(&run->full_batches);
	budget_init(&run->budget, o->max_inflight);
	/* A run forgets an interrupt meant for an earlier one, unless its
	 * host cleared the flag itself before starting it (interrupt_kept):
	 * then one sent in between is this run's. */
	if (!o->interrupt_kept)
		ingest_interrupt_clear();

	/* Probed before the window: pthread_once wakes with a futex of glibc's. */
	run->threads = o->threads ? o->threads : parallelism_default();
	/* Roots are resolved before it too: realpath(3) is libc's lstat and
	 * readlink, not the I/O the window accounts for. */
	int r = 0;
	if (!(run->walk = walk_new()))
		r = -ENOMEM;
	if (r == 0 && writer_to_stdout(&run->writer))
		r = run_std_open(run, STDOUT_FILENO, "cannot write the output", "stdout");
	bool have_stdin = false;
	for (size_t i = 0; r == 0 && i < o->n_paths; i++) {
		if (strcmp(o->paths[i], "-")) {
			r = walk_add_path(run->walk, o->paths[i]);
			continue;
		}
		if (have_stdin || (o->files_from && !strcmp(o->files_from, "-"))) {
			r = -EINVAL;
			run_fail(run, r, have_stdin ? "standard input can be read once: '-' given twice"
			                            : "standard input can be read once: '-' and --files-from=- "
			                              "exclude each other", NULL);
			break;
		}
		have_stdin = true;
		r = run_take_stdin(run);
	}
	if (r == 0 && o->files_from && !strcmp(o->files_from, "-"))
		r = run_stdin_open(run, "cannot read the list", "-");
	for (size_t i = 0; r == 0 && i < o->n_excludes; i++)
		r = walk_add_exclude(run->walk, o->excludes[i]);
	if (o->stats) {
		stats_reset_all();
		sys_faccessat(AT_FDCWD, "/.ingest-stats-window-begin", F_OK);
	}
	report_start(run->rep);
	if (r == 0 && o->shard_n)
		walk_set_shard(run->walk, o->shard_k, o->shard_n);
	struct reader_stats rst;
	struct reader_options ro = o->reader;
	ro.max_inflight = o->max_inflight;
	ro.error_documents = emit_errors_written(&o->emit);
	reader_options_fit(&ro);
	/* before any input is looked at: a database that is not ours, or
	 * cannot be written, stops the run here (and --state with it is refused) */
	if (r == 0 && o->index)
		r = run_open_index(run, &ro);
	/* r == 1: stopped while waiting for the state's lock; nothing runs */
	if (r == 0 && o->state)
		r = run_open_state(run);
	if (r == 0)
		r = run_setup_inputs(run);
	if (r == 0 && o->split_bytes && (!o->output || !strcmp(o->output, "-") || o->emit.format == EMIT_TSV)) {
		r = -EINVAL;
		run_fail(run, r, "--split-bytes writes files PREFIX.000, PREFIX.001, ...: it needs -o PREFIX "
		         "and jsonl or es-bulk", NULL);
	} else if (r == 0 && o->split_bytes && (o->output_fd >= 0 || o->sink)) {
		/* the descriptor or the sink takes precedence over the output
		 * (include/ingest.h), and a descriptor the caller keeps is never
		 * closed to open the next file */
		r = -EINVAL;
		run_fail(run, r, "split-bytes writes files of its own: not to an output descriptor or a sink",
		         NULL);
	}
	if (r == 0)
		r = writer_open(&run->writer);   /* with --index: stdout, never written */
	if (run->state)
		ro.state = run->state;
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
		r = run_start(run, ro.batch_bytes);
	if (r < 0 && !atomic_load(&run->failed))
		run_fail(run, r, "cannot start the pipeline", NULL);
	if (r == 0) {
		struct reader_io io = {
			.walk = run->walk, .budget = &run->budget,
			.free_batches = &run->free_batches, .full_batches = &run->full_batches,
			.stop = &ingest_stop,
			.batch_bytes = ro.batch_bytes,
		};
		r = reader_run(run->reader, &io);
		if (r < 0)
			run_fail(run, r, "reading stopped", NULL);
	} else {
		chan_close(&run->full_batches);
	}
	if (run->parse.pool && !run->spawn_tried) {
		/* the whole input fitted one batch (or none): parsed and
		 * written here, no thread started */
		run->full_batches.push_hook = NULL;
		run->budget.wait_hook = NULL;
		if (run->held)
			parse_stage_inline(&run->parse, run->held);
		run->held = NULL;
		writer_end(&run->writer);
	} else if (!run->parse.pool || !run->parse.started) {
		/* no parse thread to end the writing: this thread does, also
		 * for a run refused or stopped before its pipeline started, so
		 * that the progress callback hears of the end (done 1), as
		 * include/ingest.h says */
		writer_end(&run->writer);
	}
	/* The writer is the last stage: when it has drained, the counted
	 * window ends. */
	writer_wait_drained(&run->writer);
	if (o->stats)
		sys_faccessat(AT_FDCWD, "/.ingest-stats-window-end", F_OK);
	parse_stage_join(&run->parse);
	writer_finish(&run->writer);
	/* a sink that hands records on (the Python module's scan) may hold
	 * some its consumer has not taken yet: the state says them delivered
	 * only once they are */
	if (run->state && o->state && o->sink && o->sink_taken && !atomic_load(&run->failed) &&
	    !atomic_load(&ingest_stop) && o->sink_taken(o->sink_ctx) == -EPIPE)
		atomic_store(&run->writer.output_closed, true);
	bool output_closed = atomic_load(&run->writer.output_closed);
	report_finish(run->rep, run->reader, run->walk, run->parse.pool, &run->budget,
	              run->parse.wait_ns, 0,
	              atomic_load(&run->full_batches.waited_ns));
	report_set_flags(run->rep, output_closed, atomic_load(&ingest_stop));
	report_set_written(run->rep, run->writer.records);

	/* A complete run's state replaces the old one.  One that stopped early
	 * (interrupted, its output closed) saves the old one widened by what
	 * its written records may have put in an index, which the next run
	 * deletes if it is gone by then (io/state.h); it has not judged every
	 * file, so nothing else changes.  A failed run, or one that started
	 * afresh (--state-reset, the old entries not loaded), keeps the old
	 * state. */
	bool complete = !atomic_load(&ingest_stop) && !output_closed;
	if (run->state && o->state && !atomic_load(&run->failed) && (complete || !o->state_reset)) {
		int sr = state_save(run->state, o->state, complete);
		if (sr < 0) {
			run_fail(run, sr, "cannot save the state", o->state);
		}
	}
	if (run->index) {
		/* what vanished in earlier runs goes only after a complete run:
		 * an interrupted one did not judge every place */
		int ir = 0;
		if (!atomic_load(&run->failed) && !atomic_load(&ingest_stop) &&
		    (ir = index_drop_vanished(run->index, run_place, run_met, run)) < 0)
			run_fail(run, ir, "cannot update the index", o->index);
		ir = index_finish(run->index);
		if (ir < 0)
			run_fail(run, ir, "cannot put the index in place", o->index);
		struct index_stats is;
		index_stats_get(run->index, &is);
		report_set_index(run->rep, is.transactions, is.messages, is.unchanged, is.errors, is.deleted,
		                 is.renamed, is.ns);
		/* the database's file operations, its closing checkpoint's
		 * included */
		index_close(run->index);
		run->index = NULL;
		struct db_io_counts io;
		db_io_get(&io);
		if (db_io_counting())
			report_set_index_io(run->rep, db_io_op_names, io.n, DB_IO__COUNT);
	}
	index_close(run->index);
	state_free(run->state);
	state_unlock(run->state_lock);
	if (o->process_ends) {
		run_leave_to_exit(run);
	} else {
		parse_stage_release(&run->parse);
		for (int i = 0; i < LIMIT_PIPELINE_DEPTH; i++)
			batch_free(run->batches[i]);
		reader_free(run->reader);
		walk_free(run->walk);
	}
	if (run->stdin_fd >= 0)
		close(run->stdin_fd);
	int failed = atomic_load(&run->failed);
	return failed ? failed : 0;
}

int ingest_run(const struct ingest_options *o, struct ingest_report **report)
{
	static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
	pthread_once(&fork_once, ingest_at_fork);
	if (atomic_flag_test_and_set(&ingest_running)) {
		*report = NULL;
		return -EBUSY;
	}
	int r = run_once(o, report);
	/* the run's threads have been joined and their counts are in the
	 * report: their counter blocks go */
	stats_reap();
	atomic_flag_clear(&ingest_running);
	return r;
}
