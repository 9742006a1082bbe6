/* SPDX-License-Identifier: MIT */
/* A record's JSON read value by value: see json_read.h. */
#include "index/json_read.h"
#include "core/hex.h"
#include "core/utf8.h"

#include <errno.h>

static int json_read_hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int d = hex_digit((unsigned char)p[i]);
		if (d < 0)
			return JSON_READ_OTHER;
		v = v << 4 | (unsigned)d;
	}
	*out = v;
	return 0;
}

static int json_read_put(struct dynbuf *out, const char *p, size_t n)
{
	return out && n && dynbuf_append(out, p, n) < 0 ? -ENOMEM : 0;
}

int json_read_string(struct json_read *j, struct dynbuf *out)
{
	if (!json_read_eat(j, '"'))
		return JSON_READ_OTHER;
	for (;;) {
		/* raw bytes are copied as they are, as SQLite copies them; a
		 * control character is malformed JSON, which SQLite reports */
		const char *run = j->p;
		while (j->p < j->end && *j->p != '"' && *j->p != '\\' && (unsigned char)*j->p >= 0x20)
			j->p++;
		if (json_read_put(out, run, (size_t)(j->p - run)) < 0)
			return -ENOMEM;
		if (j->p >= j->end || (unsigned char)*j->p < 0x20)
			return JSON_READ_OTHER;
		if (*j->p++ == '"')
			return 0;
		if (j->p >= j->end)
			return JSON_READ_OTHER;
		char e = *j->p++, b[4];
		size_t n = 1;
		unsigned u;
		switch (e) {
		case '"': case '\\': case '/': b[0] = e; break;
		case 'b': b[0] = '\b'; break;
		case 'f': b[0] = '\f'; break;
		case 'n': b[0] = '\n'; break;
		case 'r': b[0] = '\r'; break;
		case 't': b[0] = '\t'; break;
		case 'u':
			if (j->end - j->p < 4 || json_read_hex4(j->p, &u) || u == 0 || (u >= 0xd800 && u <= 0xdfff))
				return JSON_READ_OTHER;
			j->p += 4;
			n = (size_t)(utf8_put(b, u) - b);
			break;
		default:
			return JSON_READ_OTHER;
		}
		if (json_read_put(out, b, n) < 0)
			return -ENOMEM;
	}
}

int json_read_integer(struct json_read *j, int64_t *out)
{
	const char *p = j->p;
	bool minus = p < j->end && *p == '-';
	p += minus;
	const char *digits = p;
	int64_t v = 0;
	while (p < j->end && *p >= '0' && *p <= '9' && p - digits < 18)
		v = 10 * v + (*p++ - '0');
	if (p == digits || (*digits == '0' && p - digits > 1) ||
	    (p < j->end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E')))
		return JSON_READ_OTHER;
	j->p = p;
	*out = minus ? -v : v;
	return 0;
}

static int json_read_skip_at(struct json_read *j, int depth)
{
	if (j->p >= j->end || depth > 64)
		return JSON_READ_OTHER;
	char c = *j->p;
	if (c == '"')
		return json_read_string(j, NULL);
	if (c == '[' || c == '{') {
		char close = c == '[' ? ']' : '}';
		j->p++;
		if (json_read_eat(j, close))
			return 0;
		do {
			int r = 0;
			if (close == '}' && ((r = json_read_string(j, NULL)) != 0 || !json_read_eat(j, ':')))
				return r ? r : JSON_READ_OTHER;
			if ((r = json_read_skip_at(j, depth + 1)) != 0)
				return r;
		} while (json_read_eat(j, ','));
		return json_read_eat(j, close) ? 0 : JSON_READ_OTHER;
	}
	if (json_read_word(j, "null", 4) || json_read_word(j, "true", 4) || json_read_word(j, "false", 5))
		return 0;
	int64_t v;
	return json_read_integer(j, &v);
}

int json_read_skip(struct json_read *j)
{
	return json_read_skip_at(j, 0);
}
