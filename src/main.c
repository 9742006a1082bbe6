/* SPDX-License-Identifier: MIT */
/* The ingest command: argv → options → ingest_run() → exit status.  The only
 * place that prints errors, in one shape: "ingest: <what>: <why>". */
#include "ingest.h"
#include "options.h"
#include "index/search.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
"Usage: ingest [OPTIONS] PATH...    or: ingest search FILE QUERY [--limit=N]\n"
"Turn Maildirs, .eml trees and mbox archives into records, one per input.\n"
"Input\n"
"  PATH                   a Maildir, a tree of messages, a message, an mbox\n"
"  --files-from=FILE      also read paths from FILE ('-' for stdin), one a line;\n"
"  -0, --null             ...NUL-separated\n"
"  --max-size=SIZE        files larger are not read (error record; 256M)\n"
"  --exclude=GLOB         skip names or paths matching GLOB (repeatable)\n"
"  --state=FILE           incremental: new and changed, plus deleted/renamed\n"
"  --wait-state, --state-reset  wait for another run's FILE; start FILE afresh\n"
"  --index=FILE           into an SQLite database, incremental (no output)\n"
"Output\n"
"  -o, --output=FILE      write records to FILE (default: stdout); with\n"
"  --split-bytes=SIZE     files FILE.000, .001... of at most SIZE, whole records\n"
"  --format=FMT           jsonl (default), es-bulk, tsv\n"
"  --es-index=NAME        es-bulk's _index; --es-errors: error records too\n"
"  --es-mapping           print the index template matching es-bulk, and exit\n"
"  --fields=A,B,...       only these fields (every format; tsv column order)\n"
"  --max-text=SIZE        cut the text at SIZE bytes; --no-text: none (1M)\n"
"  --headers              add every header field;  --io-only  do not parse\n"
"Performance\n"
"  --backend=B            auto (default), uring, sync\n"
"  --threads=N            parse with at most N threads (default: the CPUs)\n"
"  --batch-bytes=SIZE     bytes per batch (6M)\n"
"  --max-inflight=SIZE    bytes read but not yet written, at most (64M)\n"
"  --stats[=json]         statistics on stderr at the end\n"
"  --shard=K/N            only the inputs of shard K (1..N) of N, by id hash\n"
"  --progress, --no-progress  a progress line on stderr (default: if a tty)\n"
"  -q, --quiet            no progress line, no error summary on stderr\n"
"  -h, --help, -V, --version  this help, the version\n"
"  --strict               exit 1 when any input became an error record\n"
"SIZE takes K, M or G.  Exit: 0 every input got a record (errors included), 1\n"
"failed, 2 bad usage, 128+N stopped by signal N, 141 the output was closed.\n"
"\n"
"Examples\n"
"  ingest ~/Maildir > mail.jsonl\n"
"  ingest --stats --fields=path,from,subject,date ~/Maildir | head\n"
"  find /srv/archive -name '*.eml' -print0 | ingest --files-from=- -0\n"
"  ingest --index=mail.db ~/Maildir && ingest search mail.db from:ann\n"
"  ingest --format=es-bulk --es-index=mail ~/Maildir > bulk.ndjson   # for _bulk\n"
"";

/* --es-mapping: an index template (PUT _index_template/mail) for what
 * es-bulk writes (README, "Records"): dates as dates, ids, addresses and
 * codes as keywords, subject and text as text, headers kept in _source
 * but not indexed (their names are the senders' to choose), unknown
 * fields not indexed (dynamic false) rather than refused. */
