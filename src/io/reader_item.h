/* SPDX-License-Identifier: MIT */
/* The per-item rules of the reader (reader_item.c), what both backends
 * and the streaming of large files call: an entry becomes an item, a size
 * query decides what is read, a read's result decides EOF or growth, a
 * vanished Maildir message is looked for under its new name. */
#ifndef INGEST_IO_READER_ITEM_H
#define INGEST_IO_READER_ITEM_H

#include "io/reader.h"

#include <stdint.h>

struct reader_common {
	struct reader_options o;
	struct reader_stats st;
	struct walk *walk;          /* the run's: a listed directory is walked */
};

/* Gets an empty batch (blocks on the free channel); NULL on shutdown. */
struct batch *reader_batch_get(const struct reader_io *io);
/* For a batch in hand that holds no item but has bytes charged to it (the
 * chunks a stream read past an oversized message): nothing refers to them,
 * so the charge goes back to the budget and the memory is reset.  Held, or
 * handed back unsent, the batch would keep the charge for good, and enough
 * such archives would leave the reader waiting on itself. */
void reader_batch_drop_charge(const struct reader_io *io, struct batch *b);
/* Fills the item's path fields from the entry; 0 or -ENOMEM. */
int reader_item_init(struct batch *b, struct batch_item *it, struct walk_entry *e);
/* reader_item_init for an entry the walk hands out, and for one the walk
 * itself could not take (a PATH argument that does not resolve), what
 * --state makes of it (reader_item_not_found).  0 or -ENOMEM. */
int reader_item_take(struct reader_common *rc, struct batch *b, struct batch_item *it,
                     struct walk_entry *e);
/* Applies what a size query said: sets the error for what must not be
 * read (not regular, too large) and returns the bytes to read (size + 1),
 * or 0 when the file is not to be read. */
uint64_t reader_item_stat(struct reader_common *rc, struct batch_item *it, int res,
                          uint32_t mode, uint64_t size, int64_t mtime_sec,
                          uint32_t mtime_nsec, uint64_t dev, uint64_t ino);
/* Records a syscall failure on the item. */
void reader_item_fail(struct batch_item *it, int neg_errno);
/* What --state makes of a file that could not be statted or opened
 * (neg_errno): still there (EIO, EACCES), its previous entry is kept; gone
 * (ENOENT), it is a deletion, but for a file named by the command line or
 * a list, whose error record takes its place (state_named_missing).  0 or
 * -ENOMEM. */
int reader_item_not_found(struct reader_common *rc, const struct batch_item *it, int neg_errno);
/* The first read returned `got` of the `cap` = size + 1 bytes asked:
 * short means EOF; a full read means the file grew, and the rest is read
 * through fd (which must be positioned at `got`, or -1 to reopen), its
 * bytes charged to budget (waiting only for bytes other batches hold). */
int reader_item_read_done(struct reader_common *rc, struct budget *budget, struct batch *b,
                          struct batch_item *it, int64_t got, int fd);

/* The batch's Maildir messages that vanished (ENOENT) are looked for under
 * new names (flags changed, new/ -> cur/), all with one listing of each
 * Maildir (walk_find_renamed), and read from there; their records then
 * name them where they are now.  One renamed again before that open is
 * looked for again, a listing a round, for a few rounds.  Call it once every item's open and read
 * have completed, before the entries are done.  0 (the items as they end
 * up) or -ENOMEM. */
int reader_batch_retry_renamed(struct reader_common *rc, struct budget *budget, struct batch *b);
/* The walk is told done of the entries of items[0..n) but keep's (which
 * goes on being read), and they forget them: a done entry's memory is
 * the walk's to reuse. */
void reader_items_done(struct walk *w, struct batch_item *items, size_t n,
                       const struct batch_item *keep);
/* True for an item reader_batch_retry_renamed looks for: a Maildir message
 * whose open said ENOENT, its entry not yet done. */
bool reader_item_vanished(const struct batch_item *it);

/* Resets the batches waiting in the free channel now, so that an arena
 * grown for one large file does not outlive its bytes (see reader_item.c). */
void reader_trim(const struct reader_io *io);
/* Files above this many bytes are streamed (reader_stream.h). */
uint64_t reader_stream_threshold(const struct reader_options *o);

#endif
