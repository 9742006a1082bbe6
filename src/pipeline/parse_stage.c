/* SPDX-License-Identifier: MIT */
/* The parse stage: see parse_stage.h.
 *
 * One pool run per group of batches.  A group starts with the next batch
 * (waiting for it if need be) and takes every batch already queued behind
 * it, without waiting: one post, one sleep and at most one completion wait
 * of the pool per group rather than per batch, and a batch of one 768 KiB
 * message gets the workers its group's bytes call for rather than one.  A
 * batch that is not there yet is never waited for, so grouping adds no
 * syscall.  (Grouping only while the byte gate would have left workers
 * idle, as before, made a pool run per batch: 2.6 futex a batch of the 3.0
 * at 10,000 realistic messages.)  bench/parse_mem.c groups as this does.  Records keep their order: items are numbered across the
 * group in batch order, and the batches are written in that order.
 *
 * Which inputs are split as mbox archives is mbox_never_split()'s and
 * mbox_is_separator()'s rule (README, "mbox archives"). */
#include "pipeline/parse_stage.h"
#include "pipeline/writer.h"
#include "pipeline/threads.h"
#include "core/clock.h"
#include "core/dynbuf.h"
#include "core/hugepage.h"
#include "core/sys.h"
#include "core/xalloc.h"
#include "emit/emit.h"
#include "io/state.h"
#include "mail/mail.h"
#include "mail/mbox.h"
#include "sched/batch.h"
#include "sched/futex_wait.h"
#include "sched/pool.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#ifndef PARSE_STAGE_RUN
#define PARSE_STAGE_RUN 2
#endif

/* How long the reader, having parsed a run's last items, polls for the
 * batches that run gives back before it sleeps: about one item and the
 * group's writes. */
#ifndef PARSE_STAGE_HELP_SPIN_NS
#define PARSE_STAGE_HELP_SPIN_NS 30000
#endif

void parse_stage_message(struct mail_ctx *mctx, const struct mail_options *mo, struct record *rec,
                         const uint8_t *data, size_t len, struct mail_message *msg)
{
	int r = mail_parse(mctx, mo, data, len, msg);
	if (r < 0) {
		rec->io.reason = RECORD_INTERNAL;
		rec->io.err = -r;
		rec->io.message = "parser scratch limit reached";
		return;
	}
	rec->mail = msg;
	if (!msg->is_mail) {
		rec->io.reason = RECORD_NOT_MAIL;
		rec->io.message = "not a mail message";
	}
}

int parse_stage_emit(const struct emit_options *eo, record_visit_fn *visit, void *visit_ctx,
                     struct record *rec, struct dynbuf *out)
{
	int r = visit ? visit(visit_ctx, rec, out) : emit_record(eo, rec, out);
	if (r < 0) {
		/* A record too large to format still gets a record. */
		rec->mail = NULL;
		rec->io.reason = RECORD_INTERNAL;
		rec->io.err = ENOMEM;
		rec->io.message = "record could not be formatted";
		r = visit ? visit(visit_ctx, rec, out) : emit_record(eo, rec, out);
	}
	return r;
}

/* Parses one message and formats its record into out, its thread note
 * (if any) into notes, counted in it's out_records and, an error record,
 * its out_errors (the report's counts, --strict).  tell: the item's io
 * takes the record's reason when it is an error found here (not mail, too
 * large in an archive, not formattable) and the item had none (the
 * report's line for it). */
