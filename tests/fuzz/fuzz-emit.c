/* SPDX-License-Identifier: MIT */
/* The emitter on parsed messages: the input is parsed (as fuzz-message
 * does), wrapped in a record whose I/O fields also come from the input (a
 * path of arbitrary bytes, an mtime over the int64 range, Maildir or mbox,
 * an errno), and written in all three formats.
 *
 * Checked: every JSON line is valid UTF-8 and one well-formed JSON object
 * (a strict little RFC 8259 checker below); JSONL is one line and es-bulk
 * two; a TSV line is valid UTF-8 with as many columns as the TSV header;
 * every record ends in '\n'; and at a small dynbuf cap, a failed record
 * leaves the buffer exactly as it was (emit.h: all or nothing). */
#include "check_message.h"
#include "emit/emit.h"
#include "mail/mail.h"

#include <errno.h>

/* ---- a strict JSON checker -------------------------------------------- */

struct js {
	const char *p, *end;
	int depth;
};

static int js_value(struct js *j);

static void js_ws(struct js *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int js_lit(struct js *j, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return 0;
	j->p += n;
	return 1;
}

static int js_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int js_string(struct js *j)
{
	if (j->p >= j->end || *j->p != '"')
		return 0;
	j->p++;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p++;
		if (c == '"')
			return 1;
		if (c < 0x20)
			return 0;
		if (c == '\\') {
			if (j->p >= j->end)
				return 0;
			c = (unsigned char)*j->p++;
			if (c == 'u') {
				if (j->end - j->p < 4)
					return 0;
				for (int i = 0; i < 4; i++)
					if (!js_hex(j->p[i]))
						return 0;
				j->p += 4;
			} else if (!strchr("\"\\/bfnrt", c) || c == 0) {
				return 0;
			}
		}
	}
	return 0;
}

static int js_digits(struct js *j)
{
	const char *s = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static int js_number(struct js *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!js_digits(j))
		return 0;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!js_digits(j))
			return 0;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!js_digits(j))
			return 0;
	}
	return 1;
}

static int js_container(struct js *j, char open, char close)
{
	if (++j->depth > 32)
		return 0;
	j->p++;   /* open */
	(void)open;
	js_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return 1;
	}
	for (;;) {
		if (close == '}') {
			if (!js_string(j))
				return 0;
			js_ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return 0;
		}
		if (!js_value(j))
			return 0;
		js_ws(j);
		if (j->p >= j->end)
			return 0;
		char c = *j->p++;
		if (c == close)
			break;
		if (c != ',')
			return 0;
		js_ws(j);
	}
	j->depth--;
	return 1;
}

static int js_value(struct js *j)
{
	js_ws(j);
	if (j->p >= j->end)
		return 0;
	switch (*j->p) {
	case '{': return js_container(j, '{', '}');
	case '[': return js_container(j, '[', ']');
	case '"': return js_string(j);
	case 't': return js_lit(j, "true");
	case 'f': return js_lit(j, "false");
	case 'n': return js_lit(j, "null");
	default:  return js_number(j);
	}
}

/* One JSON object on one line, '\n'-terminated; returns the line length
 * with its '\n'. */
static size_t check_json_line(const char *p, size_t n)
{
	const char *nl = memchr(p, '\n', n);
	FUZZ_CHECK(nl != NULL);
	struct js j = { p, nl, 0 };
	FUZZ_CHECK(j.p < j.end && *j.p == '{');
	FUZZ_CHECK(js_value(&j));
	FUZZ_CHECK(j.p == nl);
	return (size_t)(nl - p) + 1;
}

/* ---- the target -------------------------------------------------------- */

static size_t count_byte(const char *p, size_t n, char c)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i] == c;
	return k;
}

static void check_record(const struct emit_options *o, const char *p, size_t n)
{
	FUZZ_CHECK(n > 0 && p[n - 1] == '\n');
	FUZZ_CHECK(utf8_valid(p, n));
	switch (o->format) {
	case EMIT_JSONL:
		FUZZ_CHECK(check_json_line(p, n) == n);
		break;
	case EMIT_ES_BULK: {
		size_t k = check_json_line(p, n);
		FUZZ_CHECK(k < n);
		FUZZ_CHECK(check_json_line(p + k, n - k) == n - k);
		break;
	}
	case EMIT_TSV: {
		FUZZ_CHECK(count_byte(p, n, '\n') == 1);
		struct dynbuf h;
		dynbuf_init(&h, 0);
		FUZZ_CHECK(emit_tsv_header(o, &h) == 0);
		FUZZ_CHECK(count_byte(p, n, '\t') == count_byte(h.p, h.len, '\t'));
		dynbuf_release(&h);
		break;
	}
	}
}

