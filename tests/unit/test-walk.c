/* SPDX-License-Identifier: MIT */
/* Unit tests for io/walk: the exact sequence of entries it yields for trees
 * built in a fresh temporary directory, with what walk_entry_describe says of
 * each (path, Maildir folder, subdir and flags) and the errors the walk
 * itself reports.
 *
 * Each walk is rendered as text, one line per entry:
 *   <path> <d_type>[ follow][ maildir=<folder>|<subdir>|<flags>][ error=<reason>/<ERRNO>]
 * and compared with the expected text, so a failure prints both sequences.
 * Within a directory the walk yields files sorted by inode, then enters the
 * subdirectories sorted by inode; the expected text is put in that order
 * from lstat's st_ino (ext4 and tmpfs hand out inodes in orders of their own).
 *
 * Permissions: as root, an unreadable directory is readable anyway, so those
 * cases run in a forked child that drops to `nobody` (setresuid), and report
 * its text back through a pipe. */
#include "io/walk.h"
#include "core/arena.h"
#include "core/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
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
#include <sys/socket.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "helpers.h"

/* --- text building --- */

struct sb {
	char *p;
	size_t len, cap;
};

/* the stop flag of lists that nothing stops */
static const atomic_int no_stop = 0;

static void sb_printf(struct sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	if (s->len + (size_t)n + 1 > s->cap) {
		size_t nc = s->cap ? s->cap : 256;
		while (nc < s->len + (size_t)n + 1)
			nc *= 2;
		s->p = realloc(s->p, nc);
		assert_non_null(s->p);
		s->cap = nc;
	}
	va_start(ap, fmt);
	vsnprintf(s->p + s->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

static char *sb_take(struct sb *s)
{
	if (!s->p)
		return strdup("");
	return s->p;
}

static const char *type_name(uint8_t t)
{
	switch (t) {
	case DT_REG: return "reg";
	case DT_DIR: return "dir";
	case DT_LNK: return "lnk";
	case DT_FIFO: return "fifo";
	case DT_SOCK: return "sock";
	case DT_CHR: return "chr";
	case DT_BLK: return "blk";
	case DT_UNKNOWN: return "unknown";
	default: return "?";
	}
}

/* Renders every entry of the walk; each entry is handed back with
 * walk_entry_done as the reader would.  `root` is the root every entry must
 * carry (a differing one is printed, so it shows in the comparison). */
static char *walk_render(struct walk *w, const char *root)
{
	struct sb s = { 0 };
	struct arena a;
	arena_init(&a, 0);
	for (;;) {
		struct walk_entry *e;
		int r = walk_next(w, &e);
		if (r == 0)
			break;
		if (r < 0) {
			sb_printf(&s, "walk_next failed: %d\n", r);
			break;
		}
		struct record_io io;
		memset(&io, 0, sizeof(io));
		if (walk_entry_describe(e, &a, &io) < 0) {
			sb_printf(&s, "describe failed\n");
			walk_entry_done(w, e);
			break;
		}
		sb_printf(&s, "%.*s %s", (int)io.path.n, io.path.p, type_name(e->d_type));
		if (strlen(root) != io.root.n || memcmp(root, io.root.p, io.root.n))
			sb_printf(&s, " root=%.*s", (int)io.root.n, io.root.p);
		if (e->follow)
			sb_printf(&s, " follow");
		if (io.maildir)
			sb_printf(&s, " maildir=%.*s|%.*s|%.*s", (int)io.folder.n, io.folder.p,
			          (int)io.subdir.n, io.subdir.p, (int)io.flags.n, io.flags.p);
		if (e->reason != RECORD_NONE)
			sb_printf(&s, " error=%s/%s", record_reason_name(e->reason),
			          e->err ? strerrorname_np(e->err) : "0");
		sb_printf(&s, "\n");
		walk_entry_done(w, e);
		arena_reset(&a);
	}
	arena_release(&a);
	return sb_take(&s);
}

static void assert_text(const char *got, const char *want)
{
	if (strcmp(got, want)) {
		print_error("--- walk gave:\n%s--- expected:\n%s---\n", got, want);
		fail();
	}
}

/* --- temporary trees --- */

static void put_file(const char *base, const char *rel, const char *content)
{
	t_put_text(base, rel, content);
}

static void put_files(const char *base, const char *const *rel)
{
	for (; *rel; rel++)
		put_file(base, *rel, "Subject: x\n\nbody\n");
}


/* Blocks of expected text, one per directory member, put in inode order. */
struct block {
	const char *rel;      /* the member, relative to base */
	const char *text;     /* its expected lines (a subtree for a directory) */
	uint64_t ino;
};

static int block_cmp(const void *a, const void *b)
{
	const struct block *x = a, *y = b;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

static const char *base_name(const char *rel)
{
	const char *slash = strrchr(rel, '/');
	return slash ? slash + 1 : rel;
}

/* Concatenates the blocks in inode order into s; in a Maildir (cur/ and
 * new/ among them) new/ comes first, as the walk lists it first. */
static void by_ino(struct sb *s, const char *base, struct block *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i].ino = t_ino_of(base, b[i].rel);
	qsort(b, n, sizeof(*b), block_cmp);
	size_t cur = n, nw = n;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(base_name(b[i].rel), "cur"))
			cur = i;
		if (!strcmp(base_name(b[i].rel), "new"))
			nw = i;
	}
	if (cur < n && nw < n && nw > 0) {
		struct block t = b[nw];
		memmove(b + 1, b, nw * sizeof(*b));
		b[0] = t;
	}
	for (size_t i = 0; i < n; i++)
		sb_printf(s, "%s", b[i].text);
}

static char *walk_path_render(const char *path)
{
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, path), 0);
	char *got = walk_render(w, path);
	walk_free(w);
	return got;
}

/* --- the cases --- */

static void test_walk_maildir_cur_new_not_tmp(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "cur", "new", "tmp", NULL });
	put_files(base, (const char *const[]){
		"cur/1700000000.M1P1.host,S=17:2,FRS", "cur/1700000001.M2P1.host:2,",
		"new/1700000002.M3P1.host", "tmp/1700000003.M4P1.host", NULL });
	struct sb cur = { 0 }, want = { 0 };
	by_ino(&cur, base, (struct block[]){
		{ "cur/1700000000.M1P1.host,S=17:2,FRS",
		  "cur/1700000000.M1P1.host,S=17:2,FRS reg maildir=|cur|FRS\n" },
		{ "cur/1700000001.M2P1.host:2,", "cur/1700000001.M2P1.host:2, reg maildir=|cur|\n" },
	}, 2);
	by_ino(&want, base, (struct block[]){
		{ "cur", cur.p },
		{ "new", "new/1700000002.M3P1.host reg maildir=|new|\n" },
		{ "tmp", "" },
	}, 3);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, base), 0);
	char *got = walk_render(w, base);
	assert_text(got, want.p);
	/* tmp/ is not even entered: the root, cur/ and new/ are listed */
	struct walk_stats st;
	walk_stats_get(w, &st);
	assert_int_equal(st.dirs, 3);
	walk_free(w);
	free(got);
	free(cur.p);
	free(want.p);
	t_rmtree(base);
}