static const char es_mapping_text[] =
"{\"index_patterns\":[\"mail*\"],\"template\":{\"mappings\":{\"dynamic\":false,\"properties\":{\n"
" \"path\":{\"type\":\"keyword\"},\n"
" \"path_b64\":{\"type\":\"keyword\",\"index\":false},\n"
" \"root\":{\"type\":\"keyword\"},\n"
" \"root_b64\":{\"type\":\"keyword\",\"index\":false},\n"
" \"size\":{\"type\":\"long\"},\n"
" \"mtime\":{\"type\":\"date\"},\n"
" \"folder\":{\"type\":\"keyword\"},\n"
" \"subdir\":{\"type\":\"keyword\"},\n"
" \"flags\":{\"type\":\"keyword\"},\n"
" \"tags\":{\"type\":\"keyword\"},\n"
" \"offset\":{\"type\":\"long\"},\n"
" \"length\":{\"type\":\"long\"},\n"
" \"notes\":{\"type\":\"keyword\"},\n"
" \"error\":{\"properties\":{\"reason\":{\"type\":\"keyword\"},\"errno\":{\"type\":\"keyword\"},\"message\":{\"type\":\"text\"}}},\n"
" \"message_id\":{\"type\":\"keyword\"},\n"
" \"in_reply_to\":{\"type\":\"keyword\"},\n"
" \"references\":{\"type\":\"keyword\"},\n"
" \"date\":{\"type\":\"date\"},\n"
" \"date_raw\":{\"type\":\"keyword\"},\n"
" \"from\":{\"properties\":{\"name\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":256}}},\"address\":{\"type\":\"keyword\"},\"group\":{\"type\":\"keyword\"},\"members\":{\"properties\":{\"name\":{\"type\":\"text\"},\"address\":{\"type\":\"keyword\"}}}}},\n"
" \"sender\":{\"properties\":{\"name\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":256}}},\"address\":{\"type\":\"keyword\"},\"group\":{\"type\":\"keyword\"},\"members\":{\"properties\":{\"name\":{\"type\":\"text\"},\"address\":{\"type\":\"keyword\"}}}}},\n"
" \"reply_to\":{\"properties\":{\"name\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":256}}},\"address\":{\"type\":\"keyword\"},\"group\":{\"type\":\"keyword\"},\"members\":{\"properties\":{\"name\":{\"type\":\"text\"},\"address\":{\"type\":\"keyword\"}}}}},\n"
" \"to\":{\"properties\":{\"name\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":256}}},\"address\":{\"type\":\"keyword\"},\"group\":{\"type\":\"keyword\"},\"members\":{\"properties\":{\"name\":{\"type\":\"text\"},\"address\":{\"type\":\"keyword\"}}}}},\n"
" \"cc\":{\"properties\":{\"name\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":256}}},\"address\":{\"type\":\"keyword\"},\"group\":{\"type\":\"keyword\"},\"members\":{\"properties\":{\"name\":{\"type\":\"text\"},\"address\":{\"type\":\"keyword\"}}}}},\n"
" \"bcc\":{\"properties\":{\"name\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":256}}},\"address\":{\"type\":\"keyword\"},\"group\":{\"type\":\"keyword\"},\"members\":{\"properties\":{\"name\":{\"type\":\"text\"},\"address\":{\"type\":\"keyword\"}}}}},\n"
" \"subject\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":1024}}},\n"
" \"list_id\":{\"type\":\"keyword\"},\n"
" \"content_type\":{\"type\":\"keyword\"},\n"
" \"text\":{\"type\":\"text\"},\n"
" \"text_truncated\":{\"type\":\"boolean\"},\n"
" \"attachments\":{\"properties\":{\"filename\":{\"type\":\"keyword\"},\"content_type\":{\"type\":\"keyword\"},\"detected_type\":{\"type\":\"keyword\"},\"disposition\":{\"type\":\"keyword\"},\"content_id\":{\"type\":\"keyword\"},\"size\":{\"type\":\"long\"}}},\n"
" \"parts\":{\"type\":\"integer\"},\n"
" \"warnings\":{\"type\":\"keyword\"},\n"
" \"detected_type\":{\"type\":\"keyword\"},\n"
" \"headers\":{\"type\":\"object\",\"enabled\":false},\n"
" \"id\":{\"type\":\"keyword\"},\n"
" \"thread_id\":{\"type\":\"keyword\"}\n"
"}}}}\n";

/* The first stopping signal, for the exit status (128 + its number). */
static volatile sig_atomic_t stop_signal;

/* SIGINT, SIGTERM and SIGHUP all stop the run the same way: no more input
 * is read, what was parsed is written as whole records, the state is left
 * as it was.  A default disposition would kill the process in the middle
 * of a writev and leave half a record in a pipe (batch schedulers, systemd
 * and timeout(1) stop jobs with SIGTERM; a closed terminal sends SIGHUP). */
static void on_stop_signal(int sig)
{
	if (!stop_signal)
		stop_signal = sig;
	ingest_interrupt();
}

