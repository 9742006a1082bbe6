/* SPDX-License-Identifier: MIT */
/* A record's address lists into the addresses table's rows: see
 * addresses.h. */
#include "index/addresses.h"
#include "index/json_read.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

const char *const addr_role_names[ADDR_ROLES] = { "from", "sender", "reply_to", "to", "cc", "bcc" };

/* A value of an address object: absent or JSON null (off -1), or a
 * string's bytes in the rows' text. */
struct addr_value {
	ptrdiff_t off;
	size_t len;
};

#define ADDR_NONE ((struct addr_value){ -1, 0 })

struct addr_elem {
	int role;
	int64_t position;
	struct addr_value name, address, group;
	/* members: an array, its members at first..first+count of members */
	bool members;
	size_t first, count;
};

struct addr_member {
	struct addr_value name, address;
};

struct addr_cursor {
	struct json_read j;
	struct addr_rows *a;
};

static bool addr_eat(struct addr_cursor *c, char ch)
{
	return json_read_eat(&c->j, ch);
}

/* A name, an address or a group: a string or null. */
static int addr_value(struct addr_cursor *c, struct addr_value *out)
{
	if (json_read_word(&c->j, "null", 4)) {
		*out = ADDR_NONE;
		return 0;
	}
	size_t start = c->a->text.len;
	int r = json_read_string(&c->j, &c->a->text);
	*out = (struct addr_value){ (ptrdiff_t)start, c->a->text.len - start };
	return r;
}

enum addr_key { KEY_NAME, KEY_ADDRESS, KEY_GROUP, KEY_MEMBERS, KEY_OTHER };

static enum addr_key addr_key(struct addr_cursor *c, int *r)
{
	static const struct { const char *s; size_t n; } keys[] = {
		{ "\"name\":", 7 }, { "\"address\":", 10 }, { "\"group\":", 8 }, { "\"members\":", 10 },
	};
	for (int k = 0; k < KEY_OTHER; k++)
		if (json_read_word(&c->j, keys[k].s, keys[k].n))
			return (enum addr_key)k;
	/* a key with an escape: whether ->> matches it is SQLite's (3.45
	 * reads the escapes, 3.40 does not) */
	const char *key = c->j.p;
	*r = json_read_string(&c->j, NULL);
	if (*r == 0 && (memchr(key, '\\', (size_t)(c->j.p - key)) || !addr_eat(c, ':')))
		*r = JSON_READ_OTHER;
	return KEY_OTHER;
}

static int addr_members(struct addr_cursor *c, struct addr_elem *e);

/* An address object: its name and address and, for a list's element
 * (not a group's member, whose other keys go unread, as in SQL), its group
 * and members. */
static int addr_object(struct addr_cursor *c, struct addr_elem *e, bool member)
{
	bool seen[KEY_OTHER] = { false };
	if (!addr_eat(c, '{'))
		return JSON_READ_OTHER;
	if (addr_eat(c, '}'))
		return 0;
	do {
		int r = 0;
		enum addr_key k = addr_key(c, &r);
		if (member && (k == KEY_GROUP || k == KEY_MEMBERS))
			k = KEY_OTHER;
		if (r == 0 && k != KEY_OTHER && seen[k])
			r = JSON_READ_OTHER;
		if (r == 0) {
			switch (k) {
			case KEY_NAME: r = addr_value(c, &e->name); break;
			case KEY_ADDRESS: r = addr_value(c, &e->address); break;
			case KEY_GROUP: r = addr_value(c, &e->group); break;
			case KEY_MEMBERS: r = addr_members(c, e); break;
			case KEY_OTHER: r = json_read_skip(&c->j); break;
			}
		}
		if (r != 0)
			return r;
		if (k != KEY_OTHER)
			seen[k] = true;
	} while (addr_eat(c, ','));
	return addr_eat(c, '}') ? 0 : JSON_READ_OTHER;
}

