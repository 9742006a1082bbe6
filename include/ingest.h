/* SPDX-License-Identifier: MIT */
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
 * Errors are negative errno values.  The library never prints, never
 * writes to a descriptor it was not given and never changes signal
 * dispositions (a caller writing to a pipe should ignore SIGPIPE, as the
 * command does).  Objects are not thread-safe; distinct objects may be
 * used from distinct threads.  A process runs one ingest_run() at a time
 * (syscall counters are per process): a second one, concurrent, returns
 * -EBUSY.  ingest_parse() and ingest_parse_many() may run on any number of
 * threads at once, during a run too.  Nothing of a run outlives it, so a
 * long-lived process may run forever without growing.
 *
 * ABI: soname libingest.so.1, every symbol in version node INGEST_1.0; a
 * later 1.x adds functions, never changes one.  man libingest(3).
 * Output schema: README.md, "Records". */
#ifndef INGEST_H
#define INGEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INGEST_API __attribute__((visibility("default")))

/* The version of this header.  ingest_check_version() tells whether the
 * library loaded at run time is at least that. */
#define INGEST_VERSION_MAJOR 1
#define INGEST_VERSION_MINOR 0
#define INGEST_VERSION_MICRO 0
/* True when this header is version a.b.c or later (same major). */
#define INGEST_CHECK_VERSION(a, b, c)                                     \
	(INGEST_VERSION_MAJOR == (a) &&                                       \
	 (INGEST_VERSION_MINOR > (b) ||                                       \
	  (INGEST_VERSION_MINOR == (b) && INGEST_VERSION_MICRO >= (c))))

struct ingest_options;
struct ingest_report;

/* The library's version string ("1.0.0"). */
INGEST_API const char *ingest_version(void);
/* 1 when the library loaded at run time has major version `major` and is
 * at least major.minor.micro, else 0.  Call it as
 * ingest_check_version(INGEST_VERSION_MAJOR, INGEST_VERSION_MINOR,
 * INGEST_VERSION_MICRO) to refuse an older library than the header. */
INGEST_API int ingest_check_version(int major, int minor, int micro);

/* A new option set with every default; NULL when out of memory. */
INGEST_API struct ingest_options *ingest_options_new(void);
/* Frees o; accepts NULL. */
INGEST_API void ingest_options_free(struct ingest_options *o);

/* Sets an option by its command-line long name without the dashes.  Every
 * name there is (README.md, "Usage", says what each does):
 *   backend       "auto", "uring", "sync"
 *   batch-bytes   SIZE            max-inflight  SIZE
 *   max-size      SIZE            max-text      SIZE
 *   threads       N (1..256)      format        "jsonl", "es-bulk", "tsv"
 *   fields        "a,b,..."       es-index      NAME
 *   no-text       flag            headers       flag
 *   parse         flag ("0" is --io-only)
 *   output        FILE ("-": standard output)
 *   files-from    FILE ("-": standard input)      null  flag
 *   state         FILE            shard         "K/N"
 *   exclude       GLOB (repeatable: each call adds one; the getter lists
 *                 them one a line)
 *   split-bytes   SIZE (with output PREFIX: files PREFIX.000, .001, ...;
 *                 refused with an output fd or a sink)
 *   es-errors     flag (error records in es-bulk too)
 *   wait-state    flag (wait for another run's lock on the state)
 *   state-reset   flag (ignore what the state file holds)
 *   index         FILE (records into that SQLite database, not to output;
 *                 refused with an output, an output fd or a sink; one
 *                 run writes it at a time, and while it does, the host
 *                 must hold no SQLite connection of its own to FILE:
 *                 record locks are the process's, and the run's closing
 *                 of its descriptors on FILE drops them)
 *   stats         "0", "human", "json"
 * SIZE takes K/M/G suffixes; a flag takes "1"/"0" (also true/false,
 * yes/no; NULL is "1").  An option with no value of its own by default
 * (output, files-from, state, index, es-index, shard, split-bytes, threads)
 * is unset again by NULL, and exclude's patterns are all dropped by it
 * ("" stays a bad value, as on the command line).  Returns 0; -EINVAL for an unknown name or a bad
 * value, and then ingest_options_error() names the option; -ENOMEM.  The
 * value is copied. */
