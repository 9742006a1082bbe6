/* SPDX-License-Identifier: MIT */
/* Unit tests for the incremental state (io/state.c), against what state.h
 * and the format comment of state.c promise: the file format (version 2,
 * the run's block, the id in hex, an mbox's offsets), a save and a load
 * giving back every entry, the verdicts (new, unchanged, changed, renamed,
 * met twice), deletions, the run's binding, the lock on FILE.lock, the
 * save through a fresh temporary file, and a corrupt file refused with the
 * line that is wrong.
 *
 * Faults (with -Dfault_injection=true): INGEST_FAULT is read once per
 * process, so each fault runs in a fresh copy of this program
 * (/proc/self/exe --fault-child DIR), which takes the lock, loads,
 * checks, saves and unlocks; the test walks the fault over every
 * allocation and every syscall of that sequence and holds each run to the
 * contract: the step fails with the fault's errno or the run ends well,
 * nothing leaks, no temporary file is left, and FILE is the old state or
 * the new one, whole. */
#include "helpers.h"
#include "io/state.h"
#include "io/walk.h"
#include "core/dynbuf.h"
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#define RUN "root=/r\nformat=jsonl"

static struct record_io io_of(const char *base, const char *path, uint64_t id, uint64_t ino,
                              uint64_t size, bool maildir)
{
	return (struct record_io){
		.root = { base, strlen(base) }, .base = { base, strlen(base) },
		.path = { path, strlen(path) }, .id = id, .have_stat = true, .dev = 7, .ino = ino,
		.size = size, .mtime_sec = 1700000000, .mtime_nsec = 5, .maildir = maildir,
	};
}

/* state_check, asserted to succeed; the verdict. */
static enum state_verdict check(struct state *s, const struct record_io *io, struct str *old,
                                struct state_entry **e)
{
	enum state_verdict v;
	struct str o = { 0 }, b = { 0 };
	struct state_entry *x;
	assert_int_equal(state_check(s, io, &v, &o, &b, &x), 0);
	if (old)
		*old = o;
	if (e)
		*e = x;
	return v;
}

/* The state at path (or, with reset, an empty one whatever a regular file
 * there holds); NULL: an empty state, no file looked at. */
static struct state *load_as(const char *path, bool reset)
{
	struct state *s = NULL;
	int r = state_load(path ? path : "/nonexistent/ingest-state", reset, &s);
	if (r < 0)
		print_message("state_load: %d %s\n", r, state_load_error(s) ? state_load_error(s) : "");
	assert_int_equal(r, 0);
	assert_null(state_load_error(s));
	return s;
}

static struct state *load(const char *path)
{
	return load_as(path, false);
}

static void bind(struct state *s, const char *run)
{
	char why[256] = "";
	assert_int_equal(state_bind_run(s, run, strlen(run), why, sizeof(why)), 0);
}

/* What state_deleted() reported, one line a record. */
struct gone {
	struct dynbuf text;
};

static int on_gone(void *ctx, const struct record_io *io)
{
	struct gone *g = ctx;
	assert_int_equal(io->kind, RECORD_DELETED);
	return dynbuf_printf(&g->text, "%.*s|%.*s|%016llx%s%s%llu\n", (int)io->base.n, io->base.p,
	                     (int)io->path.n, io->path.p, (unsigned long long)io->id,
	                     io->maildir ? " maildir" : "", io->in_mbox ? " mbox@" : " ",
	                     (unsigned long long)io->offset);
}

static void assert_deleted(struct state *s, const char *want)
{
	struct gone g;
	dynbuf_init(&g.text, 0);
	assert_int_equal(state_deleted(s, on_gone, &g), 0);
	assert_int_equal(dynbuf_putc(&g.text, '\0'), 0);
	assert_string_equal(g.text.p, want);
	dynbuf_release(&g.text);
}

static int on_vanished(void *ctx, uint64_t off)
{
	return dynbuf_printf(ctx, "%llu,", (unsigned long long)off);
}

