/* SPDX-License-Identifier: MIT */
/* Address lists (RFC 5322 3.4, obsolete forms 4.4): see address.h.
 *
 * A tokenizer (atoms, quoted strings, domain literals, comments, specials;
 * `.` is taken as part of atoms, as the obsolete phrase and the dot-atom
 * both allow it) feeds a loop that cuts the list into entries at `,` and `;`
 * and groups at `:`.  An entry is remembered as a span of the input and
 * tokenized a second time when it ends, to split it into display name and
 * address: every byte is thus visited a bounded number of times, and the
 * cost is linear whatever the input (1 MiB of `::::`, of `<<<<`, or of
 * unclosed comments included).
 *
 * Addresses are views of the input when they were written without inner
 * white space or comments, else copies with those removed; quoted local
 * parts keep their quotes (the address as written).  Display names are
 * built in the arena (quoted strings unquoted, white space runs collapsed
 * to one space) and then RFC 2047-decoded by encoded_word_decode().  Arrays grow
 * geometrically in the arena. */
#include "mail/address.h"
#include "mail/encoded_word.h"
#include "mail/mail_ctx.h"

#include <errno.h>
#include <string.h>

enum addr_tok_type { ADDR_END, ADDR_ATOM, ADDR_QUOTED, ADDR_LITERAL, ADDR_COMMENT, ADDR_SPECIAL };

struct addr_tok {
	enum addr_tok_type type;
	size_t start, end;       /* raw span (quotes, brackets, parentheses included) */
	uint8_t ch;              /* ADDR_SPECIAL: one of < > @ , ; : */
	bool space_before;
};

/* Byte classes for the tokenizer: one load per byte in the loops that
 * run over every atom of every address header. */
enum addr_class {
	ADDR_C_SPACE = 1 << 0,    /* white space, line ends */
	ADDR_C_SPECIAL = 1 << 1,  /* < > @ , ; : */
	ADDR_C_OPEN = 1 << 2,     /* " ( [ start a delimited token */
	ADDR_C_JUNK = 1 << 3,     /* a stray ) */
};

static const uint8_t addr_class[256] = {
	[' '] = ADDR_C_SPACE, ['\t'] = ADDR_C_SPACE, ['\r'] = ADDR_C_SPACE, ['\n'] = ADDR_C_SPACE,
	['<'] = ADDR_C_SPECIAL, ['>'] = ADDR_C_SPECIAL, ['@'] = ADDR_C_SPECIAL,
	[','] = ADDR_C_SPECIAL, [';'] = ADDR_C_SPECIAL, [':'] = ADDR_C_SPECIAL,
	['"'] = ADDR_C_OPEN, ['('] = ADDR_C_OPEN, ['['] = ADDR_C_OPEN,
	[')'] = ADDR_C_JUNK,
};

static inline bool addr_is_space(uint8_t c)
{
	return addr_class[c] & ADDR_C_SPACE;
}

/* The token at or after *i, below e.  Unterminated quoted strings, literals
 * and comments run to e. */
static struct addr_tok addr_next(const uint8_t *p, size_t e, size_t *i)
{
	struct addr_tok t = { 0 };
	size_t j = *i;
	/* A stray `)` is junk, read as white space. */
	while (j < e && (addr_class[p[j]] & (ADDR_C_SPACE | ADDR_C_JUNK))) {
		j++;
		t.space_before = true;
	}
	t.start = j;
	if (j >= e) {
		t.type = ADDR_END;
		t.end = *i = e;
		return t;
	}
	uint8_t c = p[j];
	if (addr_class[c] & ADDR_C_OPEN) {
		size_t depth = 0;
		uint8_t close = c == '"' ? '"' : c == '(' ? ')' : ']';
		t.type = c == '"' ? ADDR_QUOTED : c == '(' ? ADDR_COMMENT : ADDR_LITERAL;
		for (j++; j < e; j++) {
			if (p[j] == '\\') {
				j++;
			} else if (c == '(' && p[j] == '(') {
				depth++;
			} else if (p[j] == close) {
				if (depth == 0) {
					j++;
					break;
				}
				depth--;
			}
		}
		if (j > e)
			j = e;
	} else if (addr_class[c] & ADDR_C_SPECIAL) {
		t.type = ADDR_SPECIAL;
		t.ch = c;
		j++;
	} else {
		t.type = ADDR_ATOM;
		while (j < e && !addr_class[p[j]])
			j++;
	}
	t.end = *i = j;
	return t;
}

