/* SPDX-License-Identifier: MIT */
/* Unit tests for io/reader on both backends (sync and io_uring): the real
 * reader runs on the calling thread over a walk of a fresh temporary
 * directory, with a byte budget and the two channels.  The harness seeds
 * the free channel with three empty batches; a writer thread plays the real
 * writer's part (copies each full batch out, releases its budget, resets it
 * and hands it back), so the reader never starves however small the ring
 * cuts its batches, and the budget's backpressure is real.  Every test runs
 * once per backend; the uring runs are skipped, with the reason, only if the
 * ring cannot be set up here.
 *
 * What is checked: one item per input, in walk order; the bytes read,
 * exactly (memcmp); the size, the error reason and errno, and the grew/shrank
 * notes; batch boundaries against --batch-bytes and LIMIT_BATCH_FILES; and,
 * through the in-process syscall and ring-op counters, that what must never
 * be opened or read is not.
 *
 * Races (a file that vanishes, grows or shrinks between its size query and
 * its read) are made exact with the reader's test seam, after_stat, which
 * runs right after a file's size is known and before its read is submitted:
 *   sync:  openat, fstat, [seam], read, close — the file is already open, so
 *          a vanish is staged by unlinking the *next* file from the seam of
 *          the one before it (its openat then fails); a name the walk could
 *          not type goes statx, openat, [seam], read, close;
 *   uring: statx done, [seam], then open/read/close chains — unlinking the
 *          file in its own seam makes the chain's open fail.
 *
 * Permissions: as root an unreadable file is readable anyway, so that case
 * runs in a forked child that drops to `nobody` (setresuid) and reports back
 * through a pipe. */
#include "io/reader.h"
#include "io/reader_item.h"
#include "io/state.h"
#include "io/walk.h"
#include "core/limits.h"
#include "core/stats.h"
#include "sched/batch.h"
#include "sched/budget.h"
#include "sched/chan.h"
#include "core/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "helpers.h"

/* a --files-from list's reads that nothing stops */
static const atomic_int list_no_stop = 0;

static enum reader_backend backend_sync = READER_SYNC;
static enum reader_backend backend_uring = READER_URING;

static const char *backend_name(enum reader_backend be)
{
	return be == READER_URING ? "uring" : "sync";
}

/* --- temporary files --- */

/* The deterministic content of a test file: a window of one pattern,
 * computed once, at an offset that `seed` chooses (so files differ and a
 * mixed-up buffer shows). */
#define PATTERN_MAX (7 * MiB)

static const uint8_t *content(size_t n, unsigned seed)
{
	static uint8_t *pattern;
	if (!pattern) {
		pattern = malloc(PATTERN_MAX + 65536);
		assert_non_null(pattern);
		for (size_t i = 0; i < PATTERN_MAX + 65536; i++)
			pattern[i] = (uint8_t)(i * 131u + (i >> 8) * 7u + (i >> 16));
	}
	assert_true(n <= PATTERN_MAX);
	return pattern + (seed * 4093u) % 65536u;
}

static void put(const char *base, const char *name, size_t n, unsigned seed)
{
	t_put(base, name, content(n, seed), n);
}


/* --- the harness --- */

/* What the writer copied out of one item before recycling its batch. */
struct got_item {
	struct record_io io;           /* its strings are the copies below */
	char *path, *folder, *subdir, *flags, *old_path;
	uint8_t *data;                 /* NULL when the item had none */
	size_t len;
};

struct got_batch {
	size_t first, n;               /* its items in run.items */
	uint64_t budget;               /* bytes it held from the budget */
};

struct run {
	enum reader_backend backend;
	struct reader_stats st;
	int ret;
	struct budget budget;
	struct chan free_c, full_c;
	struct got_batch *batches;     /* in the order the reader sent them */
	size_t n_batches, cap_batches;
	struct got_item *items;        /* every item, in order */
	size_t n_items, cap_items;
	struct stats_thread counts;    /* syscalls and ring ops of the run */
	struct walk_stats walk;        /* the walk's, as the run left them */
};

struct run_opts {
	uint64_t batch_bytes;          /* 0: the default */
	uint64_t max_size;             /* 0: the default */
	uint64_t budget;               /* 0: 4 GiB */
	void (*after_stat)(void *arg, const char *name);
	void *after_stat_arg;
	struct state *state;           /* --state: NULL, none */
};

static char *copy_str(struct str m)
{
	if (!m.p)
		return NULL;
	char *p = malloc(m.n + 1);
	assert_non_null(p);
	memcpy(p, m.p, m.n);
	p[m.n] = '\0';
	return p;
}

/* The writer's part, on its own thread: copy each full batch out, give its
 * bytes back to the budget, and recycle it to the reader, as the real writer
 * does; so the reader never runs out of batches, however small it cuts
 * them.  (No cmocka assertions here: they are not thread-safe.) */
static void *writer_thread(void *arg)
{
	struct run *run = arg;
	for (struct batch *b; (b = chan_pop(&run->full_c));) {
		if (run->n_batches == run->cap_batches) {
			run->cap_batches = run->cap_batches ? 2 * run->cap_batches : 64;
			run->batches = realloc(run->batches, run->cap_batches * sizeof(*run->batches));
			if (!run->batches)
				abort();
		}
		run->batches[run->n_batches++] = (struct got_batch){
			.first = run->n_items, .n = b->n, .budget = b->budget,
		};
		for (size_t j = 0; j < b->n; j++) {
			const struct batch_item *it = &b->items[j];
			if (it->no_output) {
				/* a streamed file's placeholder: its records follow */
				run->batches[run->n_batches - 1].n--;
				continue;
			}
			if (run->n_items == run->cap_items) {
				run->cap_items = run->cap_items ? 2 * run->cap_items : 64;
				run->items = realloc(run->items, run->cap_items * sizeof(*run->items));
				if (!run->items)
					abort();
			}
			struct got_item *g = &run->items[run->n_items++];
			memset(g, 0, sizeof(*g));
			g->io = it->io;
			g->path = copy_str(it->io.path);
			g->folder = copy_str(it->io.folder);
			g->subdir = copy_str(it->io.subdir);
			g->flags = copy_str(it->io.flags);
			g->old_path = copy_str(it->io.old_path);
			memset(&g->io.old_path, 0, sizeof(g->io.old_path));
			memset(&g->io.root, 0, sizeof(g->io.root));
			memset(&g->io.path, 0, sizeof(g->io.path));
			memset(&g->io.folder, 0, sizeof(g->io.folder));
			memset(&g->io.subdir, 0, sizeof(g->io.subdir));
			memset(&g->io.flags, 0, sizeof(g->io.flags));
			g->len = it->len;
			if (it->data) {
				g->data = malloc(it->len ? it->len : 1);
				if (!g->data)
					abort();
				memcpy(g->data, it->data, it->len);
			}
		}
		budget_release(&run->budget, b->budget);
		batch_reset(b, LIMIT_BATCH_BYTES_DEFAULT, 0);
		chan_push(&run->free_c, b);
	}
	return NULL;
}

/* Runs the reader over w on this thread, with a writer thread recycling
 * batches.  false when the backend cannot be set up (the uring one, where
 * io_uring is refused): *why says why. */