/* The names in dir with a ".tmp." in them. */
static unsigned tmp_files(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	unsigned n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += strstr(de->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

/* A fresh directory, and FILE in it: the set-up of most tests here. */
struct dir_case {
	char *dir, *path;
};

static int dir_setup(void **state)
{
	struct dir_case *fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	fx->dir = t_tmpdir("state");
	fx->path = t_asprintf("%s/st", fx->dir);
	*state = fx;
	return 0;
}

static int dir_teardown(void **state)
{
	struct dir_case *fx = *state;
	free(fx->path);
	t_rmtree(fx->dir);
	free(fx);
	return 0;
}

/* --- the format --- */

static void test_state_file_format(void **state)
{
	const struct dir_case *fx = *state;
	const char *dir = fx->dir, *path = fx->path;
	struct state *s = load(path);
	bind(s, RUN);
	struct record_io a = io_of("/r", "cur/a", 0x0123456789abcdefull, 2, 3, true);
	a.dev = 1;
	a.mtime_sec = -4;
	struct state_entry *e;
	assert_int_equal(check(s, &a, NULL, &e), STATE_NEW);
	struct record_io m = io_of("/r", "box", 0xfedcba9876543210ull, 9, 800, false);
	assert_int_equal(check(s, &m, NULL, &e), STATE_NEW);
	assert_int_equal(state_add_mbox_offset(e, 0), 0);
	assert_int_equal(state_add_mbox_offset(e, 120), 0);
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);
	size_t n;
	char *got = t_read_file(path, NULL, &n);
	static const char want[] =
		"ingest-state 3\n"
		"run 20\n" RUN "\n"
		"1 2 3 -4 5 2 5 16\n/rcur/a0123456789abcdef\n"
		"7 9 800 1700000000 5 2 3 22\n/rboxfedcba9876543210;0,120\n"
		"end 2\n";
	assert_int_equal(n, sizeof(want) - 1);
	assert_memory_equal(got, want, n);
	free(got);
	/* a fresh state is the owner's alone */
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(tmp_files(dir), 0);
}

/* state_format_* write what state_load_bytes reads, and what a file holds. */
static void test_state_format_bytes(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(state_format_begin(&b), 0);
	assert_int_equal(state_format_file(&b, (struct str){ "/r", 2 }, (struct str){ "x/y", 3 },
	                                   0xabcull, 4, 5, 6, 7, 8, false, NULL, 0), 0);
	/* a file whose record was an error: a bare ';' after its id */
	assert_int_equal(state_format_file(&b, (struct str){ "/r", 2 }, (struct str){ "x/z", 3 },
	                                   0xabdull, 4, 9, 6, 7, 8, true, NULL, 0), 0);
	/* an archive: its messages' offsets after its id */
	static const uint64_t offs[] = { 5, 120 };
	assert_int_equal(state_format_file(&b, (struct str){ "/r", 2 }, (struct str){ "a.mbox", 6 },
	                                   0xabeull, 4, 10, 200, 7, 8, false, offs, 2), 0);
	assert_int_equal(state_format_end(&b, 3), 0);
	static const char want[] = "ingest-state 3\nrun 0\n\n4 5 6 7 8 2 3 16\n/rx/y0000000000000abc\n"
	                           "4 9 6 7 8 2 3 17\n/rx/z0000000000000abd;\n"
	                           "4 10 200 7 8 2 6 22\n/ra.mbox0000000000000abe;5,120\nend 3\n";
	assert_int_equal(b.len, sizeof(want) - 1);
	assert_memory_equal(b.p, want, b.len);
	size_t n;
	char *p = dynbuf_take(&b, &n);
	struct state *s;
	assert_int_equal(state_load_bytes(p, n, &s), 0);
	struct record_io io = io_of("/r", "x/y", 0xabc, 5, 6, false);
	io.dev = 4;
	io.mtime_sec = 7;
	io.mtime_nsec = 8;
	assert_int_equal(check(s, &io, NULL, NULL), STATE_UNCHANGED);
	/* changed since: the first may have had a document, the second not */
	struct state_entry *e;
	struct record_io z = io_of("/r", "x/z", 0xabd, 9, 60, false);
	z.dev = 4;
	assert_int_equal(check(s, &z, NULL, &e), STATE_CHANGED);
	assert_false(state_had_document(s, e));
	assert_false(state_was_archive(e));
	/* the archive, grown: its messages are known by offset */
	struct record_io m = io_of("/r", "a.mbox", 0xabe, 10, 300, false);
	m.dev = 4;
	assert_int_equal(check(s, &m, NULL, &e), STATE_CHANGED);
	assert_true(state_was_archive(e));
	assert_false(state_had_document(s, e));
	assert_true(state_had_message(e, 5) && state_had_message(e, 120));
	assert_false(state_had_message(e, 6));
	state_free(s);
	dynbuf_release(&b);
}

/* --- save, then load --- */

static void test_state_round_trip(void **state)
{
	const struct dir_case *fx = *state;
	const char *path = fx->path;
	/* binary-safe: a path with a newline and a space in it */
	struct record_io same = io_of("/r", "cur/1.M1:2,S", 0x11, 101, 10, true);
	struct record_io grown = io_of("/r", "a b\nc", 0x22, 102, 20, false);
	struct record_io moved = io_of("/r", "new/3.M3", 0x33, 103, 30, true);
	struct record_io gone = io_of("/r", "cur/4.M4:2,", 0x44, 104, 40, true);
	struct record_io box = io_of("/r", "box", 0x55, 105, 500, false);
	struct record_io oldbox = io_of("/r", "old.mbox", 0x66, 106, 600, false);
	struct state *s = load(path);
	bind(s, RUN);
	const struct record_io *all[] = { &same, &grown, &moved, &gone, &box, &oldbox };
	for (size_t i = 0; i < 6; i++) {
		struct state_entry *e;
		assert_int_equal(check(s, all[i], NULL, &e), STATE_NEW);
		assert_non_null(e);
		for (uint64_t k = 0; all[i] == &box && k < 3; k++)
			assert_int_equal(state_add_mbox_offset(e, k * 100), 0);
		for (uint64_t k = 0; all[i] == &oldbox && k < 2; k++)
			assert_int_equal(state_add_mbox_offset(e, k * 7), 0);
	}
	assert_deleted(s, "");
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);

	s = load(path);
	bind(s, RUN);
	assert_int_equal(check(s, &same, NULL, NULL), STATE_UNCHANGED);
	grown.size++;
	assert_int_equal(check(s, &grown, NULL, NULL), STATE_CHANGED);
	/* a Maildir message with the same id and inode under another path */
	struct record_io to = io_of("/r", ".Archive/cur/3.M3:2,S", 0x33, 103, 30, true);
	struct str old;
	assert_int_equal(check(s, &to, &old, NULL), STATE_RENAMED);
	t_assert_str(old, "new/3.M3");
	/* the archive changed: one message gone, one new */
	box.size = 700;
	struct state_entry *e;
	assert_int_equal(check(s, &box, NULL, &e), STATE_CHANGED);
	assert_int_equal(state_add_mbox_offset(e, 0), 0);
	assert_int_equal(state_add_mbox_offset(e, 200), 0);
	assert_int_equal(state_add_mbox_offset(e, 300), 0);
	struct dynbuf v;
	dynbuf_init(&v, 0);
	assert_int_equal(state_each_vanished(e, on_vanished, &v), 0);
	assert_int_equal(dynbuf_putc(&v, '\0'), 0);
	assert_string_equal(v.p, "100,");
	dynbuf_release(&v);
	/* an archive gone: each of its messages, a Maildir message gone */
	assert_deleted(s, "/r|cur/4.M4:2,|0000000000000044 maildir 0\n"
	                  "/r|old.mbox|0000000000000066 mbox@0\n"
	                  "/r|old.mbox|0000000000000066 mbox@7\n");
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);

	/* what the second run saw is what the third one finds */
	s = load(path);
	bind(s, RUN);
	assert_int_equal(check(s, &same, NULL, NULL), STATE_UNCHANGED);
	assert_int_equal(check(s, &grown, NULL, NULL), STATE_UNCHANGED);
	assert_int_equal(check(s, &to, NULL, NULL), STATE_UNCHANGED);
	assert_int_equal(check(s, &box, NULL, NULL), STATE_UNCHANGED);
	assert_deleted(s, "");
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);
	/* an unchanged archive keeps its offsets: gone, it names each */
	s = load(path);
	assert_deleted(s, "/r|cur/1.M1:2,S|0000000000000011 maildir 0\n"
	                  "/r|a b\nc|0000000000000022 0\n"
	                  "/r|.Archive/cur/3.M3:2,S|0000000000000033 maildir 0\n"
	                  "/r|box|0000000000000055 mbox@0\n"
	                  "/r|box|0000000000000055 mbox@200\n"
	                  "/r|box|0000000000000055 mbox@300\n");
	state_free(s);
}

