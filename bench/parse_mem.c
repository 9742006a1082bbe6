/* SPDX-License-Identifier: MIT */
/* The parser alone, on one core: what "parse throughput per core"
 * means.  Every file of a list is read into memory first (untimed), then
 * each pass parses every message and formats its JSON record into a reused
 * buffer, exactly as a pool worker does (mail_parse + emit_record), with no
 * reading, no writing and no threads.  Timed with the thread's CPU clock
 * and the wall clock; passes repeat until --seconds have gone by, and the
 * fastest pass is reported (the others are disturbed, not faster).
 *
 * With --threads=N the same work goes through the real pool (sched/pool.h)
 * the way the pipeline's parse stage drives it: messages cut into batches
 * by the reader's rule (--batch-bytes, LIMIT_BATCH_FILES), batches grouped
 * as the parse stage groups the batches queued for it, up to
 * LIMIT_PIPELINE_DEPTH (pipeline/parse_stage.c; here every batch is
 * already waiting), one pool_run per group.  That isolates
 * the scheduler's scaling from reading, which on a 2-core machine competes
 * with the workers for the same cores.  Wall time is then what counts.
 *
 * Usage: parse-mem [--seconds=S] [--threads=N [--batch-bytes=B]] LIST
 * Prints the number of messages on stdout, a key=value line and then the
 * JSON summary the in-process peers print (bench/peers) on stderr, so that
 * bench/run verifies and reads all of them the same way. */
#include "core/dynbuf.h"
#include "mail/mail.h"
#include "emit/emit.h"
#include "core/record.h"
#include "core/limits.h"
#include "sched/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct input {
	char *path;
	uint8_t *p;
	size_t n;
};