static bool read_all(enum reader_backend be, struct walk *w, const struct run_opts *ro,
                     struct run *run, const char **why)
{
	memset(run, 0, sizeof(*run));
	run->backend = be;
	struct reader_options o = {
		.backend = be,
		.batch_bytes = ro && ro->batch_bytes ? ro->batch_bytes : LIMIT_BATCH_BYTES_DEFAULT,
		.max_size = ro && ro->max_size ? ro->max_size : LIMIT_MAX_SIZE_DEFAULT,
		.after_stat = ro ? ro->after_stat : NULL,
		.after_stat_arg = ro ? ro->after_stat_arg : NULL,
		.state = ro ? ro->state : NULL,
	};
	struct reader *r = NULL;
	struct reader_stats st0;
	int rc = reader_new(&o, &r, &st0);
	if (rc < 0) {
		static char msg[256];
		snprintf(msg, sizeof(msg), "the %s backend is unavailable here: %s (%s)",
		         backend_name(be), strerror(-rc), st0.fallback);
		*why = msg;
		return false;
	}
	chan_init(&run->free_c);
	chan_init(&run->full_c);
	enum { FREE_BATCHES = 3 };
	for (size_t i = 0; i < FREE_BATCHES; i++) {
		struct batch *b = batch_new();
		assert_non_null(b);
		chan_push(&run->free_c, b);
	}
	budget_init(&run->budget, ro && ro->budget ? ro->budget : 4 * GiB);
	static const atomic_int no_stop = 0;
	struct reader_io io = {
		.walk = w, .budget = &run->budget,
		.free_batches = &run->free_c, .full_batches = &run->full_c,
		.stop = &no_stop,
	};
	pthread_t writer;
	assert_int_equal(pthread_create(&writer, NULL, writer_thread, run), 0);
	stats_reset_all();
	run->ret = reader_run(r, &io);         /* closes full_c: the writer ends */
	assert_int_equal(pthread_join(writer, NULL), 0);
	stats_merge(&run->counts);
	reader_stats_get(r, &run->st);
	reader_free(r);
	chan_close(&run->free_c);
	size_t nfree = 0;
	for (struct batch *b; (b = chan_pop(&run->free_c)); nfree++)
		batch_free(b);
	/* every batch came back; every byte taken was given back */
	assert_int_equal(nfree, FREE_BATCHES);
	assert_int_equal(run->budget.used, 0);
	assert_int_equal(run->st.batches, run->n_batches);
	/* a listed directory is an input handed back to the walk: no record */
	assert_int_equal(run->st.files, run->n_items + run->st.expanded);
	assert_int_equal(run->st.backend, be);
	return true;
}

static void run_free(struct run *run)
{
	for (size_t i = 0; i < run->n_items; i++) {
		struct got_item *g = &run->items[i];
		free(g->path);
		free(g->folder);
		free(g->subdir);
		free(g->flags);
		free(g->old_path);
		free(g->data);
	}
	free(run->items);
	free(run->batches);
}

static struct walk *walk_of(const char *path)
{
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, path), 0);
	return w;
}

/* Reads the directory; skips the test when the backend is unavailable. */
static void read_dir(void **state, const char *base, const struct run_opts *ro, struct run *run)
{
	enum reader_backend be = *(const enum reader_backend *)*state;
	struct walk *w = walk_of(base);
	const char *why = NULL;
	bool ok = read_all(be, w, ro, run, &why);
	walk_stats_get(w, &run->walk);
	walk_free(w);
	if (!ok) {
		print_message("SKIP: %s\n", why);
		skip();
	}
	assert_int_equal(run->ret, 0);
}

static const char *item_name(const struct got_item *it)
{
	const char *s = strrchr(it->path, '/');
	return s ? s + 1 : it->path;
}

static struct got_item *find_item(struct run *run, const char *name)
{
	for (size_t i = 0; i < run->n_items; i++)
		if (!strcmp(item_name(&run->items[i]), name))
			return &run->items[i];
	fail_msg("no item for '%s'", name);
	return NULL;
}

/* The item must hold exactly n bytes of content(n, seed). */
static void assert_bytes(const struct got_item *it, size_t n, unsigned seed)
{
	if (it->io.reason != RECORD_NONE)
		fail_msg("'%s': error %s errno %d (%s)", it->path,
		         record_reason_name(it->io.reason), it->io.err,
		         it->io.message ? it->io.message : "");
	assert_true(it->io.have_stat);
	assert_int_equal(it->len, n);
	assert_int_equal(it->io.size, n);
	assert_non_null(it->data);
	const uint8_t *want = content(n, seed);
	if (n && memcmp(it->data, want, n)) {
		size_t i = 0;
		while (it->data[i] == want[i])
			i++;
		fail_msg("'%s': bytes differ at offset %zu of %zu", it->path, i, n);
	}
}

static void assert_error(const struct got_item *it, enum record_reason reason, int err)
{
	if (it->io.reason != reason || it->io.err != err)
		fail_msg("'%s': got %s/%s, want %s/%s", it->path,
		         it->io.reason ? record_reason_name(it->io.reason) : "ok",
		         it->io.err ? strerrorname_np(it->io.err) : "0",
		         reason ? record_reason_name(reason) : "ok", err ? strerrorname_np(err) : "0");
	assert_int_equal(it->len, 0);
	assert_null(it->data);
}

/* --- sizes --- */

static void test_reader_sizes(void **state)
{
	static const size_t sizes[] = {
		0, 1, 2, 4095, 4096, 4097, 65535, 65536, 65537,
		1 * MiB - 1, 1 * MiB, 1 * MiB + 1, 3 * MiB + 7,
	};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	char *base = t_tmpdir("reader");
	char name[32];
	uint64_t total = 0;
	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "s%zu", sizes[i]);
		put(base, name, sizes[i], i);
		total += sizes[i];
	}
	struct run run;
	read_dir(state, base, NULL, &run);
	assert_int_equal(run.n_items, N);
	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "s%zu", sizes[i]);
		struct got_item *it = find_item(&run, name);
		assert_bytes(it, sizes[i], i);
		assert_int_equal(it->io.notes, 0);
		assert_int_equal(it->io.ino, t_ino_of(base, name));
	}
	assert_int_equal(run.st.bytes, total);
	assert_int_equal(run.st.grew, 0);
	assert_int_equal(run.st.shrank, 0);
	/* one read per file, of size + 1 (a short read proves EOF) */
	if (run.backend == READER_SYNC) {
		assert_int_equal(run.counts.sys[SC_read], N);
		assert_int_equal(run.counts.sys[SC_fstat], N);
		assert_int_equal(run.counts.sys[SC_openat], N + 1);   /* + the directory */
		assert_int_equal(run.counts.sys[SC_close], N + 1);
	} else {
		assert_int_equal(run.counts.ring[STATS_OP_statx], N);
		assert_int_equal(run.counts.ring[STATS_OP_read], N);
		assert_int_equal(run.counts.sys[SC_read], 0);
		assert_int_equal(run.counts.sys[SC_fstat], 0);
		assert_int_equal(run.counts.sys[SC_pread64], 0);
		assert_true(run.st.enters > 0);
	}
	run_free(&run);
	t_rmtree(base);
}