/* Met twice in one run: one entry, the second time no record. */
static void test_state_met_twice(void **state)
{
	(void)state;
	struct state *s = load(NULL);
	struct record_io a = io_of("/r", "cur/x", 0x1, 1, 1, true);
	struct state_entry *e;
	assert_int_equal(check(s, &a, NULL, &e), STATE_NEW);
	assert_non_null(e);
	assert_int_equal(check(s, &a, NULL, &e), STATE_UNCHANGED);
	assert_null(e);
	/* another file under the same id (a copy under the Maildir unique
	 * name) is another entry, and new */
	struct record_io b = io_of("/r", ".A/cur/x", 0x1, 2, 1, true);
	assert_int_equal(check(s, &b, NULL, &e), STATE_NEW);
	assert_non_null(e);
	/* a file that is no Maildir message: its id is its place's, so
	 * another spelling and inode of its id is the place met again (a
	 * walk's link there, a list reading through it) */
	struct record_io c = io_of("/r", "a.mbox", 0x2, 3, 1, false);
	assert_int_equal(check(s, &c, NULL, &e), STATE_NEW);
	struct record_io c2 = io_of("/", "r/a.mbox", 0x2, 4, 9, false);
	assert_int_equal(check(s, &c2, NULL, &e), STATE_UNCHANGED);
	assert_null(e);
	state_free(s);
}

/* One file (one id, one inode) named by another spelling or from another
 * working directory: changed, it says the base and path its entry had, so
 * that what was kept under them goes; unchanged, nothing (not read). */
static void test_state_respelled(void **state)
{
	const struct dir_case *fx = *state;
	const char *path = fx->path;
	struct record_io box = io_of("/r", "M/a.mbox", 0xa, 1, 10, false);
	struct state *s = load(path);
	bind(s, RUN);
	assert_int_equal(check(s, &box, NULL, NULL), STATE_NEW);
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);

	struct record_io same = io_of("/r/M", "./a.mbox", 0xa, 1, 10, false);
	struct str old = { "x", 1 };
	s = load(path);
	bind(s, RUN);
	assert_int_equal(check(s, &same, &old, NULL), STATE_UNCHANGED);
	assert_int_equal(old.n, 0);
	state_free(s);

	s = load(path);
	bind(s, RUN);
	struct record_io grown = same;
	grown.size = 11;
	enum state_verdict v;
	struct str old_base = { 0 };
	struct state_entry *e;
	assert_int_equal(state_check(s, &grown, &v, &old, &old_base, &e), 0);
	assert_int_equal(v, STATE_CHANGED);
	t_assert_str(old, "M/a.mbox");
	t_assert_str(old_base, "/r");
	state_free(s);

	/* changed where it was: no old name */
	s = load(path);
	bind(s, RUN);
	box.size = 12;
	assert_int_equal(check(s, &box, &old, NULL), STATE_CHANGED);
	assert_int_equal(old.n, 0);
	state_free(s);
}

/* A file that could not be read is saved as the last state knew it, or,
 * new to it, as an error record; one that could not be statted keeps its
 * old entry: all with no inode, read again either way. */
static void test_state_unread_kept(void **state)
{
	const struct dir_case *fx = *state;
	const char *path = fx->path;
	struct record_io a = io_of("/r", "a", 0xa, 1, 10, false);
	struct record_io b = io_of("/r", "b", 0xb, 2, 20, false);
	struct record_io c = io_of("/r", "c", 0xc, 3, 30, false);
	struct state *s = load(path);
	bind(s, RUN);
	assert_int_equal(check(s, &a, NULL, NULL), STATE_NEW);
	assert_int_equal(check(s, &b, NULL, NULL), STATE_NEW);
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);

	s = load(path);
	bind(s, RUN);
	a.size = 11;   /* changed, then unreadable */
	struct state_entry *e;
	assert_int_equal(check(s, &a, NULL, &e), STATE_CHANGED);
	state_mark_unread(e);
	assert_int_equal(check(s, &c, NULL, &e), STATE_NEW);
	state_mark_unread(e);
	state_mark_unread(NULL);
	assert_int_equal(state_not_read(s, &b), 0);
	assert_deleted(s, "");
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);

	/* their error records went out: each is read again, changed or not
	 * (a saved as the last state knew it, b as it was, c as an error
	 * record, all with no inode) */
	s = load(path);
	a.size = 10;
	assert_int_equal(check(s, &a, NULL, NULL), STATE_CHANGED);
	assert_int_equal(check(s, &b, NULL, NULL), STATE_CHANGED);
	assert_int_equal(check(s, &c, NULL, NULL), STATE_CHANGED);
	state_free(s);
}

/* --state-reset: an empty state whatever FILE holds; the save keeps
 * FILE's mode, as a save over a loaded FILE does. */
static void test_state_reset_and_mode(void **state)
{
	const struct dir_case *fx = *state;
	const char *dir = fx->dir, *path = fx->path;
	t_put_text(dir, "st", "garbage\n");
	assert_int_equal(chmod(path, 0640), 0);
	struct state *s = load_as(path, true);
	bind(s, RUN);
	struct record_io a = io_of("/r", "a", 0xa, 1, 10, false);
	assert_int_equal(check(s, &a, NULL, NULL), STATE_NEW);
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(chmod(path, 0604), 0);
	s = load(path);
	bind(s, RUN);
	assert_int_equal(check(s, &a, NULL, NULL), STATE_UNCHANGED);
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0604);
	assert_int_equal(tmp_files(dir), 0);
}