static void test_walk_maildirpp_folders(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){
		"cur", "new", "tmp",
		".Sent", ".Sent/cur", ".Sent/new", ".Sent/tmp",
		".Archive.2019", ".Archive.2019/cur", ".Archive.2019/new", ".Archive.2019/tmp",
		NULL });
	put_files(base, (const char *const[]){
		"notes.txt",                             /* a file in the Maildir root */
		"cur/a:2,S", ".Sent/cur/b:2,RS", ".Sent/tmp/half-written",
		".Archive.2019/new/c", ".Archive.2019/cur/d!2,T", NULL });
	struct sb sent = { 0 }, arch = { 0 }, want = { 0 };
	by_ino(&sent, base, (struct block[]){
		{ ".Sent/cur", ".Sent/cur/b:2,RS reg maildir=Sent|cur|RS\n" },
		{ ".Sent/new", "" }, { ".Sent/tmp", "" },
	}, 3);
	by_ino(&arch, base, (struct block[]){
		{ ".Archive.2019/cur", ".Archive.2019/cur/d!2,T reg maildir=Archive.2019|cur|T\n" },
		{ ".Archive.2019/new", ".Archive.2019/new/c reg maildir=Archive.2019|new|\n" },
		{ ".Archive.2019/tmp", "" },
	}, 3);
	sb_printf(&want, "notes.txt reg\n");   /* files before subdirectories */
	by_ino(&want, base, (struct block[]){
		{ "cur", "cur/a:2,S reg maildir=|cur|S\n" },
		{ "new", "" }, { "tmp", "" },
		{ ".Sent", sent.p },
		{ ".Archive.2019", arch.p },
	}, 5);
	char *got = walk_path_render(base);
	assert_text(got, want.p);
	free(got);
	free(sent.p);
	free(arch.p);
	free(want.p);
	t_rmtree(base);
}

static void test_walk_plain_tree(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "x", "x/y", "z", "tmp", NULL });
	put_files(base, (const char *const[]){
		"a.eml", "b.eml", "x/c.eml", "x/y/d.eml", "x/y/e.eml", "z/f.eml",
		"tmp/g.eml", NULL });
	struct sb top = { 0 }, y = { 0 }, x = { 0 }, want = { 0 };
	by_ino(&top, base, (struct block[]){
		{ "a.eml", "a.eml reg\n" }, { "b.eml", "b.eml reg\n" },
	}, 2);
	by_ino(&y, base, (struct block[]){
		{ "x/y/d.eml", "x/y/d.eml reg\n" }, { "x/y/e.eml", "x/y/e.eml reg\n" },
	}, 2);
	sb_printf(&x, "x/c.eml reg\n%s", y.p);
	sb_printf(&want, "%s", top.p);
	by_ino(&want, base, (struct block[]){
		{ "x", x.p },
		{ "z", "z/f.eml reg\n" },
		{ "tmp", "tmp/g.eml reg\n" },    /* tmp/ is skipped only in a Maildir */
	}, 3);
	char *got = walk_path_render(base);
	assert_text(got, want.p);
	free(got);
	free(top.p);
	free(y.p);
	free(x.p);
	free(want.p);
	t_rmtree(base);
}

/* A Maildir inside a plain tree is a mailbox named after its path. */
static void test_walk_maildir_in_tree(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){
		"work", "work/cur", "work/new", "work/tmp", "work/.Lists", "work/.Lists/cur",
		"work/.Lists/new", NULL });
	put_files(base, (const char *const[]){
		"work/new/m1", "work/.Lists/cur/m2:2,S", "work/tmp/m3", NULL });
	struct sb work = { 0 }, lists = { 0 };
	by_ino(&lists, base, (struct block[]){
		{ "work/.Lists/cur", "work/.Lists/cur/m2:2,S reg maildir=work/Lists|cur|S\n" },
		{ "work/.Lists/new", "" },
	}, 2);
	by_ino(&work, base, (struct block[]){
		{ "work/cur", "" },
		{ "work/new", "work/new/m1 reg maildir=work|new|\n" },
		{ "work/tmp", "" },
		{ "work/.Lists", lists.p },
	}, 4);
	char *got = walk_path_render(base);
	assert_text(got, work.p);
	free(got);
	free(work.p);
	free(lists.p);
	t_rmtree(base);
}

struct ino_name {
	uint64_t ino;
	char name[NAME_MAX + 1];
};

static int ino_name_cmp(const void *a, const void *b)
{
	const struct ino_name *x = a, *y = b;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

/* The regular names of dir (skip: a name left out, or NULL) with their
 * inodes, sorted by inode as the walk hands them out; at most max. */
static size_t list_by_inode(const char *dir, const char *skip, struct ino_name *files, size_t max)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_name[0] == '.' || (skip && !strcmp(de->d_name, skip)))
			continue;
		assert_true(n < max);
		snprintf(files[n].name, sizeof(files[n].name), "%s", de->d_name);
		files[n].ino = t_ino_of(dir, de->d_name);
		n++;
	}
	closedir(d);
	qsort(files, n, sizeof(files[0]), ino_name_cmp);
	return n;
}

static void test_walk_sorted_by_inode(void **state)
{
	(void)state;
	enum { N = 90 };
	char *base = t_tmpdir("walk");
	/* Create 60, delete every other one, create 60 more: the new files
	 * take freed (lower) inode numbers, so inode order is neither the
	 * creation order nor, on ext4 (hashed) or tmpfs, the getdents order. */
	char name[16];
	for (int i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "m%03d", i);
		put_file(base, name, "x");
	}
	for (int i = 0; i < 60; i += 2) {
		char *p = t_asprintf("%s/m%03d", base, i);
		assert_int_equal(unlink(p), 0);
		free(p);
	}
	for (int i = 60; i < 120; i++) {
		snprintf(name, sizeof(name), "m%03d", i);
		put_file(base, name, "x");
	}
	struct ino_name files[N];
	size_t n = list_by_inode(base, NULL, files, N);
	assert_int_equal(n, N);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, base), 0);
	for (size_t i = 0; i < n; i++) {
		struct walk_entry *e;
		assert_int_equal(walk_next(w, &e), 1);
		assert_string_equal(e->name, files[i].name);
		assert_int_equal(e->ino, files[i].ino);
		assert_int_equal(e->d_type, DT_REG);
		assert_false(e->follow);
		walk_entry_done(w, e);
	}
	struct walk_entry *e;
	assert_int_equal(walk_next(w, &e), 0);
	walk_free(w);
	t_rmtree(base);
}

