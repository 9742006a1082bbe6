/* SPDX-License-Identifier: MIT */
/* ingest_search() (include/ingest.h) is the search itself; this is what its
 * callers share: the command's --sort and the Python module's sort=. */
#ifndef INGEST_INDEX_SEARCH_H
#define INGEST_INDEX_SEARCH_H

/* The ingest_search() flag of a search order by its name, notmuch's:
 * "relevance" 0, "newest-first" INGEST_SEARCH_NEWEST, "oldest-first"
 * INGEST_SEARCH_OLDEST; -1 for another name. */
int search_order_flag(const char *name);

#endif
