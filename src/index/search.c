/* SPDX-License-Identifier: MIT */
/* `ingest search FILE QUERY`: a query over an --index database (README,
 * "Searching").
 *
 * The query is FTS5's syntax plus the prefixes notmuch and mu users know.
 * Each word is one of:
 *   from:V to:V subject:V    a phrase in that column of mail_fts (names and
 *                            addresses are words: from:ann, from:example.org)
 *   from:( ... ) and so on   a group whose words are all in that column:
 *                            FTS5's column filter on a group, `"from" : ( )`
 *   date:A..B date:A         ISO date prefixes: 2023, 2023-06, 2023-06-01
 *   tag:T folder:F thread:N id:MSGID has:attachment
 *                            (prefixes in any case: From:, SUBJECT:)
 *   -PREFIX:V -WORD          the same, negated; -WORD is a message without
 *                            WORD (a phrase, or column:word) in any column
 *   *                        every message (notmuch's query of all): no term
 *   anything else            FTS5 syntax as written (AND OR NOT, "a phrase",
 *                            pre*, column:word for a column of mail_fts); a
 *                            word FTS5 would refuse as a bareword
 *                            (example.org, 10:30, http://x) is a phrase
 * The words join with AND; FTS5's OR, NOT and ( ) group the FTS words
 * (from:, to:, subject: and the rest), NEAR( ) the plain ones, while the
 * other prefixes are SQL conditions, which cannot be grouped.  The SQL is
 * built with placeholders only: every value is bound, none is pasted into
 * the statement.  A line is written here, not by SQLite's json_object: the
 * root and path are a file's bytes, which need not be UTF-8, and they are
 * written as the records write them (README, "Records"; emit/json.h). */
#include "ingest.h"
#include "core/dynbuf.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "emit/emit.h"
#include "emit/json.h"
#include "index/db_open.h"
#include "index/index.h"
#include "index/rank.h"
#include "index/search.h"
#include "io/maildir.h"
#include "mail/date.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/stat.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEARCH_MAX_TERMS 64
/* FTS5's snippet() scores each place a phrase matches in a row against
 * every other: its time grows with the square of the row's matches, which
 * each word of the query adds to (8,000 words took 8 s, 1,000 0.16 s), so
 * a query has at most this many words (README, "Searching") */
#define SEARCH_MAX_WORDS 1024
#define SEARCH_COLUMN_NONE (-2)   /* struct search's column: no phrase yet */
/* FTS5's snippet() scores every match of a row against every other: a
 * row of 40,000 matches (t* against a 270 KB text) took 11 s, one of
 * 1,000 a few milliseconds.  Past this many, a hit shows the start of its
 * text, as a query without words does (README, "Searching"). */
#define SEARCH_SNIPPET_MATCHES 1000
/* A search by date of fewer matches than this looks each up for its date;
 * of more, it walks the date index (search_matches_many): at 100,000
 * messages the two cost the same near 350 matches, by
 * bench/INDEX.md, "search by date". */
#define SEARCH_FEW_MATCHES 400
#define SEARCH_TEXT_START "substr(replace(f.text, char(10), ' '), 1, 80)"

/* FTS5's filter of one column of mail_fts, `"column" : `, or of a set of
 * them as written, `{subject text}: `. */
#define SEARCH_FILTER_MAX 80

struct search {
	struct dynbuf fts;       /* the MATCH expression */
	int depth;               /* "(" groups open in fts */
	bool in_near;            /* inside NEAR(...): phrases and a distance only */
	bool near_comma;         /* the last word ended NEAR's phrases: the next
	                          * is its distance */
	enum search_end { SEARCH_START, SEARCH_PHRASE, SEARCH_GROUP, SEARCH_OPERATOR } end;
	                         /* what fts ends with ("(" and NEAR( count as operators) */
	bool after_star;         /* the last word was "*" */
	bool after_condition;    /* the last word was an SQL condition */
	bool conditions;         /* the query has one */
	bool top_or;             /* an OR outside ( ): in "a OR b tag:x" the
	                          * condition would join (a OR b) */
	int column;              /* the mail_fts column all of fts's phrases are
	                          * in (SEARCH_COLUMN_NONE: no phrase yet), or
	                          * -1: any (the snippet's column, ingest_search) */
	int group_column;        /* the column of the from:( ) group open, or -1 */
	char group_names[SEARCH_FILTER_MAX];
	                         /* the columns of the group open: its column's
	                          * name ("from"), or its set as written
	                          * ("{subject text}"); "" outside a group */
	int group_depth;         /* depth outside that group */
	int words;               /* of the query so far (SEARCH_MAX_WORDS) */
	bool fts_token;          /* a word given to FTS5 has a token: without one,
	                            its expression can only match nothing */
	struct dynbuf where;     /* SQL conditions, " AND "-joined */
	char *binds[SEARCH_MAX_TERMS];
	int n_binds;
	char error[256];
};

/* The value's parameter number: ?1 is the MATCH expression, values follow. */
static int search_bind(struct search *s, const char *v, size_t n)
{
	if (s->n_binds == SEARCH_MAX_TERMS) {
		snprintf(s->error, sizeof(s->error), "more than %d terms", SEARCH_MAX_TERMS);
		return -EINVAL;
	}
	char *c = xmalloc(n + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, v, n);
	c[n] = '\0';
	s->binds[s->n_binds++] = c;
	return s->n_binds + 1;
}

/* Adds " AND [NOT ](cond)", each '@' in cond naming the bound value v. */
static int search_where(struct search *s, bool negate, const char *cond, const char *v, size_t n)
{
	int num = v ? search_bind(s, v, n) : 0;
	if (num < 0)
		return num;
	int r = dynbuf_printf(&s->where, " AND %s(", negate ? "NOT " : "");
	for (const char *c = cond; r == 0 && *c; c++)
		r = *c == '@' ? dynbuf_printf(&s->where, "?%d", num) : dynbuf_putc(&s->where, *c);
	return r ? r : dynbuf_putc(&s->where, ')');
}

/* An FTS5 string: "..." with '"' doubled; a trailing '*' stays a prefix. */
static int search_phrase(struct dynbuf *b, const char *v, size_t n)
{
	bool prefix = n > 1 && v[n - 1] == '*';
	if (prefix)
		n--;
	int r = dynbuf_putc(b, '"');
	for (size_t i = 0; r == 0 && i < n; i++)
		r = v[i] == '"' ? dynbuf_puts(b, "\"\"") : dynbuf_putc(b, v[i]);
	if (r == 0)
		r = dynbuf_puts(b, prefix ? "\" *" : "\"");
	return r;
}

/* Whether v is one FTS5 string as written: "...", a '"' inside doubled,
 * and at most a '*' (a prefix) after it.  "a"OR or "a b"^ are not: FTS5
 * would refuse them, so they are searched as a phrase of what they hold. */
static bool search_quoted(const char *v, size_t n)
{
	if (n < 2 || v[0] != '"')
		return false;
	for (size_t i = 1; i < n; i++) {
		if (v[i] != '"')
			continue;
		if (i + 1 < n && v[i + 1] == '"') {
			i++;
			continue;
		}
		return i + 1 == n || (i + 2 == n && v[i + 1] == '*');
	}
	return false;
}

static bool search_bareword(const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (!(isalnum(c) || c == '_' || c >= 0x80 || (c == '*' && i == n - 1 && i)))
			return false;
	}
	return n > 0;
}

static void search_column_filter(char out[SEARCH_FILTER_MAX], const char *column)
{
	snprintf(out, SEARCH_FILTER_MAX, "\"%s\" : ", column);
}

/* `"column" : "v"`: a phrase in one column of mail_fts. */
static int search_column_phrase(struct dynbuf *e, const char *column, const char *v, size_t n)
{
	char filter[SEARCH_FILTER_MAX];
	search_column_filter(filter, column);
	int r = dynbuf_puts(e, filter);
	return r ? r : search_phrase(e, v, n);
}

