/* SPDX-License-Identifier: MIT */
/* The walk: see walk.h for the rules.
 *
 * State is a stack of open directories (the current path from a root) plus
 * the sources still to visit (PATH arguments and --files-from lists, in the
 * order given).  A directory is listed whole when it is entered: its entries
 * are copied out of the getdents64 buffer into its own arrays and sorted by
 * inode; files are handed out first, then subdirectories are entered one by
 * one.  A directory's fd and arrays live while it is on the stack or any of
 * its entries is still with the reader (refs counts both).
 *
 * Cost: one openat and getdents64 calls (1 MiB each) per directory, one
 * close when it is done; no stat unless the filesystem gives no d_type. */
#include "io/walk.h"
#include "io/maildir.h"
#include "core/diag.h"
#include "core/hash.h"
#include "core/slots.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "core/limits.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <linux/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct walk_dir {
	int fd;                    /* AT_FDCWD for explicit paths */
	unsigned refs;             /* entries out with the reader, +1 on the stack */
	char *root;                /* the PATH argument ("" for explicit paths) */
	char *base;                /* root resolved (walk_resolve): ids, --state */
	size_t base_len;
	char *relpath;             /* from root; "" for the root itself */
	size_t relpath_len;
	bool is_maildir;           /* has cur/ and new/ */
	bool in_maildir;           /* is the cur/ or new/ of a Maildir */
	char *folder;              /* Maildir folder name, when is_maildir */
	struct walk_entry *files;  /* a --files-from list's entries */
	struct walk_dent *dents;   /* a listed directory's files, sorted by inode */
	size_t n_files, next_file; /* of files or dents */
	struct walk_entry *subs;   /* subdirectories to enter, sorted by inode */
	size_t n_subs, next_sub;
	char *names;               /* storage of every name above */
	/* a Maildir's: the unique names its new/ held when listed */
	struct walk_new_names *new_names;
};

/* The unique names of a Maildir's new/ as listed, for the listing of its
 * cur/ (walk_seen_in_new, asked once for each name there): a hash table
 * of them (core/slots.h).  A sorted array searched by bisection took
 * ~15-24 ms of a 60 ms listing of 90,000 names in cur/ against 10,000 in
 * new/, each search a dozen string compares on cold memory. */
struct walk_new_names {
	char *bytes;               /* the unique names, back to back */
	struct walk_new_name {
		uint64_t hash;
		uint64_t ino;          /* a message that moves keeps its inode */
		uint32_t at, len;      /* bytes + at, len bytes */
	} *names;
	struct slots by_name;      /* indexes into names */
};

/* A listed file, until it is handed out (see the top of the file). */
struct walk_dent {
	uint64_t ino;
	uint32_t name;             /* offset in the directory's names */
	uint8_t d_type;
};

/* Entries handed out from listed directories; a free one links the next. */
union walk_pooled {
	struct walk_entry e;
	union walk_pooled *next;
};

#define WALK_SLAB_ENTRIES 256
struct walk_slab {
	struct walk_slab *next;
	union walk_pooled items[WALK_SLAB_ENTRIES];
};

struct walk_source {
	char *path;                /* a PATH argument, or NULL for a list */
	char *base;                /* path resolved (walk_resolve) */
	char *place;               /* where path lies, its directory resolved but not
	                              its last name (walk_resolve_in_parent), when
	                              that is not base: a link named; else NULL */
	const char *shown;         /* "-" for standard input */
	struct walk_dir *list;     /* explicit paths of a --files-from list */
};

/* A PATH argument's resolved path, in the order of walk_roots_sort. */
struct walk_root {
	const char *base;
	size_t source;             /* its index in sources */
};

/* A directory whose listing failed, wholly or partly. */
struct walk_unlisted {
	struct str root;      /* the PATH argument, resolved */
	struct str dir;       /* below root; "" for the root itself */
	char *mem;                 /* holds both */
};

struct walk {
	struct walk_source *sources;
	size_t n_sources, next_source;
	struct walk_dir **stack;
	size_t depth, stack_cap;
	char *buf;                 /* the getdents64 buffer */
	struct walk_entry pending; /* an error entry for a failed source */
	struct walk_dir *explicit_dir;   /* shared pseudo-dir for file arguments */
	char *cwd;                 /* resolved, for the ids of listed paths */
	/* walk_covers' last directory and its realpath (NULL: it does not
	 * resolve): the entries it asks about come a directory at a time */
	char *covers_dir, *covers_real;
	size_t covers_dir_n;
	bool link_named;           /* a source has a place (walk_source) */
	struct walk_stats stats;
	unsigned shard_k, shard_n;      /* 0/0: no sharding */
	bool reopened;             /* walk_expand_dir() after the end */
	char **excludes;           /* --exclude patterns */
	size_t n_excludes;
	struct walk_slab *slabs;   /* the entry pool's memory */
	union walk_pooled *free_entries;
	struct walk_unlisted *unlisted;  /* sorted when asked (walk_unlisted) */
	size_t n_unlisted;
	bool unlisted_sorted;
	/* the PATH arguments, sorted when the walk starts, when they can
	 * overlap (walk_roots_sort): n_roots is 0 otherwise */
	struct walk_root *roots;
	size_t n_roots;
	bool roots_sorted;
};

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Whether a resolved directory of n bytes takes a '/' before a name
 * joined to it: every one but "/", the one that ends in '/'. */
static bool walk_sep(const char *p, size_t n)
{
	return !n || p[n - 1] != '/';
}

/* The identity of a file input (README, "Records"): for a Maildir message
 * maildir_id(base, name); for any other file the hash of its resolved path
 * base + "/" + dir + "/" + name (an empty dir or name left out with its
 * '/').  base is the resolved root, never the root as spelled. */
static uint64_t walk_file_id(struct str base, struct str dir, struct str name,
                             bool maildir)
{
	if (maildir)
		return maildir_id(base.p, base.n, name.p, name.n);
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, "file", 5);   /* the NUL too */
	h = hash_fnv1a(h, base.p, base.n);
	/* fed piece by piece: the same value as the joined path, which an
	 * explicit path hashes ("/" is the one base ending in '/': no second) */
	bool sep = walk_sep(base.p, base.n);
	if (dir.n) {
		if (sep)
			h = hash_fnv1a(h, "/", 1);
		h = hash_fnv1a(h, dir.p, dir.n);
		sep = true;
	}
	if (name.n) {
		if (sep)
			h = hash_fnv1a(h, "/", 1);
		h = hash_fnv1a(h, name.p, name.n);
	}
	return h;
}

static char *walk_strdup(const char *s, size_t n)
{
	char *d = xmalloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* The resolved directory a joined with the relative path b (bn bytes, ""
 * for a itself), NUL-terminated in *n bytes with room for one more: "/"
 * is the one directory ending in '/', and takes no second.  NULL when out
 * of memory. */
static char *walk_join(const char *a, size_t an, const char *b, size_t bn, size_t *n)
{
	char *p = xmalloc(an + 1 + bn + 2);
	if (!p)
		return NULL;
	memcpy(p, a, an);
	size_t at = an;
	if (bn && walk_sep(p, at))
		p[at++] = '/';
	memcpy(p + at, b, bn);
	at += bn;
	p[at] = '\0';
	*n = at;
	return p;
}

static struct walk_dir *walk_dir_new(int fd, const char *root, const char *base,
                                     const char *relpath, size_t rellen)
{
	struct walk_dir *d = xcalloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->fd = fd;
	d->refs = 1;
	d->root = walk_strdup(root, strlen(root));
	d->base_len = strlen(base);
	d->base = walk_strdup(base, d->base_len);
	d->relpath = walk_strdup(relpath, rellen);
	d->relpath_len = rellen;
	if (!d->root || !d->base || !d->relpath) {
		xfree(d->root);
		xfree(d->base);
		xfree(d->relpath);
		xfree(d);
		return NULL;
	}
	return d;
}

/* Lexically normalised: "//", "/./" and "dir/.." collapsed, no trailing
 * '/'.  abs must start with '/'; n bytes, rewritten in place. */
static size_t walk_normalize(char *abs, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		while (i < n && abs[i] == '/')
			i++;
		size_t j = i;
		while (j < n && abs[j] != '/')
			j++;
		size_t len = j - i;
		if (len == 1 && abs[i] == '.') {
			/* nothing */
		} else if (len == 2 && abs[i] == '.' && abs[i + 1] == '.') {
			while (o > 0 && abs[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else if (len) {
			abs[o++] = '/';
			memmove(abs + o, abs + i, len);
			o += len;
		}
		i = j;
	}
	if (!o)
		abs[o++] = '/';
	abs[o] = '\0';
	return o;
}

/* realpath(3) of the directory path names a file in, and the file's name
 * after it: a file named through a symbolic link and since deleted keeps
 * the identity it had (its id, its state's root).  Heap, or NULL when the
 * directory does not resolve either or path ends in "/", "." or "..". */
static char *walk_resolve_in_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return NULL;
	/* "/x": the directory "/"; "x": "." */
	size_t dl = slash > path ? (size_t)(slash - path) : 1;
	char *dir = slash ? walk_strdup(path, dl) : walk_strdup(".", 1);
	char *r = dir ? realpath(dir, NULL) : NULL;
	xfree(dir);
	if (!r)
		return NULL;
	size_t n;
	char *c = walk_join(r, strlen(r), name, strlen(name), &n);
	free(r);   /* realpath's, not ours */
	return c;
}

/* A symbolic link whose target is gone (a message named through a link
 * to it, then deleted): where it leads, resolved in the target's
 * directory, as realpath(3) resolved the link while its target was
 * there.  One link deep.  Heap, or NULL when path is no such link. */
static char *walk_resolve_dangling(const char *path)
{
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target));
	if (n <= 0 || (size_t)n >= sizeof(target))
		return NULL;
	const char *slash = strrchr(path, '/');
	size_t dl = target[0] == '/' || !slash ? 0 : (size_t)(slash - path) + 1;
	char *joined = xmalloc(dl + (size_t)n + 1);
	if (!joined)
		return NULL;
	memcpy(joined, path, dl);   /* the link's directory, with its '/' */
	memcpy(joined + dl, target, (size_t)n);
	joined[dl + (size_t)n] = '\0';
	char *r = walk_resolve_in_parent(joined);
	xfree(joined);
	return r;
}

