/* libmagic behind a lazily loaded cookie: see sniff.h.
 *
 * States: NEW (nothing loaded) → READY (magic_open + magic_load succeeded)
 * or FAILED (either failed; never retried, so a missing database costs one
 * attempt per thread, not one per attachment).  The load is the only place
 * the parser makes syscalls (libmagic opens and maps its database), once per
 * thread.  Flags: MAGIC_MIME_TYPE for "type/subtype" answers; the text,
 * encoding, token, CSV and JSON tests are off because they are what makes
 * text slow, and binary formats do not need them; MAGIC_NO_CHECK_COMPRESS
 * keeps libmagic from decompressing (a gzip is application/gzip to us);
 * MAGIC_ERROR turns unreadable-data situations into errors, not guesses. */
#include "mail/sniff.h"
#include "core/xalloc.h"
#include "core/limits.h"

#include <magic.h>
#include <string.h>

enum sniff_state { SNIFF_NEW, SNIFF_READY, SNIFF_FAILED };

struct sniff_cookie {
	magic_t magic;
	enum sniff_state state;
};

#define SNIFF_FLAGS (MAGIC_MIME_TYPE | MAGIC_ERROR | MAGIC_NO_CHECK_TEXT | \
                     MAGIC_NO_CHECK_ENCODING | MAGIC_NO_CHECK_TOKENS |     \
                     MAGIC_NO_CHECK_CSV | MAGIC_NO_CHECK_JSON |            \
                     MAGIC_NO_CHECK_COMPRESS)

struct sniff_cookie *sniff_cookie_new(void)
{
	struct sniff_cookie *s = xmalloc(sizeof(*s));
	if (!s)
		return NULL;
	s->magic = NULL;
	s->state = SNIFF_NEW;
	return s;
}

void sniff_cookie_free(struct sniff_cookie *s)
{
	if (!s)
		return;
	if (s->magic)
		magic_close(s->magic);
	xfree(s);
}

static bool sniff_load(struct sniff_cookie *s)
{
	s->state = SNIFF_FAILED;
	s->magic = magic_open(SNIFF_FLAGS);
	if (!s->magic)
		return false;
	if (magic_load(s->magic, NULL) != 0) {
		magic_close(s->magic);
		s->magic = NULL;
		return false;
	}
	/* We hand it at most LIMIT_SNIFF_BYTES anyway; saying so keeps its
	 * own buffers small. */
	size_t max = LIMIT_SNIFF_BYTES;
	magic_setparam(s->magic, MAGIC_PARAM_BYTES_MAX, &max);
	s->state = SNIFF_READY;
	return true;
}

/* Text formats whose soft magic libmagic still recognises quickly with its
 * text tests off, and which are worth naming. */
static const struct {
	const char *prefix;
	size_t n;
} text_magic[] = {
	{ "%PDF-", 5 }, { "%!PS", 4 }, { "{\\rtf", 5 }, { "-----BEGIN PGP", 14 },
};

static const struct {
	const char *sig;
	size_t n;
	const char *type;
} signatures[] = {
	{ "\x89PNG\r\n\x1a\n", 8, "image/png" },
	{ "\xff\xd8\xff", 3, "image/jpeg" },
	{ "GIF87a", 6, "image/gif" },
	{ "GIF89a", 6, "image/gif" },
	{ "%PDF-", 5, "application/pdf" },
	{ "\x1f\x8b\x08", 3, "application/gzip" },
};

/* No NUL and no C0 control other than the ones text uses (tab, line ends,
 * form feed, escape for ISO-2022). */
static bool looks_text(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1B) ||
		    c == 0x7F)
			return false;
	}
	return true;
}

const char *sniff_buffer(struct sniff_cookie *s, const uint8_t *p, size_t n)
{
	if (!s || n == 0)
		return NULL;
	if (n > LIMIT_SNIFF_BYTES)
		n = LIMIT_SNIFF_BYTES;
	/* Text costs libmagic ~150 us even with its text tests off, and the
	 * answer is then application/octet-stream: a text-looking prefix is
	 * "text/plain" here, unless it starts like a text format worth the
	 * call.  Binary formats all have control bytes in their first KiB. */
	if (looks_text(p, n)) {
		bool magic = false;
		for (size_t i = 0; i < sizeof(text_magic) / sizeof(text_magic[0]); i++)
			if (n >= text_magic[i].n && memcmp(p, text_magic[i].prefix, text_magic[i].n) == 0)
				magic = true;
		if (!magic)
			return "text/plain";
	}
	/* The commonest attachment formats, by their unambiguous signatures,
	 * with the names libmagic gives them: libmagic walks its whole
	 * database even for these (0.1 to 1 ms a call measured here). */
	for (size_t i = 0; i < sizeof(signatures) / sizeof(signatures[0]); i++)
		if (n >= signatures[i].n && memcmp(p, signatures[i].sig, signatures[i].n) == 0)
			return signatures[i].type;
	if (s->state == SNIFF_FAILED)
		return NULL;
	if (s->state == SNIFF_NEW && !sniff_load(s))
		return NULL;
	const char *t = magic_buffer(s->magic, p, n);
	if (!t || !*t)
		return NULL;
	return t;
}
