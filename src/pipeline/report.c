/* SPDX-License-Identifier: MIT */
/* The run's report: see report.h.  Counters are snapshotted at the end of
 * the counted window, so what --stats prints is what strace saw between the
 * markers (README, "Syscall accounting"). */
#include "core/clock.h"
#include "pipeline/report.h"
#include "core/dynbuf.h"
#include "core/stats.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "emit/emit.h"
#include "io/reader.h"
#include "io/walk.h"
#include "core/record.h"
#include "sched/batch.h"
#include "sched/budget.h"
#include "sched/chan.h"
#include "sched/pool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>

#define REPORT_SAMPLES 10

struct ingest_report {
	/* Why the run failed: error_text, whole, or, where that could not be
	 * allocated, error, a buffer of its own, cut to fit, so that running
	 * out of memory can still be told; "" and NULL if it did not. */
	char *error_text;
	char error[640];
	bool output_closed, interrupted;
	bool refused;                        /* a usage error found by the run */
	uint64_t t0, t1;                     /* monotonic ns */
	uint64_t records, kinds[RECORD__COUNT];
	uint64_t written;                    /* records whose bytes all went out */
	uint64_t bytes_in;
	struct reader_stats rs;
	struct walk_stats ws;
	struct pool_stats ps;
	uint64_t peak_inflight, budget_wait_ns;
	uint64_t parse_wait_ns, write_wait_ns, read_wait_ns;
	struct stats_thread counts;
	char *samples[REPORT_SAMPLES];       /* the first error records, as text */
	unsigned n_samples;
	uint64_t errors;
	bool have_index;
	uint64_t index[REPORT_INDEX_COUNTS + 1];   /* report_set_index's, in order */
	unsigned index_io_n;                 /* report_set_index_io's */
	const char *index_io_names[REPORT_INDEX_IO];
	uint64_t index_io[REPORT_INDEX_IO];
};


struct ingest_report *report_new(void)
{
	return xcalloc(1, sizeof(struct ingest_report));
}

/* text, escaped for a terminal (it names files), into r->error_text,
 * whole: a path the user gave may be as long as PATH_MAX, and the reason
 * comes after it.  Out of memory, into r->error, cut to fit, every byte
 * that could be a control or not ASCII becoming '?': the reason must
 * still be told. */
static void report_put_error(struct ingest_report *r, const char *text)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	size_t n = strlen(text);
	xfree(r->error_text);
	r->error_text = NULL;
	r->error[0] = '\0';
	if (emit_escape_terminal(&b, text, n) == 0)
		r->error_text = dynbuf_take(&b, NULL);
	if (!r->error_text) {
		size_t k = n < sizeof(r->error) - 1 ? n : sizeof(r->error) - 1;
		for (size_t i = 0; i < k; i++) {
			unsigned char c = (unsigned char)text[i];
			r->error[i] = text[i];
			if (c < 0x20 || c >= 0x7f)
				r->error[i] = '?';
		}
		r->error[k] = '\0';
	}
	dynbuf_release(&b);
}

/* The text of fmt and ap, then ": " and strerror(-err) unless err is 0,
 * into r: whole, or out of memory cut to what a buffer of its own holds. */
void report_set_errorv(struct ingest_report *r, int err, const char *fmt, va_list ap)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	va_list again;
	va_copy(again, ap);
	int e = dynbuf_vprintf(&b, fmt, ap);
	if (e == 0 && err)
		e = dynbuf_printf(&b, ": %s", strerror(-err));
	if (e == 0 && dynbuf_putc(&b, '\0') == 0) {
		report_put_error(r, b.p);
	} else {
		char text[sizeof(r->error)];
		int n = vsnprintf(text, sizeof(text), fmt, again);
		if (err && n >= 0 && (size_t)n < sizeof(text))
			snprintf(text + n, sizeof(text) - (size_t)n, ": %s", strerror(-err));
		report_put_error(r, text);
	}
	va_end(again);
	dynbuf_release(&b);
}

void report_set_error(struct ingest_report *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_set_errorv(r, err, fmt, ap);   /* err 0: the text says it all */
	va_end(ap);
}

void report_set_message(struct ingest_report *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_set_errorv(r, 0, fmt, ap);
	va_end(ap);
}

void report_set_refused(struct ingest_report *r)
{
	r->refused = true;
}

