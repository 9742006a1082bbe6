/* SPDX-License-Identifier: MIT */
/* Content sniffing (mail/sniff.c): the built-in answers (text, PGP
 * armour, signatures, PKCS#7, the zip family) and libmagic behind them.
 *
 * Checked: no answer without a cookie or for empty input; an answer is a
 * NUL-terminated "type/subtype" of printable ASCII; the same bytes get the
 * same answer (the zip family's answer lives in the cookie and must
 * survive the next call); only the first LIMIT_SNIFF_BYTES matter.  The zip
 * parser reads local file headers at offsets taken from the input: ASan
 * watches it on an exact-size copy.
 *
 * With FUZZ_SNIFF_LIBMAGIC=1 in the environment, also: the answers sniff.c
 * gives in libmagic's stead for PGP armour, PKCS#7 and the zip family
 * ("where its answer is certain") are the ones libmagic gives with
 * sniff.c's flags.  Off by default because they are not, yet: a zip
 * header libmagic calls application/octet-stream (an empty name), OOXML in
 * a layout libmagic still recognises, ODF types libmagic does not know or
 * reads further, zip headers and PKCS#7 blobs in which libmagic finds
 * another format (x-dbt, x-dosexec): the inputs named libmagic-* in
 * corpus/sniff/.  Never compared: "text/plain" for
 * text-looking bytes (libmagic, with its text tests off, says
 * application/octet-stream), and the answers by signature (PNG, JPEG, GIF,
 * PDF, gzip), which name the format from its magic bytes where libmagic
 * may look further and call a damaged file application/octet-stream. */
#include "fuzz.h"
#include "core/limits.h"
#include "mail/sniff.h"

#include <magic.h>

static struct sniff_cookie *cookie;
static magic_t reference;
static int compare = -1;   /* FUZZ_SNIFF_LIBMAGIC, read once */

static void check_type(const char *t)
{
	size_t n = strlen(t), slash = 0;
	FUZZ_CHECK(n >= 3 && n < 256);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(t[i] > ' ' && t[i] < 0x7f);
		slash += t[i] == '/';
	}
	FUZZ_CHECK(slash == 1 && t[0] != '/' && t[n - 1] != '/');
}

/* The signatures sniff.c answers by (its signatures[] and the PDF entry
 * of text_magic[]): the answer there is the format's name, not libmagic's
 * verdict on the rest of the bytes. */
static bool by_signature(const uint8_t *p, size_t n)
{
	static const struct {
		const char *sig;
		size_t n;
	} sigs[] = {
		{ "\x89PNG\r\n\x1a\n", 8 }, { "\xff\xd8\xff", 3 }, { "GIF87a", 6 }, { "GIF89a", 6 },
		{ "%PDF-", 5 }, { "\x1f\x8b\x08", 3 },
	};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (n >= sigs[i].n && !memcmp(p, sigs[i].sig, sigs[i].n))
			return true;
	return false;
}

/* libmagic's answer with sniff.c's flags and prefix, or NULL. */
static const char *libmagic(const uint8_t *p, size_t n)
{
	if (!reference) {
		reference = magic_open(SNIFF_MAGIC_FLAGS);
		FUZZ_CHECK(reference);
		if (magic_load(reference, NULL) != 0)
			abort();
		size_t max = LIMIT_SNIFF_BYTES;
		magic_setparam(reference, MAGIC_PARAM_BYTES_MAX, &max);
	}
	const char *t = magic_buffer(reference, p, n);
	return t && *t ? t : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!cookie && !(cookie = sniff_cookie_new()))
		abort();
	if (compare < 0) {
		const char *v = getenv("FUZZ_SNIFF_LIBMAGIC");
		compare = v && *v == '1';
	}
	uint8_t *p = fuzz_dup(data, size);

	FUZZ_CHECK(!sniff_buffer(NULL, p, size));
	const char *t = sniff_buffer(cookie, p, size);
	if (size == 0)
		FUZZ_CHECK(!t);
	char first[256] = "";
	if (t) {
		check_type(t);
		snprintf(first, sizeof(first), "%s", t);
	}
	/* the same answer again, and for the capped prefix alone */
	const char *again = sniff_buffer(cookie, p, size);
	FUZZ_CHECK(!t == !again && (!t || !strcmp(first, again)));
	if (size > LIMIT_SNIFF_BYTES) {
		const char *capped = sniff_buffer(cookie, p, LIMIT_SNIFF_BYTES);
		FUZZ_CHECK(!t == !capped && (!t || !strcmp(first, capped)));
	}
	/* the shortcuts answer as libmagic would */
	if (compare && t && strcmp(first, "text/plain") && !by_signature(p, size)) {
		size_t n = size < LIMIT_SNIFF_BYTES ? size : LIMIT_SNIFF_BYTES;
		const char *want = libmagic(p, n);
		if (!want || strcmp(first, want)) {
			fprintf(stderr, "sniff: %s, libmagic: %s\n", first, want ? want : "(none)");
			FUZZ_CHECK(!"sniff_buffer and libmagic disagree");
		}
	}
	free(p);
	return 0;
}
