/* SPDX-License-Identifier: MIT */
/* Incremental runs (--state=FILE): what the previous run saw, per file.
 *
 * An entry is (resolved root, path, id, device, inode, size, mtime), found
 * by its id (README, "Records").  At stat time (on the reader thread,
 * before any read) state_check() says whether a file is new, unchanged
 * (not read, no record), changed (read again), or a Maildir rename of a
 * known message (a flag change, new/ → cur/, a move to another folder: the
 * same id and inode under another path; a "renamed" record, not read).  After the walk, state_deleted() lists what was not
 * seen, except in a directory the walk could not list (wholly or partly):
 * that is kept as it was, since it may well still be there.  state_save()
 * writes the new state to a fresh temporary file beside FILE (O_EXCL,
 * O_NOFOLLOW, FILE's mode or 0600), fsyncs it, renames it over FILE and
 * fsyncs the directory, so a crash leaves the old state or the new one,
 * never a torn one.  After a complete run it saves this run's entries;
 * after one that stopped early (interrupted, its output closed) the
 * previous run's, widened by what this run's written records may have
 * put in an index (state_save); a failed run keeps the old state.
 *
 * Threads: the reader thread checks and adds; a worker marks the entry of
 * the file it parses (unread, no document, an archive's offsets: entries
 * never move, and each is written by one worker), the writer those whose
 * records it wrote; saving happens after every thread joined. */
#ifndef INGEST_STATE_H
#define INGEST_STATE_H

#include "core/record.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct state;
struct state_entry;
struct dynbuf;
struct walk;

enum state_verdict { STATE_NEW, STATE_UNCHANGED, STATE_CHANGED, STATE_RENAMED };

/* Takes the lock of the state FILE before anything else of the run: a
 * record lock on FILE.lock, next to FILE (created 0600 if missing, never
 * removed: removing it would let two runs lock two different files).  It
 * also checks that FILE's directory can take the new state (W_OK).  wait:
 * block until the other run ends (--wait-state), or until *stop is set.
 * Returns the lock's descriptor, or -errno: -EAGAIN when another run holds
 * it, with "in use by another ingest (pid N)" in why (why_n bytes; other
 * failures may leave a reason there too, else ""). */
int state_lock(const char *path, bool wait, const atomic_int *stop, char *why, size_t why_n);
/* Releases the lock (closes fd; accepts -1). */
void state_unlock(int fd);
/* Loads FILE (a missing file is an empty state; reset: an empty state
 * whatever a regular FILE holds, for --state-reset).  0 or -errno: -EINVAL
 * for a file that is not a state file, -ELOOP for a symlink at FILE,
 * -EISDIR for a directory and -ENOTSUP for anything else but a regular
 * file (reset or not), all refused
 * rather than overwritten; state_load_error() then says why ("line 7: a
 * second entry for the same file"). */
int state_load(const char *path, bool reset, struct state **out);
/* The journal, FILE.journal: what a run that stops early would save for
 * the records about to go out, appended before they do, so that the run
 * after one killed (which saved nothing) reads those files again and
 * deletes what of them has gone.  state_journal_open() opens it (created
 * if missing) and, with take, takes what a killed run left into the old
 * entries; state_save() removes it.  Call it after state_load(). 0 or
 * -errno (-ELOOP, -EISDIR, -ENOTSUP as state_load's: refused,
 * state_load_error() says why). */
int state_journal_open(struct state *s, const char *path, bool take);
/* Appends to b the journal's entry for the records of e's file (with no
 * inode: read again). */
int state_journal_record(struct dynbuf *b, const struct state_entry *e);
/* The same for the messages of a streamed archive at offs (n_offs). */
int state_journal_messages(struct dynbuf *b, const struct state_entry *archive, const uint64_t *offs,
                           size_t n_offs);
/* Appends b to the journal (nothing without one): 0 or -errno. */
int state_journal_write(struct state *s, const struct dynbuf *b);
/* What made state_load() refuse the file, or NULL. */
const char *state_load_error(const struct state *s);
/* The same from a buffer in the file format (state_format_*), which it
 * takes over (freed by state_free, or here on failure to allocate): a
 * state kept somewhere else than a file, such as an --index database. */
