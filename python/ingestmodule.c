/* SPDX-License-Identifier: MIT */
/* The Python module `ingest`: parse, parse_many and scan in-process; index
 * search and count, the command's --index run and `ingest search`.
 *
 * The dicts are built from the parsed struct record by src/emit/pydict.c,
 * never through JSON.  Where the work runs:
 *
 *   parse / parse_many:  caller (GIL released) ─▶ parse_mem_run (the
 *       process's pool, byte gate, caller as worker 0) ─▶ per message, on
 *       its worker: the dict's tape without the GIL (emit/pydict.h) into
 *       the message's slot; the caller alone takes the GIL, to make the
 *       dicts of the ready slots in input order, and parses when it has
 *       none to make (see "parse, parse_many" below)
 *
 *   scan:  a run thread: ingest_run() with a visitor in place of the JSON
 *       emitter: each worker writes its records' tapes into the batch's
 *       output, so the writer hands them to the sink in input order, whole
 *       ─▶ the sink copies each batch's tapes for __next__ once it has
 *       yielded the last batch's ─▶ __next__, on the caller's thread,
 *       makes each dict as it yields it.  The run never takes the GIL.
 *
 * __next__ waits with the GIL released and wakes every 100 ms to let
 * Python run its signal handlers: a KeyboardInterrupt there interrupts the
 * run (ingest_interrupt), drops the dicts not yet yielded and is raised;
 * every dict yielded before is a whole record.  Memory is bounded by the
 * run's byte budget (--max-inflight) and its batches' tapes.
 *
 *   index:  ingest_run() with the index option on a thread of its own, the
 *       caller waiting with the GIL released, as __next__ does.
 *   search, count:  ingest_search() into a file in memory, its lines
 *       json.loads'd, or the count read. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ingest.h"
#include "options.h"
#include "core/limits.h"
#include "core/sys.h"
#include "emit/pydict.h"
#include "index/search.h"
#include "parse_mem.h"
#include "sched/futex_wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------ */

/* What a keyword of each kind takes, for its TypeError. */
static const char *option_takes(enum options_kind kind)
{
	switch (kind) {
	case OPTIONS_FILE:
		return "str, bytes or os.PathLike";
	case OPTIONS_NUMBER:
		return "int or str";
	case OPTIONS_FLAG:
		return "bool";
	default:
		return "str or a list of str";
	}
}

/* A keyword's value as ingest_options_set() takes it: a flag from a bool,
 * a number from an int, a list of fields joined by commas, a path from str
 * or bytes (os.fsencode's form).  The kind (options.c's) decides the
 * types: a file takes no int and no bool (state=5 would name the file
 * "5", state=True "1") and no list (state=["a", "b"] would name "a,b"), a
 * number no bool (max_text=True would keep one character) and no path, a
 * word no path; a NUL inside would end the value early ("x\0" would be
 * "x").  Every refusal names the keyword. */
static PyObject *option_text(const char *key, const char *name, PyObject *v)
{
	enum options_kind kind = options_kind(name);
	bool text = PyUnicode_Check(v) || PyBytes_Check(v);
	bool list = PyList_Check(v) || PyTuple_Check(v);
	bool ok = text || (kind == OPTIONS_FILE && PyObject_HasAttrString(v, "__fspath__")) ||
	          (kind == OPTIONS_NUMBER && PyLong_Check(v) && !PyBool_Check(v)) ||
	          (kind == OPTIONS_FLAG && PyLong_Check(v)) || (kind == OPTIONS_TEXT && list);
	if (!ok) {
		PyErr_Format(PyExc_TypeError, "option '%s' takes %s, not %.100s", key, option_takes(kind),
		             Py_TYPE(v)->tp_name);
		return NULL;
	}
	PyObject *b = NULL;
	if (v == Py_True || v == Py_False) {
		b = PyBytes_FromString(v == Py_True ? "1" : "0");
	} else if (PyLong_Check(v)) {
		/* the number's own digits, not a subclass's __str__ */
		PyObject *i = PyNumber_Index(v);
		PyObject *s = i ? PyLong_Type.tp_str(i) : NULL;
		Py_XDECREF(i);
		b = s ? PyUnicode_AsUTF8String(s) : NULL;
		Py_XDECREF(s);
	} else if (list) {
		for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(v); j++) {
			PyObject *item = PySequence_Fast_GET_ITEM(v, j);
			if (!PyUnicode_Check(item)) {
				PyErr_Format(PyExc_TypeError, "option '%s' takes %s, not a list holding %.100s",
				             key, option_takes(kind), Py_TYPE(item)->tp_name);
				return NULL;
			}
		}
		PyObject *comma = PyUnicode_FromString(",");
		PyObject *joined = comma ? PyUnicode_Join(comma, v) : NULL;
		Py_XDECREF(comma);
		b = joined ? PyUnicode_AsUTF8String(joined) : NULL;
		Py_XDECREF(joined);
	} else {
		PyObject *path = PyOS_FSPath(v);
		if (path && PyUnicode_Check(path))
			b = PyUnicode_EncodeFSDefault(path);
		else if (path && PyBytes_Check(path))
			b = Py_NewRef(path);
		Py_XDECREF(path);
	}
	if (b && strlen(PyBytes_AS_STRING(b)) != (size_t)PyBytes_GET_SIZE(b)) {
		PyErr_Format(PyExc_ValueError, "invalid value for '%s': %.200R (a NUL character)", key, v);
		Py_CLEAR(b);
	}
	return b;
}

/* scan()'s batches: the command's 6 MiB is for its syscalls a message at
 * 100,000 files (README, "`--batch-bytes`"); scan hands its dicts over a
 * batch at a time, and while __next__ works through one the parse thread
 * waits to give it the next, so a smaller batch leaves the pipeline
 * waiting less, and its tapes are still in the cache when the dicts are
 * made (bench/PYTHON.md).  A batch_bytes= of the caller's wins. */
#define SCAN_BATCH_BYTES "2M"

/* The command's options a dict has no use for: the one place the rule
 * lives.  Every name of options.c's table (and the command's --progress)
 * is either here or taken: `run_only` ones mean something to scan()'s run
 * (files walked and read, a state) and nothing to parse()/parse_many(),
 * which take messages held in memory, one at a time; the others mean
 * nothing to a dict at all.  A name that does not apply is a keyword
 * error, as an unknown one is: TypeError, naming the keyword as given.
 * tests/python tries every name of options.c's table against it. */
static const struct {
	const char *name;
	bool run_only;
	const char *why;
} not_for_dicts[] = {
	{ "format", false, "dicts are the JSON records' shape" },
	{ "es-index", false, "dicts are the JSON records' shape, not es-bulk's" },
	{ "es-errors", false, "dicts are the JSON records' shape, not es-bulk's" },
	{ "output", false, "the dicts are handed over, not written" },
	{ "split-bytes", false, "the dicts are handed over, not written to files" },
	{ "progress", false, "the dicts are handed over, with no progress line" },
	{ "index", false, "an index run writes its records into the database and hands over none" },
	{ "backend", true, "there is no run: no file is read" },
	{ "batch-bytes", true, "there is no run: no file is read" },
	{ "max-inflight", true, "there is no run: no file is read" },
	{ "max-size", true, "there is no run: no file is read" },
	{ "threads", true, "parse() takes one message, parse_many() its own threads=" },
	{ "files-from", true, "there is no run: no path is walked" },
	{ "null", true, "there is no run: no path is walked" },
	{ "exclude", true, "there is no run: no path is walked" },
	{ "shard", true, "there is no run: no path is walked" },
	{ "state", true, "there is no run: no state is kept" },
	{ "wait-state", true, "there is no run: no state is kept" },
	{ "state-reset", true, "there is no run: no state is kept" },
	{ "stats", false, "no statistics are printed: the dicts are the records" },
};