static void parse_record(struct parse_stage *s, unsigned w, struct record rec, const uint8_t *data,
                         size_t len, struct dynbuf *out, struct dynbuf *notes, struct batch_item *it,
                         struct state_entry *state_entry, bool tell)
{
	size_t start = out->len;
	it->out_records++;
	if (state_entry && rec.io.reason == RECORD_IO)
		state_mark_unread(state_entry);
	if (state_entry && (rec.io.notes & RECORD_CHANGED_WHILE_READ))
		state_mark_reread(state_entry);
	struct mail_message msg;
	if (s->parse && rec.io.reason == RECORD_NONE && data) {
		parse_stage_message(s->mctx[w], s->mail, &rec, data, len, &msg);
	}
	int r = parse_stage_emit(s->emit, s->visit, s->visit_ctx, &rec, out);
	enum record_reason why = emit_record_reason(&rec);
	if (state_entry && !rec.io.in_mbox && why != RECORD_NONE)
		state_mark_no_document(state_entry);
	if (why != RECORD_NONE)
		it->out_errors[why < RECORD__COUNT ? why : RECORD_INTERNAL]++;
	if (tell && it->io.reason == RECORD_NONE && why != RECORD_NONE) {
		it->io.reason = why;
		it->io.err = rec.io.err;
		it->io.message = rec.io.message;
	}
	if (r < 0) {
		if (s->fail)
			s->fail(s->fail_ctx, r, "cannot format a record", NULL);
		return;
	}
	if (s->thread_notes && rec.mail && rec.mail->is_mail && notes) {
		/* out of memory: the record keeps its References root's thread */
		if (s->visit)
			(void)thread_note_add_at(notes, start, rec.mail, emit_record_thread_id(&rec));
		else
			(void)thread_note_add(notes, out, start, rec.mail);
	}
}

struct parse_vanished {
	struct parse_stage *s;
	unsigned w;
	struct record rec;
	struct dynbuf *out;
	struct batch_item *it;
};

/* A message of the archive's last run that this run did not find: its
 * document goes (README, "Incremental runs"). */
static int parse_vanished(void *ctx, uint64_t off)
{
	struct parse_vanished *v = ctx;
	struct record rec = v->rec;
	rec.io.kind = RECORD_DELETED;
	rec.io.offset = off;
	rec.io.length = 0;
	parse_record(v->s, v->w, rec, NULL, 0, v->out, NULL, v->it, NULL, false);
	return 0;
}

/* After an input read whole: the messages its last run found at offsets
 * where none starts now.  An archive split again loses those; a file that
 * was an archive and is none now (emptied, overwritten) loses them all. */
static void parse_archive_vanished(struct parse_stage *s, unsigned w, struct record rec,
                                   struct batch_item *it, struct dynbuf *out)
{
	rec.io.in_mbox = true;
	struct parse_vanished v = { s, w, rec, out, it };
	state_each_vanished(it->state, parse_vanished, &v);
}

/* Before an archive's first message: what the file's own record was in
 * the last run (one message, or an error record), under the file's id,
 * which none of the messages' ids replaces, goes; the formats that never
 * made a document of it drop the deletion (emit_change_dropped).  The
 * flags that said so are the file's, not its messages': cleared in rec. */
static void parse_file_record_gone(struct parse_stage *s, unsigned w, struct record *rec,
                                   struct batch_item *it, struct dynbuf *out)
{
	if (!rec->io.known && !rec->io.error_document)
		return;
	struct record gone = { .io = rec->io };
	gone.io.kind = RECORD_DELETED;
	gone.io.in_mbox = false;
	gone.io.offset = gone.io.length = 0;
	gone.io.reason = RECORD_NONE;
	gone.io.err = 0;
	gone.io.message = NULL;
	parse_record(s, w, gone, NULL, 0, out, NULL, it, NULL, false);
	rec->io.known = rec->io.error_document = false;
}

static bool one_message_file(const struct record_io *io)
{
	const char *p = io->path.n ? io->path.p : io->root.p;
	size_t n = io->path.n ? io->path.n : io->root.n;
	return mbox_never_split(io->maildir, p, n);
}

/* Turns one input into its records in the worker's output buffer: one,
 * or one per message of an mbox read whole. */