int state_load_bytes(char *buf, size_t n, struct state **out);
/* The file format, for a state kept elsewhere: the version line and an
 * empty run, then one entry a file (its resolved root, its path below it,
 * its id: record_io's base, path and id; no_document when its record was
 * an error, state_had_document; for an mbox archive the offsets of its
 * messages, ascending, n_offs of them, else none), then the number of
 * entries.  0 or -ENOMEM. */
int state_format_begin(struct dynbuf *b);
int state_format_file(struct dynbuf *b, struct str root, struct str path, uint64_t id,
                      uint64_t dev, uint64_t ino, uint64_t size, int64_t mtime_sec,
                      uint32_t mtime_nsec, bool no_document, const uint64_t *offs, size_t n_offs);
int state_format_end(struct dynbuf *b, size_t entries);
void state_free(struct state *s);

/* Classifies a statted regular file and adds it to the new state.  For a
 * file met under another name or base than its entry's and not unchanged
 * (a Maildir message renamed, or changed as well; a file named by another
 * spelling and changed), *old_path and *old_base get the entry's.  *entry is the new
 * entry (for state_mark_unread), NULL for a file already met in this run
 * (then *v is STATE_UNCHANGED: no second record).  -ENOMEM on failure. */
int state_check(struct state *s, const struct record_io *io, enum state_verdict *v,
                struct str *old_path, struct str *old_base, struct state_entry **entry);
/* Entry e's file, statted again under the name it was found at (a Maildir
 * message renamed between its stat and its read, reader_item_reopen): the
 * entry takes its path and stat, and what it was judged stands (new or
 * changed: it is read).  0 or -ENOMEM. */
int state_follow(struct state_entry *e, const struct record_io *io);
/* The entry's file was statted but could not be read (an error record):
 * the new state keeps what the previous one knew of it, or leaves it out,
 * so that the next run reads it rather than taking it for unchanged (any
 * thread, once per entry). */
void state_mark_unread(struct state_entry *e);
/* The entry's file changed while it was read (it grew or shrank, the
 * record's notes): the record may hold bytes of two versions, and the size
 * and mtime saved may already be the last ones (a rewrite within one tick
 * of the file system's clock keeps the mtime), so the entry is saved with
 * no inode and the next run reads the file again; its document, if any,
 * stays (any thread). */
void state_mark_reread(struct state_entry *e);
/* The entry's file is an error record, no document (any thread, once per
 * entry): the next run deletes no document of its id (state_had_document). */
void state_mark_no_document(struct state_entry *e);
/* The entry's record deletes or replaces the document the last run left
 * under its id (record_io.known; reader thread; e NULL is ignored). */
void state_mark_told(struct state_entry *e);
/* A record of the entry's file (or of one of its archive's messages)
 * went to the output (the writer thread; e NULL is ignored). */
void state_mark_written(struct state_entry *e);
/* A file the reader could not stat, or could not open before knowing its
 * stat (the sync backend), for a reason other than ENOENT: not gone, so
 * its previous entry, if any, is kept as it was (reader thread).  0 or
 * -ENOMEM. */
int state_not_read(struct state *s, const struct record_io *io);
/* A file named by the command line or a list (not found by a walk) that
 * does not exist (ENOENT): its error record, under the file's id, stands
 * where the previous run's documents of it stood, as a clean run's error
 * record would.  The previous entry of that id is not saved, and its
 * deletion (state_deleted) is marked replaced: the formats leave out a
 * delete of the id the error record holds (emit_change_dropped), the
 * index keeps the error row.  The file gets an entry saved as its error
 * record, which a later run that no longer names it deletes (reader
 * thread). */
void state_named_missing(struct state *s, const struct record_io *io);
/* Whether this run met the file of device dev and inode ino (an entry
 * of a file it statted, not one carried over unmet).  A walk over the
 * run's entries: for the few places asked about at its end. */
bool state_met_file(const struct state *s, uint64_t dev, uint64_t ino);
/* io is no regular file (a FIFO, a socket, a device, a symbolic link not
 * followed): where the last run had a file of its id, its error record
 * stands where that file's documents stood, as a clean run's would, and
 * the file's deletion (state_deleted) is marked replaced, as for
 * state_named_missing (at this very place: replaced_here, the document
 * deleted and the place's index row left to the error record); the index
 * keeps the error row.  The place is saved as its error record, which the
 * run that no longer finds it deletes; the last run's error entry of the
 * place is met, not deleted (reader thread). */
