/* SPDX-License-Identifier: MIT */
/* Unit tests for emit/emit and record.c: every format, the field selection,
 * error and not-mail records, groups, es-bulk ids, and the all-or-nothing
 * rule, each against the exact expected bytes.
 *
 * The es-bulk hash ids were computed independently (a three-line FNV-1a in
 * Python over the same bytes).  That every line is valid JSON is checked by
 * the CLI suite with an independent parser; here the exact strings hold. */
#include "core/dynbuf.h"
#include "mail/mail.h"
#include "emit/emit.h"
#include "core/record.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* mail/mail.c owns mail_warning_name(); until it is linked in, this weak
 * copy (from the same X-macro) stands in. */
__attribute__((weak)) const char *mail_warning_name(enum mail_warning w)
{
	static const char *const names[] = {
#define W_NAME(id, name) [MAIL_W_##id] = name,
		MAIL_WARNINGS(W_NAME)
#undef W_NAME
	};
	return (unsigned)w < MAIL_W__COUNT ? names[w] : NULL;
}

#define S(lit) ((struct str){ (lit), sizeof(lit) - 1 })
#define FFFD "\xEF\xBF\xBD"

/* ---- fixtures ---------------------------------------------------------- */

static struct record io_record(void)
{
	struct record r;
	memset(&r, 0, sizeof(r));
	r.io.root = S("mail");
	r.io.path = S("cur/1:2,S");
	r.io.have_stat = true;
	r.io.size = 1234;
	r.io.mtime_sec = 1700000000;
	r.io.maildir = true;
	r.io.folder = S("");
	r.io.subdir = S("cur");
	r.io.flags = S("S");
	return r;
}

static struct mail_addr from_v[] = {
	{ .name = S("Ann \"A\" Example"), .address = S("ann@example.org") },
};
static struct mail_addr group_members[] = {
	{ .name = S("Bob"), .address = S("bob@example.org") },
	{ .address = S("carol@example.org") },
};
static struct mail_addr to_v[] = {
	{ .name = S("Doe, John"), .address = S("john@example.org") },
	{ .name = S("team"), .is_group = true, .members = group_members, .n_members = 2 },
	{ .name = S("undisclosed-recipients"), .is_group = true },
};
static struct str refs_v[] = { S("a@x"), S("b@x") };
static struct mail_attachment att_v[] = {
	{ .filename = S("r\xC3\xA9sum\xC3\xA9.pdf"), .content_type = S("application/pdf"),
	  .detected_type = S("application/pdf"), .disposition = S("attachment"),
	  .content_id = STR_NULL, .size = 5120 },
	{ .content_type = S("image/png"), .size = 7 },
};
static struct mail_header hdr_v[] = {
	{ S("From"), S("Ann <ann@example.org>") },
	{ S("Subject"), S("Hi\tthere") },
};

static struct mail_message full_message(void)
{
	struct mail_message m;
	memset(&m, 0, sizeof(m));
	m.is_mail = true;
	m.message_id = S("id1@example.org");
	m.in_reply_to = S("a@x");
	m.references = refs_v;
	m.n_references = 2;
	m.has_date = true;
	m.date = 1700000000;
	m.from = (struct mail_addr_list){ from_v, 1, true };
	m.to = (struct mail_addr_list){ to_v, 3, true };
	m.cc = (struct mail_addr_list){ NULL, 0, true };   /* "Cc:" with nothing */
	m.subject = S("Hello \"world\"\n");
	m.list_id = S("list.example.org");
	m.content_type = S("multipart/mixed");
	m.text = S("line 1\nline\t2 \xE2\x82\xAC");
	m.text_truncated = false;
	m.attachments = att_v;
	m.n_attachments = 2;
	m.parts = 3;
	m.headers = hdr_v;
	m.n_headers = 2;
	mail_warn(&m.warnings, MAIL_W_BAD_DATE);
	mail_warn(&m.warnings, MAIL_W_DUPLICATED_HEADER);
	return m;
}

