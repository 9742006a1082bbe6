/* ingest_run(): builds the stages in order, runs them, tears them down in
 * reverse.
 *
 *            (this thread)               ingest-parse (+ ingest-wN)
 *   walk ─▶ reader ──[full]──▶ pipeline/parse_stage.c ─▶ pipeline/writer.c
 *              ▲                                                 │
 *              └──────[free batches] + budget_release(bytes) ◀───┘
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
#include "core/sys.h"
#include "core/xalloc.h"
#include "io/walk.h"
#include "io/reader.h"
#include "io/state.h"
#include "index/index.h"
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
#include <sys/stat.h>
#include <signal.h>
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

struct run {
	const struct ingest_options *o;
	struct ingest_report *rep;
	struct walk *walk;
	struct state *state;          /* --state, or NULL */
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

/* The first fatal error wins; every stage then stops at its next step. */
static void run_fail(struct run *run, int err, const char *what, const char *arg)
{
	int expected = 0;
	if (atomic_compare_exchange_strong(&run->failed, &expected, err))
		report_set_error(run->rep, err, "%s%s%s%s", what, arg ? " '" : "", arg ? arg : "",
		                 arg ? "'" : "");
	budget_cancel(&run->budget);
}

static void run_fail_cb(void *ctx, int err, const char *what, const char *arg)
{
	run_fail(ctx, err, what, arg);
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
			run->writer.total = walk_total(run->walk);
		if (fd != STDIN_FILENO)
			sys_close(fd);
		if (r < 0) {
			run_fail(run, r, "cannot read the list", o->files_from);
			return r;
		}
	}
	return 0;
}

/* --index=FILE: the database is the state (README, "The index"), so
 * --state is refused rather than kept in two places; records go into the
 * database in the one format it reads, so an output and another format
 * are refused too. */
static int run_open_index(struct run *run, struct reader_options *ro)
{
	const struct ingest_options *o = run->o;
	const char *clash = o->state ? "--state (the index keeps its own state)"
	                  : o->output ? "--output (records go into the index)"
	                  : o->emit.format != EMIT_JSONL ? "--format (records go into the index)"
	                  : o->emit.fields != EMIT_FIELDS_ALL ? "--fields (the index keeps every field)"
	                  : !o->parse ? "--io-only (the index is of parsed messages)" : NULL;
	if (clash) {
		run_fail(run, -EINVAL, "--index cannot be combined with", clash);
		return -EINVAL;
	}
	const char *why;
	int r = index_open(o->index, &run->index, &why);
	if (r == 0 && (r = index_load_state(run->index, &run->state)) < 0)
		why = "cannot read the index's state";
	if (r < 0) {
		char what[256];
		snprintf(what, sizeof(what), "%s: %s", o->index, why ? why : "cannot open the index");
		run_fail(run, r, what, NULL);
		return r;
	}
	ro->state = run->state;
	run->writer.index = run->index;
	run->writer.index_path = o->index;
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

static void run_on_wait(void *ctx)
{
	run_spawn(ctx);
}

static int run_start(struct run *run)
{
	const struct ingest_options *o = run->o;
	unsigned threads = run->threads;
	struct parse_stage *ps = &run->parse;
	ps->parse = o->parse;
	ps->mail = &o->mail;
	ps->emit = &o->emit;
	ps->visit = o->visit;
	ps->visit_ctx = o->visit_ctx;
	ps->full = &run->full_batches;
	ps->writer = &run->writer;
	int r = parse_stage_init(ps, threads);
	if (r < 0)
		return r;
	for (int i = 0; i < LIMIT_PIPELINE_DEPTH; i++) {
		if (!(run->batches[i] = batch_new(threads)))
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
	return 0;
}

static int run_once(const struct ingest_options *o, struct ingest_report **report)
{
	struct run run_storage, *run = &run_storage;
	memset(run, 0, sizeof(*run));
	run->o = o;
	run->writer = (struct writer){
		.path = o->output, .free_batches = &run->free_batches,
		.budget = &run->budget, .failed = &run->failed, .fail = run_fail_cb, .fail_ctx = run,
		.progress = o->progress, .progress_ctx = o->progress_ctx, .fd = -1,
		.given_fd = o->output_fd, .sink = o->sink, .sink_ctx = o->sink_ctx,
	};
	*report = run->rep = report_new();
	if (!run->rep)
		return -ENOMEM;
	run->writer.rep = run->rep;
	chan_init(&run->free_batches);
	chan_init(&run->full_batches);
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
	struct reader_stats rst;
	struct reader_options ro = o->reader;
	/* before any input is looked at: a database that is not ours, or
	 * cannot be written, stops the run here */
	if (r == 0 && o->index)
		r = run_open_index(run, &ro);
	if (r == 0)
		r = run_setup_inputs(run);
	if (r == 0)
		r = writer_open(&run->writer);   /* with --index: stdout, never written */
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
	if (run->parse.pool && !run->spawn_tried) {
		/* the whole input fitted one batch (or none): parsed and
		 * written here, no thread started */
		run->full_batches.push_hook = NULL;
		run->budget.wait_hook = NULL;
		if (run->held)
			parse_stage_inline(&run->parse, run->held);
		run->held = NULL;
		writer_end(&run->writer);
	} else if (run->parse.pool && !run->parse.started) {
		writer_end(&run->writer);
	}
	/* The writer is the last stage: when it has drained, the counted
	 * window ends. */
	writer_wait_drained(&run->writer);
	if (o->stats)
		sys_faccessat(AT_FDCWD, "/.ingest-stats-window-end", F_OK);
	parse_stage_join(&run->parse);
	writer_finish(&run->writer);
	bool output_closed = atomic_load(&run->writer.output_closed);
	report_finish(run->rep, run->reader, run->walk, run->parse.pool, &run->budget,
	              run->parse.wait_ns, 0,
	              atomic_load(&run->full_batches.waited_ns));
	report_set_flags(run->rep, output_closed, atomic_load(&ingest_stop));

	/* The new state replaces the old only after a complete run: an
	 * interrupted or failed one leaves the next run the whole job. */
	if (run->state && o->state && !atomic_load(&run->failed) && !atomic_load(&ingest_stop) &&
	    !output_closed) {
		int sr = state_save(run->state, o->state);
		if (sr < 0) {
			run_fail(run, sr, "cannot save the state", o->state);
		}
	}
	if (run->index) {
		struct index_stats is;
		index_stats_get(run->index, &is);
		report_set_index(run->rep, is.transactions, is.messages, is.errors, is.deleted, is.renamed,
		                 is.ns);
	}
	index_close(run->index);
	state_free(run->state);
	parse_stage_release(&run->parse);
	for (int i = 0; i < LIMIT_PIPELINE_DEPTH; i++)
		batch_free(run->batches[i]);
	reader_free(run->reader);
	walk_free(run->walk);
	int failed = atomic_load(&run->failed);
	return failed ? failed : 0;
}

int ingest_run(const struct ingest_options *o, struct ingest_report **report)
{
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
