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
 * Two steps, so that the GIL is held for the objects only: the walk writes
 * a tape (emit_pytape_record: plain C, no Python call, any thread), with
 * every string already decoded to the code units of its final kind; then
 * emit_pytape_build() makes the objects from it under the GIL, a string
 * being PyUnicode_New and one copy.  Made in one step, the dicts were a
 * third of parse_many's work, all of it serialised on the GIL
 * (bench/PYTHON.md).
 *
 * Strings: the JSON writer replaces each ill-formed UTF-8 sequence's
 * maximal subpart by one U+FFFD; Python's "replace" error handler does the
 * same, so a string that is not well-formed goes on the tape as its bytes
 * and is decoded so when built. */
#include "emit/pydict.h"
#include "core/dynbuf.h"
#include "core/utf8.h"
#include "emit/json.h"
#include "io/maildir.h"
#include "mail/mail.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static PyObject *keys[EMIT_F__COUNT];
static PyObject *k_name, *k_address, *k_group, *k_members, *k_filename, *k_content_type,
	*k_detected_type, *k_disposition, *k_content_id, *k_size, *k_reason, *k_errno, *k_message,
	*k_path_b64, *k_root_b64, *k_deleted, *k_deleted_b64, *k_renamed, *k_from, *k_from_b64, *k_to,
	*k_to_b64;

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
		{ &k_deleted, "deleted" }, { &k_deleted_b64, "deleted_b64" }, { &k_renamed, "renamed" },
		{ &k_from, "from" }, { &k_from_b64, "from_b64" }, { &k_to, "to" },
		{ &k_to_b64, "to_b64" },
	};
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
		if (!(*sub[i].k = PyUnicode_InternFromString(sub[i].s)))
			return -1;
	return 0;
}

/* Scans n bytes of UTF-8: the largest byte, and the count of
 * continuation bytes (10xxxxxx), so that n - *cont is the length in code
 * points when the bytes are well-formed. */
static unsigned char utf8_scan(const unsigned char *p, size_t n, size_t *cont)
{
	size_t i = 0, c = 0;
	unsigned char hi = 0;
#ifdef __SSE2__
	/* Continuation bytes are the signed bytes below -64: each compare
	 * gives 0 or -1 per lane, summed in bytes for up to 255 blocks and
	 * then added up across lanes (no popcount instruction is assumed). */
	__m128i top = _mm_setzero_si128(), lim = _mm_set1_epi8(-64), zero = _mm_setzero_si128();
	while (i + 16 <= n) {
		__m128i acc = _mm_setzero_si128();
		for (int b = 0; b < 255 && i + 16 <= n; b++, i += 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
			top = _mm_max_epu8(top, v);
			acc = _mm_sub_epi8(acc, _mm_cmplt_epi8(v, lim));
		}
		__m128i sums = _mm_sad_epu8(acc, zero);
		c += (size_t)_mm_cvtsi128_si32(sums) + (size_t)_mm_extract_epi16(sums, 4);
	}
	unsigned char lanes[16];
	_mm_storeu_si128((__m128i *)(void *)lanes, top);
	for (int k = 0; k < 16; k++)
		hi = lanes[k] > hi ? lanes[k] : hi;
#endif
	for (; i < n; i++) {
		hi = p[i] > hi ? p[i] : hi;
		c += (p[i] & 0xC0) == 0x80;
	}
	*cont = c;
	return hi;
}

#ifdef __SSE2__
/* Sixteen ASCII bytes as sixteen code units of each width. */
static inline void widen16_1(Py_UCS1 *o, __m128i v)
{
	_mm_storeu_si128((__m128i *)(void *)o, v);
}

static inline void widen16_2(Py_UCS2 *o, __m128i v)
{
	__m128i z = _mm_setzero_si128();
	_mm_storeu_si128((__m128i *)(void *)o, _mm_unpacklo_epi8(v, z));
	_mm_storeu_si128((__m128i *)(void *)(o + 8), _mm_unpackhi_epi8(v, z));
}

static inline void widen16_4(Py_UCS4 *o, __m128i v)
{
	__m128i z = _mm_setzero_si128(), lo = _mm_unpacklo_epi8(v, z), hi = _mm_unpackhi_epi8(v, z);
	_mm_storeu_si128((__m128i *)(void *)o, _mm_unpacklo_epi16(lo, z));
	_mm_storeu_si128((__m128i *)(void *)(o + 4), _mm_unpackhi_epi16(lo, z));
	_mm_storeu_si128((__m128i *)(void *)(o + 8), _mm_unpacklo_epi16(hi, z));
	_mm_storeu_si128((__m128i *)(void *)(o + 12), _mm_unpackhi_epi16(hi, z));
}