/* emit_record must give exactly `want`, appended after what was there. */
static void check_emit(const struct emit_options *o, const struct record *r,
                       const char *want)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(dynbuf_append(&b, "prev", 4), 0);
	int rc = emit_record(o, r, &b);
	assert_int_equal(rc, 0);
	if (b.len - 4 != strlen(want) || memcmp(b.p + 4, want, b.len - 4) != 0)
		fail_msg("got  %.*s\nwant %s", (int)(b.len - 4), b.p + 4, want);
	assert_memory_equal(b.p, "prev", 4);
	dynbuf_release(&b);
}

/* ---- record.c ----------------------------------------------------------- */

static void test_emit_reason_names(void **state)
{
	(void)state;
	assert_null(record_reason_name(RECORD_NONE));
	assert_string_equal(record_reason_name(RECORD_IO), "io-error");
	assert_string_equal(record_reason_name(RECORD_NOT_REGULAR), "not-regular");
	assert_string_equal(record_reason_name(RECORD_SYMLINK), "symlink");
	assert_string_equal(record_reason_name(RECORD_TOO_LARGE), "too-large");
	assert_string_equal(record_reason_name(RECORD_NOT_MAIL), "not-mail");
	assert_string_equal(record_reason_name(RECORD_INTERNAL), "internal");
	assert_null(record_reason_name((enum record_reason)99));
}

/* ---- JSONL -------------------------------------------------------------- */

static void test_emit_jsonl_io_only(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	struct record r = io_record();
	check_emit(&o, &r,
	           "{\"path\":\"cur/1:2,S\",\"root\":\"mail\",\"size\":1234,"
	           "\"mtime\":\"2023-11-14T22:13:20Z\",\"folder\":\"\",\"subdir\":\"cur\","
	           "\"flags\":\"S\",\"id\":\"0000000000000000\",\"tags\":[\"seen\"]}\n");

	/* Not Maildir, no stat, no root: only the path is left. */
	r.io.maildir = false;
	r.io.have_stat = false;
	r.io.root = STR_NULL;
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"id\":\"0000000000000000\"}\n");
}

static void test_emit_jsonl_full_message(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.headers = true;
	struct record r = io_record();
	struct mail_message m = full_message();
	r.mail = &m;
	check_emit(&o, &r,
	           "{\"path\":\"cur/1:2,S\",\"root\":\"mail\",\"size\":1234,"
	           "\"mtime\":\"2023-11-14T22:13:20Z\",\"folder\":\"\",\"subdir\":\"cur\","
	           "\"flags\":\"S\","
	           "\"message_id\":\"id1@example.org\",\"in_reply_to\":\"a@x\","
	           "\"references\":[\"a@x\",\"b@x\"],"
	           "\"date\":\"2023-11-14T22:13:20Z\","
	           "\"from\":[{\"name\":\"Ann \\\"A\\\" Example\",\"address\":\"ann@example.org\"}],"
	           "\"to\":[{\"name\":\"Doe, John\",\"address\":\"john@example.org\"},"
	           "{\"group\":\"team\",\"members\":[{\"name\":\"Bob\",\"address\":\"bob@example.org\"},"
	           "{\"name\":null,\"address\":\"carol@example.org\"}]},"
	           "{\"group\":\"undisclosed-recipients\",\"members\":[]}],"
	           "\"cc\":[],"
	           "\"subject\":\"Hello \\\"world\\\"\\n\",\"list_id\":\"list.example.org\","
	           "\"content_type\":\"multipart/mixed\","
	           "\"text\":\"line 1\\nline\\t2 \xE2\x82\xAC\",\"text_truncated\":false,"
	           "\"attachments\":[{\"filename\":\"r\xC3\xA9sum\xC3\xA9.pdf\","
	           "\"content_type\":\"application/pdf\",\"detected_type\":\"application/pdf\","
	           "\"disposition\":\"attachment\",\"content_id\":null,\"size\":5120},"
	           "{\"filename\":null,\"content_type\":\"image/png\",\"detected_type\":null,"
	           "\"disposition\":null,\"content_id\":null,\"size\":7}],"
	           "\"parts\":3,\"warnings\":[\"duplicated-header\",\"bad-date\"],"
	           "\"headers\":[[\"From\",\"Ann <ann@example.org>\"],[\"Subject\",\"Hi\\tthere\"]],"
	           "\"id\":\"0000000000000000\",\"thread_id\":\"0a563697f39080be\",\"tags\":[\"seen\"]}\n");
}