/* Options from keywords: the CLI's long names with '_' for '-'. */
/* The function whose keywords options_from() reads. */
enum py_call { PY_PARSE, PY_SCAN, PY_INDEX };

/* Why index() refuses a keyword scan() refuses too: its records go into
 * the database, and it returns the statistics. */
static const char *index_refuses(const char *name)
{
	if (!strcmp(name, "index"))
		return "the database is index()'s first argument";
	if (!strcmp(name, "stats"))
		return "index() returns the statistics";
	if (!strcmp(name, "progress"))
		return "index() prints nothing";
	return "an index run writes its records into the database";
}

static struct ingest_options *options_from(PyObject *kwargs, enum py_call call)
{
	bool for_scan = call != PY_PARSE;
	struct ingest_options *o = ingest_options_new();
	if (!o)
		return (struct ingest_options *)PyErr_NoMemory();
	if (call == PY_SCAN && ingest_options_set(o, "batch-bytes", SCAN_BATCH_BYTES) < 0) {
		ingest_options_free(o);
		return (struct ingest_options *)PyErr_NoMemory();
	}
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	while (kwargs && PyDict_Next(kwargs, &pos, &k, &v)) {
		Py_ssize_t kn;
		const char *key = PyUnicode_AsUTF8AndSize(k, &kn);
		if (!key)
			goto fail;
		char name[64];
		size_t n = strlen(key);
		/* a NUL inside is no option's name ("fields\0x" is not fields) */
		if (n >= sizeof(name) || n != (size_t)kn) {
			PyErr_Format(PyExc_TypeError, "unknown option %.100R", k);
			goto fail;
		}
		for (size_t i = 0; i <= n; i++)
			name[i] = key[i] == '_' ? '-' : key[i];
		for (size_t i = 0; i < sizeof(not_for_dicts) / sizeof(not_for_dicts[0]); i++)
			if (!strcmp(name, not_for_dicts[i].name) && (!for_scan || !not_for_dicts[i].run_only)) {
				PyErr_Format(PyExc_TypeError, "option '%s' does not apply to %s: %s", key,
				             call == PY_INDEX ? "index()" : for_scan ? "scan()"
				                                                     : "parse() and parse_many()",
				             call == PY_INDEX ? index_refuses(name) : not_for_dicts[i].why);
				goto fail;
			}
		/* None is the default, for a name that is an option */
		if (options_kind(name) == OPTIONS_UNKNOWN) {
			PyErr_Format(PyExc_TypeError, "unknown option '%.100s'", key);
			goto fail;
		}
		if (v == Py_None)
			continue;
		/* exclude= takes a list of globs, each one --exclude (a list is
		 * otherwise one value joined by commas, as fields= is) */
		bool each = !strcmp(name, "exclude") && (PyList_Check(v) || PyTuple_Check(v));
		/* a copy: an item's __fspath__ may change the caller's list */
		PyObject *items = each ? PySequence_List(v) : NULL;
		if (each && !items)
			goto fail;
		Py_ssize_t count = each ? PyList_GET_SIZE(items) : 1;
		int r = 0;
		for (Py_ssize_t j = 0; r == 0 && j < count; j++) {
			PyObject *text = option_text(key, name, each ? PyList_GET_ITEM(items, j) : v);
			if (!text) {
				Py_XDECREF(items);
				goto fail;
			}
			r = ingest_options_set(o, name, PyBytes_AS_STRING(text));
			Py_DECREF(text);
		}
		Py_XDECREF(items);
		if (r == -ENOMEM) {
			PyErr_NoMemory();
			goto fail;
		}
		if (r < 0) {
			/* the name known (above): a bad value, named as given */
			PyErr_Format(PyExc_ValueError, "invalid value for '%s': %R", key, v);
			goto fail;
		}
	}
	return o;
fail:
	ingest_options_free(o);
	return NULL;
}

/* A scan worker's tape (emit/pydict.h), for its scratch buffer: kept
 * between records, freed when the thread ends.  parse_many's tapes give
 * back one grown past TAPE_KEEP_BYTES by a large record. */
#define TAPE_KEEP_BYTES (1u << 20)

static pthread_key_t tape_key;
static pthread_once_t tape_once = PTHREAD_ONCE_INIT;

static void tape_free(void *p)
{
	if (p)
		emit_pytape_release(p);
	free(p);
}

static void tape_key_make(void)
{
	pthread_key_create(&tape_key, tape_free);
}

static struct emit_pytape *thread_tape(void)
{
	pthread_once(&tape_once, tape_key_make);
	struct emit_pytape *t = pthread_getspecific(tape_key);
	if (!t && (t = malloc(sizeof(*t)))) {
		emit_pytape_init(t);
		if (pthread_setspecific(tape_key, t)) {
			free(t);
			t = NULL;
		}
	}
	return t;
}

/* ---- parse, parse_many ---------------------------------------------------- */

/* parse_many in two overlapped steps (the dicts need the GIL, the parse
 * and the tape do not):
 *
 *   worker k >= 1:  parse i ─▶ tape i ─▶ slot i (ready)     no GIL, ever
 *   the caller:     parse j ─▶ tape j ─▶ slot j, then, with the GIL, the
 *                   dicts of the slots ready in input order from `built`
 *
 * The caller, worker 0 of the pool, builds every dict, and parses only
 * when it has none to build: with two workers the GIL-held share (13% of
 * the work, bench/PYTHON.md) overlaps the other's parse instead of being
 * fought over per message.  It takes the GIL once for a run of ready
 * slots (MANY_DRAIN_ITEMS, or MANY_DRAIN_BYTES of tape), and once all the
 * items are claimed it waits for the others' slots in order, building
 * each as it comes (the end of the batch is then the last item's dict,
 * not every dict the workers made).  Tapes are recycled through a free
 * list; the caller is the one consumer, so slots ahead of `built` are at
 * most what the others parsed during the caller's own item. */
#define MANY_DRAIN_ITEMS 8
#define MANY_DRAIN_BYTES (256u << 10)

struct many {
	const struct ingest_options *o;
	size_t n;
	PyObject **dicts;
	_Atomic(struct emit_pytape *) *slots;   /* [n]: NULL until ready */
	_Atomic size_t started;                 /* items whose call began */
	_Atomic uint32_t seq;                   /* bumped as a slot gets ready */
	atomic_uint waiters;
	_Atomic uint64_t waited;
	pthread_t caller;
	PyThreadState *ts;                      /* the caller's, while the GIL is released */
	size_t built;                           /* caller only: slots made into dicts */
	pthread_mutex_t free_lock;
	struct emit_pytape *free;               /* recycled tapes, linked by .next */
	bool failed;                            /* caller only */
	int gc_was;                             /* caller only: PyGC_Disable()'s answer */
	atomic_bool stop;                       /* a signal's exception came: parse no more */
	uint64_t checked_ns;                    /* caller only: the last signal check */
	PyObject *exc[3];                       /* caller only: that exception, fetched */
};

