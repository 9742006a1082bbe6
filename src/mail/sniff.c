/* SPDX-License-Identifier: MIT */
/* libmagic behind a lazily loaded cookie, and whether a declared type
 * agrees with its answer: see sniff.h.
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
#include "core/fault.h"
#include "core/xalloc.h"
#include "core/limits.h"

#include <magic.h>
#include <string.h>

enum sniff_state { SNIFF_NEW, SNIFF_READY, SNIFF_FAILED };

struct sniff_cookie {
	magic_t magic;
	enum sniff_state state;
	char zip_type[80];       /* an ODF type read from a zip's mimetype entry */
};


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
	s->magic = fault_lib("magic_open") < 0 ? NULL : magic_open(SNIFF_MAGIC_FLAGS);
	if (!s->magic)
		return false;
	if (fault_lib("magic_load") < 0 || magic_load(s->magic, NULL) != 0) {
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

/* OpenPGP armour, the commonest attachment of signed mail (every PGP/MIME
 * signature part): libmagic takes about 75 us to name it, walking its whole
 * database.  Its answers with our flags, for the header lines it knows
 * (test-sniff checks each against libmagic); any other "-----BEGIN PGP"
 * still goes to libmagic. */
static const struct {
	const char *line;
	size_t n;
	const char *type;
} pgp_armour[] = {
	{ "-----BEGIN PGP SIGNATURE-", 25, "application/pgp-signature" },
	{ "-----BEGIN PGP MESSAGE-", 23, "application/pgp-encrypted" },
	{ "-----BEGIN PGP PUBLIC KEY BLOCK-", 32, "application/pgp-keys" },
	{ "-----BEGIN PGP PRIVATE KEY BLOCK-", 33, "application/pgp-keys" },
	{ "-----BEGIN PGP SIGNED MESSAGE-", 30, "text/PGP" },
};

/* A DER or BER PKCS#7 / CMS ContentInfo (S/MIME's smime.p7s and .p7m):
 * a SEQUENCE whose first element is the OID 1.2.840.113549.1.7.N.
 * libmagic 5.44 has no name for it and answers application/octet-stream
 * after ~100 us; test-sniff asks libmagic the same question, so a libmagic
 * that learns a name shows up as a failing test, not as a silent change. */
static bool is_pkcs7(const uint8_t *p, size_t n)
{
	static const uint8_t oid[] = { 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07 };
	if (n < 2 || p[0] != 0x30)
		return false;
	/* short form, or the long form's count of length bytes (0x80, BER's
	 * indefinite length, has none) */
	size_t len_bytes = p[1] & 0x80 ? (size_t)(p[1] & 0x7f) : 0;
	size_t at = 2 + len_bytes;
	return len_bytes <= 4 && n >= at + sizeof(oid) + 1 && memcmp(p + at, oid, sizeof(oid)) == 0 &&
	       p[at + sizeof(oid)] >= 1 && p[at + sizeof(oid)] <= 6;
}

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

/* ---- zip-based formats, without libmagic ---------------------------------
 *
 * The commonest attachments after images and PDFs are zip containers (zip,
 * docx, xlsx, pptx, odt...).  libmagic names them from the local file
 * headers at the start; these are the cases where its answer is certain
 * (checked against libmagic 5.44 with our flags), answered here.  Any other
 * layout (a first entry libmagic treats specially, a data descriptor that
 * hides the sizes, a header cut by the prefix) still goes to libmagic. */

static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A local file header at p[off]: its name, and where the next one starts
 * (0 when unknown: sizes deferred to a data descriptor). */
struct zip_entry {
	const uint8_t *name;
	size_t name_n, extra, extra_n, next;
};

static bool zip_entry_at(const uint8_t *p, size_t n, size_t off, struct zip_entry *e)
{
	if (off > n || n - off < 30 || memcmp(p + off, "PK\x03\x04", 4) != 0)
		return false;
	size_t nl = le16(p + off + 26), xl = le16(p + off + 28);
	if (n - off - 30 < nl + xl)
		return false;
	e->name = p + off + 30;
	e->name_n = nl;
	e->extra = off + 30 + nl;
	e->extra_n = xl;
	bool deferred = le16(p + off + 6) & 8;
	e->next = deferred ? 0 : off + 30 + nl + xl + le32(p + off + 18);
	return true;
}

static bool name_starts(const struct zip_entry *e, const char *lit)
{
	size_t k = strlen(lit);
	return e->name_n >= k && memcmp(e->name, lit, k) == 0;
}

static const char *sniff_zip(struct sniff_cookie *s, const uint8_t *p, size_t n)
{
	struct zip_entry e;
	if (!zip_entry_at(p, n, 0, &e))
		return NULL;
	/* OOXML as Office writes it: [Content_Types].xml, _rels/.rels, then
	 * the part that names the application. */
	if (e.name_n == 19 && memcmp(e.name, "[Content_Types].xml", 19) == 0) {
		struct zip_entry e2, e3;
		if (!e.next || !zip_entry_at(p, n, e.next, &e2) || e2.name_n != 11 ||
		    memcmp(e2.name, "_rels/.rels", 11) != 0 || !e2.next ||
		    !zip_entry_at(p, n, e2.next, &e3))
			return NULL;
		if (name_starts(&e3, "word/"))
			return "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
		if (name_starts(&e3, "xl/"))
			return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
		if (name_starts(&e3, "ppt/"))
			return "application/vnd.openxmlformats-officedocument.presentationml.presentation";
		return NULL;
	}
	/* OpenDocument: a stored "mimetype" entry holding the type. */
	if (e.name_n == 8 && memcmp(e.name, "mimetype", 8) == 0) {
		static const char odf[] = "application/vnd.oasis.opendocument.";
		size_t k = le32(p + 18), at = e.extra + e.extra_n;
		if (le16(p + 8) != 0 || k >= sizeof(s->zip_type) || n - at < k ||
		    k <= sizeof(odf) - 1 || memcmp(p + at, odf, sizeof(odf) - 1) != 0)
			return NULL;
		for (size_t i = sizeof(odf) - 1; i < k; i++) {
			uint8_t c = p[at + i];
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
				return NULL;
		}
		memcpy(s->zip_type, p + at, k);
		s->zip_type[k] = '\0';
		return s->zip_type;
	}
	/* First entries that libmagic reads as something more specific than
	 * a zip (Java, Android, iOS, OOXML in other layouts, epub...). */
	static const char *const special[] = {
		"META-INF", "AndroidManifest", "classes", "_rels", "word/", "xl/", "ppt/",
		"docProps", "Payload/", "mimetype", NULL,
	};
	for (const char *const *sp = special; *sp; sp++)
		if (name_starts(&e, *sp))
			return NULL;
	/* An extra field 0xCAFE marks a jar. */
	for (size_t x = e.extra, end = e.extra + e.extra_n; x + 4 <= end;
	     x += 4 + le16(p + x + 2))
		if (le16(p + x) == 0xCAFE)
			return NULL;
	return "application/zip";
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
		for (size_t i = 0; i < sizeof(pgp_armour) / sizeof(pgp_armour[0]); i++)
			if (n >= pgp_armour[i].n && memcmp(p, pgp_armour[i].line, pgp_armour[i].n) == 0)
				return pgp_armour[i].type;
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
	if (is_pkcs7(p, n))
		return "application/octet-stream";
	const char *z = sniff_zip(s, p, n);
	if (z)
		return z;
	if (s->state == SNIFF_FAILED)
		return NULL;
	if (s->state == SNIFF_NEW && !sniff_load(s))
		return NULL;
	const char *t = magic_buffer(s->magic, p, n);
	if (!t || !*t)
		return NULL;
	return t;
}

/* ---- declared vs detected types --------------------------------------- */

/* Types libmagic reports for a family of formats that mail declares in
 * other ways: the first entry is the container, the others its members. */
static const char *const zip_family[] = {
	"application/zip", "application/vnd.openxmlformats-officedocument.",
	"application/vnd.oasis.opendocument.", "application/java-archive",
	"application/epub+zip", "application/vnd.ms-excel.", "application/vnd.ms-word.",
	"application/vnd.ms-powerpoint.", "application/vnd.android.package-archive",
	"application/xpinstall", "application/vnd.apple.keynote", NULL,
};
/* Entries are base types: "x-" already dropped from the subtype. */
static const char *const ole_family[] = {
	"application/ole-storage", "application/cdfv2", "application/vnd.ms-",
	"application/msword", "application/vnd.visio", "application/msi",
	"application/vnd.ms-outlook", NULL,
};
/* Aliases, as base types after dropping "x-" from the subtype. */
static const char *const alias_pairs[][2] = {
	{ "image/jpg", "image/jpeg" }, { "image/pjpeg", "image/jpeg" },
	{ "audio/mp3", "audio/mpeg" }, { "audio/mpeg3", "audio/mpeg" },
	{ "application/x-gzip", "application/gzip" }, { "application/gzip-compressed", "application/gzip" },
	{ "application/zip-compressed", "application/zip" }, { "application/x-zip-compressed", "application/zip" },
	{ "application/pkcs7-signature", "application/pkcs7" }, { "application/pkcs7-mime", "application/pkcs7" },
	{ "application/pkcs7", "application/pkcs7" },
	{ "text/xml", "application/xml" }, { "image/ico", "image/vnd.microsoft.icon" },
	{ "image/icon", "image/vnd.microsoft.icon" }, { "application/rar", "application/vnd.rar" },
	{ "application/x-rar-compressed", "application/vnd.rar" }, { "application/7z-compressed", "application/x-7z-compressed" },
	{ "audio/wav", "audio/x-wav" }, { "audio/wave", "audio/x-wav" }, { "audio/vnd.wave", "audio/x-wav" },
	{ "application/gtar-compressed", "application/gzip" }, { "application/compressed-tar", "application/gzip" },
	{ "application/tgz", "application/gzip" }, { "application/gtar", "application/tar" },
	{ "application/bzip", "application/bzip2" }, { "application/compressed", "application/gzip" },
};

/* Lower-cased base type ("type/subtype", no parameters, "x-" dropped from
 * the subtype) into buf. */
static size_t base_type(const char *s, size_t n, char *buf, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		char c = s[i];
		if (c == ';' || c == ' ')
			break;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c | 0x20);
		buf[k++] = c;
		if (c == '/' && i + 2 < n && (s[i + 1] | 0x20) == 'x' && s[i + 2] == '-')
			i += 2;
	}
	buf[k] = '\0';
	return k;
}