/* A directory past what one slab of the walk's entry pool holds (256), its
 * entries all held by the reader at once, then given back out of order:
 * the listing is sorted in place (quicksort over the compact listing) into
 * the same inode order as qsort gives, every entry handed out is its own
 * and stays intact while it is held, and entries given back are handed out
 * again by the next directory (a directory's own array of entries, as
 * before, would not be). */
static void test_walk_many_entries_held_at_once(void **state)
{
	(void)state;
	enum { MADE = 3000, N = 2000 };
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "a", "a/b", NULL });
	char name[32];
	for (int i = 0; i < MADE; i++) {
		snprintf(name, sizeof(name), "a/f%05d", i);
		put_file(base, name, "x");
	}
	/* holes in the inode numbers, filled by the next files */
	for (int i = 0; i < MADE; i += 3) {
		char *p = t_asprintf("%s/a/f%05d", base, i);
		assert_int_equal(unlink(p), 0);
		free(p);
	}
	for (int i = 0; i < N - (MADE - (MADE + 2) / 3); i++) {
		snprintf(name, sizeof(name), "a/g%05d", i);
		put_file(base, name, "x");
	}
	put_file(base, "a/b/only", "x");
	static struct ino_name files[N];
	char *dir = t_asprintf("%s/a", base);
	size_t n = list_by_inode(dir, "b", files, N);
	assert_int_equal(n, N);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, dir), 0);
	static struct walk_entry *held[N];
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(walk_next(w, &held[i]), 1);
		assert_string_equal(held[i]->name, files[i].name);
		assert_int_equal(held[i]->ino, files[i].ino);
		assert_int_equal(held[i]->d_type, DT_REG);
	}
	for (size_t i = 0; i < n; i++) {
		/* none was overwritten by a later one */
		assert_string_equal(held[i]->name, files[i].name);
		for (size_t j = i + 1; j < n && j < i + 300; j++)
			assert_ptr_not_equal(held[i], held[j]);
	}
	for (size_t i = 0; i < n; i += 2)
		walk_entry_done(w, held[i]);
	for (size_t i = 1; i < n; i += 2)
		walk_entry_done(w, held[i]);
	/* a/b/, entered after a/'s files: its one entry reuses one given back */
	struct walk_entry *e;
	assert_int_equal(walk_next(w, &e), 1);
	assert_string_equal(e->name, "only");
	bool reused = false;
	for (size_t i = 0; i < n && !reused; i++)
		reused = e == held[i];
	assert_true(reused);
	walk_entry_done(w, e);
	assert_int_equal(walk_next(w, &e), 0);
	walk_free(w);
	free(dir);
	t_rmtree(base);
}

static void link_file(const char *base, const char *from, const char *to)
{
	char *a = t_asprintf("%s/%s", base, from), *b = t_asprintf("%s/%s", base, to);
	assert_int_equal(link(a, b), 0);
	free(a);
	free(b);
}

/* How many lines of text start with prefix. */
static size_t lines_starting(const char *text, const char *prefix)
{
	size_t n = 0, pl = strlen(prefix);
	for (const char *l = text; *l; l = strchr(l, '\n') + 1)
		n += !strncmp(l, prefix, pl);
	return n;
}

/* The rendering has exactly one line starting with each prefix, and no
 * other line. */
static void assert_lines_once(const char *got, const char *const *prefixes)
{
	size_t n = 0;
	for (; prefixes[n]; n++)
		if (lines_starting(got, prefixes[n]) != 1)
			fail_msg("%zu lines start with \"%s\" in:\n%s", lines_starting(got, prefixes[n]),
			         prefixes[n], got);
	assert_int_equal(lines_starting(got, ""), n);
}

/* Folders whose names are short (".F") or end as a Maildir's subdirectory
 * does (".Renew"): folders, each message once under its folder. */
static void test_walk_maildirpp_folder_names(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	/* Listed in the order made (inode order): new/, then .Xcur, then
	 * .Renew, which, taken for new/, replaced new/'s names with its own,
	 * then cur/, where message 9, met in new/ before, was listed again */
	t_mkdirs(base, (const char *const[]){ "new", "tmp", ".Xcur", ".Xcur/cur", ".Xcur/new", ".Renew",
	                                      ".Renew/cur", ".Renew/new", "cur", ".F", ".F/cur", ".F/new",
	                                      NULL });
	put_files(base, (const char *const[]){ "new/1.M1P1.host", "new/9.M9P1.host",
	                                       ".F/new/2.M2P1.host", ".F/cur/3.M3P1.host:2,S",
	                                       ".Renew/new/4.M4P1.host", ".Renew/cur/5.M5P1.host:2,",
	                                       ".Xcur/1.M1P1.host", NULL });
	link_file(base, "new/9.M9P1.host", "cur/9.M9P1.host:2,S");   /* moved while listed */
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, base), 0);
	char *got = walk_render(w, base);
	assert_lines_once(got, (const char *const[]){
		"new/1.M1P1.host reg maildir=|new|\n", "new/9.M9P1.host reg maildir=|new|\n",
		".F/new/2.M2P1.host reg maildir=F|new|\n",
		".F/cur/3.M3P1.host:2,S reg maildir=F|cur|S\n",
		".Renew/new/4.M4P1.host reg maildir=Renew|new|\n",
		".Renew/cur/5.M5P1.host:2, reg maildir=Renew|cur|\n",
		/* a file beside a folder's cur/, named as a message of new/ is:
		 * taken for a cur/ by its name's end, it was dropped as met */
		".Xcur/1.M1P1.host reg\n", NULL });
	walk_free(w);
	free(got);
	t_rmtree(base);
}

/* Walks base/sub alone: its rendering (names relative to it) and stats. */
static char *walk_sub_render(const char *base, const char *sub, struct walk_stats *st)
{
	char *p = t_asprintf("%s/%s", base, sub);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, p), 0);
	char *got = walk_render(w, p);
	walk_stats_get(w, st);
	walk_free(w);
	free(p);
	return got;
}

/* A message that moves new/ -> cur/ between the two listings is listed in
 * both: the same inode under one unique name (before ":2," or ":1,", after
 * any of the three separators), one input (new/'s name).  A file of cur/
 * that only shares a unique name with one of new/ (another inode: a copy,
 * a second delivery under a reused name) is an input of its own, whose
 * record would otherwise be lost.  Names of cur/ that share a prefix, a
 * length or an info with one of new/ without being it are kept; hundreds
 * of names, so the lookup meets collisions of its table. */
