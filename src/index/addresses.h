/* SPDX-License-Identifier: MIT */
/* A message record's six address lists (from, sender, reply_to, to, cc,
 * bcc: JSON arrays of {"name","address"} and of {"group","members"}, as
 * emit/emit.c writes them) read into the rows of the addresses table, in
 * the order the table takes them: every list's plain addresses, then
 * every list's group members, then every list's empty groups (the order
 * of the names in mail_fts' to column).
 *
 * Why (bench/INDEX.md, "records read in C"): the same rows made by one
 * SQL statement took each list apart with json_each once a pass, and each
 * address with `->>` three times (each a render and a parse of the
 * address's JSON): the writer's dearest statement in a first index.
 *
 * What it reads is what the emitter writes; a list of any other shape (not
 * an array, a value that is not a string or null where a name goes, an
 * element that is not an object, a key met twice or written with an
 * escape, or what json_read.h leaves to SQLite) is left to that statement
 * (index.c, ST_INSERT_ADDRESSES), so the rows are SQLite's in every case;
 * tests/unit/test-index.c stores records both ways (index_sql_reading) and
 * compares every column. */
#ifndef INGEST_INDEX_ADDRESSES_H
#define INGEST_INDEX_ADDRESSES_H

#include "core/dynbuf.h"
#include "core/str.h"
#include "index/json_read.h"

#include <stddef.h>
#include <stdint.h>

#define ADDR_ROLES 6

/* A row: its role (ADDR_ROLE_NAMES order), its position in the role's
 * list, its position among its group's members (-1: SQL NULL), and its
 * name, address and group, each at an offset of the rows' text (-1: SQL
 * NULL) with its length. */
struct addr_row {
	int role;
	int64_t position, member;
	ptrdiff_t name, address, group;
	size_t name_len, address_len, group_len;
};

struct addr_rows {
	struct dynbuf rows;   /* struct addr_row */
	struct dynbuf text;
	/* the lists' elements, then the groups' members, as read: the rows
	 * are made from them in the table's order */
	struct dynbuf elems, members;
};

/* The roles' names, as the table stores them. */
extern const char *const addr_role_names[ADDR_ROLES];

void addr_rows_init(struct addr_rows *a);
void addr_rows_release(struct addr_rows *a);
/* Reads lists[role] (p NULL: the record has no such list) into a's rows,
 * dropping what a held.  0; JSON_READ_OTHER for a list of a shape left to
 * SQLite (a's rows then mean nothing); -ENOMEM. */
int addr_rows_read(struct addr_rows *a, const struct str lists[ADDR_ROLES]);
/* The n rows read, in the table's order. */
static inline const struct addr_row *addr_rows_get(const struct addr_rows *a, size_t *n)
{
	*n = a->rows.len / sizeof(struct addr_row);
	return (const struct addr_row *)(const void *)a->rows.p;
}

#endif