static void test_reader_empty_and_one_byte(void **state)
{
	char *base = t_tmpdir("reader");
	put(base, "empty", 0, 1);
	put(base, "one", 1, 2);
	struct run run;
	read_dir(state, base, NULL, &run);
	assert_int_equal(run.n_items, 2);
	struct got_item *e = find_item(&run, "empty"), *o = find_item(&run, "one");
	assert_bytes(e, 0, 1);
	assert_bytes(o, 1, 2);
	assert_int_equal(e->io.notes, 0);
	assert_int_equal(o->io.notes, 0);
	assert_int_equal(run.st.bytes, 1);
	run_free(&run);
	t_rmtree(base);
}

/* --- what is never read --- */

static void test_reader_over_max_size(void **state)
{
	char *base = t_tmpdir("reader");
	put(base, "big", 1000, 1);
	put(base, "huge", 3 * MiB, 2);
	struct run_opts ro = { .max_size = 999 };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(run.n_items, 2);
	for (size_t i = 0; i < 2; i++) {
		struct got_item *it = &run.items[i];
		assert_error(it, RECORD_TOO_LARGE, 0);
		assert_true(it->io.have_stat);
		assert_non_null(it->io.message);
	}
	assert_int_equal(find_item(&run, "big")->io.size, 1000);   /* the size is known */
	assert_int_equal(find_item(&run, "huge")->io.size, 3 * MiB);
	/* Never read whole.  (The issue says "not read" at all; the reader now
	 * sniffs one chunk of a file past the stream threshold for an mbox
	 * "From " line, so at most one read a file is allowed here.) */
	uint64_t reads = run.counts.sys[SC_read] + run.counts.sys[SC_pread64] +
	                 run.counts.ring[STATS_OP_read];
	assert_true(reads <= 2);
	assert_true(run.st.bytes < 3 * MiB);
	run_free(&run);
	/* at exactly --max-size it is read */
	ro.max_size = 1000;
	read_dir(state, base, &ro, &run);
	assert_int_equal(run.n_items, 2);
	assert_bytes(find_item(&run, "big"), 1000, 1);
	assert_error(find_item(&run, "huge"), RECORD_TOO_LARGE, 0);
	run_free(&run);
	t_rmtree(base);
}

/* Files past the stream threshold (four batches' worth) that are not mbox
 * files are still one record each, with every byte. */
static void test_reader_large_not_mbox(void **state)
{
	static const size_t sizes[] = { 4 * MiB, 4 * MiB + 1, 6 * MiB + 3 };
	char *base = t_tmpdir("reader");
	put(base, "s4M", sizes[0], 1);
	put(base, "s4M1", sizes[1], 2);
	put(base, "s6M", sizes[2], 3);
	put(base, "small", 10, 4);
	struct run run;
	read_dir(state, base, NULL, &run);
	assert_int_equal(run.n_items, 4);
	assert_bytes(find_item(&run, "s4M"), sizes[0], 1);
	assert_bytes(find_item(&run, "s4M1"), sizes[1], 2);
	assert_bytes(find_item(&run, "s6M"), sizes[2], 3);
	assert_bytes(find_item(&run, "small"), 10, 4);
	for (size_t i = 0; i < run.n_items; i++)
		assert_int_equal(run.items[i].io.notes, 0);
	run_free(&run);
	t_rmtree(base);
}

/* Regression: the stats' bytes of a streamed file that is not an mbox
 * counted its first (sniffed) chunk twice — once when it was read, once
 * again when the whole file was handed to reader_item_read_done. */
static void test_reader_streamed_bytes_counted_once(void **state)
{
	const size_t size = 4 * MiB + 1;      /* just past the stream threshold */
	char *base = t_tmpdir("reader");
	put(base, "big", size, 1);
	put(base, "small", 10, 2);
	struct run run;
	read_dir(state, base, NULL, &run);
	assert_int_equal(run.n_items, 2);
	assert_bytes(find_item(&run, "big"), size, 1);
	uint64_t bytes = run.st.bytes;
	run_free(&run);
	t_rmtree(base);
	assert_int_equal(bytes, size + 10);
}

static void test_reader_fifo_never_opened(void **state)
{
	char *base = t_tmpdir("reader");
	char *p = t_asprintf("%s/pipe", base);
	assert_int_equal(mkfifo(p, 0644), 0);
	put(base, "m", 10, 3);
	alarm(20);     /* an open of the FIFO would block: fail, do not hang */
	struct run run;
	read_dir(state, base, NULL, &run);
	assert_int_equal(run.n_items, 2);
	assert_error(find_item(&run, "pipe"), RECORD_NOT_REGULAR, 0);
	assert_bytes(find_item(&run, "m"), 10, 3);
	/* opened: the directory and m, never the FIFO */
	if (run.backend == READER_SYNC) {
		assert_int_equal(run.counts.sys[SC_openat], 2);
	} else {
		assert_int_equal(run.counts.sys[SC_openat], 1);
		assert_int_equal(run.counts.ring[STATS_OP_openat], 1);
		assert_int_equal(run.counts.ring[STATS_OP_statx], 1);   /* d_type said FIFO */
	}
	run_free(&run);
	/* Given explicitly (followed, type unknown to the walk): the size
	 * query comes first and says FIFO, so neither backend opens it.  The
	 * one open is the walk's O_DIRECTORY try of the argument (ENOTDIR). */
	enum reader_backend be = *(const enum reader_backend *)*state;
	struct walk *w = walk_of(p);
	const char *why;
	assert_true(read_all(be, w, NULL, &run, &why));
	walk_free(w);
	assert_int_equal(run.n_items, 1);
	assert_error(&run.items[0], RECORD_NOT_REGULAR, 0);
	assert_int_equal(run.counts.sys[SC_openat], 1);
	assert_int_equal(run.counts.ring[STATS_OP_openat], 0);
	run_free(&run);
	/* Named in a --files-from list: the FIFO, a device and a regular
	 * file.  Only the regular file is opened, and it still costs four
	 * calls on the sync backend: the statx's size serves the read (no
	 * fstat). */
	char *list = t_asprintf("%s\n/dev/null\n%s/m\n", p, base);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	t_write_all(fds[1], (const uint8_t *)list, strlen(list));
	close(fds[1]);
	w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_list(w, fds[0], false, &list_no_stop), 0);
	close(fds[0]);
	assert_true(read_all(be, w, NULL, &run, &why));
	walk_free(w);
	assert_int_equal(run.n_items, 3);
	assert_error(&run.items[0], RECORD_NOT_REGULAR, 0);
	assert_string_equal(run.items[0].io.message, "FIFO: never opened");
	assert_error(&run.items[1], RECORD_NOT_REGULAR, 0);
	assert_string_equal(run.items[1].io.message, "device: never opened");
	assert_bytes(&run.items[2], 10, 3);
	if (be == READER_SYNC) {
		assert_int_equal(run.counts.sys[SC_statx], 3);
		assert_int_equal(run.counts.sys[SC_openat], 1);
		assert_int_equal(run.counts.sys[SC_fstat], 0);
		assert_int_equal(run.counts.sys[SC_read], 1);
		assert_int_equal(run.counts.sys[SC_close], 1);
	} else {
		assert_int_equal(run.counts.sys[SC_openat], 0);
		assert_int_equal(run.counts.ring[STATS_OP_statx], 3);
		assert_int_equal(run.counts.ring[STATS_OP_openat], 1);
	}
	run_free(&run);
	free(list);
	alarm(0);
	free(p);
	t_rmtree(base);
}

