/* SPDX-License-Identifier: MIT */
/* mbox archives (RFC 4155 and the mboxo/mboxrd/mboxcl variants): finding
 * the messages in a run of bytes, and undoing ">From " quoting.
 *
 * A file whose first line starts "From " is an mbox, dated or not
 * (Netscape's bare "From - ").  A later separator is a dated From_ line
 * that follows an empty line, as in qmail's mbox(5) ("a message ends with
 * a blank line") and the "\n\nFrom " rule that Netscape and Python's docs
 * call the only portable one: "From ", an envelope sender, then a ctime
 * date with weekday, month, day, time and year (mutt's is_from(), Python's
 * old UnixMailbox pattern), or an RFC 5322 date.  Writers that leave
 * undated or unseparated From_ lines are recovered where a header block
 * follows: Mozilla's "From -" after any line, and an undated one-word
 * From_ line after an empty line, when a known header field comes within
 * MBOX_PEEK_LINES header lines.  Quoting (">From ") is then only needed
 * for what a body can really be confused with; unquoted "From " body
 * lines are common in mboxo and hand-made archives and must not split a
 * message.
 *
 * Content-Length (mboxcl) is honoured only when the byte it points at
 * starts a "From " line, dated or not (after the optional empty line), or
 * is the end of the
 * data, as mutt checks: a wrong length is common and must not swallow or
 * split messages.  CRLF and LF line ends both work.
 *
 * The same bytes give the same messages whether they come whole or in
 * chunks: whenever the answer depends on bytes past n, mbox_next() asks
 * for more instead of guessing.  Pure functions, linear in the input. */
#ifndef INGEST_MAIL_MBOX_H
#define INGEST_MAIL_MBOX_H

#include "core/limits.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A From_ line longer than this (its line end excluded) is not one. */
#define MBOX_LINE_MAX LIMIT_MBOX_LINE

/* Lines a separator's header check looks at past the From_ line. */
#define MBOX_PEEK_LINES 3

/* The most mbox_scan_keep() keeps: a From_ line and the lines after it
 * that decide it, with their line ends, and the empty line before it. */
#define MBOX_KEEP_MAX ((MBOX_PEEK_LINES + 1) * (MBOX_LINE_MAX + 2) + 3)

/* True when the first line of a file or message, at p, starts "From " and
 * is not the obsolete syntax of the From field, "From" and blanks before
 * its colon (RFC 5322 4.5.2, obs-from), unless a sender and a date follow
 * as in a dated From_ line: the one rule that tells an mbox From_ line
 * from a header field where a header may stand, for splitting a file as
 * an archive and for a message's first line.  Inside an archive a line
 * after an empty one is never a header: mbox_next() does not ask. */
bool mbox_from_prefix(const uint8_t *p, size_t n);

/* True when the line at p (a line start; at most n bytes, up to the first
 * '\n') starts an mbox: mbox_from_prefix(), at most MBOX_LINE_MAX bytes, no control
 * bytes but HTAB; dated or not ("From - " as Netscape writes, "From
 * 1844...@xxx").  This is the check for the first line of a file (which
 * later lines separate is mbox_next()'s business), and for the line a
 * Content-Length lands on. */
bool mbox_is_separator(const uint8_t *p, size_t n);

/* True when the line at p is a dated From_ line: "From ", an envelope
 * sender, a date (see the top).  Says nothing about the line before. */
bool mbox_is_from_line(const uint8_t *p, size_t n);

struct mbox_span {
	size_t from;      /* offset of the separator line */
	size_t start;     /* first byte of the message (after the separator) */
	size_t end;       /* one past its last byte: the empty line before the
	                   * next separator (or the end) excluded, or the end of
	                   * the body a Content-Length that lands gives */
};

/* Finds the message whose separator is at `pos` (p[pos] starts a separator
 * line, and p[pos..n) is all that is looked at).  Returns 1 and fills *m,
 * with *next the position of the next separator (or n); returns 0 when the
 * answer depends on bytes past n and `at_eof` is false (the caller reads
 * more and calls again with the same pos).  A Content-Length is believed
 * only when the bytes that check it (from pos through its body, the empty
 * line and the From_ line it lands on: MBOX_LINE_MAX and a little past the
 * body) fit in `max_len`: with max_len bytes past pos at hand, this never
 * waits on a Content-Length, so a wrong one never makes a streaming caller
 * (which passes --max-size) read further than for any one message.  An
 * archive read whole is cut with the same max_len, so that it gives the
 * same messages; mbox_next() passes UINT64_MAX. */
int mbox_next_max(const uint8_t *p, size_t n, size_t pos, bool at_eof, uint64_t max_len,
                  struct mbox_span *m, size_t *next);

/* Where the message whose bytes start at `start` ends, when the next
 * separator line starts at `next` (or the archive ends there): the empty
 * line before a separator is the separator's.  Reads p[start..next) only;
 * `start` may also be any offset inside the message at least three bytes
 * before `next` (the empty line's bytes are all that is looked at). */
size_t mbox_message_end(const uint8_t *p, size_t start, size_t next);

/* mbox_next_max() with no limit on Content-Length. */
int mbox_next(const uint8_t *p, size_t n, size_t pos, bool at_eof,
              struct mbox_span *m, size_t *next);

/* The next separator (a From_ line after an empty line) at a line start
 * after `from` (from itself excluded), or n.  Offset 0 counts as a line
 * start; bytes before `from` are read only to see the empty line before a
 * candidate, and never before p.  The last line may be cut short by n:
 * with at_eof it is decided as the end of the archive (as mbox_next()
 * decides it); without, see mbox_scan_keep(). */
size_t mbox_find_separator(const uint8_t *p, size_t n, size_t from, bool at_eof);

/* After mbox_find_separator(p, n, from) returned n with more bytes to
 * come: the first byte the search over the extended data still needs (the
 * unfinished last line, if it could still become a separator, and the
 * empty line before it).  Bytes before it can be dropped; the search
 * resumes over the kept bytes with from = 0, which is never a candidate
 * itself.  Keeps at most MBOX_KEEP_MAX bytes. */
size_t mbox_scan_keep(const uint8_t *p, size_t n, size_t from);

/* Undoes mboxrd quoting in place (">From " → "From ", ">>From " →
 * ">From ", at line starts) and returns the new length.  mboxo archives
 * only quote one level, which this also undoes; their literal ">From "
 * lines (which mboxo cannot represent) lose one '>'. */
size_t mbox_unquote(uint8_t *p, size_t n);

/* A Maildir file or a .eml/.msg file is one message by definition, even
 * when it starts with an mbox From_ line (mutt and others save them so):
 * splitting it at a "From " line inside its body would cut a git patch
 * ("From <sha> Mon Sep 17 00:00:00 2001") out of the message.  name: the
 * file's name or path (only its ending is looked at). */
bool mbox_never_split(bool in_maildir, const char *name, size_t n);

#endif