/* How long the caller goes, at most, without taking the GIL (parsing) or
 * without giving it back (making dicts), so that Python's signal handlers
 * (Ctrl-C) and its other threads run: a take and a give are about a
 * microsecond. */
#define MANY_SIGNAL_CHECK_NS (20 * 1000 * 1000)

/* A slot whose tape could not be made (no memory). */
static struct emit_pytape many_no_tape;

/* A tape: a recycled one, or a new one; NULL without memory. */
static struct emit_pytape *many_tape_get(struct many *m)
{
	pthread_mutex_lock(&m->free_lock);
	struct emit_pytape *t = m->free;
	if (t)
		m->free = t->next;
	pthread_mutex_unlock(&m->free_lock);
	if (!t && (t = malloc(sizeof(*t))))
		emit_pytape_init(t);
	return t;
}

/* Back on the free list, or freed when a large record grew it past
 * TAPE_KEEP_BYTES. */
static void many_tape_put(struct many *m, struct emit_pytape *t)
{
	if (t->items.cap > TAPE_KEEP_BYTES) {
		emit_pytape_release(t);
		free(t);
		return;
	}
	pthread_mutex_lock(&m->free_lock);
	t->next = m->free;
	m->free = t;
	pthread_mutex_unlock(&m->free_lock);
}

static void many_free_tapes(struct many *m)
{
	while (m->free) {
		struct emit_pytape *t = m->free;
		m->free = t->next;
		emit_pytape_release(t);
		free(t);
	}
}

/* Whether the slots from `built` on are worth a GIL take: the next `want`
 * (or all that are left) are ready, or those ready before the first that
 * is not hold MANY_DRAIN_BYTES of tape. */
static bool many_ready_run(struct many *m, size_t want)
{
	size_t bytes = 0;
	for (size_t i = m->built, k = 0; i < m->n && k < want; i++, k++) {
		struct emit_pytape *t = atomic_load_explicit(&m->slots[i], memory_order_acquire);
		if (!t)
			return false;
		if (t != &many_no_tape && (bytes += t->items.len) >= MANY_DRAIN_BYTES)
			return true;
	}
	return true;
}

/* The dict of slot `built`, under the GIL; the slot must be ready. */
static void many_build_one(struct many *m)
{
	size_t i = m->built++;
	struct emit_pytape *t = atomic_load_explicit(&m->slots[i], memory_order_acquire);
	atomic_store_explicit(&m->slots[i], NULL, memory_order_relaxed);
	if (t == &many_no_tape || !(m->dicts[i] = emit_pytape_build(t))) {
		PyErr_Clear();
		m->failed = true;
	}
	if (t != &many_no_tape)
		many_tape_put(m, t);
}

/* The caller takes the GIL to make dicts, with the cyclic collector
 * paused until it gives the GIL back.  The dicts are trees of new objects
 * with no cycle to find, and made a few thousand at a time they set off
 * collection after collection (a tenth of parse_many's CPU time,
 * bench/PYTHON.md).  No other thread runs Python while the GIL is held,
 * so none sees the pause; the allocations still count, and the first
 * one after it (the result's list, at the latest) runs the collection
 * they are due. */
/* Ctrl-C: Python's handler runs here, on the main thread, GIL held; its
 * exception is kept aside (a failed dict clears errors), the buffers not
 * begun are left (parse_mem_run) and no more dicts are made. */
static void many_check_signals(struct many *m)
{
	m->checked_ns = clock_now_ns();
	if (!atomic_load_explicit(&m->stop, memory_order_relaxed) && PyErr_CheckSignals() < 0) {
		PyErr_Fetch(&m->exc[0], &m->exc[1], &m->exc[2]);
		atomic_store_explicit(&m->stop, true, memory_order_relaxed);
	}
}

static void many_gil_take(struct many *m)
{
	PyEval_RestoreThread(m->ts);
	m->gc_was = PyGC_Disable();
	many_check_signals(m);
}

static void many_gil_give(struct many *m)
{
	if (m->gc_was)
		PyGC_Enable();
	m->ts = PyEval_SaveThread();
}

/* Once MANY_SIGNAL_CHECK_NS have passed since the last check: the GIL
 * taken and given back (held: given back and taken again), for Ctrl-C and
 * the process's other threads. */
static void many_gil_pass(struct many *m, bool held)
{
	if (clock_now_ns() - m->checked_ns < MANY_SIGNAL_CHECK_NS)
		return;
	if (held) {
		many_gil_give(m);
		many_gil_take(m);
	} else {
		many_gil_take(m);
		many_gil_give(m);
	}
}

/* The caller's dicts: every ready slot in order from `built`; with
 * `all`, waits for the others' slots until every dict is made.  Takes
 * the GIL only when there is a dict to make. */
static void many_drain(struct many *m, bool all)
{
	bool gil = false;
	while (m->built < m->n && !atomic_load_explicit(&m->stop, memory_order_relaxed)) {
		uint32_t seen = atomic_load_explicit(&m->seq, memory_order_seq_cst);
		if (!atomic_load_explicit(&m->slots[m->built], memory_order_acquire)) {
			if (!all)
				break;
			if (gil) {   /* the GIL is not kept while waiting */
				many_gil_give(m);
				gil = false;
			}
			/* another worker's message may take long: Ctrl-C is
			 * looked for meanwhile */
			futex_sleep_for(&m->seq, &m->waiters, seen, &m->waited, MANY_SIGNAL_CHECK_NS);
			many_gil_pass(m, false);
			continue;
		}
		if (!gil) {
			many_gil_take(m);
			gil = true;
		}
		many_build_one(m);
		/* other workers may fill slots as fast as dicts are made, and
		 * the GIL would be held for the whole batch */
		many_gil_pass(m, true);
	}
	if (gil)
		many_gil_give(m);
}

/* On the worker that parsed message i: its tape into slot i; on the
 * caller, then the dicts that are ready. */
static void many_item(void *ctx, size_t i, struct record *rec)
{
	struct many *m = ctx;
	atomic_fetch_add_explicit(&m->started, 1, memory_order_relaxed);
	struct emit_pytape *t = many_tape_get(m);
	if (t && emit_pytape_record(t, &m->o->emit, rec) < 0) {
		many_tape_put(m, t);
		t = NULL;
	}
	atomic_store_explicit(&m->slots[i], t ? t : &many_no_tape, memory_order_release);
	if (!pthread_equal(pthread_self(), m->caller)) {
		futex_notify(&m->seq, &m->waiters, 1);
		return;
	}
	/* every item's call began: nothing is left to parse, only dicts to
	 * make (an item claimed and not yet begun is left to the end) */
	if (atomic_load_explicit(&m->started, memory_order_relaxed) == m->n) {
		many_drain(m, true);
	} else if (many_ready_run(m, MANY_DRAIN_ITEMS)) {
		many_drain(m, false);
	} else {
		/* no dict to make for a while (the slot next in order is another
		 * worker's): the GIL taken anyway, for Ctrl-C */
		many_gil_pass(m, false);
	}
}