/* An input's identity must not depend on how it was spelled: "./Maildir",
 * "Maildir/" and a symlink to it are one root.  realpath(3) resolves it
 * (the path a backup restores and other machines of a cluster mount at;
 * device and inode numbers change with both); a path that does not
 * resolve (gone, unreadable) is resolved where a link to it led, or in
 * its directory, or else normalised lexically against cwd. */
static char *walk_resolve(const char *cwd, const char *path)
{
	char *r = realpath(path, NULL);
	if (r) {
		char *c = walk_strdup(r, strlen(r));
		free(r);   /* realpath's, not ours */
		return c;
	}
	char *in_parent = walk_resolve_dangling(path);
	if (!in_parent)
		in_parent = walk_resolve_in_parent(path);
	if (in_parent)
		return in_parent;
	size_t cl = path[0] == '/' ? 0 : strlen(cwd), pl = strlen(path);
	char *abs = xmalloc(cl + pl + 2);
	if (!abs)
		return NULL;
	memcpy(abs, cwd, cl);
	abs[cl] = '/';
	memcpy(abs + cl + 1, path, pl);
	walk_normalize(abs, cl + 1 + pl);
	return abs;
}

static void walk_new_names_free(struct walk_new_names *t)
{
	if (!t)
		return;
	xfree(t->bytes);
	xfree(t->names);
	slots_free(&t->by_name);
	xfree(t);
}

static void walk_dir_unref(struct walk_dir *d)
{
	if (!d || --d->refs)
		return;
	if (d->fd >= 0)
		sys_close(d->fd);
	xfree(d->root);
	xfree(d->base);
	xfree(d->relpath);
	xfree(d->folder);
	xfree(d->files);
	xfree(d->dents);
	xfree(d->subs);
	xfree(d->names);
	walk_new_names_free(d->new_names);
	xfree(d);
}

struct walk *walk_new(void)
{
	struct walk *w = xcalloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->buf = xmalloc(LIMIT_GETDENTS_BYTES);
	char *cwd = getcwd(NULL, 0);
	w->cwd = walk_strdup(cwd ? cwd : "/", cwd ? strlen(cwd) : 1);
	free(cwd);   /* getcwd's, not ours */
	/* explicit paths are relative to the working directory: its base */
	w->explicit_dir = w->cwd ? walk_dir_new(AT_FDCWD, "", w->cwd, "", 0) : NULL;
	if (!w->buf || !w->explicit_dir || !w->cwd) {
		walk_free(w);
		return NULL;
	}
	return w;
}

void walk_free(struct walk *w)
{
	if (!w)
		return;
	while (w->depth) {
		/* A run stopped early (a fatal error, Ctrl-C) leaves files listed
		 * but never handed out: their refs (walk_list_dir counts them up
		 * front) go with the walk, or the directory leaks. */
		struct walk_dir *d = w->stack[--w->depth];
		d->refs -= (unsigned)(d->n_files - d->next_file);
		walk_dir_unref(d);
	}
	for (size_t i = 0; i < w->n_sources; i++) {
		xfree(w->sources[i].path);
		xfree(w->sources[i].base);
		xfree(w->sources[i].place);
		walk_dir_unref(w->sources[i].list);
	}
	walk_dir_unref(w->explicit_dir);
	xfree(w->covers_dir);
	xfree(w->covers_real);
	for (size_t i = 0; i < w->n_unlisted; i++)
		xfree(w->unlisted[i].mem);
	xfree(w->unlisted);
	xfree(w->roots);
	xfree(w->sources);
	for (size_t i = 0; i < w->n_excludes; i++)
		xfree(w->excludes[i]);
	xfree(w->excludes);
	xfree(w->stack);
	xfree(w->buf);
	xfree(w->cwd);
	while (w->slabs) {
		struct walk_slab *next = w->slabs->next;
		xfree(w->slabs);
		w->slabs = next;
	}
	xfree(w);
}

/* An entry from the pool, or NULL when out of memory. */
static struct walk_entry *walk_entry_get(struct walk *w)
{
	if (!w->free_entries) {
		struct walk_slab *sl = xmalloc(sizeof(*sl));
		if (!sl)
			return NULL;
		sl->next = w->slabs;
		w->slabs = sl;
		for (size_t i = 0; i < WALK_SLAB_ENTRIES; i++) {
			sl->items[i].next = w->free_entries;
			w->free_entries = &sl->items[i];
		}
	}
	union walk_pooled *p = w->free_entries;
	w->free_entries = p->next;
	return &p->e;
}

