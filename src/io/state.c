/* SPDX-License-Identifier: MIT */
/* Incremental state: see state.h.
 *
 * File format (version line, the run, then one entry per file, binary-safe,
 * then the number of entries):
 *     ingest-state 3\n
 *     run <len>\n<len bytes: what the run was, state_bind_run()>\n
 *     <dev> <ino> <size> <mtime_sec> <mtime_nsec> <rootlen> <pathlen> <idlen>\n
 *     <root bytes><path bytes><id bytes>\n
 *     end <entries>\n
 * The last line tells a state cut at an entry's end (a partial copy or
 * restore) from a whole one: without it, the entries cut off would be new
 * to the next run, and their files' deletions never said.  Format 2, the
 * same without that line, is still read (and saved as 3).
 * root is the resolved root (never the spelling of a PATH argument), id the
 * record's id in hex (README, "Records"), followed for an mbox archive by
 * ";" and the decimal offsets of its messages, comma-separated: their ids
 * are the archive's and the offset, and a deletion must name each; a bare
 * ";" says the file's record was an error, no document (state_had_document;
 * a state written before reads as "may have one").  Lookups go through one
 * hash table (core/slots.h) over the previous run's entries, by id: a Maildir
 * message's id is folder-free and flag-free, so the entry of a message that
 * was renamed or moved to another folder is found under its id too.  New
 * entries live in fixed-size chunks that never move, and a second table
 * indexes them by id so that a file met twice in one run (a --files-from
 * list naming it twice, or naming a file a PATH holds: the walk reads
 * overlapping PATH arguments once) is one entry. */
#include "io/state.h"
#include "io/maildir.h"
#include "io/walk.h"
#include "core/hash.h"
#include "core/slots.h"
#include "core/clock.h"
#include "core/dynbuf.h"
#include "core/sys.h"
#include "core/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_MAGIC "ingest-state 3\n"
#define STATE_MAGIC_2 "ingest-state 2\n"
#define STATE_CHUNK 4096
#define STATE_ID_HEX 16

struct state_entry {
	char *root, *path;
	size_t root_n, path_n;
	uint64_t id;
	uint64_t dev, ino, size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	bool maildir;
	uint64_t *offs;            /* an mbox's messages (state_add_mbox_offset) */
	size_t n_offs, cap_offs;
	bool offs_lost;            /* one could not be kept: offs is not the whole list */
	bool seen;                 /* old entries: met by this run */
	bool replaced;             /* old entries: by an error record of their id (named,
	                              missing; no file: state_error_stands) */
	bool replaced_here;        /* old entries, replaced: by an error record at their place */
	bool unread;               /* new entries: statted, but the read failed */
	bool not_read;             /* new entries: met, judged unchanged or renamed */
	bool kept;                 /* new entries: an old one not met, carried over */
	bool no_file;              /* new entries: an error record's, no file read
	                              (state_add_error): no document where errors are none */
	bool no_document;          /* its record was an error (saved as a bare ';') */
	bool written;              /* new entries: a record went out (state_mark_written) */
	bool superseded;           /* old entries: a stopped run saves the new one instead
	                              (state_format_stopped) */
	bool reread;               /* saved with no inode, read again next run: an error
	                              record of the file went out where the entry stood for
	                              its document, or the file changed while read */
	bool told;                 /* this run deleted or replaced its id's document:
	                              new entries whose record says so (state_mark_told),
	                              old ones whose deletion went out (state_deleted,
	                              state_orphans) */
	const struct state_entry *was;  /* new entries: the same file's old entry */
	size_t line;               /* old entries: the line it starts on, for messages */
};

struct state_chunk {
	size_t n;
	struct state_entry v[STATE_CHUNK];
};

struct state {
	struct state_entry *old;
	size_t n_old, cap_old;
	char *old_bytes;           /* the loaded file: old strings point into it */
	struct slots by_id;        /* indexes into old */
	struct slots by_place;     /* indexes into old by root and path, built
	                              when first asked (state_old_of_place) */
	struct state_chunk **chunks;      /* this run's entries, in order */
	size_t n_chunks, cap_chunks;
	struct slots new_by_id;    /* indexes into the chunks' entries */
	struct walk *walk;         /* what it could not list is not gone */
	mode_t mode;               /* the loaded file's permissions, kept on save */
	char why[256];             /* why loading failed, "" if it did not */
	const char *old_run;       /* the previous run's description, in old_bytes */
	size_t old_run_n;
	char *run;                 /* this run's, saved with the entries */
	size_t run_n;
	int journal_fd;            /* FILE.journal (state_journal_open), or -1 */
	char *journal_path;
	char *journal_bytes;       /* the last run's journal: old entries point into it */
};

static int state_hex_id(const char *p, size_t n, uint64_t *id)
{
	if (n < STATE_ID_HEX)
		return -EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < STATE_ID_HEX; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	*id = v;
	return 0;
}

/* The refusal of a state or journal of this mode (not a regular file):
 * -EISDIR for a directory, -ENOTSUP for a FIFO, a socket or a device,
 * which an errno of directories would misname (the Python module raises
 * the OSError subclass of the errno); -EINVAL says corrupt. */
static int state_not_regular(mode_t mode)
{
	return S_ISDIR(mode) ? -EISDIR : -ENOTSUP;
}

/* Why the state could not be loaded, for the message (state_load_error):
 * "line N: what" (line 0: no line). */
static int state_bad(struct state *s, size_t line, const char *what)
{
	if (line)
		snprintf(s->why, sizeof(s->why), "line %zu: %.200s", line, what);
	else
		snprintf(s->why, sizeof(s->why), "%.200s", what);
	return -EINVAL;
}

/* n space-separated decimal numbers filling the NUL-terminated line; only
 * the mtime's seconds (field `signed_field`) may be negative, and it must
 * fit an int64_t (stored as two's complement).  NULL, or what is wrong. */
static const char *state_parse_numbers(const char *p, uint64_t *out, int n, int signed_field)
{
	for (int i = 0; i < n; i++) {
		bool neg = *p == '-';
		if (neg && i != signed_field)
			return "a negative number where none may be";
		if (neg)
			p++;
		if (*p < '0' || *p > '9')
			return "expected 8 numbers separated by single spaces";
		/* by hand: strtoull's locale and base handling were an eighth of
		 * an unchanged re-run's instructions */
		uint64_t v = 0;
		const char *end = p;
		for (; *end >= '0' && *end <= '9'; end++) {
			unsigned d = (unsigned)(*end - '0');
			if (v > (UINT64_MAX - d) / 10)
				return "a number out of range";
			v = v * 10 + d;
		}
		/* as unsigned arithmetic: -(int64_t)v overflows for 2^63 */
		if (i == signed_field && v > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
			return "a number out of range";
		out[i] = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
		p = end;
		if (i + 1 < n && *p++ != ' ')
			return "expected 8 numbers separated by single spaces";
	}
	return *p ? "expected 8 numbers separated by single spaces" : NULL;
}

/* Lines are counted as a text editor shows them: an entry's bytes may hold
 * newlines of their own. */
static size_t state_newlines(const char *p, size_t n)
{
	size_t k = 0;
	for (const char *q = p, *end = p + n; (q = memchr(q, '\n', (size_t)(end - q))); q++)
		k++;
	return k;
}

/* An entry that stood for its file's document (neither an archive, whose
 * documents are its messages', nor an error record), and one that stood
 * for an error record alone. */
static bool state_entry_document(const struct state_entry *e)
{
	return !e->n_offs && !e->no_document;
}

static bool state_entry_error(const struct state_entry *e)
{
	return !e->n_offs && e->no_document;
}

/* Whether e is at root and path. */
static bool state_place_is(const struct state_entry *e, struct str root, struct str path)
{
	return e->root_n == root.n && e->path_n == path.n && !memcmp(e->root, root.p, root.n) &&
	       !memcmp(e->path, path.p, path.n);
}

/* The previous run's entry of id filed at root and path (unmet: one this
 * run has not met yet), or NULL: a place holds one file, so one entry. */
static struct state_entry *state_old_at(const struct state *s, uint64_t id, struct str root,
                                        struct str path, bool unmet)
{
	size_t k;
	for (struct slots_probe p = slots_probe(&s->by_id, id); (k = slots_next(&p));) {
		struct state_entry *o = &s->old[k - 1];
		if (o->id == id && !(unmet && o->seen) && state_place_is(o, root, path))
			return o;
	}
	return NULL;
}

static uint64_t state_place_hash(struct str root, struct str path)
{
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, root.p, root.n);
	return hash_fnv1a(h ^ '/', path.p, path.n);
}

/* The previous run's unmet entry filed at root and path, whatever its id,
 * or NULL.  A place's id can change between runs: a file named through a
 * symbolic link has the id of the file the link names (README, "Records"),
 * the link gone its own name's.  The entry of id is looked up first (a
 * place that kept its id, almost every one); the others through a table
 * of places built the first time one is asked for, one pass over the old
 * entries.  Out of memory, only the entry of id is found. */
static struct state_entry *state_old_of_place(struct state *s, uint64_t id, struct str root,
                                              struct str path)
{
	struct state_entry *same = state_old_at(s, id, root, path, true);
	if (same || !s->n_old)
		return same;
	if (!s->by_place.at) {
		if (slots_init(&s->by_place, s->n_old) < 0)
			return NULL;
		for (size_t i = 0; i < s->n_old; i++) {
			const struct state_entry *e = &s->old[i];
			struct str r = { e->root, e->root_n }, q = { e->path, e->path_n };
			slots_put(&s->by_place, state_place_hash(r, q), i);
		}
	}
	size_t k;
	for (struct slots_probe p = slots_probe(&s->by_place, state_place_hash(root, path));
	     (k = slots_next(&p));) {
		struct state_entry *o = &s->old[k - 1];
		if (!o->seen && state_place_is(o, root, path))
			return o;
	}
	return NULL;
}

