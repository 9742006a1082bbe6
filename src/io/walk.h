/* SPDX-License-Identifier: MIT */
/* The walk: PATH arguments and --files-from lists into a stream of entries.
 *
 * Directories are read with getdents64 into one large buffer (1 MiB) and
 * d_type decides file or directory with no stat; entries are sorted by inode
 * within a directory (cold-cache inode tables are then read in order).
 * Maildir rules: a directory with cur/ and new/ is a mailbox; its tmp/ is never
 * read; its dot-subdirectories are Maildir++ folders.  Symlinks met while
 * walking are not followed (they become error records); paths given
 * explicitly are followed.  FIFOs, sockets and devices are never opened: they
 * become error records too, as does a directory that cannot be read.
 *
 * Everything is opened relative to directory fds, so the kernel resolves
 * short names and depth is not limited by PATH_MAX.  The walk is pull-based:
 * the reader asks for the next entry, so I/O starts before the walk ends, and
 * only the directories on the current path plus those whose entries are
 * still being read hold an fd.
 *
 * Threads: one thread (the reader) owns a struct walk and its entries. */
#ifndef INGEST_WALK_H
#define INGEST_WALK_H

#include "core/record.h"
#include "core/arena.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct walk_dir;

struct walk_entry {
	struct walk_dir *dir;     /* holds the dirfd and the path prefix */
	const char *name;         /* NUL-terminated, relative to dir's fd */
	uint64_t ino;
	uint8_t d_type;           /* DT_REG, DT_UNKNOWN (stat says), ... */
	bool follow;              /* an explicit path: symlinks followed */
	bool pooled;              /* walk-private: from the walk's entry pool */
	const char *base;         /* a PATH argument's: resolved (NULL: lexically) */
	const char *shown;        /* the path records show, when not name ("-") */
	enum record_reason reason;/* set when the walk itself failed on it */
	int err;                  /* positive errno with RECORD_IO */
};

struct walk *walk_new(void);
void walk_free(struct walk *w);

/* Queues a PATH argument (a directory or a file), resolved now with
 * realpath(3) (the ids of its inputs do not depend on its spelling): call
 * it before the counted window (README, "Syscall accounting"). */
int walk_add_path(struct walk *w, const char *path);
/* Skips, while walking, every file or directory whose name or path below
 * its root matches the fnmatch(3) pattern (FNM_PATHNAME off: '*' crosses
 * '/').  The pattern is copied.  0 or -ENOMEM. */
int walk_add_exclude(struct walk *w, const char *pattern);
/* Queues standard input, already copied by the caller into a regular file
 * on fd (a memory file it keeps open while the walk is read: the reader
 * opens it as /dev/fd/N, and the process's fd 0 stays as it was): one
 * input, shown as "-", whose id is derived from its content (content_hash:
 * 64-bit FNV-1a of the bytes), there being no file to name.  0 or -ENOMEM. */
int walk_add_stdin(struct walk *w, int fd, uint64_t content_hash);
/* Queues every name of a list (newline- or NUL-separated) read from fd to
 * its end, which may be a pipe or a FIFO that nobody writes to yet: 0,
 * -EINTR once *stop is set while it waits (sys_read_stoppable), -errno. */
int walk_add_list(struct walk *w, int fd, bool nul_separated, const atomic_int *stop);

/* Keeps only the entries whose id hash falls in shard k of n (1 <= k <= n):
 * the other entries are never statted or read.  The hash is the record's
 * id's (record_file_id: the resolved root, not its spelling), so every
 * machine that sees the corpus at the same path splits the same way, and
 * the shards' union is the whole run. */
void walk_set_shard(struct walk *w, unsigned k, unsigned n);
/* For an entry of a --files-from list, whose type the walk does not know:
 * whether the reader keeps it in this shard (a directory always: its
 * files are sharded one by one).  True for every other entry (the walk
 * sharded it already). */
bool walk_entry_listed_in_shard(const struct walk *w, const struct walk_entry *e, bool is_dir);
/* A --files-from entry that is a directory: walked next, as a PATH
 * argument is.  0, or -errno when it cannot be (the entry's error). */
int walk_expand_dir(struct walk *w, struct walk_entry *e);
/* True once after walk_expand_dir() gave a walk that had ended more to
 * walk: a reader that saw the end must ask again. */
bool walk_take_reopened(struct walk *w);
/* The 64-bit hash sharding uses (exposed for tests). */
uint64_t walk_entry_hash(const struct walk_entry *e);