/* Parses n buffers into a new list (or the one dict when single). */
static PyObject *parse_views(Py_buffer *views, size_t n, unsigned threads, PyObject *kwargs,
                             bool single)
{
	struct ingest_options *o = options_from(kwargs, PY_PARSE);
	if (!o)
		return NULL;
	const void **bufs = PyMem_Calloc(n ? n : 1, sizeof(*bufs));
	size_t *lens = PyMem_Calloc(n ? n : 1, sizeof(*lens));
	PyObject **dicts = PyMem_Calloc(n ? n : 1, sizeof(*dicts));
	_Atomic(struct emit_pytape *) *slots = PyMem_Calloc(n ? n : 1, sizeof(*slots));
	PyObject *out = NULL;
	/* On the heap, as every array the pool's workers touch: a daemon
	 * thread that takes the GIL back while Python shuts down is ended
	 * there, in the middle of its batch, and the other workers go on
	 * with the batch (its stack would be gone; the heap is kept). */
	struct many *m = PyMem_Calloc(1, sizeof(*m));
	if (!bufs || !lens || !dicts || !slots || !m) {
		PyErr_NoMemory();
		goto done;
	}
	*m = (struct many){ .o = o, .n = n, .dicts = dicts, .slots = slots, .checked_ns = clock_now_ns(),
	                    .caller = pthread_self(), .free_lock = PTHREAD_MUTEX_INITIALIZER };
	for (size_t i = 0; i < n; i++) {
		bufs[i] = views[i].buf;
		lens[i] = (size_t)views[i].len;
	}
	m->ts = PyEval_SaveThread();
	int r = parse_mem_run(o, bufs, lens, n, threads, &m->stop, many_item, m);
	/* what the caller did not make: the slots of items that ended after
	 * its last one (all ready now) */
	many_gil_take(m);
	while (r == 0 && m->built < n && !m->exc[0])
		many_build_one(m);
	for (; m->built < n; m->built++) {   /* interrupted: the tapes left go */
		struct emit_pytape *t = atomic_load_explicit(&m->slots[m->built], memory_order_acquire);
		if (t && t != &many_no_tape)
			many_tape_put(m, t);
	}
	if (m->gc_was)
		PyGC_Enable();
	if (m->exc[0]) {
		PyErr_Restore(m->exc[0], m->exc[1], m->exc[2]);
		goto done;
	}
	if (r < 0 || m->failed) {
		PyErr_NoMemory();
		goto done;
	}
	if (single) {
		out = dicts[0];
		dicts[0] = NULL;
		goto done;
	}
	if (!(out = PyList_New((Py_ssize_t)n)))
		goto done;
	for (size_t i = 0; i < n; i++) {
		PyList_SET_ITEM(out, (Py_ssize_t)i, dicts[i]);
		dicts[i] = NULL;
	}
done:
	for (size_t i = 0; dicts && i < n; i++)
		Py_XDECREF(dicts[i]);
	if (m)
		many_free_tapes(m);
	PyMem_Free(m);
	PyMem_Free(slots);
	PyMem_Free(dicts);
	PyMem_Free(lens);
	PyMem_Free(bufs);
	ingest_options_free(o);
	return out;
}

PyDoc_STRVAR(parse_doc,
"parse(data, **options) -> dict\n\n"
"The record of one message held in memory (bytes, bytearray, memoryview),\n"
"as json.loads() of the line `ingest` writes for a file holding it, minus\n"
"what comes from the file system.  Malformed input is an error record (a\n"
"dict with 'error').  Options are the command's long names with _ for -\n"
"(fields=, no_text=, max_text=, headers=, parse=).");

static PyObject *py_parse(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	Py_buffer view;
	if (!PyArg_ParseTuple(args, "y*:parse", &view))
		return NULL;
	PyObject *d = parse_views(&view, 1, 1, kwargs, true);
	PyBuffer_Release(&view);
	return d;
}

PyDoc_STRVAR(parse_many_doc,
"parse_many(messages, threads=None, **options) -> list[dict]\n\n"
"parse() of each message, in order, on the process's worker pool with the\n"
"GIL released: one worker per 64 KiB of the batch, at most one per message\n"
"and at most `threads`; the calling thread is one of them.");

static PyObject *py_parse_many(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	PyObject *seq_in;
	if (!PyArg_ParseTuple(args, "O:parse_many", &seq_in))
		return NULL;
	unsigned threads = 0;
	PyObject *kw = kwargs ? PyDict_Copy(kwargs) : NULL;
	if (kwargs && !kw)
		return NULL;
	PyObject *t = kw ? PyDict_GetItemString(kw, "threads") : NULL;
	if (t && t != Py_None) {
		/* as scan()'s threads= takes it: its types (option_text), its
		 * rule (ingest_options_set: digits, 1..LIMIT_MAX_THREADS) */
		PyObject *text = option_text("threads", "threads", t);
		struct ingest_options *one = text ? ingest_options_new() : NULL;
		int r = !text ? -1 : !one ? -ENOMEM : ingest_options_set(one, "threads", PyBytes_AS_STRING(text));
		if (r == 0)
			threads = one->threads;
		else if (r == -ENOMEM)
			PyErr_NoMemory();
		else if (r == -EINVAL)
			PyErr_Format(PyExc_ValueError, "invalid value for 'threads': %R (1..%d)", t,
			             LIMIT_MAX_THREADS);
		Py_XDECREF(text);
		ingest_options_free(one);
		if (r) {
			Py_DECREF(kw);
			return NULL;
		}
	}
	if (kw && PyDict_GetItemString(kw, "threads") && PyDict_DelItemString(kw, "threads") < 0) {
		Py_DECREF(kw);
		return NULL;
	}
	/* bytes is a sequence too, of ints: a buffer of bytes is one message
	 * given bare; an object that has the slot but gives no such buffer
	 * (numpy's array of objects) is a sequence */
	Py_buffer probe;
	bool bare = PyUnicode_Check(seq_in);
	if (!bare && PyObject_CheckBuffer(seq_in)) {
		if (PyObject_GetBuffer(seq_in, &probe, PyBUF_SIMPLE) == 0) {
			PyBuffer_Release(&probe);
			bare = true;
		} else {
			PyErr_Clear();
		}
	}
	if (bare) {
		PyErr_Format(PyExc_TypeError, "parse_many takes a sequence of messages, not one %.100s"
		             " (parse() takes one)", Py_TYPE(seq_in)->tp_name);
		Py_XDECREF(kw);
		return NULL;
	}
	PyObject *seq = PySequence_Fast(seq_in, "parse_many takes a sequence of bytes");
	if (!seq) {
		Py_XDECREF(kw);
		return NULL;
	}
	size_t n = (size_t)PySequence_Fast_GET_SIZE(seq);
	Py_buffer *views = PyMem_Calloc(n ? n : 1, sizeof(*views));
	PyObject *out = NULL;
	size_t got = 0;
	if (!views) {
		PyErr_NoMemory();
		goto done;
	}
	for (; got < n; got++)
		if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)got), &views[got],
		                       PyBUF_SIMPLE) < 0)
			goto done;
	out = parse_views(views, n, threads, kw, false);