static void test_walk_new_not_taken_again_from_cur(void **state)
{
	(void)state;
	enum { N = 300 };
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "md", "md/cur", "md/new", "md/tmp", NULL });
	put_files(base, (const char *const[]){ "md/new/a.M1.h", "md/new/b.M2.h:1,info", "md/new/c",
	                                       "md/cur/a.M1.h0:2,S", "md/cur/a.M1:2,S", "md/cur/c:3,S",
	                                       "md/cur/C:2,S", "md/cur/d.M4.h:2,S", "md/new/d.M4.h", NULL });
	/* the moved: new/'s inode under cur/'s names (a.M1.h0 and a.M1 are
	 * other unique names, c:3,S is no Maildir info) */
	for (const char *const *m = (const char *const[]){ "new/a.M1.h", "cur/a.M1.h:2,S",
	                                                   "new/b.M2.h:1,info", "cur/b.M2.h:2,RS",
	                                                   "new/b.M2.h:1,info", "cur/b.M2.h:1,y:2,S",
	                                                   "new/c", "cur/c;2,T", "new/c", "cur/c!1,z", NULL };
	     *m; m += 2) {
		char *from = t_asprintf("md/%s", m[0]), *to = t_asprintf("md/%s", m[1]);
		link_file(base, from, to);
		free(from);
		free(to);
	}
	for (int i = 0; i < N; i++) {
		char *nw = t_asprintf("md/new/%d.M%d.host", i, i);
		char *moved = t_asprintf("md/cur/%d.M%d.host:2,S", i, i);
		char *other = t_asprintf("md/cur/%d.M%d.hos:2,S", i, i);
		put_files(base, (const char *const[]){ nw, other, NULL });
		link_file(base, nw, moved);
		free(nw);
		free(moved);
		free(other);
	}
	struct walk_stats st;
	char *got = walk_sub_render(base, "md", &st);
	const char *want[N * 2 + 16];
	char *made[N * 2];
	size_t k = 0;
	for (const char *const *p = (const char *const[]){
		     "new/a.M1.h reg", "new/b.M2.h:1,info reg", "new/c reg", "cur/a.M1.h0:2,S reg",
		     "cur/a.M1:2,S reg", "cur/c:3,S reg", "cur/C:2,S reg",
		     /* another file under new/'s unique name: both */
		     "new/d.M4.h reg", "cur/d.M4.h:2,S reg", NULL };
	     *p; p++)
		want[k++] = *p;
	for (int i = 0; i < N; i++) {
		made[2 * i] = t_asprintf("new/%d.M%d.host reg", i, i);
		made[2 * i + 1] = t_asprintf("cur/%d.M%d.hos:2,S reg", i, i);
		want[k++] = made[2 * i];
		want[k++] = made[2 * i + 1];
	}
	want[k] = NULL;
	assert_lines_once(got, want);
	/* a.M1.h, both b.M2.h, c;2,T, c!1,z and the N moved */
	assert_int_equal(st.relisted, N + 5);
	for (size_t i = 0; i < N * 2; i++)
		free(made[i]);
	free(got);
	t_rmtree(base);
}

/* One inode listed under two names is one input only when getdents64 met a
 * Maildir message mid-rename: same inode and same unique name (before ":2,"
 * or ":1,") in a cur/ or new/.  Hard links are inputs of their own. */
static void test_walk_hard_links_and_relisted(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "plain", "md", "md/cur", "md/new", "md/tmp", NULL });
	put_files(base, (const char *const[]){
		"plain/m1", "plain/x:2,S", "md/cur/1.M1.h:2,S", "md/cur/2.M2.h:2,S",
		"md/new/5.M5.h:1,a", NULL });
	link_file(base, "plain/m1", "plain/m2");
	link_file(base, "plain/x:2,S", "plain/x:2,RS");      /* not a Maildir: two inputs */
	link_file(base, "md/cur/1.M1.h:2,S", "md/cur/1.M1.h:2,RS");   /* a flag change */
	link_file(base, "md/cur/2.M2.h:2,S", "md/cur/3.M3.h:2,S");    /* a hard link */
	link_file(base, "md/new/5.M5.h:1,a", "md/new/5.M5.h:1,b");

	struct walk_stats st;
	char *got = walk_sub_render(base, "plain", &st);
	assert_lines_once(got, (const char *const[]){ "m1 reg\n", "m2 reg\n", "x:2,S reg\n",
	                                             "x:2,RS reg\n", NULL });
	assert_int_equal(st.relisted, 0);
	free(got);

	got = walk_sub_render(base, "md", &st);
	/* which of the two names is kept is the sort's choice */
	assert_lines_once(got, (const char *const[]){ "cur/1.M1.h:2,", "cur/2.M2.h:2,S reg",
	                                             "cur/3.M3.h:2,S reg", "new/5.M5.h:1,", NULL });
	assert_int_equal(st.relisted, 2);
	free(got);
	t_rmtree(base);
}

/* `uniques` x `flags` names of one new inode in base/sub: <i>.M<i>.h:2,S
 * and, for flags 2, <i>.M<i>.h:2,RS, as a message renamed while listed. */
static void make_links(const char *base, const char *sub, unsigned uniques, unsigned flags)
{
	put_file(base, "one", "Subject: x\n\nx\n");
	char *src = t_asprintf("%s/one", base);
	for (unsigned i = 0; i < uniques; i++)
		for (unsigned f = 0; f < flags; f++) {
			char *to = t_asprintf("%s/%s/%u.M%u.h:2,%s", base, sub, i, i, f ? "RS" : "S");
			assert_int_equal(link(src, to), 0);
			free(to);
		}
	assert_int_equal(unlink(src), 0);
	free(src);
}

/* Many names of one inode (a directory of hard links, messages renamed
 * mid-listing among them): the names with a unique part of their own are
 * inputs, a unique part met again is the one message listed twice, and the
 * name kept is the one listed first. */
static void test_walk_many_names_of_one_inode(void **state)
{
	(void)state;
	/* 8, 10 and 600 names of one inode */
	static const unsigned uniques[] = { 4, 5, 300 };
	for (size_t t = 0; t < sizeof(uniques) / sizeof(uniques[0]); t++) {
		unsigned n = uniques[t];
		char *base = t_tmpdir("walk");
		t_mkdirs(base, (const char *const[]){ "md", "md/cur", "md/new", "md/tmp", NULL });
		make_links(base, "md/cur", n, 2);
		/* which name of each message the directory lists first */
		char **first = calloc(n, sizeof(*first));
		assert_non_null(first);
		char *cur = t_asprintf("%s/md/cur", base);
		DIR *dir = opendir(cur);
		assert_non_null(dir);
		for (struct dirent *de; (de = readdir(dir));) {
			unsigned i, j;
			if (sscanf(de->d_name, "%u.M%u.h:2,", &i, &j) == 2 && i < n && !first[i])
				first[i] = t_asprintf("cur/%s reg", de->d_name);
		}
		closedir(dir);
		struct walk_stats st;
		char *got = walk_sub_render(base, "md", &st);
		assert_int_equal(lines_starting(got, ""), n);
		assert_int_equal(st.relisted, n);
		for (unsigned i = 0; i < n; i++) {
			assert_non_null(first[i]);
			if (lines_starting(got, first[i]) != 1)
				fail_msg("%u names: \"%s\", listed first, is not the one kept in:\n%s", 2 * n,
				         first[i], got);
			free(first[i]);
		}
		free(first);
		free(got);
		free(cur);
		t_rmtree(base);
	}
}

