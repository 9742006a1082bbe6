/* mbox archives (RFC 4155 and the mboxo/mboxrd/mboxcl variants): finding
 * the messages in a run of bytes, and undoing ">From " quoting.
 *
 * A message starts after a "From " separator line at the start of a line.
 * Lines beginning "From " inside bodies are usually quoted (">From "), but
 * mboxo writers and hand-made archives leave some unquoted, so a separator
 * must also look like one: "From " sender, then a date with a month name
 * and an hh:mm time (what mutt and Python's mailbox check, more or less).
 * Content-Length (mboxcl) is honoured only when the byte it points at is a
 * separator or the end of the data: a wrong length is common and must not
 * swallow or split messages.  CRLF and LF line ends both work.  Pure
 * functions, linear in the input. */
#ifndef INGEST_MAIL_MBOX_H
#define INGEST_MAIL_MBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when the n bytes at p (a line start) are a separator line. */
bool mbox_is_separator(const uint8_t *p, size_t n);

struct mbox_span {
	size_t from;      /* offset of the separator line */
	size_t start;     /* first byte of the message (after the separator) */
	size_t end;       /* one past its last byte (the separator's newline and
	                   * the blank line before the next separator excluded) */
};

/* Finds the message whose separator is at `pos` (p[pos] starts a separator
 * line).  Returns 1 and fills *m, with *next the position of the next
 * separator (or n); returns 0 when the message may continue past n and
 * `at_eof` is false (the caller reads more and calls again). */
int mbox_next(const uint8_t *p, size_t n, size_t pos, bool at_eof,
              struct mbox_span *m, size_t *next);

/* The next separator at a line start after `from` (from itself excluded),
 * or n. */
size_t mbox_find_separator(const uint8_t *p, size_t n, size_t from);

/* Undoes mboxrd quoting in place (">From " → "From ", ">>From " →
 * ">From ", at line starts) and returns the new length.  mboxo archives
 * only quote one level, which this also undoes; their literal ">From "
 * lines (which mboxo cannot represent) lose one '>'. */
size_t mbox_unquote(uint8_t *p, size_t n);

#endif