static inline bool addr_is_word(const struct addr_tok *t)
{
	return t->type == ADDR_ATOM || t->type == ADDR_QUOTED || t->type == ADDR_LITERAL;
}

struct addr_vec {
	struct mail_addr *v;
	size_t n, cap;
};

static int addr_push(struct arena *a, struct addr_vec *vec, struct mail_addr m)
{
	if (vec->n == vec->cap) {
		size_t cap = vec->cap ? vec->cap * 2 : 4;
		struct mail_addr *v = arena_alloc(a, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		if (vec->n)
			memcpy(v, vec->v, vec->n * sizeof(*v));
		vec->v = v;
		vec->cap = cap;
	}
	vec->v[vec->n++] = m;
	return 0;
}

/* Closes a group: appends it, with the members gathered so far, to the
 * top-level list, and empties the members for the next group. */
static int addr_push_group(struct arena *a, struct addr_vec *top, struct str name,
                           struct addr_vec *members)
{
	struct mail_addr g = {
		.name = name, .address = { "", 0 }, .is_group = true,
		.members = members->v, .n_members = members->n,
	};
	int r = addr_push(a, top, g);
	if (r == 0)
		*members = (struct addr_vec){ 0 };
	return r;
}

/* Appends the content of a quoted string or comment (delimiters removed,
 * quoted-pairs resolved, RFC 5322 3.2.1) to d. */
static size_t addr_unquote(const uint8_t *p, size_t s, size_t e, char *d)
{
	size_t k = 0;
	for (size_t j = s; j < e; j++) {
		if (p[j] == '\\' && j + 1 < e)
			j++;
		d[k++] = (char)p[j];
	}
	return k;
}

/* Decodes a display name: RFC 2047 words and raw 8-bit bytes. */
static int addr_decode_name(struct mail_ctx *ctx, char *d, size_t k,
                            struct str *out, uint64_t *warnings)
{
	while (k && addr_is_space((uint8_t)d[k - 1]))
		k--;
	if (!k) {
		*out = STR_NULL;
		return 0;
	}
	d[k] = '\0';
	return encoded_word_decode(ctx, (struct str){ d, k }, out, warnings);
}

/* The display name of the phrase in p[s..e): words joined by one space,
 * quoted strings unquoted, comments dropped. */
static int addr_phrase(struct mail_ctx *ctx, const uint8_t *p, size_t s, size_t e,
                       struct str *out, uint64_t *warnings)
{
	char *d = arena_alloc(&ctx->arena, e - s + 1);
	if (!d)
		return -ENOMEM;
	size_t k = 0, i = s;
	bool first = true;
	/* The common phrase has no quoted string or comment: its tokens are
	 * the runs between white space (a stray `)` counts as white space),
	 * and every token is non-empty, so "not first" is "k > 0". */
	bool plain = true;
	for (size_t j = s; j < e; j++)
		if (addr_class[p[j]] & ADDR_C_OPEN) {
			plain = false;
			break;
		}
	if (plain) {
		bool space = false;
		for (size_t j = s; j < e; j++) {
			uint8_t c = p[j];
			if (addr_class[c] & (ADDR_C_SPACE | ADDR_C_JUNK)) {
				space = true;
				continue;
			}
			if (space && k)
				d[k++] = ' ';
			space = false;
			d[k++] = (char)c;
		}
		return addr_decode_name(ctx, d, k, out, warnings);
	}
	for (;;) {
		struct addr_tok t = addr_next(p, e, &i);
		if (t.type == ADDR_END)
			break;
		if (t.type == ADDR_COMMENT) {
			continue;
		}
		if (t.space_before && !first && k && d[k - 1] != ' ')
			d[k++] = ' ';
		first = false;
		if (t.type == ADDR_QUOTED) {
			size_t ce = t.end;
			if (ce - t.start >= 2 && p[ce - 1] == '"')
				ce--;
			k += addr_unquote(p, t.start + 1, ce, d + k);
		} else {
			memcpy(d + k, p + t.start, t.end - t.start);
			k += t.end - t.start;
		}
	}
	return addr_decode_name(ctx, d, k, out, warnings);
}

/* A comment used as a display name (`user@host (Full Name)`): its content. */
static int addr_comment_name(struct mail_ctx *ctx, const uint8_t *p, size_t s, size_t e,
                             struct str *out, uint64_t *warnings)
{
	if (e > s && p[e - 1] == ')')
		e--;
	s++;
	while (s < e && addr_is_space(p[s]))
		s++;
	if (s >= e) {
		*out = STR_NULL;
		return 0;
	}
	char *d = arena_alloc(&ctx->arena, e - s + 1);
	if (!d)
		return -ENOMEM;
	return addr_decode_name(ctx, d, addr_unquote(p, s, e, d), out, warnings);
}

/* True when p[s..e) holds only atoms and specials: no white space, no
 * quoted string, literal or comment, no stray `)`.  Such a span tokenizes
 * into contiguous tokens that cover it exactly, so the token loops below
 * have a shortcut: most addresses (`user@example.org`) and many names are
 * written that way, and a table scan is cheaper than a second
 * tokenization. */
static inline bool addr_span_plain(const uint8_t *p, size_t s, size_t e)
{
	for (size_t j = s; j < e; j++)
		if (addr_class[p[j]] & (ADDR_C_SPACE | ADDR_C_OPEN | ADDR_C_JUNK))
			return false;
	return true;
}

/* The address made of the non-comment tokens of p[s..e), white space
 * removed: a view when they are contiguous. */
static int addr_concat(struct arena *a, const uint8_t *p, size_t s, size_t e,
                       struct str *out)
{
	if (addr_span_plain(p, s, e)) {
		*out = (struct str){ (const char *)p + s, e - s };
		return 0;
	}
	size_t i = s, first = SIZE_MAX, last = 0;
	bool contiguous = true;
	for (;;) {
		struct addr_tok t = addr_next(p, e, &i);
		if (t.type == ADDR_END)
			break;
		if (t.type == ADDR_COMMENT) {
			if (first != SIZE_MAX)
				contiguous = false;
			continue;
		}
		if (first == SIZE_MAX)
			first = t.start;
		else if (t.start != last)
			contiguous = false;
		last = t.end;
	}
	if (first == SIZE_MAX) {
		*out = (struct str){ (const char *)p + s, 0 };
		return 0;
	}
	if (contiguous) {
		*out = (struct str){ (const char *)p + first, last - first };
		return 0;
	}
	char *d = arena_alloc(a, last - first + 1);
	if (!d)
		return -ENOMEM;
	size_t k = 0;
	i = first;
	for (;;) {
		struct addr_tok t = addr_next(p, last, &i);
		if (t.type == ADDR_END)
			break;
		if (t.type == ADDR_COMMENT)
			continue;
		memcpy(d + k, p + t.start, t.end - t.start);
		k += t.end - t.start;
	}
	d[k] = '\0';
	*out = (struct str){ d, k };
	return 0;
}

/* One entry of the list, between separators. */
struct addr_entry {
	bool any;                 /* a word or special was seen */
	size_t start, end;        /* span of its words (before any `<`) */
	bool has_at;
	bool has_angle;
	bool angle_open;          /* the `<` had no `>` */
	size_t angle_s, angle_e;  /* span of the address inside `<...>` */
	bool angle_plain;         /* that span is atoms and `@` only: a view */
	bool angle_junk;          /* words after the addr-spec inside `<...>` */
	bool angle_prose;         /* words and no `@` inside `<...>` */
	bool closed;              /* the addr-spec is over: the rest is junk */
	size_t name_end;          /* where the phrase before `<` ends */
	bool has_comment;
	size_t com_s, com_e;      /* first comment, parentheses included */
};

/* Turns a finished entry into a mailbox.  Returns 1 when it made one, 0 for
 * an empty entry, 0 with MAIL_W_BAD_ADDRESS for garbage, or -errno. */
static int addr_finish(struct mail_ctx *ctx, const uint8_t *p, const struct addr_entry *en,
                       struct mail_addr *m, uint64_t *warnings)
{
	int r;
	*m = (struct mail_addr){ 0 };
	if (en->has_angle) {
		/* Words and no `@` inside the brackets: no address, and none
		 * is made up by gluing them (RFC 5322 3.4.1 addr-spec). */
		if (en->angle_prose) {
			mail_warn(warnings, MAIL_W_BAD_ADDRESS);
			return 0;
		}
		/* RFC 5322 3.4 angle-addr: recovered, but not well formed. */
		if (en->angle_open || en->angle_junk)
			mail_warn(warnings, MAIL_W_BAD_ADDRESS);
		if (en->angle_plain)
			m->address = (struct str){ (const char *)p + en->angle_s, en->angle_e - en->angle_s };
		else if ((r = addr_concat(&ctx->arena, p, en->angle_s, en->angle_e, &m->address)) < 0)
			return r;
		if (en->any && (r = addr_phrase(ctx, p, en->start, en->name_end, &m->name, warnings)) < 0)
			return r;
	} else {
		if (!en->any)
			return 0;
		/* `user@host` alone (or with a comment around it) is one run
		 * holding an `@`: the loop below would take it whole, as a
		 * view, with no warning. */
		if (en->has_at && addr_span_plain(p, en->start, en->end) &&
		    !memchr(p + en->start, '>', en->end - en->start)) {
			m->address = (struct str){ (const char *)p + en->start, en->end - en->start };
			goto named;
		}
		/* No brackets: `addr`, `addr (Name)`, or the obsolete-looking
		 * `Name addr`.  Words separated by white space start a new run
		 * until a run holds an `@`: that run is the address, what went
		 * before is the name, what follows is junk. */
		size_t i = en->start, run_s = SIZE_MAX, run_e = 0, words = 0;
		bool run_at = false, prev_word = false, prev_dot = false, atom = false;
		bool junk = false;
		for (;;) {
			struct addr_tok t = addr_next(p, en->end, &i);
			if (t.type == ADDR_END)
				break;
			if (t.type == ADDR_COMMENT || (t.type == ADDR_SPECIAL && t.ch == '>'))
				continue;
			bool w = addr_is_word(&t);
			words += w;
			atom = t.type == ADDR_ATOM;
			/* A dot joins across white space (`john . doe`, RFC 5322
			 * 4.4 obs-local-part allows CFWS around it). */
			bool dot = t.type == ADDR_ATOM && p[t.start] == '.';
			if (w && prev_word && t.space_before && !dot && !prev_dot) {
				if (run_at) {
					junk = true;
					break;
				}
				run_s = t.start;
			}
			prev_dot = t.type == ADDR_ATOM && p[t.end - 1] == '.';
			if (run_s == SIZE_MAX)
				run_s = t.start;
			if (t.type == ADDR_SPECIAL && t.ch == '@')
				run_at = true;
			run_e = t.end;
			prev_word = w;
		}
		if (!run_at && (words != 1 || !atom)) {
			/* `John Smith` or an unterminated quote: no address. */
			mail_warn(warnings, MAIL_W_BAD_ADDRESS);
			return 0;
		}
		/* Recovered, but no RFC 5322 3.4 production matches: a bare
		 * word with no `@domain` (3.4.1 addr-spec), a phrase before a
		 * bare addr-spec (`Name addr` needs angle brackets), or words
		 * after it. */
		if (!run_at || run_s > en->start || junk)
			mail_warn(warnings, MAIL_W_BAD_ADDRESS);
		if (!run_at)
			run_s = en->start;    /* one word: a local mailbox (`root`) */
		if ((r = addr_concat(&ctx->arena, p, run_s, run_e, &m->address)) < 0)
			return r;
		if (run_s > en->start &&
		    (r = addr_phrase(ctx, p, en->start, run_s, &m->name, warnings)) < 0)
			return r;
	}
named:
	/* A comment names the mailbox when nothing else does (RFC 822's
	 * `user@host (Full Name)` convention, as Python's email and postal-mime
	 * read it); otherwise comments are dropped. */
	if (!m->name.p && en->has_comment &&
	    (r = addr_comment_name(ctx, p, en->com_s, en->com_e, &m->name, warnings)) < 0)
		return r;
	/* `<>` alone is the null reverse-path, nobody; with a name
	 * (`MAILER DAEMON <>`, as bounces are sent) the name is all there is
	 * of the sender, and is kept with an empty address, as postal-mime
	 * and Python's email keep it. */
	if (!m->address.n && !m->name.p)
		return 0;
	return 1;
}

/* Scans `<...>` from just after the `<` at *i; sets the entry's angle span
 * and leaves *i after the `>` (or at the separator that ended an unclosed
 * bracket).  An obsolete route (`<@a,@b:user@c>`, RFC 5322 4.4) is dropped. */
static void addr_angle(const uint8_t *p, size_t n, size_t *i, struct addr_entry *en)
{
	size_t j = *i;
	/* `<user@host>`: atoms and `@` up to the `>`, no route.  The token
	 * loop below would find the same span, one token at a time. */
	if (j < n && p[j] != '@') {
		size_t k = j;
		while (k < n && (!addr_class[p[k]] || p[k] == '@'))
			k++;
		if (k < n && p[k] == '>') {
			*i = k + 1;
			en->has_angle = true;
			en->angle_s = j;
			en->angle_e = k;
			en->angle_plain = true;
			return;
		}
	}
	struct addr_tok t = addr_next(p, n, &j);
	bool route = t.type == ADDR_SPECIAL && t.ch == '@';
	size_t s = t.start, e = t.start;
	/* The addr-spec ends with its domain: a word after it across white
	 * space (`<stable@vger.kernel.org # 3.11>`, the kernel's stable
	 * convention) is junk, not more address.  Words with no `@` at all
	 * (`<no To-header on input>`) are no address.  A dot joins words
	 * across white space (RFC 5322 4.4). */
	bool at = false, domain = false, prev_dot = false, spaced = false;
	size_t words = 0;
	for (;; t = addr_next(p, n, &j)) {
		if (t.type == ADDR_END) {
			*i = j;
			en->angle_open = true;
			break;
		}
		if (t.type == ADDR_SPECIAL) {
			if (t.ch == '>') {
				*i = j;
				break;
			}
			if (t.ch == '<' || t.ch == ';' || (t.ch == ',' && !route)) {
				*i = t.start;
				en->angle_open = true;
				break;
			}
			if (t.ch == ':' && route) {
				route = false;
				s = e = j;
				at = domain = prev_dot = spaced = false;
				words = 0;
				continue;
			}
		}
		if (t.type == ADDR_COMMENT || en->angle_junk)
			continue;
		bool word = addr_is_word(&t);
		bool dot = t.type == ADDR_ATOM && p[t.start] == '.';
		if (word && domain && t.space_before && !dot && !prev_dot) {
			en->angle_junk = true;
			continue;
		}
		if (word && words && t.space_before && !dot && !prev_dot)
			spaced = true;
		words += word;
		if (t.type == ADDR_SPECIAL && t.ch == '@')
			at = true;
		else if (word && at)
			domain = true;
		prev_dot = t.type == ADDR_ATOM && p[t.end - 1] == '.';
		e = t.end;
	}
	if (route)
		s = e;        /* a route with no mailbox after it */
	en->has_angle = true;
	en->angle_s = s;
	en->angle_e = e < s ? s : e;
	en->angle_prose = !at && spaced;
}

int address_parse_list(struct mail_ctx *ctx, struct str in,
                       struct mail_addr_list *out, uint64_t *warnings)
{
	const uint8_t *p = (const uint8_t *)in.p;
	size_t n = in.n, i = 0;
	struct addr_vec top = { out->v, out->n, out->n };
	struct addr_vec members = { 0 };
	bool in_group = false;
	struct str group_name = STR_NULL;
	struct addr_entry en = { 0 };
	struct mail_addr m;
	uint64_t w_dummy = 0;
	int r;
	if (!warnings)
		warnings = &w_dummy;
	out->present = true;

	for (;;) {
		struct addr_tok t = addr_next(p, n, &i);
		bool end_entry = t.type == ADDR_END ||
			(t.type == ADDR_SPECIAL && (t.ch == ',' || t.ch == ';'));
		bool second_angle = t.type == ADDR_SPECIAL && t.ch == '<' && en.has_angle;
		if (end_entry || second_angle) {
			if ((r = addr_finish(ctx, p, &en, &m, warnings)) < 0)
				return r;
			if (r > 0 && (r = addr_push(&ctx->arena, in_group ? &members : &top, m)) < 0)
				return r;
			en = (struct addr_entry){ 0 };
		}
		if (t.type == ADDR_END || (in_group && t.type == ADDR_SPECIAL && t.ch == ';')) {
			if (in_group) {
				if ((r = addr_push_group(&ctx->arena, &top, group_name, &members)) < 0)
					return r;
				in_group = false;
			}
			if (t.type == ADDR_END)
				break;
			continue;
		}
		if (end_entry)
			continue;    /* `;` outside a group: a separator, as Outlook uses it */
		if (en.closed)
			continue;
		if (t.type == ADDR_COMMENT) {
			if (!en.has_comment) {
				en.has_comment = true;
				en.com_s = t.start;
				en.com_e = t.end;
			}
			continue;
		}
		if (t.type == ADDR_SPECIAL && t.ch == '<') {
			en.name_end = t.start;
			addr_angle(p, n, &i, &en);
			continue;
		}
		if (t.type == ADDR_SPECIAL && t.ch == ':' && en.has_at && !en.has_angle &&
		    p[en.start] != '@') {
			/* A colon after an addr-spec starts nothing: the address
			 * is what came before (`user@example.de Thu Sep 19
			 * 17:31:10 2013`, as some scripts write), the rest is
			 * junk. */
			mail_warn(warnings, MAIL_W_BAD_ADDRESS);
			en.closed = true;
			continue;
		}
		if (t.type == ADDR_SPECIAL && t.ch == ':') {
			if (en.any && !en.has_at && !en.has_angle) {
				/* RFC 5322 3.4 group: `name: members;`.  A group left
				 * open by a missing `;` ends where the next begins. */
				struct str name;
				if ((r = addr_phrase(ctx, p, en.start, en.end, &name, warnings)) < 0)
					return r;
				if (in_group &&
				    (r = addr_push_group(&ctx->arena, &top, group_name, &members)) < 0)
					return r;
				in_group = true;
				group_name = name.p ? name : (struct str){ "", 0 };
			} else {
				/* A colon that starts nothing: junk (`::::`, a route
				 * without brackets).  What came before it goes too. */
				mail_warn(warnings, MAIL_W_BAD_ADDRESS);
			}
			en = (struct addr_entry){ 0 };
			continue;
		}
		if (en.has_angle) {
			/* junk after `<addr>` (`<stable@vger.kernel.org> [3.13]`):
			 * dropped */
			mail_warn(warnings, MAIL_W_BAD_ADDRESS);
			continue;
		}
		if (!en.any) {
			en.any = true;
			en.start = t.start;
		}
		en.end = t.end;
		if (t.type == ADDR_SPECIAL && t.ch == '@')
			en.has_at = true;
	}
	out->v = top.v;
	out->n = top.n;
	return 0;
}