/* The CPU time of one walk of base/md, repeated to fill 20 ms so that the
 * clock's resolution does not decide. */
static double walk_cost_once(const char *base)
{
	unsigned reps = 0;
	double t0 = t_cpu_seconds(), t;
	do {
		struct walk_stats st;
		free(walk_sub_render(base, "md", &st));
		reps++;
	} while ((t = t_cpu_seconds() - t0) < 0.02);
	return t / reps;
}

static double walk_pair_cost(void *bases, int larger)
{
	return walk_cost_once(((char **)bases)[larger]);
}

/* Names of one inode cost the walk linear time: 4,000 and 32,000 hard
 * links of one message, eight times the names, CPU time (not wall-clock)
 * ratio under 24, where comparing each name with every earlier one makes
 * it 64.  Linear is not exactly 8: per name the walk costs 1.0 us up to
 * 2,000 names, 1.35 us at 4,000 and 1.8-1.9 us from 8,000 on (the listing
 * outgrows the caches), so 11-12 here; a machine whose caches change the
 * per-name cost elsewhere moves it by less than 2x.  Each size keeps the
 * least of five walks, measured by t_cost_ratio (helpers.h): a shared VM
 * once stretched the larger walks alone past 24, where a quadratic cost
 * is far above it every time. */
static void test_walk_hard_links_linear(void **state)
{
	(void)state;
	char *base[2];
	for (int k = 0; k < 2; k++) {
		base[k] = t_tmpdir("walk");
		t_mkdirs(base[k], (const char *const[]){ "md", "md/cur", "md/new", "md/tmp", NULL });
		make_links(base[k], "md/cur", 4000u << (3 * k), 1);
	}
	double cost[2];
	double ratio = t_cost_ratio("4,000 then 32,000 names", walk_pair_cost, base, 5, 3, 24, cost);
	for (int k = 0; k < 2; k++)
		t_rmtree(base[k]);
	if (ratio >= 24)
		fail_msg("walking 32,000 names of one inode took %.1fx the CPU of 4,000 (%.2f / %.2f ms)",
		         ratio, cost[1] * 1e3, cost[0] * 1e3);
}

static void test_walk_symlinks_not_followed(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "dir", NULL });
	put_files(base, (const char *const[]){ "real.eml", "dir/inside.eml", NULL });
	char *p = t_asprintf("%s/link.eml", base);
	assert_int_equal(symlink("real.eml", p), 0);
	free(p);
	p = t_asprintf("%s/dirlink", base);
	assert_int_equal(symlink("dir", p), 0);
	free(p);
	struct sb want = { 0 };
	/* both links are files to the walk; dirlink is not entered */
	by_ino(&want, base, (struct block[]){
		{ "real.eml", "real.eml reg\n" },
		{ "link.eml", "link.eml lnk\n" },
		{ "dirlink", "dirlink lnk\n" },
	}, 3);
	sb_printf(&want, "dir/inside.eml reg\n");
	char *got = walk_path_render(base);
	assert_text(got, want.p);
	free(got);
	free(want.p);
	/* A link given explicitly is the reader's to follow. */
	p = t_asprintf("%s/link.eml", base);
	got = walk_path_render(p);
	char *want2 = t_asprintf("%s unknown root= follow\n", p);
	assert_text(got, want2);
	free(got);
	free(want2);
	free(p);
	t_rmtree(base);
}

static void test_walk_fifo_and_socket_listed(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	char *p = t_asprintf("%s/pipe", base);
	assert_int_equal(mkfifo(p, 0644), 0);
	free(p);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int len = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", base);
	bool have_sock = len > 0 && (size_t)len < sizeof(sa.sun_path) &&
	                 bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(s);
	put_files(base, (const char *const[]){ "m.eml", NULL });
	struct sb want = { 0 };
	struct block b[3] = {
		{ "pipe", "pipe fifo\n" }, { "m.eml", "m.eml reg\n" }, { "sock", "sock sock\n" },
	};
	by_ino(&want, base, b, have_sock ? 3 : 2);
	/* the walk never opens them: listing them cannot block */
	char *got = walk_path_render(base);
	assert_text(got, want.p);
	free(got);
	free(want.p);
	t_rmtree(base);
}

static void test_walk_path_is_file(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "M", "M/cur", "M/new", NULL });
	put_files(base, (const char *const[]){ "one.eml", "M/cur/9:2,RS", NULL });
	/* A file argument: root "", path the argument, followed, typed by the
	 * reader's stat.  (record.h's comment on `path` says the opposite —
	 * root the file, path "" — one of the two must change; this holds the
	 * code's behaviour, which matches --files-from names.) */
	char *p = t_asprintf("%s/one.eml", base);
	char *got = walk_path_render(p);
	char *want = t_asprintf("%s unknown root= follow\n", p);
	assert_text(got, want);
	free(got);
	free(want);
	free(p);
	/* A file argument inside a Maildir keeps its Maildir fields. */
	p = t_asprintf("%s/M/cur/9:2,RS", base);
	got = walk_path_render(p);
	want = t_asprintf("%s unknown root= follow maildir=|cur|RS\n", p);
	assert_text(got, want);
	free(got);
	free(want);
	free(p);
	t_rmtree(base);
}

static void test_walk_path_missing(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	char *p = t_asprintf("%s/no-such-dir", base);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, p), 0);
	put_files(base, (const char *const[]){ "after.eml", NULL });
	/* The walk goes on to the next PATH after the failed one. */
	assert_int_equal(walk_add_path(w, base), 0);
	char *got = walk_render(w, "");
	char *want = t_asprintf("%s unknown follow error=io-error/ENOENT\n"
	                       "after.eml reg root=%s\n", p, base);
	assert_text(got, want);
	walk_free(w);
	free(got);
	free(want);
	free(p);
	t_rmtree(base);
}

