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

/* Makes the key strings (interned, once).  0, or -1 with an exception. */
int emit_pydict_init(void);

/* A record's dict as values in the order the dict is built, its
 * strings already decoded.  One per thread at a time; kept and reused. */
struct emit_pytape {
	struct dynbuf items;
	struct dynbuf scratch;   /* the formatting of dates and base64 */
	bool failed;
	struct emit_pytape *next;   /* its owner's free list; the tape's calls leave it alone */
};

void emit_pytape_init(struct emit_pytape *t);
void emit_pytape_release(struct emit_pytape *t);
/* Fills t with r's dict for o's fields (what the tape held is dropped).
 * 0, or -ENOMEM.  No GIL needed: t and r are the caller's alone. */
int emit_pytape_record(struct emit_pytape *t, const struct emit_options *o, const struct record *r);
/* The dict on t, or NULL with an exception set.  Needs the GIL. */
PyObject *emit_pytape_build(const struct emit_pytape *t);

#endif