static void test_emit_jsonl_no_text_no_headers(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.no_text = true;
	assert_int_equal(emit_fields_parse(&o, "path,subject,text,text_truncated,headers,parts",
	                                   NULL, NULL), 0);
	struct record r = io_record();
	struct mail_message m = full_message();
	m.text_truncated = true;
	r.mail = &m;
	/* headers needs --headers; text and text_truncated are off. */
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"subject\":\"Hello \\\"world\\\"\\n\",\"parts\":3}\n");
	o.no_text = false;
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"subject\":\"Hello \\\"world\\\"\\n\","
	                   "\"text\":\"line 1\\nline\\t2 \xE2\x82\xAC\",\"text_truncated\":true,"
	                   "\"parts\":3}\n");
}

static void test_emit_jsonl_bad_date(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	assert_int_equal(emit_fields_parse(&o, "date,date_raw,message_id", NULL, NULL), 0);
	struct record r = io_record();
	struct mail_message m;
	memset(&m, 0, sizeof(m));
	m.is_mail = true;
	m.date_raw = S("yesterday-ish");
	r.mail = &m;
	check_emit(&o, &r, "{\"date\":null,\"date_raw\":\"yesterday-ish\"}\n");
	/* No Date field at all: neither key. */
	m.date_raw = STR_NULL;
	check_emit(&o, &r, "{}\n");
	/* An empty Message-ID is present, not absent. */
	m.message_id = S("");
	check_emit(&o, &r, "{\"message_id\":\"\"}\n");
}

static void test_emit_jsonl_invalid_utf8_path(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	assert_int_equal(emit_fields_parse(&o, "root,path", NULL, NULL), 0);
	struct record r = io_record();
	r.io.root = S("Mail\xFF");
	r.io.path = S("cur/caf\xE9");
	/* JSON keeps enum order whatever --fields says. */
	check_emit(&o, &r,
	           "{\"path\":\"cur/caf" FFFD "\",\"path_b64\":\"Y3VyL2NhZuk=\","
	           "\"root\":\"Mail" FFFD "\",\"root_b64\":\"TWFpbP8=\"}\n");
}

static void test_emit_jsonl_mbox_and_notes(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	struct record r;
	memset(&r, 0, sizeof(r));
	r.io.root = S("archive.mbox");
	r.io.path = S("");
	r.io.in_mbox = true;
	r.io.offset = 1234;
	r.io.length = 0;
	r.io.notes = RECORD_GREW | RECORD_SHRANK;
	check_emit(&o, &r, "{\"path\":\"\",\"root\":\"archive.mbox\",\"offset\":1234,"
	                   "\"length\":0,\"notes\":[\"grew\",\"shrank\"],\"id\":\"b90b8d36fa0d52d9\"}\n");
	r.io.notes = RECORD_SHRANK;
	r.io.in_mbox = false;
	check_emit(&o, &r, "{\"path\":\"\",\"root\":\"archive.mbox\",\"notes\":[\"shrank\"],\"id\":\"0000000000000000\"}\n");
}

/* ---- error and not-mail records ------------------------------------------ */

static void test_emit_error_records(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	struct record r = io_record();
	r.io.have_stat = false;
	r.io.reason = RECORD_IO;
	r.io.err = ENOENT;
	check_emit(&o, &r,
	           "{\"path\":\"cur/1:2,S\",\"root\":\"mail\",\"folder\":\"\",\"subdir\":\"cur\","
	           "\"flags\":\"S\",\"error\":{\"reason\":\"io-error\",\"errno\":\"ENOENT\","
	           "\"message\":\"No such file or directory\"},\"id\":\"0000000000000000\",\"tags\":[\"seen\"]}\n");

	assert_int_equal(emit_fields_parse(&o, "path,error", NULL, NULL), 0);
	r.io.err = EACCES;
	r.io.message = "vanished \"twice\"";
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"error\":{\"reason\":\"io-error\","
	                   "\"errno\":\"EACCES\",\"message\":\"vanished \\\"twice\\\"\"}}\n");

	/* No errno: reason and a stock message. */
	r.io.message = NULL;
	r.io.err = 0;
	r.io.reason = RECORD_NOT_REGULAR;
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"error\":{\"reason\":\"not-regular\","
	                   "\"message\":\"not a regular file\"}}\n");
	r.io.reason = RECORD_TOO_LARGE;
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"error\":{\"reason\":\"too-large\","
	                   "\"message\":\"larger than --max-size\"}}\n");
	/* An errno unknown to libc still gives valid output. */
	r.io.reason = RECORD_IO;
	r.io.err = 4000;
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"error\":{\"reason\":\"io-error\","
	                   "\"errno\":\"4000\",\"message\":\"input/output error\"}}\n");
	/* A corrupt reason is reported as internal, never as bad JSON. */
	r.io.err = 0;
	r.io.reason = (enum record_reason)77;
	check_emit(&o, &r, "{\"path\":\"cur/1:2,S\",\"error\":{\"reason\":\"internal\","
	                   "\"message\":\"internal error\"}}\n");
}

