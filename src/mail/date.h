/* SPDX-License-Identifier: MIT */
/* RFC 5322 section 3.3 dates, and the obsolete forms of 4.3 seen in the wild:
 * two- and three-digit years, named zones (UT, GMT, EST... and military
 * letters), missing seconds, missing day name, extra or missing spaces,
 * dashes (`12-Jan-2004`), asctime order (`Mon Jan 12 10:00:00 2004`).
 * Never falls back to the current time. */
#ifndef INGEST_MAIL_DATE_H
#define INGEST_MAIL_DATE_H

#include "mail/message.h"

/* 0 and *utc (seconds since the epoch) on success; -EINVAL when unparseable. */
int date_parse(struct str in, int64_t *utc);
/* The days of month m (1-12) of year y in the proleptic Gregorian
 * calendar. */
int date_days_in_month(int y, int m);

#endif