int ingest_report_usage_error(const struct ingest_report *r)
{
	return r && r->refused;
}

void report_start(struct ingest_report *r)
{
	r->t0 = clock_now_ns();
}

void report_count_batch(struct ingest_report *r, const struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct batch_item *it = &b->items[i];
		const struct record_io *io = &it->io;
		if (it->no_output)
			continue;
		/* by record, however the input was read (an archive whole: many) */
		uint64_t errors = 0;
		for (unsigned k = RECORD_NONE + 1; k < RECORD__COUNT; k++) {
			r->kinds[k] += it->out_errors[k];
			errors += it->out_errors[k];
		}
		r->kinds[RECORD_NONE] += it->out_records - errors;
		r->bytes_in += it->len;
		if (!errors)
			continue;
		r->errors += errors;
		if (r->n_samples == REPORT_SAMPLES)
			continue;
		/* The record's path as the user would type it, root/path,
		 * escaped: it goes to a terminal. */
		const char *why = io->err ? strerror(io->err) : io->message ? io->message
		                : record_reason_name(io->reason);
		struct dynbuf line;
		dynbuf_init(&line, 0);
		int e = dynbuf_puts(&line, "cannot read '");
		if (e == 0)
			e = emit_escape_terminal(&line, io->root.p, io->root.n);
		if (e == 0 && io->root.n && io->path.n)
			e = dynbuf_putc(&line, '/');
		if (e == 0)
			e = emit_escape_terminal(&line, io->path.p, io->path.n);
		if (e == 0)
			e = dynbuf_printf(&line, "': %s", why);
		size_t len;
		char *text = e == 0 ? dynbuf_take(&line, &len) : NULL;
		dynbuf_release(&line);
		if (text)
			r->samples[r->n_samples++] = text;
	}
	for (size_t i = 0; i < b->n; i++)
		r->records += b->items[i].out_records;
}

/* The process's peak RSS, read when the statistics are formatted, not at
 * every run's end: a run without --stats makes no call for it (three:
 * open, read, close).  A high-water mark, so reading it after the run's
 * memory is freed gives the same figure.  VmHWM, not getrusage's
 * ru_maxrss: the latter is kept across execve, so a child of a large
 * process (a Python harness) would report its parent's peak. */
static long report_vmhwm_kib(void)
{
	char buf[4096];
	int fd = sys_openat(AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	ssize_t n = sys_read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strstr(buf, "VmHWM:");
	return p ? strtol(p + 6, NULL, 10) : 0;
}

void report_finish(struct ingest_report *r, const struct reader *rd, const struct walk *w,
                   const struct pool *p, const struct budget *bu, uint64_t parse_wait_ns,
                   uint64_t write_wait_ns, uint64_t read_wait_ns)
{
	r->t1 = clock_now_ns();
	stats_merge(&r->counts);
	if (rd)
		reader_stats_get(rd, &r->rs);
	if (w)
		walk_stats_get(w, &r->ws);
	if (p)
		pool_stats_get(p, &r->ps);
	r->peak_inflight = bu->peak;
	r->budget_wait_ns = atomic_load(&bu->waited_ns);
	r->parse_wait_ns = parse_wait_ns;
	r->write_wait_ns = write_wait_ns;
	r->read_wait_ns = read_wait_ns;
}

void report_set_flags(struct ingest_report *r, bool output_closed, bool interrupted)
{
	r->output_closed = output_closed;
	r->interrupted = interrupted;
}

void report_set_written(struct ingest_report *r, uint64_t records)
{
	r->written = records;
}

void report_set_index(struct ingest_report *r, uint64_t transactions, uint64_t messages,
                      uint64_t unchanged, uint64_t errors, uint64_t deleted, uint64_t renamed,
                      uint64_t ns)
{
	r->have_index = true;
	uint64_t v[REPORT_INDEX_COUNTS + 1] = { transactions, messages, unchanged, errors, deleted, renamed, ns };
	memcpy(r->index, v, sizeof(v));
}

void report_set_index_io(struct ingest_report *r, const char *const names[], const uint64_t n[],
                         unsigned count)
{
	r->index_io_n = count < REPORT_INDEX_IO ? count : REPORT_INDEX_IO;
	for (unsigned i = 0; i < r->index_io_n; i++) {
		r->index_io_names[i] = names[i];
		r->index_io[i] = n[i];
	}
}

const char *ingest_report_error(const struct ingest_report *r)
{
	return !r ? NULL : r->error_text ? r->error_text : r->error[0] ? r->error : NULL;
}

int ingest_report_output_closed(const struct ingest_report *r)
{
	return r && r->output_closed;
}

int ingest_report_interrupted(const struct ingest_report *r)
{
	return r && r->interrupted;
}

int ingest_report_format_errors(const struct ingest_report *r, char **out, size_t *len)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	for (unsigned i = 0; r && i < r->n_samples; i++)
		dynbuf_printf(&b, "ingest: %s\n", r->samples[i]);
	if (r && r->errors > r->n_samples)
		dynbuf_printf(&b, "ingest: ... and %llu more error records (see \"error\" in the output)\n",
		              (unsigned long long)(r->errors - r->n_samples));
	*out = dynbuf_take(&b, len);
	return *out ? 0 : -ENOMEM;
}

