/* SPDX-License-Identifier: MIT */
/* mbox splitting: see mbox.h.  Separators are found with memchr over line
 * starts only, so a gigabyte archive is scanned at memory speed; the From_
 * line check runs only on lines that begin with "From " after an empty
 * line.
 *
 * Which "From " lines separate messages.  Readers disagree: Python's
 * mailbox.mbox takes every "From " line, mutt every line that parses as
 * "From [sender] weekday month day time [zone [zone]] year" anywhere,
 * qmail's mbox(5) says a message "ends with a blank line" and the From_
 * line is "From envsender date moreinfo", and Netscape's notes (quoted in
 * Python's old mailbox docs) call "\n\nFrom " the only portable rule.  We
 * take both conditions, because each one alone splits real mail:
 *
 *   1. the line before is empty ("\n" or "\r\n"), or the From_ line is
 *      the first line of the data.  A body line right after text ("From
 *      here on we meet Mar 3 at 10:30", a forwarded "From alice Mon Jan  1
 *      00:00:00 2001" in a writer that only quotes after empty lines) is
 *      never a separator;
 *   2. "From ", an envelope sender, then a date:
 *        sender  one word (RFC 5321 path, "MAILER-DAEMON", "-" as
 *                Thunderbird writes, a local user name), or a quoted
 *                string with spaces (mutt), or pipermail's "user at host";
 *                no control bytes; may be absent when the date follows
 *                "From " directly (mutt);
 *        date    ctime as every mbox writer emits it, "Mon Jan  1 00:00:00
 *                2024", with optional seconds and up to two zone words
 *                before the year ("Thu Jul 20 15:05:34 +0000 2023" from
 *                Google Takeout, "Wed Aug  2 00:39:12 MET DST 1995"), or
 *                the year before the time (JavaScript's Date string, as
 *                some Thunderbird add-ons write), or an RFC 5322 date
 *                ("Mon, 1 Jan 2024 00:00:00 +0000");
 *        then    anything (qmail's moreinfo, "remote from host").
 *      A body paragraph after an empty line that merely starts "From " is
 *      not a separator ("From the logs...", "From here on...").
 *
 *   3. or, for writers that leave no date or no empty line (Netscape,
 *      Mozilla, id-only lines as in MimeKit's and GMime's test archives):
 *      "From -" (dated or not) after any line, or "From " and at most one
 *      word after an empty line, when the next MBOX_PEEK_LINES lines are
 *      header fields (folded lines allowed after the first) up to one of
 *      the fields a stored message starts with (mbox_fields).  Prose
 *      after "From " has more than one word, and a body line after it is
 *      not a field; three lines bound the look-ahead.
 *
 * What this does not recover: an archive whose writer left no empty line
 * before a dated From_ line that is not Mozilla's (two files concatenated
 * without one) keeps the two messages as one; an unquoted body line after
 * an empty line that is a complete From_ line still splits (mboxo cannot
 * tell; Content-Length can, and is honoured when it lands on a From_
 * line), as does a lone "From word" body line followed by lines such as
 * "Date: ...".
 *
 * Chunked input: every decision that depends on a line (the From_ line
 * check, the lines after it that rule 3 reads, the line a Content-Length
 * lands on) waits for those lines, and
 * a Content-Length that reaches past n waits for its bytes, so cutting the
 * input anywhere gives the same messages as reading it whole. */
#include "mail/mbox.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* What mbox_lands() may need past the end of a body: "\r\n", a From_
 * line, "\r\n" (it decides once MBOX_LINE_MAX + 2 bytes of the line have
 * no line end), and some slack. */
#define MBOX_CL_TAIL (MBOX_LINE_MAX + 16)

static const char mbox_months[12][4] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
};
static const char mbox_days[7][4] = { "mon", "tue", "wed", "thu", "fri", "sat", "sun" };

static size_t mbox_line_len(const uint8_t *p, size_t n)
{
	const uint8_t *nl = memchr(p, '\n', n);
	return nl ? (size_t)(nl - p) : n;
}