/* Whether base_type(s, n) into a 128-byte buffer would equal t, without
 * building it: canonical() asks this of every alias, four times per
 * sniffed part, and most differ in their first bytes. */
static bool base_type_is(const char *s, size_t n, const char *t)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < 128; i++) {
		char c = s[i];
		if (c == ';' || c == ' ')
			break;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c | 0x20);
		if (t[k] != c)
			return false;
		k++;
		if (c == '/' && i + 2 < n && (s[i + 1] | 0x20) == 'x' && s[i + 2] == '-')
			i += 2;
	}
	return t[k] == '\0';
}

static const char *canonical(const char *t)
{
	for (size_t i = 0; i < sizeof(alias_pairs) / sizeof(alias_pairs[0]); i++)
		if (base_type_is(alias_pairs[i][0], strlen(alias_pairs[i][0]), t))
			return alias_pairs[i][1];
	return t;
}

static bool in_family(const char *t, const char *const *fam)
{
	for (; *fam; fam++) {
		size_t k = strlen(*fam);
		if ((*fam)[k - 1] == '.' ? strncmp(t, *fam, k) == 0 : strcmp(t, *fam) == 0)
			return true;
	}
	return false;
}

bool sniff_types_agree(struct str declared, const char *detected)
{
	if (!declared.p || !detected)
		return true;
	char d[128], g[128];
	base_type(declared.p, declared.n, d, sizeof(d));
	base_type(detected, strlen(detected), g, sizeof(g));
	/* "I don't know" on either side disagrees with nothing. */
	if (!d[0] || !g[0] || strcmp(d, "application/octet-stream") == 0 ||
	    strcmp(g, "application/octet-stream") == 0 || strcmp(g, "application/empty") == 0 ||
	    strcmp(g, "inode/empty") == 0 || strcmp(d, "application/unknown") == 0 ||
	    strcmp(d, "application/download") == 0 || strcmp(d, "application/force-download") == 0 ||
	    strcmp(d, "application/binary") == 0)
		return true;
	if (strcmp(d, g) == 0)
		return true;
	char dc[128], gc[128];
	base_type(canonical(d), strlen(canonical(d)), dc, sizeof(dc));
	base_type(canonical(g), strlen(canonical(g)), gc, sizeof(gc));
	if (strcmp(dc, gc) == 0)
		return true;
	/* Containers: a docx is a zip to libmagic when it cannot see inside
	 * the first 4 KiB, and the other way round for OLE files. */
	if ((in_family(d, zip_family) || in_family(dc, zip_family)) &&
	    (in_family(g, zip_family) || in_family(gc, zip_family)))
		return true;
	if ((in_family(d, ole_family) || in_family(d, zip_family)) &&
	    in_family(g, ole_family))
		return true;
	/* Text found in a part declared as some text-based application type
	 * (scripts, JSON, PGP armour...): libmagic's text answers are coarse. */
	if (strncmp(g, "text/", 5) == 0 &&
	    strncmp(d, "image/", 6) != 0 && strncmp(d, "audio/", 6) != 0 &&
	    strncmp(d, "video/", 6) != 0 && strncmp(d, "font/", 5) != 0)
		return true;
	return false;
}