/* Several PATHs: each is walked whole, in the order given, with its root. */
static void test_walk_several_paths(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "A", "B", NULL });
	put_files(base, (const char *const[]){ "A/1.eml", "B/2.eml", "3.eml", NULL });
	char *a = t_asprintf("%s/A", base), *b = t_asprintf("%s/B", base);
	char *f = t_asprintf("%s/3.eml", base);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, b), 0);
	assert_int_equal(walk_add_path(w, f), 0);
	assert_int_equal(walk_add_path(w, a), 0);
	char *got = walk_render(w, "");
	char *want = t_asprintf("2.eml reg root=%s\n%s unknown follow\n1.eml reg root=%s\n", b, f, a);
	assert_text(got, want);
	walk_free(w);
	free(got);
	free(want);
	free(a);
	free(b);
	free(f);
	t_rmtree(base);
}

/* Overlapping PATH arguments: every file once, under the innermost PATH
 * that names it.  A PATH given again (however spelled) is not walked
 * again; a directory or a file named inside another PATH's tree is left
 * out of that walk and read as its own PATH. */
static void test_walk_overlapping_paths(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "M", "M/cur", "M/new", "M/tmp", "M/.F", "M/.F/cur",
	                                      "M/.F/new", NULL });
	put_files(base, (const char *const[]){ "M/cur/1.M1P1.host:2,S", "M/new/2.M2P1.host",
	                                       "M/.F/cur/3.M3P1.host:2,", "M/.F/new/4.M4P1.host", NULL });
	char *m = t_asprintf("%s/M", base), *cur = t_asprintf("%s/M/cur", base);
	char *cur_again = t_asprintf("%s/M/./cur/", base), *f3 = t_asprintf("%s/M/.F/cur/3.M3P1.host:2,", base);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, m), 0);
	assert_int_equal(walk_add_path(w, cur), 0);
	assert_int_equal(walk_add_path(w, m), 0);
	assert_int_equal(walk_add_path(w, f3), 0);
	assert_int_equal(walk_add_path(w, cur_again), 0);
	char *got = walk_render(w, "");
	char *l1 = t_asprintf("1.M1P1.host:2,S reg root=%s\n", cur);
	char *l2 = t_asprintf("new/2.M2P1.host reg root=%s maildir=|new|\n", m);
	char *l3 = t_asprintf("%s unknown follow maildir=F|cur|\n", f3);
	char *l4 = t_asprintf(".F/new/4.M4P1.host reg root=%s maildir=F|new|\n", m);
	assert_lines_once(got, (const char *const[]){ l1, l2, l3, l4, NULL });
	walk_free(w);
	free(got);
	free(l1);
	free(l2);
	free(l3);
	free(l4);
	free(m);
	free(cur);
	free(cur_again);
	free(f3);
	t_rmtree(base);
}

/* Renders the walk of a --files-from list given as bytes (through a pipe). */
/* Adds to w a --files-from list of bytes[0..n), read from a pipe. */
static void add_list(struct walk *w, const char *bytes, size_t n, bool nul)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	assert_true(n < 60000);          /* fits in the pipe: no writer thread */
	assert_int_equal(write(fds[1], bytes, n), (ssize_t)n);
	close(fds[1]);
	assert_int_equal(walk_add_list(w, fds[0], nul, &no_stop), 0);
	close(fds[0]);
}

static char *list_render(const char *bytes, size_t n, bool nul)
{
	struct walk *w = walk_new();
	assert_non_null(w);
	add_list(w, bytes, n, nul);
	char *got = walk_render(w, "");
	walk_free(w);
	return got;
}

#define LIST(lit, nul) list_render((lit), sizeof(lit) - 1, (nul))

static void test_walk_list_newline(void **state)
{
	(void)state;
	/* In the order given (not sorted), blank lines ignored, no trailing
	 * newline needed; names are the reader's to stat. */
	char *got = LIST("b.eml\na.eml\n\n\nM/cur/1:2,S\nlast", false);
	assert_text(got, "b.eml unknown follow\n"
	                 "a.eml unknown follow\n"
	                 "M/cur/1:2,S unknown follow maildir=|cur|S\n"
	                 "last unknown follow\n");
	free(got);
	got = LIST("", false);
	assert_text(got, "");
	free(got);
	got = LIST("\n\n", false);
	assert_text(got, "");
	free(got);
	/* a name with spaces and a NUL-free tab is one name */
	got = LIST(" x y\tz \n", false);
	assert_text(got, " x y\tz  unknown follow\n");
	free(got);
}

static void test_walk_list_crlf(void **state)
{
	(void)state;
	char *got = LIST("a.eml\r\nb.eml\r\n\r\nc.eml", false);
	assert_text(got, "a.eml unknown follow\nb.eml unknown follow\nc.eml unknown follow\n");
	free(got);
	/* only the CR before the newline is a line ending */
	got = LIST("a\rb\r\n", false);
	assert_text(got, "a\rb unknown follow\n");
	free(got);
}

static void test_walk_list_nul(void **state)
{
	(void)state;
	/* -0: newlines and CRs are parts of names; empty names are skipped */
	char *got = LIST("a.eml\0new\nline\0\0cr\r\0last", true);
	assert_text(got, "a.eml unknown follow\nnew\nline unknown follow\n"
	                 "cr\r unknown follow\nlast unknown follow\n");
	free(got);
	got = LIST("only\0", true);
	assert_text(got, "only unknown follow\n");
	free(got);
}

/* A list longer than the reader's first 64 KiB buffer, from a file. */
static void test_walk_list_large_file(void **state)
{
	(void)state;
	enum { N = 5000 };
	char *base = t_tmpdir("walk");
	char *p = t_asprintf("%s/list", base);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	for (int i = 0; i < N; i++)
		fprintf(f, "dir/%06d.some.long.maildir.name:2,S\n", i);
	fclose(f);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_list(w, fd, false, &no_stop), 0);
	close(fd);
	for (int i = 0; i < N; i++) {
		struct walk_entry *e;
		assert_int_equal(walk_next(w, &e), 1);
		char want[64];
		snprintf(want, sizeof(want), "dir/%06d.some.long.maildir.name:2,S", i);
		assert_string_equal(e->name, want);
		assert_true(e->follow);
		assert_int_equal(walk_entry_dirfd(e), AT_FDCWD);
		walk_entry_done(w, e);
	}
	struct walk_entry *e;
	assert_int_equal(walk_next(w, &e), 0);
	walk_free(w);
	free(p);
	t_rmtree(base);
}

struct stop_later {
	atomic_int stop;         /* what walk_add_list looks at */
	atomic_int returned;     /* walk_add_list came back */
	int writer;              /* the pipe's write end, held open */
};

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

/* Sets the stop after 50 ms, as another thread's interrupt does; closes
 * the writer only if the list's read has not come back 3 s later, so
 * that a read the stop cannot end fails the test rather than hanging. */
