/* SPDX-License-Identifier: MIT */
/* The Python form of a record: see pydict.h.
 *
 * The same walk as jsonl.c's JSON writer: emit_record_fields() gives the
 * fields, in enum emit_field order, and each is set only when the record
 * has a value for it, under the rules emit_json_field() follows.  The keys
 * come from the one table, EMIT_FIELDS; the switch below has no default,
 * and python/meson.build builds this file with -Werror=switch, so a field
 * added to the table does not build until the dicts have it too.  The test
 * (tests/python) holds every dict equal to json.loads of the CLI's line.
 *
 * Strings: the JSON writer replaces each ill-formed UTF-8 sequence's
 * maximal subpart by one U+FFFD; Python's "replace" error handler does the
 * same, so decoding the bytes gives what json.loads gives. */
#include "emit/pydict.h"
#include "core/utf8.h"
#include "emit/json.h"
#include "io/maildir.h"
#include "mail/mail.h"

#include <string.h>

static PyObject *keys[EMIT_F__COUNT];
static PyObject *k_name, *k_address, *k_group, *k_members, *k_filename, *k_content_type,
	*k_detected_type, *k_disposition, *k_content_id, *k_size, *k_reason, *k_errno, *k_message,
	*k_path_b64, *k_root_b64;

int emit_pydict_init(void)
{
	if (keys[0])
		return 0;
	for (int f = 0; f < EMIT_F__COUNT; f++)
		if (!(keys[f] = PyUnicode_InternFromString(emit_field_name((enum emit_field)f))))
			return -1;
	struct { PyObject **k; const char *s; } sub[] = {
		{ &k_name, "name" }, { &k_address, "address" }, { &k_group, "group" },
		{ &k_members, "members" }, { &k_filename, "filename" },
		{ &k_content_type, "content_type" }, { &k_detected_type, "detected_type" },
		{ &k_disposition, "disposition" }, { &k_content_id, "content_id" },
		{ &k_size, "size" }, { &k_reason, "reason" }, { &k_errno, "errno" },
		{ &k_message, "message" }, { &k_path_b64, "path_b64" }, { &k_root_b64, "root_b64" },
	};
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
		if (!(*sub[i].k = PyUnicode_InternFromString(sub[i].s)))
			return -1;
	return 0;
}

static PyObject *py_str(struct str s)
{
	return PyUnicode_DecodeUTF8(s.p ? s.p : "", s.p ? (Py_ssize_t)s.n : 0, "replace");
}

/* null for an absent string, as emit_json_nstr() */
static PyObject *py_nstr(struct str s)
{
	if (!s.p)
		Py_RETURN_NONE;
	return py_str(s);
}

/* Sets d[k] = v and drops v; -1 when v is NULL or the set fails. */
static int put(PyObject *d, PyObject *k, PyObject *v)
{
	if (!v)
		return -1;
	int r = PyDict_SetItem(d, k, v);
	Py_DECREF(v);
	return r;
}

/* Appends v to list l and drops it. */
static int append(PyObject *l, PyObject *v)
{
	if (!v)
		return -1;
	int r = PyList_Append(l, v);
	Py_DECREF(v);
	return r;
}

/* The scratch buffer of the json_put_* calls that format a value (dates,
 * base64): one for the process, kept, as every call holds the GIL. */
static struct dynbuf scratch;

/* What a json_put_* call wrote into the scratch buffer, quotes dropped. */
static PyObject *py_from_json(int r, bool quoted)
{
	PyObject *v = NULL;
	if (r < 0)
		PyErr_NoMemory();
	else if (quoted)
		v = PyUnicode_DecodeUTF8(scratch.p + 1, (Py_ssize_t)scratch.len - 2, "strict");
	else
		v = PyUnicode_DecodeUTF8(scratch.p, (Py_ssize_t)scratch.len, "strict");
	dynbuf_reset(&scratch);
	return v;
}

static PyObject *py_iso8601(int64_t t)
{
	return py_from_json(json_put_iso8601(&scratch, t), false);
}

/* A path: its text, and key_b64 with the exact bytes when they are not
 * UTF-8, as json_put_bytes_member(). */
static int put_bytes(PyObject *d, PyObject *key, PyObject *key_b64, struct str s)
{
	if (put(d, key, py_str(s)) < 0)
		return -1;
	if (utf8_valid(s.p ? s.p : "", s.p ? s.n : 0))
		return 0;
	return put(d, key_b64, py_from_json(json_put_base64(&scratch, s.p, s.n), true));
}

