/* Transfer decodings: base64 and quoted-printable (RFC 2045 6.7, 6.8) and the
 * uuencode blocks that old mailers put inside text bodies.
 *
 * Invariants: every function reads only p[0..n), writes only out[0..out_cap),
 * and makes one forward pass (the QP decoder may look at a run of white space
 * after `=` twice, never more).  The decoded size is computed by the same
 * loop that writes, so "size only" and "full decode" cannot disagree.  The
 * hot loops are table-driven and make no per-byte function calls: base64
 * takes four alphabet bytes per step and falls back to one byte at a time
 * only around line ends and garbage; QP copies runs between `=` with memchr
 * and memcpy.  No allocation, no state outside the arguments. */
#include "mail/transfer.h"

#include <string.h>

/* Values of the base64 table: 0..63 are sextets; the rest classify. */
enum { B64_WS = 64, B64_PAD = 65, B64_BAD = 66 };

#define B64_ROW_BAD  B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, \
	B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD

static const uint8_t b64_table[256] = {
	/* 0x00 */ B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	           B64_BAD, B64_WS, B64_WS, B64_WS, B64_WS, B64_WS, B64_BAD, B64_BAD,
	/* 0x10 */ B64_ROW_BAD,
	/* 0x20 */ B64_WS, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	           B64_BAD, B64_BAD, B64_BAD, 62, B64_BAD, B64_BAD, B64_BAD, 63,
	/* 0x30 */ 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, B64_BAD, B64_BAD, B64_BAD, B64_PAD, B64_BAD, B64_BAD,
	/* 0x40 */ B64_BAD, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	/* 0x50 */ 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	/* 0x60 */ B64_BAD, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	/* 0x70 */ 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	/* 0x80 */ B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD,
	/* 0xc0 */ B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD,
};

/* Hex digit values; 0xff for anything else.  Lower case is accepted: RFC
 * 2045 6.7 says a robust decoder may, and real encoders emit it. */
static const uint8_t hex_table[256] = {
	['0'] = 0, ['1'] = 1, ['2'] = 2, ['3'] = 3, ['4'] = 4, ['5'] = 5, ['6'] = 6,
	['7'] = 7, ['8'] = 8, ['9'] = 9,
	['A'] = 10, ['B'] = 11, ['C'] = 12, ['D'] = 13, ['E'] = 14, ['F'] = 15,
	['a'] = 10, ['b'] = 11, ['c'] = 12, ['d'] = 13, ['e'] = 14, ['f'] = 15,
};

static inline bool is_hex(uint8_t c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

static inline bool ascii_ieq(const uint8_t *p, size_t n, const char *lit)
{
	size_t m = strlen(lit);
	if (n != m)
		return false;
	for (size_t i = 0; i < m; i++) {
		uint8_t c = p[i];
		if (c >= 'A' && c <= 'Z')
			c |= 0x20;
		if (c != (uint8_t)lit[i])
			return false;
	}
	return true;
}

enum transfer_encoding transfer_encoding_parse(struct mail_str v)
{
	if (!v.p)
		return TRANSFER_IDENTITY;
	const uint8_t *p = (const uint8_t *)v.p;
	size_t n = v.n;
	while (n && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' ||
	             p[n - 1] == '\n' || p[n - 1] == ';'))
		n--;
	/* A comment after the token (`base64 (yes)`) is legal RFC 822 syntax. */
	for (size_t i = 0; i < n; i++)
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '(') {
			n = i;
			break;
		}
	if (n == 0 || ascii_ieq(p, n, "7bit") || ascii_ieq(p, n, "8bit") ||
	    ascii_ieq(p, n, "binary") || ascii_ieq(p, n, "8-bit") ||
	    ascii_ieq(p, n, "7-bit"))
		return TRANSFER_IDENTITY;
	if (ascii_ieq(p, n, "base64"))
		return TRANSFER_BASE64;
	if (ascii_ieq(p, n, "quoted-printable"))
		return TRANSFER_QP;
	if (ascii_ieq(p, n, "x-uuencode") || ascii_ieq(p, n, "uuencode") ||
	    ascii_ieq(p, n, "x-uue") || ascii_ieq(p, n, "uue"))
		return TRANSFER_UUENCODE;
	return TRANSFER_UNKNOWN;
}