static int walk_push_source(struct walk *w, struct walk_source s)
{
	struct walk_source *v = xrealloc(w->sources, (w->n_sources + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->sources = v;
	w->sources[w->n_sources++] = s;
	return 0;
}

int walk_add_path(struct walk *w, const char *path)
{
	char *p = walk_strdup(path, strlen(path));
	char *base = p ? walk_resolve(w->cwd, path) : NULL;
	if (!base) {
		xfree(p);
		return -ENOMEM;
	}
	/* a link named: the run judges its own place too (walk_place_given),
	 * which records filed there by earlier runs lie at */
	char *place = walk_resolve_in_parent(path);
	if (place && !strcmp(place, base)) {
		xfree(place);
		place = NULL;
	}
	w->link_named |= place != NULL;
	int r = walk_push_source(w, (struct walk_source){ .path = p, .base = base, .place = place });
	if (r < 0) {
		xfree(p);
		xfree(base);
		xfree(place);
	}
	return r;
}

int walk_add_stdin(struct walk *w, int fd, uint64_t content_hash)
{
	char hex[17], base[32], path[32];
	record_id_hex(content_hash, hex);
	snprintf(base, sizeof(base), "stdin:%s", hex);
	int n = snprintf(path, sizeof(path), "/dev/fd/%d", fd);
	char *p = walk_strdup(path, (size_t)n);
	char *b = p ? walk_strdup(base, strlen(base)) : NULL;
	int r = b ? walk_push_source(w, (struct walk_source){ .path = p, .base = b, .shown = "-" }) : -ENOMEM;
	if (r < 0) {
		xfree(p);
		xfree(b);
	}
	return r;
}

int walk_add_exclude(struct walk *w, const char *pattern)
{
	char **v = xrealloc(w->excludes, (w->n_excludes + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->excludes = v;
	if (!(v[w->n_excludes] = walk_strdup(pattern, strlen(pattern))))
		return -ENOMEM;
	w->n_excludes++;
	return 0;
}

/* An --exclude pattern matches the name or the path below the root. */
static bool walk_excluded(const struct walk *w, const struct walk_dir *d, const char *name)
{
	if (!w->n_excludes)
		return false;
	char path[4096];
	int n = d->relpath_len ? snprintf(path, sizeof(path), "%s/%s", d->relpath, name) : -1;
	for (size_t i = 0; i < w->n_excludes; i++)
		if (!fnmatch(w->excludes[i], name, 0) ||
		    (n > 0 && (size_t)n < sizeof(path) && !fnmatch(w->excludes[i], path, 0)))
			return true;
	return false;
}

int walk_add_list(struct walk *w, int fd, bool nul_separated, const atomic_int *stop)
{
	size_t cap = 64 * 1024, len = 0;
	char *buf = xmalloc(cap);
	if (!buf)
		return -ENOMEM;
	bool may_block = sys_may_block(fd);
	for (;;) {
		if (len == cap) {
			char *nb = xrealloc(buf, cap * 2);
			if (!nb) {
				xfree(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = sys_read_stoppable(fd, buf + len, cap - len, may_block, stop);
		if (n < 0) {
			xfree(buf);
			return (int)n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	char sep = nul_separated ? '\0' : '\n';
	size_t count = 0;
	for (size_t i = 0; i < len; i++)
		count += buf[i] == sep;
	count++;
	struct walk_dir *list = walk_dir_new(AT_FDCWD, "", w->cwd, "", 0);
	struct walk_entry *files = list ? xcalloc(count, sizeof(*files)) : NULL;
	char *names = files ? xmalloc(len + 1) : NULL;
	if (!names) {
		xfree(files);
		walk_dir_unref(list);
		xfree(buf);
		return -ENOMEM;
	}
	memcpy(names, buf, len);
	names[len] = '\0';
	xfree(buf);
	size_t n = 0, start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && names[i] != sep)
			continue;
		size_t end = i;
		if (!nul_separated && end > start && names[end - 1] == '\r')
			end--;
		names[end] = '\0';
		if (end > start)     /* blank lines are not inputs */
			files[n++] = (struct walk_entry){
				.dir = list, .name = names + start, .d_type = DT_UNKNOWN, .follow = true,
			};
		start = i + 1;
	}
	list->files = files;
	list->n_files = n;
	list->names = names;
	int r = walk_push_source(w, (struct walk_source){ .list = list });
	if (r < 0)
		walk_dir_unref(list);
	return r;
}

/* Inode order; names listed earlier first among equal inodes (hard
 * links), as the stable sort this replaced kept them: a name's offset grows
 * with its place in the listing. */
static inline bool walk_dent_less(const struct walk_dent *x, const struct walk_dent *y)
{
	return x->ino < y->ino || (x->ino == y->ino && x->name < y->name);
}

static void walk_dent_swap(struct walk_dent *x, struct walk_dent *y)
{
	struct walk_dent t = *x;
	*x = *y;
	*y = t;
}

static void walk_dent_sift(struct walk_dent *v, size_t root, size_t n)
{
	for (size_t c; (c = 2 * root + 1) < n; root = c) {
		if (c + 1 < n && walk_dent_less(&v[c], &v[c + 1]))
			c++;
		if (!walk_dent_less(&v[root], &v[c]))
			return;
		walk_dent_swap(&v[root], &v[c]);
	}
}

/* In place, allocating nothing: quicksort (median of three, the smaller
 * side first so the stack stays O(log n)), heapsort past a depth limit,
 * insertion sort for short runs.  Keys are distinct, so no run of equal
 * keys can make it quadratic. */
static void walk_dent_sort(struct walk_dent *v, size_t n, unsigned depth)
{
	while (n > 16) {
		if (!depth--) {
			for (size_t i = n / 2; i-- > 0;)
				walk_dent_sift(v, i, n);
			for (size_t i = n; --i > 0;) {
				walk_dent_swap(&v[0], &v[i]);
				walk_dent_sift(v, 0, i);
			}
			return;
		}
		size_t m = n / 2;
		if (walk_dent_less(&v[m], &v[0]))
			walk_dent_swap(&v[m], &v[0]);
		if (walk_dent_less(&v[n - 1], &v[m])) {
			walk_dent_swap(&v[n - 1], &v[m]);
			if (walk_dent_less(&v[m], &v[0]))
				walk_dent_swap(&v[m], &v[0]);
		}
		/* the median to the front; v[n - 1] >= it stops the scan */
		walk_dent_swap(&v[0], &v[m]);
		struct walk_dent pivot = v[0];
		size_t i = 0, j = n;
		for (;;) {
			while (walk_dent_less(&v[++i], &pivot))
				;
			while (walk_dent_less(&pivot, &v[--j]))
				;
			if (i >= j)
				break;
			walk_dent_swap(&v[i], &v[j]);
		}
		walk_dent_swap(&v[0], &v[j]);
		/* [0, j) < pivot = v[j] < (j, n) */
		if (j < n - j - 1) {
			walk_dent_sort(v, j, depth);
			v += j + 1;
			n -= j + 1;
		} else {
			walk_dent_sort(v + j + 1, n - j - 1, depth);
			n = j;
		}
	}
	for (size_t i = 1; i < n; i++) {
		struct walk_dent t = v[i];
		size_t k = i;
		for (; k && walk_dent_less(&t, &v[k - 1]); k--)
			v[k] = v[k - 1];
		v[k] = t;
	}
}

/* d_type is DT_UNKNOWN on a few filesystems: ask statx, once, here. */
static uint8_t walk_resolve_type(int dirfd, const char *name)
{
	struct statx stx;
	if (sys_statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0)
		return DT_UNKNOWN;   /* the reader's statx will report the error */
	return (uint8_t)IFTODT(stx.stx_mode);
}

static size_t walk_unique_len(const char *name)
{
	return maildir_unique_len(name, strlen(name));
}

static uint64_t walk_unique_hash(const char *p, size_t n)
{
	return hash_fnv1a(HASH_FNV1A_INIT, p, n);
}

/* Keeps the unique names of a Maildir's new/ for the listing of its cur/. */
static int walk_remember_new(struct walk_dir *md, const char *names, const struct walk_dent *all,
                             size_t n)
{
	walk_new_names_free(md->new_names);
	md->new_names = NULL;
	size_t files = 0, bytes = 0;
	for (size_t i = 0; i < n; i++)
		if (all[i].d_type != DT_DIR) {
			files++;
			bytes += walk_unique_len(names + all[i].name);
		}
	if (!files)
		return 0;
	struct walk_new_names *t = xcalloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->bytes = xmalloc(bytes ? bytes : 1);
	t->names = xmalloc(files * sizeof(*t->names));
	if (!t->bytes || !t->names || slots_init(&t->by_name, files) < 0) {
		walk_new_names_free(t);
		return -ENOMEM;
	}
	size_t at = 0, k = 0;
	for (size_t i = 0; i < n; i++) {
		if (all[i].d_type == DT_DIR)
			continue;
		const char *nm = names + all[i].name;
		size_t len = walk_unique_len(nm);
		memcpy(t->bytes + at, nm, len);
		struct walk_new_name *e = &t->names[k];
		*e = (struct walk_new_name){ .hash = walk_unique_hash(nm, len), .ino = all[i].ino,
		                             .at = (uint32_t)at, .len = (uint32_t)len };
		slots_put(&t->by_name, e->hash, k++);
		at += len;
	}
	md->new_names = t;
	return 0;
}

/* Whether cur/'s name, inode ino, is a message new/ held when listed:
 * its unique name and its inode (two files that share a unique name are
 * two inputs). */
static bool walk_seen_in_new(const struct walk_dir *md, const char *name, uint64_t ino)
{
	const struct walk_new_names *t = md->new_names;
	size_t len = walk_unique_len(name);
	uint64_t hash = walk_unique_hash(name, len);
	size_t k;
	for (struct slots_probe p = slots_probe(&t->by_name, hash); (k = slots_next(&p));) {
		const struct walk_new_name *e = &t->names[k - 1];
		if (e->hash == hash && e->ino == ino && e->len == len && !memcmp(t->bytes + e->at, name, len))
			return true;
	}
	return false;
}

/* d_type of a name walk_mark_relisted drops: above every DT_ value, which
 * walk_list_dir keeps a listing's types to. */
#define WALK_DT_RELISTED 0xFF

struct walk_uname {
	uint32_t name, len;        /* its unique part: names + name, len bytes */
	uint32_t pos;              /* its place among its inode's names */
};

/* The order of unique parts (bytes, then length): every sort and search
 * of names by unique part below uses it. */
static int walk_unique_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

static int walk_uname_cmp(const void *a, const void *b, void *names_)
{
	const char *names = names_;
	const struct walk_uname *x = a, *y = b;
	int c = walk_unique_cmp(names + x->name, x->len, names + y->name, y->len);
	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Marks WALK_DT_RELISTED every name of g[0..m), the names of one inode in
 * listing order, whose unique part an earlier one of them has.  Sorted by
 * unique name, O(m log m): comparing each name with every earlier one grew
 * with the square of m (50,000 hard links of one message: 40 s of CPU). */
static int walk_mark_relisted(const char *names, struct walk_dent *g, size_t m)
{
	struct walk_uname *u = xmalloc(m * sizeof(*u));
	if (!u)
		return -ENOMEM;
	size_t c = 0;
	for (size_t i = 0; i < m; i++)
		if (g[i].d_type != DT_DIR)
			u[c++] = (struct walk_uname){ .name = g[i].name,
			                              .len = (uint32_t)walk_unique_len(names + g[i].name),
			                              .pos = (uint32_t)i };
	qsort_r(u, c, sizeof(*u), walk_uname_cmp, (void *)(uintptr_t)names);
	for (size_t i = 1; i < c; i++)
		if (!walk_unique_cmp(names + u[i].name, u[i].len, names + u[i - 1].name, u[i - 1].len))
			g[u[i].pos].d_type = WALK_DT_RELISTED;
	xfree(u);
	return 0;
}

/* A Maildir message whose flags change while its directory is being
 * listed can be listed under both names (getdents64 allows it): same
 * inode, same unique name, one input, the first name listed.  Anything
 * else sharing an inode is a hard link, and every name of it is an input.
 * all[0..n) is sorted by inode; returns how many entries are kept at its
 * start, in order, or -ENOMEM. */
static ssize_t walk_drop_relisted(const char *names, struct walk_dent *all, size_t n)
{
	size_t k = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && all[j].ino == all[i].ino; j++)
			;
		/* one name, the rule for almost every inode: nothing to mark */
		if (j - i > 1 && walk_mark_relisted(names, all + i, j - i) < 0)
			return -ENOMEM;
		for (size_t g = i; g < j; g++)
			if (all[g].d_type != WALK_DT_RELISTED)
				all[k++] = all[g];
	}
	return (ssize_t)k;
}

/* Overlapping PATH arguments (README, "Usage"): every input is read once,
 * under the innermost PATH argument that names it.  A PATH given twice
 * (compared resolved, so however spelled) is walked at its first place
 * only, and what another PATH names inside a walked tree is left out of
 * that walk and read as its own PATH.  Otherwise a Maildir's cur/ given
 * beside the Maildir is read twice, under two ids (a Maildir message's id
 * hangs on its root), and an index downstream holds each message twice. */
static int walk_root_cmp(const void *a, const void *b)
{
	const struct walk_root *x = a, *y = b;
	int c = strcmp(x->base, y->base);
	return c ? c : (x->source > y->source) - (x->source < y->source);
}

/* Sorts the PATH arguments, when there are two or more, or one beside a
 * --files-from list (whose directories are walked as PATHs are): alone, a
 * PATH overlaps nothing, and the walk then looks nothing up.  0 or
 * -ENOMEM. */
static int walk_roots_sort(struct walk *w)
{
	size_t n = 0;
	bool list = false;
	for (size_t i = 0; i < w->n_sources; i++) {
		n += w->sources[i].path && !w->sources[i].shown;
		list |= w->sources[i].list != NULL;
	}
	if (n < 2 && !(n && list)) {
		w->roots_sorted = true;
		return 0;
	}
	w->roots = xmalloc(n * sizeof(*w->roots));
	if (!w->roots)
		return -ENOMEM;
	for (size_t i = 0; i < w->n_sources; i++)
		if (w->sources[i].path && !w->sources[i].shown)
			w->roots[w->n_roots++] = (struct walk_root){ w->sources[i].base, i };
	qsort(w->roots, w->n_roots, sizeof(*w->roots), walk_root_cmp);
	w->roots_sorted = true;
	return 0;
}

/* The first of roots [lo, hi) whose path, from byte skip on, is not below
 * key; the range shares its first skip bytes. */
static size_t walk_roots_lower(const struct walk_root *v, size_t lo, size_t hi, size_t skip,
                               const char *key)
{
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		if (strcmp(v[m].base + skip, key) < 0)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* Whether source i is a PATH argument given earlier too. */
static bool walk_root_repeated(const struct walk *w, size_t i)
{
	if (!w->n_roots || w->sources[i].shown)   /* standard input is no PATH */
		return false;
	/* ties are in source order: the first of equal paths is the earliest */
	size_t at = walk_roots_lower(w->roots, 0, w->n_roots, 0, w->sources[i].base);
	return at < w->n_roots && w->roots[at].source != i;
}

/* Whether the resolved path p is one of the PATH arguments. */
static bool walk_is_root(const struct walk *w, const char *p)
{
	size_t r = walk_roots_lower(w->roots, 0, w->n_roots, 0, p);
	return r < w->n_roots && !strcmp(w->roots[r].base, p);
}

/* Leaves out of d's n listed entries those another PATH argument names
 * (d's resolved path, '/', the name): they are read there.  The count
 * kept, or -ENOMEM. */
static ssize_t walk_leave_to_roots(const struct walk *w, const struct walk_dir *d,
                                   const char *names, struct walk_dent *all, size_t n)
{
	size_t at;
	char *key = walk_join(d->base, d->base_len, d->relpath, d->relpath_len, &at);
	if (!key)
		return -ENOMEM;
	if (walk_sep(key, at))
		key[at++] = '/';
	key[at] = '\0';
	/* the paths below d: from "d/" up to "d0" ('0' follows '/') */
	size_t lo = walk_roots_lower(w->roots, 0, w->n_roots, 0, key);
	key[at - 1] = '0';
	size_t hi = walk_roots_lower(w->roots, lo, w->n_roots, 0, key);
	xfree(key);
	if (lo == hi)
		return (ssize_t)n;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *nm = names + all[i].name;
		size_t r = walk_roots_lower(w->roots, lo, hi, at, nm);
		if (r < hi && !strcmp(w->roots[r].base + at, nm))
			continue;
		all[k++] = all[i];
	}
	return (ssize_t)k;
}

/* Reads every entry of d and sorts them: files and subdirectories apart. */
static int walk_list_dir(struct walk *w, struct walk_dir *d, struct walk_dir *parent, int *err)
{
	size_t names_len = 0, names_cap = 0, n = 0, cap = 0;
	char *names = NULL;
	struct walk_dent *all = NULL;
	*err = 0;
	for (bool full = false; !full;) {
		/* EINTR by hand, not sys_getdents64_restart: an interrupted
		 * call is a getdents64 too, and --stats counts each. */
		ssize_t got = sys_getdents64(d->fd, w->buf, LIMIT_GETDENTS_BYTES);
		w->stats.getdents_calls++;
		if (got == -EINTR)
			continue;
		if (got < 0) {
			*err = (int)-got;
			break;
		}
		if (got == 0)
			break;
		/* Room for the whole buffer's entries at once, not entry by
		 * entry: a record holds its name and NUL, and is 24 bytes at
		 * least (inode, offset, length, type, a name of one byte,
		 * aligned to 8), so this buffer adds at most `got` bytes of
		 * names and got / 24 entries (one more would be a short record
		 * the kernel does not write).  Growing once a getdents64, by
		 * at least doubling, costs malloc a handful of mremap calls for
		 * a directory of 100,000 (22 doubling from 64 entries and 4 KiB
		 * of names); untouched capacity costs no memory. */
		if (!names || names_len + (size_t)got > names_cap) {
			size_t nc = names_cap * 2 > names_len + (size_t)got ? names_cap * 2 : names_len + (size_t)got;
			char *nn = xrealloc(names, nc);
			if (!nn)
				goto nomem;
			names = nn;
			names_cap = nc;
		}
		size_t most = (size_t)got / 24 + 1;
		if (!all || n + most > cap) {
			size_t nc = cap * 2 > n + most ? cap * 2 : n + most;
			struct walk_dent *na = xrealloc(all, nc * sizeof(*na));
			if (!na)
				goto nomem;
			all = na;
			cap = nc;
		}
		for (ssize_t off = 0; off < got;) {
			struct linux_dirent64 *de = (struct linux_dirent64 *)(w->buf + off);
			off += de->d_reclen;
			const char *nm = de->d_name;
			if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
				continue;
			/* what mail software keeps beside the messages is not
			 * mail: counted, not an error record each */
			if (maildir_is_software_file(nm)) {
				w->stats.skipped++;
				continue;
			}
			if (walk_excluded(w, d, nm)) {
				w->stats.excluded++;
				continue;
			}
			size_t len = strlen(nm) + 1;
			if (names_len + len > UINT32_MAX) {
				/* 4 GiB of names (a directory of some hundred
				 * million files): what was listed is walked, the
				 * directory is an error record, as when its
				 * getdents64 fails half-way */
				*err = EOVERFLOW;
				full = true;
				break;
			}
			memcpy(names + names_len, nm, len);
			all[n++] = (struct walk_dent){
				.ino = de->d_ino, .name = (uint32_t)names_len, .d_type = de->d_type,
			};
			names_len += len;
		}
	}
	w->stats.dirs++;
	size_t listed = n;
	bool has_cur = false, has_new = false;
	size_t n_subs = 0;
	for (size_t i = 0; i < n; i++) {
		/* A type no kernel file system gives (a FUSE server's byte
		 * is passed on as it is) is asked like an unknown one: the
		 * values above DT_WHT are the walk's own marks. */
		if (all[i].d_type == DT_UNKNOWN || all[i].d_type > DT_WHT)
			all[i].d_type = walk_resolve_type(d->fd, names + all[i].name);
		if (all[i].d_type != DT_DIR)
			continue;
		n_subs++;
		has_cur |= !strcmp(names + all[i].name, "cur");
		has_new |= !strcmp(names + all[i].name, "new");
	}
	d->is_maildir = has_cur && has_new;
	/* Maildir: new/ is listed before cur/ (messages move new → cur), and
	 * what new/ held is not taken again from cur/: a message that moved
	 * between the two listings is then neither lost nor doubled (it is
	 * read under its new name, see walk_find_renamed).  in_maildir: d is
	 * the cur/ or new/ of parent, a Maildir (a folder such as ".Renew" is
	 * neither, and one of two letters has no three to compare).  cur/'s
	 * names are looked up before the sort, in the order they were copied:
	 * after it, by inode, each name was a miss of the cache. */
	bool is_new = d->in_maildir && !strcmp(d->relpath + d->relpath_len - 3, "new");
	if (d->in_maildir && parent->new_names && !strcmp(d->relpath + d->relpath_len - 3, "cur")) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (all[i].d_type == DT_DIR || !walk_seen_in_new(parent, names + all[i].name, all[i].ino))
				all[k++] = all[i];
		n = k;
	}
	unsigned depth = 0;
	for (size_t k = n; k; k >>= 1)
		depth += 2;
	walk_dent_sort(all, n, depth);
	if (n && d->in_maildir) {
		ssize_t k = walk_drop_relisted(names, all, n);
		if (k < 0)
			goto nomem;
		n = (size_t)k;
	}
	if (is_new && walk_remember_new(parent, names, all, n) < 0)
		goto nomem;
	w->stats.relisted += listed - n;
	if (w->n_roots && n) {
		ssize_t kept = walk_leave_to_roots(w, d, names, all, n);
		if (kept < 0)
			goto nomem;
		n = (size_t)kept;
	}
	/* entries are what becomes input; names listed twice are reported apart */
	w->stats.entries += n;
	struct walk_entry *subs = xmalloc((n_subs ? n_subs : 1) * sizeof(*subs));
	if (!subs)
		goto nomem;
	size_t nf = 0, ns = 0;
	for (size_t i = 0; i < n; i++) {
		if (all[i].d_type != DT_DIR) {
			all[nf++] = all[i];
			continue;
		}
		/* A Maildir's tmp/ holds messages still being written. */
		if (d->is_maildir && !strcmp(names + all[i].name, "tmp"))
			continue;
		subs[ns++] = (struct walk_entry){
			.dir = d, .name = names + all[i].name, .ino = all[i].ino, .d_type = DT_DIR,
		};
	}
	if (d->is_maildir) {
		/* new/ first */
		for (size_t i = 0; i < ns; i++)
			if (!strcmp(subs[i].name, "new") && i) {
				struct walk_entry t = subs[i];
				memmove(subs + 1, subs, i * sizeof(*subs));
				subs[0] = t;
				break;
			}
	}
	d->dents = all;
	d->n_files = nf;
	d->subs = subs;
	d->n_subs = ns;
	d->names = names;
	d->refs += nf;
	return 0;
nomem:
	xfree(all);
	xfree(names);
	return -ENOMEM;
}

static int walk_push_dir(struct walk *w, struct walk_dir *d)
{
	if (w->depth == w->stack_cap) {
		size_t nc = w->stack_cap ? w->stack_cap * 2 : 16;
		struct walk_dir **ns = xrealloc(w->stack, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		w->stack = ns;
		w->stack_cap = nc;
	}
	w->stack[w->depth++] = d;
	return 0;
}

/* Names the Maildir folder of d, a Maildir, entered from parent. */
static int walk_name_folder(struct walk_dir *d, const struct walk_dir *parent, const char *name)
{
	if (parent && parent->is_maildir && name[0] == '.') {
		/* Maildir++: ".Archive.2019" under the top Maildir */
		const char *pf = parent->folder ? parent->folder : "";
		size_t pl = strlen(pf);
		size_t nl = strlen(name + 1);
		d->folder = xmalloc(pl + nl + 2);
		if (d->folder) {
			memcpy(d->folder, pf, pl);
			size_t at = pl;
			if (pl)
				d->folder[at++] = '/';
			memcpy(d->folder + at, name + 1, nl + 1);
		}
	} else {
		d->folder = walk_strdup(d->relpath, d->relpath_len);
	}
	return d->folder ? 0 : -ENOMEM;
}

/* Notes a directory the walk could not list (its error entry is made by
 * the caller): root and dir in one allocation.  0 or -ENOMEM. */
static int walk_note_unlisted(struct walk *w, const char *root, const char *dir, size_t dn)
{
	struct walk_unlisted *v = xrealloc(w->unlisted, (w->n_unlisted + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->unlisted = v;
	size_t rn = strlen(root);
	char *p = xmalloc(rn + dn + 2);
	if (!p)
		return -ENOMEM;
	memcpy(p, root, rn + 1);
	memcpy(p + rn + 1, dir, dn);
	p[rn + 1 + dn] = '\0';
	v[w->n_unlisted++] = (struct walk_unlisted){ { p, rn }, { p + rn + 1, dn }, p };
	w->unlisted_sorted = false;
	return 0;
}

/* Opens and lists a directory; on failure fills *fail as an error entry. */
static int walk_enter(struct walk *w, struct walk_dir *parent, struct walk_entry *sub,
                      const char *root, const char *base)
{
	int fd;
	char *rel = NULL;
	size_t rellen = 0;
	if (parent) {
		fd = sys_openat(parent->fd, sub->name,
		                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		rellen = parent->relpath_len + (parent->relpath_len ? 1 : 0) + strlen(sub->name);
		rel = xmalloc(rellen + 1);
		if (!rel) {
			if (fd >= 0)
				sys_close(fd);
			return -ENOMEM;
		}
		size_t at = 0;
		if (parent->relpath_len) {
			memcpy(rel, parent->relpath, parent->relpath_len);
			rel[parent->relpath_len] = '/';
			at = parent->relpath_len + 1;
		}
		strcpy(rel + at, sub->name);
	} else {
		fd = sys_openat(AT_FDCWD, root, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	}
	if (fd < 0) {
		/* ENOTDIR for a PATH argument: a file, not a failed listing */
		int r = parent || fd != -ENOTDIR
		      ? walk_note_unlisted(w, parent ? parent->base : base, rel ? rel : "", rellen) : 0;
		xfree(rel);
		return r < 0 ? r : fd;
	}
	struct walk_dir *d = walk_dir_new(fd, parent ? parent->root : root, parent ? parent->base : base,
	                                  rel ? rel : "", rellen);
	xfree(rel);
	if (!d) {
		sys_close(fd);
		return -ENOMEM;
	}
	if (parent && parent->is_maildir && (!strcmp(sub->name, "cur") || !strcmp(sub->name, "new"))) {
		d->in_maildir = true;
		d->folder = walk_strdup(parent->folder, strlen(parent->folder));
		if (!d->folder) {
			walk_dir_unref(d);
			return -ENOMEM;
		}
	}
	int err = 0;
	int r = walk_list_dir(w, d, parent, &err);
	if (r == 0 && d->is_maildir && !d->folder)
		r = walk_name_folder(d, parent, parent ? sub->name : "");
	if (r == 0)
		r = walk_push_dir(w, d);
	if (r < 0) {
		/* the files listed hold refs too (walk_list_dir): none was
		 * handed out, so they go with the directory (no leak) */
		d->refs -= (unsigned)d->n_files;
		walk_dir_unref(d);
		return r;
	}
	if (err && walk_note_unlisted(w, d->base, d->relpath, d->relpath_len) < 0)
		return -ENOMEM;
	/* getdents64 failing half-way: what was listed is walked, and the
	 * directory also gets an error record.  For a PATH argument the caller
	 * makes that record from a negative return (the directory is pushed
	 * already, so what was listed is still walked after it); without this
	 * a root whose listing failed vanished from the output. */
	if (err && !parent)
		return -err;
	if (err) {
		sub->reason = RECORD_IO;
		sub->err = err;
		return 1;
	}
	return 0;
}

void walk_set_shard(struct walk *w, unsigned k, unsigned n)
{
	w->shard_k = k;
	w->shard_n = n;
}

/* An explicit path, resolved: e->base (a PATH argument's realpath) or the
 * list entry joined to the working directory and normalised.  Heap. */
static char *walk_explicit_abs(const struct walk_entry *e, size_t *n)
{
	char *abs;
	if (e->base) {
		abs = walk_strdup(e->base, strlen(e->base));
	} else {
		const struct walk_dir *d = e->dir;
		size_t nl = strlen(e->name);
		bool rel = e->name[0] != '/';
		abs = xmalloc(d->base_len + nl + 2);
		if (abs) {
			size_t at = 0;
			if (rel) {
				memcpy(abs, d->base, d->base_len);
				at = d->base_len;
			}
			abs[at] = '/';
			memcpy(abs + at + 1, e->name, nl + 1);
			*n = walk_normalize(abs, at + 1 + nl);
			return abs;
		}
	}
	if (abs)
		*n = strlen(abs);
	return abs;
}

/* What an explicit path says of itself: its id, and when it names a
 * Maildir message, where ("/m/.Sent/cur/x:2,S": base "/m", folder "Sent",
 * subdir and name), so that naming a message gives the id and folder a
 * walk of its Maildir gives (README, "Records"). */
struct walk_explicit {
	char *abs;
	size_t n;
	bool maildir;
	struct str base, folder, subdir, name;
	uint64_t id;
};

static int walk_explicit_parse(const struct walk_entry *e, struct walk_explicit *x)
{
	memset(x, 0, sizeof(*x));
	if (!(x->abs = walk_explicit_abs(e, &x->n)))
		return -ENOMEM;
	size_t dir_n, name;
	x->maildir = maildir_split(x->abs, x->n, &dir_n, &name);
	if (!x->maildir) {
		x->id = walk_file_id((struct str){ x->abs, x->n }, STR_NULL, STR_NULL,
		                       false);
		return 0;
	}
	x->base = (struct str){ x->abs, dir_n };
	x->subdir = (struct str){ x->abs + dir_n + 1, 3 };
	x->name = (struct str){ x->abs + name, x->n - name };
	x->folder = (struct str){ x->abs + dir_n, 0 };
	const char *slash = dir_n ? memrchr(x->abs, '/', dir_n) : NULL;
	if (slash && slash[1] == '.' && slash + 2 < x->abs + dir_n) {
		/* a Maildir++ folder: its messages belong to the Maildir above */
		x->folder = (struct str){ slash + 2, (size_t)(x->abs + dir_n - slash - 2) };
		x->base.n = (size_t)(slash - x->abs);
	}
	x->id = maildir_id(x->base.p, x->base.n, x->name.p, x->name.n);
	return 0;
}

static int walk_entry_id(const struct walk_entry *e, uint64_t *id)
{
	const struct walk_dir *d = e->dir;
	if (e->follow) {
		struct walk_explicit x;
		int r = walk_explicit_parse(e, &x);
		if (r < 0)
			return r;
		*id = x.id;
		xfree(x.abs);
		return 0;
	}
	struct str name = { e->name, strlen(e->name) };
	*id = walk_file_id((struct str){ d->base, d->base_len },
	                     (struct str){ d->relpath, d->relpath_len }, name,
	                     d->in_maildir && e->d_type != DT_DIR);
	return 0;
}

uint64_t walk_entry_hash(const struct walk_entry *e)
{
	/* The shard follows the id: it ignores how the root was spelled, and a
	 * Maildir message keeps its shard through flag changes, new/ → cur/
	 * and moves between folders (each shard's --state would otherwise see
	 * a deletion in one shard and a new message in another). */
	uint64_t h = 0;
	if (walk_entry_id(e, &h) < 0)
		h = 0;   /* out of memory: shard 1, where its error record goes */
	return hash_mix64(h);   /* before a modulus (core/hash.h) */
}

static bool walk_listed(const struct walk_entry *e)
{
	return e->follow && !e->base && !e->shown;
}

static bool walk_in_shard(const struct walk *w, const struct walk_entry *e)
{
	/* a list entry may be a directory: the reader decides after its stat */
	if (walk_listed(e))
		return true;
	return !w->shard_n || walk_entry_hash(e) % w->shard_n == w->shard_k - 1;
}

bool walk_entry_listed_in_shard(const struct walk *w, const struct walk_entry *e, bool is_dir)
{
	if (!w->shard_n || !walk_listed(e) || is_dir)
		return true;
	return walk_entry_hash(e) % w->shard_n == w->shard_k - 1;
}

int walk_expand_dir(struct walk *w, struct walk_entry *e)
{
	if (!walk_listed(e))
		return -EISDIR;
	char *base = walk_resolve(w->cwd, e->name);
	if (!base)
		return -ENOMEM;
	int r = walk_enter(w, NULL, NULL, e->name, base);
	xfree(base);
	if (r >= 0 || w->depth)
		w->reopened = true;
	return r;
}

bool walk_take_reopened(struct walk *w)
{
	bool r = w->reopened;
	w->reopened = false;
	return r;
}

static int walk_next_any(struct walk *w, struct walk_entry **out);

int walk_next(struct walk *w, struct walk_entry **out)
{
	for (;;) {
		int r = walk_next_any(w, out);
		if (r <= 0 || walk_in_shard(w, *out))
			return r;
		walk_entry_done(w, *out);
	}
}

static int walk_next_any(struct walk *w, struct walk_entry **out)
{
	if (!w->roots_sorted && walk_roots_sort(w) < 0)
		return -ENOMEM;
	for (;;) {
		if (!w->depth) {
			if (w->next_source == w->n_sources)
				return 0;
			struct walk_source *s = &w->sources[w->next_source];
			if (s->list) {
				if (s->list->next_file < s->list->n_files) {
					struct walk_entry *e = &s->list->files[s->list->next_file++];
					s->list->refs++;
					*out = e;
					return 1;
				}
				w->next_source++;
				continue;
			}
			w->next_source++;
			if (walk_root_repeated(w, w->next_source - 1))
				continue;
			int r = s->shown ? -ENOTDIR : walk_enter(w, NULL, NULL, s->path, s->base);
			if (r == -ENOMEM)
				return r;
			if (r < 0) {
				/* A file argument (ENOTDIR): the reader's statx decides.
				 * Any other failure is the argument's error record. */
				struct walk_dir *x = w->explicit_dir;
				struct walk_entry *e = xcalloc(1, sizeof(*e));
				if (!e)
					return -ENOMEM;
				e->dir = x;
				e->name = s->path;
				e->base = s->base;
				e->shown = s->shown;
				e->d_type = DT_UNKNOWN;
				e->follow = true;
				if (r != -ENOTDIR) {
					e->reason = RECORD_IO;
					e->err = -r;
				}
				x->refs++;
				/* the entry owns nothing: s->path lives until walk_free */
				*out = e;
				return 1;
			}
			continue;
		}
		struct walk_dir *top = w->stack[w->depth - 1];
		if (top->next_file < top->n_files) {
			struct walk_entry *e = walk_entry_get(w);
			if (!e)
				return -ENOMEM;
			const struct walk_dent *de = &top->dents[top->next_file++];
			*e = (struct walk_entry){
				.dir = top, .name = top->names + de->name, .ino = de->ino,
				.d_type = de->d_type, .pooled = true,
			};
			*out = e;
			return 1;
		}
		if (top->next_sub < top->n_subs) {
			struct walk_entry *sub = &top->subs[top->next_sub++];
			int r = walk_enter(w, top, sub, NULL, NULL);
			if (r == -ENOMEM)
				return r;
			if (r < 0) {
				sub->reason = RECORD_IO;
				sub->err = -r;
				r = 1;
			}
			if (r == 1) {
				top->refs++;
				*out = sub;
				return 1;
			}
			continue;
		}
		w->depth--;
		walk_dir_unref(top);
	}
}

void walk_entry_done(struct walk *w, struct walk_entry *e)
{
	struct walk_dir *d = e->dir;
	if (e->pooled) {
		union walk_pooled *p = (union walk_pooled *)e;
		p->next = w->free_entries;
		w->free_entries = p;
	} else if (d == w->explicit_dir) {
		xfree(e);
	}
	walk_dir_unref(d);
}

int walk_entry_dirfd(const struct walk_entry *e)
{
	return e->dir->fd;
}

/* The batch arena's allocations for a record's strings, each with a fault
 * point of its own at the caller's line: the arena goes to malloc only
 * when a chunk fills, at a line shared by every arena, so a walk over
 * that line alone seldom fails a path copy (where a half-built record
 * once reached the emitter). */
#define walk_alloc(a, n) walk_alloc_(FAULT_SITE, (a), (n))
static char *walk_alloc_(const char *site, struct arena *a, size_t n)
{
	if (fault_check_at(FAULT_ALLOC, "arena", site))
		return NULL;
	return arena_alloc(a, n);
}

#define walk_copy(a, p, n, r) walk_copy_(FAULT_SITE, (a), (p), (n), (r))
static struct str walk_copy_(const char *site, struct arena *a, const char *p, size_t n, int *r)
{
	char *d = walk_alloc_(site, a, n + 1);
	if (d) {
		memcpy(d, p, n);
		d[n] = '\0';
	} else {
		*r = -ENOMEM;
		n = 0;
	}
	return (struct str){ d, n };
}

static void walk_describe_flags(struct record_io *io, const char *base, size_t n)
{
	maildir_flags_view(base, n, &io->flags.p, &io->flags.n);
}

int walk_entry_describe(const struct walk_entry *e, struct arena *a, struct record_io *io)
{
	const struct walk_dir *d = e->dir;
	int r = 0;
	size_t nl = strlen(e->name);
	io->root = walk_copy(a, d->root, strlen(d->root), &r);
	if (d->relpath_len) {
		char *p = walk_alloc(a, d->relpath_len + 1 + nl + 1);
		if (!p)
			return -ENOMEM;
		memcpy(p, d->relpath, d->relpath_len);
		p[d->relpath_len] = '/';
		memcpy(p + d->relpath_len + 1, e->name, nl + 1);
		io->path = (struct str){ p, d->relpath_len + 1 + nl };
	} else {
		const char *shown = e->shown ? e->shown : e->name;
		io->path = walk_copy(a, shown, strlen(shown), &r);
	}
	if (r < 0)
		return r;
	if (e->follow) {
		struct walk_explicit x;
		if ((r = walk_explicit_parse(e, &x)) < 0)
			return r;
		io->id = x.id;
		/* Standard input's place is its content's ("stdin:" and the
		 * hash): an index keeps each message piped in, as a file of
		 * its own, where under one place ("-" in the working
		 * directory) each replaced the last. */
		io->base = e->shown ? walk_copy(a, e->base, strlen(e->base), &r)
		                    : walk_copy(a, d->base, d->base_len, &r);
		if (x.maildir) {
			io->maildir = true;
			io->folder = walk_copy(a, x.folder.p, x.folder.n, &r);
			io->subdir = walk_copy(a, x.subdir.p, 3, &r);
			const char *base = io->path.p + io->path.n - x.name.n;
			walk_describe_flags(io, base, x.name.n);
		}
		xfree(x.abs);
		return r;
	}
	io->base = walk_copy(a, d->base, d->base_len, &r);
	if (r < 0 || (r = walk_entry_id(e, &io->id)) < 0)
		return r;
	if (d->in_maildir && e->d_type != DT_DIR) {
		io->maildir = true;
		io->folder = walk_copy(a, d->folder, strlen(d->folder), &r);
		io->subdir = walk_copy(a, d->relpath + d->relpath_len - 3, 3, &r);
		walk_describe_flags(io, io->path.p + io->path.n - nl, nl);
	}
	return r;
}

/* When the resolved path p (n bytes) lies below the resolved directory b
 * (bn bytes; "/" is the one that ends in '/'): the bytes of p after b and
 * its '/', *rest of them.  NULL when p is b or lies elsewhere. */
static const char *walk_under(const char *p, size_t n, const char *b, size_t bn, size_t *rest)
{
	if (!bn || bn >= n || memcmp(p, b, bn) || (walk_sep(b, bn) && p[bn] != '/'))
		return NULL;
	size_t skip = bn + walk_sep(b, bn);
	*rest = n - skip;
	return p + skip;
}

static int walk_unlisted_cmp(const void *a, const void *b)
{
	const struct walk_unlisted *x = a, *y = b;
	int c = str_cmp(x->root, y->root);
	return c ? c : str_cmp(x->dir, y->dir);
}

/* Whether a directory above path (below root, root itself included) is
 * noted as not listed, wholly or partly. */
static bool walk_unlisted_below(const struct walk *w, struct str root, struct str path)
{
	for (size_t n = 0; n < path.n; n++) {
		if (n && path.p[n] != '/')
			continue;
		struct walk_unlisted key = { root, { path.p, n } };
		if (bsearch(&key, w->unlisted, w->n_unlisted, sizeof(key), walk_unlisted_cmp))
			return true;
	}
	return false;
}

/* Whether path (below root) is spelled plainly: not absolute, no ".",
 * ".." or empty component.  A file named on the command line is filed
 * under the working directory and its path as given ("./M/x.eml", from
 * another directory "../M/x.eml", or absolute), which no prefix of a
 * PATH's resolved base matches as spelled. */
static bool walk_path_plain(struct str path)
{
	if (path.n && path.p[0] == '/')
		return false;
	for (size_t i = 0; i < path.n;) {
		size_t j = i;
		while (j < path.n && path.p[j] != '/')
			j++;
		size_t len = j - i;
		if (j < path.n && !len)
			return false;   /* "//" */
		if ((len == 1 && path.p[i] == '.') || (len == 2 && path.p[i] == '.' && path.p[i + 1] == '.'))
			return false;
		i = j + 1;
	}
	return true;
}

/* root and path joined (path alone when absolute) and normalised
 * lexically.  Heap, *n bytes, or NULL. */
static char *walk_filed_full(struct str root, struct str path, size_t *n)
{
	bool abs = path.n && path.p[0] == '/';
	char *p = abs ? walk_join(path.p, path.n, "", 0, n) : walk_join(root.p, root.n, path.p, path.n, n);
	if (p)
		*n = walk_normalize(p, *n);
	return p;
}

bool walk_unlisted(struct walk *w, struct str root, struct str path)
{
	if (!w->n_unlisted)
		return false;
	if (!w->unlisted_sorted) {
		qsort(w->unlisted, w->n_unlisted, sizeof(*w->unlisted), walk_unlisted_cmp);
		w->unlisted_sorted = true;
	}
	if (walk_unlisted_below(w, root, path))
		return true;
	/* Filed under another root than the PATH that walked it (walk_covers,
	 * walk_leave_to_roots): every PATH that holds root/path decides by its
	 * own listings. */
	size_t fn;
	char *full = walk_filed_full(root, path, &fn);
	if (!full)
		return true;   /* not known: kept, as an unlisted path is */
	bool r = false;
	for (size_t i = 0; i < w->n_sources && !r; i++) {
		const struct walk_source *src = w->sources + i;
		size_t bn = src->path && !src->shown ? strlen(src->base) : 0, rn;
		const char *rest = walk_under(full, fn, src->base, bn, &rn);
		r = rest && walk_unlisted_below(w, (struct str){ src->base, bn }, (struct str){ rest, rn });
	}
	xfree(full);
	return r;
}

void walk_stats_get(const struct walk *w, struct walk_stats *out)
{
	*out = w->stats;
}

bool walk_judged(struct walk *w, struct str root, struct str path, struct str *shown)
{
	return walk_covers(w, root, path, shown) && !walk_unlisted(w, root, path);
}

/* Whether the file at place (n bytes) is a PATH argument, or lies below
 * one (under_too). */
static bool walk_place_given(const struct walk *w, const char *place, size_t n, bool under_too)
{
	for (size_t i = 0; i < w->n_sources; i++) {
		const struct walk_source *src = &w->sources[i];
		if (!src->path || src->shown)
			continue;
		size_t bn = strlen(src->base), rest;
		if ((bn == n && !memcmp(place, src->base, n)) ||
		    (under_too && walk_under(place, n, src->base, bn, &rest)))
			return true;
		/* the place of a link named: the file it held before is this
		 * run's to judge, whatever the link leads to now (a PATH
		 * that leads where an earlier one does is read once, there) */
		if (src->place && strlen(src->place) == n && !memcmp(place, src->place, n))
			return true;
	}
	return false;
}

/* Whether the file filed under root and path is a PATH argument, or lies
 * below one (under_too), where it lies: its place (walk_filed_full) with
 * its directory resolved, as far as that still resolves.  A spelling may
 * go through a link (T/L/x.eml, L leading out of T; ./L/x.eml), and a
 * walk, which follows none, never meets what lies there.  The last
 * directory and its realpath are kept: the entries asked about come a
 * directory at a time. */
static bool walk_filed_given(struct walk *w, struct str root, struct str path, bool under_too)
{
	size_t fn;
	char *full = walk_filed_full(root, path, &fn);
	if (!full)
		return false;   /* not known: kept */
	size_t dn = (size_t)(strrchr(full, '/') - full);   /* absolute */
	if (!w->covers_dir || w->covers_dir_n != dn || memcmp(w->covers_dir, full, dn)) {
		xfree(w->covers_dir);
		xfree(w->covers_real);
		w->covers_real = NULL;
		w->covers_dir = walk_strdup(full, dn);
		w->covers_dir_n = dn;
		char *r = w->covers_dir ? realpath(dn ? w->covers_dir : "/", NULL) : NULL;
		if (r)
			w->covers_real = walk_strdup(r, strlen(r));
		free(r);   /* realpath's, not ours */
	}
	size_t pn = fn;
	char *place = w->covers_real ? walk_join(w->covers_real, strlen(w->covers_real), full + dn + 1,
	                                         fn - dn - 1, &pn)
	                             : full;
	bool given = place && walk_place_given(w, place, pn, under_too);
	if (place != full)
		xfree(place);
	xfree(full);
	return given;
}

/* Whether the file filed under root and path (a plain path) lies at the
 * place of a link named (walk_place_given). */
static bool walk_at_link_place(const struct walk *w, struct str root, struct str path)
{
	if (!w->link_named)
		return false;
	size_t fn;
	char *full = walk_filed_full(root, path, &fn);
	bool at = full && walk_place_given(w, full, fn, false);
	xfree(full);
	return at;
}

bool walk_covers(struct walk *w, struct str root, struct str path, struct str *shown)
{
	bool list = false, covered = false;
	/* A path not plain was spelled on a command line, relative to the
	 * working directory it is filed under ("../M/x.eml", "./L/x.eml",
	 * absolute): no prefix of it says where it lies, its place does. */
	bool plain = walk_path_plain(path);
	*shown = root;
	/* every PATH is asked: root may be one given after a PATH above it,
	 * and is then spelt as that one was */
	for (size_t i = 0; i < w->n_sources; i++) {
		const struct walk_source *src = &w->sources[i];
		list |= src->list != NULL;
		if (!src->path || src->shown)
			continue;
		size_t n = strlen(src->base);
		if (n == root.n && memcmp(src->base, root.p, n) == 0) {
			*shown = (struct str){ src->path, strlen(src->path) };
			if (plain)
				return true;
			continue;
		}
		if (!plain)
			continue;
		/* root below this PATH: an earlier run's root inside this one's
		 * tree (its files are now this PATH's, under other ids) */
		size_t qn;
		covered = covered || walk_under(root.p, root.n, src->base, n, &qn);
		/* this PATH below root, holding path (or a file argument naming
		 * it): the file is this PATH's now */
		const char *q = walk_under(src->base, n, root.p, root.n, &qn);
		covered = covered || (q && qn <= path.n && !memcmp(q, path.p, qn) &&
		                      (qn == path.n || path.p[qn] == '/'));
	}
	if (list)
		return true;
	/* a plain path the prefix tests took, not the PATH's own entry, or
	 * a spelled one: where it lies decides; so does a plain one at the
	 * place of a link named (walk_place_given) */
	if (!covered && plain)
		return walk_at_link_place(w, root, path);
	return walk_filed_given(w, root, path, true);
}

bool walk_named(struct walk *w, struct str root, struct str path)
{
	return walk_filed_given(w, root, path, false);
}

const char *walk_source_base(const struct walk *w, size_t i)
{
	/* standard input has no root: its base names its content */
	return i < w->n_sources && !w->sources[i].shown ? w->sources[i].base : NULL;
}

uint64_t walk_total(const struct walk *w)
{
	uint64_t n = 0;
	for (size_t i = 0; i < w->n_sources; i++)
		n += w->sources[i].list ? w->sources[i].list->n_files : 1;
	return n;
}

bool walk_entry_in_maildir(const struct walk_entry *e)
{
	return e->dir->in_maildir;
}

bool walk_entry_is_stdin(const struct walk_entry *e)
{
	return e->shown != NULL;
}

/* One vanished entry of walk_find_renamed: its unique part, and what the
 * listings gave for it so far. */
struct walk_wanted {
	const struct walk_entry *e;
	size_t len;                /* of e->name's unique part */
	struct walk_renamed *out;  /* the caller's */
	bool own_inode;            /* the name found is e's own inode's */
};

/* Orders the cur/ and new/ directories of Maildirs by Maildir: 0 for the
 * two of one Maildir (their path without the last three bytes). */
static int walk_maildir_cmp(const struct walk_dir *x, const struct walk_dir *y)
{
	if (x == y)
		return 0;
	ingest_assert(x->relpath_len >= 3 && y->relpath_len >= 3 && x->base && y->base);
	int c = strcmp(x->base, y->base);
	if (c)
		return c;
	size_t xn = x->relpath_len - 3, yn = y->relpath_len - 3;
	c = memcmp(x->relpath, y->relpath, xn < yn ? xn : yn);
	return c ? c : (xn > yn) - (xn < yn);
}

static int walk_wanted_cmp(const void *a, const void *b)
{
	const struct walk_wanted *x = a, *y = b;
	int c = walk_maildir_cmp(x->e->dir, y->e->dir);
	if (!c)
		c = walk_unique_cmp(x->e->name, x->len, y->e->name, y->len);
	return c ? c : (x->out > y->out) - (x->out < y->out);
}

/* The first of want[0..n) (one Maildir's, sorted) whose unique part is
 * name[0..len), or n. */
static size_t walk_wanted_find(const struct walk_wanted *want, size_t n, const char *name, size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (walk_unique_cmp(want[mid].e->name, want[mid].len, name, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !walk_unique_cmp(want[lo].e->name, want[lo].len, name, len) ? lo : n;
}

/* Whether the directory name beside d (d is a Maildir's cur/ or new/) is
 * another PATH argument: a message that moved there is that PATH's to read
 * (walk_roots_sort), not this one's a second time under another id. */
static bool walk_sibling_is_root(const struct walk *w, const struct walk_dir *d, const char *name)
{
	if (!w->n_roots)
		return false;
	size_t n;
	char *p = walk_join(d->base, d->base_len, d->relpath, d->relpath_len, &n);
	if (!p)
		return false;   /* searched, as before the rule */
	memcpy(p + n - 3, name, 3);   /* "cur" for "new", or the other way */
	bool root = walk_is_root(w, p);
	xfree(p);
	return root;
}

/* Lists sub ("../cur" or "../new", from the entries' directories, the
 * cur/ or new/ of one Maildir) once and gives every entry of want[0..n)
 * the name its unique part has there: the one of its own inode over any
 * other, and never the file of another entry's inode.  *left counts the
 * entries still without their own inode's name. */
static int walk_list_for(struct walk *w, struct walk_wanted *want, size_t n, const char *sub,
                         struct arena *a, size_t *left)
{
	if (walk_sibling_is_root(w, want[0].e->dir, sub + 3))   /* "../cur" */
		return 0;
	size_t sl = strlen(sub);
	int fd = sys_openat(want[0].e->dir->fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	w->stats.rename_listings++;
	int r = 0;
	while (*left && r == 0) {
		/* the reader's, not the walk's: --stats' syscall counts have it */
		ssize_t got = sys_getdents64_restart(fd, w->buf, LIMIT_GETDENTS_BYTES);
		if (got <= 0) {
			r = (int)got;
			break;
		}
		for (ssize_t off = 0; off < got && r == 0;) {
			struct linux_dirent64 *de = (struct linux_dirent64 *)(w->buf + off);
			off += de->d_reclen;
			size_t nl = strlen(de->d_name);
			size_t ul = maildir_unique_len(de->d_name, nl);
			size_t first = walk_wanted_find(want, n, de->d_name, ul), end = first;
			/* a file of one of these entries, or one given to one
			 * of them for want of its own: never another's */
			bool taken = false;
			for (; end < n && !walk_unique_cmp(want[end].e->name, want[end].len, de->d_name, ul); end++)
				taken |= de->d_ino == want[end].e->ino;
			for (size_t i = first; i < end; i++) {
				bool own = de->d_ino == want[i].e->ino;
				if (want[i].own_inode || (!own && (taken || want[i].out->name)))
					continue;
				taken |= !own;
				/* "../cur/" + the name, relative to the entry's directory */
				char *p = arena_alloc(a, sl + 1 + nl + 1);
				if (!p) {
					r = -ENOMEM;
					break;
				}
				memcpy(p, sub, sl);
				p[sl] = '/';
				memcpy(p + sl + 1, de->d_name, nl + 1);
				want[i].out->name = p;
				want[i].own_inode = own;
				*left -= own;
			}
		}
	}
	sys_close(fd);
	return r;
}

int walk_find_renamed(struct walk *w, struct walk_renamed *v, size_t n, struct arena *a)
{
	if (!n)
		return 0;
	struct walk_wanted *want = xmalloc(n * sizeof(*want));
	if (!want)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct walk_entry *e = v[i].e;
		v[i].name = NULL;
		if (e->dir->in_maildir)
			want[k++] = (struct walk_wanted){ .e = e, .out = &v[i],
			                                  .len = maildir_unique_len(e->name, strlen(e->name)) };
	}
	qsort(want, k, sizeof(*want), walk_wanted_cmp);
	/* One group a Maildir; a listing that fails does not keep the other
	 * Maildirs from being searched (the first error is returned, or -ENOMEM,
	 * which ends the search). */
	int first_err = 0;
	for (size_t i = 0, j; i < k && first_err != -ENOMEM; i = j) {
		for (j = i + 1; j < k && !walk_maildir_cmp(want[j].e->dir, want[i].e->dir); j++)
			;
		/* cur/ first: new/ -> cur/ is the usual move, and flags change in cur/ */
		size_t left = j - i;
		int r = walk_list_for(w, want + i, j - i, "../cur", a, &left);
		if (r != -ENOMEM && left) {
			int r2 = walk_list_for(w, want + i, j - i, "../new", a, &left);
			if (!r || r2 == -ENOMEM)
				r = r2;
		}
		if (r && (!first_err || r == -ENOMEM))
			first_err = r;
	}
	xfree(want);
	return first_err;
}
