/* SPDX-License-Identifier: MIT */
/* Maildir rules (https://cr.yp.to/proto/maildir.html and Maildir++), in
 * one place: the info of a name (":2,FLAGS", with ':', '!' or ';' as the
 * separator), the unique name before it, the flags as words, where a path
 * is a Maildir message, and a message's identity key.  walk.c, state.c,
 * reader_item.c, the emitters and the index ask here; none of them parses a
 * Maildir name itself.
 * Pure string functions. */
#ifndef INGEST_MAILDIR_H
#define INGEST_MAILDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Offset and length of the flag letters of a cur/ name ("1.2.h:2,FS" →
 * "FS"); false when the name carries no "2," info. */
bool maildir_flags(const char *name, size_t len, size_t *off, size_t *n);
/* The flag letters of a name as a view into it: "" (pointing at the
 * name's end) when it carries no "2," info. */
static inline void maildir_flags_view(const char *name, size_t len, const char **p, size_t *n)
{
	size_t off;
	if (!maildir_flags(name, len, &off, n)) {
		off = len;
		*n = 0;
	}
	*p = name + off;
}
/* Length of the name before its "2," info (",S=1234" size hints are
 * part of it). */
size_t maildir_base_len(const char *name, size_t len);
/* Length of the unique name: before the info, "2," (flags) or the
 * experimental "1,".  What a message keeps through every rename. */
size_t maildir_unique_len(const char *name, size_t len);
/* True for a file or directory that mail software keeps beside the
 * messages (README, "Usage"): notmuch's .notmuch/, Dovecot's dovecot*,
 * mbsync's .mbsyncstate*, .uidvalidity, Maildir++'s maildirfolder,
 * Courier's courierimap*.  The walk skips them and counts them. */
bool maildir_is_software_file(const char *name);
/* True for the names of a Maildir's three subdirectories. */
bool maildir_is_subdir(const char *name);

/* The word of a flag letter ('S' → "seen"), or NULL for a letter without
 * one (lower-case keyword letters, unknown upper-case ones). */
const char *maildir_flag_tag(char letter);

/* A path below a root that names a message in a Maildir's cur/ or new/
 * ("INBOX/.Sent/cur/1.2.h:2,S"): *dir_n is the length before "cur/" or
 * "new/" (0 at the top), *base the offset of the file name.  False
 * otherwise. */
bool maildir_split(const char *path, size_t n, size_t *dir_n, size_t *base);

/* A Maildir message's identity: the hash of its mailbox base (the resolved
 * root it was found under) and its unique name, folder-free and flag-free,
 * so that flag changes, new/ → cur/ and moves between folders keep it. */
uint64_t maildir_id(const char *base, size_t base_n, const char *name, size_t name_n);

#endif
