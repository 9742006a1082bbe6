/* SPDX-License-Identifier: MIT */
/* The Python form of a record: a dict equal to json.loads() of the JSON
 * record emit_record() writes for it, built from the struct record
 * directly (no JSON in between).  Compiled into the Python module only
 * (python/meson.build): the library does not link libpython.
 *
 * Every call needs the GIL. */
#ifndef INGEST_EMIT_PYDICT_H
#define INGEST_EMIT_PYDICT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "emit/emit.h"

/* Makes the key strings (interned, once).  0, or -1 with an exception. */
int emit_pydict_init(void);

/* A new dict for r with o's fields, or NULL with an exception set. */
PyObject *emit_pydict(const struct emit_options *o, const struct record *r);

#endif