INGEST_API int ingest_options_set(struct ingest_options *o, const char *name, const char *value);

/* The value of an option, in the form ingest_options_set() takes (sizes in
 * bytes, flags "0"/"1"); an unset one reads "" (a FILE, es-index, shard,
 * exclude) or "0" (split-bytes, threads: the machine's), which are not
 * values to set: ingest_options_set() unsets with NULL.  NUL-terminated into buf like
 * snprintf: returns the length it needed (truncated if size was too
 * small), or -EINVAL for an unknown name (ingest_options_error() says). */
INGEST_API int ingest_options_get(const struct ingest_options *o, const char *name, char *buf,
                                  size_t size);

/* Why the last ingest_options_set() or ingest_options_get() on o failed
 * ("unknown option 'fromat'", "invalid value for 'threads': '0'"), or
 * NULL.  The string is o's, valid until its next call. */
INGEST_API const char *ingest_options_error(const struct ingest_options *o);

/* Receives the records of a run instead of a descriptor: `len` bytes of
 * `count` whole records (count 0 for TSV's header row; an error record
 * es-bulk leaves out without es-errors counts, with no bytes, and a batch
 * of only such records is a call with len 0), one call per batch,
 * in input order, on the thread that writes the records (the library's
 * parse thread, or the caller's when the input fits one batch: one thread
 * a run, so calls never overlap).  The bytes are the library's until the call returns.  Return 0
 * to go on; -EPIPE to stop as a closed output does (a reader that has seen
 * enough: ingest_run() returns 0, ingest_report_output_closed() is 1); or
 * another negative errno to fail the run: ingest_run() then returns that
 * error and the report says "the sink failed". */
typedef int ingest_sink_fn(void *ctx, const char *records, size_t len, size_t count);

/* Sends records to fn (NULL: back to the output option or standard
 * output).  A sink takes precedence over "output" and the output fd.
 * Returns 0. */
INGEST_API int ingest_options_set_sink(struct ingest_options *o, ingest_sink_fn *fn, void *ctx);

/* Writes records to fd, which the caller opened and keeps (the library
 * never closes it); -1 goes back to the output option or standard output.
 * Takes precedence over "output".  0, or -EINVAL for fd < -1. */
INGEST_API int ingest_options_set_output_fd(struct ingest_options *o, int fd);

/* Told how a run goes, at most ten times a second and once more at the end
 * (done 1), on the thread that writes the records (as for the sink): inputs written so far, their
 * bytes, how many were error records, the inputs expected (0 when not
 * known before the end: only a --files-from list alone is counted ahead,
 * a line each, so a listed directory or mbox, which gives many, can take
 * inputs past it) and the nanoseconds since the run began.  Once the
 * output closes or fails, the inputs and bytes stay at those before the
 * batches it stopped in.  The library itself draws
 * nothing; the command draws its progress line from this. */
typedef void ingest_progress_fn(void *ctx, uint64_t inputs, uint64_t bytes, uint64_t errors,
                                uint64_t total, uint64_t elapsed_ns, int done);

/* Calls fn as the run goes (NULL: no progress).  Returns 0. */
INGEST_API int ingest_options_set_progress(struct ingest_options *o, ingest_progress_fn *fn,
                                           void *ctx);

/* Adds a PATH to ingest: a Maildir, a tree of messages or a file.  The
 * string is copied.  0 or -ENOMEM. */
INGEST_API int ingest_options_add_path(struct ingest_options *o, const char *path);