static void parse_item(void *ctx, size_t i, unsigned w)
{
	struct parse_stage *s = ctx;
	unsigned g = s->group_n - 1;
	while (g && i < s->group_first[g])
		g--;
	struct batch *b = s->group[g];
	i -= s->group_first[g];
	struct batch_item *it = &b->items[i];
	struct dynbuf *out = &b->out[w];
	struct dynbuf *notes = &b->notes[w];
	size_t off = out->len, notes_off = notes->len;
	it->out_records = 0;
	memset(it->out_errors, 0, sizeof(it->out_errors));
	/* The batch owns its bytes: unquoting ">From " in place is ours to do. */
	uint8_t *data = (uint8_t *)(uintptr_t)it->data;
	struct record rec = { .io = it->io, .mail = NULL };
	if (it->no_output) {
		/* a streamed file: its messages are records of later batches */
	} else if (rec.io.in_mbox && rec.io.kind == RECORD_MESSAGE) {
		/* a streamed archive's message, read or too large to read (no
		 * data): the first carries what the file's record was */
		parse_file_record_gone(s, w, &rec, it, out);
		/* a message of the last run at this offset whose record is an
		 * error now: its document goes (emit_es_error); one too large
		 * to read goes as a vanished one, its offset not kept
		 * (stream_too_large) */
		rec.io.known = rec.io.reason != RECORD_TOO_LARGE &&
		               state_had_message(it->archive_state, rec.io.offset);
		parse_record(s, w, rec, data, data ? mbox_unquote(data, it->len) : 0, out, notes, it, NULL,
		             true);
	} else if (s->parse && data && rec.io.reason == RECORD_NONE &&
	           mbox_is_separator(data, it->len) && !one_message_file(&rec.io)) {
		size_t pos = 0, next;
		struct mbox_span m;
		parse_file_record_gone(s, w, &rec, it, out);
		rec.io.in_mbox = true;
		while (pos < it->len && mbox_next_max(data, it->len, pos, true, s->max_size, &m, &next)) {
			rec.io.offset = m.start;
			rec.io.length = m.end - m.start;
			/* a message of the last run at this offset whose record is an
			 * error now: its document goes (emit_es_error) */
			rec.io.known = state_had_message(it->state, m.start);
			/* An input read whole is at most --max-size (reader_item.c
			 * caps the read), so none of its messages is over it: the
			 * too-large rule is the stream's (record_mbox_too_large). */
			if (state_add_mbox_offset(it->state, m.start) < 0)
				state_mark_unread(it->state);   /* the next run reads it again */
			parse_record(s, w, rec, data + m.start, mbox_unquote(data + m.start, m.end - m.start),
			             out, notes, it, NULL, true);
			if (next <= pos)
				break;
			pos = next;
		}
		parse_archive_vanished(s, w, rec, it, out);
	} else if (rec.io.kind != RECORD_MESSAGE) {
		parse_record(s, w, rec, NULL, 0, out, NULL, it, NULL, false);
	} else {
		parse_record(s, w, rec, data, it->len, out, notes, it, it->state, true);
		if (s->parse && data && rec.io.reason == RECORD_NONE)
			parse_archive_vanished(s, w, rec, it, out);
	}
	it->out_worker = w;
	it->out_off = off;
	it->out_len = out->len - off;
	it->notes_off = (uint32_t)(notes_off / sizeof(struct thread_note));
	it->notes_n = (uint32_t)((notes->len - notes_off) / sizeof(struct thread_note));
}

/* In input order, on this stage's thread: each record joins the thread a
 * message it names already has in this run (pipeline/threads.h). */
static void parse_settle_threads(struct parse_stage *s, struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct batch_item *it = &b->items[i];
		const struct thread_note *v = (const struct thread_note *)(const void *)b->notes[it->out_worker].p;
		for (uint32_t k = 0; k < it->notes_n; k++) {
			const struct thread_note *n = &v[it->notes_off + k];
			char *at = b->out[it->out_worker].p + n->off;
			uint64_t t;
			if (!s->visit)
				thread_map_resolve(s->threads, n, at);
			else if ((t = thread_map_settle(s->threads, n, n->own)))
				s->visit_thread(s->visit_ctx, at, t);
		}
	}
}

static uint64_t batch_bytes(const struct batch *b)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < b->n; i++)
		bytes += b->items[i].len;
	return bytes;
}

/* Empties the workers' buffers for the next run.  A run is mostly one
 * batch, and a worker's records of a batch are most of half its input
 * (the text, not the attachments): its output buffer starts at a quarter of
 * a batch's data memory (batch_keep_bytes: twice the batch plus 1 MiB) when
 * it is (re)made, not at 256 bytes doubling through malloc's mremap six
 * times or more; untouched pages cost no memory.  One that once held a huge
 * record is not kept. */
static void parse_outputs_reset(struct parse_stage *s)
{
	uint64_t keep = batch_keep_bytes(s->batch_bytes);
	for (unsigned w = 0; w < s->workers; w++) {
		dynbuf_recycle(&s->out[w], (size_t)(keep / 4), (size_t)(4 * keep + (1 << 20)));
		dynbuf_reset(&s->notes[w]);
	}
}