uint64_t transfer_base64_decode(const uint8_t *p, size_t n, uint8_t *out,
                                size_t out_cap, uint64_t *warnings)
{
	uint64_t o = 0;          /* decoded bytes so far (written or not) */
	uint32_t acc = 0;        /* pending sextets, q of them */
	unsigned q = 0;
	bool bad = false;
	size_t i = 0;

	if (!out)
		out_cap = 0;
	while (i < n) {
		/* Fast path: whole quanta of four alphabet bytes. */
		if (q == 0) {
			while (i + 4 <= n) {
				uint32_t a = b64_table[p[i]], b = b64_table[p[i + 1]];
				uint32_t c = b64_table[p[i + 2]], d = b64_table[p[i + 3]];
				if ((a | b | c | d) >= 64)
					break;
				uint32_t v = a << 18 | b << 12 | c << 6 | d;
				if (o + 3 <= out_cap) {
					out[o] = (uint8_t)(v >> 16);
					out[o + 1] = (uint8_t)(v >> 8);
					out[o + 2] = (uint8_t)v;
				} else {
					for (unsigned k = 0; k < 3 && o + k < out_cap; k++)
						out[o + k] = (uint8_t)(v >> (16 - 8 * k));
				}
				o += 3;
				i += 4;
			}
			if (i >= n)
				break;
		}
		/* Slow path: one byte, until the quantum is whole again. */
		uint8_t v = b64_table[p[i++]];
		if (v < 64) {
			acc = acc << 6 | v;
			if (++q == 4) {
				uint8_t b[3] = { (uint8_t)(acc >> 16), (uint8_t)(acc >> 8), (uint8_t)acc };
				for (int k = 0; k < 3; k++, o++)
					if (o < out_cap)
						out[o] = b[k];
				q = 0;
				acc = 0;
			}
		} else if (v == B64_WS) {
			continue;
		} else if (v == B64_PAD) {
			/* `=` closes the quantum: 2 sextets make 1 byte, 3 make 2.
			 * Further `=` (the second pad) find q == 0 and are no-ops. */
			if (q == 1)
				bad = true;
			if (q >= 2) {
				if (o < out_cap)
					out[o] = (uint8_t)(acc >> (q == 2 ? 4 : 10));
				o++;
			}
			if (q == 3) {
				if (o < out_cap)
					out[o] = (uint8_t)(acc >> 2);
				o++;
			}
			q = 0;
			acc = 0;
		} else {
			bad = true;
		}
	}
	/* Missing padding is tolerated; a lone sextet is truncated data. */
	if (q == 1)
		bad = true;
	if (q >= 2) {
		if (o < out_cap)
			out[o] = (uint8_t)(acc >> (q == 2 ? 4 : 10));
		o++;
	}
	if (q == 3) {
		if (o < out_cap)
			out[o] = (uint8_t)(acc >> 2);
		o++;
	}
	if (bad && warnings)
		mail_warn(warnings, MAIL_W_BAD_BASE64);
	return o;
}

static inline void put_bytes(uint8_t *out, size_t out_cap, uint64_t o,
                             const uint8_t *src, size_t k)
{
	if (o < out_cap) {
		size_t room = out_cap - (size_t)o;
		memcpy(out + o, src, k < room ? k : room);
	}
}

uint64_t transfer_qp_decode(const uint8_t *p, size_t n, uint8_t *out,
                            size_t out_cap, uint64_t *warnings)
{
	uint64_t o = 0;
	size_t i = 0;
	bool bad = false;

	if (!out)
		out_cap = 0;
	while (i < n) {
		const uint8_t *eq = memchr(p + i, '=', n - i);
		size_t end = eq ? (size_t)(eq - p) : n;
		put_bytes(out, out_cap, o, p + i, end - i);
		o += end - i;
		if (!eq)
			break;
		i = end + 1;
		if (i + 2 <= n && is_hex(p[i]) && is_hex(p[i + 1])) {
			uint8_t b = (uint8_t)(hex_table[p[i]] << 4 | hex_table[p[i + 1]]);
			if (o < out_cap)
				out[o] = b;
			o++;
			i += 2;
			continue;
		}
		/* Soft line break (6.7 rule 5), with the transport padding that
		 * rule 3 allows between `=` and the line end.  `=` at the very
		 * end of the data is a soft break too: encoders end bodies so. */
		size_t j = i;
		while (j < n && (p[j] == ' ' || p[j] == '\t'))
			j++;
		if (j == n) {
			i = n;
		} else if (p[j] == '\n') {
			i = j + 1;
		} else if (p[j] == '\r' && (j + 1 == n || p[j + 1] == '\n')) {
			i = j + 1 == n ? n : j + 2;
		} else {
			/* Invalid escape: keep the `=` literally (rule 1's advice). */
			if (o < out_cap)
				out[o] = '=';
			o++;
			bad = true;
		}
	}
	if (bad && warnings)
		mail_warn(warnings, MAIL_W_BAD_QUOTED_PRINTABLE);
	return o;
}

/* ---- uuencode ---------------------------------------------------------- */

static inline size_t line_end(const uint8_t *p, size_t n, size_t i, size_t *next)
{
	const uint8_t *nl = memchr(p + i, '\n', n - i);
	size_t e = nl ? (size_t)(nl - p) : n;
	*next = nl ? e + 1 : n;
	if (e > i && p[e - 1] == '\r')
		e--;
	return e;
}

/* A data line: the length byte, then ceil(len/3)*4 bytes in ' '..'`'.
 * Trailing spaces may have been stripped in transit, and some encoders add
 * a checksum byte, so the length is checked loosely. */
static bool uu_line_ok(const uint8_t *p, size_t len)
{
	if (len == 0 || p[0] < ' ' || p[0] > '`')
		return false;
	for (size_t k = 1; k < len; k++)
		if (p[k] < ' ' || p[k] > '`')
			return false;
	size_t want = ((size_t)((p[0] - ' ') & 63) + 2) / 3 * 4;
	return len - 1 <= want + 2;
}