static PyObject *py_mailbox(const struct mail_addr *a)
{
	PyObject *d = PyDict_New();
	if (!d || put(d, k_name, py_nstr(a->name)) < 0 || put(d, k_address, py_str(a->address)) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *py_addrs(const struct mail_addr_list *l)
{
	PyObject *v = PyList_New(0);
	for (size_t i = 0; v && i < l->n; i++) {
		const struct mail_addr *a = &l->v[i];
		PyObject *item;
		if (!a->is_group) {
			item = py_mailbox(a);
		} else {
			item = PyDict_New();
			PyObject *members = PyList_New(0);
			for (size_t j = 0; members && j < a->n_members; j++)
				if (append(members, py_mailbox(&a->members[j])) < 0)
					Py_CLEAR(members);
			if (!item || put(item, k_group, py_str(a->name)) < 0 ||
			    put(item, k_members, members) < 0)
				Py_CLEAR(item);
			else
				members = NULL;
			Py_XDECREF(members);
		}
		if (append(v, item) < 0)
			Py_CLEAR(v);
	}
	return v;
}

static PyObject *py_strs(const struct str *s, size_t n)
{
	PyObject *v = PyList_New(0);
	for (size_t i = 0; v && i < n; i++)
		if (append(v, py_str(s[i])) < 0)
			Py_CLEAR(v);
	return v;
}

static PyObject *py_attachments(const struct mail_message *m)
{
	PyObject *v = PyList_New(0);
	for (size_t i = 0; v && i < m->n_attachments; i++) {
		const struct mail_attachment *a = &m->attachments[i];
		PyObject *d = PyDict_New();
		if (!d || put(d, k_filename, py_nstr(a->filename)) < 0 ||
		    put(d, k_content_type, py_nstr(a->content_type)) < 0 ||
		    put(d, k_detected_type, py_nstr(a->detected_type)) < 0 ||
		    put(d, k_disposition, py_nstr(a->disposition)) < 0 ||
		    put(d, k_content_id, py_nstr(a->content_id)) < 0 ||
		    put(d, k_size, PyLong_FromUnsignedLongLong(a->size)) < 0) {
			Py_XDECREF(d);
			Py_CLEAR(v);
		} else if (append(v, d) < 0) {
			Py_CLEAR(v);
		}
	}
	return v;
}

static PyObject *py_warnings(uint64_t set)
{
	PyObject *v = PyList_New(0);
	set &= MAIL_W__COUNT >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << MAIL_W__COUNT) - 1;
	while (v && set) {
		enum mail_warning w = (enum mail_warning)__builtin_ctzll(set);
		set &= set - 1;
		const char *name = mail_warning_name(w);
		if (name && append(v, PyUnicode_FromString(name)) < 0)
			Py_CLEAR(v);
	}
	return v;
}

static PyObject *py_headers(const struct mail_message *m)
{
	PyObject *v = PyList_New(0);
	for (size_t i = 0; v && i < m->n_headers; i++) {
		PyObject *pair = PyList_New(0);
		if (!pair || append(pair, py_str(m->headers[i].name)) < 0 ||
		    append(pair, py_str(m->headers[i].value)) < 0 || append(v, pair) < 0) {
			Py_XDECREF(pair);
			Py_CLEAR(v);
		}
	}
	return v;
}

static PyObject *py_error(const struct record *r)
{
	const char *reason, *name, *msg;
	int err;
	emit_record_error(r, &reason, &err, &name, &msg);
	PyObject *d = PyDict_New();
	if (!d || put(d, k_reason, PyUnicode_FromString(reason)) < 0)
		goto fail;
	if (err && put(d, k_errno, name ? PyUnicode_FromString(name)
	                                : PyUnicode_FromFormat("%d", err)) < 0)
		goto fail;
	if (put(d, k_message, PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace")) < 0)
		goto fail;
	return d;
fail:
	Py_XDECREF(d);
	return NULL;
}

static PyObject *py_notes(uint32_t notes)
{
	PyObject *v = PyList_New(0);
	if (v && (notes & RECORD_GREW) && append(v, PyUnicode_FromString("grew")) < 0)
		Py_CLEAR(v);
	if (v && (notes & RECORD_SHRANK) && append(v, PyUnicode_FromString("shrank")) < 0)
		Py_CLEAR(v);
	return v;
}

static PyObject *py_tags(struct str flags)
{
	PyObject *v = PyList_New(0);
	for (size_t i = 0; v && i < flags.n; i++) {
		const char *t = maildir_flag_tag(flags.p[i]);
		if (t && append(v, PyUnicode_FromString(t)) < 0)
			Py_CLEAR(v);
	}
	return v;
}

/* Sets field f of r in d when the record has a value for it (the rules of
 * emit_json_field()).  0, or -1 with an exception. */
static int py_field(PyObject *d, const struct record *r, const struct mail_message *m,
                    enum emit_field f)
{
	const struct record_io *io = &r->io;
	PyObject *k = keys[f];
	switch (f) {
	case EMIT_F_PATH:
		return put_bytes(d, k, k_path_b64, io->path);
	case EMIT_F_ROOT:
		return io->root.p ? put_bytes(d, k, k_root_b64, io->root) : 0;
	case EMIT_F_SIZE:
		return io->have_stat ? put(d, k, PyLong_FromUnsignedLongLong(io->size)) : 0;
	case EMIT_F_MTIME:
		return io->have_stat ? put(d, k, py_iso8601(io->mtime_sec)) : 0;
	case EMIT_F_FOLDER:
	case EMIT_F_SUBDIR:
	case EMIT_F_FLAGS:
		/* NULL is "" (INBOX, no flags) */
		return io->maildir ? put(d, k, py_str(f == EMIT_F_FOLDER ? io->folder
		                                      : f == EMIT_F_SUBDIR ? io->subdir : io->flags)) : 0;
	case EMIT_F_OFFSET:
	case EMIT_F_LENGTH:
		return io->in_mbox ? put(d, k, PyLong_FromUnsignedLongLong(f == EMIT_F_OFFSET ? io->offset
		                                                                              : io->length)) : 0;
	case EMIT_F_NOTES:
		return io->notes & (RECORD_GREW | RECORD_SHRANK) ? put(d, k, py_notes(io->notes)) : 0;
	case EMIT_F_ERROR:
		return emit_record_reason(r) != RECORD_NONE ? put(d, k, py_error(r)) : 0;
	EMIT_CASE_MESSAGE_STR: {
		struct str s = emit_message_str(m, f);
		return s.p ? put(d, k, py_str(s)) : 0;
	}
	case EMIT_F_REFERENCES:
		return m->n_references ? put(d, k, py_strs(m->references, m->n_references)) : 0;
	case EMIT_F_DATE:
		if (m->has_date)
			return put(d, k, py_iso8601(m->date));
		if (!m->date_raw.p)
			return 0;
		Py_INCREF(Py_None);
		return put(d, k, Py_None);
	case EMIT_F_DATE_RAW:
		return !m->has_date && m->date_raw.p ? put(d, k, py_str(m->date_raw)) : 0;
	EMIT_CASE_MESSAGE_ADDRS: {
		const struct mail_addr_list *l = emit_message_addrs(m, f);
		return l->present ? put(d, k, py_addrs(l)) : 0;
	}
	case EMIT_F_TEXT_TRUNCATED:
		return put(d, k, PyBool_FromLong(m->text_truncated));
	case EMIT_F_ATTACHMENTS:
		return put(d, k, py_attachments(m));
	case EMIT_F_PARTS:
		return put(d, k, PyLong_FromUnsignedLongLong(m->parts));
	case EMIT_F_WARNINGS:
		return put(d, k, py_warnings(m->warnings));
	case EMIT_F_DETECTED_TYPE:
		return r->mail && r->mail->detected_type.p ? put(d, k, py_str(r->mail->detected_type)) : 0;
	case EMIT_F_HEADERS:
		return put(d, k, py_headers(m));
	case EMIT_F_ID:
	case EMIT_F_THREAD_ID: {
		char hex[17];
		record_id_hex(f == EMIT_F_ID ? record_id(io) : emit_record_thread_id(r), hex);
		return put(d, k, PyUnicode_FromStringAndSize(hex, 16));
	}
	case EMIT_F_TAGS:
		return io->maildir ? put(d, k, py_tags(io->flags)) : 0;
	case EMIT_F__COUNT:
		break;
	}
	return 0;
}

PyObject *emit_pydict(const struct emit_options *o, const struct record *r)
{
	const struct mail_message *m = emit_record_message(r);
	uint64_t act = emit_record_fields(o, r);
	PyObject *d = PyDict_New();
	while (d && act) {
		enum emit_field f = (enum emit_field)__builtin_ctzll(act);
		act &= act - 1;
		if (py_field(d, r, m, f) < 0)
			Py_CLEAR(d);
	}
	return d;
}
