/* SPDX-License-Identifier: MIT */
/* The run's report: what --stats prints, and why a run failed.  Filled by
 * ingest.c at the end of the counted window; formatted on request. */
#ifndef INGEST_REPORT_H
#define INGEST_REPORT_H

#include "ingest.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

struct batch;
struct reader;
struct walk;
struct pool;
struct budget;

struct ingest_report *report_new(void);
/* Records why the run failed: the formatted text, then strerror(-err)
 * unless err is 0. */
void report_set_error(struct ingest_report *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Records why the run failed, the text alone (no strerror). */
void report_set_message(struct ingest_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* report_set_error for a caller that takes the format itself. */
void report_set_errorv(struct ingest_report *r, int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* The failure is the caller's to mend (ingest_report_usage_error). */
void report_set_refused(struct ingest_report *r);
void report_start(struct ingest_report *r);
/* Counts a batch's records by kind (called by the writer, in order). */
void report_count_batch(struct ingest_report *r, const struct batch *b);
void report_finish(struct ingest_report *r, const struct reader *rd, const struct walk *w,
                   const struct pool *p, const struct budget *bu, uint64_t parse_wait_ns,
                   uint64_t write_wait_ns, uint64_t read_wait_ns);
/* Records written so far and their bytes and errors (the writer's view). */
uint64_t report_records(const struct ingest_report *r, uint64_t *bytes, uint64_t *errors);
uint64_t report_started_ns(const struct ingest_report *r);
/* Records whose bytes all reached the output (the writer's count). */
void report_set_written(struct ingest_report *r, uint64_t records);
void report_set_flags(struct ingest_report *r, bool output_closed, bool interrupted);
/* --index: what the database sink did (its SQLite calls are not ingest's
 * per-file syscalls, so they are reported here, apart): messages written,
 * and those read again and kept as stored (unchanged). */
#define REPORT_INDEX_COUNTS 6
void report_set_index(struct ingest_report *r, uint64_t transactions, uint64_t messages,
                      uint64_t unchanged, uint64_t errors, uint64_t deleted, uint64_t renamed,
                      uint64_t ns);
/* --index: the database's own file operations by name (index/db_io.h),
 * count of them at most REPORT_INDEX_IO. */
#define REPORT_INDEX_IO 16
void report_set_index_io(struct ingest_report *r, const char *const names[], const uint64_t n[],
                         unsigned count);

#endif