/* A killed run's journal: taken into the old entries by the next run (an
 * old entry it names is read again, one the state lacks added), up to an
 * entry the kill cut short; removed once the next state is saved. */
static void test_state_journal(void **state)
{
	const struct dir_case *fx = *state;
	struct state *s = load(fx->path);
	bind(s, RUN);
	assert_int_equal(state_journal_open(s, fx->path, true), 0);
	struct record_io a = io_of("/r", "a", 0xa, 1, 10, false);
	assert_int_equal(check(s, &a, NULL, NULL), STATE_NEW);
	assert_int_equal(state_save(s, fx->path, true), 0);
	state_free(s);
	char *jp = t_asprintf("%s.journal", fx->path);
	assert_int_equal(access(jp, F_OK), -1);
	/* what a killed run wrote: its head (the run), a's record, c's
	 * (new), and a cut entry */
	struct dynbuf j;
	dynbuf_init(&j, 0);
	assert_int_equal(dynbuf_printf(&j, "ingest-journal 1\nrun %zu\n%s\n", strlen(RUN), RUN), 0);
	size_t head = j.len;
	assert_int_equal(state_format_file(&j, (struct str){ "/r", 2 }, (struct str){ "a", 1 }, 0xa, 0, 0,
	                                   10, 1700000000, 5, false, NULL, 0), 0);
	assert_int_equal(state_format_file(&j, (struct str){ "/r", 2 }, (struct str){ "c", 1 }, 0xc, 0, 0,
	                                   20, 1700000000, 5, false, NULL, 0), 0);
	size_t whole = j.len;
	assert_int_equal(dynbuf_puts(&j, "0 0 12 1700000000 5 2 1 16\n/rd"), 0);
	assert_int_equal(dynbuf_putc(&j, '\0'), 0);
	/* made by another run (the first, killed, had other options): refused,
	 * as a state of another run is */
	char *fresh = t_asprintf("%s/fresh", fx->dir);
	t_put_text(fx->dir, "fresh.journal", j.p);
	struct state *other = load(fresh);
	bind(other, "root=/r\nformat=es-bulk");
	assert_int_equal(state_journal_open(other, fresh, true), -EINVAL);
	assert_non_null(strstr(state_load_error(other), "its journal was made with format=jsonl, "
	                                                "this run has format=es-bulk"));
	state_free(other);
	free(fresh);
	t_put_text(fx->dir, "st.journal", j.p);
	s = load(fx->path);
	bind(s, RUN);
	assert_int_equal(state_journal_open(s, fx->path, true), 0);
	/* the cut entry is cut off: this run's appends follow whole ones */
	struct stat st;
	assert_int_equal(stat(jp, &st), 0);
	assert_int_equal((size_t)st.st_size, whole);
	/* a, unchanged on disk, is read again; c, not met, is gone */
	assert_int_equal(check(s, &a, NULL, NULL), STATE_CHANGED);
	assert_deleted(s, "/r|c|000000000000000c 0\n");
	assert_int_equal(state_save(s, fx->path, true), 0);
	state_free(s);
	assert_int_equal(access(jp, F_OK), -1);
	/* a journal cut inside its head holds nothing: started afresh */
	j.p[head / 2] = '\0';
	t_put_text(fx->dir, "st.journal", j.p);
	dynbuf_release(&j);
	s = load(fx->path);
	bind(s, RUN);
	assert_int_equal(state_journal_open(s, fx->path, true), 0);
	assert_int_equal(stat(jp, &st), 0);
	assert_int_equal((size_t)st.st_size, head);
	state_free(s);
	assert_int_equal(unlink(jp), 0);
	/* the journal gone, a is unchanged again; --state-reset reads none */
	t_put_text(fx->dir, "st.journal", "garbage that is never read\n");
	s = load(fx->path);
	bind(s, RUN);
	assert_int_equal(state_journal_open(s, fx->path, false), 0);
	assert_int_equal(check(s, &a, NULL, NULL), STATE_UNCHANGED);
	state_free(s);
	free(jp);
}

/* --- the run it was made by --- */

static void bind_refused(const char *saved, const char *run, const char *why_want)
{
	char *dir = t_tmpdir("state");
	char *path = t_asprintf("%s/st", dir);
	struct state *s = load(path);
	bind(s, saved);
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);
	s = load(path);
	char why[256] = "";
	int r = state_bind_run(s, run, strlen(run), why, sizeof(why));
	if (why_want) {
		assert_int_equal(r, -EINVAL);
		assert_string_equal(why, why_want);
	} else {
		assert_int_equal(r, 0);
	}
	state_free(s);
	free(path);
	t_rmtree(dir);
}

static void test_state_bind_run(void **state)
{
	(void)state;
	bind_refused("root=/a\nno-text=0", "root=/a\nno-text=0", NULL);
	bind_refused("root=/a\nno-text=1", "root=/a\nno-text=0",
	             "the state was made with no-text=1, this run has no-text=0");
	/* a state of another root */
	bind_refused("root=/a\nno-text=0", "root=/b\nno-text=0",
	             "the state was made with root=/a, this run is not");
	bind_refused("root=/a", "root=/a\nshard=1/2", "this run has shard=1/2, the state was made without it");
	bind_refused("root=/a\nroot=/b", "root=/b\nroot=/a", "the state was made by another run");
}

/* --- a file that is not a state --- */

/* state_load() of a FILE that holds the n bytes at p (*s: the state). */
static int load_file(const char *p, size_t n, struct state **s)
{
	char *dir = t_tmpdir("state");
	t_put(dir, "st", p, n);
	char *path = t_asprintf("%s/st", dir);
	*s = NULL;
	int r = state_load(path, false, s);
	free(path);
	t_rmtree(dir);
	return r;
}

