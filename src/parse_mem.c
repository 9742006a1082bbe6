/* SPDX-License-Identifier: MIT */
/* Messages in memory: see parse_mem.h. */
#include "parse_mem.h"
#include "pipeline/parse_stage.h"
#include "options.h"
#include "core/xalloc.h"
#include "emit/emit.h"
#include "mail/mail.h"
#include "sched/parallelism.h"
#include "sched/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PARSE_MEM_LINGER_NS 100000   /* 100 us */

/* The process's pool, its workers' parser contexts, and the lock that
 * lets one batch at a time use them.  Created on first use, kept for the
 * process: threads are started once. */
static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	struct pool *pool;
	unsigned threads;
	struct mail_ctx **mctx;
} mem = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

/* A thread's own parser context for what it parses alone (ingest_parse, a
 * batch that found the pool busy): a libmagic cookie is too dear to make
 * per call.  Freed when the thread ends. */
static pthread_key_t mem_ctx_key;

static void mem_ctx_free(void *p)
{
	mail_ctx_free(p);
}

/* A child of fork() has none of the pool's threads: a batch posted to
 * them would wait for good (Python's multiprocessing forks a process
 * that may have parsed).  The child forgets the pool, and its lock,
 * which a parent's thread may have held; its batches run on their caller
 * (README, "Python"). */
static void mem_forked(void)
{
	mem.pool = NULL;
	pthread_mutex_init(&mem.lock, NULL);
}

static void mem_init(void)
{
	pthread_key_create(&mem_ctx_key, mem_ctx_free);
	pthread_atfork(NULL, NULL, mem_forked);
	unsigned t = parallelism_default();
	struct mail_ctx **mctx = xcalloc(t, sizeof(*mctx));
	struct pool *p = mctx ? pool_new(t) : NULL;
	for (unsigned i = 0; p && i < t; i++)
		if (!(mctx[i] = mail_ctx_new())) {
			pool_free(p);
			p = NULL;
		}
	if (!p) {
		for (unsigned i = 0; mctx && i < t; i++)
			mail_ctx_free(mctx[i]);
		xfree(mctx);
		return;   /* no pool: every batch runs on its caller */
	}
	/* parse_many's callers come back with the next batch within tens of
	 * microseconds (docs/ARCHITECTURE.md, "The pipeline and its threads",
	 * in memory) */
	pool_set_linger(p, PARSE_MEM_LINGER_NS);
	mem.pool = p;
	mem.mctx = mctx;
	mem.threads = t;
}

static struct mail_ctx *mem_thread_ctx(void)
{
	struct mail_ctx *c = pthread_getspecific(mem_ctx_key);
	if (!c && (c = mail_ctx_new()))
		pthread_setspecific(mem_ctx_key, c);
	return c;
}

struct mem_batch {
	const struct ingest_options *o;
	const void *const *bufs;
	const size_t *lens;
	struct mail_ctx **mctx;   /* per worker; NULL: the thread's own */
	const atomic_bool *stop;
	parse_mem_fn *fn;
	void *ctx;
};

static void mem_item(void *arg, size_t i, unsigned w)
{
	struct mem_batch *b = arg;
	struct record rec;
	memset(&rec, 0, sizeof(rec));
	rec.io.kind = RECORD_MESSAGE;
	rec.io.anonymous = true;
	struct mail_message msg;
	struct mail_ctx *mc = b->mctx ? b->mctx[w] : mem_thread_ctx();
	if (b->stop && atomic_load_explicit(b->stop, memory_order_relaxed)) {
		rec.io.reason = RECORD_INTERNAL;
		rec.io.err = EINTR;
		rec.io.message = "interrupted";
	} else if (!mc) {
		rec.io.reason = RECORD_INTERNAL;
		rec.io.err = ENOMEM;
		rec.io.message = "no memory for a parser";
	} else if (b->o->parse) {
		parse_stage_message(mc, &b->o->mail, &rec, b->bufs[i], b->lens[i], &msg);
	}
	b->fn(b->ctx, i, &rec);
}

int parse_mem_run(const struct ingest_options *o, const void *const *bufs, const size_t *lens,
                  size_t n, unsigned threads, const atomic_bool *stop, parse_mem_fn *fn, void *ctx)
{
	struct mem_batch b = { o, bufs, lens, NULL, stop, fn, ctx };
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += lens[i];
	if (!threads)
		threads = o->threads;
	pthread_once(&mem.once, mem_init);
	/* The batch the pool's workers read is on the heap: the caller may
	 * be ended in the middle of it (fn taking back a Python GIL while the
	 * interpreter shuts down: a daemon thread), and the workers go on. */
	struct mem_batch *pb = n > 1 && threads != 1 && mem.pool ? xmalloc(sizeof(*pb)) : NULL;
	if (pb && pthread_mutex_trylock(&mem.lock) == 0) {
		*pb = b;
		pb->mctx = mem.mctx;
		pool_run_max(mem.pool, n, bytes, threads ? threads : mem.threads, mem_item, pb);
		pthread_mutex_unlock(&mem.lock);
		xfree(pb);
		return 0;
	}
	xfree(pb);
	if (!mem_thread_ctx())
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		mem_item(&b, i, 0);
	return 0;
}

/* ---- the C API --------------------------------------------------------- */

static void result_set(struct ingest_result *res, struct record *rec, struct dynbuf *out)
{
	enum record_reason reason = rec->io.reason;
	res->kind = reason == RECORD_NONE ? INGEST_KIND_MESSAGE
	          : reason == RECORD_NOT_MAIL ? INGEST_KIND_NOT_MAIL : INGEST_KIND_ERROR;
	res->err = reason == RECORD_NONE || reason == RECORD_NOT_MAIL ? 0 : rec->io.err;
	res->warnings = rec->mail ? rec->mail->warnings : 0;
	res->record = dynbuf_take(out, &res->len);
	if (!res->record) {
		res->kind = INGEST_KIND_ERROR;
		res->err = ENOMEM;
		res->len = 0;
	}
}

struct api_batch {
	const struct ingest_options *o;
	struct ingest_result *results;
};

static void api_item(void *arg, size_t i, struct record *rec)
{
	struct api_batch *a = arg;
	struct dynbuf out;
	dynbuf_init(&out, 0);
	parse_stage_emit(&a->o->emit, NULL, NULL, rec, &out);
	result_set(&a->results[i], rec, &out);
	dynbuf_release(&out);
}

static const struct ingest_options *api_options(const struct ingest_options *o,
                                                struct ingest_options **own)
{
	*own = NULL;
	if (o)
		return o;
	return *own = ingest_options_new();
}

int ingest_parse_many(const void *const *bufs, const size_t *lens, size_t n,
                      const struct ingest_options *o, struct ingest_result *results)
{
	struct ingest_options *own;
	for (size_t i = 0; i < n; i++)
		memset(&results[i], 0, sizeof(results[i]));
	if (!(o = api_options(o, &own)))
		return -ENOMEM;
	struct api_batch a = { o, results };
	int r = parse_mem_run(o, bufs, lens, n, 0, NULL, api_item, &a);
	ingest_options_free(own);
	return r;
}

int ingest_parse(const void *buf, size_t len, const struct ingest_options *o,
                 struct ingest_result *result)
{
	return ingest_parse_many(&buf, &len, 1, o, result);
}

void ingest_result_release(struct ingest_result *r)
{
	if (!r)
		return;
	free(r->record);
	r->record = NULL;
	r->len = 0;
}

const char *ingest_warning_name(unsigned bit)
{
	return bit < MAIL_W__COUNT ? mail_warning_name((enum mail_warning)bit) : NULL;
}