/* Two digits at v, as a number. */
static int search_2digits(const char *v)
{
	return (v[0] - '0') * 10 + (v[1] - '0');
}

/* A prefix of the stored dates' form, YYYY-MM-DDTHH:MM:SS (UTC), cut after
 * the year, month, day, hour, minute or second, each field in its range
 * (a day 01-31 whatever the month: as a range's bound, 02-30 is still a
 * bound; a day alone is checked against its month, search_date).
 * Anything else (notmuch's "yesterday", a month 13) would match nothing,
 * silently. */
static bool search_date_valid(const char *v, size_t n)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	if (n != 4 && n != 7 && n != 10 && n != 13 && n != 16 && n != 19)
		return false;
	for (size_t i = 0; i < n; i++)
		if (shape[i] == 'd' ? !isdigit((unsigned char)v[i]) : v[i] != shape[i])
			return false;
	return (n < 7 || (search_2digits(v + 5) >= 1 && search_2digits(v + 5) <= 12)) &&
	       (n < 10 || (search_2digits(v + 8) >= 1 && search_2digits(v + 8) <= 31)) &&
	       (n < 13 || search_2digits(v + 11) <= 23) && (n < 16 || search_2digits(v + 14) <= 59) &&
	       (n < 19 || search_2digits(v + 17) <= 60);   /* a leap second */
}

/* date:A..B, date:A.., date:..B, date:A: prefixes of the stored ISO dates,
 * so a year, a month or a day bounds the range inclusively. */
static int search_date(struct search *s, bool negate, const char *v, size_t n)
{
	const char *dots = memmem(v, n, "..", 2);
	size_t lon = dots ? (size_t)(dots - v) : n, hin = dots ? n - lon - 2 : 0;
	if (!lon && !hin) {
		snprintf(s->error, sizeof(s->error), "date: needs a date (date:2023-01..2023-06)");
		return -EINVAL;
	}
	const char *bad = lon && !search_date_valid(v, lon) ? v
	                : hin && !search_date_valid(dots + 2, hin) ? dots + 2 : NULL;
	if (bad) {
		snprintf(s->error, sizeof(s->error),
		         "date: '%.*s' is not a date (YYYY, YYYY-MM, YYYY-MM-DD, then THH, :MM, :SS)",
		         (int)(bad == v ? lon : hin), bad);
		return -EINVAL;
	}
	/* a day alone (no range) past its month's end names no day, and
	 * would match nothing, silently */
	if (lon == n && lon >= 10) {
		int y = search_2digits(v) * 100 + search_2digits(v + 2), m = search_2digits(v + 5);
		if (search_2digits(v + 8) > date_days_in_month(y, m)) {
			snprintf(s->error, sizeof(s->error), "date: '%.10s' is not a date: %.7s has %d days",
			         v, v, date_days_in_month(y, m));
			return -EINVAL;
		}
	}
	/* a date at or after A (to A's length) and at or before B (to B's)
	 * exists unless A is past B where both have digits */
	if (lon && hin && memcmp(v, dots + 2, lon < hin ? lon : hin) > 0) {
		snprintf(s->error, sizeof(s->error), "date: '%.*s' is after '%.*s': the range is empty",
		         (int)lon, v, (int)hin, dots + 2);
		return -EINVAL;
	}
	int lo = lon ? search_bind(s, v, lon) : 0;
	int hi = !dots ? lo : hin ? search_bind(s, dots + 2, hin) : 0;
	if (lo < 0 || hi < 0)
		return lo < 0 ? lo : hi;
	int r = dynbuf_printf(&s->where, " AND %s(m.date IS NOT NULL", negate ? "NOT " : "");
	if (r == 0 && lo)
		r = dynbuf_printf(&s->where, " AND substr(m.date, 1, length(?%d)) >= ?%d", lo, lo);
	if (r == 0 && hi)
		r = dynbuf_printf(&s->where, " AND substr(m.date, 1, length(?%d)) <= ?%d", hi, hi);
	return r ? r : dynbuf_putc(&s->where, ')');
}

/* A word's FTS5 punctuation, read against what is open before it: "(" (any
 * number), then "NEAR(", before it; after it, ")" that close NEAR or an
 * open group and, inside NEAR, ",".  Anything else is the word's own (a
 * smiley's ")", the "," of "carl,"), as FTS5 would refuse it bare. */
struct search_word {
	const char *w;          /* the word as written */
	size_t n, lead, trail;  /* its length, the punctuation's before and after */
	int opens, closes;      /* "(" groups it opens, ")" that close groups */
	bool near, near_closed; /* it opens NEAR(, a ")" of it closes NEAR */
};

static struct search_word search_word(const struct search *s, const char *w, size_t n)
{
	struct search_word sw = { .w = w, .n = n };
	while (!s->in_near && sw.lead < n && w[sw.lead] == '(')
		sw.lead++, sw.opens++;
	if (!s->in_near && n - sw.lead >= 5 && !memcmp(w + sw.lead, "NEAR(", 5))
		sw.lead += 5, sw.near = true;
	bool near = s->in_near || sw.near;
	int open = s->depth + sw.opens;
	while (sw.trail < n - sw.lead) {
		char c = w[n - 1 - sw.trail];
		if (c == ')' && near && !sw.near_closed)
			sw.near_closed = true;
		else if (c == ')' && open > sw.closes)
			sw.closes++;
		else if (!(c == ',' && near && !sw.near_closed))
			break;
		sw.trail++;
	}
	return sw;
}

/* A byte FTS5's tokenizer keeps in a token: a letter or digit, and, for
 * this count, every byte past ASCII. */
static bool search_token_byte(char c)
{
	return isalnum((unsigned char)c) || (unsigned char)c >= 0x80;
}

/* Whether v has a token: a phrase without matches nothing, and negated,
 * every message. */
static bool search_has_token(const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (search_token_byte(v[i]))
			return true;
	return false;
}

/* FTS5's operators, as whole words. */
static bool search_operator(const char *w, size_t n)
{
	return (n == 2 && !memcmp(w, "OR", 2)) || (n == 3 && (!memcmp(w, "AND", 3) || !memcmp(w, "NOT", 3)));
}

/* A negated group: FTS5's NOT is binary, and a group's words are not one
 * condition. */
#define SEARCH_NO_NEGATED_GROUP "a group cannot be negated: negate its words (-subject:a -subject:b)"

/* A column's NEAR( ) written as FTS5 takes it only inside a group: its
 * value would be searched as the phrase "NEAR a". */
#define SEARCH_NEAR_IN_GROUP "a column's NEAR( ) is written in a group: subject:(NEAR(a b))"

static bool search_near_value(const char *v, size_t n)
{
	return n >= 5 && !memcmp(v, "NEAR(", 5);
}

/* A negated word or value of no token (search_has_token). */
#define SEARCH_NOTHING_TO_NEGATE "no letter or digit to negate (it would be every message)"

/* Refuses the query at word: the word, then why, in the error.  -EINVAL. */
static int search_refuse(struct search *s, const char *word, size_t wn, const char *why, ...)
	__attribute__((format(printf, 4, 5)));