uint64_t ingest_report_error_records(const struct ingest_report *r)
{
	return r ? r->errors : 0;
}

uint64_t report_records(const struct ingest_report *r, uint64_t *bytes, uint64_t *errors)
{
	*bytes = r->bytes_in;
	*errors = r->errors;
	return r->records;
}

uint64_t report_started_ns(const struct ingest_report *r)
{
	return r->t0;
}

void ingest_report_free(struct ingest_report *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->n_samples; i++)
		xfree(r->samples[i]);
	xfree(r->error_text);
	xfree(r);
}

static const char *report_backend(const struct ingest_report *r)
{
	return r->rs.backend == READER_URING ? "uring" : "sync";
}

/* A record kind as --stats names it: "ok" for a message, else its reason. */
static const char *report_kind_name(unsigned k)
{
	return k == RECORD_NONE ? "ok" : record_reason_name((enum record_reason)k);
}

/* report_set_index's counters, in order (SQLite's time follows them) */
static const char *const report_index_names[REPORT_INDEX_COUNTS] = {
	"transactions", "messages", "unchanged", "errors", "deleted", "renamed",
};

static void report_human(const struct ingest_report *r, struct dynbuf *b)
{
	double secs = (double)(r->t1 - r->t0) / 1e9;
	if (secs <= 0)
		secs = 1e-9;
	uint64_t files = r->records;
	dynbuf_printf(b, "ingest: %llu records in %.3f s (%.0f files/s, %.1f MB/s)\n",
	              (unsigned long long)files, secs, (double)files / secs,
	              (double)r->bytes_in / 1e6 / secs);
	if (r->rs.fallback[0])
		dynbuf_printf(b, "  backend      %s (fallback: %s)\n", report_backend(r), r->rs.fallback);
	else
		dynbuf_printf(b, "  backend      %s\n", report_backend(r));
	/* parsed and written differ when the output's reader went away */
	dynbuf_printf(b, "  written      %llu records%s\n", (unsigned long long)r->written,
	              r->output_closed ? " (the output was closed by its reader)" : "");
	dynbuf_puts(b, "  records     ");
	for (unsigned k = 0; k < RECORD__COUNT; k++)
		if (r->kinds[k])
			dynbuf_printf(b, " %s=%llu", report_kind_name(k), (unsigned long long)r->kinds[k]);
	dynbuf_printf(b, "\n  bytes read   %llu (grew %llu, shrank %llu, renamed while read %llu)\n",
	              (unsigned long long)r->bytes_in, (unsigned long long)r->rs.grew,
	              (unsigned long long)r->rs.shrank, (unsigned long long)r->rs.renamed);
	dynbuf_printf(b, "  batches      %llu, peak in flight %llu bytes, peak RSS %ld KiB\n",
	              (unsigned long long)r->rs.batches, (unsigned long long)r->peak_inflight,
	              report_vmhwm_kib());
	dynbuf_printf(b, "  walk         %llu dirs, %llu entries, %llu getdents64, %llu mail-software "
	              "files skipped, %llu excluded\n",
	              (unsigned long long)r->ws.dirs, (unsigned long long)r->ws.entries,
	              (unsigned long long)r->ws.getdents_calls, (unsigned long long)r->ws.skipped,
	              (unsigned long long)r->ws.excluded);
	dynbuf_printf(b, "  pool         %llu threads started, %llu batches inline, workers per batch:",
	              (unsigned long long)r->ps.threads_started, (unsigned long long)r->ps.inline_batches);
	for (unsigned k = 1; k <= LIMIT_MAX_THREADS; k++)
		if (r->ps.workers_hist[k])
			dynbuf_printf(b, " %u:%llu", k, (unsigned long long)r->ps.workers_hist[k]);
	dynbuf_printf(b, "\n  waits (ms)   reader on budget %.1f, parser on reader %.1f, writer on parser %.1f\n",
	              (double)r->budget_wait_ns / 1e6, (double)r->parse_wait_ns / 1e6,
	              (double)r->write_wait_ns / 1e6);
	dynbuf_puts(b, "  syscalls    ");
	uint64_t total = 0;
	for (int i = 0; i < SC__COUNT; i++) {
		if (!r->counts.sys[i])
			continue;
		total += r->counts.sys[i];
		dynbuf_printf(b, " %s=%llu", sys_call_name(i), (unsigned long long)r->counts.sys[i]);
	}
	dynbuf_printf(b, " (total %llu, %.4f per file)\n", (unsigned long long)total,
	              files ? (double)total / (double)files : 0.0);
	dynbuf_puts(b, "  ring ops    ");
	static const char *const ops[] = { "statx", "openat", "read", "close", "other" };
	for (int i = 0; i < STATS_OP__COUNT; i++)
		dynbuf_printf(b, " %s=%llu", ops[i], (unsigned long long)r->counts.ring[i]);
	dynbuf_printf(b, "; io_uring_enter=%llu", (unsigned long long)r->rs.enters);
	if (r->rs.enter_retries)
		dynbuf_printf(b, " (%llu refused and retried)", (unsigned long long)r->rs.enter_retries);
	if (r->rs.cqe_retries)
		dynbuf_printf(b, ", %llu completions retried", (unsigned long long)r->rs.cqe_retries);
	if (r->rs.cq_overflows)
		dynbuf_printf(b, ", CQ overflowed at %llu enters", (unsigned long long)r->rs.cq_overflows);
	dynbuf_putc(b, '\n');
	if (r->have_index) {
		dynbuf_puts(b, "  index       ");
		for (int i = 0; i < REPORT_INDEX_COUNTS; i++)
			dynbuf_printf(b, " %llu %s,", (unsigned long long)r->index[i], report_index_names[i]);
		dynbuf_printf(b, " %.1f ms in SQLite\n", (double)r->index[REPORT_INDEX_COUNTS] / 1e6);
	}
	if (r->index_io_n) {
		dynbuf_puts(b, "  database    ");
		uint64_t all = 0;
		for (unsigned i = 0; i < r->index_io_n; i++) {
			all += r->index_io[i];
			dynbuf_printf(b, " %s=%llu", r->index_io_names[i], (unsigned long long)r->index_io[i]);
		}
		dynbuf_printf(b, " (total %llu: SQLite's file operations, each a syscall or none, "
		              "not in the syscalls above)\n", (unsigned long long)all);
	}
}

