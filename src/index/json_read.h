/* SPDX-License-Identifier: MIT */
/* Reading the JSON of a record as SQLite's JSON functions give it to the
 * index (compact: no space between tokens), value by value, with the
 * strings unescaped as SQLite unescapes them.
 *
 * Why (bench/INDEX.md, "records read in C"): the index took every record
 * apart with SQLite's json_each and `->>`, a third of the writer's
 * instructions in a first index.  This reads what the emitter writes and
 * nothing more: whatever it does not take (space between tokens, a number
 * that is not a small integer, an escape SQLite reads its own way: \u0000,
 * which ends SQLite's string there, and a surrogate) it reports as
 * JSON_READ_OTHER, and the caller leaves that record to SQLite's
 * functions, so what the index stores is SQLite's reading in every case. */
#ifndef INGEST_INDEX_JSON_READ_H
#define INGEST_INDEX_JSON_READ_H

#include "core/dynbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A reading's outcome besides 0 and -ENOMEM: a text it leaves to SQLite. */
#define JSON_READ_OTHER 1

struct json_read {
	const char *p, *end;
};

/* Steps over c (over the n bytes of w) where the text is at it. */
static inline bool json_read_eat(struct json_read *j, char c)
{
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

static inline bool json_read_word(struct json_read *j, const char *w, size_t n)
{
	if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, w, n)) {
		j->p += n;
		return true;
	}
	return false;
}

/* A string, from its opening quote: its bytes unescaped appended to out,
 * or only stepped over (out NULL).  0, JSON_READ_OTHER or -ENOMEM. */
int json_read_string(struct json_read *j, struct dynbuf *out);
/* A small integer (what fits 18 digits, no fraction, no exponent).  0 or
 * JSON_READ_OTHER. */
int json_read_integer(struct json_read *j, int64_t *out);
/* Any value stepped over.  0 or JSON_READ_OTHER. */
int json_read_skip(struct json_read *j);

#endif