/* Indexes entry i; -EINVAL when an entry with the same root and path came
 * before it: two entries for one file are not a state this program wrote,
 * and probing past every copy would make loading quadratic. */
static int state_index(struct state *s, size_t i)
{
	const struct state_entry *e = &s->old[i];
	if (state_old_at(s, e->id, (struct str){ e->root, e->root_n }, (struct str){ e->path, e->path_n },
	                 false))
		return state_bad(s, e->line, "a second entry for the same file");
	slots_put(&s->by_id, e->id, i);
	return 0;
}

/* ";off,off,..." after an entry's id, or nothing. */
static int state_parse_offsets(struct state_entry *e, const char *p, size_t n)
{
	if (!n)
		return 0;
	if (p[0] != ';')
		return -EINVAL;
	e->no_document = n == 1;
	for (size_t i = 1; i < n;) {
		uint64_t v = 0;
		size_t j = i;
		for (; j < n && p[j] >= '0' && p[j] <= '9'; j++) {
			if (v > (UINT64_MAX - 9) / 10)
				return -EINVAL;
			v = v * 10 + (uint64_t)(p[j] - '0');
		}
		if (j == i || (j < n && p[j] != ','))
			return -EINVAL;
		if (state_add_mbox_offset(e, v) < 0)
			return -ENOMEM;
		i = j + 1;
	}
	return 0;
}

/* "run <len>\n<bytes>\n" after the version line. */
static int state_parse_run_at(char *p, size_t n, size_t *at, const char **run, size_t *run_n)
{
	char *nl = memchr(p + *at, '\n', n - *at);
	if (!nl || nl - (p + *at) < 5 || memcmp(p + *at, "run ", 4))
		return -EINVAL;
	*nl = '\0';
	uint64_t len;
	if (state_parse_numbers(p + *at + 4, &len, 1, -1))
		return -EINVAL;
	size_t start = (size_t)(nl - p) + 1;
	if (len > n - start || start + len >= n || p[start + len] != '\n')
		return -EINVAL;
	*run = p + start;
	*run_n = (size_t)len;
	*at = start + (size_t)len + 1;
	return 0;
}

static int state_parse_run(struct state *s, char *p, size_t n, size_t *at)
{
	return state_parse_run_at(p, n, at, &s->old_run, &s->old_run_n);
}

/* The last line of a format 3 state at p[at..n): "end N", N the entries
 * read.  0, or what is wrong. */
static int state_parse_end(struct state *s, char *p, size_t n, size_t at, size_t line)
{
	char *nl = memchr(p + at, '\n', n - at);
	if (!nl || (size_t)(nl - p) + 1 != n)
		return state_bad(s, line, "bytes after the last line (end N)");
	*nl = '\0';   /* as the entries' numbers lines are read */
	uint64_t count;
	if (state_parse_numbers(p + at + 4, &count, 1, -1))
		return state_bad(s, line, "a malformed last line (end N)");
	if (count != s->n_old) {
		char what[128];
		snprintf(what, sizeof(what), "the last line says %" PRIu64 " entries, the file has %zu",
		         count, s->n_old);
		return state_bad(s, line, what);
	}
	return 0;
}

/* One entry at *at in p[0, n): its numbers line, then its root, path, id
 * and offsets, ended by a newline; *at and *line move past it.  0,
 * -ENOMEM, or -EINVAL with *why and *why_line saying what is wrong (*why
 * may be what, STATE_WHAT_N bytes). */
#define STATE_WHAT_N 128
static int state_parse_entry(char *p, size_t n, size_t *at, size_t *line, struct state_entry *out,
                             const char **why, size_t *why_line, char *what)
{
	*why_line = *line;
	char *nl = memchr(p + *at, '\n', n - *at);
	if (!nl)
		return *why = "the file ends inside an entry", -EINVAL;
	*nl = '\0';
	struct state_entry e = { 0 };
	uint64_t f[8];
	const char *bad = state_parse_numbers(p + *at, f, 8, 3);
	if (bad)
		return *why = bad, -EINVAL;
	e.dev = f[0];
	e.ino = f[1];
	e.size = f[2];
	e.mtime_sec = (int64_t)f[3];
	e.mtime_nsec = (uint32_t)f[4];
	if (f[4] >= 1000000000u) {
		snprintf(what, STATE_WHAT_N, "nanoseconds of %" PRIu64 " (at most 999999999)", f[4]);
		return *why = what, -EINVAL;
	}
	size_t a = (size_t)(nl - p) + 1, left = n - a;
	if (f[5] > left || f[6] > left - f[5] || f[7] > left - f[5] - f[6] || f[5] + f[6] + f[7] == left) {
		snprintf(what, STATE_WHAT_N, "lengths %" PRIu64 " %" PRIu64 " %" PRIu64
		         " run past the end of the file", f[5], f[6], f[7]);
		return *why = what, -EINVAL;
	}
	size_t rn = (size_t)f[5], pn = (size_t)f[6], in = (size_t)f[7];
	*why_line = *line + 1;
	if (p[a + rn + pn + in] != '\n')
		return *why = "the entry's bytes do not end with a newline where its lengths say", -EINVAL;
	e.root = p + a;
	e.root_n = rn;
	e.path = p + a + rn;
	e.path_n = pn;
	size_t dir_n, name;
	e.maildir = maildir_split(e.path, pn, &dir_n, &name);
	e.line = *line;
	int r = state_hex_id(p + a + rn + pn, in, &e.id);
	if (r == 0)
		r = state_parse_offsets(&e, p + a + rn + pn + STATE_ID_HEX, in - STATE_ID_HEX);
	if (r < 0) {
		xfree(e.offs);
		if (r == -ENOMEM)
			return r;
		return *why = "a malformed id or message offsets", -EINVAL;
	}
	*line += 2 + state_newlines(p + a, rn + pn + in);
	*at = a + rn + pn + in + 1;
	*out = e;
	return 0;
}

/* Appends e to the old entries (not indexed). */
static int state_push_old(struct state *s, const struct state_entry *e)
{
	if (s->n_old == s->cap_old) {
		size_t cap = s->cap_old ? s->cap_old * 2 : 1024;
		struct state_entry *v = xrealloc(s->old, cap * sizeof(*v));
		if (!v) {
			xfree(e->offs);
			return -ENOMEM;
		}
		s->old = v;
		s->cap_old = cap;
	}
	s->old[s->n_old++] = *e;
	return 0;
}

static int state_parse(struct state *s, char *p, size_t n)
{
	size_t ml = strlen(STATE_MAGIC);
	bool format2 = n >= ml && !memcmp(p, STATE_MAGIC_2, ml);
	if (!format2 && (n < ml || memcmp(p, STATE_MAGIC, ml)))
		return state_bad(s, 1, n >= 15 && !memcmp(p, "ingest-state 1\n", 15)
		                       ? "a state of an older ingest (format 1; --state-reset starts afresh)"
		                       : "not an ingest state file (no \"ingest-state 3\" header)");
	bool ended = format2;
	size_t at = ml;
	if (state_parse_run(s, p, n, &at) < 0)
		return state_bad(s, 2, "the run's description is missing or cut short");
	/* line 2 says "run N", the description's lines follow */
	size_t line = 4 + state_newlines(s->old_run, s->old_run_n);
	int r;
	while (at < n) {
		if (!format2 && n - at >= 4 && !memcmp(p + at, "end ", 4)) {
			if ((r = state_parse_end(s, p, n, at, line)) < 0)
				return r;
			ended = true;
			break;
		}
		struct state_entry e;
		const char *bad = NULL;
		size_t bad_line = line;
		char what[STATE_WHAT_N];
		if ((r = state_parse_entry(p, n, &at, &line, &e, &bad, &bad_line, what)) < 0)
			return bad ? state_bad(s, bad_line, bad) : r;
		if ((r = state_push_old(s, &e)) < 0)
			return r;
	}
	if (!ended)
		return state_bad(s, line, "the file ends without its last line (end N): cut short");
	if (s->n_old > SLOTS_MAX_ENTRIES)
		return state_bad(s, 0, "more than 4294967294 entries");
	if (slots_init(&s->by_id, s->n_old) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_old; i++) {
		r = state_index(s, i);
		if (r < 0)
			return r;
	}
	return 0;
}

int state_load(const char *path, bool reset, struct state **out)
{
	struct state *s = xcalloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*out = s;
	s->journal_fd = -1;
	s->mode = 0600;
	/* A symlink at FILE is refused (README, "Incremental runs"): the state would
	 * otherwise be renamed over whatever it points to.  O_NONBLOCK: a FIFO's
	 * open would wait for a writer, where nothing looks at a stop; a regular
	 * file ignores it. */
	int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0);
	if (fd == -ENOENT)
		return 0;   /* the first run */
	if (fd == -ELOOP) {
		snprintf(s->why, sizeof(s->why), "a symbolic link (give the path of the file itself)");
		return fd;
	}
	if (fd < 0)
		return fd;
	struct stat st;
	int r = sys_fstat(fd, &st);
	if (r == 0 && !S_ISREG(st.st_mode)) {
		/* not damage, and not replaced by --state-reset either: the
		 * save's rename would put the state where a device, a FIFO or
		 * a directory was */
		snprintf(s->why, sizeof(s->why), "not a regular file");
		r = state_not_regular(st.st_mode);
	}
	if (r == 0)
		s->mode = st.st_mode & 07777;
	if (r == 0 && reset) {
		sys_close(fd);
		return 0;   /* --state-reset: what FILE holds is not looked at */
	}
	size_t cap = 1 << 20, n = 0;
	char *buf = r == 0 ? xmalloc(cap) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
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
		ssize_t got = sys_read_full(fd, buf + n, cap - n);
		if (got < 0) {
			r = (int)got;
			break;
		}
		n += (size_t)got;
		if (n < cap)
			break;
	}
	sys_close(fd);
	s->old_bytes = buf;
	if (r == 0)
		r = state_parse(s, buf, n);
	return r;
}