static void test_reader_symlink_and_dir_entries(void **state)
{
	char *base = t_tmpdir("reader");
	put(base, "target", 100, 4);
	char *link = t_asprintf("%s/link", base);
	assert_int_equal(symlink("target", link), 0);
	char *dangling = t_asprintf("%s/dangling", base);
	assert_int_equal(symlink("no-such-file", dangling), 0);
	struct run run;
	read_dir(state, base, NULL, &run);
	assert_int_equal(run.n_items, 3);
	assert_bytes(find_item(&run, "target"), 100, 4);
	/* met while walking: not followed, never opened */
	assert_error(find_item(&run, "link"), RECORD_SYMLINK, 0);
	assert_error(find_item(&run, "dangling"), RECORD_SYMLINK, 0);
	assert_int_equal(run.st.files, 3);
	run_free(&run);
	/* Given explicitly: followed (a dangling one is ENOENT); a directory
	 * named in a --files-from list is walked as a PATH argument is. */
	enum reader_backend be = *(const enum reader_backend *)*state;
	char *list = t_asprintf("%s\n%s\n%s\n", link, dangling, base);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	t_write_all(fds[1], (const uint8_t *)list, strlen(list));
	close(fds[1]);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_list(w, fds[0], false, &list_no_stop), 0);
	close(fds[0]);
	const char *why;
	assert_true(read_all(be, w, NULL, &run, &why));
	walk_free(w);
	assert_int_equal(run.n_items, 5);
	assert_bytes(&run.items[0], 100, 4);
	assert_error(&run.items[1], RECORD_IO, ENOENT);
	assert_int_equal(run.st.expanded, 1);
	/* the directory's own entries, as a walk of it gives them: a root of
	 * their own (the list's entries have none) */
	size_t walked = 0;
	for (size_t i = 0; i < run.n_items; i++) {
		const struct got_item *g = &run.items[i];
		if (strcmp(g->path, "target") && strcmp(g->path, "link") && strcmp(g->path, "dangling"))
			continue;
		walked++;
		if (!strcmp(g->path, "target"))
			assert_bytes(g, 100, 4);
		else
			assert_error(g, RECORD_SYMLINK, 0);
	}
	assert_int_equal(walked, 3);
	run_free(&run);
	free(list);
	free(link);
	free(dangling);
	t_rmtree(base);
}

static void test_reader_missing_path(void **state)
{
	char *base = t_tmpdir("reader");
	char *p = t_asprintf("%s/gone", base);
	enum reader_backend be = *(const enum reader_backend *)*state;
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, p), 0);             /* a missing PATH */
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	t_write_all(fds[1], (const uint8_t *)p, strlen(p));     /* a missing list name */
	close(fds[1]);
	assert_int_equal(walk_add_list(w, fds[0], false, &list_no_stop), 0);
	close(fds[0]);
	struct run run;
	const char *why;
	if (!read_all(be, w, NULL, &run, &why)) {
		walk_free(w);
		free(p);
		t_rmtree(base);
		print_message("SKIP: %s\n", why);
		skip();
	}
	walk_free(w);
	assert_int_equal(run.n_items, 2);
	assert_error(&run.items[0], RECORD_IO, ENOENT);
	assert_error(&run.items[1], RECORD_IO, ENOENT);
	run_free(&run);
	free(p);
	t_rmtree(base);
}

/* --- unreadable, as an unprivileged user --- */

static void child_read(enum reader_backend be, const char *base, int out)
{
	struct walk *w = walk_of(base);
	struct run run;
	const char *why;
	char line[256];
	if (!read_all(be, w, NULL, &run, &why)) {
		walk_free(w);
		dprintf(out, "unavailable\n");
		return;
	}
	walk_free(w);
	for (size_t i = 0; i < run.n_items; i++) {
		const struct got_item *it = &run.items[i];
		snprintf(line, sizeof(line), "%s %s %s len=%zu data=%s\n", item_name(it),
		         it->io.reason ? record_reason_name(it->io.reason) : "ok",
		         it->io.err ? strerrorname_np(it->io.err) : "0", it->len,
		         it->data ? "yes" : "no");
		dprintf(out, "%s", line);
	}
	run_free(&run);
}

struct child_read_arg {
	enum reader_backend be;
	const char *base;
};

static int child_read_fn(void *arg, int out)
{
	const struct child_read_arg *c = arg;
	child_read(c->be, c->base, out);
	return 0;
}

static void test_reader_unreadable(void **state)
{
	enum reader_backend be = *(const enum reader_backend *)*state;
	char *base = t_tmpdir("reader");
	put(base, "secret", 50, 5);
	char *p = t_asprintf("%s/secret", base);
	assert_int_equal(chmod(p, 0), 0);
	free(p);
	struct child_read_arg c = { be, base };
	int status;
	char *got = t_fork_output(child_read_fn, &c, true, &status, NULL);
	t_rmtree(base);
	bool unavailable = status == 0 && !strcmp(got, "unavailable\n");
	if (status == 77 || unavailable) {
		free(got);
		if (status == 77)
			print_message("SKIP: cannot drop root privileges to nobody (setresuid refused)\n");
		else
			print_message("SKIP: the %s backend is unavailable here\n", backend_name(be));
		skip();
	}
	assert_int_equal(status, 0);
	assert_string_equal(got, "secret io-error EACCES len=0 data=no\n");
	free(got);
}

/* --- races, staged through the test seam --- */

enum seam_action { SEAM_NONE, SEAM_UNLINK, SEAM_APPEND, SEAM_TRUNCATE, SEAM_RENAME };

struct seam {
	const char *base;
	const char *trigger;       /* the file whose seam acts */
	const char *victim;        /* the file acted on */
	enum seam_action what;
	size_t arg;                /* bytes appended, or the new size */
	const char *to;            /* SEAM_RENAME: the victim's new name */
	unsigned seed;             /* of the appended bytes */
	unsigned fired, calls;
};

static void seam_hook(void *arg, const char *name)
{
	struct seam *s = arg;
	s->calls++;
	if (strcmp(name, s->trigger))
		return;
	s->fired++;
	char *p = t_asprintf("%s/%s", s->base, s->victim);
	if (s->what == SEAM_UNLINK) {
		assert_int_equal(unlink(p), 0);
	} else if (s->what == SEAM_APPEND) {
		int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
		assert_true(fd >= 0);
		t_write_all(fd, content(s->arg, s->seed), s->arg);
		close(fd);
	} else if (s->what == SEAM_TRUNCATE) {
		assert_int_equal(truncate(p, (off_t)s->arg), 0);
	} else if (s->what == SEAM_RENAME) {
		char *q = t_asprintf("%s/%s", s->base, s->to);
		assert_int_equal(rename(p, q), 0);
		free(q);
	}
	free(p);
}

/* Puts two files of base, *first and *second, in walk (inode) order. */
static void by_inode(const char *base, const char **first, const char **second)
{
	if (t_ino_of(base, *second) < t_ino_of(base, *first)) {
		const char *t = *first;
		*first = *second;
		*second = t;
	}
}

/* The names of two files of base, "a" and "b", in walk order. */
static void two_in_order(const char *base, const char **first, const char **second)
{
	*first = "a";
	*second = "b";
	by_inode(base, first, second);
}

static void make_maildir(const char *base)
{
	for (const char *sub = "cur\0new\0tmp\0"; *sub; sub += strlen(sub) + 1) {
		char *d = t_asprintf("%s/%s", base, sub);
		assert_int_equal(mkdir(d, 0755), 0);
		free(d);
	}
}