/* The progress line on stderr, from the library's progress callback (the
 * library draws nothing itself): redrawn in place, cleared at the end. */
static void draw_progress(void *ctx, uint64_t files, uint64_t bytes, uint64_t errors,
                          uint64_t total, uint64_t elapsed_ns, int done)
{
	(void)ctx;
	double secs = (double)elapsed_ns / 1e9;
	char line[160];
	int n = snprintf(line, sizeof(line), "\r\033[K%llu files, %.1f MB, %.0f files/s, %llu errors",
	                 (unsigned long long)files, (double)bytes / 1e6,
	                 secs > 0 ? (double)files / secs : 0.0, (unsigned long long)errors);
	if (total && files < total && files && n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", ETA %.0f s",
		              secs / (double)files * (double)(total - files));
	if (done)
		n = snprintf(line, sizeof(line), "\r\033[K");
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		return;   /* a progress line that cannot be drawn is not worth a failure */
}

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "ingest: %s%s%s (see ingest --help)\n", what, arg ? arg : "", arg ? "'" : "");
	return 2;
}

static const char search_usage[] =
"Usage: ingest search FILE QUERY... [--format=jsonl|tsv] [--limit=N]\n"
"                    [--sort=relevance|newest-first|oldest-first] [--count]\n"
"                    [--] [WORD...]\n"
"Searches an index written by ingest --index=FILE (README, \"Searching\"): FTS5\n"
"syntax plus from: to: subject: (and their ( ) groups), date:A..B, tag:, folder:,\n"
"thread:, id:, has:attachment, each negated by a leading -.  Hits come best\n"
"first (bm25) or by date as --sort says; by date, newest first, when the\n"
"query has no words to rank by.  --count prints the number of hits alone.\n"
"After --, every argument is a word.  Exit 0 with the hits (none is no\n"
"error), 1 when the query or the database is refused, 2 for bad usage.\n";

/* --limit=N: digits only (strtoul takes " -1" as ULONG_MAX), from 1 to
 * SQLite's largest integer, the LIMIT of the search's SQL. */
static bool search_limit(const char *v, unsigned long *limit)
{
	if (!*v || v[strspn(v, "0123456789")])
		return false;
	errno = 0;
	unsigned long long n = strtoull(v, NULL, 10);
	if (errno || n == 0 || n > INT64_MAX || n > ULONG_MAX)
		return false;
	*limit = (unsigned long)n;
	return true;
}

/* ingest search FILE QUERY... [--format=jsonl|tsv] [--limit=N]
 * [--sort=relevance|newest-first|oldest-first] (notmuch's names) [--count]: the words
 * after FILE are the query (as notmuch takes them), options anywhere until
 * "--", after which a word may start with "--". */
