/* SPDX-License-Identifier: MIT */
/* Maildir rules: see maildir.h.  The info separator is ':' on Unix;
 * Windows-hosted clients use '!' or ';' (mbsync's InfoDelimiter, needed
 * where ':' is not allowed in file names; Dovecot accepts a configured
 * one).  Only the separator followed by "2," or "1," is an info, so a
 * name that merely contains a semicolon keeps it. */
#include "io/maildir.h"
#include "core/hash.h"

#include <stdint.h>
#include <string.h>

static bool maildir_is_sep(char c)
{
	return c == ':' || c == '!' || c == ';';
}

/* The last "<sep>V," of a name (mutt and Dovecot read the last one too). */
static const char *maildir_info(const char *name, size_t len, char version)
{
	for (size_t i = len; i >= 3; i--) {
		const char *p = name + i - 3;
		if (maildir_is_sep(p[0]) && p[1] == version && p[2] == ',')
			return p;
	}
	return NULL;
}

bool maildir_flags(const char *name, size_t len, size_t *off, size_t *n)
{
	const char *info = maildir_info(name, len, '2');
	if (!info)
		return false;
	*off = (size_t)(info - name) + 3;
	*n = len - *off;
	return true;
}

size_t maildir_base_len(const char *name, size_t len)
{
	const char *info = maildir_info(name, len, '2');
	return info ? (size_t)(info - name) : len;
}

/* The last "<sep>1," before the base's end (maildir_base_len), found in
 * the same backward pass as that end: the walk asks it of every name of
 * cur/ and of every file's id, and two passes, each comparing three bytes
 * at every position, were a tenth of a read-only run's instructions.  A
 * comma is rare, so it is the byte looked at first. */
size_t maildir_unique_len(const char *name, size_t len)
{
	size_t base = len, one = SIZE_MAX;
	bool have_base = false;
	for (size_t i = len; i >= 3; i--) {
		const char *p = name + i - 3;
		if (p[2] != ',' || !maildir_is_sep(p[0]))
			continue;
		if (p[1] == '2' && !have_base) {
			have_base = true;
			base = i - 3;
			one = SIZE_MAX;   /* one met so far is inside the info */
		} else if (p[1] == '1' && one == SIZE_MAX && i <= base) {
			one = i - 3;
			if (have_base)
				break;
		}
	}
	return one != SIZE_MAX ? one : base;
}

bool maildir_is_software_file(const char *name)
{
	static const char *const exact[] = { ".notmuch", ".uidvalidity", "maildirfolder" };
	static const char *const prefix[] = { "dovecot", ".mbsyncstate", "courierimap" };
	/* the first byte first: asked of every name listed, whose first
	 * bytes (a message's: a digit, most often) rarely match */
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (name[0] == exact[i][0] && !strcmp(name, exact[i]))
			return true;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (name[0] == prefix[i][0] && !strncmp(name, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

bool maildir_is_subdir(const char *name)
{
	return !strcmp(name, "cur") || !strcmp(name, "new") || !strcmp(name, "tmp");
}

const char *maildir_flag_tag(char letter)
{
	/* the six flags of the Maildir specification, as notmuch and mu name
	 * them when they sync tags with flags */
	switch (letter) {
	case 'D': return "draft";
	case 'F': return "flagged";
	case 'P': return "passed";
	case 'R': return "replied";
	case 'S': return "seen";
	case 'T': return "trashed";
	default:  return NULL;
	}
}

bool maildir_split(const char *path, size_t n, size_t *dir_n, size_t *base)
{
	const char *slash = n ? memrchr(path, '/', n) : NULL;
	if (!slash || slash - path < 3 || (size_t)(slash - path) + 1 == n)
		return false;
	const char *sub = slash - 3;
	if ((memcmp(sub, "cur", 3) && memcmp(sub, "new", 3)) || (sub > path && sub[-1] != '/'))
		return false;
	*dir_n = sub > path ? (size_t)(sub - path) - 1 : 0;
	*base = (size_t)(slash - path) + 1;
	return true;
}

uint64_t maildir_id(const char *base, size_t base_n, const char *name, size_t name_n)
{
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, "maildir", 8);   /* the NUL too */
	h = hash_fnv1a(h, base, base_n);
	h = hash_fnv1a(h, "", 1);
	return hash_fnv1a(h, name, maildir_unique_len(name, name_n));
}
