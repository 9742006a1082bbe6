/* Incremental state: see state.h.
 *
 * File format (version line, then one entry per record, binary-safe):
 *     ingest-state 1\n
 *     <dev> <ino> <size> <mtime_sec> <mtime_nsec> <rootlen> <pathlen> <idlen>\n
 *     <root bytes><path bytes><id bytes>\n
 * Lookups are two open-addressing hash tables over the previous run's
 * entries: by (root, path), and by (root, Maildir, unique name) for renames.
 * New entries live in fixed-size chunks that never move, so a worker may
 * fill an entry's Message-ID while the reader keeps adding entries. */
#include "io/state.h"
#include "io/maildir.h"
#include "io/walk.h"
#include "core/hash.h"
#include "core/dynbuf.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAGIC "ingest-state 1\n"
#define STATE_CHUNK 4096

struct state_entry {
	char *root, *path;
	size_t root_n, path_n;
	char *_Atomic msgid;       /* set once by the worker that parsed it */
	size_t msgid_n;
	uint64_t dev, ino, size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	bool seen;                 /* old entries: met by this run */
	bool unread;               /* new entries: statted, but the read failed */
	const struct state_entry *was;  /* new entries: the same path's old entry */
};

struct state_chunk {
	struct state_chunk *next;
	size_t n;
	struct state_entry v[STATE_CHUNK];
};

struct state {
	struct state_entry *old;
	size_t n_old;
	char *old_bytes;           /* the loaded file: old strings point into it */
	uint32_t *by_path, *by_name;   /* indexes + 1 into old; 0 = empty */
	size_t mask;
	struct state_chunk *head, *tail;
	struct walk *walk;         /* what it could not list is not gone */
};

static uint64_t state_path_key(const char *root, size_t rn, const char *path, size_t pn)
{
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, root, rn);
	h = hash_fnv1a(h, "", 1);
	return hash_fnv1a(h, path, pn);
}

/* The rename key: root, the Maildir (the path above cur/ or new/) and the
 * unique part of the file name.  False for paths outside a Maildir. */
static bool state_name_key(const char *root, size_t rn, const char *path, size_t pn, uint64_t *key)
{
	const char *slash = memrchr(path, '/', pn);
	if (!slash || slash - path < 3)
		return false;
	const char *sub = slash - 3;
	if ((memcmp(sub, "cur", 3) && memcmp(sub, "new", 3)) || (sub > path && sub[-1] != '/'))
		return false;
	const char *base = slash + 1;
	size_t bn = maildir_base_len(base, pn - (size_t)(base - path));
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, root, rn);
	h = hash_fnv1a(h, "", 1);
	h = hash_fnv1a(h, path, (size_t)(sub - path));
	h = hash_fnv1a(h, "", 1);
	*key = hash_fnv1a(h, base, bn);
	return true;
}

static void state_insert(uint32_t *table, size_t mask, uint64_t key, uint32_t idx)
{
	for (size_t i = key & mask;; i = (i + 1) & mask)
		if (!table[i]) {
			table[i] = idx + 1;
			return;
		}
}

/* n space-separated decimal numbers filling the NUL-terminated line; the
 * mtime's seconds may be negative (stored as two's complement). */
static int state_parse_numbers(const char *p, uint64_t *out, int n)
{
	for (int i = 0; i < n; i++) {
		bool neg = *p == '-';
		if (neg)
			p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno)
			return -EINVAL;
		out[i] = neg ? (uint64_t)-(int64_t)v : (uint64_t)v;
		p = end;
		if (i + 1 < n && *p++ != ' ')
			return -EINVAL;
	}
	return *p ? -EINVAL : 0;
}