static void test_reader_vanished(void **state)
{
	enum reader_backend be = *(const enum reader_backend *)*state;
	char *base = t_tmpdir("reader");
	put(base, "a", 300, 1);
	put(base, "b", 300, 2);
	const char *first, *second;
	two_in_order(base, &first, &second);
	/* The second file vanishes after the walk listed it and before the
	 * reader opens it (see the top of the file for the two timings). */
	struct seam s = {
		.base = base, .trigger = be == READER_SYNC ? first : second,
		.victim = second, .what = SEAM_UNLINK,
	};
	struct run_opts ro = { .after_stat = seam_hook, .after_stat_arg = &s };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(s.fired, 1);
	assert_int_equal(run.n_items, 2);
	assert_string_equal(item_name(&run.items[0]), first);
	assert_string_equal(item_name(&run.items[1]), second);
	assert_bytes(&run.items[0], 300, first[0] == 'a' ? 1 : 2);
	assert_error(&run.items[1], RECORD_IO, ENOENT);
	if (be == READER_URING)
		assert_true(run.items[1].io.have_stat);   /* statx saw it, open did not */
	run_free(&run);
	t_rmtree(base);
}

/* A Maildir at base with the messages a (300 bytes) and b (400) in cur/:
 * its cur/ (to free), *first and *second naming them in walk order. */
static char *two_in_cur(const char *base, const char *a, const char *b, const char **first,
                        const char **second)
{
	make_maildir(base);
	char *cur = t_asprintf("%s/cur", base);
	put(cur, a, 300, 1);
	put(cur, b, 400, 2);
	*first = a;
	*second = b;
	by_inode(cur, first, second);
	return cur;
}

static void rename_second_while_read_state(void **state, const char *a, const char *b,
                                           const char *flags, bool with_state);

static void rename_second_while_read(void **state, const char *a, const char *b, const char *flags)
{
	rename_second_while_read_state(state, a, b, flags, false);
}

/* The bytes of the message two_in_cur made under `name` (a's or b's). */
static void assert_cur_bytes(const struct got_item *it, const char *name, const char *a)
{
	if (name == a)
		assert_bytes(it, 300, 1);
	else
		assert_bytes(it, 400, 2);
}

/* Two messages a and b (300 and 400 bytes) in a Maildir's cur/; the one
 * read second gets the flags `flags` between the walk and its open.  With
 * --state (a first run), the state saved after it names each message
 * where it is now, once. */
static void rename_second_while_read_state(void **state, const char *a, const char *b,
                                           const char *flags, bool with_state)
{
	enum reader_backend be = *(const enum reader_backend *)*state;
	char *base = t_tmpdir("reader");
	const char *first, *second;
	char *cur = two_in_cur(base, a, b, &first, &second);
	char *renamed = t_asprintf("%.*s%s", (int)(strstr(second, ":2,") + 3 - second), second, flags);
	struct seam s = {
		.base = cur, .trigger = be == READER_SYNC ? first : second,
		.victim = second, .what = SEAM_RENAME, .to = renamed,
	};
	struct run_opts ro = { .after_stat = seam_hook, .after_stat_arg = &s };
	char empty[] = "ingest-state 2\nrun 0\n\n";
	if (with_state)
		assert_int_equal(state_load_bytes(strdup(empty), sizeof(empty) - 1, &ro.state), 0);
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(s.fired, 1);
	assert_int_equal(run.n_items, 2);
	assert_string_equal(item_name(&run.items[1]), renamed);
	assert_cur_bytes(&run.items[1], second, a);
	/* where it was met: what that name held goes (the index's rows) */
	char *met = t_asprintf("cur/%s", second);
	assert_non_null(run.items[1].old_path);
	assert_string_equal(run.items[1].old_path, met);
	free(met);
	if (with_state) {
		char *saved = t_asprintf("%s/state", base);
		assert_int_equal(state_save(ro.state, saved, true), 0);
		char *text = t_read_file(base, "state", NULL);
		assert_non_null(strstr(text, renamed));
		char *old = t_asprintf("cur/%s\n", second);
		assert_null(strstr(text, old));
		free(old);
		free(text);
		free(saved);
		state_free(ro.state);
	}
	run_free(&run);
	free(renamed);
	free(cur);
	t_rmtree(base);
}

/* A Maildir message whose flags change between the walk and its open (a
 * rename) is found by its unique name and read under its new name. */
static void test_reader_renamed_during_read(void **state)
{
	rename_second_while_read(state, "a.M1.h:2,S", "b.M2.h:2,S", "RS");
}

/* The same with --state: found under its new name, the message is read
 * and has its record, and the state keeps it there.  Judged a second time
 * at the new name, it met its own entry as a file met twice in the run,
 * and had no record while the state kept it: a message lost downstream. */
static void test_reader_renamed_during_read_with_state(void **state)
{
	rename_second_while_read_state(state, "a.M1.h:2,S", "b.M2.h:2,S", "RS", true);
}

struct rename_twice {
	const char *cur, *trigger, *victim, *to1, *to2;
	unsigned fired;
};

/* Renames the victim at its own seam, then again when the reader, having
 * found it by a listing, is about to open it under that first new name. */
static void rename_twice_hook(void *arg, const char *name)
{
	struct rename_twice *t = arg;
	const char *from, *to;
	if (t->fired == 0 && !strcmp(name, t->trigger)) {
		from = t->victim;
		to = t->to1;
	} else if (t->fired == 1 && !strncmp(name, "../cur/", 7) && !strcmp(name + 7, t->to1)) {
		from = t->to1;
		to = t->to2;
	} else {
		return;
	}
	t->fired++;
	char *p = t_asprintf("%s/%s", t->cur, from), *q = t_asprintf("%s/%s", t->cur, to);
	assert_int_equal(rename(p, q), 0);
	free(p);
	free(q);
}

/* A message renamed again between the listing that found it and its open
 * (a client changing flags as fast as ingest reads) is looked for again and
 * read under its newest name, not left an ENOENT record. */
static void test_reader_renamed_twice(void **state)
{
	enum reader_backend be = *(const enum reader_backend *)*state;
	char *base = t_tmpdir("reader");
	static const char a[] = "a.M1.h:2,S";
	const char *first, *second;
	char *cur = two_in_cur(base, a, "b.M2.h:2,S", &first, &second);
	char *to1 = t_asprintf("%.*sRS", (int)(strstr(second, ":2,") + 3 - second), second);
	char *to2 = t_asprintf("%.*sFRS", (int)(strstr(second, ":2,") + 3 - second), second);
	struct rename_twice t = {
		.cur = cur, .trigger = be == READER_SYNC ? first : second,
		.victim = second, .to1 = to1, .to2 = to2,
	};
	struct run_opts ro = { .after_stat = rename_twice_hook, .after_stat_arg = &t };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(t.fired, 2);
	assert_int_equal(run.n_items, 2);
	assert_string_equal(item_name(&run.items[1]), to2);
	assert_cur_bytes(&run.items[1], second, a);
	run_free(&run);
	free(to1);
	free(to2);
	free(cur);
	t_rmtree(base);
}

/* Renamed at its seam, then at every open the reader tries under the name a
 * listing found (the name it had then): each listing finds it again. */