static void test_emit_not_mail(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	struct record r = io_record();
	r.io.maildir = false;
	struct mail_message m = full_message();   /* mail fields must not leak */
	m.is_mail = false;
	m.detected_type = S("image/png");
	r.mail = &m;
	check_emit(&o, &r,
	           "{\"path\":\"cur/1:2,S\",\"root\":\"mail\",\"size\":1234,"
	           "\"mtime\":\"2023-11-14T22:13:20Z\",\"error\":{\"reason\":\"not-mail\","
	           "\"message\":\"not a mail message\"},\"detected_type\":\"image/png\","
	           "\"id\":\"0000000000000000\"}\n");

	o.format = EMIT_TSV;
	assert_int_equal(emit_fields_parse(&o, "path,error,subject,detected_type", NULL, NULL), 0);
	check_emit(&o, &r, "cur/1:2,S\tnot-mail: not a mail message\t\timage/png\n");
}

/* ---- es-bulk -------------------------------------------------------------- */

static void test_emit_es_bulk(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.format = EMIT_ES_BULK;
	assert_int_equal(emit_fields_parse(&o, "path,subject,id", NULL, NULL), 0);
	struct record r = io_record();
	struct mail_message m = full_message();
	r.mail = &m;
	r.io.id = UINT64_C(0x0123456789abcdef);
	/* _id is the record's id, whatever the Message-ID says */
	check_emit(&o, &r, "{\"index\":{\"_id\":\"0123456789abcdef\"}}\n"
	                   "{\"path\":\"cur/1:2,S\",\"subject\":\"Hello \\\"world\\\"\\n\",\"id\":\"0123456789abcdef\"}\n");

	o.es_index = "mail-2024";
	m.message_id = STR_NULL;
	check_emit(&o, &r, "{\"index\":{\"_index\":\"mail-2024\",\"_id\":\"0123456789abcdef\"}}\n"
	                   "{\"path\":\"cur/1:2,S\",\"subject\":\"Hello \\\"world\\\"\\n\",\"id\":\"0123456789abcdef\"}\n");

	/* An mbox message: the archive's id and the offset make the id. */
	struct record mb;
	memset(&mb, 0, sizeof(mb));
	mb.io.root = S("archive.mbox");
	mb.io.path = S("");
	mb.io.id = UINT64_C(0x0123456789abcdef);
	mb.io.in_mbox = true;
	mb.io.offset = 1234;
	o.es_index = NULL;
	char hex[17], want[128];
	record_id_hex(record_id(&mb.io), hex);
	assert_string_not_equal(hex, "0123456789abcdef");
	snprintf(want, sizeof(want), "{\"index\":{\"_id\":\"%s\"}}\n{\"path\":\"\",\"id\":\"%s\"}\n", hex, hex);
	check_emit(&o, &mb, want);
	mb.io.offset = 1235;
	char hex2[17];
	record_id_hex(record_id(&mb.io), hex2);
	assert_string_not_equal(hex, hex2);
}

/* Two copies of a message (one Message-ID, two files) are two documents:
 * a sender-chosen Message-ID of any length never reaches _id, and _id is
 * 16 hex digits, far below Elasticsearch's 512 bytes. */
