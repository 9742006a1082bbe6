/* libingest: turn directories of mail into structured records.
 *
 * The library runs the whole pipeline of the `ingest` command (walk →
 * io_uring reader → batches → worker pool → parser → emitter) and writes
 * records to a file descriptor.  Usage:
 *
 *     struct ingest_options *o = ingest_options_new();
 *     ingest_options_set(o, "format", "jsonl");
 *     ingest_options_add_path(o, "Maildir");
 *     struct ingest_report *rep = NULL;
 *     int r = ingest_run(o, &rep);
 *     ...ingest_report_format(rep, 1, &text, &len)...
 *     ingest_report_free(rep);
 *     ingest_options_free(o);
 *
 * Errors are negative errno values.  The library never prints and never
 * changes signal dispositions (a caller writing to a pipe should ignore
 * SIGPIPE, as the command does).  Objects are not thread-safe; distinct
 * objects may be used from distinct threads, but a process runs one
 * ingest_run() at a time (syscall counters are per process).
 * Output schema: README.md, "Records". */
#ifndef INGEST_H
#define INGEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INGEST_API __attribute__((visibility("default")))

struct ingest_options;
struct ingest_report;

/* The version string ("0.1.0"). */
INGEST_API const char *ingest_version(void);

/* A new option set with every default; NULL when out of memory. */
INGEST_API struct ingest_options *ingest_options_new(void);
/* Frees o; accepts NULL. */
INGEST_API void ingest_options_free(struct ingest_options *o);

/* Sets an option by its command-line long name without the dashes
 * ("backend", "batch-bytes", "max-inflight", "max-size", "threads", "output",
 * "format", "fields", "max-text", "no-text", "headers", "files-from",
 * "null", "stats", "shard" (K/N), "progress"...).  Sizes take K/M/G suffixes.  Flags take "1"/"0".
 * Returns 0, -ENOENT for an unknown name, -EINVAL for a bad value.  The
 * value is copied. */
INGEST_API int ingest_options_set(struct ingest_options *o, const char *name, const char *value);

/* Adds a PATH to ingest: a Maildir, a tree of messages or a file.  The
 * string is copied.  0 or -ENOMEM. */
INGEST_API int ingest_options_add_path(struct ingest_options *o, const char *path);

/* Runs the pipeline once.  Returns 0 when every input became a record
 * (error records included), -errno when the run itself failed (the
 * report's message says why).  *report receives a report the caller frees,
 * or NULL when even that could not be allocated.  Output that could not be
 * written because the reader of a pipe went away is not a failure: the run
 * stops early and ingest_report_output_closed() says so. */
INGEST_API int ingest_run(const struct ingest_options *o, struct ingest_report **report);

/* Why the run failed, or NULL. */
INGEST_API const char *ingest_report_error(const struct ingest_report *r);
/* 1 when the output's reader went away (EPIPE) and the run stopped early. */
INGEST_API int ingest_report_output_closed(const struct ingest_report *r);
/* 1 when the run was interrupted by ingest_interrupt(). */
INGEST_API int ingest_report_interrupted(const struct ingest_report *r);
/* The run's statistics, human-readable (json 0) or as one JSON object
 * (json 1), in a NUL-terminated heap string the caller frees with free().
 * 0 or -ENOMEM. */
INGEST_API int ingest_report_format(const struct ingest_report *r, int json, char **out, size_t *len);
/* The first error records of the run, one line each in the command's
 * shape ("cannot read 'cur/1:2,S': Permission denied"), and a count of the
 * rest; an empty string when there were none.  Heap string, free().
 * 0 or -ENOMEM. */
INGEST_API int ingest_report_format_errors(const struct ingest_report *r, char **out, size_t *len);
/* Frees r; accepts NULL. */
INGEST_API void ingest_report_free(struct ingest_report *r);

/* Searches a database written with the "index" option (README, "The
 * index"): QUERY is FTS5 syntax plus from:, to:, subject:, date:A..B, tag:,
 * folder:, thread:, id: and has:attachment.  Writes at most `limit` hits,
 * best first (bm25; by date when the query has no words), one a line: a
 * JSON object (tsv 0) or tab-separated date, from, subject, thread, root,
 * path, snippet (tsv 1), to fd.  Returns the number of hits, or -errno with
 * *error a heap string (free()) saying why when there is one: a database
 * that is not an index, a query FTS5 cannot parse. */
INGEST_API int ingest_search(const char *db_path, const char *query, int tsv, unsigned long limit,
                             int fd, char **error);

/* Asks a running ingest_run() to stop reading, write what it has parsed
 * and return.  Async-signal-safe: call it from a SIGINT handler. */
INGEST_API void ingest_interrupt(void);

#ifdef __cplusplus
}
#endif

#endif