struct rename_always {
	const char *cur, *trigger, *victim;
	char now[64];
	unsigned fired;
};

static void rename_always_hook(void *arg, const char *name)
{
	struct rename_always *t = arg;
	bool again = t->fired && !strncmp(name, "../cur/", 7) && !strcmp(name + 7, t->now);
	if (!again && (t->fired || strcmp(name, t->trigger)))
		return;
	char *p = t_asprintf("%s/%s", t->cur, t->fired ? t->now : t->victim);
	snprintf(t->now, sizeof(t->now), "%.*s%u", (int)(strstr(t->victim, ":2,") + 3 - t->victim), t->victim,
	         t->fired);   /* a new "flag" each time: the digits of the count */
	char *q = t_asprintf("%s/%s", t->cur, t->now);
	assert_int_equal(rename(p, q), 0);
	free(p);
	free(q);
	t->fired++;
}

/* The rounds are bounded: a message renamed before every open the reader
 * tries is looked for in three listings, then its ENOENT record stands
 * (a run does not chase a file for ever). */
static void test_reader_renamed_every_time(void **state)
{
	enum reader_backend be = *(const enum reader_backend *)*state;
	char *base = t_tmpdir("reader");
	const char *first, *second;
	char *cur = two_in_cur(base, "a.M1.h:2,S", "b.M2.h:2,S", &first, &second);
	struct rename_always t = { .cur = cur, .trigger = be == READER_SYNC ? first : second,
	                           .victim = second };
	struct run_opts ro = { .after_stat = rename_always_hook, .after_stat_arg = &t };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(t.fired, 1 + 3);   /* its seam, then one open a round */
	assert_int_equal(run.n_items, 2);
	assert_error(&run.items[1], RECORD_IO, ENOENT);
	run_free(&run);
	free(cur);
	t_rmtree(base);
}

/* Two files of one unique name (a copy with other flags), one renamed
 * while read: it is read under its own inode's new name, not the other's
 * (whichever the listing gives first). */
static void test_reader_renamed_own_inode(void **state)
{
	rename_second_while_read(state, "x.M1.h:2,F", "x.M1.h:2,S", "RT");
}

/* A mail client marking a folder read while it is read. */
struct mark_read {
	const char *base;          /* the Maildir */
	const char *subs;          /* 'c': c<i>.M<i>.h:2,S in cur/; 'n': n<i>.M<i>.h in new/ */
	size_t n;                  /* messages of each */
	size_t trigger[2], deleted;/* set by the hook */
	bool fired[2];
};

/* Message i's path below the Maildir, before or after the client marks it
 * read: cur/'s gain the flag R, new/'s move to cur/ with S. */
static char *mark_read_path(char sub, size_t i, bool seen)
{
	if (sub == 'c')
		return t_asprintf("cur/c%zu.M%zu.h:2,%s", i, i, seen ? "RS" : "S");
	return t_asprintf("%s/n%zu.M%zu.h%s", seen ? "cur" : "new", i, i, seen ? ":2,S" : "");
}

/* At the first message of each kind the reader stats, every other one of
 * that kind is marked read, but one of the first kind, which is deleted. */
static void mark_read_hook(void *arg, const char *name)
{
	struct mark_read *m = arg;
	const char *at = strchr(m->subs, name[0]);
	size_t s = at ? (size_t)(at - m->subs) : 0;
	if (!at || m->fired[s])
		return;
	m->fired[s] = true;
	m->trigger[s] = strtoul(name + 1, NULL, 10);
	if (s == 0)
		m->deleted = m->trigger[0] == 1 ? 2 : 1;
	for (size_t i = 0; i < m->n; i++) {
		if (i == m->trigger[s])
			continue;
		char *from = mark_read_path(name[0], i, false), *to = mark_read_path(name[0], i, true);
		char *p = t_asprintf("%s/%s", m->base, from);
		char *q = t_asprintf("%s/%s", m->base, to);
		if (s == 0 && i == m->deleted)
			assert_int_equal(unlink(p), 0);
		else
			assert_int_equal(rename(p, q), 0);
		free(from);
		free(to);
		free(p);
		free(q);
	}
}

/* Most of a batch marked read at once: every message is read under its
 * new name, with one listing of the Maildir's cur/ and new/ for them all
 * (whichever of the two they were listed in).  One listing per message
 * made this quadratic: a client marking 20,000 messages read during a run
 * took it from under a second to 50 s (bench/PIPELINE.md).  The deleted
 * message is an ENOENT record.  With batch_bytes, batches are also held
 * to it, past it by one settle's re-read files at most. */
static void mark_folder_read(void **state, const char *subs, size_t n, uint64_t batch_bytes)
{
	enum reader_backend be = *(const enum reader_backend *)*state;
	char *base = t_tmpdir("reader");
	make_maildir(base);
	struct mark_read m = { .base = base, .subs = subs, .n = n };
	for (const char *sub = subs; *sub; sub++)
		for (size_t i = 0; i < n; i++) {
			char *p = mark_read_path(*sub, i, false);
			put(base, p, 100 + i, (unsigned)i + 1 + (*sub == 'n' ? 1000 : 0));
			free(p);
		}
	struct run_opts ro = { .after_stat = mark_read_hook, .after_stat_arg = &m,
	                       .batch_bytes = batch_bytes };
	struct run run;
	read_dir(state, base, &ro, &run);
	size_t kinds = strlen(subs), vanished = 0;
	for (size_t s = 0; s < kinds; s++) {
		assert_true(m.fired[s]);
		vanished += n - 1;
	}
	assert_int_equal(run.n_items, kinds * n);
	for (size_t i = 0; i < run.n_items; i++) {
		const struct got_item *it = &run.items[i];
		char sub = item_name(it)[0];
		size_t s = (size_t)(strchr(subs, sub) - subs);
		size_t k = strtoul(item_name(it) + 1, NULL, 10);
		bool deleted = s == 0 && k == m.deleted;
		char *want = mark_read_path(sub, k, k != m.trigger[s] && !deleted);
		if (!strstr(it->path, want))
			fail_msg("'%s' read, '%s' wanted", it->path, want);
		if (deleted)
			assert_error(it, RECORD_IO, ENOENT);
		else
			assert_bytes(it, 100 + k, (unsigned)k + 1 + (sub == 'n' ? 1000 : 0));
		free(want);
	}
	/* all but the messages whose seams marked the others, and the deleted */
	assert_int_equal(run.st.renamed, vanished - 1);
	/* A settle lists cur/ and new/ once for all the vanished messages it
	 * holds (the deleted message keeps the search going past the first):
	 * 2.  The ring settles once a batch, the sync backend also every 64
	 * vanished messages.  Listing each directory's vanished messages apart
	 * made 4 for the two kinds; one listing per message, one a message.
	 * Listings, not getdents64 calls: the kernel may end a getdents64
	 * early (seen here returning one entry of an empty directory's two),
	 * so the calls a listing takes are not fixed. */
	uint64_t settles = run.n_batches + (be == READER_SYNC ? vanished / 64 : 0);
	uint64_t listings = run.walk.rename_listings;
	/* one settle, the deleted message among its vanished: exactly 2 */
	if (settles == 1)
		assert_int_equal(listings, 2);
	if (listings > 2 * settles || listings >= vanished / 8)
		fail_msg("%llu listings for %llu settles", (unsigned long long)listings,
		         (unsigned long long)settles);
	for (size_t i = 0; batch_bytes && i < run.n_batches; i++)
		if (run.batches[i].budget > batch_bytes + 64 * (100 + n + 1))
			fail_msg("batch %zu held %llu bytes", i, (unsigned long long)run.batches[i].budget);
	run_free(&run);
	t_rmtree(base);
}

