/* Incremental runs (--state=FILE): what the previous run saw, per file.
 *
 * An entry is (root, path, device, inode, size, mtime, Message-ID); the
 * Maildir unique name is derived from the path.  At stat time (on the reader
 * thread, before any read) state_check() says whether a file is new,
 * unchanged (not read, no record), changed (read again), or a Maildir
 * rename of a known message (a flag change or new/ → cur/: a "renamed"
 * record, not read).  After the walk, state_deleted() lists what was not
 * seen, except in a directory the walk could not list (wholly or partly):
 * that is kept as it was, since it may well still be there.  state_save()
 * writes the new state to FILE.tmp, fsyncs it and renames it over FILE, so
 * a crash leaves the old state or the new one, never a torn one; it is
 * called only after a complete run (an interrupted or failed run keeps the
 * old state, and the next run does the rest).
 *
 * Threads: the reader thread checks and adds; a worker fills the
 * Message-ID of the entry of the message it parsed (entries never move, and
 * each is written by one worker); saving happens after every thread joined. */
#ifndef INGEST_STATE_H
#define INGEST_STATE_H

#include "core/record.h"

#include <stdint.h>

struct state;
struct state_entry;
struct dynbuf;
struct walk;

enum state_verdict { STATE_NEW, STATE_UNCHANGED, STATE_CHANGED, STATE_RENAMED };

/* Loads FILE (a missing file is an empty state).  0 or -errno (-EINVAL for
 * a file that is not a state file: refused rather than overwritten). */
int state_load(const char *path, struct state **out);
/* The same from a buffer in the file format (state_format_*), which it
 * takes over (freed by state_free, or here on failure to allocate): a
 * state kept somewhere else than a file, such as an --index database. */
int state_load_bytes(char *buf, size_t n, struct state **out);
void state_free(struct state *s);
/* The file format: the version line, then one entry each. 0 or -ENOMEM. */
int state_format_begin(struct dynbuf *b);
int state_format_entry(struct dynbuf *b, struct mail_str root, struct mail_str path,
                       struct mail_str msgid, uint64_t dev, uint64_t ino, uint64_t size,
                       int64_t mtime_sec, uint32_t mtime_nsec);

/* Classifies a statted regular file and adds it to the new state.  For a
 * rename, *old gets the previous entry's path and Message-ID.  *entry is
 * the new entry (for state_set_message_id). -ENOMEM on failure. */
int state_check(struct state *s, const struct record_io *io, enum state_verdict *v,
                struct mail_str *old_path, struct mail_str *old_msgid, struct state_entry **entry);
/* The entry's file was statted but could not be read (an error record):
 * the new state keeps what the previous one knew of it, or leaves it out,
 * so that the next run reads it rather than taking it for unchanged (any
 * thread, once per entry). */
void state_mark_unread(struct state_entry *e);
/* A file the reader could not stat, or could not open before knowing its
 * stat (the sync backend), for a reason other than ENOENT: not gone, so
 * its previous entry, if any, is kept as it was (reader thread).  0 or
 * -ENOMEM. */
int state_not_read(struct state *s, const struct record_io *io);
/* Records the Message-ID parsed for an entry (any thread, once per entry). */
void state_set_message_id(struct state_entry *e, struct mail_str id);
/* The run's walk: an entry not seen in a directory it could not list,
 * wholly or partly, is not gone (walk_unlisted).  w must outlive
 * state_deleted(); without it every entry not seen is gone. */
void state_set_walk(struct state *s, struct walk *w);
/* Calls fn for every entry of the previous state that this run did not
 * see, except those in a directory the walk could not list: they stay in
 * the new state as they were.  0, -ENOMEM, or what fn returned. */
int state_deleted(struct state *s, int (*fn)(void *ctx, struct mail_str root, struct mail_str path,
                                             struct mail_str msgid), void *ctx);
int state_save(struct state *s, const char *path);

#endif