done:
	for (size_t i = 0; i < got; i++)
		PyBuffer_Release(&views[i]);
	PyMem_Free(views);
	Py_DECREF(seq);
	Py_XDECREF(kw);
	return out;
}

/* ---- a run on its own thread: scan, index -------------------------------- */

/* scan()'s and index()'s ingest_run(), on a thread of its own so that the
 * caller can wait with the GIL released and still see Ctrl-C.  The run's
 * thread writes result and rep, then sets done, under lock; the caller's
 * side reads them once done is set (or after joining the thread). */
struct run_call {
	struct ingest_options *o;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* done set (scan's: also a batch wanted or given) */
	bool done;                    /* ingest_run() returned */
	int result;
	struct ingest_report *rep;
};

/* The run's thread: runs it, then, under lock, gives its result and
 * report and sets done for the waiting side. */
static void *run_to_end(void *arg)
{
	struct run_call *c = arg;
	struct ingest_report *rep = NULL;
	int r = ingest_run(c->o, &rep);
	pthread_mutex_lock(&c->lock);
	c->result = r;
	c->rep = rep;
	c->done = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Starts the run's thread: 0, or pthread_create's error.  The run's
 * interrupt is cleared here, not as the run begins on its thread: one
 * before then (a scan dropped or interrupted, scan_stop; a Ctrl-C during
 * index_wait) stops it, where the run would forget it and read
 * everything. */
static int run_start(struct run_call *c)
{
	ingest_interrupt_clear();
	c->o->interrupt_kept = true;
	return pthread_create(&c->thread, NULL, run_to_end, c);
}

/* ---- scan ----------------------------------------------------------------- */

/* A record on its way to __next__: this header, then its tape's items
 * (emit/pydict.h), in the batch's output until __next__ has made its dict. */
struct scan_rec {
	uint64_t len;         /* of the items that follow */
	uint64_t thread_at;   /* the tape's thread_at */
};

struct scan {
	PyObject_HEAD
	/* its lock and cond guard the batch's hand-over below too */
	struct run_call run;
	bool started, joined;
	unsigned forks;               /* scan_forks when made: a child of fork() has more */
	bool in_next;                 /* a thread is in __next__ (the GIL's) */
	/* The tapes of a batch, copied by the sink, and __next__'s offset of
	 * the next record in them.  The sink runs on the parse thread
	 * (docs/ARCHITECTURE.md, "The pipeline and its threads"), which
	 * parses the next batches once it returns: it copies, instead of
	 * lending the batch until its dicts are made, and does not wait for
	 * __next__ to wake up either. */
	struct dynbuf batch;
	size_t pos, have;             /* __next__'s: its offset, and the length it took */
	bool want;                    /* __next__ yielded all of batch: the sink's to fill */
	bool given;                   /* the sink filled it: __next__'s to take */
	bool stopping;                /* the consumer is gone or interrupted */
};

/* The worker's visitor: the record's tape, after its header, written
 * into the batch's output.  No GIL: the dict is made by __next__. */
static int scan_visit(void *ctx, const struct record *rec, struct dynbuf *out)
{
	struct scan *s = ctx;
	if (emit_change_dropped(&s->run.o->emit, &rec->io))
		return 0;   /* as the command leaves it out */
	struct emit_pytape *t = thread_tape();
	size_t at = out->len;
	struct scan_rec h = { 0, EMIT_PYTAPE_NO_THREAD };
	if (!t || dynbuf_append(out, &h, sizeof(h)) < 0)
		return -ENOMEM;
	t->astral_utf8 = true;   /* it waits in the batch: the smaller form */
	int r = emit_pytape_append(t, out, &s->run.o->emit, rec);
	if (r < 0) {
		out->len = at;
		return r;
	}
	h.len = out->len - at - sizeof(h);
	h.thread_at = t->thread_at;
	memcpy(out->p + at, &h, sizeof(h));
	return 0;
}

/* The parse stage's thread: the record at obj joins a thread met earlier
 * in the run, as the command's line does (README, "Threads"): its
 * thread_id's digits are rewritten on the tape. */
static void scan_thread(void *ctx, char *obj, uint64_t thread)
{
	(void)ctx;
	struct scan_rec h;
	memcpy(&h, obj, sizeof(h));
	if (h.thread_at == EMIT_PYTAPE_NO_THREAD)
		return;
	char hex[17];
	record_id_hex(thread, hex);
	memcpy(obj + sizeof(h) + h.thread_at, hex, 16);
}

/* The writer's sink: copies a batch's tapes, in order, for __next__ once
 * it wants them (or returns when it stopped): one batch's copy waits for
 * Python.  0, or -ENOMEM (the run then fails: "the sink failed"). */
static int scan_sink(void *ctx, const char *records, size_t len, size_t count)
{
	struct scan *s = ctx;
	(void)count;
	if (!len)
		return 0;
	pthread_mutex_lock(&s->run.lock);
	while (!s->want && !s->stopping)
		pthread_cond_wait(&s->run.cond, &s->run.lock);
	bool take = !s->stopping;
	pthread_mutex_unlock(&s->run.lock);
	if (!take)
		return 0;
	/* __next__ leaves the batch alone until it is given */
	dynbuf_reset(&s->batch);
	if (dynbuf_append(&s->batch, records, len) < 0)
		return -ENOMEM;
	pthread_mutex_lock(&s->run.lock);
	s->want = false;
	s->given = true;
	pthread_cond_broadcast(&s->run.cond);
	pthread_mutex_unlock(&s->run.lock);
	return 0;
}

/* Before the run saves a state: the consumer has taken every batch the
 * sink copied (it wants the next one), or -EPIPE when it went away first
 * (the run then saves what a stopped run saves: the records it copied
 * are read again by the next run, never taken for delivered). */
static int scan_taken(void *ctx)
{
	struct scan *s = ctx;
	pthread_mutex_lock(&s->run.lock);
	while ((s->given || !s->want) && !s->stopping)
		pthread_cond_wait(&s->run.cond, &s->run.lock);
	int r = s->stopping ? -EPIPE : 0;
	pthread_mutex_unlock(&s->run.lock);
	return r;
}

/* Children of fork() this process is (a fork handler counts them): a scan
 * made before the fork has its run's thread in the parent.  Compared per
 * record, so not getpid(), a syscall each. */
static atomic_uint scan_forks;

static void scan_forked(void)
{
	atomic_fetch_add(&scan_forks, 1);
}

static bool scan_in_child(const struct scan *s)
{
	return atomic_load_explicit(&scan_forks, memory_order_relaxed) != s->forks;
}

/* How long __next__ waits for a batch before it looks for Ctrl-C. */
#define SCAN_SIGNAL_CHECK_NS (100 * 1000 * 1000)

/* Waits on cond for ns at most, lock held. */
static void cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *lock, long ns)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += ns;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec += t.tv_nsec / 1000000000;
		t.tv_nsec %= 1000000000;
	}
	pthread_cond_timedwait(cond, lock, &t);
}

static PyObject *raise_failure(int r, const char *why, PyObject *name, bool value_error);