static bool mbox_blank(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static bool mbox_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static bool mbox_alpha(uint8_t c)
{
	return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

/* A word of the From_ line: p[i..e) between blanks. */
struct mbox_word {
	size_t i, e;
};

/* The next word at or after *i in p[0..n), *i moved past it. */
static bool mbox_word(const uint8_t *p, size_t n, size_t *i, struct mbox_word *w)
{
	size_t k = *i;
	while (k < n && mbox_blank(p[k]))
		k++;
	if (k == n)
		return false;
	w->i = k;
	while (k < n && !mbox_blank(p[k]))
		k++;
	w->e = k;
	*i = k;
	return true;
}

/* A name from the table: its first three letters, then letters only
 * ("Mon", "Monday", "Sept"), with one trailing comma allowed for
 * weekdays ("Mon,"). */
static bool mbox_name(const uint8_t *p, struct mbox_word w, const char (*tab)[4], int n, bool comma)
{
	size_t e = w.e;
	if (comma && e > w.i && p[e - 1] == ',')
		e--;
	if (e - w.i < 3 || e - w.i > 9)
		return false;
	for (size_t k = w.i; k < e; k++)
		if (!mbox_alpha(p[k]))
			return false;
	for (int t = 0; t < n; t++)
		if (!strncasecmp((const char *)p + w.i, tab[t], 3))
			return true;
	return false;
}

static bool mbox_weekday(const uint8_t *p, struct mbox_word w)
{
	return mbox_name(p, w, mbox_days, 7, true);
}

static bool mbox_month(const uint8_t *p, struct mbox_word w)
{
	return mbox_name(p, w, mbox_months, 12, false);
}

/* lo to hi digits and nothing else. */
static bool mbox_number(const uint8_t *p, struct mbox_word w, size_t lo, size_t hi)
{
	if (w.e - w.i < lo || w.e - w.i > hi)
		return false;
	for (size_t k = w.i; k < w.e; k++)
		if (!mbox_digit(p[k]))
			return false;
	return true;
}

static bool mbox_day(const uint8_t *p, struct mbox_word w)
{
	return mbox_number(p, w, 1, 2);
}

/* Two or four digits, as ctime and RFC 5322 write (mutt takes both). */
static bool mbox_year(const uint8_t *p, struct mbox_word w)
{
	return mbox_number(p, w, 2, 2) || mbox_number(p, w, 4, 4);
}

/* h:mm or hh:mm, optionally :ss. */
static bool mbox_time(const uint8_t *p, struct mbox_word w)
{
	size_t k = w.i;
	while (k < w.e && mbox_digit(p[k]))
		k++;
	if (k == w.i || k - w.i > 2)
		return false;
	for (int part = 0; part < 2; part++) {
		if (w.e - k < 3 || p[k] != ':' || !mbox_digit(p[k + 1]) || !mbox_digit(p[k + 2]))
			return false;
		k += 3;
		if (k == w.e)
			return true;
	}
	return false;
}

/* A time zone word: letters ("PST", "DST", "GMT+0400") or a numeric
 * offset ("+0000"). */
static bool mbox_zone(const uint8_t *p, struct mbox_word w)
{
	return mbox_alpha(p[w.i]) || ((p[w.i] == '+' || p[w.i] == '-') && w.e - w.i >= 2 &&
	                              mbox_digit(p[w.i + 1]));
}

/* The date part of a From_ line, at p[i..n): see the comment at the top.
 * Whatever follows the date is not looked at.  need_wday: the date must
 * start with a weekday (when there is no sender, as mutt requires). */
static bool mbox_date(const uint8_t *p, size_t n, size_t i, bool need_wday)
{
	struct mbox_word w[4];
	size_t k = i;
	if (!mbox_word(p, n, &k, &w[0]))
		return false;
	bool wday = mbox_weekday(p, w[0]);
	if (need_wday && !wday)
		return false;
	if (wday && !mbox_word(p, n, &k, &w[0]))
		return false;
	for (int j = 1; j < 4; j++)
		if (!mbox_word(p, n, &k, &w[j]))
			return false;
	if (wday && mbox_month(p, w[0]) && mbox_day(p, w[1])) {
		/* ctime: month day time [zone [zone]] year */
		if (mbox_time(p, w[2])) {
			struct mbox_word y = w[3];
			for (int z = 0; z < 2 && mbox_zone(p, y); z++)
				if (!mbox_word(p, n, &k, &y))
					return false;
			return mbox_year(p, y);
		}
		/* JavaScript: month day year time */
		return mbox_number(p, w[2], 4, 4) && mbox_time(p, w[3]);
	}
	/* RFC 5322 3.3: [weekday,] day month year time (the zone is optional
	 * here: what follows is not looked at) */
	return mbox_day(p, w[0]) && mbox_month(p, w[1]) && mbox_year(p, w[2]) && mbox_time(p, w[3]);
}

/* The length of the line at p (its line end excluded) when it starts with
 * "From ", is at most MBOX_LINE_MAX bytes and holds no control bytes but
 * HTAB; else SIZE_MAX. */
static size_t mbox_from_len(const uint8_t *p, size_t n)
{
	if (n < 5 || memcmp(p, "From ", 5))
		return SIZE_MAX;
	size_t len = mbox_line_len(p, n);
	if (len && p[len - 1] == '\r')
		len--;
	if (len > MBOX_LINE_MAX)
		return SIZE_MAX;
	for (size_t k = 5; k < len; k++)
		if (p[k] < 0x20 ? p[k] != '\t' : p[k] == 0x7f)
			return SIZE_MAX;
	return len;
}

bool mbox_from_prefix(const uint8_t *p, size_t n)
{
	if (n < 5 || memcmp(p, "From ", 5))
		return false;
	size_t i = 5;
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	/* "From :x@y Mon Jun  3 12:50:27 1996" is still a From_ line */
	return i == n || p[i] != ':' || mbox_is_from_line(p, n);
}

bool mbox_is_separator(const uint8_t *p, size_t n)
{
	return mbox_from_prefix(p, n) && mbox_from_len(p, n) != SIZE_MAX;
}

bool mbox_is_from_line(const uint8_t *p, size_t n)
{
	size_t len = mbox_from_len(p, n);
	if (len == SIZE_MAX)
		return false;
	/* no sender: the date comes right after "From " (mutt) */
	if (mbox_date(p, len, 5, true))
		return true;
	size_t i = 5;
	while (i < len && mbox_blank(p[i]))
		i++;
	if (i == len)
		return false;
	if (p[i] == '"') {
		/* a quoted local part with spaces: "/foo/bar baz/"@example.com */
		for (i++; i < len && p[i] != '"'; i++)
			if (p[i] == '\\')
				i++;
		if (i >= len)
			return false;
	}
	while (i < len && !mbox_blank(p[i]))
		i++;
	if (mbox_date(p, len, i, false))
		return true;
	/* pipermail hides the address as "user at host" */
	if (len - i < 4 || memcmp(p + i, " at ", 4))
		return false;
	i += 4;
	while (i < len && mbox_blank(p[i]))
		i++;
	while (i < len && !mbox_blank(p[i]))
		i++;
	return mbox_date(p, len, i, false);
}

/* An undated From_ line: "From ", at most one word, blanks ("From - " as
 * Netscape writes, "From 1844...@xxx").  Prose has more words. */
static bool mbox_undated(const uint8_t *p, size_t len)
{
	size_t i = 5;
	while (i < len && mbox_blank(p[i]))
		i++;
	while (i < len && !mbox_blank(p[i]))
		i++;
	while (i < len && mbox_blank(p[i]))
		i++;
	return i == len;
}

/* Mozilla's "From -", dated or not. */
static bool mbox_dash(const uint8_t *p, size_t len)
{
	return len >= 6 && p[5] == '-' && (len == 6 || mbox_blank(p[6]));
}

/* Fields a message's header block starts with, as mail stores and
 * clients write them: one of them in the lines after a From_ line that
 * needs it is what tells a message from a body paragraph. */
static const char *const mbox_fields[] = {
	"return-path", "received", "from", "to", "cc", "date", "subject", "message-id",
	"delivered-to", "sender", "reply-to", "mime-version", "x-mozilla-status",
	"x-mozilla-status2", "x-mozilla-keys", "x-account-key", "x-uidl", "envelope-to",
	"x-original-to", "x-gm-thrid", "x-gmail-labels", "status", "x-status", "content-type",
};

/* The line at p[0..len): 2 a field of mbox_fields, 1 another header field
 * (or a folded line, when cont), 0 neither.  Only the field name and its
 * colon are looked at. */
static int mbox_field(const uint8_t *p, size_t len, bool cont)
{
	if (cont && len && mbox_blank(p[0])) {
		for (size_t k = 1; k < len; k++)
			if (!mbox_blank(p[k]) && p[k] != '\r')
				return 1;
		return 0;
	}
	size_t k = 0;
	while (k < len && k < 77 && p[k] > 0x20 && p[k] < 0x7f && p[k] != ':')
		k++;
	size_t name = k;
	while (k < len && mbox_blank(p[k]))
		k++;
	if (!name || k == len || p[k] != ':')
		return 0;
	for (size_t t = 0; t < sizeof(mbox_fields) / sizeof(mbox_fields[0]); t++)
		if (strlen(mbox_fields[t]) == name && !strncasecmp((const char *)p, mbox_fields[t], name))
			return 2;
	return 1;
}

/* Does a header block start at p[j..n)?  Of the next MBOX_PEEK_LINES
 * lines, each one is a header field (the first not folded) until one of
 * mbox_fields comes.  1 yes, 0 no, -1 bytes past n decide (never when
 * at_eof).  Looks at most MBOX_PEEK_LINES * (MBOX_LINE_MAX + 2) bytes. */
static int mbox_headers_follow(const uint8_t *p, size_t n, size_t j, bool at_eof)
{
	for (int l = 0; l < MBOX_PEEK_LINES; l++) {
		size_t rest = n - j, look = rest < MBOX_LINE_MAX + 2 ? rest : MBOX_LINE_MAX + 2;
		const uint8_t *nl = memchr(p + j, '\n', look);
		int f = mbox_field(p + j, nl ? (size_t)(nl - (p + j)) : look, l > 0);
		if (f == 2)
			return 1;
		if (!nl)
			return at_eof || look == MBOX_LINE_MAX + 2 ? 0 : -1;
		if (f == 0)
			return 0;
		j = (size_t)(nl - p) + 1;
	}
	return 0;
}

/* True when the line that ends at p[i - 1] (a '\n') is empty: "\n" or
 * "\r\n".  Offset 0 is a line start. */
static bool mbox_after_empty_line(const uint8_t *p, size_t i)
{
	if (i < 2 || p[i - 2] == '\n')
		return true;
	return p[i - 2] == '\r' && (i == 2 || p[i - 3] == '\n');
}

/* Could the unfinished line at p[i..n) still turn out a From_ line? */
static bool mbox_may_be_separator(const uint8_t *p, size_t n, size_t i)
{
	size_t k = n - i < 5 ? n - i : 5;
	return !memcmp(p + i, "From ", k) && n - i <= MBOX_LINE_MAX + 1;
}

/* Does the line at p[i..n) (i a line start after the first) separate
 * messages?  1 yes, 0 no, -1 bytes past n decide (never when at_eof). */
static int mbox_splits(const uint8_t *p, size_t n, size_t i, bool at_eof)
{
	size_t rest = n - i;
	const uint8_t *nl = memchr(p + i, '\n', rest);
	if (!nl && !at_eof)
		return mbox_may_be_separator(p, n, i) ? -1 : 0;
	size_t len = mbox_from_len(p + i, rest);
	/* "From :", the obsolete From field, separates only dated
	 * (mbox_is_separator's rule): an undated one ("From :x@y") was
	 * taken for a one-word From_ line when a header field came next */
	if (len == SIZE_MAX || !mbox_from_prefix(p + i, len))
		return 0;
	bool empty = mbox_after_empty_line(p, i);
	if (empty && mbox_is_from_line(p + i, rest))
		return 1;
	if (!nl || !(mbox_dash(p + i, len) || (empty && mbox_undated(p + i, len))))
		return 0;
	return mbox_headers_follow(p, n, (size_t)(nl - p) + 1, at_eof);
}

/* The first line start after `from` that splits or is undecided (then
 * *undecided is set), or n. */
static size_t mbox_scan(const uint8_t *p, size_t n, size_t from, bool at_eof, bool *undecided)
{
	size_t i = from;
	*undecided = false;
	while (i < n) {
		const uint8_t *nl = memchr(p + i, '\n', n - i);
		if (!nl)
			return n;
		i = (size_t)(nl - p) + 1;
		if (i == n || p[i] != 'F')
			continue;
		int r = mbox_splits(p, n, i, at_eof);
		if (r) {
			*undecided = r < 0;
			return i;
		}
	}
	return n;
}

size_t mbox_find_separator(const uint8_t *p, size_t n, size_t from, bool at_eof)
{
	bool undecided;
	size_t at = mbox_scan(p, n, from, at_eof, &undecided);
	return undecided ? n : at;
}

size_t mbox_scan_keep(const uint8_t *p, size_t n, size_t from)
{
	/* By default the last 3 bytes: the empty line ("\n\n", "\n\r\n")
	 * that a line starting in the coming bytes may follow.  An undecided
	 * line starts within MBOX_KEEP_MAX - 3 bytes of n: keep it, and the
	 * empty line before it. */
	size_t keep = n >= 3 ? n - 3 : 0;
	size_t tail = n > MBOX_KEEP_MAX ? n - MBOX_KEEP_MAX : 0;
	bool undecided;
	size_t at = mbox_scan(p, n, tail > from ? tail : from, false, &undecided);
	if (undecided)
		keep = at >= 3 ? at - 3 : 0;
	return keep < from ? from : keep;
}

/* Content-Length of the header block at p[start..n), or -1; *body is where
 * the body starts (past the empty line).  -1 too when the header block
 * does not end before n: its Content-Length may not be the last one. */
static long long mbox_content_length(const uint8_t *p, size_t n, size_t start, size_t *body)
{
	size_t i = start;
	long long len = -1;
	while (i < n) {
		size_t l = mbox_line_len(p + i, n - i);
		if (i + l == n)
			return -1;   /* unfinished line */
		size_t e = l && p[i + l - 1] == '\r' ? l - 1 : l;
		if (e == 0) {
			*body = i + l + 1;
			return len;
		}
		if (e > 15 && !strncasecmp((const char *)p + i, "Content-Length:", 15)) {
			long long v = 0;
			size_t k = i + 15;
			while (k < i + e && mbox_blank(p[k]))
				k++;
			size_t digits = 0;
			while (k < i + e && mbox_digit(p[k]) && digits < 15) {
				v = v * 10 + (p[k++] - '0');
				digits++;
			}
			if (digits)
				len = v;
		}
		i += l + 1;
	}
	return -1;
}

/* Does a Content-Length that ends the body at `at` land on a From_ line
 * (after one empty line, or right at `at`) or on the end of the data?
 * 1 yes (*next set), 0 no, -1 cannot tell before more bytes come. */
static int mbox_lands(const uint8_t *p, size_t n, uint64_t at, bool at_eof, size_t *next)
{
	if (at >= n) {
		if (!at_eof)
			return -1;
		*next = n;
		return at == n;
	}
	size_t s = (size_t)at;
	if (p[s] == '\n') {
		s++;
	} else if (p[s] == '\r') {
		if (s + 1 == n)
			return at_eof ? 0 : -1;
		if (p[s + 1] == '\n')
			s += 2;
	}
	if (s == n) {
		/* the empty line that ends the last message */
		if (!at_eof)
			return -1;
		*next = n;
		return 1;
	}
	if (!at_eof && !memchr(p + s, '\n', n - s) && mbox_may_be_separator(p, n, s))
		return -1;
	if (!mbox_is_separator(p + s, n - s))
		return 0;   /* any From_ line, dated or not: the length vouches */
	*next = s;
	return 1;
}

int mbox_next_max(const uint8_t *p, size_t n, size_t pos, bool at_eof, uint64_t max_len,
                  struct mbox_span *m, size_t *next)
{
	const uint8_t *nl = memchr(p + pos, '\n', n - pos);
	if (!nl && !at_eof)
		return 0;
	m->from = pos;
	m->start = nl ? (size_t)(nl - p) + 1 : n;
	size_t body = 0, nxt;
	long long cl = mbox_content_length(p, n, m->start, &body);
	/* Believed only while checking it stays within max_len bytes of pos:
	 * the body, then the empty line and the From_ line it lands on, with
	 * their line ends (MBOX_CL_TAIL).  So with max_len bytes past pos at
	 * hand, a Content-Length is never what we wait for. */
	uint64_t room = max_len > MBOX_CL_TAIL ? max_len - MBOX_CL_TAIL : 0;
	if (cl >= 0 && body - pos <= room && (uint64_t)cl <= room - (body - pos)) {
		uint64_t at = (uint64_t)body + (uint64_t)cl;
		int r = mbox_lands(p, n, at, at_eof, &nxt);
		if (r < 0)
			return 0;
		if (r > 0) {
			m->end = (size_t)at;
			*next = nxt;
			return 1;
		}
	}
	bool undecided;
	nxt = mbox_scan(p, n, m->start, at_eof, &undecided);
	if (undecided || (!at_eof && nxt == n))
		return 0;   /* no separator yet, or one that later bytes decide */
	m->end = mbox_message_end(p, m->start, nxt);
	*next = nxt;
	return 1;
}

size_t mbox_message_end(const uint8_t *p, size_t start, size_t next)
{
	/* RFC 4155: the empty line before a separator belongs to the
	 * separator, as does the one that ends the last message; the message
	 * keeps its own last line end.  (An empty message is that line alone.) */
	size_t end = next;
	if (end > start && p[end - 1] == '\n') {
		if (end - 1 == start || p[end - 2] == '\n')
			end -= 1;
		else if (p[end - 2] == '\r' && (end - 2 == start || p[end - 3] == '\n'))
			end -= 2;
	}
	return end;
}

int mbox_next(const uint8_t *p, size_t n, size_t pos, bool at_eof,
              struct mbox_span *m, size_t *next)
{
	return mbox_next_max(p, n, pos, at_eof, UINT64_MAX, m, next);
}

size_t mbox_unquote(uint8_t *p, size_t n)
{
	size_t r = 0, w = 0;
	while (r < n) {
		/* at a line start */
		if (p[r] == '>') {
			size_t k = r;
			while (k < n && p[k] == '>')
				k++;
			if (k + 5 <= n && !memcmp(p + k, "From ", 5))
				r++;   /* drop one '>' */
		}
		const uint8_t *nl = memchr(p + r, '\n', n - r);
		size_t len = nl ? (size_t)(nl - (p + r)) + 1 : n - r;
		if (w != r)
			memmove(p + w, p + r, len);
		w += len;
		r += len;
	}
	return w;
}

bool mbox_never_split(bool in_maildir, const char *name, size_t n)
{
	if (in_maildir)
		return true;
	return n >= 4 && (!strncasecmp(name + n - 4, ".eml", 4) || !strncasecmp(name + n - 4, ".msg", 4));
}
