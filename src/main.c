/* The ingest command: argv → options → ingest_run() → exit status.  The only
 * place that prints errors, in one shape: "ingest: <what>: <why>". */
#include "ingest.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
"Usage: ingest [OPTIONS] PATH...\n"
"Turn Maildirs, trees of .eml files and single messages into JSON records,\n"
"one per input, with as few system calls as the kernel allows.\n"
"\n"
"Input\n"
"  PATH                   a Maildir, a tree of messages, a message, an mbox\n"
"  --files-from=FILE      also read paths from FILE ('-' for stdin), one a line;\n"
"  -0, --null             ...NUL-separated\n"
"  --max-size=SIZE        files larger are not read (error record; 256M)\n"
"  --exclude=GLOB         skip names or paths matching GLOB (repeatable)\n"
"  --state=FILE           incremental: only new and changed messages, plus\n"
"                         deleted/renamed records; FILE is updated atomically\n"
"Output\n"
"  -o, --output=FILE      write records to FILE (default: stdout); with\n"
"  --split-bytes=SIZE     files FILE.000, .001... of at most SIZE, whole records\n"
"  --format=FMT           jsonl (default), es-bulk, tsv\n"
"  --es-index=NAME        es-bulk's _index; --es-errors: error records too\n"
"  --es-mapping           print the index template matching es-bulk, and exit\n"
"  --fields=A,B,...       only these fields (every format; tsv column order)\n"
"  --no-text, --max-text=SIZE  no text, or text cut at SIZE bytes (1M)\n"
"  --headers              add every header field;  --io-only  do not parse\n"
"Performance\n"
"  --backend=B            auto (default), uring, sync\n"
"  --threads=N            parse with at most N threads (default: the CPUs)\n"
"  --batch-bytes=SIZE     bytes per batch (2M)\n"
"  --max-inflight=SIZE    bytes read but not yet written, at most (64M)\n"
"  --stats[=json]         statistics on stderr at the end\n"
"  --shard=K/N            only the inputs of shard K (1..N) of N, by path hash\n"
"  --progress, --no-progress  a progress line on stderr (default: if a tty)\n"
"  -q, --quiet            quiet;  -h, --help  this help;  -V, --version\n"
"SIZE takes K, M or G.  Exit: 0 every input got a record (errors included;\n"
"--strict: none was an error), 1 the run failed, 2 bad usage, 130 interrupted.\n"
"\n"
"Examples\n"
"  ingest ~/Maildir > mail.jsonl\n"
"  ingest --stats --fields=path,from,subject,date ~/Maildir | head\n"
"  find /srv/archive -name '*.eml' -print0 | ingest --files-from=- -0\n"
"  ingest --state ~/.cache/ingest.state ~/Maildir >> changes.jsonl\n"
"  ingest --format=es-bulk --es-index=mail ~/Maildir > bulk.ndjson   # for _bulk\n"
"  ingest --shard=2/4 -o part2.jsonl /srv/archive    # one of 4 machines\n";

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

static void on_sigint(int sig)
{
	(void)sig;
	ingest_interrupt();
}

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "ingest: %s%s%s (see ingest --help)\n", what, arg ? arg : "", arg ? "'" : "");
	return 2;
}

int main(int argc, char **argv)
{
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
		 * kill that leaves half a record behind (issue 7). */
		signal(SIGXFSZ, SIG_IGN);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sigint;
		sigaction(SIGINT, &sa, NULL);
	}
	/* Decided here, before the run, so that a run without a terminal makes
	 * no syscall for it (isatty is an ioctl). */
	if (progress < 0)
		progress = !quiet && isatty(STDERR_FILENO);
	ingest_options_set(o, "progress", progress ? "1" : "0");
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
		/* -EINVAL: refused before any input was read (ingest.h) */
		status = r == -EINVAL ? 2 : 1;
	} else if (ingest_report_interrupted(rep)) {
		status = 130;
	} else if (strict && ingest_report_error_records(rep)) {
		status = 1;   /* --strict: an error record fails the run */
	}
	ingest_report_free(rep);
out:
	ingest_options_free(o);
	return status;
}
