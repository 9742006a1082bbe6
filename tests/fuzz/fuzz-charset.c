/* SPDX-License-Identifier: MIT */
/* Charsets to UTF-8.  The first byte picks a label (the common ones, the
 * stateful ones iconv handles through shift sequences, aliases, bogus
 * labels, or a label taken from the input itself); the rest is decoded.
 * Output is always valid UTF-8 (charset.h), and core/utf8.h's validator
 * agrees with its sequence decoder. */
#include "fuzz.h"
#include "mail/charset.h"

#include <errno.h>

static const char *const labels[] = {
	NULL,   /* STR_NULL: US-ASCII, UTF-8 accepted */
	"us-ascii", "utf-8", "UTF8", "iso-8859-1", "latin1", "windows-1252",
	"cp1252", "iso-8859-2", "iso-8859-15", "iso-8859-8-i", "koi8-r",
	"utf-7", "unicode-1-1-utf-7", "iso-2022-jp", "ISO-2022-JP-2",
	"iso-2022-kr", "gb2312", "gbk", "gb18030", "big5", "big5-hkscs",
	"shift_jis", "sjis", "euc-jp", "euc-kr", "ks_c_5601-1987", "cp949",
	"utf-16", "utf-16le", "utf-16be", "utf-32", "ucs-2", "tis-620",
	"windows-1251", "windows-1256", "macintosh", "x-unknown", "%CHARSET",
	"unknown-8bit", "default", "", " ", "utf-8'en", "=?", "bogus",
	"x-user-defined", "ISO_8859-1:1987", "csISOLatin1", "ebcdic-us",
	"iso-8859-1*en", "utf-8 ", "\"utf-8\"",
	"a-label-that-is-much-longer-than-any-real-charset-name-would-be-at-all",
};
#define N_LABELS (sizeof(labels) / sizeof(labels[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	struct mail_ctx *ctx = fuzz_ctx();
	uint8_t *p = fuzz_dup(data, size);
	const uint8_t *body = p + 1;
	size_t n = size - 1;
	struct str label = STR_NULL;
	char *lbuf = NULL;

	if (p[0] < N_LABELS) {
		if (labels[p[0]])
			label = (struct str){ labels[p[0]], strlen(labels[p[0]]) };
	} else {
		/* A label from the input: up to the first ';' (at most 64
		 * bytes), in its own exact-size buffer. */
		size_t k = 0;
		while (k < n && k < 64 && body[k] != ';')
			k++;
		lbuf = (char *)fuzz_dup(body, k);
		label = (struct str){ lbuf, k };
		body += k + (k < n);
		n -= k + (k < n);
	}

	struct dynbuf out;
	uint64_t warnings = 0, replaced = 0;
	dynbuf_init(&out, 0);
	FUZZ_CHECK(dynbuf_append(&out, "pre", 3) == 0);
	int r = charset_decode(ctx, label, body, n, &out, &warnings, &replaced);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	FUZZ_CHECK(out.len >= 3 && memcmp(out.p, "pre", 3) == 0);
	if (r == 0)
		FUZZ_CHECK(utf8_valid(out.p, out.len));
	FUZZ_CHECK(!replaced || (warnings & (UINT64_C(1) << MAIL_W_INVALID_BYTES_REPLACED)));
	/* Decoding empty input appends nothing. */
	FUZZ_CHECK(n > 0 || out.len == 3);
	FUZZ_CHECK(charset_cache_count(ctx->charsets) <= 64);

	/* utf8_valid's inline forms agree with utf8_seq taken one sequence
	 * at a time; decoding as UTF-8 is the identity on valid input and
	 * replaces something exactly when the input is not valid. */
	bool valid = utf8_valid(body, n), seq_valid = true;
	for (size_t i = 0; i < n && seq_valid;) {
		int l = utf8_seq(body + i, n - i);
		seq_valid = l > 0;
		i += seq_valid ? (size_t)l : 0;
	}
	FUZZ_CHECK(valid == seq_valid);
	dynbuf_reset(&out);
	replaced = 0;
	r = charset_decode(ctx, (struct str){ "utf-8", 5 }, body, n, &out, &warnings, &replaced);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
	if (r == 0) {
		FUZZ_CHECK(utf8_valid(out.p, out.len));
		FUZZ_CHECK(valid == (replaced == 0));
		if (valid)
			FUZZ_CHECK(out.len == n && (n == 0 || memcmp(out.p, body, n) == 0));
	}

	dynbuf_release(&out);
	free(lbuf);
	free(p);
	return 0;
}