static void test_reader_batch_renamed(void **state)
{
	mark_folder_read(state, "c", 100, 0);
}

/* The other half of marking read: new/ moved to cur/. */
static void test_reader_batch_moved_to_cur(void **state)
{
	mark_folder_read(state, "n", 100, 0);
}

/* Both halves in one batch: one listing of the Maildir for them all. */
static void test_reader_batch_renamed_and_moved(void **state)
{
	mark_folder_read(state, "nc", 30, 0);
}

/* Small batches: a batch of vanished messages (the sync backend knows
 * their sizes only when it finds them) still closes near its size. */
static void test_reader_batch_renamed_bounded(void **state)
{
	mark_folder_read(state, "c", 300, 4096);
}

/* Two copies of one message (one unique name) both vanish, and a third
 * file of that unique name appears: it is read once, for one of them. */
static void copies_hook(void *arg, const char *name)
{
	struct seam *s = arg;
	(void)name;
	if (s->fired++)
		return;
	for (const char *n = "x.M1.h:2,F\0x.M1.h:2,S\0"; *n; n += strlen(n) + 1) {
		char *p = t_asprintf("%s/%s", s->base, n);
		assert_int_equal(unlink(p), 0);
		free(p);
	}
	put(s->base, "x.M1.h:2,RS", 500, 3);
}

static void test_reader_renamed_file_read_once(void **state)
{
	char *base = t_tmpdir("reader");
	make_maildir(base);
	char *cur = t_asprintf("%s/cur", base);
	put(cur, "x.M1.h:2,F", 300, 1);
	put(cur, "x.M1.h:2,S", 400, 2);
	struct seam s = { .base = cur };
	struct run_opts ro = { .after_stat = copies_hook, .after_stat_arg = &s };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(run.n_items, 2);
	size_t read_new = 0;
	for (size_t i = 0; i < 2; i++)
		read_new += !strcmp(item_name(&run.items[i]), "x.M1.h:2,RS");
	assert_int_equal(read_new, 1);
	run_free(&run);
	free(cur);
	t_rmtree(base);
}

/* sync only (the ring opens after the seam): a file unlinked after it was
 * opened is still read whole. */
static void test_reader_unlinked_after_open(void **state)
{
	char *base = t_tmpdir("reader");
	put(base, "a", 5000, 1);
	struct seam s = { .base = base, .trigger = "a", .victim = "a", .what = SEAM_UNLINK };
	struct run_opts ro = { .after_stat = seam_hook, .after_stat_arg = &s };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(s.fired, 1);
	assert_int_equal(run.n_items, 1);
	assert_bytes(&run.items[0], 5000, 1);
	run_free(&run);
	t_rmtree(base);
}

/* The file grows by `extra` bytes between its size query and its read. */
static void check_grew(void **state, size_t size, size_t extra)
{
	char *base = t_tmpdir("reader");
	put(base, "a", size, 1);
	put(base, "b", 10, 2);
	struct seam s = {
		.base = base, .trigger = "a", .victim = "a", .what = SEAM_APPEND,
		.arg = extra, .seed = 9,
	};
	struct run_opts ro = { .after_stat = seam_hook, .after_stat_arg = &s };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(s.fired, 1);
	assert_int_equal(s.calls, 2);
	assert_int_equal(run.n_items, 2);
	struct got_item *it = find_item(&run, "a");
	assert_int_equal(it->io.reason, RECORD_NONE);
	assert_true(it->io.notes & RECORD_GREW);
	assert_false(it->io.notes & RECORD_SHRANK);
	/* every byte, the old and the appended */
	assert_int_equal(it->len, size + extra);
	assert_int_equal(it->io.size, size + extra);
	assert_memory_equal(it->data, content(size, 1), size);
	assert_memory_equal(it->data + size, content(extra, 9), extra);
	assert_bytes(find_item(&run, "b"), 10, 2);
	assert_int_equal(run.st.grew, 1);
	assert_int_equal(run.st.bytes, size + extra + 10);
	run_free(&run);
	t_rmtree(base);
}

static void test_reader_grew(void **state)
{
	check_grew(state, 4096, 1);            /* fills size + 1 exactly */
	check_grew(state, 4096, 3 * 4096 + 5); /* several doublings */
	check_grew(state, 0, 100);             /* an empty file written to */
}

static void test_reader_grew_past_max_size(void **state)
{
	char *base = t_tmpdir("reader");
	put(base, "a", 4096, 1);
	struct seam s = {
		.base = base, .trigger = "a", .victim = "a", .what = SEAM_APPEND, .arg = 20000,
	};
	struct run_opts ro = { .max_size = 8192, .after_stat = seam_hook, .after_stat_arg = &s };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(run.n_items, 1);
	struct got_item *it = &run.items[0];
	assert_error(it, RECORD_TOO_LARGE, 0);
	assert_true(it->io.notes & RECORD_GREW);
	run_free(&run);
	t_rmtree(base);
}

static void check_shrank(void **state, size_t size, size_t to)
{
	char *base = t_tmpdir("reader");
	put(base, "a", size, 1);
	struct seam s = {
		.base = base, .trigger = "a", .victim = "a", .what = SEAM_TRUNCATE, .arg = to,
	};
	struct run_opts ro = { .after_stat = seam_hook, .after_stat_arg = &s };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(s.fired, 1);
	assert_int_equal(run.n_items, 1);
	struct got_item *it = &run.items[0];
	assert_bytes(it, to, 1);                  /* size == bytes read */
	assert_true(it->io.notes & RECORD_SHRANK);
	assert_false(it->io.notes & RECORD_GREW);
	assert_int_equal(run.st.shrank, 1);
	assert_int_equal(run.st.bytes, to);
	run_free(&run);
	t_rmtree(base);
}

static void test_reader_shrank(void **state)
{
	check_shrank(state, 4096, 1000);
	check_shrank(state, 65537, 65536);
	check_shrank(state, 100, 0);
}

/* --- many files, batches --- */

static size_t many_size(unsigned i)
{
	return 37 + (i * 7919u) % 300;
}

struct named {
	uint64_t ino;
	unsigned i;
};

static int named_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

