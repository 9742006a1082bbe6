/* SPDX-License-Identifier: MIT */
/* Option validation: see options.h.  The command line passes its long
 * options here by the same names, so a name is checked in one place. */
#include "config.h"
#include "options.h"
#include "core/xalloc.h"
#include "core/limits.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int options_parse_size(const char *s, uint64_t *out)
{
	/* digits first: strtoull alone would skip white space and take a
	 * sign, so " -1" would be 2^64 - 1 */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	uint64_t mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = KiB; end++; break;
	case 'm': case 'M': mul = MiB; end++; break;
	case 'g': case 'G': mul = GiB; end++; break;
	default: break;
	}
	if ((*end == 'i' || *end == 'I') && mul > 1)
		end++;
	if ((*end == 'b' || *end == 'B') && end[1] == '\0')
		end++;
	if (*end || (v && mul > UINT64_MAX / v))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static int options_flag(const char *v, bool *out)
{
	if (!v || !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int options_string(const char *v, char **slot)
{
	char *copy = v ? xstrdup(v) : NULL;
	if (v && !copy)
		return -ENOMEM;
	xfree(*slot);
	*slot = copy;
	return 0;
}

/* A file's name: NULL unsets it; "" names no file and is refused (read
 * back, it would be the same "" as unset). */
static int options_file(const char *v, char **slot)
{
	return !v || *v ? options_string(v, slot) : -EINVAL;
}

const char *ingest_version(void)
{
	return INGEST_VERSION;
}

int ingest_check_version(int major, int minor, int micro)
{
	/* the library was built with its own header: the macro's answer is
	 * the loaded library's */
	return INGEST_CHECK_VERSION(major, minor, micro);
}

struct ingest_options *ingest_options_new(void)
{
	struct ingest_options *o = xcalloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->reader.backend = READER_AUTO;
	o->reader.batch_bytes = LIMIT_BATCH_BYTES_DEFAULT;
	o->reader.max_size = LIMIT_MAX_SIZE_DEFAULT;
	o->reader.error_documents = true;
	o->max_inflight = LIMIT_MAX_INFLIGHT_DEFAULT;
	o->mail.max_text = LIMIT_MAX_TEXT_DEFAULT;
	o->mail.want_text = true;
	o->parse = true;
	o->output_fd = -1;
	emit_options_init(&o->emit);
	return o;
}

void ingest_options_free(struct ingest_options *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n_paths; i++)
		xfree(o->paths[i]);
	xfree(o->paths);
	for (size_t i = 0; i < o->n_excludes; i++)
		xfree(o->excludes[i]);
	xfree(o->excludes);
	xfree(o->files_from);
	xfree(o->output);
	xfree(o->state);
	xfree(o->index);
	xfree(o->es_index);
	xfree(o);
}

int ingest_options_add_path(struct ingest_options *o, const char *path)
{
	char **v = xrealloc(o->paths, (o->n_paths + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	o->paths = v;
	if (!(v[o->n_paths] = xstrdup(path)))
		return -ENOMEM;
	o->n_paths++;
	return 0;
}

int ingest_options_set_sink(struct ingest_options *o, ingest_sink_fn *fn, void *ctx)
{
	o->sink = fn;
	o->sink_ctx = fn ? ctx : NULL;
	return 0;
}

int ingest_options_set_progress(struct ingest_options *o, ingest_progress_fn *fn, void *ctx)
{
	o->progress = fn;
	o->progress_ctx = fn ? ctx : NULL;
	return 0;
}

int ingest_options_set_output_fd(struct ingest_options *o, int fd)
{
	if (fd < -1)
		return -EINVAL;
	o->output_fd = fd;
	return 0;
}

static int options_size_in(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t x;
	if (options_parse_size(v, &x) < 0 || x < min || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

/* Every name ingest_options_set() takes, as include/ingest.h lists them,
 * and its kind: the getter answers for these, and an unknown name is told
 * apart from a bad value by this table. */
static const struct {
	const char *name;
	enum options_kind kind;
} options_names[] = {
	{ "backend", OPTIONS_TEXT }, { "batch-bytes", OPTIONS_NUMBER },
	{ "max-inflight", OPTIONS_NUMBER }, { "max-size", OPTIONS_NUMBER },
	{ "max-text", OPTIONS_NUMBER }, { "threads", OPTIONS_NUMBER }, { "format", OPTIONS_TEXT },
	{ "fields", OPTIONS_TEXT }, { "es-index", OPTIONS_TEXT }, { "no-text", OPTIONS_FLAG },
	{ "headers", OPTIONS_FLAG }, { "parse", OPTIONS_FLAG }, { "output", OPTIONS_FILE },
	{ "files-from", OPTIONS_FILE }, { "null", OPTIONS_FLAG }, { "state", OPTIONS_FILE },
	{ "wait-state", OPTIONS_FLAG }, { "state-reset", OPTIONS_FLAG }, { "shard", OPTIONS_TEXT },
	{ "stats", OPTIONS_TEXT }, { "exclude", OPTIONS_TEXT }, { "split-bytes", OPTIONS_NUMBER },
	{ "es-errors", OPTIONS_FLAG }, { "index", OPTIONS_FILE },
};

enum options_kind options_kind(const char *name)
{
	for (size_t i = 0; name && i < sizeof(options_names) / sizeof(options_names[0]); i++)
		if (!strcmp(name, options_names[i].name))
			return options_names[i].kind;
	return OPTIONS_UNKNOWN;
}

static int options_set_one(struct ingest_options *o, const char *name, const char *v)
{
	uint64_t x;
	bool b;
	int r = 0;
	if (!strcmp(name, "backend")) {
		if (!v)
			return -EINVAL;
		if (!strcmp(v, "auto"))
			o->reader.backend = READER_AUTO;
		else if (!strcmp(v, "uring"))
			o->reader.backend = READER_URING;
		else if (!strcmp(v, "sync"))
			o->reader.backend = READER_SYNC;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(name, "batch-bytes"))
		return options_size_in(v, 1, 1 * GiB, &o->reader.batch_bytes);
	if (!strcmp(name, "max-inflight"))
		return options_size_in(v, 1, 1024 * GiB, &o->max_inflight);
	if (!strcmp(name, "exclude")) {
		/* repeatable: each call adds a pattern; NULL drops them all */
		if (!v) {
			for (size_t i = 0; i < o->n_excludes; i++)
				xfree(o->excludes[i]);
			o->n_excludes = 0;
			return 0;
		}
		if (!*v)
			return -EINVAL;
		char **e = xrealloc(o->excludes, (o->n_excludes + 1) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		o->excludes = e;
		e[o->n_excludes] = NULL;
		if ((r = options_string(v, &e[o->n_excludes])) < 0)
			return r;
		o->n_excludes++;
		return 0;
	}
	if (!strcmp(name, "split-bytes")) {
		if (!v)
			return o->split_bytes = 0, 0;   /* unset: one output */
		return options_size_in(v, 1, 64 * GiB, &o->split_bytes);
	}
	if (!strcmp(name, "max-size"))
		return options_size_in(v, 0, 64 * GiB, &o->reader.max_size);
	if (!strcmp(name, "max-text")) {
		if ((r = options_size_in(v, 0, 1 * GiB, &x)) < 0)
			return r;
		o->mail.max_text = (size_t)x;
		return 0;
	}
	if (!strcmp(name, "threads")) {
		char *end;
		if (!v)
			return o->threads = 0, 0;   /* unset: the machine's parallelism */
		if (!isdigit((unsigned char)*v))
			return -EINVAL;   /* strtoul would take " 4", "+4" and "-1" */
		unsigned long t = strtoul(v, &end, 10);
		if (*end || t == 0 || t > LIMIT_MAX_THREADS)
			return -EINVAL;
		o->threads = (unsigned)t;
		return 0;
	}
	if (!strcmp(name, "output"))
		return options_file(v, &o->output);
	if (!strcmp(name, "state"))
		return options_file(v, &o->state);
	if (!strcmp(name, "wait-state") || !strcmp(name, "state-reset")) {
		if ((r = options_flag(v, &b)) < 0)
			return r;
		*(name[0] == 'w' ? &o->state_wait : &o->state_reset) = b;
		return 0;
	}
	if (!strcmp(name, "index"))
		return options_file(v, &o->index);
	if (!strcmp(name, "files-from"))
		return options_file(v, &o->files_from);
	if (!strcmp(name, "null")) {
		if ((r = options_flag(v, &b)) < 0)
			return r;
		o->null_separated = b;
		return 0;
	}
	if (!strcmp(name, "no-text")) {
		if ((r = options_flag(v, &b)) < 0)
			return r;
		o->mail.want_text = !b;
		o->emit.no_text = b;
		return 0;
	}
	if (!strcmp(name, "headers")) {
		if ((r = options_flag(v, &b)) < 0)
			return r;
		o->mail.want_headers = b;
		o->emit.headers = b;
		return 0;
	}
	if (!strcmp(name, "es-errors")) {
		if ((r = options_flag(v, &b)) < 0)
			return r;
		o->emit.es_errors = b;
		return 0;
	}
	if (!strcmp(name, "parse")) {
		if ((r = options_flag(v, &b)) < 0)
			return r;
		o->parse = b;
		return 0;
	}
	if (!strcmp(name, "stats")) {
		if (!v || !strcmp(v, "1") || !strcmp(v, "human"))
			o->stats = OPTIONS_STATS_HUMAN;
		else if (!strcmp(v, "json"))
			o->stats = OPTIONS_STATS_JSON;
		else if (!strcmp(v, "0"))
			o->stats = OPTIONS_STATS_NONE;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(name, "shard")) {
		/* K/N, 1 <= K <= N <= 2^20, digits only (strtoul alone would
		 * take "-1" as a huge number) */
		if (!v)
			return o->shard_k = o->shard_n = 0, 0;   /* unset: every input */
		const char *slash = strchr(v, '/');
		if (!slash || slash == v || !slash[1] || strspn(v, "0123456789") != (size_t)(slash - v) ||
		    strspn(slash + 1, "0123456789") != strlen(slash + 1) || slash - v > 7 || strlen(slash + 1) > 7)
			return -EINVAL;
		unsigned long k = strtoul(v, NULL, 10), n = strtoul(slash + 1, NULL, 10);
		if (n == 0 || n > (1ul << 20) || k == 0 || k > n)
			return -EINVAL;
		o->shard_k = (unsigned)k;
		o->shard_n = (unsigned)n;
		return 0;
	}
	if (!strcmp(name, "format"))
		return v ? emit_format_parse(v, &o->emit.format) : -EINVAL;
	if (!strcmp(name, "fields"))
		return v ? emit_fields_parse(&o->emit, v, NULL, NULL) : -EINVAL;
	if (!strcmp(name, "es-index")) {
		if (v && !*v)
			return -EINVAL;
		if ((r = options_string(v, &o->es_index)) < 0)
			return r;
		o->emit.es_index = o->es_index;   /* NULL: unset, the default name */
		return 0;
	}
	return -ENOENT;   /* a name of the table without a case: a bug */
}

int ingest_options_set(struct ingest_options *o, const char *name, const char *v)
{
	o->error[0] = '\0';
	if (options_kind(name) == OPTIONS_UNKNOWN) {
		snprintf(o->error, sizeof(o->error), "unknown option '%.100s'", name ? name : "(null)");
		return -EINVAL;
	}
	int r = options_set_one(o, name, v);
	if (r == -EINVAL)
		snprintf(o->error, sizeof(o->error), "invalid value for '%s': '%.100s'", name,
		         v ? v : "(null)");
	return r;
}

const char *ingest_options_error(const struct ingest_options *o)
{
	return o->error[0] ? o->error : NULL;
}

static const char *options_flag_text(bool b)
{
	return b ? "1" : "0";
}

int ingest_options_get(const struct ingest_options *o, const char *name, char *buf, size_t size)
{
	struct ingest_options *mo = (struct ingest_options *)(uintptr_t)o;   /* the error slot only */
	mo->error[0] = '\0';
	char tmp[32];
	const char *s = NULL;
	unsigned long long n = 0;
	bool number = false;
	if (options_kind(name) == OPTIONS_UNKNOWN) {
		snprintf(mo->error, sizeof(mo->error), "unknown option '%.100s'", name ? name : "(null)");
		return -EINVAL;
	}
	if (!strcmp(name, "backend"))
		s = o->reader.backend == READER_URING ? "uring" : o->reader.backend == READER_SYNC ? "sync" : "auto";
	else if (!strcmp(name, "batch-bytes"))
		number = true, n = o->reader.batch_bytes;
	else if (!strcmp(name, "max-inflight"))
		number = true, n = o->max_inflight;
	else if (!strcmp(name, "max-size"))
		number = true, n = o->reader.max_size;
	else if (!strcmp(name, "max-text"))
		number = true, n = o->mail.max_text;
	else if (!strcmp(name, "threads"))
		number = true, n = o->threads;   /* 0: the machine's parallelism */
	else if (!strcmp(name, "format"))
		s = o->emit.format == EMIT_TSV ? "tsv" : o->emit.format == EMIT_ES_BULK ? "es-bulk" : "jsonl";
	else if (!strcmp(name, "es-index"))
		s = o->es_index ? o->es_index : "";
	else if (!strcmp(name, "no-text"))
		s = options_flag_text(o->emit.no_text);
	else if (!strcmp(name, "headers"))
		s = options_flag_text(o->emit.headers);
	else if (!strcmp(name, "parse"))
		s = options_flag_text(o->parse);
	else if (!strcmp(name, "null"))
		s = options_flag_text(o->null_separated);
	else if (!strcmp(name, "output"))
		s = o->output ? o->output : "";
	else if (!strcmp(name, "files-from"))
		s = o->files_from ? o->files_from : "";
	else if (!strcmp(name, "state"))
		s = o->state ? o->state : "";
	else if (!strcmp(name, "split-bytes"))
		number = true, n = o->split_bytes;
	else if (!strcmp(name, "es-errors"))
		s = options_flag_text(o->emit.es_errors);
	else if (!strcmp(name, "wait-state"))
		s = options_flag_text(o->state_wait);
	else if (!strcmp(name, "state-reset"))
		s = options_flag_text(o->state_reset);
	else if (!strcmp(name, "index"))
		s = o->index ? o->index : "";
	else if (!strcmp(name, "stats"))
		s = o->stats == OPTIONS_STATS_JSON ? "json" : o->stats == OPTIONS_STATS_HUMAN ? "human" : "0";
	if (number || s)
		return snprintf(buf, size, "%s", number ? (snprintf(tmp, sizeof(tmp), "%llu", n), tmp) : s);
	if (!strcmp(name, "exclude")) {
		/* every pattern, in the order given, one a line */
		size_t len = 0;
		if (size)
			buf[0] = '\0';
		for (size_t i = 0; i < o->n_excludes; i++) {
			int w = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0, "%s%s",
			                 i ? "\n" : "", o->excludes[i]);
			len += (size_t)w;
		}
		return (int)len;
	}
	if (!strcmp(name, "shard")) {
		if (!o->shard_n)
			return snprintf(buf, size, "%s", "");
		return snprintf(buf, size, "%u/%u", o->shard_k, o->shard_n);
	}
	/* fields: the selection in its order, comma-separated */
	size_t len = 0;
	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < o->emit.n_order; i++) {
		enum emit_field f = (enum emit_field)o->emit.order[i];
		if (!(o->emit.fields & EMIT_FIELD_BIT(f)))
			continue;
		const char *fn = emit_field_name(f);
		int w = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0, "%s%s",
		                 len ? "," : "", fn);
		len += (size_t)w;
	}
	return (int)len;
}