/* The scan whose run this process's ingest_run() is, or NULL (the GIL's):
 * one at a time (libingest's rule), and a second scan() is refused at
 * once, so that dropping it can never interrupt the first one's run. */
static struct scan *scan_running;

/* Whether an index() call's run is going on (the GIL's): scan() and a
 * second index() are refused at once, before either clears the interrupt
 * a Ctrl-C set for that run. */
static bool index_running;

/* Whether a scan's run is going on (GIL held). */
static bool scan_busy(void)
{
	if (!scan_running || scan_in_child(scan_running))
		return false;
	pthread_mutex_lock(&scan_running->run.lock);
	bool done = scan_running->run.done;
	pthread_mutex_unlock(&scan_running->run.lock);
	return !done;
}

/* Stops the run, waits for it, drops what was not taken.  GIL held on
 * entry; released while waiting. */
static void scan_stop(struct scan *s, bool interrupt)
{
	if (!s->started || s->joined)
		return;
	if (scan_in_child(s)) {
		/* a child of fork(): the run's thread is the parent's */
		if (scan_running == s)
			scan_running = NULL;
		s->joined = true;
		return;
	}
	pthread_mutex_lock(&s->run.lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->run.cond);
	bool done = s->run.done;
	pthread_mutex_unlock(&s->run.lock);
	/* kept by a run whose thread is only starting (run_start) */
	if (interrupt && !done)
		ingest_interrupt();
	Py_BEGIN_ALLOW_THREADS
	pthread_join(s->run.thread, NULL);
	Py_END_ALLOW_THREADS
	/* only now: while the GIL was released for the join, a scan() of
	 * another thread must be refused as one running, which it still was
	 * (ingest_run's own refusal would come later, bare) */
	if (scan_running == s)
		scan_running = NULL;
	s->joined = true;
	dynbuf_reset(&s->batch);
	s->pos = s->have = 0;
}

static void scan_dealloc(PyObject *self)
{
	struct scan *s = (struct scan *)self;
	if (scan_running == s && !s->started)
		scan_running = NULL;   /* one whose thread never started */
	scan_stop(s, true);
	ingest_report_free(s->run.rep);
	ingest_options_free(s->run.o);
	dynbuf_release(&s->batch);
	/* in a child of fork(), the parent's threads may have been waiting on
	 * them: destroying would wait for good */
	if (!scan_in_child(s)) {
		pthread_cond_destroy(&s->run.cond);
		pthread_mutex_destroy(&s->run.lock);
	}
	Py_TYPE(self)->tp_free(self);
}

/* The dict of the next record of the batch given, or NULL (an exception
 * set) without memory. */
static PyObject *scan_build(struct scan *s)
{
	struct scan_rec h;
	memcpy(&h, s->batch.p + s->pos, sizeof(h));
	PyObject *d = emit_pytape_build_bytes(s->batch.p + s->pos + sizeof(h));
	s->pos += sizeof(h) + h.len;
	return d;
}

static PyObject *scan_next_locked(struct scan *s);

static PyObject *scan_next(PyObject *self)
{
	struct scan *s = (struct scan *)self;
	if (s->joined)
		return NULL;
	if (scan_in_child(s)) {
		scan_stop(s, false);
		PyErr_SetString(PyExc_RuntimeError, "a scan() cannot go on in a child of fork()");
		return NULL;
	}
	/* as a generator: one thread at a time in it */
	if (s->in_next) {
		PyErr_SetString(PyExc_ValueError, "scan() iterator already executing");
		return NULL;
	}
	s->in_next = true;
	PyObject *d = scan_next_locked(s);
	s->in_next = false;
	return d;
}

static PyObject *scan_next_locked(struct scan *s)
{
	for (;;) {
		if (s->pos < s->have)
			return scan_build(s);
		pthread_mutex_lock(&s->run.lock);
		if (s->given) {
			s->given = false;
			s->pos = 0;
			s->have = s->batch.len;
			pthread_mutex_unlock(&s->run.lock);
			continue;
		}
		/* all of it yielded: the sink's to fill */
		if (!s->want) {
			s->want = true;
			pthread_cond_broadcast(&s->run.cond);
		}
		bool given = false;
		bool done = s->run.done;
		if (!done) {
			/* the lock is let go before the GIL is taken back: a
			 * thread holding the GIL may be waiting for it */
			Py_BEGIN_ALLOW_THREADS
			cond_wait_ns(&s->run.cond, &s->run.lock, SCAN_SIGNAL_CHECK_NS);
			given = s->given;
			pthread_mutex_unlock(&s->run.lock);
			Py_END_ALLOW_THREADS
		} else {
			pthread_mutex_unlock(&s->run.lock);
		}
		if (given)
			continue;
		if (done)
			break;
		if (PyErr_CheckSignals() < 0) {
			scan_stop(s, true);
			return NULL;
		}
	}
	scan_stop(s, false);
	if (s->run.result < 0)
		return raise_failure(s->run.result, s->run.rep ? ingest_report_error(s->run.rep) : NULL, NULL,
		                     false);
	return NULL;
}

/* close(): what dropping the iterator does, said when the caller wants it
 * (a loop left with break, a `with` block's end) rather than when the
 * last reference goes, which a traceback or a cycle may keep. */
static PyObject *scan_close(PyObject *self, PyObject *unused)
{
	(void)unused;
	struct scan *s = (struct scan *)self;
	if (s->in_next) {
		PyErr_SetString(PyExc_ValueError, "scan() iterator already executing");
		return NULL;
	}
	if (scan_running == s && !s->started)
		scan_running = NULL;   /* one whose thread never started */
	scan_stop(s, true);
	s->joined = true;   /* next() ends the iteration */
	Py_RETURN_NONE;
}

static PyObject *scan_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	return Py_NewRef(self);
}

static PyObject *scan_exit(PyObject *self, PyObject *args)
{
	(void)args;
	PyObject *r = scan_close(self, NULL);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static PyMethodDef scan_methods[] = {
	{ "close", scan_close, METH_NOARGS,
	  "Stops the run, as dropping the iterator does: the records not taken are not yielded,\n"
	  "and a state= keeps them for the next run.  next() then ends the iteration." },
	{ "__enter__", scan_enter, METH_NOARGS, NULL },
	{ "__exit__", scan_exit, METH_VARARGS, "close()" },
	{ NULL, NULL, 0, NULL },
};

PyDoc_STRVAR(scan_doc,
"scan(*paths, **options) -> iterator of dict\n\n"
"A whole run in-process (walk, io_uring reader, pool, parser), one dict per\n"
"record, in the command's order, with bounded memory.  paths are str or\n"
"bytes (os.fsencode's form for names that are not UTF-8).  Options are the\n"
"command's long names with _ for - (state=, shard='K/N', files_from=,\n"
"null=, threads=, max_inflight=...); batch_bytes= is " SCAN_BATCH_BYTES " unless given.\n"
"Ctrl-C stops the run: every dict already yielded is a whole record.");

static PyTypeObject scan_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "ingest.Scan",
	.tp_basicsize = sizeof(struct scan),
	.tp_dealloc = scan_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The iterator scan() returns.",
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = scan_next,
	.tp_methods = scan_methods,
};