static void *stop_later_main(void *arg)
{
	struct stop_later *s = arg;
	sleep_ms(50);
	atomic_store(&s->stop, 1);
	for (int i = 0; i < 300 && !atomic_load(&s->returned); i++)
		sleep_ms(10);
	close(s->writer);
	return NULL;
}

/* A list from a pipe whose writer never writes nor closes (a Python
 * scan's files_from FIFO, nobody at the other end): the stop set from
 * another thread ends the wait (-EINTR), which a blocked read never did. */
static void test_walk_list_silent_pipe_stops(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	struct stop_later s = { .writer = fds[1] };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, stop_later_main, &s), 0);
	struct walk *w = walk_new();
	assert_non_null(w);
	int r = walk_add_list(w, fds[0], false, &s.stop);
	atomic_store(&s.returned, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(r, -EINTR);
	walk_free(w);
	close(fds[0]);
}

/* Lists and PATHs mix, in the order they were added. */
/* A directory named in a --files-from list is walked as a PATH is, and
 * leaves what a PATH argument names inside it to that PATH, with one PATH
 * as with several. */
static void test_walk_list_dir_and_inner_path(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "m", "m/sub", NULL });
	put_files(base, (const char *const[]){ "m/1.eml", "m/sub/2.eml", NULL });
	char *sub = t_asprintf("%s/m/sub", base), *line = t_asprintf("%s/m\n", base);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, sub), 0);
	add_list(w, line, strlen(line), false);
	struct sb s = { 0 };
	struct walk_entry *e;
	for (int r; (r = walk_next(w, &e)) != 0;) {
		assert_true(r > 0);
		if (e->follow) {   /* the listed directory: walked here */
			assert_int_equal(walk_expand_dir(w, e), 0);
		} else {
			sb_printf(&s, "%s\n", e->name);
		}
		walk_entry_done(w, e);
	}
	char *got = sb_take(&s);
	assert_lines_once(got, (const char *const[]){ "2.eml\n", "1.eml\n", NULL });
	walk_free(w);
	free(got);
	free(sub);
	free(line);
	t_rmtree(base);
}

/* The name new/1 has after a move to cur/, as the rename search finds it:
 * with inner_root, cur/ is a PATH argument of its own. */
static char *renamed_into(const char *base, bool inner_root)
{
	char *m = t_asprintf("%s/M", base), *cur = t_asprintf("%s/M/cur", base);
	char *from = t_asprintf("%s/M/new/1.M1P1.host", base), *to = t_asprintf("%s/M/cur/1.M1P1.host:2,S", base);
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, m), 0);
	if (inner_root)
		assert_int_equal(walk_add_path(w, cur), 0);
	struct walk_entry *e;
	for (;;) {
		assert_int_equal(walk_next(w, &e), 1);
		if (!strcmp(e->name, "1.M1P1.host"))
			break;
		walk_entry_done(w, e);
	}
	assert_int_equal(rename(from, to), 0);
	struct arena a;
	arena_init(&a, 0);
	struct walk_renamed v = { .e = e };
	assert_int_equal(walk_find_renamed(w, &v, 1, &a), 0);
	char *got = v.name ? strdup(v.name) : strdup("(not searched)");
	assert_int_equal(rename(to, from), 0);
	walk_entry_done(w, e);
	arena_release(&a);
	walk_free(w);
	free(m);
	free(cur);
	free(from);
	free(to);
	return got;
}

/* A message that moves into a directory another PATH names is that PATH's
 * to read: the rename search does not take it for this one. */
static void test_walk_renamed_into_inner_path(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "M", "M/cur", "M/new", "M/tmp", NULL });
	put_files(base, (const char *const[]){ "M/new/1.M1P1.host", NULL });
	char *got = renamed_into(base, false);
	assert_string_equal(got, "../cur/1.M1P1.host:2,S");
	free(got);
	got = renamed_into(base, true);
	assert_string_equal(got, "(not searched)");
	free(got);
	t_rmtree(base);
}

static void test_walk_list_and_paths(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	put_files(base, (const char *const[]){ "m.eml", NULL });
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, base), 0);
	add_list(w, "x\ny\n", 4, false);
	char *got = walk_render(w, "");
	char *want = t_asprintf("m.eml reg root=%s\nx unknown follow\ny unknown follow\n", base);
	assert_text(got, want);
	walk_free(w);
	free(got);
	free(want);
	t_rmtree(base);
}

static void test_walk_deep_beyond_path_max(void **state)
{
	(void)state;
	enum { LEVELS = 300 };
	static const char dname[] = "d123456789abcdefghij";   /* 20 characters */
	char *base = t_tmpdir("walk");
	int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (int i = 0; i < LEVELS; i++) {
		assert_int_equal(mkdirat(fd, dname, 0755), 0);
		int sub = openat(fd, dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(sub >= 0);
		close(fd);
		fd = sub;
	}
	int f = openat(fd, "deep.eml", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(f >= 0);
	assert_int_equal(write(f, "Subject: deep\n\n", 15), 15);
	close(f);
	close(fd);
	struct sb want = { 0 };
	for (int i = 0; i < LEVELS; i++)
		sb_printf(&want, "%s/", dname);
	sb_printf(&want, "deep.eml");
	assert_true(want.len > PATH_MAX);

	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, base), 0);
	struct walk_entry *e;
	assert_int_equal(walk_next(w, &e), 1);
	struct arena a;
	arena_init(&a, 0);
	struct record_io io;
	memset(&io, 0, sizeof(io));
	assert_int_equal(walk_entry_describe(e, &a, &io), 0);
	assert_int_equal(e->reason, RECORD_NONE);
	assert_int_equal(e->d_type, DT_REG);
	assert_int_equal(io.path.n, want.len);
	assert_memory_equal(io.path.p, want.p, want.len);
	/* the entry opens relative to its directory's fd */
	struct stat st;
	assert_int_equal(fstatat(walk_entry_dirfd(e), e->name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_size, 15);
	walk_entry_done(w, e);
	assert_int_equal(walk_next(w, &e), 0);
	struct walk_stats ws;
	walk_stats_get(w, &ws);
	assert_int_equal(ws.dirs, LEVELS + 1);
	walk_free(w);
	arena_release(&a);
	free(want.p);
	t_rmtree(base);
}

/* --- as an unprivileged user --- */

/* Runs fn in a child that is not root (dropping to nobody when we are root)
 * and returns the text it wrote, or NULL with *why set when privileges
 * cannot be dropped here. */
struct unprivileged {
	char *(*fn)(void *);
	void *arg;
};

static int unprivileged_child(void *arg, int out)
{
	const struct unprivileged *u = arg;
	char *text = u->fn(u->arg);
	t_write_all(out, text, strlen(text));
	return 0;
}

static char *run_unprivileged(char *(*fn)(void *), void *arg, const char **why)
{
	struct unprivileged u = { fn, arg };
	int status;
	char *text = t_fork_output(unprivileged_child, &u, true, &status, NULL);
	if (status == 77) {
		*why = "cannot drop root privileges to nobody (setresuid refused)";
		free(text);
		return NULL;
	}
	assert_int_equal(status, 0);
	return text;
}

static char *render_path_child(void *arg)
{
	return walk_path_render(arg);
}

static void test_walk_unreadable_directory(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "locked", "open", NULL });
	put_files(base, (const char *const[]){ "a.eml", "locked/hidden.eml", "open/b.eml", NULL });
	char *locked = t_asprintf("%s/locked", base);
	assert_int_equal(chmod(locked, 0), 0);
	/* The directory is an error entry and the walk goes on past it. */
	struct sb want = { 0 };
	sb_printf(&want, "a.eml reg\n");
	by_ino(&want, base, (struct block[]){
		{ "locked", "locked dir error=io-error/EACCES\n" },
		{ "open", "open/b.eml reg\n" },
	}, 2);
	const char *why = NULL;
	char *got = run_unprivileged(render_path_child, base, &why);
	bool skipped = !got;
	if (skipped) {
		print_message("SKIP unreadable directory: %s\n", why);
	} else {
		assert_text(got, want.p);
		free(got);
		/* An unreadable PATH argument is its own error entry. */
		got = run_unprivileged(render_path_child, locked, &why);
		assert_non_null(got);
		char *w2 = t_asprintf("%s unknown root= follow error=io-error/EACCES\n", locked);
		assert_text(got, w2);
		free(w2);
		free(got);
	}
	free(want.p);
	free(locked);
	t_rmtree(base);
	if (skipped)
		skip();
}