static void test_emit_es_bulk_id_not_message_id(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.format = EMIT_ES_BULK;
	assert_int_equal(emit_fields_parse(&o, "path", NULL, NULL), 0);
	struct record r = io_record();
	struct mail_message m = full_message();
	static char longid[600];
	memset(longid, 0xff, sizeof(longid));   /* invalid UTF-8: 3 bytes each once escaped */
	m.message_id = (struct str){ longid, sizeof(longid) };
	r.mail = &m;
	r.io.id = 1;
	check_emit(&o, &r, "{\"index\":{\"_id\":\"0000000000000001\"}}\n{\"path\":\"cur/1:2,S\"}\n");
	r.io.id = 2;
	check_emit(&o, &r, "{\"index\":{\"_id\":\"0000000000000002\"}}\n{\"path\":\"cur/1:2,S\"}\n");
}

/* thread_id: the first References id, else In-Reply-To, else the message's
 * own Message-ID; a message naming none is a thread of its own (its id). */
static void test_emit_thread_id(void **state)
{
	(void)state;
	struct mail_message m = full_message();
	struct str refs[2] = { S("root@x"), S("mid@x") };
	m.references = refs;
	m.n_references = 2;
	m.in_reply_to = S("mid@x");
	m.message_id = S("leaf@x");
	struct record rec = io_record();
	rec.io.id = UINT64_C(0xfeed);
	rec.mail = &m;
	uint64_t t = emit_record_thread_id(&rec);
	struct mail_message root = full_message();
	root.references = NULL;
	root.n_references = 0;
	root.in_reply_to = STR_NULL;
	root.message_id = S("root@x");
	rec.mail = &root;
	assert_int_equal(emit_record_thread_id(&rec), t);
	struct mail_message reply = root;
	reply.message_id = S("r1@x");
	reply.in_reply_to = S("root@x");
	rec.mail = &reply;
	assert_int_equal(emit_record_thread_id(&rec), t);
	reply.in_reply_to = STR_NULL;
	reply.message_id = STR_NULL;
	/* no msg-id at all: a thread of its own, its id */
	assert_int_equal(emit_record_thread_id(&rec), UINT64_C(0xfeed));

	struct emit_options o;
	emit_options_init(&o);
	assert_int_equal(emit_fields_parse(&o, "thread_id", NULL, NULL), 0);
	struct record r = io_record();
	r.io.id = UINT64_C(0xfeed);
	r.mail = &reply;
	check_emit(&o, &r, "{\"thread_id\":\"000000000000feed\"}\n");
	r.mail = &root;
	char hex[17], want[64];
	record_id_hex(t, hex);
	snprintf(want, sizeof(want), "{\"thread_id\":\"%s\"}\n", hex);
	check_emit(&o, &r, want);
}

/* tags: the words of the flags (mbsync's ';' separator too, which
 * walk.c hands over as the same flags). */
static void test_emit_tags(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	assert_int_equal(emit_fields_parse(&o, "flags,tags", NULL, NULL), 0);
	struct record r = io_record();
	r.io.flags = S("DFPRSTa");
	check_emit(&o, &r, "{\"flags\":\"DFPRSTa\",\"tags\":[\"draft\",\"flagged\",\"passed\","
	                   "\"replied\",\"seen\",\"trashed\"]}\n");
	r.io.flags = S("");
	check_emit(&o, &r, "{\"flags\":\"\",\"tags\":[]}\n");
	r.io.maildir = false;
	check_emit(&o, &r, "{}\n");
	o.format = EMIT_TSV;
	r.io.maildir = true;
	r.io.flags = S("RS");
	check_emit(&o, &r, "RS\treplied, seen\n");
}

/* ---- TSV ------------------------------------------------------------------ */

static void test_emit_tsv_order_and_header(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.format = EMIT_TSV;
	assert_int_equal(emit_fields_parse(&o, "subject, date ,from,path,to,cc,bcc,size",
	                                   NULL, NULL), 0);
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(emit_tsv_header(&o, &b), 0);
	const char *want = "subject\tdate\tfrom\tpath\tto\tcc\tbcc\tsize\n";
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	dynbuf_release(&b);

	struct record r = io_record();
	struct mail_message m = full_message();
	r.mail = &m;
	check_emit(&o, &r,
	           "Hello \"world\"\\n\t2023-11-14T22:13:20Z\t\"Ann \\\\\"A\\\\\" Example\" <ann@example.org>\t"
	           "cur/1:2,S\t\"Doe, John\" <john@example.org>, team: Bob <bob@example.org>, "
	           "carol@example.org;, undisclosed-recipients:;\t\t\t1234\n");
}