/* Sixteen bytes widened and stored whole, the cursor then moved past
 * their leading ASCII ones only: what was stored beyond is overwritten as
 * the fill goes on (the string's room is len code units, and a fill that
 * comes out short fails).  So a short ASCII run, a word between two
 * non-ASCII characters, costs one step instead of a step a byte. */
#define UTF8_ASCII16(WIDEN)                                                                   \
		while (i + 16 <= n && j + 16 <= len) {                                        \
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));  \
			unsigned m = (unsigned)_mm_movemask_epi8(v);                          \
			WIDEN(out + j, v);                                                    \
			unsigned k = m ? (unsigned)__builtin_ctz(m) : 16;                     \
			i += k;                                                               \
			j += k;                                                               \
			if (m)                                                                \
				break;                                                        \
		}
#else
#define UTF8_ASCII16(WIDEN)
#endif

/* Decodes well-formed UTF-8 into the len code points of a new string of
 * kind Py_UCS<W> (W = 1, 2 or 4: the stores are the kind's width).  false,
 * leaving the string unfinished, at the first ill-formed sequence (as
 * utf8_seq() judges it: overlong, surrogate or out of range) or when the
 * count does not come out at len.  An ASCII run goes in a loop of its own,
 * sixteen bytes at a time while they last: text in most scripts has
 * spaces and punctuation between its letters, and many strings wider than
 * Latin-1 are ASCII but for one character (an emoji makes the whole string
 * four bytes a character). */