/* Walks the tree, then says which paths walk_unlisted() puts in a directory
 * that could not be listed: one line per path, "path yes|no". */
static char *unlisted_child(void *arg)
{
	const char *base = arg;
	static const char *const paths[] = {
		"locked/hidden.eml", "locked/deeper/x", "lockedx/y", "open/b.eml", "a.eml", NULL,
	};
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(walk_add_path(w, base), 0);
	char *locked = t_asprintf("%s/locked", base);
	assert_int_equal(walk_add_path(w, locked), 0);
	free(walk_render(w, base));
	struct sb s = { 0 };
	for (const char *const *p = paths; *p; p++)
		sb_printf(&s, "%s %s\n", *p,
		          walk_unlisted(w, (struct str){ base, strlen(base) },
		                        (struct str){ *p, strlen(*p) }) ? "yes" : "no");
	/* the unreadable directory given as a PATH: all of it */
	sb_printf(&s, "(locked) hidden.eml %s\n",
	          walk_unlisted(w, (struct str){ locked, strlen(locked) },
	                        (struct str){ "hidden.eml", 10 }) ? "yes" : "no");
	/* an earlier run's root below a PATH of this one: the PATH's listings */
	char *deeper = t_asprintf("%s/locked/deeper", base), *open_dir = t_asprintf("%s/open", base);
	sb_printf(&s, "(locked/deeper) x %s\n",
	          walk_unlisted(w, (struct str){ deeper, strlen(deeper) }, (struct str){ "x", 1 }) ? "yes" : "no");
	sb_printf(&s, "(open) b.eml %s\n",
	          walk_unlisted(w, (struct str){ open_dir, strlen(open_dir) }, (struct str){ "b.eml", 5 })
	          ? "yes" : "no");
	free(deeper);
	free(open_dir);
	walk_free(w);
	free(locked);
	return sb_take(&s);
}

/* What --state keeps: the paths under a directory the walk could not list. */
static void test_walk_unlisted(void **state)
{
	(void)state;
	char *base = t_tmpdir("walk");
	t_mkdirs(base, (const char *const[]){ "locked", "lockedx", "open", NULL });
	put_files(base, (const char *const[]){ "a.eml", "locked/hidden.eml", "open/b.eml", NULL });
	char *locked = t_asprintf("%s/locked", base);
	assert_int_equal(chmod(locked, 0), 0);
	const char *why = NULL;
	char *got = run_unprivileged(unlisted_child, base, &why);
	if (got) {
		assert_text(got, "locked/hidden.eml yes\nlocked/deeper/x yes\nlockedx/y no\n"
		                 "open/b.eml no\na.eml no\n(locked) hidden.eml yes\n"
		                 "(locked/deeper) x yes\n(open) b.eml no\n");
		free(got);
	}
	/* a clean walk leaves nothing unlisted */
	struct walk *w = walk_new();
	assert_non_null(w);
	assert_int_equal(chmod(locked, 0755), 0);
	assert_int_equal(walk_add_path(w, base), 0);
	free(walk_render(w, base));
	assert_false(walk_unlisted(w, (struct str){ base, strlen(base) },
	                           (struct str){ "locked/hidden.eml", 17 }));
	walk_free(w);
	free(locked);
	t_rmtree(base);
	if (!got) {
		print_message("SKIP unlisted directory: %s\n", why);
		skip();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_maildir_cur_new_not_tmp),
		cmocka_unit_test(test_walk_maildirpp_folders),
		cmocka_unit_test(test_walk_maildirpp_folder_names),
		cmocka_unit_test(test_walk_plain_tree),
		cmocka_unit_test(test_walk_maildir_in_tree),
		cmocka_unit_test(test_walk_sorted_by_inode),
		cmocka_unit_test(test_walk_many_entries_held_at_once),
		cmocka_unit_test(test_walk_new_not_taken_again_from_cur),
		cmocka_unit_test(test_walk_hard_links_and_relisted),
		cmocka_unit_test(test_walk_many_names_of_one_inode),
		cmocka_unit_test(test_walk_hard_links_linear),
		cmocka_unit_test(test_walk_symlinks_not_followed),
		cmocka_unit_test(test_walk_fifo_and_socket_listed),
		cmocka_unit_test(test_walk_path_is_file),
		cmocka_unit_test(test_walk_path_missing),
		cmocka_unit_test(test_walk_several_paths),
		cmocka_unit_test(test_walk_overlapping_paths),
		cmocka_unit_test(test_walk_list_dir_and_inner_path),
		cmocka_unit_test(test_walk_renamed_into_inner_path),
		cmocka_unit_test(test_walk_list_newline),
		cmocka_unit_test(test_walk_list_crlf),
		cmocka_unit_test(test_walk_list_nul),
		cmocka_unit_test(test_walk_list_large_file),
		cmocka_unit_test(test_walk_list_silent_pipe_stops),
		cmocka_unit_test(test_walk_list_and_paths),
		cmocka_unit_test(test_walk_deep_beyond_path_max),
		cmocka_unit_test(test_walk_unreadable_directory),
		cmocka_unit_test(test_walk_unlisted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