static double clock_s(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int load(const char *path, struct input *in)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	in->n = (size_t)st.st_size;
	in->p = malloc(in->n ? in->n : 1);
	size_t got = 0;
	while (in->p && got < in->n) {
		ssize_t r = read(fd, in->p + got, in->n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	in->n = got;
	in->path = strdup(path);
	return in->p && in->path ? 0 : -1;
}

/* The peers' summary: parse_s is all passes, best_pass_s the fastest whole
 * pass (wall). */
static void summary(size_t n, size_t records, size_t bytes, size_t passes, double total,
                    double best, size_t runs, size_t parallel_runs)
{
	printf("%zu\n", records == n ? n : records);
	fflush(stdout);
	fprintf(stderr, "{\"messages\": %zu, \"bytes\": %zu, \"parse_s\": %.6f, \"pass_messages\": %zu, "
	        "\"best_pass_s\": %.6f, \"pool_runs\": %zu, \"parallel_runs\": %zu}\n",
	        n * passes, bytes * passes, total, n, best, runs, parallel_runs);
}

/* What a pool worker does for one message. */
struct job {
	struct input *in;
	size_t first;                  /* the group's first message */
	struct mail_ctx *ctx[LIMIT_MAX_THREADS];
	struct dynbuf out[LIMIT_MAX_THREADS];
	size_t records[LIMIT_MAX_THREADS];
	size_t out_bytes[LIMIT_MAX_THREADS];
	const struct mail_options *mo;
	const struct emit_options *eo;
};

static void parse_one(void *arg, size_t item, unsigned w)
{
	struct job *j = arg;
	struct input *in = &j->in[j->first + item];
	struct mail_message msg;
	struct record rec = { .io = { .path = { in->path, strlen(in->path) },
	                              .have_stat = true, .size = in->n } };
	if (mail_parse(j->ctx[w], j->mo, in->p, in->n, &msg) == 0)
		rec.mail = &msg;
	if (emit_record(j->eo, &rec, &j->out[w]) == 0)
		j->records[w]++;
	if (j->out[w].len > (1u << 20)) {
		j->out_bytes[w] += j->out[w].len;
		j->out[w].len = 0;
	}
}

/* Messages [i, *end) form the next batch, cut as the ring reader cuts. */
static uint64_t next_batch(const struct input *in, size_t n, size_t i, uint64_t batch_bytes,
                           size_t *end)
{
	uint64_t bytes = 0;
	size_t k = i;
	while (k < n && k - i < LIMIT_BATCH_FILES &&
	       (k == i || bytes + in[k].n + 1 <= batch_bytes))
		bytes += in[k++].n;
	*end = k;
	return bytes;
}

/* One pass through the pool, batches cut and grouped as the pipeline does. */
static void pool_pass(struct pool *pool, struct job *j, size_t n, uint64_t batch_bytes,
                      size_t *runs, size_t *parallel_runs)
{
	for (size_t i = 0; i < n;) {
		size_t end;
		uint64_t bytes = next_batch(j->in, n, i, batch_bytes, &end);
		/* the parse stage takes every batch queued behind the first, up
		 * to the pipeline's depth */
		for (int g = 1; g < LIMIT_PIPELINE_DEPTH && end < n; g++) {
			size_t e2;
			bytes += next_batch(j->in, n, end, batch_bytes, &e2);
			end = e2;
		}
		j->first = i;
		unsigned used = pool_run(pool, end - i, bytes, parse_one, j);
		(*runs)++;
		*parallel_runs += used > 1;
		i = end;
	}
}

int main(int argc, char **argv)
{
	double seconds = 1.5;
	unsigned threads = 0;
	uint64_t batch_bytes = LIMIT_BATCH_BYTES_DEFAULT;
	const char *list = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--seconds=", 10))
			seconds = atof(argv[i] + 10);
		else if (!strncmp(argv[i], "--threads=", 10))
			threads = (unsigned)atoi(argv[i] + 10);
		else if (!strncmp(argv[i], "--batch-bytes=", 14))
			batch_bytes = strtoull(argv[i] + 14, NULL, 10);
		else
			list = argv[i];
	}
	if (threads > LIMIT_MAX_THREADS) {
		fprintf(stderr, "parse-mem: --threads above %d\n", LIMIT_MAX_THREADS);
		return 2;
	}
	FILE *f = list ? fopen(list, "r") : NULL;
	if (!f) {
		fprintf(stderr, "usage: parse-mem [--seconds=S] LIST (one path a line)\n");
		return 2;
	}
	struct input *in = NULL;
	size_t n = 0, cap = 0, bytes = 0;
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	while ((len = getline(&line, &linecap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (!len)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			in = realloc(in, cap * sizeof(*in));
			if (!in)
				return 1;
		}
		if (load(line, &in[n]) < 0) {
			fprintf(stderr, "parse-mem: %s: %s\n", line, strerror(errno));
			return 1;
		}
		bytes += in[n].n;
		n++;
	}
	free(line);
	fclose(f);

	struct mail_options mo = { .max_text = LIMIT_MAX_TEXT_DEFAULT, .want_text = true };
	struct emit_options eo;
	emit_options_init(&eo);
	unsigned workers = threads ? threads : 1;
	struct job *j = calloc(1, sizeof(*j));
	struct pool *pool = threads ? pool_new(threads) : NULL;
	if (!j || (threads && !pool))
		return 1;
	j->in = in;
	j->mo = &mo;
	j->eo = &eo;
	for (unsigned w = 0; w < workers; w++) {
		dynbuf_init(&j->out[w], 0);
		if (!(j->ctx[w] = mail_ctx_new()))
			return 1;
	}

	double t_start = clock_s(CLOCK_MONOTONIC), t_stop = t_start + seconds, best_cpu = 0, best_wall = 0;
	size_t passes = 0, records = 0, out_bytes = 0, runs = 0, parallel_runs = 0;
	do {
		double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
		memset(j->records, 0, sizeof(j->records));
		memset(j->out_bytes, 0, sizeof(j->out_bytes));
		runs = parallel_runs = 0;
		if (pool) {
			pool_pass(pool, j, n, batch_bytes, &runs, &parallel_runs);
		} else {
			j->first = 0;
			for (size_t i = 0; i < n; i++)
				parse_one(j, i, 0);
		}
		double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, wall = clock_s(CLOCK_MONOTONIC) - w0;
		records = out_bytes = 0;
		for (unsigned w = 0; w < workers; w++) {
			records += j->records[w];
			out_bytes += j->out_bytes[w] + j->out[w].len;
			j->out[w].len = 0;
		}
		if (!passes || cpu < best_cpu)
			best_cpu = cpu;
		if (!passes || wall < best_wall)
			best_wall = wall;
		passes++;
	} while (clock_s(CLOCK_MONOTONIC) < t_stop);

	if (pool)
		fprintf(stderr, "messages=%zu records=%zu bytes=%zu passes=%zu threads=%u wall_s=%.6f "
		        "mb_per_s=%.1f msgs_per_s=%.0f pool_runs=%zu parallel_runs=%zu out_bytes=%zu\n",
		        n, records, bytes, passes, threads, best_wall, (double)bytes / best_wall / 1e6,
		        (double)n / best_wall, runs, parallel_runs, out_bytes);
	else   /* one thread: its CPU time is the parser's cost per core */
		fprintf(stderr, "messages=%zu records=%zu bytes=%zu passes=%zu cpu_s=%.6f wall_s=%.6f "
		        "mb_per_cpu_s=%.1f msgs_per_cpu_s=%.0f mb_per_s=%.1f out_bytes=%zu\n",
		        n, records, bytes, passes, best_cpu, best_wall, (double)bytes / best_cpu / 1e6,
		        (double)n / best_cpu, (double)bytes / best_wall / 1e6, out_bytes);
	summary(n, records, bytes, passes, clock_s(CLOCK_MONOTONIC) - t_start, best_wall, runs, parallel_runs);
	pool_free(pool);
	for (unsigned w = 0; w < workers; w++) {
		mail_ctx_free(j->ctx[w]);
		dynbuf_release(&j->out[w]);
	}
	free(j);
	for (size_t i = 0; i < n; i++) {
		free(in[i].p);
		free(in[i].path);
	}
	free(in);
	return records == n ? 0 : 1;
}
