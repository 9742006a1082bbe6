/* SPDX-License-Identifier: MIT */
/* RFC 5322 3.3 dates and their obsolete forms.  A parsed date is formatted
 * with the emitter's json_put_iso8601 and written back in RFC 5322 form,
 * which must parse to the same instant.  The first 8 bytes, as an int64,
 * also go through the formatter, whose form must be the plain one exactly
 * within years 0000..9999. */
#include "fuzz.h"
#include "mail/date.h"

#include <errno.h>

static const char *const months[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

/* 0000-01-01T00:00:00Z .. 9999-12-31T23:59:59Z: the plain form; outside,
 * ISO 8601's expanded years, with a sign. */
#define ISO_MIN INT64_C(-62167219200)
#define ISO_MAX INT64_C(253402300799)

static size_t check_format(int64_t t, char iso[32])
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	FUZZ_CHECK(json_put_iso8601(&b, t) == 0);
	size_t n = b.len;
	FUZZ_CHECK(n >= 20 && n < 32);
	FUZZ_CHECK((t < ISO_MIN || t > ISO_MAX) == (b.p[0] == '+' || b.p[0] == '-'));
	FUZZ_CHECK((n == 20) == (b.p[0] != '+' && b.p[0] != '-'));
	memcpy(iso, b.p, n);
	iso[n] = '\0';
	dynbuf_release(&b);
	return n;
}

static int digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static void round_trip(int64_t t)
{
	char iso[32], rfc[64];
	size_t n = check_format(t, iso);

	/* Plain "YYYY-MM-DDTHH:MM:SSZ" only (years 0000..9999). */
	if (n != 20)
		return;
	FUZZ_CHECK(digits(iso, 4) && iso[4] == '-' && digits(iso + 5, 2) &&
	           iso[7] == '-' && digits(iso + 8, 2) && iso[10] == 'T' &&
	           digits(iso + 11, 2) && iso[13] == ':' && digits(iso + 14, 2) &&
	           iso[16] == ':' && digits(iso + 17, 2) && iso[19] == 'Z');
	int mon = (iso[5] - '0') * 10 + iso[6] - '0';
	int day = (iso[8] - '0') * 10 + iso[9] - '0';
	FUZZ_CHECK(mon >= 1 && mon <= 12 && day >= 1 && day <= 31);
	FUZZ_CHECK(memcmp(iso + 11, "24", 2) < 0 && iso[14] <= '5' && iso[17] <= '5');
	/* Years before 1900 are not what mail dates look like (and two-digit
	 * forms are windowed), so the round trip is checked from 1900 on. */
	if (memcmp(iso, "1900", 4) < 0)
		return;
	int k = snprintf(rfc, sizeof(rfc), "%.2s %s %.4s %.2s:%.2s:%.2s +0000",
	                 iso + 8, months[mon - 1], iso, iso + 11, iso + 14, iso + 17);
	int64_t back = 0;
	FUZZ_CHECK(date_parse((struct str){ rfc, (size_t)k }, &back) == 0);
	FUZZ_CHECK(back == t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = fuzz_dup(data, size);
	int64_t t = 0;

	int r = date_parse((struct str){ (const char *)p, size }, &t);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0)
		round_trip(t);
	if (size >= 8) {
		char iso[32];
		int64_t raw;
		memcpy(&raw, p, sizeof(raw));
		/* +-4.4 million years, far past what a Date can say, and the
		 * whole int64 range. */
		check_format(raw / 65536, iso);
		check_format(raw, iso);
		if (size > 8 && p[8] == 'w')
			check_format(raw % (ISO_MAX + 1), iso);
	}
	free(p);
	return 0;
}