static void report_json(const struct ingest_report *r, struct dynbuf *b)
{
	double secs = (double)(r->t1 - r->t0) / 1e9;
	if (secs <= 0)
		secs = 1e-9;
	dynbuf_printf(b, "{\"files\":%llu,\"written\":%llu,\"output_closed\":%s,\"bytes\":%llu,"
	              "\"elapsed_s\":%.6f,\"files_per_s\":%.1f,"
	              "\"mb_per_s\":%.3f,\"backend\":\"%s\",\"fallback\":",
	              (unsigned long long)r->records, (unsigned long long)r->written,
	              r->output_closed ? "true" : "false", (unsigned long long)r->bytes_in, secs,
	              (double)r->records / secs, (double)r->bytes_in / 1e6 / secs, report_backend(r));
	if (r->rs.fallback[0]) {
		dynbuf_putc(b, '"');
		for (const char *p = r->rs.fallback; *p; p++)
			if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
				dynbuf_putc(b, *p);
		dynbuf_putc(b, '"');
	} else {
		dynbuf_puts(b, "null");
	}
	dynbuf_puts(b, ",\"records\":{");
	bool first = true;
	for (unsigned k = 0; k < RECORD__COUNT; k++) {
		dynbuf_printf(b, "%s\"%s\":%llu", first ? "" : ",", report_kind_name(k),
		              (unsigned long long)r->kinds[k]);
		first = false;
	}
	dynbuf_printf(b, "},\"grew\":%llu,\"shrank\":%llu,\"renamed\":%llu,\"batches\":%llu,\"peak_inflight_bytes\":%llu,"
	              "\"peak_rss_kib\":%ld,",
	              (unsigned long long)r->rs.grew, (unsigned long long)r->rs.shrank,
	              (unsigned long long)r->rs.renamed, (unsigned long long)r->rs.batches, (unsigned long long)r->peak_inflight,
	              report_vmhwm_kib());
	dynbuf_printf(b, "\"walk\":{\"dirs\":%llu,\"entries\":%llu,\"relisted\":%llu,"
	              "\"skipped\":%llu,\"excluded\":%llu},",
	              (unsigned long long)r->ws.dirs, (unsigned long long)r->ws.entries,
	              (unsigned long long)r->ws.relisted, (unsigned long long)r->ws.skipped,
	              (unsigned long long)r->ws.excluded);
	dynbuf_printf(b, "\"pool\":{\"threads_started\":%llu,\"batches\":%llu,\"inline_batches\":%llu,"
	              "\"workers_per_batch\":{",
	              (unsigned long long)r->ps.threads_started, (unsigned long long)r->ps.batches,
	              (unsigned long long)r->ps.inline_batches);
	first = true;
	for (unsigned k = 1; k <= LIMIT_MAX_THREADS; k++) {
		if (!r->ps.workers_hist[k])
			continue;
		dynbuf_printf(b, "%s\"%u\":%llu", first ? "" : ",", k, (unsigned long long)r->ps.workers_hist[k]);
		first = false;
	}
	dynbuf_printf(b, "}},\"wait_ms\":{\"reader_on_budget\":%.3f,\"parser_on_reader\":%.3f,"
	              "\"writer_on_parser\":%.3f},",
	              (double)r->budget_wait_ns / 1e6, (double)r->parse_wait_ns / 1e6,
	              (double)r->write_wait_ns / 1e6);
	dynbuf_puts(b, "\"syscalls\":{");
	first = true;
	for (int i = 0; i < SC__COUNT; i++) {
		dynbuf_printf(b, "%s\"%s\":%llu", first ? "" : ",", sys_call_name(i),
		              (unsigned long long)r->counts.sys[i]);
		first = false;
	}
	dynbuf_puts(b, "},\"ring_ops\":{");
	static const char *const ops[] = { "statx", "openat", "read", "close", "other" };
	for (int i = 0; i < STATS_OP__COUNT; i++)
		dynbuf_printf(b, "%s\"%s\":%llu", i ? "," : "", ops[i], (unsigned long long)r->counts.ring[i]);
	if (r->have_index) {
		dynbuf_puts(b, "},\"index\":{");
		for (int i = 0; i < REPORT_INDEX_COUNTS; i++)
			dynbuf_printf(b, "\"%s\":%llu,", report_index_names[i], (unsigned long long)r->index[i]);
		dynbuf_printf(b, "\"sqlite_ms\":%.3f", (double)r->index[REPORT_INDEX_COUNTS] / 1e6);
		if (r->index_io_n) {
			dynbuf_puts(b, ",\"sqlite_io\":{");
			for (unsigned i = 0; i < r->index_io_n; i++)
				dynbuf_printf(b, "%s\"%s\":%llu", i ? "," : "", r->index_io_names[i],
				              (unsigned long long)r->index_io[i]);
			dynbuf_putc(b, '}');
		}
	}
	dynbuf_printf(b, "},\"io_uring_enter\":%llu,\"io_uring_enter_retries\":%llu,"
	              "\"io_uring_cq_overflow\":%llu,\"io_uring_cqe_retries\":%llu}\n",
	              (unsigned long long)r->rs.enters, (unsigned long long)r->rs.enter_retries,
	              (unsigned long long)r->rs.cq_overflows, (unsigned long long)r->rs.cqe_retries);
}

int ingest_report_format(const struct ingest_report *r, int json, char **out, size_t *len)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	/* no report (ingest_run's with -EBUSY): nothing to say, as the
	 * accessors say nothing of it */
	if (r && json)
		report_json(r, &b);
	else if (r)
		report_human(r, &b);
	*out = dynbuf_take(&b, len);
	return *out ? 0 : -ENOMEM;
}
