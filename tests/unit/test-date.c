/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/date.c: RFC 5322 dates, the obsolete and wild forms,
 * rejection of the unparseable.  Instants are compared in the ISO 8601 form
 * the emitter writes (emit/json.h's json_put_iso8601, tested in test-json). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emit/json.h"
#include "mail/date.h"

/* t's ISO form in a static buffer. */
static const char *iso_of(int64_t t)
{
	static char buf[40];
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(json_put_iso8601(&b, t), 0);
	assert_true(b.len < sizeof(buf));
	memcpy(buf, b.p, b.len);
	buf[b.len] = '\0';
	dynbuf_release(&b);
	return buf;
}

/* Parses s and returns its ISO form in a static buffer ("EINVAL" when
 * unparseable). */
static const char *iso(const char *s)
{
	int64_t t;
	if (date_parse((struct str){ s, strlen(s) }, &t) < 0)
		return "EINVAL";
	return iso_of(t);
}

static void test_date_rfc5322(void **state)
{
	(void)state;
	assert_string_equal(iso("Mon, 12 Jan 2004 10:00:00 +0100"), "2004-01-12T09:00:00Z");
	assert_string_equal(iso("Fri, 21 Nov 1997 09:55:06 -0600"), "1997-11-21T15:55:06Z");
	assert_string_equal(iso("Thu, 13 Feb 1969 23:32:54 -0330"), "1969-02-14T03:02:54Z");
}

static void test_date_epoch_value(void **state)
{
	(void)state;
	int64_t t = -1;
	assert_int_equal(date_parse((struct str){ "1 Jan 1970 00:00:00 +0000", 25 }, &t), 0);
	assert_int_equal(t, 0);
	assert_int_equal(date_parse((struct str){ "Sat, 1 Jan 2000 00:00:01 GMT", 28 }, &t), 0);
	assert_int_equal(t, 946684801);
}

static void test_date_missing_weekday_and_seconds(void **state)
{
	(void)state;
	assert_string_equal(iso("12 Jan 2004 10:00 +0000"), "2004-01-12T10:00:00Z");
}

static void test_date_wrong_weekday_ignored(void **state)
{
	(void)state;
	assert_string_equal(iso("Sun, 12 Jan 2004 10:00:00 +0000"), "2004-01-12T10:00:00Z");
}

static void test_date_two_digit_years(void **state)
{
	(void)state;
	/* RFC 5322 4.3: below 50 is 20xx, else 19xx. */
	assert_string_equal(iso("12 Jan 04 10:00:00 +0000"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("12 Jan 49 10:00:00 +0000"), "2049-01-12T10:00:00Z");
	assert_string_equal(iso("12 Jan 50 10:00:00 +0000"), "1950-01-12T10:00:00Z");
	assert_string_equal(iso("12 Jan 99 10:00:00 +0000"), "1999-01-12T10:00:00Z");
}

static void test_date_three_digit_year(void **state)
{
	(void)state;
	assert_string_equal(iso("12 Jan 104 10:00:00 +0000"), "2004-01-12T10:00:00Z");
}

static void test_date_named_zones(void **state)
{
	(void)state;
	assert_string_equal(iso("12 Jan 2004 10:00:00 GMT"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 UT"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 EST"), "2004-01-12T15:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 EDT"), "2004-01-12T14:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 CST"), "2004-01-12T16:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 CDT"), "2004-01-12T15:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 MST"), "2004-01-12T17:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 MDT"), "2004-01-12T16:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 pst"), "2004-01-12T18:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 PDT"), "2004-01-12T17:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 CET"), "2004-01-12T09:00:00Z");
}

static void test_date_military_zone_is_zero(void **state)
{
	(void)state;
	/* RFC 5322 4.3: military zones SHOULD be read as -0000. */
	assert_string_equal(iso("12 Jan 2004 10:00:00 A"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 Z"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 y"), "2004-01-12T10:00:00Z");
}

static void test_date_numeric_zone_wins(void **state)
{
	(void)state;
	assert_string_equal(iso("12 Jan 2004 10:00:00 -0800 (PST)"), "2004-01-12T18:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 GMT+0100"), "2004-01-12T09:00:00Z");
	assert_string_equal(iso("12 Jan 2004 10:00:00 EST -0800"), "2004-01-12T18:00:00Z");
}

static void test_date_comment_zone_skipped(void **state)
{
	(void)state;
	assert_string_equal(iso("Mon, 12 Jan 2004 10:00:00 (PST)"), "2004-01-12T10:00:00Z");
}

static void test_date_dashes(void **state)
{
	(void)state;
	assert_string_equal(iso("12-Jan-2004 10:00:00 +0200"), "2004-01-12T08:00:00Z");
	assert_string_equal(iso("12-Jan-04 10:00:00-0100"), "2004-01-12T11:00:00Z");
}

