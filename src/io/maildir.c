/* Maildir naming: see maildir.h.  The info separator is ':' on Unix; some
 * Windows-hosted clients use '!' or ';' (mbsync's default on Windows is
 * ';' and Dovecot accepts a configured one): we accept ':' and '!' as
 * separators for "2," and nothing else, to avoid reading flags into names
 * that merely contain a semicolon. */
#include "io/maildir.h"

#include <string.h>

static const char *maildir_info(const char *name, size_t len)
{
	for (size_t i = len; i >= 3; i--) {
		const char *p = name + i - 3;
		if ((p[0] == ':' || p[0] == '!') && p[1] == '2' && p[2] == ',')
			return p;
	}
	return NULL;
}

bool maildir_flags(const char *name, size_t len, size_t *off, size_t *n)
{
	const char *info = maildir_info(name, len);
	if (!info)
		return false;
	*off = (size_t)(info - name) + 3;
	*n = len - *off;
	return true;
}

size_t maildir_base_len(const char *name, size_t len)
{
	const char *info = maildir_info(name, len);
	return info ? (size_t)(info - name) : len;
}

bool maildir_is_subdir(const char *name)
{
	return !strcmp(name, "cur") || !strcmp(name, "new") || !strcmp(name, "tmp");
}