/* The members of a group: an array of {"name","address"}. */
static int addr_members(struct addr_cursor *c, struct addr_elem *e)
{
	if (!addr_eat(c, '['))
		return JSON_READ_OTHER;
	e->members = true;
	e->first = c->a->members.len / sizeof(struct addr_member);
	if (addr_eat(c, ']'))
		return 0;
	do {
		struct addr_elem m = { 0, 0, ADDR_NONE, ADDR_NONE, ADDR_NONE, false, 0, 0 };
		int r = addr_object(c, &m, true);
		if (r != 0)
			return r;
		struct addr_member keep = { m.name, m.address };
		if (dynbuf_append(&c->a->members, &keep, sizeof(keep)) < 0)
			return -ENOMEM;
		e->count++;
	} while (addr_eat(c, ','));
	return addr_eat(c, ']') ? 0 : JSON_READ_OTHER;
}

static int addr_element(struct addr_cursor *c, int role, int64_t position)
{
	struct addr_elem e = { role, position, ADDR_NONE, ADDR_NONE, ADDR_NONE, false, 0, 0 };
	int r = addr_object(c, &e, false);
	if (r != 0)
		return r;
	return dynbuf_append(&c->a->elems, &e, sizeof(e)) < 0 ? -ENOMEM : 0;
}

static int addr_list(struct addr_rows *a, int role, struct str list)
{
	/* only an array: over null or a number json_each gives a row of
	 * NULLs, which the table refuses, and a string it reads again as
	 * JSON: SQLite's */
	struct addr_cursor c = { { list.p, list.p + list.n }, a };
	if (!addr_eat(&c, '['))
		return JSON_READ_OTHER;
	if (!addr_eat(&c, ']')) {
		int64_t position = 0;
		do {
			int r = addr_element(&c, role, position++);
			if (r != 0)
				return r;
		} while (addr_eat(&c, ','));
		if (!addr_eat(&c, ']'))
			return JSON_READ_OTHER;
	}
	return c.j.p == c.j.end ? 0 : JSON_READ_OTHER;
}

static int addr_row(struct addr_rows *a, const struct addr_elem *e, int64_t member, struct addr_value name,
                    struct addr_value address, struct addr_value group)
{
	struct addr_row row = {
		e->role, e->position, member, name.off, address.off, group.off, name.len, address.len, group.len,
	};
	return dynbuf_append(&a->rows, &row, sizeof(row)) < 0 ? -ENOMEM : 0;
}

void addr_rows_init(struct addr_rows *a)
{
	dynbuf_init(&a->rows, 0);
	dynbuf_init(&a->text, 0);
	dynbuf_init(&a->elems, 0);
	dynbuf_init(&a->members, 0);
}

void addr_rows_release(struct addr_rows *a)
{
	dynbuf_release(&a->rows);
	dynbuf_release(&a->text);
	dynbuf_release(&a->elems);
	dynbuf_release(&a->members);
}

int addr_rows_read(struct addr_rows *a, const struct str lists[ADDR_ROLES])
{
	dynbuf_reset(&a->rows);
	dynbuf_reset(&a->text);
	dynbuf_reset(&a->elems);
	dynbuf_reset(&a->members);
	int r = 0;
	for (int role = 0; r == 0 && role < ADDR_ROLES; role++)
		if (lists[role].p)
			r = addr_list(a, role, lists[role]);
	if (r != 0)
		return r;
	const struct addr_elem *e = (const void *)a->elems.p;
	const struct addr_member *m = (const void *)a->members.p;
	size_t n = a->elems.len / sizeof(*e);
	/* the statement's three passes: plain addresses (no group, or a
	 * null one); each group's members; groups of no member */
	for (size_t i = 0; r == 0 && i < n; i++)
		if (e[i].group.off < 0)
			r = addr_row(a, &e[i], -1, e[i].name, e[i].address, ADDR_NONE);
	for (size_t i = 0; r == 0 && i < n; i++)
		for (size_t j = 0; r == 0 && e[i].group.off >= 0 && j < e[i].count; j++)
			r = addr_row(a, &e[i], (int64_t)j, m[e[i].first + j].name, m[e[i].first + j].address,
			             e[i].group);
	for (size_t i = 0; r == 0 && i < n; i++)
		if (e[i].group.off >= 0 && e[i].members && e[i].count == 0)
			r = addr_row(a, &e[i], -1, ADDR_NONE, ADDR_NONE, e[i].group);
	return r;
}