const char *state_load_error(const struct state *s)
{
	return s && s->why[0] ? s->why : NULL;
}

/* How often --wait-state tries the lock again: a run waits at most this
 * long after the holder lets go, or after an interrupt from another
 * thread. */
#define STATE_LOCK_RETRY_NS ((uint64_t)SYS_STOP_POLL_MS * 1000 * 1000)

int state_lock(const char *path, bool wait, const atomic_int *stop, char *why, size_t why_n)
{
	why[0] = '\0';
	char *lp = xsuffixed(path, ".lock");
	char *dir = xdirname(path);
	int fd = lp && dir ? 0 : -ENOMEM;
	if (fd == 0) {
		/* The state is saved by a rename in its directory: refused now,
		 * before any input is read, when that could not be done. */
		fd = sys_faccessat(AT_FDCWD, dir, W_OK | X_OK);
	}
	if (fd == 0)
		fd = sys_openat(AT_FDCWD, lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd == -ELOOP)
		snprintf(why, why_n, "its lock file %s is a symbolic link", lp);
	xfree(lp);
	xfree(dir);
	if (fd < 0)
		return fd;
	/* A record lock, not flock: F_GETLK names the holder, and a lock dies
	 * with its process, so a crashed run leaves nothing to clean up.
	 * Waited for by trying again every STATE_LOCK_RETRY_NS, not with
	 * F_SETLKW: an interrupt from another thread (ingest_interrupt() of a
	 * library host, a Python scan() dropped) sets a flag, which a
	 * blocking fcntl never looks at.  A stopping signal to this thread
	 * ends the sleep at once; the run then does nothing. */
	for (;;) {
		struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int r = sys_fcntl_lock(fd, F_SETLK, &l);
		if (r == 0)
			return fd;
		bool held = r == -EAGAIN || r == -EACCES;
		if (wait && (held || r == -EINTR)) {
			if (atomic_load(stop)) {
				sys_close(fd);
				return -EINTR;
			}
			sys_sleep_ns(STATE_LOCK_RETRY_NS);   /* or a signal ends it */
			continue;
		}
		if (r == -EINTR && !atomic_load(stop))
			continue;
		if (held) {
			struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
			if (sys_fcntl_lock(fd, F_GETLK, &q) == 0 && q.l_type != F_UNLCK && q.l_pid > 0)
				snprintf(why, why_n, "in use by another ingest (pid %ld)", (long)q.l_pid);
			else
				snprintf(why, why_n, "in use by another ingest");
			r = -EAGAIN;
		}
		sys_close(fd);
		return r;
	}
}

void state_unlock(int fd)
{
	if (fd >= 0)
		sys_close(fd);
}

int state_load_bytes(char *buf, size_t n, struct state **out)
{
	struct state *s = xcalloc(1, sizeof(*s));
	if (!s) {
		xfree(buf);
		return -ENOMEM;
	}
	*out = s;
	s->journal_fd = -1;
	s->old_bytes = buf;
	return state_parse(s, buf, n);
}

static int state_format_entry(struct dynbuf *b, const struct state_entry *e, bool no_document);

int state_format_begin(struct dynbuf *b)
{
	/* an empty run: a state kept elsewhere is not bound to a run's options
	 * (state_bind_run is for state files) */
	int r = dynbuf_puts(b, STATE_MAGIC);
	return r == 0 ? dynbuf_puts(b, "run 0\n\n") : r;
}

int state_format_end(struct dynbuf *b, size_t entries)
{
	return dynbuf_printf(b, "end %zu\n", entries);
}

int state_format_file(struct dynbuf *b, struct str root, struct str path, uint64_t id,
                      uint64_t dev, uint64_t ino, uint64_t size, int64_t mtime_sec,
                      uint32_t mtime_nsec, bool no_document, const uint64_t *offs, size_t n_offs)
{
	struct state_entry e = {
		.root = (char *)(uintptr_t)root.p, .root_n = root.n,
		.path = (char *)(uintptr_t)path.p, .path_n = path.n, .id = id,
		.dev = dev, .ino = ino, .size = size, .mtime_sec = mtime_sec, .mtime_nsec = mtime_nsec,
		.offs = (uint64_t *)(uintptr_t)offs, .n_offs = n_offs,
	};
	return state_format_entry(b, &e, no_document);
}

void state_free(struct state *s)
{
	if (!s)
		return;
	for (size_t k = 0; k < s->n_chunks; k++) {
		struct state_chunk *c = s->chunks[k];
		/* new entries own their strings; old ones point into old_bytes */
		for (size_t i = 0; i < c->n; i++) {
			xfree(c->v[i].root);
			xfree(c->v[i].offs);
		}
		xfree(c);
	}
	xfree(s->chunks);
	for (size_t i = 0; i < s->n_old; i++)
		xfree(s->old[i].offs);
	xfree(s->old);
	xfree(s->old_bytes);
	xfree(s->journal_bytes);
	xfree(s->journal_path);
	if (s->journal_fd >= 0)
		sys_close(s->journal_fd);
	slots_free(&s->by_id);
	slots_free(&s->by_place);
	slots_free(&s->new_by_id);
	xfree(s->run);
	xfree(s);
}

/* A new entry's strings, in one allocation: the resolved root and the
 * path, each NUL-terminated. */
static char *state_names(struct str root, const struct record_io *io)
{
	char *mem = xmalloc(root.n + io->path.n + 2);
	if (!mem)
		return NULL;
	memcpy(mem, root.p, root.n);
	mem[root.n] = '\0';
	char *path = mem + root.n + 1;
	memcpy(path, io->path.p, io->path.n);
	path[io->path.n] = '\0';
	return mem;
}

/* This run's entry k (in the order they were added). */
static struct state_entry *state_new_at(const struct state *s, size_t k)
{
	return &s->chunks[k / STATE_CHUNK]->v[k % STATE_CHUNK];
}

static struct state_entry *state_add(struct state *s, const struct record_io *io)
{
	struct state_chunk *tail = s->n_chunks ? s->chunks[s->n_chunks - 1] : NULL;
	if (!tail || tail->n == STATE_CHUNK) {
		if (s->n_chunks == s->cap_chunks) {
			size_t cap = s->cap_chunks ? 2 * s->cap_chunks : 16;
			struct state_chunk **v = xrealloc(s->chunks, cap * sizeof(*v));
			if (!v)
				return NULL;
			s->chunks = v;
			s->cap_chunks = cap;
		}
		tail = xcalloc(1, sizeof(*tail));
		if (!tail)
			return NULL;
		s->chunks[s->n_chunks++] = tail;
	}
	struct state_entry *e = &tail->v[tail->n];
	char *mem = state_names(io->base, io);
	if (!mem)
		return NULL;
	*e = (struct state_entry){
		.root = mem, .root_n = io->base.n, .path = mem + io->base.n + 1, .path_n = io->path.n,
		.id = io->id, .dev = io->dev, .ino = io->ino, .size = io->size,
		.mtime_sec = io->mtime_sec, .mtime_nsec = io->mtime_nsec, .maildir = io->maildir,
	};
	tail->n++;
	return e;
}

/* The previous run's entry of id that this run has not met and that is
 * this file (io: the same path, the same inode, or for a file that is no
 * Maildir message any spelling, as below; NULL: any), or NULL.
 * The entry of the same path (the id says the root) comes first: a file
 * is there now, so that entry cannot be gone, and its deletion
 * (state_deleted) would remove what this run writes at its place (a copy
 * under the same unique name moved over the other keeps the copy's
 * inode, whose entry is elsewhere).  Then one of the same inode; then,
 * for a file that is no Maildir message, whose id is its resolved path's
 * (README, "Identity"), any: the same place filed under another spelling
 * (a list naming a file the walk meets), which had another inode or none
 * (missing, unreadable: its error record, which this file's record now
 * replaces, where a deletion decided elsewhere would have left it). */
static struct state_entry *state_find_old(struct state *s, uint64_t id, const struct record_io *io)
{
	struct state_entry *same_inode = NULL, *same_place = NULL;
	size_t k;
	for (struct slots_probe p = slots_probe(&s->by_id, id); (k = slots_next(&p));) {
		struct state_entry *e = &s->old[k - 1];
		if (e->id != id || e->seen)
			continue;
		if (!io || (e->path_n == io->path.n && !memcmp(e->path, io->path.p, e->path_n)))
			return e;
		if (!same_inode && e->dev == io->dev && e->ino == io->ino)
			same_inode = e;
		if (!same_place && !io->maildir && !e->maildir)
			same_place = e;
	}
	return same_inode ? same_inode : same_place;
}