static int search_main(int argc, char **argv)
{
	const char *db = NULL;
	int tsv = 0, order = 0, count = 0;
	unsigned long limit = 20;
	size_t qlen = 1, used = 0;
	for (int i = 2; i < argc; i++)
		qlen += strlen(argv[i]) + 1;
	char *query = calloc(1, qlen);
	if (!query) {
		fputs("ingest: out of memory\n", stderr);
		return 1;
	}
	bool words = false;   /* after "--" */
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		if (!words && !strcmp(a, "--")) {
			words = true;
			continue;
		}
		if (words || strncmp(a, "--", 2)) {
			if (!db) {
				db = a;
			} else {
				/* appended at its end: strcat's scan from the start made
				 * a query of many words quadratic */
				size_t n = strlen(a);
				if (used)
					query[used++] = ' ';
				memcpy(query + used, a, n + 1);
				used += n;
			}
			continue;
		}
		if (!strcmp(a, "--help")) {
			free(query);
			fputs(search_usage, stdout);
			return 0;
		}
		if (!strcmp(a, "--count")) {
			count = INGEST_SEARCH_COUNT;
			continue;
		}
		if (!strcmp(a, "--limit") || !strcmp(a, "--format") || !strcmp(a, "--sort")) {
			if (i + 1 == argc) {
				free(query);
				return usage_error("option needs a value: '", a);
			}
			v = argv[++i];
		} else if (!strncmp(a, "--limit=", 8) || !strncmp(a, "--format=", 9) ||
		           !strncmp(a, "--sort=", 7)) {
			v = strchr(a, '=') + 1;
		} else {
			free(query);
			return usage_error("unknown option '", a);
		}
		if (!strncmp(a, "--limit", 7)) {
			if (!search_limit(v, &limit)) {
				free(query);
				return usage_error("invalid value in '--limit=", v);
			}
		} else if (!strncmp(a, "--sort", 6)) {
			if ((order = search_order_flag(v)) < 0) {
				free(query);
				return usage_error("search orders are relevance, newest-first and oldest-first, not '", v);
			}
		} else {
			if (strcmp(v, "jsonl") && strcmp(v, "tsv")) {
				free(query);
				return usage_error("search formats are jsonl and tsv, not '", v);
			}
			tsv = !strcmp(v, "tsv");
		}
	}
	if (!db || !query[strspn(query, " \t\n\v\f\r")]) {
		free(query);
		fputs(search_usage, stderr);
		return 2;
	}
	char *why = NULL;
	int r = ingest_search(db, query, (tsv ? INGEST_SEARCH_TSV : 0) | order | count, limit, STDOUT_FILENO,
	                      &why);
	if (r < 0)
		/* not the query again: it may be long, or hold a terminal's
		 * escapes; the reason names the word at fault */
		fprintf(stderr, "ingest: search in '%s': %s\n", db, why ? why : strerror(-r));
	free(why);
	free(query);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	/* This process is the program, not a host of libingest: SQLite's
	 * allocation statistics go, and with them the one global mutex every
	 * allocation of every connection takes, which the two connections of
	 * a first index (docs/ARCHITECTURE.md, "The index") took turns on.
	 * The library itself leaves SQLite's configuration to its host. */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	if (argc > 1 && !strcmp(argv[1], "search"))
		return search_main(argc, argv);
	/* OPT_SET: the library option of the same name (ingest_options_set),
	 * with "1" for a flag; only the options that differ get their own case. */
	enum { OPT_SET = 256, OPT_IOONLY, OPT_PROGRESS, OPT_NOPROGRESS, OPT_STRICT, OPT_ESMAPPING };
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, OPT_SET },
		{ "batch-bytes", required_argument, NULL, OPT_SET },
		{ "max-inflight", required_argument, NULL, OPT_SET },
		{ "max-size", required_argument, NULL, OPT_SET },
		{ "stats", optional_argument, NULL, OPT_SET },
		{ "files-from", required_argument, NULL, OPT_SET },
		{ "null", no_argument, NULL, '0' },
		{ "output", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, OPT_SET },
		{ "format", required_argument, NULL, OPT_SET },
		{ "fields", required_argument, NULL, OPT_SET },
		{ "no-text", no_argument, NULL, OPT_SET },
		{ "max-text", required_argument, NULL, OPT_SET },
		{ "headers", no_argument, NULL, OPT_SET },
		{ "io-only", no_argument, NULL, OPT_IOONLY },
		{ "es-index", required_argument, NULL, OPT_SET },
		{ "es-errors", no_argument, NULL, OPT_SET },
		{ "split-bytes", required_argument, NULL, OPT_SET },
		{ "exclude", required_argument, NULL, OPT_SET },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "es-mapping", no_argument, NULL, OPT_ESMAPPING },
		{ "shard", required_argument, NULL, OPT_SET },
		{ "state", required_argument, NULL, OPT_SET },
		{ "wait-state", no_argument, NULL, OPT_SET },
		{ "state-reset", no_argument, NULL, OPT_SET },
		{ "index", required_argument, NULL, OPT_SET },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "no-progress", no_argument, NULL, OPT_NOPROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ingest_options *o = ingest_options_new();
	if (!o) {
		fputs("ingest: out of memory\n", stderr);
		return 1;
	}
	int stats = 0, c, status = 0;
	bool have_list = false, quiet = false, strict = false;
	int progress = -1;   /* -1: when stderr is a terminal */
	opterr = 0;
	int li = 0;
	while ((c = getopt_long(argc, argv, ":0o:qhV", longopts, &li)) != -1) {
		const char *name = NULL, *value = optarg;
		switch (c) {
		case OPT_SET:
			name = longopts[li].name;
			if (longopts[li].has_arg == no_argument)
				value = "1";
			break;
		case '0': name = "null"; value = "1"; break;
		case 'o': name = "output"; break;
		case OPT_IOONLY: name = "parse"; value = "0"; break;
		case OPT_PROGRESS: progress = 1; continue;
		case OPT_NOPROGRESS: progress = 0; continue;
		case 'q': quiet = true; continue;
		case OPT_STRICT: strict = true; continue;
		case OPT_ESMAPPING:
			fputs(es_mapping_text, stdout);
			ingest_options_free(o);
			return 0;
		case 'h':
			fputs(usage_text, stdout);
			ingest_options_free(o);
			return 0;
		case 'V':
			printf("ingest %s\n", ingest_version());
			ingest_options_free(o);
			return 0;
		case ':':
			status = usage_error("option needs a value: '", argv[optind - 1]);
			goto out;
		default:
			status = usage_error("unknown option '", argv[optind - 1]);
			goto out;
		}
		if (!strcmp(name, "files-from"))
			have_list = true;
		if (!strcmp(name, "stats"))
			stats = value && !strcmp(value, "json") ? 2 : 1;
		/* Only options with a value can be refused: flags pass "0"/"1". */
		int set = ingest_options_set(o, name, value);
		if (set == -ENOMEM) {
			fputs("ingest: out of memory\n", stderr);
			status = 1;
			goto out;
		}
		if (set < 0) {
			char what[256];
			snprintf(what, sizeof(what), "--%s=%s", name, value ? value : "");
			status = usage_error("invalid value in '", what);
			goto out;
		}
	}
	if (optind == argc && !have_list) {
		status = usage_error("no PATH given (and no --files-from)", NULL);
		goto out;
	}
	for (int i = optind; i < argc; i++)
		if (ingest_options_add_path(o, argv[i]) < 0) {
			fputs("ingest: out of memory\n", stderr);
			status = 1;
			goto out;
		}
	{
		/* A closed pipe must be an EPIPE the library sees, not a kill. */
		signal(SIGPIPE, SIG_IGN);
		/* Likewise a file-size limit (ulimit -f): EFBIG, which the writer
		 * reports and cuts back to the last whole record, instead of a
		 * kill that leaves half a record behind. */
		signal(SIGXFSZ, SIG_IGN);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	/* Decided here, before the run, so that a run without a terminal makes
	 * no syscall for it (isatty is an ioctl). */
	if (progress < 0)
		progress = !quiet && isatty(STDERR_FILENO);
	if (progress)
		ingest_options_set_progress(o, draw_progress, NULL);
	/* main returns right after the run: its memory goes with the process
	 * (docs/ARCHITECTURE.md, "Syscall accounting") */
	o->process_ends = true;
	/* the flag is clear in a process that has run nothing, and the
	 * handler above may have set it since: that Ctrl-C stops the run */
	o->interrupt_kept = true;
	struct ingest_report *rep = NULL;
	int r = ingest_run(o, &rep);
	if (stats && rep) {
		char *text;
		size_t len;
		if (ingest_report_format(rep, stats == 2, &text, &len) == 0) {
			fwrite(text, 1, len, stderr);
			free(text);
		}
	}
	if (!quiet && rep) {
		char *text;
		size_t len;
		if (ingest_report_format_errors(rep, &text, &len) == 0) {
			fwrite(text, 1, len, stderr);
			free(text);
		}
	}
	if (r < 0) {
		const char *why = ingest_report_error(rep);
		if (why)
			fprintf(stderr, "ingest: %s\n", why);
		else if (r == -ENOMEM)
			fputs("ingest: out of memory\n", stderr);
		else
			fprintf(stderr, "ingest: %s\n", strerror(-r));
		status = ingest_report_usage_error(rep) ? 2 : 1;
	} else if (ingest_report_interrupted(rep)) {
		status = 128 + (stop_signal ? stop_signal : SIGINT);
	} else if (ingest_report_output_closed(rep)) {
		/* What a process killed by SIGPIPE reports in a shell: `set -o
		 * pipefail` scripts already treat `cmd | head` that way, and it
		 * differs from 1 (the run failed) and 0 (every record written). */
		status = 128 + SIGPIPE;
	} else if (strict && ingest_report_error_records(rep)) {
		status = 1;   /* --strict: an error record fails the run */
	}
	ingest_report_free(rep);
out:
	ingest_options_free(o);
	return status;
}