/* OSError(errno, why[, name]) or ValueError(why) for a run's or a
 * search's failure; FileNotFoundError and its kin by errno, as open()'s. */
static PyObject *raise_failure(int r, const char *why, PyObject *name, bool value_error)
{
	if (value_error) {
		PyErr_SetString(PyExc_ValueError, why ? why : strerror(-r));
		return NULL;
	}
	PyObject *v = name ? Py_BuildValue("(isO)", -r, why ? why : strerror(-r), name)
	                   : Py_BuildValue("(is)", -r, why ? why : strerror(-r));
	if (v) {
		PyErr_SetObject(PyExc_OSError, v);
		Py_DECREF(v);
	}
	return NULL;
}

/* Adds args[first..] to o as the run's paths (str, bytes or path-like);
 * none and no files_from= is refused, as the command refuses it (a run
 * of nothing is a mistake), what naming the call.  0, or -1 with the
 * Python error set. */
static int options_add_paths(struct ingest_options *o, PyObject *args, Py_ssize_t first, const char *what)
{
	for (Py_ssize_t i = first; i < PyTuple_GET_SIZE(args); i++) {
		PyObject *b = NULL;
		if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(args, i), &b))
			return -1;
		int r = ingest_options_add_path(o, PyBytes_AS_STRING(b));
		Py_DECREF(b);
		if (r < 0) {
			PyErr_NoMemory();
			return -1;
		}
	}
	char list[2];
	if (PyTuple_GET_SIZE(args) == first && ingest_options_get(o, "files-from", list, sizeof(list)) == 0) {
		PyErr_Format(PyExc_TypeError, "%s needs a path (or files_from=)", what);
		return -1;
	}
	return 0;
}

static PyObject *py_scan(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	if (scan_busy() || index_running)
		return raise_failure(-EBUSY, index_running
		                     ? "an index() is running in this process (one run at a time)"
		                     : "another scan() is running in this process"
		                       " (one at a time: exhaust or drop it first)", NULL, false);
	struct scan *s = PyObject_New(struct scan, &scan_type);
	if (!s)
		return NULL;
	s->run.o = NULL;
	s->started = s->joined = s->stopping = s->run.done = false;
	dynbuf_init(&s->batch, 0);
	s->pos = s->have = 0;
	s->want = s->given = false;
	s->run.result = 0;
	s->run.rep = NULL;
	s->forks = atomic_load(&scan_forks);
	s->in_next = false;
	pthread_mutex_init(&s->run.lock, NULL);
	pthread_cond_init(&s->run.cond, NULL);
	/* held from here: reading the options and paths may run Python code
	 * (__fspath__) that lets another thread call scan() */
	scan_running = s;
	struct ingest_options *o = options_from(kwargs, PY_SCAN);
	if (!o) {
		Py_DECREF(s);
		return NULL;
	}
	s->run.o = o;
	if (options_add_paths(o, args, 0, "scan()") < 0) {
		Py_DECREF(s);
		return NULL;
	}
	o->visit = scan_visit;
	o->visit_ctx = s;
	o->visit_thread = scan_thread;
	ingest_options_set_sink(o, scan_sink, s);
	o->sink_taken = scan_taken;
	int r = run_start(&s->run);
	if (r) {
		Py_DECREF(s);
		errno = r;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	s->started = true;
	return (PyObject *)s;
}

/* ---- index, search -------------------------------------------------------- */

/* Waits for the run, the GIL released, looking for signals every
 * SCAN_SIGNAL_CHECK_NS: a KeyboardInterrupt (or any exception a handler
 * raises) interrupts the run, which commits what it parsed, and is
 * raised once it has returned.  false when an exception is set. */
static bool index_wait(struct run_call *c)
{
	bool raised = false;
	for (;;) {
		bool done;
		Py_BEGIN_ALLOW_THREADS
		pthread_mutex_lock(&c->lock);
		if (!c->done)
			cond_wait_ns(&c->cond, &c->lock, SCAN_SIGNAL_CHECK_NS);
		done = c->done;
		pthread_mutex_unlock(&c->lock);
		Py_END_ALLOW_THREADS
		if (done)
			return !raised;
		if (!raised && PyErr_CheckSignals() < 0) {
			raised = true;
			ingest_interrupt();
		}
	}
}

/* The report's statistics as a dict (json.loads of `--stats=json`). */
static PyObject *index_stats(const struct ingest_report *rep)
{
	char *text = NULL;
	size_t len = 0;
	if (ingest_report_format(rep, 1, &text, &len) < 0)
		return PyErr_NoMemory();
	PyObject *json = PyImport_ImportModule("json");
	PyObject *d = json ? PyObject_CallMethod(json, "loads", "s#", text, (Py_ssize_t)len) : NULL;
	Py_XDECREF(json);
	free(text);
	return d;
}

PyDoc_STRVAR(index_doc,
"index(db, *paths, **options) -> dict\n\n"
"Writes (creates or updates) the SQLite index db from paths, as\n"
"`ingest --index=db PATH...` does (README, \"The index\"), and returns the\n"
"run's statistics (json.loads of --stats=json).  db and paths are str,\n"
"bytes or path-like.  Options are the command's long names with _ for -.\n"
"A refused database or options raise ValueError; a failed run OSError.\n"
"Ctrl-C stops the run, which commits what it parsed, and is raised.");

/* index() once the call is the process's run (index_running). */
static PyObject *index_call(PyObject *args, PyObject *kwargs)
{
	struct ingest_options *o = options_from(kwargs, PY_INDEX);
	if (!o)
		return NULL;
	int r = 0;
	PyObject *b = NULL;
	if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(args, 0), &b)) {
		r = -1;
	} else {
		r = ingest_options_set(o, "index", PyBytes_AS_STRING(b));
		Py_DECREF(b);
		if (r == -ENOMEM)
			PyErr_NoMemory();
		else if (r < 0)
			PyErr_Format(PyExc_ValueError, "invalid database name %R", PyTuple_GET_ITEM(args, 0));
	}
	if (r == 0)
		r = options_add_paths(o, args, 1, "index()");
	/* On the heap, as parse_views' arrays: a daemon thread that takes
	 * the GIL back while Python shuts down is ended there, and the run's
	 * thread, which goes on, would write its result to a stack gone. */
	struct run_call *c = NULL;
	if (r == 0 && !(c = PyMem_Calloc(1, sizeof(*c)))) {
		PyErr_NoMemory();
		r = -1;
	}
	if (r == 0) {
		c->o = o;
		pthread_mutex_init(&c->lock, NULL);
		pthread_cond_init(&c->cond, NULL);
		int e = run_start(c);
		if (e) {
			errno = e;
			PyErr_SetFromErrno(PyExc_OSError);
			r = -1;
		} else {
			bool ok = index_wait(c);
			Py_BEGIN_ALLOW_THREADS
			pthread_join(c->thread, NULL);
			Py_END_ALLOW_THREADS
			r = ok ? 0 : -1;
		}
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
	}
	PyObject *out = NULL;
	if (r == 0 && c->result < 0)
		/* the reason names the file at fault (the database, a list) */
		raise_failure(c->result, ingest_report_error(c->rep), NULL,
		              c->result == -EINVAL || ingest_report_usage_error(c->rep));
	else if (r == 0)
		out = index_stats(c->rep);
	if (c)
		ingest_report_free(c->rep);
	PyMem_Free(c);
	ingest_options_free(o);
	return out;
}

