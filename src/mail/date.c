/* SPDX-License-Identifier: MIT */
/* Dates (RFC 5322 3.3, obsolete forms 4.3): see date.h.
 *
 * Rather than one grammar, a tokenizer that classifies what it meets and a
 * resolver that assembles a date from it, because real Date fields come in
 * many orders: RFC 5322 (`Mon, 12 Jan 2004 10:00:00 +0100`), asctime
 * (`Mon Jan 12 10:00:00 2004`), dashed (`12-Jan-2004`), ISO 8601
 * (`2004-01-12T10:00:00Z`).  Day names are ignored (a wrong one does not
 * matter, RFC 5322 3.3 makes it informative), comments are skipped (a
 * `(PST)` after a numeric zone only repeats it).  The input is scanned once,
 * every number is bounded to nine digits, so the cost is linear and no
 * arithmetic overflows.  Nothing here reads the clock: an unparseable date
 * is -EINVAL, never "now". */
#include "mail/date.h"
#include "mail/header.h"

#include <errno.h>
#include <string.h>

#define DATE_MAX_NUMS 4

struct date_num {
	int v;
	int digits;
};

struct date_tokens {
	struct date_num num[DATE_MAX_NUMS];  /* numbers that are not time or zone */
	int n_num;
	int month;                /* 1..12, 0 when not seen */
	bool have_time;
	int hour, min, sec;
	int ampm;                 /* 0, 'a' or 'p' */
	bool have_zone;           /* a numeric zone: it wins over names */
	int zone_min;
	bool have_named_zone;
	int named_zone_min;
};

static const char date_months[12][4] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec",
};
static const char *const date_month_names[12] = {
	"january", "february", "march", "april", "may", "june", "july",
	"august", "september", "october", "november", "december",
};

/* Month names as localised clients write them (German, French, Spanish,
 * Italian, Dutch, Portuguese; ASCII spellings only: an accented one is not
 * in this table), each also matched by a prefix of three letters or more.
 * No three-letter prefix names two months. */
static const struct {
	const char *name;
	int month;
} date_foreign_months[] = {
	{ "janvier", 1 }, { "janeiro", 1 }, { "januari", 1 }, { "enero", 1 }, { "gennaio", 1 },
	{ "fevrier", 2 }, { "fevereiro", 2 }, { "februari", 2 }, { "febrero", 2 }, { "febbraio", 2 },
	{ "mrz", 3 }, { "mrt", 3 }, { "mars", 3 }, { "marzo", 3 }, { "marco", 3 }, { "maart", 3 },
	{ "avril", 4 }, { "abril", 4 }, { "aprile", 4 },
	{ "mai", 5 }, { "mayo", 5 }, { "maggio", 5 }, { "maio", 5 }, { "mei", 5 },
	{ "juni", 6 }, { "juin", 6 }, { "junio", 6 }, { "junho", 6 }, { "giugno", 6 },
	{ "juli", 7 }, { "juillet", 7 }, { "julio", 7 }, { "julho", 7 }, { "luglio", 7 },
	{ "augustus", 8 }, { "agosto", 8 },
	{ "septembre", 9 }, { "septiembre", 9 }, { "setiembre", 9 }, { "settembre", 9 },
	{ "setembro", 9 },
	{ "oktober", 10 }, { "octobre", 10 }, { "octubre", 10 }, { "ottobre", 10 }, { "outubro", 10 },
	{ "novembre", 11 }, { "noviembre", 11 }, { "novembro", 11 },
	{ "dezember", 12 }, { "decembre", 12 }, { "diciembre", 12 }, { "dicembre", 12 },
	{ "dezembro", 12 },
};

/* RFC 5322 4.3 names, then common names seen in the wild (used only when no
 * numeric zone is present). */
static const struct {
	const char *name;
	int minutes;
} date_zones[] = {
	{ "ut", 0 }, { "utc", 0 }, { "gmt", 0 }, { "z", 0 },
	{ "est", -300 }, { "edt", -240 }, { "cst", -360 }, { "cdt", -300 },
	{ "mst", -420 }, { "mdt", -360 }, { "pst", -480 }, { "pdt", -420 },
	{ "wet", 0 }, { "west", 60 }, { "bst", 60 }, { "cet", 60 },
	{ "cest", 120 }, { "met", 60 }, { "mest", 120 }, { "eet", 120 },
	{ "eest", 180 }, { "msk", 180 }, { "jst", 540 }, { "kst", 540 },
	{ "hkt", 480 }, { "aest", 600 }, { "aedt", 660 }, { "nzst", 720 },
	{ "nzdt", 780 }, { "hst", -600 }, { "akst", -540 }, { "akdt", -480 },
};