static void test_date_asctime(void **state)
{
	(void)state;
	assert_string_equal(iso("Mon Jan 12 10:00:00 2004"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("Mon Jan  2 10:00:00 PST 2004"), "2004-01-02T18:00:00Z");
}

static void test_date_extra_spaces(void **state)
{
	(void)state;
	assert_string_equal(iso("  Mon ,  12   Jan   2004   10:00:00   +0100  "), "2004-01-12T09:00:00Z");
	assert_string_equal(iso("Mon,12 Jan 2004 10:00:00 +0100"), "2004-01-12T09:00:00Z");
}

static void test_date_full_month_names(void **state)
{
	(void)state;
	assert_string_equal(iso("12 January 2004 10:00:00 +0000"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("3 Sept 2004 10:00:00 +0000"), "2004-09-03T10:00:00Z");
}

static void test_date_iso8601(void **state)
{
	(void)state;
	assert_string_equal(iso("2004-01-12T10:00:00Z"), "2004-01-12T10:00:00Z");
	assert_string_equal(iso("2004-01-12 10:00:00 +01:00"), "2004-01-12T09:00:00Z");
}

static void test_date_am_pm(void **state)
{
	(void)state;
	assert_string_equal(iso("12 Jan 2004 10:00:00 PM +0000"), "2004-01-12T22:00:00Z");
	assert_string_equal(iso("12 Jan 2004 12:30 AM +0000"), "2004-01-12T00:30:00Z");
}

static void test_date_without_time_is_midnight(void **state)
{
	(void)state;
	assert_string_equal(iso("12 Jan 2004"), "2004-01-12T00:00:00Z");
}

static void test_date_leap_years(void **state)
{
	(void)state;
	assert_string_equal(iso("29 Feb 2004 00:00:00 +0000"), "2004-02-29T00:00:00Z");
	assert_string_equal(iso("29 Feb 2000 00:00:00 +0000"), "2000-02-29T00:00:00Z");
	assert_string_equal(iso("29 Feb 2003 00:00:00 +0000"), "EINVAL");
	assert_string_equal(iso("29 Feb 1900 00:00:00 +0000"), "EINVAL");
}

static void test_date_leap_second(void **state)
{
	(void)state;
	assert_string_equal(iso("31 Dec 2016 23:59:60 +0000"), "2017-01-01T00:00:00Z");
}

static void test_date_unparseable(void **state)
{
	(void)state;
	assert_string_equal(iso(""), "EINVAL");
	assert_string_equal(iso("garbage"), "EINVAL");
	assert_string_equal(iso("Mon, 32 Jan 2004 10:00:00 +0000"), "EINVAL");
	assert_string_equal(iso("Mon, 12 Foo 2004 10:00:00 +0000"), "EINVAL");
	assert_string_equal(iso("12 Jan 2004 25:00:00 +0000"), "EINVAL");
	assert_string_equal(iso("12 Jan 2004 10:61:00 +0000"), "EINVAL");
	assert_string_equal(iso("12 Jan 2004 10:00:00 +2500"), "EINVAL");
	assert_string_equal(iso("12 Jan 2004 10:00:00 +123"), "EINVAL");
	assert_string_equal(iso("Jan 2004"), "EINVAL");
	assert_string_equal(iso("12 Jan 20041 10:00:00"), "EINVAL");
	assert_string_equal(iso("12 Jan 9999999999 10:00:00"), "EINVAL");
	assert_string_equal(iso("12 Jan 2004 10:00:00:00:00"), "EINVAL");
}

/* What the peers read and real mail holds. */
static void test_date_one_digit_fields(void **state)
{
	(void)state;
	assert_string_equal(iso("Wed, 12 Sep 2001 18:9:31 +0800"), "2001-09-12T10:09:31Z");
	assert_string_equal(iso("Wed, 12 Sep 2001 8:09:1 +0000"), "2001-09-12T08:09:01Z");
	assert_string_equal(iso("Tue,24 Dec 2019 10:00:00 +0000"), "2019-12-24T10:00:00Z");
}

/* AM/PM after a 24-hour time is redundant: the hour stands. */
static void test_date_am_pm_after_24_hour_time(void **state)
{
	(void)state;
	assert_string_equal(iso("Fri, 3 Oct 2008 20:48:11 PM +0000"), "2008-10-03T20:48:11Z");
	assert_string_equal(iso("Fri, 3 Oct 2008 00:15 AM +0000"), "2008-10-03T00:15:00Z");
	assert_string_equal(iso("Fri, 3 Oct 2008 13:05 AM +0000"), "2008-10-03T13:05:00Z");
	assert_string_equal(iso("Fri, 3 Oct 2008 8:05 PM +0000"), "2008-10-03T20:05:00Z");
}

static void test_date_localised_names(void **state)
{
	(void)state;
	assert_string_equal(iso("Mittwoch, 3 Dezember 2008 10:00:00 +0100"), "2008-12-03T09:00:00Z");
	assert_string_equal(iso("Mi, 3 Okt 2008 10:00:00 +0000"), "2008-10-03T10:00:00Z");
	assert_string_equal(iso("mar., 12 janv. 2010 10:00:00 +0100"), "2010-01-12T09:00:00Z");
	assert_string_equal(iso("mar 12 gen 2010 10:00:00 +0100"), "2010-01-12T09:00:00Z");
	assert_string_equal(iso("lunes, 5 abril 2010 10:00:00 -0300"), "2010-04-05T13:00:00Z");
	assert_string_equal(iso("do 14 mei 2009 09:00:00 +0200"), "2009-05-14T07:00:00Z");
	assert_string_equal(iso("Thursday, 14 May 2009 09:00:00 +0200"), "2009-05-14T07:00:00Z");
}

/* A time written so it cannot be read is not midnight. */
static void test_date_unreadable_time_rejected(void **state)
{
	(void)state;
	assert_string_equal(iso("Wed, 12 Sep 2001 10.52.37 +0800"), "EINVAL");
	assert_string_equal(iso("12 Sep 2001 9.52.37"), "EINVAL");
	/* a dotted date is a date */
	assert_string_equal(iso("Mon, 12 Jan 2004 10:00:00 +0000 (12.01.2004)"), "2004-01-12T10:00:00Z");
}

static void test_date_not_nul_terminated(void **state)
{
	(void)state;
	static const char buf[] = "12 Jan 2004 10:00:00 +0100999";
	int64_t t;
	/* Only the first 26 bytes: the zone is "+0100". */
	assert_int_equal(date_parse((struct str){ buf, 26 }, &t), 0);
	assert_string_equal(iso_of(t), "2004-01-12T09:00:00Z");
}

static void test_date_huge_input_linear(void **state)
{
	(void)state;
	size_t n = 10 << 20;
	char *in = malloc(n);
	for (size_t i = 0; i < n; i++)
		in[i] = "Mon ("[i % 5];
	int64_t t;
	assert_int_equal(date_parse((struct str){ in, n }, &t), -EINVAL);
	memset(in, ' ', n);
	memcpy(in + n - 26, "12 Jan 2004 10:00:00 +0000", 26);
	assert_int_equal(date_parse((struct str){ in, n }, &t), 0);
	free(in);
}

/* RFC 5322 4.3: obs-hour/obs-minute/obs-second allow CFWS around the
 * colons (the RFC's own appendix A.6.3 example); the time and the zone were
 * dropped silently (dated midnight UTC). */
static void test_date_obs_space_around_colons(void **state)
{
	(void)state;
	assert_string_equal(iso("Fri ,  21   Nov   1997   09 : 55 : 06   -0600 (CST)"),
	                    "1997-11-21T15:55:06Z");
	assert_string_equal(iso("21 Nov 1997 09 :55: 06 -0600"), "1997-11-21T15:55:06Z");
	assert_string_equal(iso("21 Nov 1997 09 : 55 -0600"), "1997-11-21T15:55:00Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_date_obs_space_around_colons),
		cmocka_unit_test(test_date_rfc5322),
		cmocka_unit_test(test_date_epoch_value),
		cmocka_unit_test(test_date_missing_weekday_and_seconds),
		cmocka_unit_test(test_date_wrong_weekday_ignored),
		cmocka_unit_test(test_date_two_digit_years),
		cmocka_unit_test(test_date_three_digit_year),
		cmocka_unit_test(test_date_named_zones),
		cmocka_unit_test(test_date_military_zone_is_zero),
		cmocka_unit_test(test_date_numeric_zone_wins),
		cmocka_unit_test(test_date_comment_zone_skipped),
		cmocka_unit_test(test_date_dashes),
		cmocka_unit_test(test_date_asctime),
		cmocka_unit_test(test_date_extra_spaces),
		cmocka_unit_test(test_date_full_month_names),
		cmocka_unit_test(test_date_iso8601),
		cmocka_unit_test(test_date_am_pm),
		cmocka_unit_test(test_date_without_time_is_midnight),
		cmocka_unit_test(test_date_leap_years),
		cmocka_unit_test(test_date_leap_second),
		cmocka_unit_test(test_date_unparseable),
		cmocka_unit_test(test_date_one_digit_fields),
		cmocka_unit_test(test_date_am_pm_after_24_hour_time),
		cmocka_unit_test(test_date_localised_names),
		cmocka_unit_test(test_date_unreadable_time_rejected),
		cmocka_unit_test(test_date_not_nul_terminated),
		cmocka_unit_test(test_date_huge_input_linear),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