/* Indexes the entry just added, the last of the chunks. */
static int state_index_new(struct state *s)
{
	size_t last = (s->n_chunks - 1) * STATE_CHUNK + s->chunks[s->n_chunks - 1]->n - 1;
	if (slots_full(&s->new_by_id)) {
		struct slots t;
		if (slots_init(&t, last < 256 ? 512 : 2 * last) < 0)
			return -ENOMEM;
		for (size_t k = 0; k < last; k++)
			slots_put(&t, state_new_at(s, k)->id, k);
		slots_free(&s->new_by_id);
		s->new_by_id = t;
	}
	slots_put(&s->new_by_id, state_new_at(s, last)->id, last);
	return 0;
}

static struct state_entry *state_add_indexed(struct state *s, const struct record_io *io)
{
	struct state_entry *e = state_add(s, io);
	if (e && state_index_new(s) < 0)
		return NULL;
	return e;
}

int state_add_mbox_offset(struct state_entry *e, uint64_t off)
{
	if (!e)
		return 0;
	if (e->n_offs == e->cap_offs) {
		size_t cap = e->cap_offs ? 2 * e->cap_offs : 16;
		uint64_t *v = xrealloc(e->offs, cap * sizeof(*v));
		if (!v) {
			e->offs_lost = true;
			return -ENOMEM;
		}
		e->offs = v;
		e->cap_offs = cap;
	}
	e->offs[e->n_offs++] = off;
	return 0;
}