/* FILE holding n bytes at p is refused with -EINVAL and the reason want. */
static void refused_n(const char *p, size_t n, const char *want)
{
	struct state *s;
	int r = load_file(p, n, &s);
	if (r != -EINVAL || !state_load_error(s) || strcmp(state_load_error(s), want))
		print_message("for %.*s\n", (int)n, p);
	assert_int_equal(r, -EINVAL);
	assert_non_null(state_load_error(s));
	assert_string_equal(state_load_error(s), want);
	state_free(s);
}

static void refused(const char *text, const char *want)
{
	refused_n(text, strlen(text), want);
}

#define HEAD "ingest-state 2\nrun 7\nroot=/r\n"
#define ENTRY "1 2 3 4 5 2 1 16\n/rx0000000000000001\n"

static void test_state_corrupt(void **state)
{
	(void)state;
	static const struct { const char *text, *want; } cases[] = {
		{ "",
		  "line 1: not an ingest state file (no \"ingest-state 3\" header)" },
		{ "{\"id\":1}\n",
		  "line 1: not an ingest state file (no \"ingest-state 3\" header)" },
		{ "ingest-state 4\nrun 0\n\n",
		  "line 1: not an ingest state file (no \"ingest-state 3\" header)" },
		/* format 3 ends with the number of its entries: a state cut at
		 * an entry's end, or with another count, is refused */
		{ "ingest-state 3\nrun 7\nroot=/r\n" ENTRY,
		  "line 6: the file ends without its last line (end N): cut short" },
		{ "ingest-state 3\nrun 7\nroot=/r\n" ENTRY "end 2\n",
		  "line 6: the last line says 2 entries, the file has 1" },
		{ "ingest-state 3\nrun 7\nroot=/r\n" ENTRY "end 1\n" ENTRY,
		  "line 6: bytes after the last line (end N)" },
		{ "ingest-state 3\nrun 7\nroot=/r\n" ENTRY "end x\n",
		  "line 6: a malformed last line (end N)" },
		/* a wrong version: the previous format */
		{ "ingest-state 1\n/r\tx\t1 2 3 4\n",
		  "line 1: a state of an older ingest (format 1; --state-reset starts afresh)" },
		/* the run's block */
		{ "ingest-state 2\n",
		  "line 2: the run's description is missing or cut short" },
		{ "ingest-state 2\nrun 8\nroot=/r\n",
		  "line 2: the run's description is missing or cut short" },
		{ "ingest-state 2\nrun x\n\n",
		  "line 2: the run's description is missing or cut short" },
		{ HEAD "1 2 3 4 5 2 1 16",
		  "line 4: the file ends inside an entry" },
		{ HEAD "1 2 3 4 5 2 1 16\n/rx00000000",
		  "line 4: lengths 2 1 16 run past the end of the file" },
		/* a duplicate line: the second entry for one file */
		{ HEAD ENTRY ENTRY,
		  "line 6: a second entry for the same file" },
		/* lines counted as an editor shows them: a run and a path with newlines */
		{ "ingest-state 2\nrun 17\nroot=/r\nshard=1/2\n" "1 2 3 4 5 2 3 16\n/rx\ny0000000000000001\n" ENTRY ENTRY,
		  "line 10: a second entry for the same file" },
		/* an over-long line: an entry's bytes past where its lengths end */
		{ HEAD "1 2 3 4 5 2 1 16\n/rxx0000000000000001\n",
		  "line 5: the entry's bytes do not end with a newline where its lengths say" },
		{ HEAD "1 2 3 4 5 2 1 16 9\n/rx0000000000000001\n",
		  "line 4: expected 8 numbers separated by single spaces" },
		{ HEAD "1 2 3 4 5 2 1 99999999999999999999\n/rx0000000000000001\n",
		  "line 4: a number out of range" },
		/* the numbers line */
		{ HEAD "1 2 3 4 5 2 1\n/rx0000000000000001\n",
		  "line 4: expected 8 numbers separated by single spaces" },
		{ HEAD "1  2 3 4 5 2 1 16\n/rx0000000000000001\n",
		  "line 4: expected 8 numbers separated by single spaces" },
		{ HEAD "-1 2 3 4 5 2 1 16\n/rx0000000000000001\n",
		  "line 4: a negative number where none may be" },
		{ HEAD "1 2 3 -9223372036854775809 5 2 1 16\n/rx0000000000000001\n",
		  "line 4: a number out of range" },
		{ HEAD "1 2 3 4 1000000000 2 1 16\n/rx0000000000000001\n",
		  "line 4: nanoseconds of 1000000000 (at most 999999999)" },
		/* the id and the offsets */
		{ HEAD "1 2 3 4 5 2 1 16\n/rx000000000000000G\n",
		  "line 5: a malformed id or message offsets" },
		{ HEAD "1 2 3 4 5 2 1 16\n/rx000000000000000A\n",
		  "line 5: a malformed id or message offsets" },
		{ HEAD "1 2 3 4 5 2 1 15\n/rx000000000000001\n",
		  "line 5: a malformed id or message offsets" },
		{ HEAD "1 2 3 4 5 2 1 18\n/rx0000000000000001;x\n",
		  "line 5: a malformed id or message offsets" },
		{ HEAD "1 2 3 4 5 2 1 20\n/rx0000000000000001;1,x\n",
		  "line 5: a malformed id or message offsets" },
		{ HEAD "1 2 3 4 5 2 1 20\n/rx0000000000000001,1,2\n",
		  "line 5: a malformed id or message offsets" },
		{ HEAD "1 2 3 4 5 2 1 40\n/rx0000000000000001;99999999999999999999999\n",
		  "line 5: a malformed id or message offsets" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		refused(cases[i].text, cases[i].want);
	/* truncated: every cut of a good file short of its end */
	static const char good[] = HEAD ENTRY;
	for (size_t cut = 0; cut < sizeof(good) - 1; cut++) {
		if (cut == sizeof(HEAD) - 1)
			continue;   /* a state of no entries */
		struct state *s;
		/* an empty file too: a saved state has its header */
		assert_int_equal(load_file(good, cut, &s), -EINVAL);
		assert_non_null(state_load_error(s));
		state_free(s);
	}
	/* the same id for another path is no duplicate */
	static const char two[] = HEAD ENTRY "1 2 3 4 5 2 1 16\n/ry0000000000000001\n";
	struct state *s;
	assert_int_equal(load_file(two, sizeof(two) - 1, &s), 0);
	state_free(s);
	/* a NUL inside the bytes is data, not an end */
	static const char nul[] = HEAD "1 2 3 4 5 2 1 16\n/r\0" "0000000000000001\n" ENTRY ENTRY;
	refused_n(nul, sizeof(nul) - 1, "line 8: a second entry for the same file");
}

static void test_state_not_a_file(void **state)
{
	(void)state;
	char *dir = t_tmpdir("state");
	t_put_text(dir, "real", "ingest-state 2\nrun 0\n\n");
	char *path = t_asprintf("%s/st", dir), *real = t_asprintf("%s/real", dir);
	assert_int_equal(symlink(real, path), 0);
	struct state *s = NULL;
	assert_int_equal(state_load(path, false, &s), -ELOOP);
	assert_string_equal(state_load_error(s), "a symbolic link (give the path of the file itself)");
	state_free(s);
	s = NULL;
	assert_int_equal(state_load(dir, false, &s), -EISDIR);
	assert_string_equal(state_load_error(s), "not a regular file");
	state_free(s);
	/* --state-reset refuses them too: its save would rename the new state
	 * over the link, the directory or a device */
	s = NULL;
	assert_int_equal(state_load(path, true, &s), -ELOOP);
	state_free(s);
	s = NULL;
	assert_int_equal(state_load(dir, true, &s), -EISDIR);
	state_free(s);
	/* a FIFO nobody writes is refused at once, not waited for (the alarm
	 * ends a test that would hang) */
	char *fifo = t_asprintf("%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);
	for (int reset = 0; reset <= 1; reset++) {
		s = NULL;
		assert_int_equal(state_load(fifo, reset, &s), -ENOTSUP);
		assert_string_equal(state_load_error(s), "not a regular file");
		state_free(s);
	}
	alarm(0);
	free(fifo);
	/* a corrupt regular file is what --state-reset is for */
	s = NULL;
	t_put_text(dir, "bad", "not a state\n");
	char *bad = t_asprintf("%s/bad", dir);
	assert_int_equal(state_load(bad, true, &s), 0);
	assert_null(state_load_error(s));
	state_free(s);
	free(bad);
	/* a missing file is the first run */
	char *none = t_asprintf("%s/none", dir);
	s = load(none);
	assert_deleted(s, "");
	state_free(s);
	free(none);
	free(real);
	free(path);
	t_rmtree(dir);
}

/* An entry not seen in a directory the walk could not list is not gone:
 * no deletion, and the save keeps it (run as nobody, for whom a mode-000
 * directory cannot be listed). */
struct unlisted_child {
	const char *path, *base;
};

static int unlisted_child(void *arg, int out)
{
	const struct unlisted_child *c = arg;
	struct state *s = NULL;
	if (state_load(c->path, false, &s) < 0)
		return 1;
	struct walk *w = walk_new();
	if (!w || walk_add_path(w, c->base) < 0)
		return 1;
	struct walk_entry *e;
	int r;
	while ((r = walk_next(w, &e)) > 0)
		walk_entry_done(w, e);
	state_set_walk(s, w);
	struct gone g;
	dynbuf_init(&g.text, 0);
	if (r < 0 || state_deleted(s, on_gone, &g) < 0 || state_save(s, c->path, true) < 0)
		return 1;
	t_write_all(out, g.text.p, g.text.len);
	dynbuf_release(&g.text);
	walk_free(w);
	state_free(s);
	return 0;
}

static void test_state_unlisted_kept(void **state)
{
	const struct dir_case *fx = *state;
	char *base = t_tmpdir("state-tree");
	t_mkdirs(base, (const char *const[]){ "locked", "open", NULL });
	struct state *s = load(fx->path);
	struct record_io a = io_of(base, "locked/a", 0xa, 1, 10, false);
	struct record_io b = io_of(base, "open/b", 0xb, 2, 20, false);
	assert_int_equal(check(s, &a, NULL, NULL), STATE_NEW);
	assert_int_equal(check(s, &b, NULL, NULL), STATE_NEW);
	assert_int_equal(state_save(s, fx->path, true), 0);
	state_free(s);
	/* nobody may read the state and save it again */
	assert_int_equal(chmod(fx->path, 0644), 0);
	assert_int_equal(chmod(fx->dir, 0777), 0);
	char *locked = t_asprintf("%s/locked", base);
	assert_int_equal(chmod(locked, 0), 0);
	struct unlisted_child c = { fx->path, base };
	int status;
	char *got = t_fork_output(unlisted_child, &c, true, &status, NULL);
	assert_int_equal(chmod(locked, 0755), 0);
	free(locked);
	if (status == 77) {
		free(got);
		t_rmtree(base);
		print_message("SKIP: cannot drop root privileges to nobody (setresuid refused)\n");
		skip();
	}
	assert_int_equal(status, 0);
	char *want = t_asprintf("%s|open/b|000000000000000b 0\n", base);
	assert_string_equal(got, want);
	free(want);
	free(got);
	/* kept: a run that lists it all finds it gone now */
	s = load(fx->path);
	char *both = t_asprintf("%s|locked/a|000000000000000a 0\n", base);
	assert_deleted(s, both);
	free(both);
	state_free(s);
	t_rmtree(base);
}

/* --- the lock --- */

struct lock_child {
	const char *path;
	bool wait;
	bool stop_by_alarm;
};

static atomic_int child_stop;

static void on_alarm(int sig)
{
	(void)sig;
	static int alarms;
	atomic_store(&child_stop, 1);
	/* a wait that goes on after *stop was set is a failure, not a hang */
	if (++alarms == 10)
		_exit(9);
}

static int lock_child(void *arg, int out)
{
	const struct lock_child *c = arg;
	if (c->stop_by_alarm) {
		struct sigaction sa = { .sa_handler = on_alarm };   /* no SA_RESTART */
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = { .it_value = { 0, 200000 }, .it_interval = { 0, 200000 } };
		setitimer(ITIMER_REAL, &it, NULL);
	}
	char why[128];
	int fd = state_lock(c->path, c->wait, &child_stop, why, sizeof(why));
	struct itimerval off = { 0 };
	setitimer(ITIMER_REAL, &off, NULL);
	dprintf(out, "%s %s", fd >= 0 ? "locked" : strerrorname_np(-fd), why);
	state_unlock(fd);
	return 0;
}

static char *lock_in_child(struct lock_child *c, bool unprivileged)
{
	int status;
	char *got = t_fork_output(lock_child, c, unprivileged, &status, NULL);
	if (status == 77) {
		free(got);
		print_message("SKIP: cannot drop root privileges to nobody (setresuid refused)\n");
		skip();
	}
	assert_int_equal(status, 0);
	return got;
}

static void test_state_lock(void **state)
{
	const struct dir_case *fx = *state;
	const char *path = fx->path;
	char *lp = t_asprintf("%s/st.lock", fx->dir);
	atomic_int stop = 0;
	char why[128];
	int fd = state_lock(path, false, &stop, why, sizeof(why));
	assert_true(fd >= 0);
	assert_string_equal(why, "");
	struct stat st;
	assert_int_equal(stat(lp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	struct lock_child c = { .path = path };
	char *got = lock_in_child(&c, false);
	char *want = t_asprintf("EAGAIN in use by another ingest (pid %ld)", (long)getpid());
	assert_string_equal(got, want);
	free(want);
	free(got);
	/* --wait-state: stopped by a signal that sets *stop */
	c.wait = c.stop_by_alarm = true;
	got = lock_in_child(&c, false);
	assert_string_equal(got, "EINTR ");
	free(got);
	state_unlock(fd);
	/* released: never removed, and free for the next run */
	assert_int_equal(stat(lp, &st), 0);
	c.wait = c.stop_by_alarm = false;
	got = lock_in_child(&c, false);
	assert_string_equal(got, "locked ");
	free(got);
	state_unlock(-1);
	free(lp);
}

/* --wait-state: the second run gets the lock once the first lets it go. */
static void test_state_lock_wait(void **state)
{
	const struct dir_case *fx = *state;
	const char *path = fx->path;
	atomic_int stop = 0;
	char why[128];
	int fd = state_lock(path, false, &stop, why, sizeof(why));
	assert_true(fd >= 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char w[128];
		int l = state_lock(path, true, &child_stop, w, sizeof(w));
		_exit(l >= 0 ? 0 : -l);
	}
	struct timespec ts = { 0, 300 * 1000000L };
	nanosleep(&ts, NULL);
	int status;
	assert_int_equal(waitpid(pid, &status, WNOHANG), 0);   /* still waiting */
	state_unlock(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Refused before any input is read: a directory that cannot take the new
 * state, a lock file that is a symlink. */
static void test_state_lock_refused(void **state)
{
	const struct dir_case *fx = *state;
	const char *dir = fx->dir, *path = fx->path;
	/* the lock itself could be taken: the directory is what refuses */
	t_put_text(dir, "st.lock", "");
	char *lp = t_asprintf("%s/st.lock", dir), *elsewhere = t_asprintf("%s/elsewhere", dir);
	assert_int_equal(chmod(lp, 0666), 0);
	struct lock_child c = { .path = path };
	char *got = lock_in_child(&c, true);
	assert_memory_equal(got, "EACCES ", 7);
	free(got);
	char *missing = t_asprintf("%s/no/st", dir);
	atomic_int stop = 0;
	char why[256];
	assert_int_equal(state_lock(missing, false, &stop, why, sizeof(why)), -ENOENT);
	free(missing);
	assert_int_equal(unlink(lp), 0);
	assert_int_equal(symlink(elsewhere, lp), 0);
	assert_int_equal(state_lock(path, false, &stop, why, sizeof(why)), -ELOOP);
	char *want = t_asprintf("its lock file %s is a symbolic link", lp);
	assert_string_equal(why, want);
	assert_int_equal(access(elsewhere, F_OK), -1);   /* nothing made through it */
	free(want);
	free(elsewhere);
	free(lp);
}

/* --- faults --- */

/* The sequence a run makes, in a fresh process: 0 when every step went
 * well, 3 when one failed with errno e (and what it made was freed), 1
 * otherwise. */
static int fault_child(const char *dir, int e)
{
	char *path = t_asprintf("%s/st", dir);
	atomic_int stop = 0;
	char why[256];
	struct state *s = NULL;
	int status = 1, r;
	int fd = r = state_lock(path, false, &stop, why, sizeof(why));
	if (r >= 0)
		r = state_load(path, false, &s);
	if (r >= 0)
		r = state_bind_run(s, RUN, strlen(RUN), why, sizeof(why));
	struct record_io a = io_of("/r", "cur/1.M1:2,S", 0x11, 101, 10, true);
	struct record_io b = io_of("/r", "box", 0x55, 105, 600, false);
	enum state_verdict v;
	struct str old, old_base;
	struct state_entry *en;
	if (r >= 0)
		r = state_check(s, &a, &v, &old, &old_base, &en);
	if (r >= 0)
		r = state_check(s, &b, &v, &old, &old_base, &en);
	for (uint64_t k = 0; r >= 0 && k < 40; k++)
		r = state_add_mbox_offset(en, k * 10);
	if (r >= 0)
		r = state_save(s, path, true);
	if (r >= 0)
		status = 0;
	else if (r == -e)
		status = 3;
	else
		fprintf(stderr, "unexpected %d\n", r);
	state_free(s);
	state_unlock(fd);
	free(path);
	return status;
}

struct fault_run {
	const char *dir;
	const char *spec;
};

static int exec_fault_child(void *arg, int out)
{
	const struct fault_run *f = arg;
	dup2(out, STDERR_FILENO);
	setenv("INGEST_FAULT", f->spec, 1);
	execl("/proc/self/exe", "test-state", "--fault-child", f->dir, (char *)NULL);
	return 126;
}

/* The previous state of the fault runs: what a run before them saved. */
static void fault_old_state(const char *dir)
{
	char *path = t_asprintf("%s/st", dir);
	struct state *s = load(path);
	bind(s, RUN);
	struct record_io a = io_of("/r", "cur/1.M1:2,S", 0x11, 101, 10, true);
	struct record_io g = io_of("/r", "gone", 0x77, 107, 70, false);
	assert_int_equal(check(s, &a, NULL, NULL), STATE_NEW);
	assert_int_equal(check(s, &g, NULL, NULL), STATE_NEW);
	assert_int_equal(state_save(s, path, true), 0);
	state_free(s);
	free(path);
}

static void skip_without_faults(void)
{
	if (!INGEST_FAULT_INJECTION) {
		print_message("SKIP: built without -Dfault_injection=true\n");
		skip();
	}
}

/* Runs the child under spec in a copy of the old state; its exit status,
 * whether the fault fired, and FILE after it. */
static int fault_run(const char *spec, bool *fired, char **after, size_t *after_n)
{
	char *dir = t_tmpdir("state-fault");
	fault_old_state(dir);
	struct fault_run f = { dir, spec };
	int status;
	char *err = t_fork_output(exec_fault_child, &f, false, &status, NULL);
	*fired = strstr(err, "ingest-fault: fired ") != NULL;
	if (status != 0 && status != 3)
		print_message("%s: exit %d: %s\n", spec, status, err);
	free(err);
	*after = t_read_file(dir, "st", after_n);
	assert_int_equal(tmp_files(dir), 0);
	t_rmtree(dir);
	return status;
}

static void fault_walk(const char *kind, const char *errname, int e)
{
	skip_without_faults();
	/* the old and the new state, as a run without a fault leaves them */
	char *dir = t_tmpdir("state-fault");
	fault_old_state(dir);
	size_t old_n, new_n;
	char *old = t_read_file(dir, "st", &old_n);
	assert_int_equal(fault_child(dir, e), 0);
	char *new = t_read_file(dir, "st", &new_n);
	t_rmtree(dir);
	unsigned failed = 0, n;
	for (n = 1; n < 1000; n++) {
		char spec[64];
		snprintf(spec, sizeof(spec), "%u:%s:%s", n, errname, kind);
		bool fired;
		char *after;
		size_t after_n;
		int status = fault_run(spec, &fired, &after, &after_n);
		assert_true(status == 0 || status == 3);
		bool is_old = after_n == old_n && !memcmp(after, old, old_n);
		bool is_new = after_n == new_n && !memcmp(after, new, new_n);
		free(after);
		/* whole, never torn; replaced only by a run that succeeded */
		assert_true(status == 0 ? is_new : is_old);
		failed += status == 3;
		if (!fired)
			break;
	}
	/* the walk reached the end of the sequence, and faults were seen */
	assert_true(n > 1 && n < 1000);
	assert_true(failed > 0);
	free(old);
	free(new);
}

static void test_state_fault_alloc(void **state)
{
	(void)state;
	fault_walk("alloc", "ENOMEM", ENOMEM);
}

static void test_state_fault_sys(void **state)
{
	(void)state;
	fault_walk("sys", "EIO", EIO);
}

/* The temporary name taken (EEXIST: something is there): another one. */
static void test_state_fault_tmp_collision(void **state)
{
	(void)state;
	skip_without_faults();
	bool fired;
	char *after;
	size_t n;
	/* the lock, the load, then the temporary file (INGEST_FAULT takes
	 * a number for an errno it has no name for) */
	char spec[32];
	snprintf(spec, sizeof(spec), "3:%d:sys:openat", EEXIST);
	assert_int_equal(fault_run(spec, &fired, &after, &n), 0);
	assert_true(fired);
	assert_non_null(strstr(after, "/rbox0000000000000055;0,10,20,"));
	free(after);
}

/* The new state is durable before it replaces the old one: a failed
 * fsync of the temporary file fails the save, and FILE stays as it was. */
static void test_state_fault_fsync(void **state)
{
	(void)state;
	skip_without_faults();
	bool fired;
	char *after;
	size_t n;
	assert_int_equal(fault_run("1:EIO:sys:fsync", &fired, &after, &n), 3);
	assert_true(fired);
	assert_null(strstr(after, "/rbox"));
	assert_non_null(strstr(after, "/rgone"));
	free(after);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--fault-child")) {
		const char *spec = getenv("INGEST_FAULT");
		const char *e = spec ? strchr(spec, ':') : NULL;
		return fault_child(argv[2], e && !strncmp(e, ":ENOMEM", 7) ? ENOMEM : EIO);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_file_format, dir_setup, dir_teardown),
		cmocka_unit_test(test_state_format_bytes),
		cmocka_unit_test_setup_teardown(test_state_round_trip, dir_setup, dir_teardown),
		cmocka_unit_test(test_state_met_twice),
		cmocka_unit_test_setup_teardown(test_state_respelled, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_state_unread_kept, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_state_reset_and_mode, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_state_journal, dir_setup, dir_teardown),
		cmocka_unit_test(test_state_bind_run),
		cmocka_unit_test(test_state_corrupt),
		cmocka_unit_test(test_state_not_a_file),
		cmocka_unit_test_setup_teardown(test_state_unlisted_kept, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_state_lock, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_state_lock_wait, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_state_lock_refused, dir_setup, dir_teardown),
		cmocka_unit_test(test_state_fault_alloc),
		cmocka_unit_test(test_state_fault_sys),
		cmocka_unit_test(test_state_fault_tmp_collision),
		cmocka_unit_test(test_state_fault_fsync),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
