/* mbox splitting: see mbox.h.  Separators are found with memchr over line
 * starts only, so a gigabyte archive is scanned at memory speed; the
 * separator check runs only on lines that begin with "From ". */
#include "mail/mbox.h"

#include <string.h>

static const char *const mbox_months[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

static size_t mbox_line_len(const uint8_t *p, size_t n)
{
	const uint8_t *nl = memchr(p, '\n', n);
	return nl ? (size_t)(nl - p) : n;
}

bool mbox_is_separator(const uint8_t *p, size_t n)
{
	if (n < 5 || memcmp(p, "From ", 5))
		return false;
	size_t len = mbox_line_len(p, n);
	if (len > 1000)
		return false;
	/* A month name and an hh:mm time, anywhere after the sender: covers
	 * asctime ("Mon Jan  1 00:00:00 2024"), RFC 822-style dates and the
	 * "From sender Mon, 1 Jan 2024 00:00 +0000" variants writers use. */
	bool month = false, time = false;
	for (size_t i = 5; i + 3 <= len; i++) {
		if (!month && (i == 5 || p[i - 1] == ' '))
			for (int m = 0; m < 12; m++)
				if (!memcmp(p + i, mbox_months[m], 3)) {
					month = true;
					break;
				}
		if (!time && i + 5 <= len && p[i] >= '0' && p[i] <= '9' && p[i + 1] >= '0' &&
		    p[i + 1] <= '9' && p[i + 2] == ':' && p[i + 3] >= '0' && p[i + 3] <= '9' &&
		    p[i + 4] >= '0' && p[i + 4] <= '9')
			time = true;
	}
	return month && time;
}

size_t mbox_find_separator(const uint8_t *p, size_t n, size_t from)
{
	size_t i = from;
	while (i < n) {
		const uint8_t *nl = memchr(p + i, '\n', n - i);
		if (!nl)
			return n;
		i = (size_t)(nl - p) + 1;
		if (i + 5 <= n && p[i] == 'F' && mbox_is_separator(p + i, n - i))
			return i;
	}
	return n;
}

/* Content-Length of the header block at p[start..), or -1. */
static long long mbox_content_length(const uint8_t *p, size_t n, size_t start, size_t *body)
{
	size_t i = start;
	long long len = -1;
	while (i < n) {
		size_t l = mbox_line_len(p + i, n - i);
		size_t e = l && p[i + l - 1] == '\r' ? l - 1 : l;
		if (e == 0) {
			*body = i + l + 1;
			return len;
		}
		if (e > 15 && !strncasecmp((const char *)p + i, "Content-Length:", 15)) {
			long long v = 0;
			size_t k = i + 15;
			while (k < i + e && (p[k] == ' ' || p[k] == '\t'))
				k++;
			size_t digits = 0;
			while (k < i + e && p[k] >= '0' && p[k] <= '9' && digits < 15) {
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

int mbox_next(const uint8_t *p, size_t n, size_t pos, bool at_eof,
              struct mbox_span *m, size_t *next)
{
	size_t sep = mbox_line_len(p + pos, n - pos);
	if (pos + sep >= n && !at_eof)
		return 0;
	m->from = pos;
	m->start = pos + sep + (pos + sep < n);
	size_t body;
	long long cl = mbox_content_length(p, n, m->start, &body);
	size_t nxt = n;
	bool found = false;
	if (cl >= 0 && body <= n && (size_t)cl <= n - body) {
		/* honoured only when it lands on a separator (or the end), after
		 * the optional blank line that precedes one */
		size_t at = body + (size_t)cl;
		size_t skip = at;
		if (skip < n && p[skip] == '\r')
			skip++;
		if (skip < n && p[skip] == '\n')
			skip++;
		if (at == n && at_eof) {
			nxt = n;
			found = true;
		} else if (skip + 5 <= n && mbox_is_separator(p + skip, n - skip)) {
			nxt = skip;
			found = true;
		} else if (at + 5 <= n && mbox_is_separator(p + at, n - at)) {
			nxt = at;
			found = true;
		}
	}
	if (!found)
		nxt = mbox_find_separator(p, n, m->start > pos + sep ? m->start - 1 : m->start);
	if (nxt == n && !at_eof)
		return 0;
	/* RFC 4155: the blank line before a separator belongs to the
	 * separator; the message keeps its own last line end. */
	size_t end = nxt;
	if (nxt < n) {
		/* (an empty message is that blank line alone) */
		if (end >= m->start + 2 && !memcmp(p + end - 2, "\r\n", 2) &&
		    (end == m->start + 2 || (end >= m->start + 4 && !memcmp(p + end - 4, "\r\n", 2))))
			end -= 2;
		else if (end >= m->start + 1 && p[end - 1] == '\n' &&
		         (end == m->start + 1 || p[end - 2] == '\n'))
			end -= 1;
	}
	m->end = end < m->start ? m->start : end;
	*next = nxt;
	return 1;
}

size_t mbox_unquote(uint8_t *p, size_t n)
{
	size_t r = 0, w = 0;
	bool bol = true;
	while (r < n) {
		if (bol && p[r] == '>') {
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
		bol = true;
	}
	return w;
}