static void test_emit_tsv_all_kinds(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.format = EMIT_TSV;
	o.headers = true;
	assert_int_equal(emit_fields_parse(&o,
		"text,references,attachments,warnings,headers,mtime,folder,flags,text_truncated,"
		"offset,notes,error,root", NULL, NULL), 0);
	struct record r = io_record();
	r.io.path = S("cur/a\tb\\c\xE9");
	r.io.root = S("ro\x01ot\xE9");
	r.io.notes = RECORD_GREW;
	struct mail_message m = full_message();
	r.mail = &m;
	check_emit(&o, &r,
	           "line 1\\nline\\t2 \xE2\x82\xAC\ta@x, b@x\tr\xC3\xA9sum\xC3\xA9.pdf, image/png\t"
	           "duplicated-header, bad-date\tFrom: Ann <ann@example.org>\\nSubject: Hi\\tthere\t"
	           "2023-11-14T22:13:20Z\t\tS\tfalse\t\tgrew\t\tro\\x01ot\\xe9\n");

	/* Byte escapes keep paths lossless and the line valid UTF-8. */
	assert_int_equal(emit_fields_parse(&o, "path", NULL, NULL), 0);
	check_emit(&o, &r, "cur/a\\tb\\\\c\\xe9\n");

	/* An error record: absent mail fields are empty columns. */
	assert_int_equal(emit_fields_parse(&o, "error,subject,path,size", NULL, NULL), 0);
	r.mail = NULL;
	r.io.have_stat = false;
	r.io.reason = RECORD_IO;
	r.io.err = ENOENT;
	check_emit(&o, &r, "io-error: ENOENT: No such file or directory\t\tcur/a\\tb\\\\c\\xe9\t\n");
}

static void test_emit_tsv_no_text_drops_columns(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.format = EMIT_TSV;
	o.no_text = true;
	assert_int_equal(emit_fields_parse(&o, "path,text,headers,parts", NULL, NULL), 0);
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(emit_tsv_header(&o, &b), 0);
	assert_int_equal(b.len, strlen("path\tparts\n"));
	assert_memory_equal(b.p, "path\tparts\n", b.len);
	dynbuf_release(&b);
	struct record r = io_record();
	struct mail_message m = full_message();
	r.mail = &m;
	check_emit(&o, &r, "cur/1:2,S\t3\n");
}

/* ---- --fields / --format ------------------------------------------------ */

static void test_emit_fields_parse(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	assert_int_equal(o.fields, EMIT_FIELDS_ALL);
	assert_int_equal(o.n_order, EMIT_F__COUNT);

	size_t off = 99, len = 99;
	assert_int_equal(emit_fields_parse(&o, "to,path,to", &off, &len), 0);
	assert_int_equal(o.n_order, 2);
	assert_int_equal(o.order[0], EMIT_F_TO);
	assert_int_equal(o.order[1], EMIT_F_PATH);
	assert_int_equal(o.fields, EMIT_FIELD_BIT(EMIT_F_TO) | EMIT_FIELD_BIT(EMIT_F_PATH));
	assert_int_equal(off, 99);

	/* A bad name is located and o is left alone. */
	assert_int_equal(emit_fields_parse(&o, "path, subjet ,to", &off, &len), -EINVAL);
	assert_int_equal(off, 6);
	assert_int_equal(len, 6);
	assert_int_equal(o.n_order, 2);
	assert_int_equal(emit_fields_parse(&o, "path,,to", &off, &len), -EINVAL);
	assert_int_equal(off, 5);
	assert_int_equal(len, 0);
	assert_int_equal(emit_fields_parse(&o, "", &off, &len), -EINVAL);
	assert_int_equal(emit_fields_parse(&o, "path,", &off, &len), -EINVAL);
	assert_int_equal(off, 5);
	assert_int_equal(emit_fields_parse(&o, "Path", NULL, NULL), -EINVAL);
	assert_int_equal(emit_fields_parse(&o, "pathx", NULL, NULL), -EINVAL);

	/* Every name round-trips. */
	for (int f = 0; f < EMIT_F__COUNT; f++) {
		const char *n = emit_field_name((enum emit_field)f);
		assert_non_null(n);
		assert_int_equal(emit_field_lookup(n, strlen(n)), f);
	}
	assert_null(emit_field_name(EMIT_F__COUNT));
	assert_string_equal(emit_field_name(EMIT_F_HEADERS), "headers");

	enum emit_format fmt;
	assert_int_equal(emit_format_parse("es-bulk", &fmt), 0);
	assert_int_equal(fmt, EMIT_ES_BULK);
	assert_int_equal(emit_format_parse("tsv", &fmt), 0);
	assert_int_equal(fmt, EMIT_TSV);
	assert_int_equal(emit_format_parse("jsonl", &fmt), 0);
	assert_int_equal(fmt, EMIT_JSONL);
	assert_int_equal(emit_format_parse("json", &fmt), -EINVAL);
}