static int state_copy_offsets(struct state_entry *to, const struct state_entry *from)
{
	for (size_t i = 0; i < from->n_offs; i++)
		if (state_add_mbox_offset(to, from->offs[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* Whether another entry of the last run has old's id (documents: one that
 * may hold a document, no error entry). */
static bool state_old_shared(const struct state *s, const struct state_entry *old, bool documents)
{
	size_t k;
	for (struct slots_probe p = slots_probe(&s->by_id, old->id); (k = slots_next(&p));) {
		const struct state_entry *o = &s->old[k - 1];
		if (o != old && o->id == old->id && !(documents && state_entry_error(o)))
			return true;
	}
	return false;
}

bool state_had_document(const struct state *s, const struct state_entry *e)
{
	const struct state_entry *old = e ? e->was : NULL;
	/* an archive's own id was never a document; a copy under the same
	 * unique name (same id, another file) holds it too */
	if (!old || !state_entry_document(old))
		return false;
	/* an error entry holds no document: not a copy's (an unreadable
	 * file, a FIFO under the message's unique name) */
	if (state_old_shared(s, old, true))
		return false;
	size_t k;
	for (struct slots_probe p = slots_probe(&s->new_by_id, e->id); (k = slots_next(&p));) {
		const struct state_entry *n = state_new_at(s, k - 1);
		if (n != e && n->id == e->id && !n->no_file)
			return false;
	}
	return true;
}

bool state_had_message(const struct state_entry *e, uint64_t off)
{
	const struct state_entry *old = e ? e->was : NULL;
	if (!old || !old->n_offs)
		return false;
	/* in file order (listed as read, merged in order) */
	size_t lo = 0, hi = old->n_offs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (old->offs[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < old->n_offs && old->offs[lo] == off;
}

bool state_was_archive(const struct state_entry *e)
{
	const struct state_entry *old = e ? e->was : NULL;
	return old && old->n_offs;
}

bool state_had_error_record(const struct state_entry *e)
{
	const struct state_entry *old = e ? e->was : NULL;
	return old && state_entry_error(old);
}

int state_each_vanished(const struct state_entry *e, int (*fn)(void *ctx, uint64_t off), void *ctx)
{
	const struct state_entry *old = e ? e->was : NULL;
	/* an incomplete list would take messages that are there for gone */
	if (!old || e->offs_lost)
		return 0;
	/* both in file order, ascending: one merge */
	size_t j = 0;
	for (size_t i = 0; i < old->n_offs; i++) {
		while (j < e->n_offs && e->offs[j] < old->offs[i])
			j++;
		if (j < e->n_offs && e->offs[j] == old->offs[i])
			continue;
		int r = fn(ctx, old->offs[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Whether e was saved under io's base and path: one file (one id) named by
 * another spelling, or from another working directory, was not. */
static bool state_same_place(const struct state_entry *e, const struct record_io *io)
{
	return state_place_is(e, io->base, io->path);
}

/* A new entry of old's id at another place than old's: a copy under the
 * same unique name (*left, the first), or the error record of a place
 * that holds no file (*error_left). */
static void state_left_elsewhere(const struct state *s, const struct state_entry *old,
                                 const struct state_entry **left, bool *error_left)
{
	*left = NULL;
	*error_left = false;
	struct str root = { old->root, old->root_n }, path = { old->path, old->path_n };
	size_t k;
	for (struct slots_probe p = slots_probe(&s->new_by_id, old->id); (k = slots_next(&p));) {
		const struct state_entry *n = state_new_at(s, k - 1);
		if (n->id != old->id || state_place_is(n, root, path))
			continue;
		if (n->no_file)
			*error_left = true;
		else if (!*left)
			*left = n;
	}
}

/* This run's entry of io's file, met before under that id: the same
 * inode, or the same place (a file replaced between two meetings), or
 * NULL.  Every entry of the id is looked at: two copies of a Maildir
 * message under one unique name share it, and the second copy met again
 * is not the first.  A file that is no Maildir message has its resolved
 * path's id, so a meeting of its id is of its place, however spelled:
 * a walk that met a symbolic link there (its error record, no file) and
 * a list naming the place, read through the link, are one place, one
 * entry and one record (README, "A file named twice"), where two entries
 * of one place left the next run one to judge and one to delete, whose
 * deletion of an archive's messages followed their new records. */
static struct state_entry *state_find_met(const struct state *s, const struct record_io *io)
{
	size_t k;
	for (struct slots_probe p = slots_probe(&s->new_by_id, io->id); (k = slots_next(&p));) {
		struct state_entry *e = state_new_at(s, k - 1);
		if (e->id == io->id && ((e->dev == io->dev && e->ino == io->ino) || state_same_place(e, io) ||
		                        (!io->maildir && !e->maildir && !e->kept)))
			return e;
	}
	return NULL;
}

/* Whether old is filed where a PATH of this run lies and io, another
 * meeting of its file, is not (walk_named; the run's walk, known from
 * its start: state_set_walk). */
static bool state_old_named(const struct state *s, const struct state_entry *old,
                            const struct record_io *io)
{
	return s->walk && walk_named(s->walk, (struct str){ old->root, old->root_n },
	                             (struct str){ old->path, old->path_n }) &&
	       !walk_named(s->walk, io->base, io->path);
}

/* The last run's unmet entry at io's place of another id, marked
 * replaced here (state_check); whether there was one. */
static bool state_place_taken_from(struct state *s, const struct record_io *io)
{
	struct state_entry *there = state_old_of_place(s, io->id, io->base, io->path);
	if (!there || there->id == io->id)
		return false;
	there->replaced_here = true;
	there->reread = true;   /* a run that stops early: read again */
	return true;
}

int state_check(struct state *s, const struct record_io *io, enum state_verdict *v,
                struct str *old_path, struct str *old_base, struct state_entry **entry)
{
	*entry = NULL;
	/* Met already in this run (a --files-from list naming it twice, or a
	 * PATH and a list): one file, one entry, one record. */
	if (state_find_met(s, io)) {
		*v = STATE_UNCHANGED;
		return 0;
	}
	/* Another file under the same id (a copy that kept its unique name,
	 * a message rewritten under a new inode and name) does not take this
	 * entry: it is new, and the entry's file is judged when met, or gone
	 * (state_deleted keeps the document of an id still on disk). */
	struct state_entry *old = state_find_old(s, io->id, io);
	*v = STATE_NEW;
	if (old) {
		old->seen = true;
		bool same_file = old->dev == io->dev && old->ino == io->ino;
		bool same = same_file && old->size == io->size && old->mtime_sec == io->mtime_sec &&
		            old->mtime_nsec == io->mtime_nsec;
		bool moved = !state_same_place(old, io);
		if (io->maildir && moved && same_file) {
			/* a flag change, new/ → cur/, a move to another folder:
			 * the same message under the same id.  A rename keeps the
			 * size and mtime; a message whose bytes changed as well (a
			 * filter that rewrites its headers, then moves it) is read
			 * again under its new name, and the old name is said, so
			 * that what was kept under it goes.  So is a file whose
			 * record was an error: there is no document to move, and
			 * its error record moves with it. */
			*v = same && !old->no_document && !old->replaced_here ? STATE_RENAMED : STATE_CHANGED;
		} else {
			/* the same file named by another spelling keeps its rows
			 * where they were made, unless a record of this run took
			 * that place (replaced_here): then it is read again */
			*v = same && !(moved && old->replaced_here) ? STATE_UNCHANGED : STATE_CHANGED;
		}
		/* A copy under the same unique name (another old entry of this
		 * id) is read again by every run, renamed or not, so that the
		 * document is one of the copies as they are, as in a clean run:
		 * kept, it would keep the text of a copy that changed or went,
		 * or go with a copy that stopped being mail (README,
		 * "Incremental rules").  The Maildir specification forbids such
		 * copies: a run reads the few there are. */
		if ((*v == STATE_UNCHANGED || *v == STATE_RENAMED) && !old->n_offs && state_old_shared(s, old, false))
			*v = STATE_CHANGED;
		/* The place may hold the last run's entry of another id, not
		 * met yet: a file named through a symbolic link has the id of
		 * the file the link names (README, "Records"), so a link that
		 * names another message now, or a file of its own where a link
		 * was, puts a file of another id there.  This file's record takes
		 * the place's rows, so that entry is replaced here (as by a
		 * no-file's error record, state_error_stands): its file, met
		 * elsewhere later in the run, is read again, not renamed out of
		 * rows that are no longer its own.  This file, unchanged but
		 * filed elsewhere (another spelling), is read again too: its
		 * record is what takes the place, and none would be written. */
		if (moved && state_place_taken_from(s, io) && *v == STATE_UNCHANGED)
			*v = STATE_CHANGED;
		/* Its rows filed where a PATH of this run lies, which this
		 * meeting is not (a symbolic link named last run, missing now,
		 * whose file a walk meets first): that PATH's record takes the
		 * place and clears what it holds, so this file is read again
		 * and filed here, where a clean run files it, not left there
		 * to go with the place. */
		if (*v == STATE_UNCHANGED && moved && !io->maildir && state_old_named(s, old, io))
			*v = STATE_CHANGED;
		/* read again under another name (a file named by another
		 * spelling, from another directory, or a Maildir message
		 * changed and renamed at once): the old name is said, so that
		 * what was kept under it goes.  Not for a file not read: an
		 * index keeps its rows under the name they were made with. */
		/* Nor where this run's error record stands at the old name
		 * already (a FIFO made there, met first: replaced_here): the
		 * rows there are that record's, and the message is read again
		 * under its new name rather than moved. */
		if (moved && *v != STATE_UNCHANGED && !old->replaced_here) {
			*old_path = (struct str){ old->path, old->path_n };
			*old_base = (struct str){ old->root, old->root_n };
		}
	}
	if (!old)
		(void)state_place_taken_from(s, io);
	/* A run that stops early saves the old entries (state_format_stopped),
	 * and this run's record of the file (a rename's update, a changed
	 * file's text) may be downstream, or not: the next run reads the file
	 * again wherever it is, or one renamed or written back as it was
	 * would be judged unchanged against the old entry, its document left
	 * as this run made it.  An archive's offsets say what it wrote
	 * instead. */
	if (old && (*v == STATE_RENAMED || *v == STATE_CHANGED) && !old->n_offs)
		old->reread = true;
	struct state_entry *e = state_add_indexed(s, io);
	if (!e)
		return -ENOMEM;
	if (*v == STATE_UNCHANGED || *v == STATE_CHANGED)
		e->was = old;
	if (old && *v != STATE_CHANGED) {
		e->no_document = old->no_document;   /* not read: as it was */
		e->not_read = true;
	}
	/* not read again: its messages are still where they were */
	if (*v == STATE_UNCHANGED && old && state_copy_offsets(e, old) < 0)
		return -ENOMEM;
	*entry = e;
	return 0;
}

int state_follow(struct state_entry *e, const struct record_io *io)
{
	char *mem = state_names((struct str){ e->root, e->root_n }, io);
	if (!mem)
		return -ENOMEM;
	xfree(e->root);   /* root, path and folder: one allocation (state_add) */
	e->root = mem;
	e->path = mem + e->root_n + 1;
	e->path_n = io->path.n;
	e->dev = io->dev;
	e->ino = io->ino;
	e->size = io->size;
	e->mtime_sec = io->mtime_sec;
	e->mtime_nsec = io->mtime_nsec;
	return 0;
}

void state_mark_no_document(struct state_entry *e)
{
	if (e)
		e->no_document = true;
}

void state_mark_told(struct state_entry *e)
{
	if (e)
		e->told = true;
}

void state_mark_unread(struct state_entry *e)
{
	if (e)
		e->unread = true;
}

void state_mark_reread(struct state_entry *e)
{
	if (e)
		e->reread = true;
}

/* An old entry kept as it was, into the new state. */
static struct state_entry *state_keep(struct state *s, const struct state_entry *old)
{
	struct record_io io = {
		.base = { old->root, old->root_n }, .path = { old->path, old->path_n }, .id = old->id,
		.dev = old->dev, .ino = old->ino, .size = old->size, .maildir = old->maildir,
		.mtime_sec = old->mtime_sec, .mtime_nsec = old->mtime_nsec,
	};
	struct state_entry *e = state_add_indexed(s, &io);
	if (!e)
		return NULL;
	e->no_document = old->no_document;
	e->kept = true;
	return state_copy_offsets(e, old) < 0 ? NULL : e;
}

/* A file new to the state whose record is an error: an entry saved as
 * that record, with no inode (state_save), so that a run that no longer
 * finds or names it deletes the record, as a clean run has none; one
 * entry however often it is met.  0 or -ENOMEM. */
static struct state_entry *state_add_error_entry(struct state *s, const struct record_io *io)
{
	/* one entry a place, and one error entry an id (a missing file named
	 * twice); but an id another file of this run holds (a message under
	 * the same unique name as a FIFO) does not take the error's place:
	 * the run that no longer finds it must say so */
	size_t k;
	for (struct slots_probe p = slots_probe(&s->new_by_id, io->id); (k = slots_next(&p));) {
		struct state_entry *o = state_new_at(s, k - 1);
		if (o->id == io->id && (o->no_file || state_same_place(o, io)))
			return o;
	}
	struct state_entry *e = state_add_indexed(s, io);
	if (!e)
		return NULL;
	e->unread = e->no_document = e->no_file = true;
	return e;
}

static int state_add_error(struct state *s, const struct record_io *io)
{
	return state_add_error_entry(s, io) ? 0 : -ENOMEM;
}

int state_not_read(struct state *s, const struct record_io *io)
{
	/* Not statted, so no inode to compare: the old entry is the one at
	 * its place.  Its error record replaces the document downstream, so
	 * the entry is saved with no inode: the next run that can stat the
	 * file reads it again, changed or not (a directory that lost its
	 * search permission for a run lost its messages for good).  Another
	 * entry of the id is another file's (a copy under the same unique
	 * name, which this run may still meet, or the name this message had
	 * before a rename: gone, so its rows go, as a clean run has none).
	 * New to the state (a directory that cannot be listed is such an
	 * error record too), it is saved as its error record, with no inode,
	 * so that the run that can list or stat it, or no longer finds it,
	 * deletes that record, as a clean run has none. */
	struct state_entry *old = state_old_at(s, io->id, io->base, io->path, true);
	if (!old)
		return state_add_error(s, io);
	old->seen = true;
	old->reread = true;   /* for a run that stops early (state_format_stopped) */
	struct state_entry *e = state_keep(s, old);
	if (!e)
		return -ENOMEM;
	e->reread = true;
	return 0;
}

/* Marks every old entry of io's id replaced by this run's error record
 * (state_deleted then says so). */
static void state_replace_by_error(struct state *s, const struct record_io *io)
{
	/* every entry of the id: one file filed under two roots by two runs
	 * (a directory, then the file named) has two */
	size_t k;
	for (struct slots_probe p = slots_probe(&s->by_id, io->id); (k = slots_next(&p));) {
		struct state_entry *old = &s->old[k - 1];
		if (old->id == io->id)
			old->replaced = true;
	}
}

/* io's error record stands in this run where its file was: that of a
 * named file that is not there, or of no file (state_named_missing,
 * state_not_a_file). */
static struct state_entry *state_error_stands(struct state *s, const struct record_io *io)
{
	/* The last run's error entry of this very place stands again, seen:
	 * no deletion of it (a no-op downstream, where the new error record
	 * replaces the old, but in an index it would take the place's files
	 * row that this run's record wrote, and the run that no longer
	 * finds the place would have nothing to delete its error row by).
	 * Any other entry of the place (its file's document, or an entry of
	 * another id: the place named through a symbolic link last run) is
	 * replaced here: its file met elsewhere later in the run is read
	 * again, not renamed out of the rows this record took (state_check),
	 * and its deletion leaves this record's rows (index.c). */
	struct state_entry *same = state_old_of_place(s, io->id, io->base, io->path);
	if (same && same->id == io->id && state_entry_error(same))
		same->seen = true;
	else if (same)
		same->replaced_here = true;
	state_replace_by_error(s, io);
	/* Its error record (JSON Lines, --es-errors, an index's error row)
	 * is kept as one, so that the run that finds a file there again, or
	 * no longer finds the place or its name, deletes it, as a clean run
	 * has none; also where it replaced a document of the id (the file
	 * turned FIFO: the document's deletion was said, the error record's
	 * is to come), which once stayed for good (out of memory, left out:
	 * its deletion is never said). */
	return state_add_error_entry(s, io);
}

struct state_entry *state_not_a_file(struct state *s, const struct record_io *io)
{
	return state_error_stands(s, io);
}

void state_named_missing(struct state *s, const struct record_io *io)
{
	(void)state_error_stands(s, io);
}

bool state_met_file(const struct state *s, uint64_t dev, uint64_t ino)
{
	for (size_t k = 0; k < s->n_chunks; k++) {
		const struct state_chunk *c = s->chunks[k];
		for (size_t i = 0; i < c->n; i++)
			if (c->v[i].ino == ino && c->v[i].dev == dev && !c->v[i].kept && ino)
				return true;
	}
	return false;
}

void state_set_walk(struct state *s, struct walk *w)
{
	s->walk = w;
}

/* The next line of a run description at *i, false at its end. */
static bool state_run_line(const char *a, size_t an, size_t *i, struct str *line)
{
	if (*i >= an)
		return false;
	const char *e = memchr(a + *i, '\n', an - *i);
	*line = (struct str){ a + *i, e ? (size_t)(e - (a + *i)) : an - *i };
	*i += line->n + 1;
	return true;
}

/* The first line of a that b lacks; false when b has every one. */
static bool state_run_missing(const char *a, size_t an, const char *b, size_t bn,
                              struct str *out)
{
	struct str x, y;
	for (size_t i = 0; state_run_line(a, an, &i, &x);) {
		bool found = false;
		for (size_t j = 0; !found && state_run_line(b, bn, &j, &y);)
			found = x.n == y.n && !memcmp(x.p, y.p, x.n);
		if (!found) {
			*out = x;
			return true;
		}
	}
	return false;
}

/* b's line with the key ("name=") of line, when the key is one a run has
 * once (root= repeats: no one counterpart). */
static bool state_run_same_key(const char *b, size_t bn, struct str line,
                               struct str *out)
{
	const char *eq = memchr(line.p, '=', line.n);
	size_t kn = eq ? (size_t)(eq - line.p) + 1 : line.n;
	if (kn == 5 && !memcmp(line.p, "root=", 5))
		return false;
	for (size_t j = 0; state_run_line(b, bn, &j, out);)
		if (out->n >= kn && !memcmp(out->p, line.p, kn))
			return true;
	return false;
}

/* Whether the run described by (was, wn) is another than (run, n), and
 * if so why[] names the first difference, `what` ("the state") made by
 * the first. */
static bool state_run_other(const char *was, size_t wn, const char *run, size_t n, const char *what,
                            char *why, size_t why_n)
{
	if (wn == n && !memcmp(was, run, n))
		return false;
	struct str line, other;
	if (state_run_missing(was, wn, run, n, &line)) {
		if (state_run_same_key(run, n, line, &other))
			snprintf(why, why_n, "%s was made with %.*s, this run has %.*s", what,
			         (int)line.n, line.p, (int)other.n, other.p);
		else
			snprintf(why, why_n, "%s was made with %.*s, this run is not", what,
			         (int)line.n, line.p);
	} else if (state_run_missing(run, n, was, wn, &line)) {
		snprintf(why, why_n, "this run has %.*s, %s was made without it", (int)line.n, line.p,
		         what);
	} else {
		snprintf(why, why_n, "%s was made by another run", what);
	}
	return true;
}

int state_bind_run(struct state *s, const char *run, size_t n, char *why, size_t why_n)
{
	if (s->old_run && state_run_other(s->old_run, s->old_run_n, run, n, "the state", why, why_n))
		return -EINVAL;
	if (!(s->run = xmalloc(n + 1)))
		return -ENOMEM;
	memcpy(s->run, run, n);
	s->run_n = n;
	return 0;
}

static int state_journal_format(struct dynbuf *b, const struct state_entry *e, const uint64_t *offs,
                                size_t n_offs, bool no_document);
static int state_merge_offsets(struct state_entry *to, const struct state_entry *from);

/* An old entry state_deleted says is gone: the root its records show, and
 * whether only its rows go (record_io.place_only). */
struct state_gone {
	size_t i;
	struct str shown;
	bool place_only;
};

/* Whether an entry of id, old or new, deleted or replaced its document
 * in this run (told). */
static bool state_id_told(const struct state *s, uint64_t id)
{
	size_t k;
	for (struct slots_probe p = slots_probe(&s->by_id, id); (k = slots_next(&p));) {
		const struct state_entry *o = &s->old[k - 1];
		if (o->id == id && o->told)
			return true;
	}
	for (struct slots_probe p = slots_probe(&s->new_by_id, id); (k = slots_next(&p));) {
		const struct state_entry *n = state_new_at(s, k - 1);
		if (n->id == id && n->told)
			return true;
	}
	return false;
}

int state_deleted(struct state *s, int (*fn)(void *ctx, const struct record_io *gone), void *ctx)
{
	struct dynbuf gone_v, journal;   /* gone_v: struct state_gone */
	dynbuf_init(&gone_v, 0);
	dynbuf_init(&journal, 0);
	int r = 0;
	for (size_t i = 0; i < s->n_old && r == 0; i++) {
		struct state_entry *e = &s->old[i];
		if (e->seen)
			continue;
		struct str root = { e->root, e->root_n }, path = { e->path, e->path_n }, shown = root;
		/* Not met, but under no root of this run, or in a directory the
		 * walk could not list: not gone, and kept, or the next run would
		 * take it for new.  Not so an entry this run's error record
		 * stands at (replaced_here): its place was judged, whatever the
		 * roots say (a file named through a link whose target was
		 * deleted has the root the link led to, not the link's place),
		 * and a second entry kept there would make the state one that
		 * no run loads. */
		if (s->walk && !walk_judged(s->walk, root, path, &shown) && !e->replaced_here) {
			if (!state_keep(s, e))
				r = -ENOMEM;
			continue;
		}
		/* Its id is another file's in this run (two files that share a
		 * unique name, one of them gone): the document stands for the
		 * one left, and a delete of the id would remove it.  The copy
		 * left was read by this run (state_check reads such copies
		 * again), and its record decides the document: only the gone
		 * file's rows go (place_only).  A copy carried over unmet or not
		 * statted (state_keep) has no record: the document stays as it
		 * was.  This runs on the reader's thread, before the records of
		 * this run are parsed: what they are (a message, an error) is
		 * not known here. */
		/* A new entry at this very place (the error record of the
		 * FIFO the file turned into) is no copy: the document goes
		 * (es-bulk), not the place alone; nor is a no-file error
		 * record elsewhere that replaced it (es-bulk without
		 * --es-errors has no document of it: state_error_stands). */
		const struct state_entry *left = NULL;
		bool error_left = false;
		if (!e->n_offs)
			state_left_elsewhere(s, e, &left, &error_left);
		if (left && left->kept)
			continue;
		/* One delete an id: where another gone entry's, or a record of
		 * this run, deleted or replaced the document already (two
		 * copies under one unique name, one removed and the other made
		 * a FIFO), this one's rows go, not the document again. */
		bool place_only = left != NULL || (error_left && !e->replaced) ||
		                  (state_entry_document(e) && state_id_told(s, e->id));
		const struct state_gone g = { i, shown, place_only };
		if ((r = dynbuf_append(&gone_v, &g, sizeof(g))) < 0)
			break;
		/* a file's document, deleted with it (state_orphans) */
		if (!g.place_only && state_entry_document(e))
			e->told = true;
		/* A run that stops early saves the old entries: its deletion
		 * may have removed the document, so the next run reads the
		 * file again if it is back (moved away and back), rather
		 * than judge it unchanged; so does the run after one killed,
		 * from the journal, written before any deletion goes out. */
		e->reread = true;
		if (s->journal_fd >= 0)
			r = state_journal_format(&journal, e, e->offs, e->n_offs, e->no_document);
	}
	if (r == 0)
		r = state_journal_write(s, &journal);
	dynbuf_release(&journal);
	const struct state_gone *gv = (const struct state_gone *)(const void *)gone_v.p;
	for (size_t k = 0; k < gone_v.len / sizeof(*gv) && r >= 0; k++) {
		const struct state_entry *e = &s->old[gv[k].i];
		struct record_io gone = {
			.kind = RECORD_DELETED, .root = gv[k].shown, .base = { e->root, e->root_n },
			.path = { e->path, e->path_n }, .id = e->id, .maildir = e->maildir,
			.replaced = e->replaced, .replaced_here = e->replaced_here,
			.known = state_entry_document(e),
			.place_only = gv[k].place_only,
		};
		/* an mbox archive: each message was a document */
		gone.in_mbox = e->n_offs > 0;
		for (size_t j = 0; r >= 0 && j < (e->n_offs ? e->n_offs : 1); j++) {
			gone.offset = e->n_offs ? e->offs[j] : 0;
			r = fn(ctx, &gone);
		}
	}
	dynbuf_release(&gone_v);
	return r < 0 ? r : 0;
}

/* Whether this run's records leave id a document: an entry of it that
 * stands for one (met or carried over), or a record that deleted or
 * replaced the last run's (told). */
static bool state_id_settled(const struct state *s, uint64_t id)
{
	if (state_id_told(s, id))
		return true;
	size_t k;
	for (struct slots_probe p = slots_probe(&s->new_by_id, id); (k = slots_next(&p));) {
		const struct state_entry *n = state_new_at(s, k - 1);
		if (n->id == id && state_entry_document(n) && !n->unread)
			return true;
	}
	return false;
}

int state_orphans(struct state *s, int (*fn)(void *ctx, uint64_t id), void *ctx)
{
	for (size_t i = 0; i < s->n_old; i++) {
		struct state_entry *o = &s->old[i];
		if (!state_entry_document(o) || o->told || state_id_settled(s, o->id))
			continue;
		o->told = true;   /* one deletion an id */
		int r = fn(ctx, o->id);
		if (r < 0)
			return r;
	}
	return 0;
}

/* One entry, as state_parse() reads it: the numbers line, then root, path
 * and the id blob (hex id, and ";off,..." for an mbox, or a bare ";" when
 * no_document) and a newline. */
static int state_format_entry(struct dynbuf *b, const struct state_entry *e, bool no_document)
{
	char blob[STATE_ID_HEX + 1];
	record_id_hex(e->id, blob);
	struct dynbuf offs;
	dynbuf_init(&offs, 0);
	int r = 0;
	for (size_t i = 0; r == 0 && i < e->n_offs; i++) {
		r = dynbuf_putc(&offs, i ? ',' : ';');
		if (r == 0)
			r = dynbuf_put_u64(&offs, e->offs[i]);
	}
	if (r == 0 && !e->n_offs && no_document)
		r = dynbuf_putc(&offs, ';');
	/* the numbers line (state_parse_numbers): the mtime's seconds, the
	 * fourth, alone may be negative */
	bool neg = e->mtime_sec < 0;
	const uint64_t nums[8] = {
		e->dev, e->ino, e->size, neg ? (uint64_t)0 - (uint64_t)e->mtime_sec : (uint64_t)e->mtime_sec,
		e->mtime_nsec, e->root_n, e->path_n, STATE_ID_HEX + offs.len,
	};
	for (int i = 0; r == 0 && i < 8; i++) {
		if (i == 3 && neg)
			r = dynbuf_putc(b, '-');
		if (r == 0)
			r = dynbuf_put_u64(b, nums[i]);
		if (r == 0)
			r = dynbuf_putc(b, i < 7 ? ' ' : '\n');
	}
	if (r == 0)
		r = dynbuf_append(b, e->root, e->root_n);
	if (r == 0)
		r = dynbuf_append(b, e->path, e->path_n);
	if (r == 0)
		r = dynbuf_append(b, blob, STATE_ID_HEX);
	if (r == 0 && offs.len)
		r = dynbuf_append(b, offs.p, offs.len);
	if (r == 0)
		r = dynbuf_putc(b, '\n');
	dynbuf_release(&offs);
	return r;
}

static int state_flush(int fd, struct dynbuf *b)
{
	int r = sys_write_full(fd, b->p, b->len);
	if (r < 0)
		return r;
	dynbuf_reset(b);
	return 0;
}

/* A save's file, its buffer flushed every MiB, and the entries so far
 * (its last line counts them). */
struct state_out {
	struct dynbuf b;
	int fd;
	size_t count;
};

/* ---- the journal ---------------------------------------------------------
 *
 * A run that is killed saves no state, yet its records may be downstream:
 * before they go out, what a stopped run would save for them (its entries
 * read again next run: no inode) is appended to FILE.journal, and the next
 * run takes it into the old entries as it loads FILE: an old entry at the
 * same place is read again (its offsets widened), one the old state lacks
 * is added.  A state saved removes the journal.  Appends are whole
 * write(2)s with O_APPEND (the reader's deletions, the writer's batches);
 * a kill within one leaves a cut entry at the end, which is dropped.  It
 * is not synced: it keeps what a dead process wrote, not what a crash of
 * the machine loses. */

/* e as the journal says it: no inode, offs (n_offs) its messages. */
static int state_journal_format(struct dynbuf *b, const struct state_entry *e, const uint64_t *offs,
                                size_t n_offs, bool no_document)
{
	/* field by field: a streamed archive's entry takes offsets on the
	 * reader's thread while the writer's journals its messages */
	const struct state_entry t = {
		.root = e->root, .root_n = e->root_n, .path = e->path, .path_n = e->path_n, .id = e->id,
		.size = e->size, .mtime_sec = e->mtime_sec, .mtime_nsec = e->mtime_nsec,
		.offs = (uint64_t *)(uintptr_t)offs, .n_offs = n_offs,
	};
	return state_format_entry(b, &t, no_document);
}

int state_journal_record(struct dynbuf *b, const struct state_entry *e)
{
	return state_journal_format(b, e, e->offs, e->n_offs, e->no_document || e->unread);
}

int state_journal_messages(struct dynbuf *b, const struct state_entry *archive, const uint64_t *offs,
                           size_t n_offs)
{
	return state_journal_format(b, archive, offs, n_offs, false);
}

int state_journal_write(struct state *s, const struct dynbuf *b)
{
	if (s->journal_fd < 0 || !b->len)
		return 0;
	return sys_write_full(s->journal_fd, b->p, b->len);
}

/* Takes the journal's entry j into the old ones. */
static int state_journal_take(struct state *s, struct state_entry *j)
{
	struct state_entry *old = state_old_at(s, j->id, (struct str){ j->root, j->root_n },
	                                       (struct str){ j->path, j->path_n }, false);
	if (old) {
		old->dev = old->ino = 0;
		/* An entry that stands for a document under the file's id keeps
		 * saying so: a file that became an archive then deletes that
		 * document before its first message.  The archive's offsets the
		 * killed run wrote are not kept (one entry cannot say both; a
		 * stopped run's save, which knows what went out, keeps the new
		 * kind instead): those of its messages that go before the next
		 * run keep their documents, as the file's document does where
		 * an archive became one message (README, "Incremental runs"). */
		bool document = state_entry_document(old);
		old->no_document = old->no_document && j->no_document;
		int r = document ? 0 : state_merge_offsets(old, j);
		xfree(j->offs);
		return r;
	}
	int r = state_push_old(s, j);
	if (r == 0 && slots_full(&s->by_id)) {
		struct slots t;
		if ((r = slots_init(&t, 2 * s->n_old)) == 0) {
			slots_free(&s->by_id);
			s->by_id = t;
			for (size_t i = 0; i + 1 < s->n_old; i++)
				slots_put(&s->by_id, s->old[i].id, i);
		}
	}
	if (r == 0)
		slots_put(&s->by_id, j->id, s->n_old - 1);
	return r;
}

#define STATE_JOURNAL_MAGIC "ingest-journal 1\n"

/* The journal's head: its magic and the run's description, as FILE's. */
static int state_journal_head(const struct state *s, struct dynbuf *b)
{
	int r = dynbuf_puts(b, STATE_JOURNAL_MAGIC);
	if (r == 0)
		r = dynbuf_printf(b, "run %zu\n", s->run_n);
	if (r == 0)
		r = dynbuf_append(b, s->run, s->run_n);
	return r == 0 ? dynbuf_putc(b, '\n') : r;
}

/* Takes in the journal's n bytes at p (a killed run's): its entries, if
 * it was made by this run (state_bind_run's description, or refused as a
 * state of another run is).  *whole: where its last whole entry ends, 0
 * when its head is cut. */
static int state_journal_read(struct state *s, const char *jp, char *p, size_t n, size_t *whole)
{
	size_t at = strlen(STATE_JOURNAL_MAGIC);
	const char *run;
	size_t run_n;
	*whole = 0;
	if (n < at || memcmp(p, STATE_JOURNAL_MAGIC, at) || state_parse_run_at(p, n, &at, &run, &run_n) < 0)
		return 0;   /* cut before its first entry: nothing was written after it */
	char other[200];
	if (state_run_other(run, run_n, s->run, s->run_n, "its journal", other, sizeof(other))) {
		/* a long path may cut the message: still the refusal's */
		if (snprintf(s->why, sizeof(s->why), "refused: %s (a killed run's, %s; --state-reset starts "
		             "afresh)", other, jp) >= (int)sizeof(s->why))
			s->why[sizeof(s->why) - 2] = '.';
		return -EINVAL;
	}
	/* what the last run's kill cut short, or anything else unreadable,
	 * ends it: the entries before stand */
	size_t line = 3 + state_newlines(run, run_n);
	int r = 0;
	while (r == 0 && at < n) {
		struct state_entry e;
		const char *bad;
		size_t bad_line;
		char what[STATE_WHAT_N];
		int p_r = state_parse_entry(p, n, &at, &line, &e, &bad, &bad_line, what);
		if (p_r == -EINVAL)
			break;
		r = p_r < 0 ? p_r : state_journal_take(s, &e);
	}
	*whole = at;
	return r;
}

int state_journal_open(struct state *s, const char *path, bool take)
{
	char *jp = xsuffixed(path, ".journal");
	if (!jp)
		return -ENOMEM;
	int fd = sys_openat(AT_FDCWD, jp, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
	                    s->mode & 0600);
	struct stat st;
	int r = fd < 0 ? fd : sys_fstat(fd, &st);
	bool irregular = r == 0 && !S_ISREG(st.st_mode);
	if (irregular)
		r = state_not_regular(st.st_mode);
	if (r < 0)
		snprintf(s->why, sizeof(s->why), "unusable: its journal %s %s", jp,
		         r == -ELOOP ? "is a symbolic link" : irregular ? "is not a regular file" : strerror(-r));
	char *buf = NULL;
	size_t n = r == 0 ? (size_t)st.st_size : 0, whole = 0;
	if (n && take && !(buf = xmalloc(n)))
		r = -ENOMEM;
	if (n && take && r == 0) {
		ssize_t got = sys_pread_full(fd, buf, n, 0);
		r = got < 0 ? (int)got : state_journal_read(s, jp, buf, (size_t)got, &whole);
	}
	/* Appends go after the last whole entry: after a cut one, they would
	 * be read as its rest, and lost.  --state-reset, loading nothing,
	 * starts it afresh. */
	if (r == 0 && whole < n)
		r = sys_ftruncate(fd, whole);
	if (r == 0 && !whole) {
		struct dynbuf head;
		dynbuf_init(&head, 0);
		r = state_journal_head(s, &head);
		if (r == 0)
			r = sys_write_full(fd, head.p, head.len);
		dynbuf_release(&head);
	}
	if (r < 0) {
		if (fd >= 0)
			sys_close(fd);
		xfree(jp);
		xfree(buf);
		return r;
	}
	s->journal_fd = fd;
	s->journal_path = jp;
	s->journal_bytes = buf;
	return 0;
}

/* One entry into the save.  reread: saved with no inode, so that the next
 * run reads the file again whatever its size and mtime (a file this run
 * judged but did not read, or whose record a stopped run wrote). */
static int state_put(struct state_out *out, const struct state_entry *e, bool no_document,
                     bool reread)
{
	struct state_entry copy;
	if (reread) {
		copy = *e;
		copy.dev = copy.ino = 0;
		e = &copy;
	}
	int r = state_format_entry(&out->b, e, no_document);
	out->count++;
	if (r == 0 && out->b.len >= (1 << 20))
		r = state_flush(out->fd, &out->b);
	return r;
}

/* A name for the new state beside path, unused at its making: the pid and
 * the clock, the i-th try. */
static void state_tmp_name(char *name, size_t cap, const char *path, unsigned i)
{
	snprintf(name, cap, "%s.tmp.%ld.%llx", path, (long)getpid(),
	         (unsigned long long)(clock_now_ns() + i) & 0xffffffffffull);
}

/* The umask narrowed a new file's mode; the old file's group and other
 * bits are kept as they were, never widened past them. */
static int state_tmp_mode(int fd, mode_t mode)
{
	if ((mode & 07777) == (mode & 0600))
		return 0;
	return sys_fchmod(fd, mode & 07777);
}

/* A fresh temporary name next to path, in *tmp, made by creating a file
 * there (unnamed < 0: O_EXCL and O_NOFOLLOW, so that nothing planted at
 * the name, a symlink in a shared directory, is ever opened; its
 * descriptor is returned) or by linking the unnamed file there (linkat
 * never follows or replaces what is at the new name; 0 is returned);
 * tried again under another name on a collision. */
static int state_tmp_make(const char *path, int unnamed, mode_t mode, char **tmp)
{
	size_t cap = strlen(path) + 48;
	char *name = xmalloc(cap);
	if (!name)
		return -ENOMEM;
	char self[48] = "";
	if (unnamed >= 0)
		snprintf(self, sizeof(self), "/proc/self/fd/%d", unnamed);
	int r = -EEXIST;
	for (unsigned i = 0; i < 64 && r == -EEXIST; i++) {
		state_tmp_name(name, cap, path, i);
		r = unnamed >= 0 ? sys_linkat(AT_FDCWD, self, AT_FDCWD, name, AT_SYMLINK_FOLLOW)
		                 : sys_openat(AT_FDCWD, name,
		                              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
		                              mode & 0600);
	}
	if (r >= 0 && unnamed < 0) {
		int m = state_tmp_mode(r, mode);
		if (m < 0) {
			sys_close(r);
			sys_unlinkat(AT_FDCWD, name, 0);
			r = m;
		}
	}
	if (r < 0) {
		xfree(name);
		return r;
	}
	*tmp = name;
	return r;
}

/* An unnamed new file in path's directory (O_TMPFILE), named by
 * state_tmp_make once it is whole: a run killed while it writes or syncs
 * the state leaves nothing behind, where a named temporary file stayed, a
 * whole copy of the state.  A negative errno where it cannot be had (no
 * /proc to name it through, a file system without O_TMPFILE): the caller
 * then makes a named one. */
static int state_open_unnamed(const char *path, mode_t mode)
{
	/* linkat names an unnamed file through /proc/self/fd; by its
	 * descriptor alone (AT_EMPTY_PATH) it needs CAP_DAC_READ_SEARCH */
	int r = sys_faccessat(AT_FDCWD, "/proc/self/fd", F_OK);
	if (r < 0)
		return r;
	char *dir = xdirname(path);
	if (!dir)
		return -ENOMEM;
	int fd = sys_openat(AT_FDCWD, dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode & 0600);
	xfree(dir);
	if (fd >= 0 && (r = state_tmp_mode(fd, mode)) < 0) {
		sys_close(fd);
		fd = r;
	}
	return fd;
}

void state_mark_written(struct state_entry *e)
{
	if (e)
		e->written = true;
}

/* to's offsets and from's, in file order, each once. */
static int state_merge_offsets(struct state_entry *to, const struct state_entry *from)
{
	if (!from->n_offs)
		return 0;
	size_t n = to->n_offs + from->n_offs, i = 0, j = 0, k = 0;
	uint64_t *v = xmalloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	while (i < to->n_offs || j < from->n_offs) {
		uint64_t a = i < to->n_offs ? to->offs[i] : UINT64_MAX;
		uint64_t b = j < from->n_offs ? from->offs[j] : UINT64_MAX;
		uint64_t m = a < b ? a : b;
		i += a == m;
		j += b == m;
		if (!k || v[k - 1] != m)
			v[k++] = m;
	}
	xfree(to->offs);
	to->offs = v;
	to->n_offs = k;
	to->cap_offs = n;
	return 0;
}

/* Whether a new entry's file has an old entry at its place (its id found
 * there: the place decides the id). */
static bool state_old_at_place(const struct state *s, const struct state_entry *e)
{
	return state_old_at(s, e->id, (struct str){ e->root, e->root_n }, (struct str){ e->path, e->path_n },
	                    false) != NULL;
}

/* The entries of a run that stopped early (state_save): the old ones,
 * widened by what this run's written records may have told a reader (an
 * archive's offsets; a document where the old entry had an error
 * record), but a file that was an archive and is one message now, saved
 * as this run found it; and the new files it wrote or could not read.
 * What this run found is saved with no inode, so that the next run reads
 * it again; a file it could not read as its error record. */
static int state_format_stopped(struct state *s, struct state_out *out)
{
	int r = 0;
	for (size_t k = 0; k < s->n_chunks && r == 0; k++) {
		const struct state_chunk *c = s->chunks[k];
		for (size_t i = 0; i < c->n && r == 0; i++) {
			const struct state_entry *e = &c->v[i];
			/* its error record may have gone out: read it again */
			if (e->unread && e->was)
				s->old[e->was - s->old].reread = true;
			if (!e->written || !e->was || e->unread || e->offs_lost)
				continue;
			struct state_entry *old = &s->old[e->was - s->old];
			if (old->n_offs && !e->n_offs) {
				/* one entry cannot say both an archive's offsets
				 * and a document under the file's id: the
				 * message's, whose record its old messages'
				 * deletions follow in the same item (README,
				 * "Incremental runs") */
				old->superseded = true;
				continue;
			}
			old->no_document = old->no_document && e->no_document;
			r = state_merge_offsets(old, e);
		}
	}
	for (size_t i = 0; i < s->n_old && r == 0; i++)
		if (!s->old[i].superseded)
			r = state_put(out, &s->old[i], s->old[i].no_document, s->old[i].reread);
	for (size_t k = 0; k < s->n_chunks && r == 0; k++) {
		const struct state_chunk *c = s->chunks[k];
		for (size_t i = 0; i < c->n && r == 0; i++) {
			const struct state_entry *e = &c->v[i];
			/* not read (unchanged, renamed) or read again: its old
			 * entry says it, and the next run judges it again */
			bool instead = e->was && e->was->superseded;
			if (!instead && (e->was || e->not_read || e->offs_lost || (!e->written && !e->unread) ||
			                 state_old_at_place(s, e)))
				continue;
			r = state_put(out, e, e->no_document || e->unread, true);
		}
	}
	return r;
}

int state_save(struct state *s, const char *path, bool complete)
{
	char *tmp = NULL;
	int fd = state_open_unnamed(path, s->mode);
	bool unnamed = fd >= 0;
	if (!unnamed)
		fd = state_tmp_make(path, -1, s->mode, &tmp);
	if (fd < 0)
		return fd;
	struct state_out out = { .fd = fd };
	dynbuf_init(&out.b, 0);
	int r = dynbuf_puts(&out.b, STATE_MAGIC);
	if (r == 0)
		r = dynbuf_printf(&out.b, "run %zu\n", s->run_n);
	if (r == 0)
		r = dynbuf_append(&out.b, s->run, s->run_n);
	if (r == 0)
		r = dynbuf_putc(&out.b, '\n');
	if (r == 0 && !complete)
		r = state_format_stopped(s, &out);
	for (size_t k = 0; k < s->n_chunks && r == 0 && complete; k++) {
		const struct state_chunk *c = s->chunks[k];
		for (size_t i = 0; i < c->n && r == 0; i++) {
			const struct state_entry *e = &c->v[i];
			/* a file this run could not read is saved as the last
			 * state knew it, with no inode (its error record went
			 * out: the next run reads it again, changed or not), or,
			 * new to it, as an error record read again by the next
			 * run, which deletes that record (JSON Lines,
			 * --es-errors) if the file has gone by then */
			if (e->unread && e->was)
				r = state_put(&out, e->was, e->no_document || e->was->no_document, true);
			else
				r = state_put(&out, e, e->no_document || e->unread, e->unread || e->reread);
		}
	}
	if (r == 0)
		r = state_format_end(&out.b, out.count);
	if (r == 0)
		r = state_flush(fd, &out.b);
	dynbuf_release(&out.b);
	/* durable before it replaces the old state */
	if (r == 0)
		r = sys_fsync(fd);
	if (r == 0 && unnamed)
		r = state_tmp_make(path, fd, s->mode, &tmp);
	int c = sys_close(fd);
	if (r == 0)
		r = c;
	if (r == 0)
		r = sys_renameat(AT_FDCWD, tmp, AT_FDCWD, path);
	if (r < 0 && tmp)
		sys_unlinkat(AT_FDCWD, tmp, 0);
	/* the state in place says what the journal said: the run after reads
	 * it alone (a journal left, by a failed unlink, is only read again) */
	if (r == 0 && s->journal_path)
		sys_unlinkat(AT_FDCWD, s->journal_path, 0);
	xfree(tmp);
	/* the rename itself is durable once the directory is */
	char *dir = r == 0 ? xdirname(path) : NULL;
	int dfd = dir ? sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) : -ENOMEM;
	/* Not a failure of the run when it fails: the new state is in place,
	 * and a crash that loses the rename leaves the old one, which the
	 * next run brings up to date (README, "Incremental runs"). */
	if (dfd >= 0) {
		sys_fsync(dfd);
		sys_close(dfd);
	}
	xfree(dir);
	return r;
}