/* Next entry in walk order: 1 and *out, 0 at the end, -errno when the walk
 * cannot go on at all (out of memory).  Per-directory failures are entries. */
int walk_next(struct walk *w, struct walk_entry **out);
/* The reader is done with the entry (its I/O has completed): the directory's
 * fd is closed once every entry of it is done and the walk has left it. */
void walk_entry_done(struct walk *w, struct walk_entry *e);

/* A Maildir message that vanished between the walk and its open is
 * usually the same message under a new name (its flags changed, or it
 * moved from new/ to cur/).  walk_find_renamed looks for the unique parts
 * of the names of v[0..n).e (entries the walk handed out and has not been
 * told done of) in their Maildirs' cur/ and new/, with one listing of each
 * Maildir for them all (getdents64 into the walk's buffer, no stat): a
 * client marking a folder read renames most of a batch at once.  Each
 * v[i].name gets the name found, relative to the entry's directory fd
 * ("../cur/x:2,S", in the arena): the name of the entry's own inode when
 * one is listed (a rename keeps it), else the first with its unique part
 * that is no other entry's inode nor given to another, cur/ before new/;
 * NULL when it is gone or the entry is not in a Maildir.  0, or the first
 * -errno of a listing that failed (the other Maildirs are still searched),
 * or -ENOMEM, which ends the search. */
struct walk_renamed {
	struct walk_entry *e;     /* in */
	const char *name;         /* out */
};
int walk_find_renamed(struct walk *w, struct walk_renamed *v, size_t n, struct arena *a);
/* True when e is a message of a Maildir's cur/ or new/. */
bool walk_entry_in_maildir(const struct walk_entry *e);
/* True when e is standard input (walk_add_stdin). */
bool walk_entry_is_stdin(const struct walk_entry *e);

/* fd to open the entry relative to (AT_FDCWD for explicit paths). */
int walk_entry_dirfd(const struct walk_entry *e);
/* Fills root, path and the Maildir fields of io; strings are copied into the
 * arena, so they outlive the entry.  0 or -ENOMEM. */
int walk_entry_describe(const struct walk_entry *e, struct arena *a, struct record_io *io);

/* True when path (below root, as walk_entry_describe gives them) lies in a
 * directory the walk could not list, wholly or partly: one that failed to
 * open, or whose getdents64 failed (each has its error entry).  A file the
 * walk did not meet there may still be there (--state keeps it).  Ask once
 * the walk has ended. */
bool walk_unlisted(struct walk *w, struct str root, struct str path);

/* Whether a file an earlier run met (its resolved root and path, as
 * --state and the index keep them) is this run's to judge: it lies under
 * one of this run's PATH arguments, whatever root it was filed under (that
 * PATH itself, a root inside the PATH's tree, or a root the PATH lies
 * inside), or the run reads a list, whose files are not known ahead.  A run
 * over other roots says nothing of it (an index that holds several roots
 * keeps the rows of those not given).  *shown is the root as this run's
 * records spell it: the PATH argument as given when root is one, root
 * itself otherwise.  Ask once the walk has ended. */
bool walk_covers(struct walk *w, struct str root, struct str path, struct str *shown);
/* Whether a file an earlier run met and this one did not is taken for gone:
 * covered by this run (walk_covers, *shown as it gives) and not in a
 * directory it could not list (walk_unlisted).  --state's deletions and
 * the index's vanished rows ask it. */
bool walk_judged(struct walk *w, struct str root, struct str path, struct str *shown);
/* Whether the file filed under root and path is, where it lies, a PATH
 * argument of this run: an earlier run's file named again, under whatever
 * spelling (`./M/x.eml` then `M/x.eml`), which has this run's record. */
bool walk_named(struct walk *w, struct str root, struct str path);

/* The resolved path of source i (walk_add_path's order, lists counted),
 * or NULL for a list, standard input or past the end. */
const char *walk_source_base(const struct walk *w, size_t i);
/* Inputs queued from lists so far (paths' contents are not known ahead). */
uint64_t walk_total(const struct walk *w);

struct walk_stats {
	uint64_t dirs, entries, getdents_calls;
	uint64_t relisted;   /* names dropped: a Maildir message listed twice (its flags
	                      * changed mid-listing: same inode, same unique name) */
	uint64_t skipped;    /* mail software's files (maildir_is_software_file) */
	uint64_t excluded;   /* names matching an --exclude pattern */
	uint64_t rename_listings;   /* cur/ or new/ listed to find messages renamed
	                             * while read (walk_find_renamed) */
};
void walk_stats_get(const struct walk *w, struct walk_stats *out);

#endif