/* The output buffers of the run's workers, made at their first size with
 * the whole huge pages inside it advised (one at the default 6 MiB batch),
 * when the first run's first batch holds two huge pages of input or more,
 * and one per worker: batches that fill by bytes, of which each worker's
 * records fill much of a huge page (a third of the input, mailbox2k).  Written from
 * their start, such a buffer faults once where it faulted 512 times, on
 * this VM ~10 us each (docs/ARCHITECTURE.md, "Batches, the pool and the
 * parser": mailbox2k 1,682 -> 857 faults a run, CPU 0.078 -> 0.062 s).
 * Batches closed by count (1,000,000 small files fill ~1.4 MiB each), a
 * batch shared by many workers, and --io-only's records (a file's facts,
 * a few hundred bytes a file) keep 4 KiB pages: a huge page each would be
 * backed whole for a fraction of its bytes, against the memory goals.
 * Decided once, by the first run (a run inline has one worker); a buffer
 * that cannot be made so is made by its first record as before, and one
 * that outgrows it is copied once into plain memory by realloc (the advice
 * splits the mapping, which mremap then cannot move whole). */
static void parse_outputs_decide(struct parse_stage *s, const struct batch *first, unsigned workers)
{
	s->out_decided = true;
	if (workers > s->workers)
		workers = s->workers;
	uint64_t bytes = batch_bytes(first);
	if (!s->parse || bytes < HUGE_FILL_MIN || bytes < HUGE_PAGE_SIZE * (uint64_t)workers)
		return;
	for (unsigned w = 0; w < workers; w++) {
		struct dynbuf *b = &s->out[w];
		if (b->p || b->first < HUGE_PAGE_SIZE)
			continue;
		void *p = huge_alloc(b->first, 0, b->first);
		if (p)
			dynbuf_adopt(b, p, b->first);
	}
}

/* Parses the group on up to max_workers workers into their buffers, then
 * writes its batches in order and empties the buffers. */
static void parse_group(struct parse_stage *s, size_t items, uint64_t bytes, unsigned max_workers)
{
	if (!s->out_decided)
		parse_outputs_decide(s, s->group[0], max_workers);
	for (unsigned g = 0; g < s->group_n; g++) {
		s->group[g]->out = s->out;
		s->group[g]->notes = s->notes;
	}
	unsigned used = pool_run_max(s->pool, items, bytes, max_workers, parse_item, s);
	for (unsigned g = 0; g < s->group_n; g++) {
		s->group[g]->workers_used = used;
		if (s->threads)
			parse_settle_threads(s, s->group[g]);
	}
	writer_put(s->writer, s->group, s->group_n);
	parse_outputs_reset(s);
	/* With a helper, batches go back unannounced (parse_stage_start()):
	 * the next run's opening tells the reader, or this thread's sleep on
	 * `full`.  A group that opened no run to it tells it now. */
	unsigned h = pool_helper(s->pool);
	if (h && used <= h)
		chan_flush(s->writer->free_batches);
}

void parse_stage_inline(struct parse_stage *s, struct batch *b)
{
	s->group[0] = b;
	s->group_first[0] = 0;
	s->group_n = 1;
	parse_group(s, b->n, batch_bytes(b), 1);
}

static void *parse_stage_main(void *arg)
{
	struct parse_stage *s = arg;
	sys_set_thread_name("ingest-parse");
	for (;;) {
		uint64_t t0 = clock_now_ns();
		struct batch *b = chan_pop(s->full);
		s->wait_ns += clock_now_ns() - t0;
		if (!b)
			break;
		size_t items = b->n;
		uint64_t bytes = batch_bytes(b);
		s->group[0] = b;
		s->group_first[0] = 0;
		s->group_n = 1;
		while (s->group_n < LIMIT_PIPELINE_DEPTH && (b = chan_try_pop(s->full))) {
			s->group[s->group_n] = b;
			s->group_first[s->group_n] = items;
			s->group_n++;
			items += b->n;
			bytes += batch_bytes(b);
		}
		parse_group(s, items, bytes, s->workers);
	}
	/* The workers' last counted syscalls (their sleep, the stop's wake)
	 * come before writer_end(), which lets the end marker of the counted
	 * window be issued (docs/ARCHITECTURE.md, "Syscall accounting"). */
	pool_stop(s->pool);
	writer_end(s->writer);
	return NULL;
}

