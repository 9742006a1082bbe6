/* SPDX-License-Identifier: MIT */
/* Threads across the messages of a run (README, "Threads").
 *
 * A worker formats each record with the thread of its own References root
 * (emit_record_thread_id) and leaves a note: where the 16 hex digits are and the
 * keys of the ids it names.  The parse stage's thread, one group at a time
 * and in input order, then asks the map whether a message it names (the
 * root, the parent, In-Reply-To, itself) already has a thread in this run:
 * if so the record joins it (its digits are rewritten in place), and its
 * ids are entered under the thread it ends in.  That is notmuch's joining
 * of References and In-Reply-To, as far as a stream can go: a thread met
 * before the message that would join it to another stays apart, since its
 * records are already out.  Single-threaded: only the parse stage's thread
 * touches the map. */
#ifndef INGEST_PIPELINE_THREADS_H
#define INGEST_PIPELINE_THREADS_H

#include "core/dynbuf.h"
#include "mail/mail.h"

#include <stdint.h>

struct thread_map;

struct thread_note {
	uint64_t off;              /* of the thread_id's digits in the worker's output;
	                            * with a visitor, of the record's start */
	uint64_t keys[4];          /* References root, parent, In-Reply-To, itself (0: none) */
	uint64_t own;              /* with a visitor: the thread it was given; else 0 */
};

struct thread_map *thread_map_new(void);
void thread_map_free(struct thread_map *m);

/* The note of the record formatted into out[start..out->len) from m, into
 * notes (a dynbuf of struct thread_note).  1 when a note was added, 0 when
 * the record has no thread_id digits to rewrite, -ENOMEM. */
int thread_note_add(struct dynbuf *notes, const struct dynbuf *out, size_t start,
                    const struct mail_message *m);

/* The same for a record a visitor formatted at out[start..): there are
 * no digits to find, so the note keeps start and own, the References
 * root's thread the visitor gave it. */
int thread_note_add_at(struct dynbuf *notes, size_t start, const struct mail_message *m,
                       uint64_t own);

/* Settles one record's thread, own being the thread it was formatted
 * with: the thread it joins, or 0 when it keeps own; its ids are entered
 * under the thread it ends in. */
uint64_t thread_map_settle(struct thread_map *m, const struct thread_note *n, uint64_t own);

/* thread_map_settle() for a record the JSON writer formatted: rewrites the 16 digits at hex when the
 * message joins a thread met earlier in the run, and enters its ids. */
void thread_map_resolve(struct thread_map *m, const struct thread_note *n, char *hex);

#endif