static uint64_t take(const uint8_t **p, size_t *n, size_t k)
{
	uint64_t v = 0;
	for (size_t i = 0; i < k && *n; i++, (*p)++, (*n)--)
		v = v << 8 | **p;
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mail_ctx *ctx;
	if (!ctx && !(ctx = mail_ctx_new()))
		abort();

	/* Layout: 1 byte of flags, 8 of mtime, 1 of path length, the path,
	 * then the message. */
	uint8_t *buf = fuzz_dup(data, size);
	const uint8_t *p = buf;
	size_t n = size;
	unsigned flags = (unsigned)take(&p, &n, 1);
	int64_t mtime = (int64_t)take(&p, &n, 8);
	size_t plen = (size_t)take(&p, &n, 1) % 48;
	if (plen > n)
		plen = n;
	char *path = (char *)fuzz_dup(p, plen);
	p += plen;
	n -= plen;

	struct mail_options mo = {
		.max_text = flags & 1 ? 61 : LIMIT_MAX_TEXT_DEFAULT,
		.want_text = true,
		.want_headers = true,
	};
	struct mail_message m;
	struct record rec;
	memset(&rec, 0, sizeof(rec));
	rec.io.root = (struct str){ "Mail", 4 };
	rec.io.path = (struct str){ path, plen };
	rec.io.have_stat = !(flags & 2);
	rec.io.size = n;
	rec.io.mtime_sec = mtime;
	rec.io.mtime_nsec = (uint32_t)(mtime & 0x3FFFFFFF) % 1000000000u;
	if (flags & 4) {
		rec.io.maildir = true;
		rec.io.folder = (struct str){ "Sent", 4 };
		rec.io.subdir = (struct str){ "cur", 3 };
		rec.io.flags = (struct str){ "RS", 2 };
	}
	if (flags & 8) {
		rec.io.in_mbox = true;
		rec.io.offset = (uint64_t)mtime;
		rec.io.length = n;
	}
	if (flags & 0x10) {
		/* An I/O failure instead of a message: reason and errno (valid
		 * and unknown numbers) from the flags. */
		rec.io.reason = (enum record_reason)(1 + (flags >> 5) % 6);
		rec.io.err = rec.io.reason == RECORD_IO ? (int)(flags * 17 % 4200) : 0;
		rec.io.notes = flags >> 6;
	} else {
		int r = mail_parse(ctx, &mo, p, n, &m);
		FUZZ_CHECK(r == 0 || r == -ENOMEM || r == -E2BIG);
		if (r == 0) {
			fuzz_check_message(&mo, &m);
			rec.mail = &m;
		} else {
			rec.io.reason = RECORD_INTERNAL;
		}
	}

	static const enum emit_format formats[] = { EMIT_JSONL, EMIT_ES_BULK, EMIT_TSV };
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct emit_options o;
		emit_options_init(&o);
		o.format = formats[i];
		o.headers = true;
		o.no_text = flags & 0x20;
		o.es_index = flags & 0x40 ? "mail-\xff\"idx" : NULL;
		if (flags & 0x80) {
			/* A TSV-like selection in an unusual order. */
			FUZZ_CHECK(emit_fields_parse(&o, "subject, from,path,text,headers,"
			           "attachments,date,warnings,to,error,detected_type,mtime",
			           NULL, NULL) == 0);
		}

		struct dynbuf out;
		dynbuf_init(&out, 0);
		FUZZ_CHECK(dynbuf_append(&out, "prev\n", 5) == 0);
		o.es_errors = true;   /* every record has a shape to check */
		FUZZ_CHECK(emit_record(&o, &rec, &out) == 0);
		check_record(&o, out.p + 5, out.len - 5);
		if (o.format == EMIT_ES_BULK) {
			/* without --es-errors: the same record, or none at all */
			struct dynbuf plain;
			dynbuf_init(&plain, 0);
			o.es_errors = false;
			FUZZ_CHECK(emit_record(&o, &rec, &plain) == 0);
			FUZZ_CHECK(plain.len == 0 ||
			           (plain.len == out.len - 5 && !memcmp(plain.p, out.p + 5, plain.len)));
			dynbuf_release(&plain);
			o.es_errors = true;
		}

		/* All or nothing at a cap: the same record into a buffer that
		 * cannot hold it either fits whole or leaves it untouched. */
		struct dynbuf small;
		dynbuf_init(&small, 5 + (out.len - 5) / 2);
		FUZZ_CHECK(dynbuf_append(&small, "prev\n", 5) == 0);
		int r = emit_record(&o, &rec, &small);
		FUZZ_CHECK(r == 0 || r == -E2BIG);
		if (r == 0)
			FUZZ_CHECK(small.len == out.len && memcmp(small.p, out.p, out.len) == 0);
		else
			FUZZ_CHECK(small.len == 5 && memcmp(small.p, "prev\n", 5) == 0);
		dynbuf_release(&small);
		dynbuf_release(&out);
	}

	free(path);
	free(buf);
	return 0;
}