struct state_entry *state_not_a_file(struct state *s, const struct record_io *io);
/* An mbox archive's entry: one more message at offset off (file order).
 * The worker that splits the archive, or the reader that streams it,
 * calls it, one thread per entry.  0 or -ENOMEM; e NULL is ignored. */
int state_add_mbox_offset(struct state_entry *e, uint64_t off);
/* Whether the last run may have made a document of the id of e's file (e
 * changed since): when it was no archive and no error then, and no other
 * file (a copy under the same unique name) has that id.  Reader thread.
 * Used to delete what an error record of that id replaces where errors are
 * no documents (es-bulk without --es-errors). */
bool state_had_document(const struct state *s, const struct state_entry *e);
/* Whether the last run listed a message at offset off of e's archive (e
 * changed since), of which it may have made a document: an error record
 * at that offset now replaces it where errors are no documents (es-bulk
 * without --es-errors), so it is deleted.  Any thread: the last run's
 * entries do not change during a run. */
bool state_had_message(const struct state_entry *e, uint64_t off);
/* Whether the last run found e's file (one read again now) an mbox
 * archive: its messages are then kept, replaced or deleted by offset (the
 * file's vanished ones come as deletions, state_each_vanished), not all
 * dropped with the file. */
bool state_was_archive(const struct state_entry *e);
/* Whether e's file was an error record in the last run and nothing else:
 * no archive (its messages' ids are their own).  For an archive it now
 * is, that record's document, made under the file's id with
 * --es-errors, is replaced by nothing. */
bool state_had_error_record(const struct state_entry *e);
/* For an archive read again (changed since the last run): calls fn for
 * each offset of the previous run's messages that this run did not find,
 * whose documents are gone (call it after the archive's last
 * state_add_mbox_offset).  0 or what fn returned. */
int state_each_vanished(const struct state_entry *e, int (*fn)(void *ctx, uint64_t off), void *ctx);
/* The run's walk, given before the first state_check: an entry not seen
 * in a directory it could not list, wholly or partly, is not gone
 * (walk_unlisted), and a file met where no PATH lies whose entry is filed
 * where one does is read again (state_check).  w must outlive
 * state_deleted(); without it every entry not seen is gone. */
void state_set_walk(struct state *s, struct walk *w);
/* Calls fn for every entry of the previous state that this run did not
 * see, except those in a directory the walk could not list: they stay in
 * the new state as they were.  fn gets a RECORD_DELETED record_io (root,
 * base, path, id, maildir) whose strings live until state_free().  0,
 * -ENOMEM, or what fn returned. */
int state_deleted(struct state *s, int (*fn)(void *ctx, const struct record_io *gone), void *ctx);
/* After a complete run's last record: calls fn for each id the last run
 * left a document of that this run's records neither deleted nor
 * replaced and that no entry of the run stands for now (every file of
 * the id an error record or an archive).  Where errors are no documents
 * (es-bulk without --es-errors) such a document is left by the rules
 * above, which decide a copy's deletion before the records of the other
 * copies under its unique name are parsed: all copies turned errors in
 * one run.  fn gets each id once.  0, or what fn returned. */
int state_orphans(struct state *s, int (*fn)(void *ctx, uint64_t id), void *ctx);
/* The state knows the run it was made by: run is a description of what
 * decides the output (resolved roots, shard, format, fields, text and
 * header options), one "key=value" a line.  A state saved by a run with
 * another description is refused: -EINVAL, and why[] names the first
 * difference ("the state was made with no-text=1, this run has
 * no-text=0").  0 (the description is saved with the state), -EINVAL or
 * -ENOMEM.  Call it after state_load(), before the run reads any input. */
int state_bind_run(struct state *s, const char *run, size_t n, char *why, size_t why_n);
/* Saves the state to path.  complete: this run's entries (a run that
 * judged every file).  Otherwise (the run stopped early) the previous
 * run's entries as they were, so that the next run reads again what this
 * one changed, and deletes what went, plus what this run's written
 * records told a reader that they lack, so that the next run deletes it
 * if it is gone by then: a new file that was written, saved so that the
 * next run reads it again (no inode matches), and an archive's offsets
 * found by this run (README, "Incremental runs").  0 or -errno. */
int state_save(struct state *s, const char *path, bool complete);

#endif