bool parse_stage_help(struct parse_stage *s)
{
	if (!s->started || !pool_helper(s->pool))
		return false;
	/* A run that opens after this looked wakes the sleep that follows
	 * (helper_wake bumps the word it sleeps on) */
	return pool_help(s->pool, NULL, NULL) > 0;
}

bool parse_stage_help_poll(struct parse_stage *s, bool (*ready)(void *ctx), void *ctx)
{
	if (!parse_stage_help(s))
		return false;
	uint64_t t0 = clock_now_ns();
	for (unsigned i = 0; !ready(ctx) && !pool_help_wanted(s->pool);)
		if (spin_step_expired(&i, t0, PARSE_STAGE_HELP_SPIN_NS))
			break;
	return true;
}

int parse_stage_init(struct parse_stage *s, unsigned workers)
{
	s->pool = pool_new(workers);
	if (!s->pool)
		return -ENOMEM;
	if (s->helper_wake && workers >= 2)
		pool_set_helper(s->pool, s->helper_wake, s->helper_wake_ctx);
	s->workers = workers;
	/* Records with a thread_id: JSON's digits are rewritten in place, a
	 * visitor's objects (the Python module's dicts) through visit_thread;
	 * TSV's columns are not rewritten, nor a visitor's without it. */
	s->thread_notes = s->parse && (s->emit->fields & EMIT_FIELD_BIT(EMIT_F_THREAD_ID)) &&
	                  (s->visit ? s->visit_thread != NULL : s->emit->format != EMIT_TSV);
	if (s->thread_notes && !(s->threads = thread_map_new()))
		return -ENOMEM;
	s->mctx = xcalloc(workers, sizeof(*s->mctx));
	s->out = xcalloc(workers, sizeof(*s->out));
	s->notes = xcalloc(workers, sizeof(*s->notes));
	if (!s->mctx || !s->out || !s->notes)
		return -ENOMEM;
	for (unsigned i = 0; i < workers; i++) {
		dynbuf_init(&s->out[i], 0);
		dynbuf_init(&s->notes[i], 0);
	}
	parse_outputs_reset(s);
	if (s->parse)
		for (unsigned i = 0; i < workers; i++)
			if (!(s->mctx[i] = mail_ctx_new()))
				return -ENOMEM;
	return 0;
}

int parse_stage_start(struct parse_stage *s)
{
	/* The reader and this stage trade batches in runs of PARSE_STAGE_RUN:
	 * each side is woken once a run, and each side flushes what it queued
	 * before it sleeps itself, so neither waits on a batch the other has
	 * not announced.  Set here, before the thread exists, by the one
	 * thread that uses the channels until then. */
	s->full->wake_at = PARSE_STAGE_RUN;
	s->full->flush_before_sleep = s->writer->free_batches;
	/* With the reader as the pool's helper, a batch given back is
	 * announced with the next pool run's opening (the reader, woken
	 * then, finds both: one wake a group instead of two) or by this
	 * thread's flush before it sleeps on `full`. */
	s->writer->free_batches->wake_at = pool_helper(s->pool) ? UINT_MAX : PARSE_STAGE_RUN;
	s->writer->free_batches->flush_before_sleep = s->full;
	s->writer->budget->flush_before_sleep = s->full;
	int r = sys_thread_create(&s->thread, NULL, parse_stage_main, s);
	if (r == 0)
		s->started = true;
	return r;
}

void parse_stage_join(struct parse_stage *s)
{
	if (s->started)
		pthread_join(s->thread, NULL);
	s->started = false;
}

void parse_stage_stop(struct parse_stage *s)
{
	parse_stage_join(s);
	pool_free(s->pool);
	s->pool = NULL;
}

void parse_stage_release(struct parse_stage *s)
{
	parse_stage_stop(s);
	if (s->mctx)
		for (unsigned i = 0; i < s->workers; i++)
			mail_ctx_free(s->mctx[i]);
	xfree(s->mctx);
	s->mctx = NULL;
	/* both arrays, or an init that ran out of memory before the buffers
	 * were made */
	for (unsigned i = 0; s->out && s->notes && i < s->workers; i++) {
		dynbuf_release(&s->out[i]);
		dynbuf_release(&s->notes[i]);
	}
	xfree(s->out);
	xfree(s->notes);
	s->out = s->notes = NULL;
	thread_map_free(s->threads);
	s->threads = NULL;
}