/* Runs the pipeline once.  Returns 0 when every input became a record
 * (error records included), -errno when the run itself failed (the
 * report's message says why): -EINVAL when it was refused before any input
 * was read (the options contradicting each other, such as split-bytes or
 * index with an output fd or a sink; the --state file made by a run with other roots,
 * shard or output options; an index made with other no-text, max-text or
 * headers, or one that is a directory or no regular file; then
 * ingest_report_usage_error() is 1).  *report receives a report the caller
 * frees, or NULL when even that could not be allocated, or with -EBUSY, when
 * another ingest_run() is going on in the process.  Output that could not be
 * written because the reader of a pipe went away is not a failure: the run
 * stops early and ingest_report_output_closed() says so. */
INGEST_API int ingest_run(const struct ingest_options *o, struct ingest_report **report);

/* Every ingest_report_ function takes a NULL report (ingest_run's with
 * -EBUSY) as one that has nothing to say: NULL, 0, an empty string. */
/* Why the run failed, or NULL. */
INGEST_API const char *ingest_report_error(const struct ingest_report *r);
/* 1 when the output's reader went away (EPIPE) and the run stopped early. */
INGEST_API int ingest_report_output_closed(const struct ingest_report *r);
/* 1 when the run failed before reading any input because of what it was
 * asked to do, which the caller must change: options that contradict each
 * other; a --state FILE in use by another run, corrupt, a symlink, made by
 * another run, or in a directory that cannot be written; an index made
 * with other settings, no regular file, or one (or its directory) the user
 * cannot write (the command exits 2 then, as for bad usage). */
INGEST_API int ingest_report_usage_error(const struct ingest_report *r);
/* Error records the run wrote (inputs that are no message: unreadable,
 * missing, not mail...).  The command's --strict exits 1 when it is not 0. */
INGEST_API uint64_t ingest_report_error_records(const struct ingest_report *r);
/* 1 when the run was interrupted by ingest_interrupt(). */
INGEST_API int ingest_report_interrupted(const struct ingest_report *r);
/* The run's statistics, human-readable (json 0) or as one JSON object
 * (json 1), in a NUL-terminated heap string the caller frees with free().
 * 0 or -ENOMEM. */
INGEST_API int ingest_report_format(const struct ingest_report *r, int json, char **out, size_t *len);
/* The first error records of the run, one line each in the command's
 * shape ("ingest: cannot read 'cur/1:2,S': Permission denied"), and a
 * count of the rest; an empty string when there were none.  Heap string, free().
 * 0 or -ENOMEM. */
INGEST_API int ingest_report_format_errors(const struct ingest_report *r, char **out, size_t *len);
/* Frees r; accepts NULL. */
INGEST_API void ingest_report_free(struct ingest_report *r);

/* What one buffer became. */
enum ingest_kind {
	INGEST_KIND_MESSAGE = 0,    /* a parsed message */
	INGEST_KIND_NOT_MAIL = 1,   /* not mail: an error record, reason "not-mail" */
	INGEST_KIND_ERROR = 2       /* an error record: a limit of the parser, no memory */
};

/* The result of parsing one buffer. */
struct ingest_result {
	char *record;        /* the record in the options' format (JSONL: one line
	                      * with its newline), NUL-terminated, malloc'd:
	                      * ingest_result_release() frees it.  NULL only when
	                      * there was no memory for it (kind ERROR, err ENOMEM);
	                      * "" (len 0) for an error record (kind NOT_MAIL or
	                      * ERROR) in es-bulk without es-errors, which leaves
	                      * such records out as a run does */
	size_t len;          /* its bytes, the NUL aside */
	int kind;            /* enum ingest_kind */
	int err;             /* kind ERROR: a positive errno; else 0 */
	uint64_t warnings;   /* bit i: the warning named ingest_warning_name(i) */
};