static bool uu_is_end(const uint8_t *p, size_t len)
{
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	return len == 3 && memcmp(p, "end", 3) == 0;
}

/* `begin` SP mode SP name, the mode 3 or 4 octal digits. */
static bool uu_begin(const uint8_t *p, size_t len, struct mail_str *name)
{
	if (len < 6 || memcmp(p, "begin ", 6) != 0)
		return false;
	size_t k = 6, d = 0;
	while (k < len && p[k] >= '0' && p[k] <= '7')
		k++, d++;
	if (d < 3 || d > 4 || k >= len || p[k] != ' ')
		return false;
	k++;
	while (len > k && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	name->p = (const char *)p + k;
	name->n = len - k;
	return true;
}

bool transfer_uu_find(const uint8_t *p, size_t n, size_t from, struct transfer_uu *u)
{
	/* Line by line with memchr: a line is looked at once whatever the
	 * number of calls (a memmem from `from` would be, too, but sanitizers
	 * check its whole haystack per call, which turns many calls quadratic). */
	if (from > 0 && from < n && p[from - 1] != '\n') {
		const uint8_t *nl = memchr(p + from, '\n', n - from);
		from = nl ? (size_t)(nl - p) + 1 : n;
	}
	while (from < n) {
		size_t s = from, next, e = line_end(p, n, s, &next);
		from = next;
		if (e - s < 6 || p[s] != 'b' || memcmp(p + s, "begin ", 6) != 0)
			continue;
		if (!uu_begin(p + s, e - s, &u->name))
			continue;
		u->start = s;
		u->data = next;
		u->terminated = false;
		size_t i = next, lines = 0;
		while (i < n) {
			size_t nx, le = line_end(p, n, i, &nx);
			if (uu_is_end(p + i, le - i)) {
				u->data_end = i;
				u->end = nx;
				u->terminated = true;
				return true;
			}
			if (!uu_line_ok(p + i, le - i))
				break;
			lines++;
			i = nx;
		}
		/* No `end`: the block is the run of valid data lines.  A `begin`
		 * line with no data at all is ordinary text. */
		if (lines == 0)
			continue;
		u->data_end = i;
		u->end = i;
		return true;
	}
	return false;
}

uint64_t transfer_uu_decode(const uint8_t *p, size_t n, uint8_t *out,
                            size_t out_cap, uint64_t *warnings)
{
	uint64_t o = 0;
	size_t i = 0;
	bool bad = false;

	if (!out)
		out_cap = 0;
	while (i < n) {
		size_t next, e = line_end(p, n, i, &next);
		if (e == i) {          /* an empty line has no length byte */
			bad = true;
			i = next;
			continue;
		}
		size_t len = (size_t)((p[i] - ' ') & 63);
		if (p[i] < ' ' || p[i] > '`')
			bad = true;
		if (len == 0)          /* the zero-length line ends the data */
			break;
		/* A length byte that promises more than the line could hold:
		 * decode what the line holds (missing bytes are stripped
		 * trailing spaces, as below), never more bytes than the line
		 * has, so output stays shorter than input. */
		if (len > e - i) {
			len = e - i;
			bad = true;
		}
		size_t k = i + 1, got = 0;
		while (got < len) {
			uint32_t v = 0;
			for (int j = 0; j < 4; j++) {
				/* Missing bytes (stripped trailing spaces) count as 0. */
				uint8_t c = k < e ? p[k++] : ' ';
				if (c < ' ' || c > '`')
					bad = true;
				v = v << 6 | ((uint32_t)(c - ' ') & 63);
			}
			uint8_t b[3] = { (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
			for (int j = 0; j < 3 && got < len; j++, got++, o++)
				if (o < out_cap)
					out[o] = b[j];
		}
		i = next;
	}
	if (bad && warnings)
		mail_warn(warnings, MAIL_W_BAD_UUENCODE);
	return o;
}

uint64_t transfer_decode(enum transfer_encoding e, const uint8_t *p, size_t n,
                         uint8_t *out, size_t out_cap, uint64_t *warnings)
{
	switch (e) {
	case TRANSFER_BASE64:
		return transfer_base64_decode(p, n, out, out_cap, warnings);
	case TRANSFER_QP:
		return transfer_qp_decode(p, n, out, out_cap, warnings);
	case TRANSFER_UUENCODE: {
		struct transfer_uu u;
		if (!transfer_uu_find(p, n, 0, &u)) {
			if (n && warnings)
				mail_warn(warnings, MAIL_W_BAD_UUENCODE);
			return 0;
		}
		if (!u.terminated && warnings)
			mail_warn(warnings, MAIL_W_BAD_UUENCODE);
		return transfer_uu_decode(p + u.data, u.data_end - u.data, out, out_cap, warnings);
	}
	case TRANSFER_IDENTITY:
	case TRANSFER_UNKNOWN:
		break;
	}
	if (out && out_cap)
		memcpy(out, p, n < out_cap ? n : out_cap);
	return n;
}