static void test_emit_fields_deselect_path(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	assert_int_equal(emit_fields_parse(&o, "subject", NULL, NULL), 0);
	struct record r = io_record();
	check_emit(&o, &r, "{}\n");   /* no message: nothing selected is present */
	struct mail_message m = full_message();
	r.mail = &m;
	check_emit(&o, &r, "{\"subject\":\"Hello \\\"world\\\"\\n\"}\n");
}

/* ---- all or nothing ------------------------------------------------------- */

/* For every cap from 0 to the full size, emit_record either writes the whole
 * record or fails with -E2BIG and leaves the buffer exactly as it was. */
static void check_rollback(const struct emit_options *o, const struct record *r)
{
	struct dynbuf full;
	dynbuf_init(&full, 0);
	assert_int_equal(emit_record(o, r, &full), 0);

	for (size_t max = 3; max <= full.len + 3; max++) {
		struct dynbuf b;
		dynbuf_init(&b, max);
		assert_int_equal(dynbuf_append(&b, "abc", 3), 0);
		int rc = emit_record(o, r, &b);
		if (max < full.len + 3) {
			assert_int_equal(rc, -E2BIG);
			assert_int_equal(b.len, 3);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(b.len, full.len + 3);
			assert_memory_equal(b.p + 3, full.p, full.len);
		}
		assert_memory_equal(b.p, "abc", 3);
		dynbuf_release(&b);
	}
	dynbuf_release(&full);
}

static void test_emit_rollback_on_failure(void **state)
{
	(void)state;
	struct emit_options o;
	emit_options_init(&o);
	o.headers = true;
	struct record r = io_record();
	r.io.path = S("cur/caf\xE9\x01");
	struct mail_message m = full_message();
	r.mail = &m;
	check_rollback(&o, &r);
	o.format = EMIT_ES_BULK;
	o.es_index = "i";
	check_rollback(&o, &r);
	o.format = EMIT_TSV;
	check_rollback(&o, &r);

	/* The TSV header too. */
	struct dynbuf b;
	dynbuf_init(&b, 10);
	assert_int_equal(dynbuf_append(&b, "x", 1), 0);
	assert_int_equal(emit_tsv_header(&o, &b), -E2BIG);
	assert_int_equal(b.len, 1);
	dynbuf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_emit_reason_names),
		cmocka_unit_test(test_emit_jsonl_io_only),
		cmocka_unit_test(test_emit_jsonl_full_message),
		cmocka_unit_test(test_emit_jsonl_no_text_no_headers),
		cmocka_unit_test(test_emit_jsonl_bad_date),
		cmocka_unit_test(test_emit_jsonl_invalid_utf8_path),
		cmocka_unit_test(test_emit_jsonl_mbox_and_notes),
		cmocka_unit_test(test_emit_error_records),
		cmocka_unit_test(test_emit_not_mail),
		cmocka_unit_test(test_emit_es_bulk),
		cmocka_unit_test(test_emit_tsv_order_and_header),
		cmocka_unit_test(test_emit_tsv_all_kinds),
		cmocka_unit_test(test_emit_tsv_no_text_drops_columns),
		cmocka_unit_test(test_emit_fields_parse),
		cmocka_unit_test(test_emit_fields_deselect_path),
		cmocka_unit_test(test_emit_rollback_on_failure),
		cmocka_unit_test(test_emit_es_bulk_id_not_message_id),
		cmocka_unit_test(test_emit_thread_id),
		cmocka_unit_test(test_emit_tags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