static int state_parse(struct state *s, char *p, size_t n)
{
	size_t ml = strlen(STATE_MAGIC);
	if (n < ml || memcmp(p, STATE_MAGIC, ml))
		return -EINVAL;
	size_t cap = 0;
	for (size_t at = ml; at < n;) {
		char *nl = memchr(p + at, '\n', n - at);
		if (!nl)
			return -EINVAL;
		*nl = '\0';
		struct state_entry e = { 0 };
		uint64_t f[8];
		if (state_parse_numbers(p + at, f, 8) < 0)
			return -EINVAL;
		e.dev = f[0];
		e.ino = f[1];
		e.size = f[2];
		e.mtime_sec = (int64_t)f[3];
		e.mtime_nsec = (uint32_t)f[4];
		size_t rn = (size_t)f[5], pn = (size_t)f[6], in = (size_t)f[7];
		if (f[4] >= 1000000000u || f[5] > n || f[6] > n || f[7] > n)
			return -EINVAL;
		at = (size_t)(nl - p) + 1;
		if (rn > n - at || pn > n - at - rn || in > n - at - rn - pn || at + rn + pn + in >= n ||
		    p[at + rn + pn + in] != '\n')
			return -EINVAL;
		e.root = p + at;
		e.root_n = rn;
		e.path = p + at + rn;
		e.path_n = pn;
		atomic_init(&e.msgid, in ? p + at + rn + pn : NULL);
		e.msgid_n = in;
		at += rn + pn + in + 1;
		if (s->n_old == cap) {
			cap = cap ? cap * 2 : 1024;
			struct state_entry *v = xrealloc(s->old, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			s->old = v;
		}
		s->old[s->n_old++] = e;
	}
	size_t size = 16;
	while (size < 2 * s->n_old)
		size *= 2;
	s->mask = size - 1;
	s->by_path = xcalloc(size, sizeof(uint32_t));
	s->by_name = xcalloc(size, sizeof(uint32_t));
	if (!s->by_path || !s->by_name)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_old; i++) {
		struct state_entry *e = &s->old[i];
		uint64_t k;
		state_insert(s->by_path, s->mask, state_path_key(e->root, e->root_n, e->path, e->path_n), (uint32_t)i);
		if (state_name_key(e->root, e->root_n, e->path, e->path_n, &k))
			state_insert(s->by_name, s->mask, k, (uint32_t)i);
	}
	return 0;
}

