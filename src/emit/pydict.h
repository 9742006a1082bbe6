/* SPDX-License-Identifier: MIT */
/* The Python form of a record: a dict equal to json.loads() of the JSON
 * record emit_record() writes for it, built from the struct record
 * directly (no JSON in between).  Compiled into the Python module only
 * (python/meson.build): the library does not link libpython.
 *
 * In two steps, so that a worker holds the GIL for the objects only:
 * emit_pytape_record() walks the record into a tape, on any thread, with
 * no Python call; emit_pytape_build() makes the dict from the tape and
 * needs the GIL, as does emit_pydict_init(). */
#ifndef INGEST_EMIT_PYDICT_H
#define INGEST_EMIT_PYDICT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "core/dynbuf.h"
#include "emit/emit.h"

#include <stdbool.h>
#include <stdint.h>

/* Makes the key strings (interned, once).  0, or -1 with an exception. */
int emit_pydict_init(void);

/* A record's dict as values in the order the dict is built, its
 * strings already decoded.  One per thread at a time; kept and reused. */
struct emit_pytape {
	struct dynbuf items;
	struct dynbuf scratch;   /* the formatting of dates and base64 */
	/* Where in items the thread_id's 16 hex digits are, one byte each
	 * (an ASCII string's code units): rewritten in place when a run
	 * joins the record to a thread met earlier (pipeline/threads.h).
	 * EMIT_PYTAPE_NO_THREAD when the record has none. */
	size_t thread_at;
	/* Strings with a character beyond U+FFFF go as their UTF-8 bytes,
	 * decoded when built, instead of four bytes a character: a quarter
	 * of the size for the tapes that wait in a run's batches (scan), at
	 * the cost of decoding under the GIL.  Set by the tape's owner. */
	bool astral_utf8;
	bool failed;
	struct emit_pytape *next;   /* its owner's free list; the tape's calls leave it alone */
};

#define EMIT_PYTAPE_NO_THREAD SIZE_MAX

void emit_pytape_init(struct emit_pytape *t);
void emit_pytape_release(struct emit_pytape *t);
/* Fills t with r's dict for o's fields (what the tape held is dropped).
 * 0, or -ENOMEM.  No GIL needed: t and r are the caller's alone. */
int emit_pytape_record(struct emit_pytape *t, const struct emit_options *o, const struct record *r);
/* The same appended to out instead of t's items (t gives its scratch
 * and its flags): a tape written where it will wait, with no copy.  Its
 * items start where out ended, t->thread_at counting from there.  0, or
 * -ENOMEM with out as it was. */
int emit_pytape_append(struct emit_pytape *t, struct dynbuf *out, const struct emit_options *o,
                       const struct record *r);
/* The dict on t, or NULL with an exception set.  Needs the GIL. */
PyObject *emit_pytape_build(const struct emit_pytape *t);
/* The same from a copy of a tape's items (t->items.p, t->items.len),
 * at any alignment: a tape that travelled as bytes. */
PyObject *emit_pytape_build_bytes(const void *items);

#endif