static PyObject *py_index(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	if (PyTuple_GET_SIZE(args) < 1) {
		PyErr_SetString(PyExc_TypeError, "index() needs a database");
		return NULL;
	}
	/* refused before anything else (reading the paths may run Python
	 * code, __fspath__, that lets another thread call): a call refused
	 * must not clear the interrupt a Ctrl-C set for the run going on */
	if (index_running || scan_busy())
		return raise_failure(-EBUSY, "another run (scan() or index()) is going on in this process"
		                     " (one at a time)", NULL, false);
	index_running = true;
	PyObject *out = index_call(args, kwargs);
	index_running = false;
	return out;
}

PyDoc_STRVAR(search_doc,
"search(db, query, *, limit=20, sort='relevance') -> list of dict\n\n"
"The hits of query in the index db, as `ingest search` gives them (README,\n"
"\"Searching\": FTS5 syntax plus from:, to:, subject:, date:, tag:, folder:,\n"
"thread:, id:, has:attachment), one dict a hit (json.loads of its line),\n"
"best first, or in date order with sort='newest-first' or 'oldest-first'.\n"
"A query or database refused raises ValueError; one that cannot be\n"
"opened OSError (FileNotFoundError...).");

/* What ingest_search() writes for (db, query, flags, limit), as bytes,
 * read back from a file in memory (a search writes --limit lines at most,
 * a count one); NULL with the exception set: a ValueError for a query or
 * database refused, an OSError for one that cannot be opened. */
static PyObject *search_output(PyObject *db, const char *query, int flags, Py_ssize_t limit)
{
	int fd = memfd_create("ingest-search", MFD_CLOEXEC);
	if (fd < 0)
		return PyErr_SetFromErrno(PyExc_OSError);
	char *why = NULL;
	int r;
	Py_BEGIN_ALLOW_THREADS
	r = ingest_search(PyBytes_AS_STRING(db), query, flags, (unsigned long)limit, fd, &why);
	Py_END_ALLOW_THREADS
	PyObject *text = NULL;
	if (r < 0) {
		PyObject *name = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(db));
		raise_failure(r, why, name, r == -EINVAL);
		Py_XDECREF(name);
	}
	off_t size = r < 0 ? -1 : lseek(fd, 0, SEEK_END);
	if (r >= 0 && size < 0)
		PyErr_SetFromErrno(PyExc_OSError);
	else if (r >= 0)
		text = PyBytes_FromStringAndSize(NULL, size);
	ssize_t got = text ? sys_pread_full(fd, PyBytes_AS_STRING(text), (size_t)size, 0) : 0;
	if (text && got != size) {
		errno = got < 0 ? (int)-got : EIO;
		PyErr_SetFromErrno(PyExc_OSError);
		Py_CLEAR(text);
	}
	close(fd);
	free(why);
	return text;
}

/* The search's lines as dicts (json.loads of each). */
static PyObject *search_hits(PyObject *text)
{
	PyObject *json = PyImport_ImportModule("json");
	PyObject *loads = json ? PyObject_GetAttrString(json, "loads") : NULL;
	PyObject *hits = loads ? PyList_New(0) : NULL;
	const char *p = PyBytes_AS_STRING(text), *end = p + PyBytes_GET_SIZE(text);
	while (hits && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		nl = nl ? nl : end;
		PyObject *line = PyUnicode_DecodeUTF8(p, nl - p, "strict");
		PyObject *hit = line ? PyObject_CallOneArg(loads, line) : NULL;
		Py_XDECREF(line);
		if (!hit || PyList_Append(hits, hit) < 0)
			Py_CLEAR(hits);
		Py_XDECREF(hit);
		p = nl + 1;
	}
	Py_XDECREF(loads);
	Py_XDECREF(json);
	return hits;
}

static PyObject *py_search(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	/* PyArg_ParseTupleAndKeywords takes char *[] though it writes none */
	static char db_kw[] = "db", query_kw[] = "query", limit_kw[] = "limit", sort_kw[] = "sort";
	static char *kw[] = { db_kw, query_kw, limit_kw, sort_kw, NULL };
	PyObject *db = NULL;
	const char *query, *sort = "relevance";
	Py_ssize_t limit = 20;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&s|$ns:search", kw, PyUnicode_FSConverter, &db,
	                                 &query, &limit, &sort))
		return NULL;
	int flags = search_order_flag(sort);
	PyObject *text = NULL;
	if (flags < 0)
		PyErr_Format(PyExc_ValueError, "sort is 'relevance', 'newest-first' or 'oldest-first',"
		             " not '%.100s'", sort);
	else if (limit < 1)
		PyErr_Format(PyExc_ValueError, "limit is 1 or more, not %zd", limit);
	else
		text = search_output(db, query, flags, limit);
	PyObject *hits = text ? search_hits(text) : NULL;
	Py_XDECREF(text);
	Py_DECREF(db);
	return hits;
}

PyDoc_STRVAR(count_doc,
"count(db, query) -> int\n\n"
"The number of messages query matches in the index db (`ingest search\n"
"--count`); refusals as search()'s.");

static PyObject *py_count(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *db = NULL;
	const char *query;
	if (!PyArg_ParseTuple(args, "O&s:count", PyUnicode_FSConverter, &db, &query))
		return NULL;
	/* The line read back, not ingest_search()'s return: that stops at
	 * INT_MAX, and a Python int need not.  The line is written to an fd
	 * either way, so the return would save only its reading. */
	PyObject *text = search_output(db, query, INGEST_SEARCH_COUNT, 1);
	PyObject *n = text ? PyLong_FromString(PyBytes_AS_STRING(text), NULL, 10) : NULL;
	Py_XDECREF(text);
	Py_DECREF(db);
	return n;
}

static PyMethodDef methods[] = {
	{ "parse", (PyCFunction)(void (*)(void))py_parse, METH_VARARGS | METH_KEYWORDS, parse_doc },
	{ "parse_many", (PyCFunction)(void (*)(void))py_parse_many, METH_VARARGS | METH_KEYWORDS,
	  parse_many_doc },
	{ "scan", (PyCFunction)(void (*)(void))py_scan, METH_VARARGS | METH_KEYWORDS, scan_doc },
	{ "index", (PyCFunction)(void (*)(void))py_index, METH_VARARGS | METH_KEYWORDS, index_doc },
	{ "search", (PyCFunction)(void (*)(void))py_search, METH_VARARGS | METH_KEYWORDS, search_doc },
	{ "count", py_count, METH_VARARGS, count_doc },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "ingest",
	.m_doc = "Mail to structured records, in-process: parse, parse_many, scan; an index:"
	         " index, search, count.",
	.m_size = -1,
	.m_methods = methods,
};

PyMODINIT_FUNC PyInit_ingest(void);

PyMODINIT_FUNC PyInit_ingest(void)
{
	if (emit_pydict_init() < 0 || PyType_Ready(&scan_type) < 0)
		return NULL;
	pthread_atfork(NULL, NULL, scan_forked);
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	if (PyModule_AddStringConstant(m, "__version__", ingest_version()) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