static inline bool date_is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static inline bool date_is_alpha(uint8_t c) { return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

/* Reads up to 9 digits at p[*i]; false when the run is longer. */
static bool date_number(const uint8_t *p, size_t n, size_t *i, struct date_num *out)
{
	int v = 0, d = 0;
	while (*i < n && date_is_digit(p[*i])) {
		if (++d > 9)
			return false;
		v = v * 10 + (p[*i] - '0');
		(*i)++;
	}
	out->v = v;
	out->digits = d;
	return true;
}

/* Classifies one alphabetic word; true when it named a zone. */
static bool date_word(struct date_tokens *t, const uint8_t *p, size_t len)
{
	char w[12];
	if (len >= sizeof(w))
		return false;
	for (size_t k = 0; k < len; k++)
		w[k] = (char)(p[k] | 0x20);
	w[len] = '\0';
	/* Months: the three-letter form, or any longer prefix of the full name
	 * (`Sept`, `January`), in English or, as clients localise them, in
	 * the languages of date_foreign_months.  The last month word wins: a
	 * weekday that is also a month's prefix comes first (`mar 12 gen`,
	 * martedi in Italian). */
	if (len >= 3) {
		for (int m = 0; m < 12; m++) {
			if (memcmp(w, date_months[m], 3) == 0 &&
			    strncmp(w, date_month_names[m], len) == 0 &&
			    len <= strlen(date_month_names[m])) {
				t->month = m + 1;
				return false;
			}
		}
		for (size_t k = 0; k < sizeof(date_foreign_months) / sizeof(date_foreign_months[0]); k++) {
			const char *name = date_foreign_months[k].name;
			if (name[0] == w[0] && len <= strlen(name) && strncmp(w, name, len) == 0) {
				t->month = date_foreign_months[k].month;
				return false;
			}
		}
	}
	if (t->have_time && (strcmp(w, "am") == 0 || strcmp(w, "pm") == 0)) {
		t->ampm = w[0];
		return false;
	}
	for (size_t k = 0; k < sizeof(date_zones) / sizeof(date_zones[0]); k++) {
		/* The first letter first: every day name and most words
		 * are compared against all the zones, and few start alike. */
		if (date_zones[k].name[0] == w[0] && strcmp(w, date_zones[k].name) == 0) {
			if (!t->have_named_zone) {
				t->have_named_zone = true;
				t->named_zone_min = date_zones[k].minutes;
			}
			return true;
		}
	}
	/* RFC 5322 4.3: military zones are unreliable (RFC 822 had their signs
	 * backwards) and SHOULD be read as -0000.  Only after the time, so the
	 * ISO `T` separator is not one. */
	if (len == 1 && w[0] != 'j' && t->have_time && !t->have_named_zone) {
		t->have_named_zone = true;
		t->named_zone_min = 0;
		return true;
	}
	/* Day names and anything else: ignored. */
	return false;
}

/* At p[i], after a number: optional white space, `:`, optional white space
 * and a digit.  Returns the offset of that digit, or 0 when it is not so. */
static size_t date_colon(const uint8_t *p, size_t n, size_t i)
{
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	if (i >= n || p[i] != ':')
		return 0;
	i++;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	return i < n && date_is_digit(p[i]) ? i : 0;
}

/* At p[i], after a number of one or two digits: `.mm.ss` (two digits
 * each, then no digit or dot), a dotted time.  `12.01.2004` is a date. */
static bool date_dotted_time(const uint8_t *p, size_t n, size_t i)
{
	for (int part = 0; part < 2; part++, i += 3)
		if (i + 2 >= n || p[i] != '.' || !date_is_digit(p[i + 1]) || !date_is_digit(p[i + 2]))
			return false;
	return i >= n || (!date_is_digit(p[i]) && p[i] != '.');
}

static int date_tokenize(const uint8_t *p, size_t n, struct date_tokens *t)
{
	size_t i = 0;
	bool space_before = true;     /* start of input counts as a separator */
	bool last_was_time = false;
	bool last_was_zone = false;   /* `GMT+0100` */
	while (i < n) {
		uint8_t c = p[i];
		if (c == '(') {
			i = header_skip_comment(p, n, i);
			space_before = true;
			continue;
		}
		bool zone_before = last_was_zone;
		if (!date_is_alpha(c))
			last_was_zone = false;
		if (date_is_digit(c)) {
			struct date_num a;
			if (!date_number(p, n, &i, &a))
				return -EINVAL;
			/* RFC 5322 4.3 obs-hour, obs-minute, obs-second: white
			 * space may surround each colon (`09 : 55 : 06`). */
			size_t c1 = date_colon(p, n, i);
			if (c1) {
				struct date_num b, s = { 0, 0 };
				i = c1;
				if (!date_number(p, n, &i, &b))
					return -EINVAL;
				size_t c2 = date_colon(p, n, i);
				if (c2) {
					i = c2;
					if (!date_number(p, n, &i, &s))
						return -EINVAL;
				}
				/* h:m:s with one-digit fields, as some clients
				 * write (`18:9:31`); the peers read them. */
				if (t->have_time || a.digits > 2 || b.digits > 2 || s.digits > 2)
					return -EINVAL;
				t->have_time = true;
				t->hour = a.v;
				t->min = b.v;
				t->sec = s.v;
				last_was_time = true;
				space_before = false;
				continue;
			}
			/* `10.52.37`: a time in a form we do not read.  Taken
			 * as numbers it would give the date at midnight, a
			 * time that is not the one written: reject. */
			if (!t->have_time && a.digits <= 2 && date_dotted_time(p, n, i))
				return -EINVAL;
			if (t->n_num < DATE_MAX_NUMS)
				t->num[t->n_num++] = a;
			last_was_time = false;
			space_before = false;
			continue;
		}
		if ((c == '+' || c == '-') && i + 1 < n && date_is_digit(p[i + 1]) &&
		    (space_before || last_was_time || zone_before) && t->have_time) {
			/* A numeric zone: +hhmm (RFC 5322), +hh or +hh:mm (wild). */
			struct date_num z, zm = { 0, 2 };
			i++;
			if (!date_number(p, n, &i, &z))
				return -EINVAL;
			int hh, mm;
			if (z.digits == 4) {
				hh = z.v / 100;
				mm = z.v % 100;
			} else if (z.digits == 2 || z.digits == 1) {
				if (i + 1 < n && p[i] == ':' && date_is_digit(p[i + 1])) {
					i++;
					if (!date_number(p, n, &i, &zm) || zm.digits != 2)
						return -EINVAL;
				}
				hh = z.v;
				mm = zm.v;
			} else {
				return -EINVAL;
			}
			if (hh > 23 || mm > 59 || t->have_zone)
				return -EINVAL;
			t->have_zone = true;
			t->zone_min = (c == '-' ? -1 : 1) * (hh * 60 + mm);
			last_was_time = false;
			space_before = false;
			continue;
		}
		if (date_is_alpha(c)) {
			size_t s = i;
			while (i < n && date_is_alpha(p[i]))
				i++;
			last_was_zone = date_word(t, p + s, i - s);
			last_was_time = false;
			space_before = false;
			continue;
		}
		/* Separators: white space, `,`, `-`, `/`, `.`, and junk. */
		space_before = c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',';
		if (!space_before)
			last_was_time = false;
		i++;
	}
	return 0;
}

/* Howard Hinnant's days_from_civil: days since 1970-01-01, proleptic
 * Gregorian, exact for every year we accept. */
static int64_t date_days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int date_days_in_month(int y, int m)
{
	static const int dim[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return dim[m - 1];
}

/* RFC 5322 4.3: a two-digit year below 50 is 20xx, otherwise 19xx; a
 * three-digit year is added to 1900. */
static int date_year(struct date_num y)
{
	if (y.digits <= 2)
		return y.v < 50 ? 2000 + y.v : 1900 + y.v;
	if (y.digits == 3)
		return 1900 + y.v;
	if (y.digits == 4)
		return y.v;
	return -1;
}

int date_parse(struct str in, int64_t *utc)
{
	struct date_tokens t = { 0 };
	int r = date_tokenize((const uint8_t *)in.p, in.n, &t);
	if (r < 0)
		return r;

	int year, month, day;
	if (t.month) {
		if (t.n_num < 2)
			return -EINVAL;
		/* Day before year (RFC 5322, asctime) unless the first number
		 * can only be a year (`2004 Jan 12`). */
		struct date_num a = t.num[0], b = t.num[1];
		if (a.digits > 2 || a.v > 31) {
			struct date_num x = a;
			a = b;
			b = x;
		}
		if (a.digits > 2)
			return -EINVAL;
		day = a.v;
		month = t.month;
		year = date_year(b);
	} else if (t.n_num >= 3 && t.num[0].digits == 4 && t.num[1].digits <= 2 &&
	           t.num[2].digits <= 2) {
		/* ISO 8601 calendar date. */
		year = t.num[0].v;
		month = t.num[1].v;
		day = t.num[2].v;
	} else {
		return -EINVAL;
	}
	if (year < 1000 || month < 1 || month > 12 || day < 1 ||
	    day > date_days_in_month(year, month))
		return -EINVAL;

	int hour = t.hour;
	/* AM/PM after a 24-hour time (`20:48:11 PM`, `00:15 AM`, as some
	 * clients write) says nothing more: the hour stands. */
	if (t.ampm && hour >= 1 && hour <= 12) {
		if (t.ampm == 'p' && hour < 12)
			hour += 12;
		else if (t.ampm == 'a' && hour == 12)
			hour = 0;
	}
	/* A date without a time is taken as midnight (seen in hand-written
	 * and list-software dates); seconds 60 is a leap second (RFC 5322
	 * 3.3) and simply rolls into the next minute. */
	if (hour > 23 || t.min > 59 || t.sec > 60)
		return -EINVAL;
	int zone = t.have_zone ? t.zone_min : t.have_named_zone ? t.named_zone_min : 0;

	int64_t days = date_days_from_civil(year, month, day);
	*utc = days * 86400 + hour * 3600 + t.min * 60 + t.sec - (int64_t)zone * 60;
	return 0;
}