static void test_reader_thousand_files(void **state)
{
	enum { N = 1000 };
	const uint64_t batch_bytes = 8 * KiB;
	char *base = t_tmpdir("reader");
	static struct named order[N];
	char name[32];
	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "%u.M%uP1.host:2,S", 1700000000u + i, i);
		put(base, name, many_size(i), i);
		order[i] = (struct named){ t_ino_of(base, name), i };
	}
	qsort(order, N, sizeof(order[0]), named_cmp);   /* the walk's order */
	struct run_opts ro = { .batch_bytes = batch_bytes };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(run.n_items, N);
	for (unsigned k = 0; k < N; k++) {
		unsigned i = order[k].i;
		snprintf(name, sizeof(name), "%u.M%uP1.host:2,S", 1700000000u + i, i);
		struct got_item *it = &run.items[k];
		assert_string_equal(item_name(it), name);
		assert_bytes(it, many_size(i), i);
		assert_true(it->io.maildir == false);
	}
	/* Batch boundaries: at most LIMIT_BATCH_FILES, and cut at
	 * --batch-bytes.  The sync backend closes a batch once it reaches the
	 * target (so a batch ends with the file that crossed it); the ring cuts
	 * before the file that would cross it (a lone file may exceed it). */
	size_t k = 0;
	for (size_t b = 0; b < run.n_batches; b++) {
		const struct got_batch *bt = &run.batches[b];
		assert_int_equal(bt->first, k);
		assert_true(bt->n > 0);
		assert_true(bt->n <= LIMIT_BATCH_FILES);
		uint64_t bytes = 0, last = 0;
		for (size_t j = 0; j < bt->n; j++, k++) {
			last = many_size(order[k].i) + 1;
			bytes += last;
		}
		assert_int_equal(bt->budget, bytes);
		if (run.backend == READER_SYNC) {
			assert_true(bytes - last < batch_bytes);
			if (b + 1 < run.n_batches)
				assert_true(bytes >= batch_bytes);
		} else {
			assert_true(bytes <= batch_bytes || bt->n == 1);
		}
	}
	assert_int_equal(k, N);
	assert_true(run.n_batches >= 20);    /* ~190 KiB of caps in 8 KiB batches */
	run_free(&run);
	t_rmtree(base);
}

static void test_reader_batch_file_limit(void **state)
{
	enum { N = LIMIT_BATCH_FILES + 76 };
	char *base = t_tmpdir("reader");
	char name[32];
	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "e%u", i);
		put(base, name, 0, 0);
	}
	struct run_opts ro = { .batch_bytes = 1 * GiB };
	struct run run;
	read_dir(state, base, &ro, &run);
	assert_int_equal(run.n_items, N);
	size_t total = 0;
	for (size_t b = 0; b < run.n_batches; b++) {
		assert_true(run.batches[b].n <= LIMIT_BATCH_FILES);
		total += run.batches[b].n;
	}
	assert_int_equal(total, N);
	if (run.backend == READER_SYNC) {
		/* deterministic: a full batch, then the rest */
		assert_int_equal(run.n_batches, 2);
		assert_int_equal(run.batches[0].n, LIMIT_BATCH_FILES);
		assert_int_equal(run.batches[1].n, 76);
	} else {
		assert_true(run.n_batches >= 2);
	}
	for (size_t i = 0; i < run.n_items; i++)
		assert_bytes(&run.items[i], 0, 0);
	run_free(&run);
	t_rmtree(base);
}

/* A budget smaller than a batch: the reader sends what it holds and waits
 * for the writer to give bytes back (the sync reader must not wait on bytes
 * that only its own unsent batch holds), and memory stays bounded. */
static void test_reader_budget_backpressure(void **state)
{
	enum { N = 20, SIZE = 3000 };
	const uint64_t limit = 8 * KiB;
	char *base = t_tmpdir("reader");
	char name[16];
	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%02u", i);
		put(base, name, SIZE, i);
	}
	alarm(20);     /* a reader waiting on itself fails instead of hanging */
	struct run_opts ro = { .budget = limit };
	struct run run;
	read_dir(state, base, &ro, &run);
	alarm(0);
	assert_int_equal(run.n_items, N);
	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%02u", i);
		assert_bytes(find_item(&run, name), SIZE, i);
	}
	uint64_t largest = 0;
	for (size_t b = 0; b < run.n_batches; b++)
		if (run.batches[b].budget > largest)
			largest = run.batches[b].budget;
	if (run.backend == READER_SYNC) {
		/* taken file by file: never more than the limit */
		assert_true(run.budget.peak <= limit);
		assert_true(run.n_batches >= N / 2);
	} else {
		/* taken batch by batch: a batch over the limit is granted only
		 * when nothing else is in flight */
		assert_true(run.budget.peak <= (largest > limit ? largest : limit));
	}
	run_free(&run);
	t_rmtree(base);
}

#define BOTH(fn)                                                              \
	{ #fn " (sync)", fn, NULL, NULL, &backend_sync },                 \
	{ #fn " (uring)", fn, NULL, NULL, &backend_uring }

/* The batch size and the stream threshold follow the in-flight budget
 * (reader_options_fit, reader_stream_threshold): whatever --batch-bytes
 * says, a batch is at most half the budget and a file held whole at most an
 * eighth of it, so that --max-inflight stays the memory bound. */
static void test_reader_fit_to_budget(void **state)
{
	(void)state;
	struct reader_options o = { .batch_bytes = LIMIT_BATCH_BYTES_DEFAULT,
	                            .max_inflight = LIMIT_MAX_INFLIGHT_DEFAULT,
	                            .max_size = 256 * MiB };
	reader_options_fit(&o);
	assert_int_equal(o.batch_bytes, LIMIT_BATCH_BYTES_DEFAULT);
	assert_int_equal(reader_stream_threshold(&o), LIMIT_MAX_INFLIGHT_DEFAULT / 8);

	o.max_inflight = 16 * MiB;   /* a 10 MiB mbox is streamed, not held whole */
	reader_options_fit(&o);
	assert_int_equal(reader_stream_threshold(&o), 2 * MiB);

	o.max_inflight = 4 * MiB;    /* the default batch would be read alone */
	reader_options_fit(&o);
	assert_int_equal(o.batch_bytes, 2 * MiB);
	assert_int_equal(reader_stream_threshold(&o), 1 * MiB);

	o.max_inflight = 1;          /* never below 64 KiB */
	reader_options_fit(&o);
	assert_int_equal(o.batch_bytes, 64 * KiB);

	struct reader_options bare = { .batch_bytes = 2 * MiB, .max_size = 256 * MiB };
	reader_options_fit(&bare);   /* no budget: four batches, as before */
	assert_int_equal(bare.batch_bytes, 2 * MiB);
	assert_int_equal(reader_stream_threshold(&bare), 8 * MiB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_reader_sizes),
		BOTH(test_reader_empty_and_one_byte),
		BOTH(test_reader_over_max_size),
		BOTH(test_reader_large_not_mbox),
		BOTH(test_reader_streamed_bytes_counted_once),
		BOTH(test_reader_fifo_never_opened),
		BOTH(test_reader_symlink_and_dir_entries),
		BOTH(test_reader_missing_path),
		BOTH(test_reader_unreadable),
		BOTH(test_reader_vanished),
		BOTH(test_reader_renamed_during_read),
		BOTH(test_reader_renamed_during_read_with_state),
		BOTH(test_reader_batch_renamed),
		BOTH(test_reader_batch_moved_to_cur),
		BOTH(test_reader_batch_renamed_and_moved),
		BOTH(test_reader_batch_renamed_bounded),
		BOTH(test_reader_renamed_file_read_once),
		BOTH(test_reader_renamed_own_inode),
		BOTH(test_reader_renamed_twice),
		BOTH(test_reader_renamed_every_time),
		{ "test_reader_unlinked_after_open (sync)", test_reader_unlinked_after_open,
		  NULL, NULL, &backend_sync },
		BOTH(test_reader_grew),
		BOTH(test_reader_grew_past_max_size),
		BOTH(test_reader_shrank),
		BOTH(test_reader_thousand_files),
		BOTH(test_reader_batch_file_limit),
		BOTH(test_reader_budget_backpressure),
		cmocka_unit_test(test_reader_fit_to_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