#define UTF8_FILL(W)                                                                          \
static bool utf8_fill##W(Py_UCS##W *out, size_t len, const unsigned char *p, size_t n)        \
{                                                                                             \
	size_t i = 0, j = 0;                                                                  \
	while (i < n) {                                                                       \
		if (p[i] < 0x80) {                                                            \
			UTF8_ASCII16(widen16_##W)                                             \
			while (i < n && p[i] < 0x80 && j < len)                               \
				out[j++] = p[i++];                                            \
			if (i < n && p[i] < 0x80)                                             \
				return false;                                                 \
			continue;                                                             \
		}                                                                             \
		if (j == len)                                                                 \
			return false;                                                         \
		/* the two forms of most non-ASCII text, inline: C2-DF and one                \
		 * continuation; E1-EC or EE-EF and two (no overlong form, no                 \
		 * surrogate: Unicode 15 table 3-7).  Latin-1 strings have only               \
		 * the first. */                                                              \
		unsigned c = p[i];                                                            \
		if (c < 0xE0 && c >= 0xC2 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {        \
			out[j++] = (Py_UCS##W)((c & 0x1F) << 6 | (p[i + 1] & 0x3F));          \
			i += 2;                                                               \
			continue;                                                             \
		}                                                                             \
		if ((W) > 1 && c > 0xE0 && c < 0xF0 && c != 0xED && i + 2 < n &&                \
		    (p[i + 1] & 0xC0) == 0x80 && (p[i + 2] & 0xC0) == 0x80) {                 \
			out[j++] = (Py_UCS##W)((c & 0x0F) << 12 | (p[i + 1] & 0x3F) << 6 |    \
			                       (p[i + 2] & 0x3F));                            \
			i += 3;                                                               \
			continue;                                                             \
		}                                                                             \
		/* the rest judged and decoded by core/utf8.h, the tree's one decoder */      \
		int k = utf8_seq(p + i, n - i);                                               \
		if (k < 0)                                                                    \
			return false;                                                         \
		const uint8_t *q = p + i;                                                     \
		out[j++] = (Py_UCS##W)utf8_decode(&q);                                        \
		i += (size_t)k;                                                               \
	}                                                                                     \
	return j == len;                                                                      \
}
UTF8_FILL(1)
UTF8_FILL(2)
UTF8_FILL(4)

/* The tape: 8-byte aligned items, each a header and, for a string, its
 * code units (or bytes) padded to 8.  A dict's items are key-value pairs
 * up to T_END; a list has its count in the header (patched when the list
 * ends), so that it is made at its size. */
enum tape_tag { T_DICT, T_END, T_KEY, T_LIST, T_STR, T_RAW, T_UTF8, T_NONE, T_TRUE, T_FALSE,
	T_INT };

struct tape_item {
	uint32_t tag;
	uint32_t maxchar;   /* T_STR: 0x7F, 0xFF, 0xFFFF or 0x10FFFF, naming the kind */
	uint64_t n;         /* T_STR: code units; T_RAW, T_UTF8: bytes; T_LIST: items; T_INT: the
	                       value; T_KEY: the interned key (a pointer) */
};

/* T_UTF8's data: the code points its bytes make if they are well-formed,
 * then the bytes. */
struct tape_utf8 {
	uint64_t len;
};

#define PAD8(n) (((n) + 7) & ~(size_t)7)

void emit_pytape_init(struct emit_pytape *t)
{
	dynbuf_init(&t->items, 0);
	dynbuf_init(&t->scratch, 0);
	t->thread_at = EMIT_PYTAPE_NO_THREAD;
	t->astral_utf8 = false;
	t->failed = false;
	t->next = NULL;
}

void emit_pytape_release(struct emit_pytape *t)
{
	dynbuf_release(&t->items);
	dynbuf_release(&t->scratch);
}

/* Appends an item and room for `extra` bytes after it (its data): a
 * pointer to the item, or NULL (and the tape failed) without memory. */
static struct tape_item *tape_put(struct emit_pytape *t, enum tape_tag tag, uint64_t n, size_t extra)
{
	if (t->failed || dynbuf_reserve(&t->items, sizeof(struct tape_item) + PAD8(extra)) < 0) {
		t->failed = true;
		return NULL;
	}
	struct tape_item *it = (struct tape_item *)(void *)(t->items.p + t->items.len);
	it->tag = tag;
	it->maxchar = 0;
	it->n = n;
	t->items.len += sizeof(*it) + PAD8(extra);
	return it;
}

static void tape_tag(struct emit_pytape *t, enum tape_tag tag)
{
	tape_put(t, tag, 0, 0);
}

static void tape_key(struct emit_pytape *t, PyObject *k)
{
	tape_put(t, T_KEY, (uint64_t)(uintptr_t)k, 0);
}

static void tape_int(struct emit_pytape *t, uint64_t v)
{
	tape_put(t, T_INT, v, 0);
}

/* A string of the bytes.  Decoded strings are well-formed UTF-8
 * (mail.h), and for those the code units are written at the final kind:
 * in well-formed UTF-8 the largest byte names the widest character's class
 * (leads C2-C3 are Latin-1, up to EF the BMP, F0 and above beyond it;
 * there are no overlong forms).  Anything ill-formed, such as an
 * as-written token's 8-bit bytes, goes as T_RAW.  Strings beyond the BMP
 * on a tape that asks (astral_utf8) go as T_UTF8: their bytes and their
 * length, decoded when built by utf8_fill4 into a string made at its size,
 * which took 15% fewer instructions than PyUnicode_DecodeUTF8 on the
 * mailbox20k corpus of bench/PYTHON.md. */
static void tape_str(struct emit_pytape *t, struct str s)
{
	const unsigned char *p = (const unsigned char *)(s.p ? s.p : "");
	size_t n = s.p ? s.n : 0, cont;
	unsigned char hi = utf8_scan(p, n, &cont);
	size_t len = n - cont;
	uint32_t maxchar = hi < 0x80 ? 0x7F : hi < 0xC4 ? 0xFF : hi < 0xF0 ? 0xFFFF : 0x10FFFF;
	size_t width = maxchar <= 0xFF ? 1 : maxchar <= 0xFFFF ? 2 : 4;
	if (hi < (t->astral_utf8 ? 0xF0 : 0xF5) && (hi < 0x80 || hi >= 0xC2)) {
		size_t at = t->items.len;
		struct tape_item *it = tape_put(t, T_STR, len, len * width);
		if (!it)
			return;
		it->maxchar = maxchar;
		void *out = it + 1;
		bool ok = hi < 0x80 ? (memcpy(out, p, n), true)
		        : width == 1 ? utf8_fill1(out, len, p, n)
		        : width == 2 ? utf8_fill2(out, len, p, n) : utf8_fill4(out, len, p, n);
		if (ok)
			return;
		t->items.len = at;
	}
	if (t->astral_utf8 && hi >= 0xF0 && hi < 0xF5) {
		struct tape_item *it = tape_put(t, T_UTF8, n, sizeof(struct tape_utf8) + n);
		if (!it)
			return;
		struct tape_utf8 u = { len };
		memcpy(it + 1, &u, sizeof(u));
		memcpy((char *)(it + 1) + sizeof(u), p, n);
		return;
	}
	struct tape_item *it = tape_put(t, T_RAW, n, n);
	if (it)
		memcpy(it + 1, p, n);
}

static void tape_cstr(struct emit_pytape *t, const char *s)
{
	tape_str(t, (struct str){ .p = s, .n = strlen(s) });
}

/* null for an absent string, as emit_json_nstr() */
static void tape_nstr(struct emit_pytape *t, struct str s)
{
	if (s.p)
		tape_str(t, s);
	else
		tape_tag(t, T_NONE);
}

static void tape_key_nstr(struct emit_pytape *t, PyObject *k, struct str s)
{
	tape_key(t, k);
	tape_nstr(t, s);
}

/* A list: tape_list_begin() gives its place, tape_list_end() its count. */
static size_t tape_list_begin(struct emit_pytape *t)
{
	size_t at = t->items.len;
	tape_put(t, T_LIST, 0, 0);
	return at;
}

static void tape_list_end(struct emit_pytape *t, size_t at, size_t count)
{
	if (!t->failed)
		((struct tape_item *)(void *)(t->items.p + at))->n = count;
}

/* What a json_put_* call wrote into the scratch buffer, quotes dropped. */
static void tape_from_json(struct emit_pytape *t, int r, bool quoted)
{
	if (r < 0)
		t->failed = true;
	else if (quoted)
		tape_str(t, (struct str){ .p = t->scratch.p + 1, .n = t->scratch.len - 2 });
	else
		tape_str(t, (struct str){ .p = t->scratch.p, .n = t->scratch.len });
	dynbuf_reset(&t->scratch);
}

static void tape_iso8601(struct emit_pytape *t, int64_t v)
{
	tape_from_json(t, json_put_iso8601(&t->scratch, v), false);
}

/* A path: its text, and key_b64 with the exact bytes when they are not
 * UTF-8, as json_put_bytes_member(). */
static void tape_bytes(struct emit_pytape *t, PyObject *key, PyObject *key_b64, struct str s)
{
	tape_key(t, key);
	tape_str(t, s);
	if (utf8_valid(s.p ? s.p : "", s.p ? s.n : 0))
		return;
	tape_key(t, key_b64);
	tape_from_json(t, json_put_base64(&t->scratch, s.p, s.n), true);
}

static void tape_mailbox(struct emit_pytape *t, const struct mail_addr *a)
{
	tape_tag(t, T_DICT);
	tape_key_nstr(t, k_name, a->name);
	tape_key(t, k_address);
	tape_str(t, a->address);
	tape_tag(t, T_END);
}

static void tape_addrs(struct emit_pytape *t, const struct mail_addr_list *l)
{
	size_t at = tape_list_begin(t);
	for (size_t i = 0; i < l->n; i++) {
		const struct mail_addr *a = &l->v[i];
		if (!a->is_group) {
			tape_mailbox(t, a);
			continue;
		}
		tape_tag(t, T_DICT);
		tape_key(t, k_group);
		tape_str(t, a->name);
		tape_key(t, k_members);
		size_t m = tape_list_begin(t);
		for (size_t j = 0; j < a->n_members; j++)
			tape_mailbox(t, &a->members[j]);
		tape_list_end(t, m, a->n_members);
		tape_tag(t, T_END);
	}
	tape_list_end(t, at, l->n);
}

static void tape_strs(struct emit_pytape *t, const struct str *s, size_t n)
{
	size_t at = tape_list_begin(t);
	for (size_t i = 0; i < n; i++)
		tape_str(t, s[i]);
	tape_list_end(t, at, n);
}

static void tape_attachments(struct emit_pytape *t, const struct mail_message *m)
{
	size_t at = tape_list_begin(t);
	for (size_t i = 0; i < m->n_attachments; i++) {
		const struct mail_attachment *a = &m->attachments[i];
		tape_tag(t, T_DICT);
		tape_key_nstr(t, k_filename, a->filename);
		tape_key_nstr(t, k_content_type, a->content_type);
		tape_key_nstr(t, k_detected_type, a->detected_type);
		tape_key_nstr(t, k_disposition, a->disposition);
		tape_key_nstr(t, k_content_id, a->content_id);
		tape_key(t, k_size);
		tape_int(t, a->size);
		tape_tag(t, T_END);
	}
	tape_list_end(t, at, m->n_attachments);
}

static void tape_warnings(struct emit_pytape *t, uint64_t set)
{
	size_t at = tape_list_begin(t), count = 0;
	set &= MAIL_W__COUNT >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << MAIL_W__COUNT) - 1;
	while (set) {
		enum mail_warning w = (enum mail_warning)__builtin_ctzll(set);
		set &= set - 1;
		const char *name = mail_warning_name(w);
		if (name) {
			tape_cstr(t, name);
			count++;
		}
	}
	tape_list_end(t, at, count);
}

static void tape_headers(struct emit_pytape *t, const struct mail_message *m)
{
	size_t at = tape_list_begin(t);
	for (size_t i = 0; i < m->n_headers; i++) {
		size_t pair = tape_list_begin(t);
		tape_str(t, m->headers[i].name);
		tape_str(t, m->headers[i].value);
		tape_list_end(t, pair, 2);
	}
	tape_list_end(t, at, m->n_headers);
}

static void tape_error(struct emit_pytape *t, const struct record *r)
{
	const char *reason, *name, *msg;
	int err;
	emit_record_error(r, &reason, &err, &name, &msg);
	tape_tag(t, T_DICT);
	tape_key(t, k_reason);
	tape_cstr(t, reason);
	if (err) {
		char num[16];
		snprintf(num, sizeof(num), "%d", err);
		tape_key(t, k_errno);
		tape_cstr(t, name ? name : num);
	}
	tape_key(t, k_message);
	tape_cstr(t, msg);
	tape_tag(t, T_END);
}

static void tape_notes(struct emit_pytape *t, uint32_t notes)
{
	size_t at = tape_list_begin(t), count = 0;
	if (notes & RECORD_GREW) {
		tape_cstr(t, "grew");
		count++;
	}
	if (notes & RECORD_SHRANK) {
		tape_cstr(t, "shrank");
		count++;
	}
	tape_list_end(t, at, count);
}

static void tape_tags(struct emit_pytape *t, struct str flags)
{
	size_t at = tape_list_begin(t), count = 0;
	for (size_t i = 0; i < flags.n; i++) {
		const char *tag = maildir_flag_tag(flags.p[i]);
		if (tag) {
			tape_cstr(t, tag);
			count++;
		}
	}
	tape_list_end(t, at, count);
}

/* Field f of r, key and value, when the record has a value for it (the
 * rules of emit_json_field()). */
static void tape_field(struct emit_pytape *t, const struct record *r, const struct mail_message *m,
                       enum emit_field f)
{
	const struct record_io *io = &r->io;
	PyObject *k = keys[f];
	switch (f) {
	case EMIT_F_PATH:
		tape_bytes(t, k, k_path_b64, io->path);
		return;
	case EMIT_F_ROOT:
		if (io->root.p)
			tape_bytes(t, k, k_root_b64, io->root);
		return;
	case EMIT_F_SIZE:
		if (io->have_stat) {
			tape_key(t, k);
			tape_int(t, io->size);
		}
		return;
	case EMIT_F_MTIME:
		if (io->have_stat) {
			tape_key(t, k);
			tape_iso8601(t, io->mtime_sec);
		}
		return;
	case EMIT_F_FOLDER:
	case EMIT_F_SUBDIR:
	case EMIT_F_FLAGS:
		/* NULL is "" (INBOX, no flags) */
		if (io->maildir) {
			tape_key(t, k);
			tape_str(t, f == EMIT_F_FOLDER ? io->folder : f == EMIT_F_SUBDIR ? io->subdir
			                                                                   : io->flags);
		}
		return;
	case EMIT_F_OFFSET:
	case EMIT_F_LENGTH:
		if (io->in_mbox) {
			tape_key(t, k);
			tape_int(t, f == EMIT_F_OFFSET ? io->offset : io->length);
		}
		return;
	case EMIT_F_NOTES:
		if (io->notes & (RECORD_GREW | RECORD_SHRANK)) {
			tape_key(t, k);
			tape_notes(t, io->notes);
		}
		return;
	case EMIT_F_ERROR:
		if (emit_record_reason(r) != RECORD_NONE) {
			tape_key(t, k);
			tape_error(t, r);
		}
		return;
	EMIT_CASE_MESSAGE_STR: {
		struct str s = emit_message_str(m, f);
		if (s.p) {
			tape_key(t, k);
			tape_str(t, s);
		}
		return;
	}
	case EMIT_F_REFERENCES:
		if (m->n_references) {
			tape_key(t, k);
			tape_strs(t, m->references, m->n_references);
		}
		return;
	case EMIT_F_DATE:
		if (m->has_date) {
			tape_key(t, k);
			tape_iso8601(t, m->date);
		} else if (m->date_raw.p) {
			tape_key(t, k);
			tape_tag(t, T_NONE);
		}
		return;
	case EMIT_F_DATE_RAW:
		if (!m->has_date && m->date_raw.p) {
			tape_key(t, k);
			tape_str(t, m->date_raw);
		}
		return;
	EMIT_CASE_MESSAGE_ADDRS: {
		const struct mail_addr_list *l = emit_message_addrs(m, f);
		if (l->present) {
			tape_key(t, k);
			tape_addrs(t, l);
		}
		return;
	}
	case EMIT_F_TEXT_TRUNCATED:
		tape_key(t, k);
		tape_tag(t, m->text_truncated ? T_TRUE : T_FALSE);
		return;
	case EMIT_F_ATTACHMENTS:
		tape_key(t, k);
		tape_attachments(t, m);
		return;
	case EMIT_F_PARTS:
		tape_key(t, k);
		tape_int(t, m->parts);
		return;
	case EMIT_F_WARNINGS:
		tape_key(t, k);
		tape_warnings(t, m->warnings);
		return;
	case EMIT_F_DETECTED_TYPE:
		if (r->mail && r->mail->detected_type.p) {
			tape_key(t, k);
			tape_str(t, r->mail->detected_type);
		}
		return;
	case EMIT_F_HEADERS:
		tape_key(t, k);
		tape_headers(t, m);
		return;
	case EMIT_F_ID:
	case EMIT_F_THREAD_ID: {
		char hex[17];
		record_id_hex(f == EMIT_F_ID ? record_id(io) : emit_record_thread_id(r), hex);
		tape_key(t, k);
		tape_str(t, (struct str){ .p = hex, .n = 16 });
		/* ASCII: 16 code units of one byte, the item's last 16 bytes */
		if (f == EMIT_F_THREAD_ID && !t->failed)
			t->thread_at = t->items.len - 16;
		return;
	}
	case EMIT_F_TAGS:
		if (io->maildir) {
			tape_key(t, k);
			tape_tags(t, io->flags);
		}
		return;
	case EMIT_F__COUNT:
		break;
	}
}

/* r's items after what t->items holds; thread_at counts from where they
 * begin.  0, or -ENOMEM with t->items as it was. */
/* --state's change records, with the keys and values emit_change() writes
 * in JSON Lines: {"deleted": path} or {"renamed": {"from", "to"}}, then
 * root, a renamed Maildir message's folder, subdir, flags and tags, an
 * archive message's offset, and id;
 * whatever --fields says. */
static void tape_change(struct emit_pytape *t, const struct record_io *io)
{
	if (io->kind == RECORD_DELETED) {
		tape_bytes(t, k_deleted, k_deleted_b64, io->path);
	} else {
		tape_key(t, k_renamed);
		tape_tag(t, T_DICT);
		tape_bytes(t, k_from, k_from_b64, io->old_path);
		tape_bytes(t, k_to, k_to_b64, io->path);
		tape_tag(t, T_END);
	}
	tape_bytes(t, keys[EMIT_F_ROOT], k_root_b64, io->root);
	if (io->maildir && io->kind == RECORD_RENAMED) {
		tape_key(t, keys[EMIT_F_FOLDER]);
		tape_str(t, io->folder);
		tape_key(t, keys[EMIT_F_SUBDIR]);
		tape_str(t, io->subdir);
		tape_key(t, keys[EMIT_F_FLAGS]);
		tape_str(t, io->flags);
		tape_key(t, keys[EMIT_F_TAGS]);
		tape_tags(t, io->flags);
	}
	if (io->in_mbox) {
		tape_key(t, keys[EMIT_F_OFFSET]);
		tape_int(t, io->offset);
	}
	char hex[17];
	record_id_hex(record_id(io), hex);
	tape_key(t, keys[EMIT_F_ID]);
	tape_str(t, (struct str){ .p = hex, .n = 16 });
}

static int tape_record(struct emit_pytape *t, const struct emit_options *o, const struct record *r)
{
	const struct mail_message *m = emit_record_message(r);
	uint64_t act = emit_record_fields(o, r);
	size_t base = t->items.len;
	t->thread_at = EMIT_PYTAPE_NO_THREAD;
	t->failed = false;
	tape_tag(t, T_DICT);
	if (r->io.kind != RECORD_MESSAGE) {
		tape_change(t, &r->io);
		act = 0;
	}
	while (act) {
		enum emit_field f = (enum emit_field)__builtin_ctzll(act);
		act &= act - 1;
		tape_field(t, r, m, f);
	}
	tape_tag(t, T_END);
	if (t->failed) {
		t->items.len = base;
		return -ENOMEM;
	}
	if (t->thread_at != EMIT_PYTAPE_NO_THREAD)
		t->thread_at -= base;
	return 0;
}

int emit_pytape_record(struct emit_pytape *t, const struct emit_options *o, const struct record *r)
{
	dynbuf_reset(&t->items);
	return tape_record(t, o, r);
}

int emit_pytape_append(struct emit_pytape *t, struct dynbuf *out, const struct emit_options *o,
                       const struct record *r)
{
	/* the walk writes to t->items: out is lent to it */
	struct dynbuf own = t->items;
	t->items = *out;
	int rc = tape_record(t, o, r);
	*out = t->items;
	t->items = own;
	return rc;
}

/* The object of the item at *at, which moves past it (and its items); NULL
 * with an exception, the rest of the tape then unread. */
static PyObject *tape_object(const char **at)
{
	struct tape_item it;
	memcpy(&it, *at, sizeof(it));
	*at += sizeof(it);
	const char *data = *at;
	switch ((enum tape_tag)it.tag) {
	case T_STR: {
		size_t width = it.maxchar <= 0xFF ? 1 : it.maxchar <= 0xFFFF ? 2 : 4;
		*at += PAD8(it.n * width);
		PyObject *v = PyUnicode_New((Py_ssize_t)it.n, it.maxchar);
		if (v)
			memcpy(PyUnicode_DATA(v), data, it.n * width);
		return v;
	}
	case T_RAW:
		*at += PAD8(it.n);
		return PyUnicode_DecodeUTF8(data, (Py_ssize_t)it.n, "replace");
	case T_UTF8: {
		struct tape_utf8 u;
		memcpy(&u, data, sizeof(u));
		data += sizeof(u);
		*at += PAD8(sizeof(u) + it.n);
		PyObject *v = PyUnicode_New((Py_ssize_t)u.len, 0x10FFFF);
		if (!v || utf8_fill4(PyUnicode_DATA(v), u.len, (const unsigned char *)data, it.n))
			return v;
		/* not well-formed after all: as T_RAW */
		Py_DECREF(v);
		return PyUnicode_DecodeUTF8(data, (Py_ssize_t)it.n, "replace");
	}
	case T_NONE:
		Py_RETURN_NONE;
	case T_TRUE:
		Py_RETURN_TRUE;
	case T_FALSE:
		Py_RETURN_FALSE;
	case T_INT:
		return PyLong_FromUnsignedLongLong(it.n);
	case T_LIST: {
		PyObject *l = PyList_New((Py_ssize_t)it.n);
		for (size_t i = 0; l && i < it.n; i++) {
			PyObject *v = tape_object(at);
			if (!v)
				Py_CLEAR(l);
			else
				PyList_SET_ITEM(l, (Py_ssize_t)i, v);
		}
		return l;
	}
	case T_DICT: {
		PyObject *d = PyDict_New();
		while (d) {
			memcpy(&it, *at, sizeof(it));
			*at += sizeof(it);
			if (it.tag == T_END)
				break;
			PyObject *v = tape_object(at);
			if (!v || PyDict_SetItem(d, (PyObject *)(uintptr_t)it.n, v) < 0)
				Py_CLEAR(d);
			Py_XDECREF(v);
		}
		return d;
	}
	case T_END:
	case T_KEY:
		break;
	}
	PyErr_SetString(PyExc_SystemError, "ingest: a malformed dict tape");
	return NULL;
}

PyObject *emit_pytape_build(const struct emit_pytape *t)
{
	return emit_pytape_build_bytes(t->items.p);
}

PyObject *emit_pytape_build_bytes(const void *items)
{
	const char *at = items;
	return tape_object(&at);
}