static int search_refuse(struct search *s, const char *word, size_t wn, const char *why, ...)
{
	/* cut (a query of 100 KB in one phrase is one word); escaped with the
	 * rest of the reason (ingest_search) */
	int k = snprintf(s->error, sizeof(s->error), "%.*s%s: ", (int)(wn < 64 ? wn : 64), word,
	                 wn > 64 ? "..." : "");
	if (k >= 0 && (size_t)k < sizeof(s->error)) {
		va_list ap;
		va_start(ap, why);
		vsnprintf(s->error + k, sizeof(s->error) - (size_t)k, why, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* FTS5's column filter as written: "col:..." for a column of mail_fts
 * (in any case, as FTS5 takes it), or a "{col col}:" set.  A word with
 * another ':' (10:30, http://x, Re:) is no filter: FTS5 would refuse it. */
static bool search_fts_filter(const char *w, size_t n)
{
	static const char *const names[] = { INDEX_FTS_COLUMN_LIST(INDEX_FTS_COLUMN_NAME) };
	const char *colon = memchr(w, ':', n);
	if (!colon)
		return false;
	size_t k = (size_t)(colon - w);
	if (k && w[0] == '{')
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (k == strlen(names[i]) && !strncasecmp(w, names[i], k))
			return true;
	return false;
}

/* A column filter word (search_fts_filter) as FTS5 takes it: "col:" and
 * its value as written when FTS5 reads it so (a bareword, "a phrase", a
 * group), else as a phrase (text:example.org). */
static int search_filter_value(struct dynbuf *b, const char *w, size_t n)
{
	const char *colon = memchr(w, ':', n);
	size_t k = (size_t)(colon - w) + 1;
	int r = dynbuf_append(b, w, k);
	const char *v = w + k;
	size_t vn = n - k;
	/* an operator's word (text:OR) is the word: FTS5 would take the
	 * operator and want its operands */
	if (r == 0)
		r = !vn || search_quoted(v, vn) || v[0] == '(' || (search_bareword(v, vn) && !search_operator(v, vn))
		        ? dynbuf_append(b, v, vn)
		        : search_phrase(b, v, vn);
	return r;
}

/* Appends a word to the MATCH expression: the join, a column filter (the
 * `"from" : ` of a from:( ) group, or NULL), the punctuation before, the
 * operand (op, a column's phrase; or the core as FTS5 syntax), the
 * punctuation after.  Words join with a space, FTS5's implicit AND, which
 * also drops a phrase of no tokens ("-") as a word FTS5 reads would be;
 * " AND " only next to a "( )" group, which FTS5 does not join implicitly
 * ("(a) b" is an error). */
static int search_fts_word(struct search *s, const struct search_word *sw, const char *filter,
                           const char *op, size_t opn)
{
	const char *core = sw->w + sw->lead;
	size_t n = sw->n - sw->lead - sw->trail;
	bool oper = !op && !sw->lead && !sw->trail && search_operator(core, n);
	/* FTS5's operators are binary: one at the start, after "(" (its own
	 * or a column group's) or after another has no left side, one before
	 * ")" no right side */
	bool core_oper = !op && search_operator(core, n);
	if (core_oper && (sw->lead || filter || s->end == SEARCH_START || s->end == SEARCH_OPERATOR))
		return search_refuse(s, sw->w, sw->n, "nothing before it (AND, OR and NOT join two words)");
	if (core_oper && sw->trail)
		return search_refuse(s, sw->w, sw->n, "nothing after it (AND, OR and NOT join two words)");
	if (oper && n == 2 && !s->depth && !s->in_near)
		s->top_or = true;
	bool operand = !oper && (sw->lead || n || op);
	bool and = (operand && s->end == SEARCH_GROUP) ||
	           (sw->opens && (s->end == SEARCH_PHRASE || s->end == SEARCH_GROUP));
	int r = s->fts.len ? dynbuf_puts(&s->fts, and ? " AND " : " ") : 0;
	if (r == 0 && filter)
		r = dynbuf_puts(&s->fts, filter);
	if (r == 0)
		r = dynbuf_append(&s->fts, sw->w, sw->lead);
	if (r == 0 && op)
		r = dynbuf_append(&s->fts, op, opn);
	/* inside NEAR, "b,10" is a phrase and the distance */
	const char *comma = s->in_near || sw->near ? memchr(core, ',', n) : NULL;
	size_t word = comma ? (size_t)(comma - core) : n;
	/* as written where FTS5 takes it (a bareword, "a phrase", pre*,
	 * column:word); a word it would refuse becomes a phrase */
	bool quoted = search_quoted(core, word);
	bool filtered = !quoted && search_fts_filter(core, word);
	bool keep = word && (quoted || search_bareword(core, word) || filtered);
	const char *value = filtered ? (const char *)memchr(core, ':', word) + 1 : core;
	/* NEAR's distance ("NEAR(. ., 10)") is no word to search for */
	s->fts_token |= !oper && !s->near_comma && search_has_token(value, word - (size_t)(value - core));
	if (r == 0 && !op && word)
		r = !keep ? search_phrase(&s->fts, core, word)
		  : !quoted && !search_bareword(core, word) ? search_filter_value(&s->fts, core, word)
		  : dynbuf_append(&s->fts, core, word);
	if (r == 0 && comma)
		r = dynbuf_printf(&s->fts, ", %.*s", (int)(n - word - 1), comma + 1);
	if (r == 0)
		r = dynbuf_append(&s->fts, sw->w + sw->n - sw->trail, sw->trail);
	s->depth += sw->opens - sw->closes;
	if (s->depth <= s->group_depth) {
		s->group_column = -1;   /* the from:( ) group closed */
		s->group_names[0] = '\0';
	}
	s->in_near = (s->in_near || sw->near) && !sw->near_closed;
	s->near_comma = s->in_near && !comma && memchr(sw->w + sw->n - sw->trail, ',', sw->trail);
	s->end = oper ? SEARCH_OPERATOR
	       : sw->closes ? SEARCH_GROUP
	       : n || op || sw->near_closed ? SEARCH_PHRASE
	       : sw->lead ? SEARCH_OPERATOR : s->end;
	return r;
}

#define SEARCH_SPACE " \t\n\v\f\r"

/* Whether the column name (nn bytes) is one of names: a column's name,
 * or a set as written ("{subject text}"), in any case. */
static bool search_names_have(const char *names, const char *name, size_t nn)
{
	const char *p = names + (names[0] == '{');
	for (;;) {
		p += strspn(p, SEARCH_SPACE);
		size_t k = strcspn(p, SEARCH_SPACE "}");
		if (!k)
			return false;
		if (k == nn && !strncasecmp(p, name, nn))
			return true;
		p += k;
	}
}

/* A word after its "(" and "-": where a column filter would start. */
static struct str search_word_core(const char *w, size_t n)
{
	while (n && (*w == '(' || *w == '-')) {
		w++;
		n--;
	}
	return (struct str){ w, n };
}

/* Whether a word is, after its "(" and "-", a column's group (text:( ),
 * {a b}:( ), from:( )). */
static bool search_word_groups(const char *w, size_t n)
{
	struct str c = search_word_core(w, n);
	const char *colon = c.n ? memchr(c.p, ':', c.n) : NULL;
	return colon && colon + 1 < c.p + c.n && colon[1] == '(' && search_fts_filter(c.p, c.n);
}

/* Inside a group, a word that names columns (from:x, text:x, {a b}:x,
 * after its "(" and "-") none of which the group has can only match
 * nothing: FTS5 keeps the columns both name.  true, and *name is what the
 * word names. */
static bool search_group_clash(const struct search *s, const char *w0, size_t n0, struct str *name)
{
	if (!s->group_names[0])
		return false;
	struct str c = search_word_core(w0, n0);
	const char *w = c.p;
	size_t n = c.n;
	if (!n || !search_fts_filter(w, n))
		return false;
	const char *colon = memchr(w, ':', n);
	*name = (struct str){ w, (size_t)(colon - w) };
	if (w[0] != '{')
		return !search_names_have(s->group_names, w, name->n);
	for (const char *p = w + 1; p < colon && *p != '}';) {
		p += strspn(p, SEARCH_SPACE);
		size_t k = strcspn(p, SEARCH_SPACE "}:");
		if (k && search_names_have(s->group_names, p, k))
			return false;
		p += k;
	}
	return true;
}

/* The refusal of a word search_group_clash() found. */
static int search_refuse_clash(struct search *s, const char *word, size_t wn, struct str name)
{
	return search_refuse(s, word, wn, "inside %s:( ), a phrase of %.*s: can only match nothing",
	                     s->group_names, (int)name.n, name.p);
}

/* A phrase in column col (-1: any) joins the expression: the snippet's
 * column is the one all phrases are in, if they are. */
static void search_column_seen(struct search *s, int col)
{
	s->column = s->column == SEARCH_COLUMN_NONE || s->column == col ? col : -1;
}

/* from:(a OR b), to:(...), subject:(...): FTS5's column filter on the
 * group, `"from" : (a OR b)`, so that every word in it is the column's
 * (README, "Searching"); filter is that `"from" : `, or a column set's
 * `{subject text}:` as written (col -1: no one column).  word's own "("
 * before the prefix (lead of them) go first, as a word of their own;
 * group is the value, from its "(" to the word's end, read against the
 * groups then open. */
static int search_column_group(struct search *s, const char *word, size_t lead, const char *filter,
                               int col, const char *names, size_t names_n, const char *group, size_t n)
{
	/* a group inside another (this one, or its first word) is refused:
	 * FTS5's nesting is not followed here (a group's depth would end at
	 * the inner one's ")") */
	size_t wn = (size_t)(group + n - word);
	if (s->group_names[0] || search_word_groups(group, n))
		return search_refuse(s, word, wn, "a group inside a column's group: put its words in the"
		                     " one group");
	int r = 0;
	if (lead) {
		struct search_word before = search_word(s, word, lead);
		search_column_seen(s, s->group_column);
		r = search_fts_word(s, &before, NULL, NULL, 0);
	}
	struct search_word sw = search_word(s, group, n);
	s->group_column = col;
	s->group_depth = s->depth;
	snprintf(s->group_names, sizeof(s->group_names), "%.*s", (int)names_n, names);
	/* the group's first word, which came with its prefix */
	struct str clash;
	if (search_group_clash(s, group, n, &clash))
		return search_refuse_clash(s, word, wn, clash);
	search_column_seen(s, col);
	return r ? r : search_fts_word(s, &sw, filter, NULL, 0);
}

/* thread:N names a thread by the docid of one of its messages (index.c):
 * a number from 1, in SQLite's integers; anything else (thread:abc,
 * thread:1e3, thread:-1) would match nothing, silently. */
static bool search_thread_valid(const char *v, size_t n)
{
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)v[i]) || i == 19)
			return false;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	return x >= 1 && x <= INT64_MAX;
}

/* tag:T: T one of the tags a Maildir message gets (index.c's ingest_tags:
 * the flags' names, io/maildir.c, and "unread"), in any case, into
 * out as stored; anything else would match nothing, silently. */
static bool search_tag(const char *v, size_t n, char out[16])
{
	const char *name = n == 6 && !strncasecmp(v, "unread", 6) ? "unread" : NULL;
	for (const char *l = "DFPRST"; !name && *l; l++) {
		const char *t = maildir_flag_tag(*l);
		if (strlen(t) == n && !strncasecmp(v, t, n))
			name = t;
	}
	if (name)
		snprintf(out, 16, "%s", name);
	return name != NULL;
}

/* One word of the query. */
static int search_term(struct search *s, const char *word, size_t wn)
{
	static const char *const columns[] = { INDEX_FTS_COLUMN_LIST(INDEX_FTS_COLUMN_NAME) };
	/* col: its column of mail_fts, or -1: an SQL condition,
	 * with IS where the column may be NULL, so that the negated condition
	 * holds there.  folder is NULL outside a Maildir (README, "Records"):
	 * INBOX, the top Maildir's "", is no mbox's or loose file's. */
	static const struct { const char *prefix; int col; const char *cond; } prefixes[] = {
		{ "from:", INDEX_FTS_FROM, NULL },
		{ "to:", INDEX_FTS_TO, NULL },
		{ "subject:", INDEX_FTS_SUBJECT, NULL },
		{ "tag:", -1, "EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = @)" },
		{ "folder:", -1, "m.folder IS (CASE WHEN @ = 'INBOX' THEN '' ELSE @ END)" },
		{ "thread:", -1, "m.thread_id IS @" },
		{ "id:", -1, "m.message_id IS @" },
		{ "date:", -1, NULL },
	};
	struct search_word sw = search_word(s, word, wn);
	const char *w = word + sw.lead;
	size_t n = wn - sw.lead - sw.trail;
	bool negate = n > 1 && w[0] == '-';
	const char *v = w + negate;
	size_t vn = n - negate;
	bool has = vn == 14 && !strncasecmp(v, "has:attachment", 14);
	/* notmuch's query of every message, as a word of its own: no term.
	 * Beside an operator or inside a group it would leave FTS5 an
	 * operand short, or be FTS5's phrase "*", which matches nothing. */
	bool oper = !sw.lead && !sw.trail && search_operator(w, n);
	bool star = !negate && n == 1 && w[0] == '*';
	if (star && (sw.lead || sw.trail || s->depth || s->in_near))
		return search_refuse(s, word, wn, "* (every message) is a word of its own, not inside ( ) or NEAR( )");
	if ((star && s->end == SEARCH_OPERATOR) || (oper && s->after_star))
		return search_refuse(s, word, wn, "* (every message) cannot join with AND, OR or NOT");
	/* "a tag:x OR b" would be (a OR b) AND tag:x: refused, as a
	 * condition after an operator is */
	if (oper && s->after_condition)
		return search_refuse(s, word, wn, "cannot follow a condition (tag:, date:, a negated word"
		                     " and the like always join with AND)");
	s->after_star = star;
	s->after_condition = false;
	if (star)
		return 0;
	if (!has && vn >= 4 && !strncasecmp(v, "has:", 4))
		return search_refuse(s, word, wn, "has: knows has:attachment only");
	size_t i = 0;
	for (; !has && i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (vn >= strlen(prefixes[i].prefix) && !strncasecmp(v, prefixes[i].prefix, strlen(prefixes[i].prefix)))
			break;
	bool prefixed = has || i < sizeof(prefixes) / sizeof(prefixes[0]);
	int col = prefixed && !has ? prefixes[i].col : -1;
	size_t pl = prefixed && !has ? strlen(prefixes[i].prefix) : 0;
	bool group = (col >= 0 || (negate && !prefixed)) && vn > pl && v[pl] == '(';
	/* -WORD: FTS5's NOT is binary, so a negated word is a condition */
	bool condition = negate || (prefixed && col < 0);
	/* a condition is SQL's, joined with AND outside FTS5's expression: it
	 * cannot sit in a group or follow an operator; NEAR takes phrases */
	const char *refused = NULL;
	if (group && negate)
		refused = SEARCH_NO_NEGATED_GROUP;
	else if (col >= 0 && search_near_value(v + pl, vn - pl))
		refused = negate ? SEARCH_NO_NEGATED_GROUP : SEARCH_NEAR_IN_GROUP;
	else if (condition && (s->depth || s->in_near || sw.lead || sw.trail))
		refused = "a condition cannot be inside ( ) or NEAR( )";
	else if (condition && s->end == SEARCH_OPERATOR)
		refused = "a condition cannot follow AND, OR or NOT (it always joins with AND)";
	else if (prefixed && (s->in_near || sw.near))
		refused = "NEAR( ) takes words and phrases, not from:, to: or subject:";
	if (refused)
		return search_refuse(s, word, wn, "%s", refused);
	s->after_condition = condition;
	s->conditions |= condition;
	/* FTS5 keeps, inside a column's group, the phrases of another column
	 * in both: none */
	struct str clash;
	if (col >= 0 && search_group_clash(s, v, vn, &clash))
		return search_refuse_clash(s, word, wn, clash);
	if (has)
		return search_where(s, negate, "EXISTS (SELECT 1 FROM attachments a WHERE a.message = m.docid)",
		                    NULL, 0);
	if (!prefixed && negate) {
		/* a message without the word: the word as FTS5 would read it
		 * (a phrase, or column:word) */
		if (vn == 1 && v[0] == '*')
			return search_refuse(s, word, wn, "every message but every message is none");
		/* a column filter's ':', whose value must have a token
		 * ("-text:." has none) */
		const char *fc = search_fts_filter(v, vn) ? memchr(v, ':', vn) : NULL;
		if (fc && v[vn - 1] == ':')
			return search_refuse(s, word, wn, "a column filter needs a value");
		if (fc && (fc[1] == '(' || search_near_value(fc + 1, (size_t)(v + vn - fc - 1))))
			return search_refuse(s, word, wn, SEARCH_NO_NEGATED_GROUP);   /* as -subject:( ) is */
		if (!search_has_token(fc ? fc + 1 : v, fc ? vn - (size_t)(fc + 1 - v) : vn))
			return search_refuse(s, word, wn, SEARCH_NOTHING_TO_NEGATE);
		struct dynbuf e;
		dynbuf_init(&e, 0);
		int r = fc ? search_filter_value(&e, v, vn)
		      : search_bareword(v, vn) && !search_operator(v, vn) ? dynbuf_append(&e, v, vn)
		      : vn >= 2 && v[0] == '"' && v[vn - 1] == '"' ? search_phrase(&e, v + 1, vn - 2)
		      : search_phrase(&e, v, vn);
		if (r == 0)
			r = search_where(s, false, "m.docid NOT IN (SELECT rowid FROM mail_fts WHERE mail_fts MATCH @)",
			                 e.p, e.len);
		dynbuf_release(&e);
		return r;
	}
	if (!prefixed) {
		/* a word, an operator, FTS5's own syntax: in any column, or the
		 * column of the from:( ) group it is in (a column filter of
		 * another column there could only match nothing) */
		const char *colon = search_fts_filter(w, n) ? memchr(w, ':', n) : NULL;
		if (colon && w[n - 1] == ':')
			return search_refuse(s, word, wn, "a column filter needs a value");
		if (colon && search_near_value(colon + 1, (size_t)(w + n - colon - 1)))
			return search_refuse(s, word, wn, SEARCH_NEAR_IN_GROUP);
		/* text:( ), attachments:( ): a column's group, as from:( ) is;
		 * {subject text}:( ) a set's, whose words are any of its
		 * columns' */
		char filter[SEARCH_FILTER_MAX];
		if (colon && colon[1] == '(' && w[0] == '{') {
			int k = snprintf(filter, sizeof(filter), "%.*s ", (int)(colon + 1 - w), w);
			if (k < 0 || (size_t)k >= sizeof(filter))
				return search_refuse(s, word, wn, "not a set of mail_fts's columns");
			return search_column_group(s, word, sw.lead, filter, -1, w, (size_t)(colon - w), colon + 1,
			                           (size_t)(word + wn - colon - 1));
		}
		for (int c = 0; colon && w[0] != '{' && colon[1] == '(' && c < INDEX_FTS__COUNT; c++)
			if ((size_t)(colon - w) == strlen(columns[c]) && !strncasecmp(w, columns[c], strlen(columns[c]))) {
				search_column_filter(filter, columns[c]);
				return search_column_group(s, word, sw.lead, filter, c, columns[c], strlen(columns[c]),
				                           colon + 1,
				                           (size_t)(word + wn - colon - 1));
			}
		if (search_group_clash(s, w, n, &clash))
			return search_refuse_clash(s, word, wn, clash);
		search_column_seen(s, s->group_column);
		return search_fts_word(s, &sw, NULL, NULL, 0);
	}
	if (group) {
		char filter[SEARCH_FILTER_MAX];
		search_column_filter(filter, columns[col]);
		return search_column_group(s, word, sw.lead, filter, col, columns[col], strlen(columns[col]),
		                           v + pl, (size_t)(word + wn - v - pl));
	}
	const char *val = v + pl;
	size_t valn = vn - pl;
	if (valn >= 2 && val[0] == '"' && val[valn - 1] == '"') {
		val++;
		valn -= 2;
	}
	if (!valn)   /* an empty phrase or value matches nothing (or, negated, all) */
		return search_refuse(s, word, wn, "%s needs a value", prefixes[i].prefix);
	if (!strcmp(prefixes[i].prefix, "thread:") && !search_thread_valid(val, valn))
		return search_refuse(s, word, wn, "not a thread (a hit's \"thread\": a number from 1)");
	/* Message-IDs are stored without their angle brackets (README, "Records") */
	if (!strcmp(prefixes[i].prefix, "id:") && valn >= 2 && val[0] == '<' && val[valn - 1] == '>') {
		val++;
		valn -= 2;
		if (!valn)
			return search_refuse(s, word, wn, "id: needs a value");
	}
	if (col >= 0 && !search_has_token(val, valn))
		return search_refuse(s, word, wn, "%s", negate ? SEARCH_NOTHING_TO_NEGATE
		                                               : "no letter or digit: it can only match nothing");
	char tag[16];
	if (!strcmp(prefixes[i].prefix, "tag:")) {
		if (!search_tag(val, valn, tag))
			return search_refuse(s, word, wn, "not a tag (draft, flagged, passed, replied, seen, "
			                     "trashed, unread)");
		val = tag;
	}
	if (col < 0)
		return prefixes[i].cond ? search_where(s, negate, prefixes[i].cond, val, valn)
		                        : search_date(s, negate, val, valn);
	struct dynbuf e;
	dynbuf_init(&e, 0);
	int r = search_column_phrase(&e, columns[col], val, valn);
	if (r == 0 && negate)
		/* FTS5's NOT is binary: a negated term is a condition */
		r = search_where(s, false, "m.docid NOT IN (SELECT rowid FROM mail_fts WHERE mail_fts MATCH @)",
		                 e.p, e.len);
	else if (r == 0) {
		search_column_seen(s, col);
		r = search_fts_word(s, &sw, NULL, e.p, e.len);
	}
	dynbuf_release(&e);
	return r;
}

/* Words split at white space; "..." (also after a prefix) is one word,
 * and so is a word that starts with FTS5's column set, {subject text}:x
 * (after its "(" and a '-'). */
static int search_parse(struct search *s, const char *q)
{
	int r = 0;
	for (const char *p = q; r == 0 && *p;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		const char *w = p, *set = p;
		while (*set == '(')
			set++;
		set += *set == '-';
		bool quoted = false, braced = false;
		while (*p && (quoted || braced || !isspace((unsigned char)*p))) {
			if (*p == '"' && !braced)
				quoted = !quoted;
			else if (*p == '{' && !quoted && (p == set || p[-1] == '('))
				braced = true;
			else if (*p == '}')
				braced = false;
			p++;
		}
		/* what FTS5 would refuse as "syntax error near ...", said */
		if (braced) {
			snprintf(s->error, sizeof(s->error), "a '{' is not closed: a set of columns is"
			         " {subject text}:word");
			return -EINVAL;
		}
		/* what FTS5 matches is tokens: a phrase ("a b", a.b.c) counts
		 * each of its words (SEARCH_MAX_WORDS) */
		int tokens = 0;
		for (const char *c = w; c < p; c++)
			tokens += search_token_byte(*c) && (c == w || !search_token_byte(c[-1]));
		s->words += tokens > 1 ? tokens - 1 : 0;
		if (++s->words > SEARCH_MAX_WORDS) {
			snprintf(s->error, sizeof(s->error), "more than %d words", SEARCH_MAX_WORDS);
			return -EINVAL;
		}
		r = search_term(s, w, (size_t)(p - w));
	}
	/* what FTS5 would refuse as "syntax error near """, said */
	if (r == 0 && s->in_near) {
		snprintf(s->error, sizeof(s->error), "NEAR( is not closed: NEAR(a b) or NEAR(a b, 10)");
		r = -EINVAL;
	} else if (r == 0 && s->depth > 0) {
		snprintf(s->error, sizeof(s->error), "a '(' is not closed");
		r = -EINVAL;
	} else if (r == 0 && s->fts.len && s->end == SEARCH_OPERATOR) {
		snprintf(s->error, sizeof(s->error), "the query ends with AND, OR or NOT: nothing after it");
		r = -EINVAL;
	} else if (r == 0 && s->fts.len && !s->fts_token) {
		/* as from:. is refused: FTS5 skips a phrase of no token beside
		 * others, and one alone matches no row */
		snprintf(s->error, sizeof(s->error), "no letter or digit to search for: it can only match"
		         " nothing");
		r = -EINVAL;
	}
	if (r == 0 && s->top_or && s->conditions) {
		snprintf(s->error, sizeof(s->error),
		         "OR outside ( ) beside a condition (tag:, date:, -word, ...), which joins the whole"
		         " query with AND: group the OR, as (a OR b) tag:x");
		r = -EINVAL;
	}
	return r;
}

/* The columns of one hit, JSON (snippet, rank) or TSV (snippet): only the
 * format printed is selected, as a snippet tokenizes every column of its
 * row.  JSON's are the members before the root, the root, the path, and
 * the members after, which search_line_json puts together. */
static const char search_json[] =
	"SELECT json_object('id', m.id), m.root, m.path, json_object('date', m.date,"
	" 'from', (SELECT group_concat(coalesce(a.name || ' <' || a.address || '>', a.address), ', ')"
	"  FROM addresses a WHERE a.message = m.docid AND a.role = 'from'),"
	" 'subject', m.subject, 'thread', m.thread_id, 'tags', json(m.tags), 'snippet', %s, 'rank', %s)";
static const char search_tsv[] =
	"SELECT m.date, (SELECT group_concat(coalesce(a.name, a.address), ', ') FROM addresses a"
	"  WHERE a.message = m.docid AND a.role = 'from'), m.subject, m.thread_id, m.root, m.path, %s";

/* A JSON line: the root and path, a file's exact bytes (index.c), as a
 * record's (README, "Records": U+FFFD, and the bytes in root_b64 and
 * path_b64 where they are not UTF-8), between the objects SQLite made. */
static int search_line_json(struct dynbuf *out, sqlite3_stmt *st)
{
	const char *head = (const char *)sqlite3_column_text(st, 0);
	size_t head_n = (size_t)sqlite3_column_bytes(st, 0);
	const char *tail = (const char *)sqlite3_column_text(st, 3);
	size_t tail_n = (size_t)sqlite3_column_bytes(st, 3);
	if (!head || !tail || head_n < 2 || tail_n < 2)
		return -ENOMEM;   /* json_object returns an object, or failed */
	int r = dynbuf_append(out, head, head_n - 1);   /* without its '}' */
	for (int col = 1; r == 0 && col <= 2; col++) {
		const char *p = sqlite3_column_blob(st, col);
		size_t n = (size_t)sqlite3_column_bytes(st, col);
		r = dynbuf_putc(out, ',');
		if (r == 0)
			r = json_put_bytes_member(out, col == 1 ? "root" : "path", p, n);
	}
	if (r == 0)
		r = dynbuf_putc(out, ',');
	return r ? r : dynbuf_append(out, tail + 1, tail_n - 1);   /* without its '{' */
}

/* A TSV line: each column escaped as the records' TSV escapes it, and
 * terminal controls too (emit.h), so a line is one line of valid UTF-8
 * and a path keeps its bytes. */
static int search_line_tsv(struct dynbuf *out, sqlite3_stmt *st)
{
	int r = 0;
	for (int col = 0; r == 0 && col < sqlite3_column_count(st); col++) {
		const char *t = (const char *)sqlite3_column_text(st, col);
		if (col)
			r = dynbuf_putc(out, '\t');
		if (r == 0 && t)
			r = emit_escape_terminal(out, t, (size_t)sqlite3_column_bytes(st, col));
	}
	return r;
}

/* Opens name (flags: sqlite3_open_v2's).  A
 * reader may meet the index between a writer's last commit and the
 * removal of its WAL (and SQLite's own checkpoint on close), or beside
 * another reader that closes last: SQLITE_BUSY for a moment, waited out,
 * not an error. */
static int search_open_as(const char *name, int flags, sqlite3 **db)
{
	int rc = flags & SQLITE_OPEN_URI ? sqlite3_open_v2(name, db, flags, NULL)
	                                 : db_open_path(name, db, flags);
	return rc == SQLITE_OK ? sqlite3_busy_timeout(*db, 5000) : rc;
}

/* How search_open opened the index. */
enum search_opened {
	SEARCH_READ,         /* read-only, with its -shm */
	SEARCH_IMMUTABLE,    /* as immutable: no -shm could be made */
	SEARCH_WAL_IN_WAY,   /* no -shm could be made, and a -wal is there */
};

/* Opens the index read-only: a search changes nothing, not even a database
 * that turns out not to be ingest's (a connection that may write would
 * roll back its hot journal, or checkpoint its WAL, before the check).  A
 * database in WAL mode needs its -shm file written even to be read: where
 * the reader cannot create it (a directory not its own: SQLITE_READONLY;
 * a read-only file system: SQLITE_CANTOPEN, for a file that is there) and
 * no writer is at work (no -wal file: the last writer removed it when it
 * closed), the file is read as immutable, which takes no lock and writes
 * nothing (README, "Searching").  An SQLite code. */
static int search_open(const char *path, bool there, sqlite3 **db, enum search_opened *how)
{
	*how = SEARCH_READ;
	int rc = search_open_as(path, SQLITE_OPEN_READONLY, db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(*db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
	if ((rc & 0xff) != SQLITE_READONLY && ((rc & 0xff) != SQLITE_CANTOPEN || !there))
		return rc;
	struct dynbuf u;
	dynbuf_init(&u, 0);
	int r = dynbuf_printf(&u, "%s-wal", path);
	bool wal = r == 0 && dynbuf_putc(&u, '\0') == 0 && access(u.p, F_OK) == 0;
	*how = wal ? SEARCH_WAL_IN_WAY : SEARCH_IMMUTABLE;
	dynbuf_reset(&u);
	/* file:PATH, every byte but a path's plain ones %-escaped, a leading
	 * "//" (a URI's authority) made one '/' */
	while (path[0] == '/' && path[1] == '/')
		path++;
	r = r || wal ? -1 : dynbuf_puts(&u, "file:");
	for (const char *c = path; r == 0 && *c; c++)
		r = isalnum((unsigned char)*c) || strchr("/._-", *c) ? dynbuf_putc(&u, *c)
		                                                      : dynbuf_printf(&u, "%%%02X", (unsigned char)*c);
	if (r == 0)
		r = dynbuf_puts(&u, "?immutable=1");
	if (r == 0 && dynbuf_putc(&u, '\0') == 0) {
		sqlite3_close(*db);
		*db = NULL;
		rc = search_open_as(u.p, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, db);
	}
	dynbuf_release(&u);
	return rc;
}

/* A read-only connection cannot remove the -wal and -shm files it made
 * (or found) when it closes, and every search left them beside the index;
 * one that may write removes them when it closes last (a run writing
 * keeps them).  Opened only on ingest's own index, in WAL mode: it has no
 * rollback journal to replay, and at most a checkpoint to finish, which
 * the next run would do.  Where the file cannot be written, SQLite opens
 * it read-only and nothing changes. */
static void search_tidy(const char *path)
{
	sqlite3 *db;
	if (search_open_as(path, SQLITE_OPEN_READWRITE, &db) == SQLITE_OK)
		sqlite3_exec(db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
	sqlite3_close(db);
}

int search_order_flag(const char *name)
{
	return !strcmp(name, "relevance") ? 0
	     : !strcmp(name, "newest-first") ? INGEST_SEARCH_NEWEST
	     : !strcmp(name, "oldest-first") ? INGEST_SEARCH_OLDEST : -1;
}

/* Whether the FTS query matches SEARCH_FEW_MATCHES messages or more,
 * counted up to there; below, the count is rk's (rank_set_matches: a
 * one-phrase query's IDF, which FTS5 would count again).  false when it
 * cannot say: the search's own statement then meets the same error and
 * reports it. */
static bool search_matches_many(sqlite3 *db, const struct dynbuf *fts, struct rank *rk)
{
	sqlite3_stmt *st = NULL;
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT 1 FROM mail_fts WHERE mail_fts MATCH ?1"
	         " LIMIT %d)", SEARCH_FEW_MATCHES);
	int n = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	        sqlite3_bind_text(st, 1, fts->p, (int)fts->len, SQLITE_STATIC) == SQLITE_OK &&
	        sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	if (n < SEARCH_FEW_MATCHES)
		rank_set_matches(rk, n);
	return n >= SEARCH_FEW_MATCHES;
}

/* The search's statement: its hits' lines, at most lim (-1: all) in the
 * order flags ask, or with INGEST_SEARCH_COUNT their number.  ?1 is the
 * FTS query, ?2... the conditions' values; rk (or NULL) is told what a
 * date order counts of the matches.  0 or -ENOMEM. */
static int search_sql(struct dynbuf *sql, sqlite3 *db, const struct search *s, int flags, long long lim,
                      struct rank *rk)
{
	bool tsv = flags & INGEST_SEARCH_TSV, oldest = flags & INGEST_SEARCH_OLDEST;
	bool by_date = flags & (INGEST_SEARCH_NEWEST | INGEST_SEARCH_OLDEST);
	bool count = flags & INGEST_SEARCH_COUNT, fts = s->fts.len > 0;
	const char *rank = fts ? "f.rank" : "NULL";
	/* FTS5's snippet of column -1 tokenizes every column of a printed
	 * row to find the one whose fragment scores best, and only a column
	 * holding a phrase's hit scores at all: where every phrase is in one
	 * column (from:, to:, subject:), the snippet of that column is the
	 * same text without tokenizing the others, the body first
	 * (bench/INDEX.md, "2026-12-05: search, the snippet of one column") */
	char snippet_fts[224];
	snprintf(snippet_fts, sizeof(snippet_fts), "CASE WHEN ingest_matches(mail_fts) <= %d"
	         " THEN snippet(mail_fts, %d, '[', ']', '...', 12) ELSE %s END", SEARCH_SNIPPET_MATCHES,
	         s->column >= 0 ? s->column : -1, SEARCH_TEXT_START);
	const char *snippet = fts ? snippet_fts : SEARCH_TEXT_START;
	int r = count ? dynbuf_puts(sql, "SELECT count(*)")
	        : tsv ? dynbuf_printf(sql, search_tsv, snippet)
	              : dynbuf_printf(sql, search_json, snippet, rank);
	static const char from_fts[] = " FROM mail_fts f CROSS JOIN messages m ON m.docid = f.rowid"
	                               " WHERE mail_fts MATCH ?1";
	/* Dated hits in date order, the undated after them (newest first)
	 * or before (oldest first: an undated message is as old as can be,
	 * as notmuch has it), ties in docid order, which is the order the
	 * messages came in */
	const char *date_order = oldest ? "m.date, m.docid" : "m.date DESC, m.docid";
	if (r == 0)
		r = dynbuf_puts(sql, fts ? from_fts : count ? " FROM messages m WHERE 1"
		                                      : " FROM messages m LEFT JOIN mail_fts f"
		                                        " ON f.rowid = m.docid WHERE 1");
	if (r == 0 && fts && !count)
		r = dynbuf_puts(sql, " AND f.rank MATCH 'ingest_bm25(8.0, 4.0, 2.0, 1.0, 2.0)'");
	/* Matches by date: the docids of the `limit` first by date, then the
	 * line of each of them (FTS5 takes the docids as rowid = constraints
	 * of the same MATCH).  An ORDER BY over the lines would build every
	 * match's snippet and addresses before sorting, where rank's order
	 * escapes that inside FTS5.  The docids come from one of two plans
	 * (bench/INDEX.md, "search by date"): a few matches, each looked up
	 * for its date (a table page each); many, the date index walked
	 * from the end, each entry kept when the match set has its docid,
	 * until `limit` are found (a few pages where the matches are many,
	 * the whole index, ~6 ms at 100,000 messages, where none is) */
	/* A prefix word (FTS5 runs the whole MATCH again for each rowid =
	 * it is given, its expansion into every word it covers once a line:
	 * 674 ms for a* at 20,000 messages) has the lines' matches walked
	 * once instead, the docids a filter (+f.rowid: no constraint for
	 * FTS5), where a plain word's walk would cost more than its lookups */
	const char *walk = fts && memchr(s->fts.p, '*', s->fts.len) ? "+" : "";
	if (r == 0 && fts && by_date && !count)
		r = search_matches_many(db, &s->fts, rk)
		    ? dynbuf_printf(sql, " AND %sf.rowid IN (SELECT m.docid FROM messages m INDEXED BY"
		                         " messages_date WHERE m.docid IN (SELECT rowid FROM mail_fts"
		                         " WHERE mail_fts MATCH ?1)", walk)
		    : dynbuf_printf(sql, " AND %sf.rowid IN (SELECT f.rowid%s", walk, from_fts);
	if (r == 0)
		r = dynbuf_append(sql, s->where.p ? s->where.p : "", s->where.len);
	if (r == 0 && fts && by_date && !count)
		r = dynbuf_printf(sql, " ORDER BY %s LIMIT %lld)", date_order, lim);
	if (r == 0 && !count)
		r = dynbuf_printf(sql, " ORDER BY %s LIMIT %lld", fts && !by_date ? "f.rank" : date_order,
		                  lim);
	return r;
}

int ingest_search(const char *db_path, const char *query, int flags, unsigned long limit, int fd,
                  char **error)
{
	if (error)
		*error = NULL;
	bool tsv = flags & INGEST_SEARCH_TSV;
	bool by_date = flags & (INGEST_SEARCH_NEWEST | INGEST_SEARCH_OLDEST);
	bool count = flags & INGEST_SEARCH_COUNT;
	struct search s = { .column = SEARCH_COLUMN_NONE, .group_column = -1, .group_depth = -1 };
	dynbuf_init(&s.fts, 0);
	dynbuf_init(&s.where, 0);
	struct dynbuf sql;
	dynbuf_init(&sql, 0);
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = SQLITE_OK, r = db_path && query ? search_parse(&s, query) : -EINVAL;
	if (r == -EINVAL && !s.error[0])
		snprintf(s.error, sizeof(s.error), "no database or no query");
	const int known = INGEST_SEARCH_TSV | INGEST_SEARCH_NEWEST | INGEST_SEARCH_OLDEST | INGEST_SEARCH_COUNT;
	const int both = INGEST_SEARCH_NEWEST | INGEST_SEARCH_OLDEST;
	if (r == 0 && (flags & ~known)) {
		snprintf(s.error, sizeof(s.error), "flags %#x: an unknown bit", (unsigned)flags);
		r = -EINVAL;
	} else if (r == 0 && (flags & both) == both) {
		snprintf(s.error, sizeof(s.error), "flags %#x: both orders", (unsigned)flags);
		r = -EINVAL;
	}
	if (r == 0 && !s.words) {
		snprintf(s.error, sizeof(s.error), "the query has no words (* is every message)");
		r = -EINVAL;
	}
	const char *why = s.error[0] ? s.error : NULL;
	/* SQLite would open a FIFO and wait on it for good, and read a
	 * directory's or a device's errors as its own; a path that is not
	 * there is left to it (its errno says so) */
	struct statx stx;
	bool there = r == 0 && sys_statx(AT_FDCWD, db_path, 0, STATX_TYPE, &stx) == 0;
	if (there && !S_ISREG(stx.stx_mode)) {
		why = "not a regular file";
		r = -EINVAL;
	}
	enum search_opened how = SEARCH_READ;
	bool ours = false;
	if (r == 0) {
		size_t full;
		int max;
		rc = search_open(db_path, there, &db, &how);
		sqlite3_stmt *chk = NULL;
		/* A search reads most pages once: SQLite's default 2 MB page
		 * cache would be fresh heap, one page fault per page read,
		 * about 1 ms of a 7 ms command (bench/INDEX.md, "Since the run
		 * below: FTS rows at the commit, ranking inside FTS5") */
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, "PRAGMA cache_size = -256", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_prepare_v2(db, "SELECT application_id, user_version FROM"
			                        " pragma_application_id, pragma_user_version", -1, &chk, NULL);
		int step = rc == SQLITE_OK ? sqlite3_step(chk) : rc;
		if (step == SQLITE_ROW && sqlite3_column_int(chk, 0) != INDEX_APPLICATION_ID) {
			why = "not an ingest index";
			r = -EINVAL;
		} else if (step == SQLITE_ROW && sqlite3_column_int(chk, 1) != INDEX_SCHEMA_VERSION) {
			why = sqlite3_column_int(chk, 1) > INDEX_SCHEMA_VERSION
			    ? "written by a newer ingest (a later schema_version)"
			    : "written by an older ingest (an earlier schema_version): ingest --index on it"
			      " migrates it or says what to do";
			r = -EINVAL;
		} else if (rc != SQLITE_OK && how == SEARCH_WAL_IN_WAY) {
			why = "a run's -wal file is beside it, and its -shm file cannot be made here"
			      " (a directory or file system this process cannot write)";
			r = -EACCES;
		} else if ((rc & 0xff) == SQLITE_CANTOPEN && db_path_too_long(db_path, &full, &max)) {
			/* SQLite's words and errno would say the file is not
			 * there */
			snprintf(s.error, sizeof(s.error), "its absolute path has %zu bytes, SQLite takes %d at most",
			         full, max - 1);
			why = s.error;
			r = -ENAMETOOLONG;
		} else if (rc != SQLITE_OK && sqlite3_system_errno(db) > 0) {
			/* a file that is not there, or cannot be read: the
			 * system's reason (SQLite's says "unable to open
			 * database file" for all of them) */
			r = -sqlite3_system_errno(db);
			why = strerror(-r);
		} else if (rc != SQLITE_OK) {
			why = sqlite3_errmsg(db);
			r = -EINVAL;
		}
		ours = r == 0 && step == SQLITE_ROW;
		sqlite3_finalize(chk);
	}
	bool fts = s.fts.len > 0;
	/* bm25 with the subject weighted above the body, as mail readers
	 * rank, computed by rank.c (FTS5's numbers, fewer walks over the
	 * matches).  As FTS5's rank column (`rank MATCH` names the function
	 * and its weights), ORDER BY rank is FTS5's own: it scores every
	 * match, sorts the (rowid, score) pairs and hands the rows over best
	 * first, so the columns of a line (the snippet, the addresses) are
	 * built for the LIMIT rows only, where an ORDER BY of SQLite's built
	 * them for every match before sorting (bench/INDEX.md, "Since the
	 * run below: FTS rows at the commit, ranking inside FTS5").
	 * CROSS JOIN keeps mail_fts the outer loop, the plan in which FTS5
	 * sorts, whatever the other conditions (rank.c counts on it).  With
	 * none, the rows printed are the first `limit` FTS5 sorts, which
	 * rank.c is told so that it need not score the others exactly: the
	 * join drops no row, as every mail_fts row has its message (the
	 * index keeps them together: the delete trigger, and a first run's
	 * text index cleared of rows whose message went, fts_build.c). */
	struct rank *rk = NULL;
	if (r == 0 && fts && !count &&
	    (rc = rank_register(db, s.where.len || by_date ? 0 : limit, !by_date, &rk)) != SQLITE_OK) {
		why = sqlite3_errstr(rc);
		r = -EINVAL;
	}
	/* SQLite's LIMIT is a signed 64-bit integer: a larger one is none */
	long long lim = limit > INT64_MAX ? -1 : (long long)limit;
	if (r == 0)
		r = search_sql(&sql, db, &s, flags, lim, rk);
	if (r == 0 && dynbuf_putc(&sql, '\0') < 0)
		r = -ENOMEM;
	if (r == 0) {
		rc = sqlite3_prepare_v2(db, sql.p, -1, &st, NULL);
		if (rc != SQLITE_OK) {
			why = sqlite3_errmsg(db);
			r = -EINVAL;
		}
	}
	if (r == 0 && fts)
		sqlite3_bind_text(st, 1, s.fts.p, (int)s.fts.len, SQLITE_STATIC);
	for (int i = 0; r == 0 && i < s.n_binds; i++)
		sqlite3_bind_text(st, i + 2, s.binds[i], -1, SQLITE_STATIC);
	/* The lines go out in writes of at least 64 KiB, the last shorter:
	 * one write for the usual 20 hits, where a write per line and one per
	 * newline were 40.  `whole` ends the last whole line buffered, what
	 * is written when the buffer cannot grow. */
	struct dynbuf out;
	dynbuf_init(&out, 0);
	size_t whole = 0;
	int hits = 0;
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		long long n = count ? sqlite3_column_int64(st, 0) : 0;
		r = count ? dynbuf_printf(&out, "%lld", n)
		    : tsv ? search_line_tsv(&out, st) : search_line_json(&out, st);
		if (r == 0)
			r = dynbuf_putc(&out, '\n');
		if (r == 0)
			whole = out.len;
		if (r == 0 && out.len >= 65536) {
			r = sys_write_full(fd, out.p, out.len);
			dynbuf_reset(&out);
			whole = 0;
		}
		hits = count ? (n > INT_MAX ? INT_MAX : (int)n) : hits + 1;
	}
	if ((r == 0 || r == -ENOMEM) && whole) {
		int w = sys_write_full(fd, out.p, whole);
		r = r ? r : w;
	}
	dynbuf_release(&out);
	char syntax[320];
	if (r == 0 && rc != SQLITE_DONE) {
		/* a query FTS5 cannot parse is the user's to fix: say so, in
		 * FTS5's words where the checks above let one through */
		why = sqlite3_errmsg(db);
		if (rc == SQLITE_ERROR && (!strncmp(why, "fts5:", 5) || !strncmp(why, "no such column:", 15))) {
			snprintf(syntax, sizeof(syntax), "not a query FTS5 can read (%s)", why);
			why = syntax;
		}
		r = -EINVAL;
	}
	if (r < 0 && why && error) {
		/* it goes to a terminal and names the query's words (SQLite's
		 * and FTS5's messages too): escaped */
		struct dynbuf e;
		dynbuf_init(&e, 0);
		if (emit_escape_terminal(&e, why, strlen(why)) == 0 && dynbuf_putc(&e, '\0') == 0 &&
		    (*error = malloc(e.len)))
			memcpy(*error, e.p, e.len);
		dynbuf_release(&e);
	}
	sqlite3_finalize(st);
	rank_free(rk);
	sqlite3_close(db);
	if (ours && how == SEARCH_READ)
		search_tidy(db_path);
	for (int i = 0; i < s.n_binds; i++)
		xfree(s.binds[i]);
	dynbuf_release(&s.fts);
	dynbuf_release(&s.where);
	dynbuf_release(&sql);
	return r < 0 ? r : hits;
}