int state_load(const char *path, struct state **out)
{
	struct state *s = xcalloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*out = s;
	int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd == -ENOENT)
		return 0;   /* the first run */
	if (fd < 0)
		return fd;
	size_t cap = 1 << 20, n = 0;
	char *buf = xmalloc(cap);
	int r = buf ? 0 : -ENOMEM;
	while (r == 0) {
		if (n == cap) {
			char *nb = xrealloc(buf, cap * 2);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t got = sys_read(fd, buf + n, cap - n);
		if (got == -EINTR)
			continue;
		if (got < 0)
			r = (int)got;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	sys_close(fd);
	s->old_bytes = buf;
	if (r == 0)
		r = state_parse(s, buf, n);
	return r;
}

int state_load_bytes(char *buf, size_t n, struct state **out)
{
	struct state *s = xcalloc(1, sizeof(*s));
	if (!s) {
		xfree(buf);
		return -ENOMEM;
	}
	*out = s;
	s->old_bytes = buf;
	return state_parse(s, buf, n);
}

int state_format_begin(struct dynbuf *b)
{
	return dynbuf_puts(b, STATE_MAGIC);
}

int state_format_entry(struct dynbuf *b, struct mail_str root, struct mail_str path,
                       struct mail_str msgid, uint64_t dev, uint64_t ino, uint64_t size,
                       int64_t mtime_sec, uint32_t mtime_nsec)
{
	size_t in = msgid.p ? msgid.n : 0;
	int r = dynbuf_printf(b, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRIu32 " %zu %zu %zu\n",
	                      dev, ino, size, mtime_sec, mtime_nsec, root.n, path.n, in);
	if (r == 0)
		r = dynbuf_append(b, root.p, root.n);
	if (r == 0)
		r = dynbuf_append(b, path.p, path.n);
	if (r == 0 && in)
		r = dynbuf_append(b, msgid.p, in);
	if (r == 0)
		r = dynbuf_putc(b, '\n');
	return r;
}

void state_free(struct state *s)
{
	if (!s)
		return;
	for (struct state_chunk *c = s->head, *next; c; c = next) {
		next = c->next;
		/* new entries own their strings; old ones point into old_bytes */
		for (size_t i = 0; i < c->n; i++) {
			xfree(c->v[i].root);
			xfree(atomic_load(&c->v[i].msgid));
		}
		xfree(c);
	}
	xfree(s->old);
	xfree(s->old_bytes);
	xfree(s->by_path);
	xfree(s->by_name);
	xfree(s);
}

static struct state_entry *state_add(struct state *s, const struct record_io *io)
{
	if (!s->tail || s->tail->n == STATE_CHUNK) {
		struct state_chunk *c = xcalloc(1, sizeof(*c));
		if (!c)
			return NULL;
		if (s->tail)
			s->tail->next = c;
		else
			s->head = c;
		s->tail = c;
	}
	struct state_entry *e = &s->tail->v[s->tail->n];
	/* root and path in one allocation; the Message-ID (set later) in a
	 * second */
	char *mem = xmalloc(io->root.n + io->path.n + 2);
	if (!mem)
		return NULL;
	memcpy(mem, io->root.p, io->root.n);
	mem[io->root.n] = '\0';
	memcpy(mem + io->root.n + 1, io->path.p, io->path.n);
	mem[io->root.n + 1 + io->path.n] = '\0';
	*e = (struct state_entry){
		.root = mem, .root_n = io->root.n, .path = mem + io->root.n + 1, .path_n = io->path.n,
		.dev = io->dev, .ino = io->ino, .size = io->size,
		.mtime_sec = io->mtime_sec, .mtime_nsec = io->mtime_nsec,
	};
	atomic_init(&e->msgid, NULL);
	s->tail->n++;
	return e;
}

static struct state_entry *state_find(struct state *s, uint32_t *table, uint64_t key,
                                      bool (*match)(const struct state_entry *, const void *),
                                      const void *arg)
{
	if (!s->n_old)
		return NULL;
	for (size_t i = key & s->mask; table[i]; i = (i + 1) & s->mask) {
		struct state_entry *e = &s->old[table[i] - 1];
		if (match(e, arg))
			return e;
	}
	return NULL;
}

static bool state_match_path(const struct state_entry *e, const void *arg)
{
	const struct record_io *io = arg;
	return e->root_n == io->root.n && e->path_n == io->path.n &&
	       !memcmp(e->root, io->root.p, e->root_n) && !memcmp(e->path, io->path.p, e->path_n);
}

static bool state_match_rename(const struct state_entry *e, const void *arg)
{
	const struct record_io *io = arg;
	/* a rename keeps the inode: that is what tells it from a new copy */
	return !e->seen && e->ino == io->ino && e->dev == io->dev && e->root_n == io->root.n &&
	       !memcmp(e->root, io->root.p, e->root_n);
}

static void state_copy_id(struct state_entry *to, const struct state_entry *from)
{
	char *id = atomic_load(&from->msgid);
	if (!id || !from->msgid_n)
		return;
	char *c = xmalloc(from->msgid_n + 1);
	if (!c)
		return;
	memcpy(c, id, from->msgid_n);
	c[from->msgid_n] = '\0';
	to->msgid_n = from->msgid_n;
	atomic_store(&to->msgid, c);
}

int state_check(struct state *s, const struct record_io *io, enum state_verdict *v,
                struct mail_str *old_path, struct mail_str *old_msgid, struct state_entry **entry)
{
	struct state_entry *old = state_find(s, s->by_path,
	                                     state_path_key(io->root.p, io->root.n, io->path.p, io->path.n),
	                                     state_match_path, io);
	uint64_t k;
	*v = STATE_NEW;
	if (old && !old->seen) {
		old->seen = true;
		bool same = old->dev == io->dev && old->ino == io->ino && old->size == io->size &&
		            old->mtime_sec == io->mtime_sec && old->mtime_nsec == io->mtime_nsec;
		*v = same ? STATE_UNCHANGED : STATE_CHANGED;
	} else if (state_name_key(io->root.p, io->root.n, io->path.p, io->path.n, &k) &&
	           (old = state_find(s, s->by_name, k, state_match_rename, io))) {
		old->seen = true;
		*v = STATE_RENAMED;
		*old_path = (struct mail_str){ old->path, old->path_n };
	}
	struct state_entry *e = state_add(s, io);
	if (!e)
		return -ENOMEM;
	if (old && (*v == STATE_UNCHANGED || *v == STATE_RENAMED))
		state_copy_id(e, old);
	if (*v == STATE_UNCHANGED || *v == STATE_CHANGED)
		e->was = old;
	char *id = atomic_load(&e->msgid);
	*old_msgid = (struct mail_str){ id, id ? e->msgid_n : 0 };
	*entry = e;
	return 0;
}

void state_mark_unread(struct state_entry *e)
{
	if (e)
		e->unread = true;
}

void state_set_message_id(struct state_entry *e, struct mail_str id)
{
	if (!e || !id.p || !id.n || atomic_load(&e->msgid))
		return;
	char *c = xmalloc(id.n + 1);
	if (!c)
		return;
	memcpy(c, id.p, id.n);
	c[id.n] = '\0';
	e->msgid_n = id.n;
	atomic_store(&e->msgid, c);
}

/* An old entry kept as it was: into the new state, Message-ID included. */
static int state_keep(struct state *s, const struct state_entry *old)
{
	struct record_io io = {
		.root = { old->root, old->root_n }, .path = { old->path, old->path_n },
		.dev = old->dev, .ino = old->ino, .size = old->size,
		.mtime_sec = old->mtime_sec, .mtime_nsec = old->mtime_nsec,
	};
	struct state_entry *e = state_add(s, &io);
	if (!e)
		return -ENOMEM;
	state_copy_id(e, old);
	return 0;
}

/* Without a stat there is no inode to tell a rename from a new copy: the
 * unique name alone (its key: root, Maildir, unique part) says which old
 * entry a file may be.  The probe sequence holds other keys too. */
static bool state_match_unseen(const struct state_entry *e, const void *arg)
{
	const uint64_t *key = arg;
	uint64_t k;
	return !e->seen && state_name_key(e->root, e->root_n, e->path, e->path_n, &k) && k == *key;
}

int state_not_read(struct state *s, const struct record_io *io)
{
	struct state_entry *old = state_find(s, s->by_path,
	                                     state_path_key(io->root.p, io->root.n, io->path.p, io->path.n),
	                                     state_match_path, io);
	uint64_t k;
	/* renamed since (a flag change) and unreadable now: still the message
	 * the old entry knew, kept under its old name until a run can stat it */
	if (!old && state_name_key(io->root.p, io->root.n, io->path.p, io->path.n, &k))
		old = state_find(s, s->by_name, k, state_match_unseen, &k);
	if (!old || old->seen)
		return 0;
	old->seen = true;
	return state_keep(s, old);
}

void state_set_walk(struct state *s, struct walk *w)
{
	s->walk = w;
}

int state_deleted(struct state *s, int (*fn)(void *ctx, struct mail_str root, struct mail_str path,
                                             struct mail_str msgid), void *ctx)
{
	for (size_t i = 0; i < s->n_old; i++) {
		struct state_entry *e = &s->old[i];
		if (e->seen)
			continue;
		struct mail_str root = { e->root, e->root_n }, path = { e->path, e->path_n };
		/* Not met, but in a directory the walk could not list: not gone,
		 * and kept, or the next run would take it for new. */
		int r = s->walk && walk_unlisted(s->walk, root, path) ? state_keep(s, e) : 1;
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		char *id = atomic_load(&e->msgid);
		r = fn(ctx, root, path, (struct mail_str){ id, id ? e->msgid_n : 0 });
		if (r < 0)
			return r;
	}
	return 0;
}

static int state_flush(int fd, struct dynbuf *b)
{
	size_t off = 0;
	while (off < b->len) {
		ssize_t w = sys_write(fd, b->p + off, b->len - off);
		if (w == -EINTR)
			continue;
		if (w < 0)
			return (int)w;
		off += (size_t)w;
	}
	dynbuf_reset(b);
	return 0;
}

int state_save(struct state *s, const char *path)
{
	size_t pl = strlen(path);
	char *tmp = xmalloc(pl + 5);
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".tmp", 5);
	int fd = sys_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		xfree(tmp);
		return fd;
	}
	struct dynbuf b;
	dynbuf_init(&b, 0);
	int r = state_format_begin(&b);
	for (struct state_chunk *c = s->head; c && r == 0; c = c->next) {
		for (size_t i = 0; i < c->n && r == 0; i++) {
			const struct state_entry *e = &c->v[i];
			/* a file this run could not read is saved as the last
			 * state knew it, or not at all: the next run reads it */
			if (e->unread && !(e = e->was))
				continue;
			char *id = atomic_load(&e->msgid);
			r = state_format_entry(&b, (struct mail_str){ e->root, e->root_n },
			                       (struct mail_str){ e->path, e->path_n },
			                       (struct mail_str){ id, id ? e->msgid_n : 0 }, e->dev, e->ino,
			                       e->size, e->mtime_sec, e->mtime_nsec);
			if (r == 0 && b.len >= (1 << 20))
				r = state_flush(fd, &b);
		}
	}
	if (r == 0)
		r = state_flush(fd, &b);
	dynbuf_release(&b);
	/* durable before it replaces the old state */
	if (r == 0)
		r = sys_fsync(fd);
	int c = sys_close(fd);
	if (r == 0)
		r = c;
	if (r == 0)
		r = sys_renameat(AT_FDCWD, tmp, AT_FDCWD, path);
	if (r < 0)
		sys_unlinkat(AT_FDCWD, tmp, 0);
	xfree(tmp);
	return r;
}