/* Parses len bytes at buf as one message (as a .eml file: never split as
 * an mbox) with o's options (NULL: the defaults): format, fields, no-text,
 * max-text, headers, parse.  The record's path is "" and it has no root,
 * size or mtime: there is no file, and no identity (its id is 0; in
 * es-bulk its action names no _id, so that the engine makes one, rather
 * than every such document replacing the last).  Malformed input is an error record,
 * never a failure.  Returns 0, or -ENOMEM when even the result could not
 * be made.  Thread-safe: any number of threads may parse at once. */
INGEST_API int ingest_parse(const void *buf, size_t len, const struct ingest_options *o,
                            struct ingest_result *result);

/* Parses n buffers, results[i] for bufs[i] (lens[i] bytes), exactly as
 * ingest_parse() would, on the process's worker pool: one worker per 64
 * KiB of the batch, at most one per buffer and at most o's "threads"; the
 * calling thread is a worker; the pool's threads start with the first
 * batch that needs them and live as long as the process.  A slot that
 * fails is an error record; the batch goes on.  Returns 0 or -ENOMEM (no
 * result was made).  Thread-safe; a batch that finds the pool busy with
 * another thread's runs on its calling thread alone. */
INGEST_API int ingest_parse_many(const void *const *bufs, const size_t *lens, size_t n,
                                 const struct ingest_options *o, struct ingest_result *results);

/* Frees r->record; accepts NULL and released results. */
INGEST_API void ingest_result_release(struct ingest_result *r);

/* The stable name of warning bit `bit` ("bad-date"), as records list it,
 * or NULL past the last. */
INGEST_API const char *ingest_warning_name(unsigned bit);

/* ingest_search's flags: a line is a JSON object unless INGEST_SEARCH_TSV;
 * hits come best first (bm25) unless INGEST_SEARCH_NEWEST or
 * INGEST_SEARCH_OLDEST sorts them by date (not both), and by date, newest
 * first, when the query has no words to rank by.  INGEST_SEARCH_COUNT
 * writes one line, the number of hits (limit, format and order aside),
 * and returns it. */
#define INGEST_SEARCH_TSV 1
#define INGEST_SEARCH_NEWEST 2
#define INGEST_SEARCH_OLDEST 4
#define INGEST_SEARCH_COUNT 8

/* Searches a database written with the "index" option (README, "The
 * index"): QUERY is FTS5 syntax plus from:, to:, subject:, date:A..B, tag:,
 * folder:, thread:, id: and has:attachment.  Writes at most `limit` hits in
 * the order `flags` asks, one a line: a JSON object, or tab-separated date,
 * from, subject, thread, root, path, snippet (INGEST_SEARCH_TSV), to fd.
 * Returns the number of hits (INGEST_SEARCH_COUNT: of all of them, INT_MAX
 * for more), or -errno with *error a heap string (free()) saying why when
 * there is one: a database that cannot be opened (its errno: -ENOENT,
 * -EACCES...); one that is not an index, a query FTS5 cannot parse, a
 * query of no words ("*" is every message), a NULL query or path, flags
 * with an unknown bit or both orders (-EINVAL), escaped for a terminal
 * (error may be NULL: then only the errno).  Flags 0 and 1 are the JSON
 * and TSV of the first releases. */
INGEST_API int ingest_search(const char *db_path, const char *query, int flags, unsigned long limit,
                             int fd, char **error);

/* Asks a running ingest_run() to stop reading, write what it has parsed
 * and return.  Async-signal-safe: call it from a SIGINT handler.  A run
 * forgets, as it begins, an interrupt that came before it (one meant for
 * an earlier run): to stop a run that another thread is only starting,
 * call it again until that ingest_run() has returned.  A run still
 * waiting to begin (for the state's lock with state_wait, for a
 * files_from pipe or FIFO, or standard input, that nobody writes to)
 * sees it within 20 ms and returns having read nothing. */
INGEST_API void ingest_interrupt(void);

#ifdef __cplusplus
}
#endif

#endif
