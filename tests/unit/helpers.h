/* SPDX-License-Identifier: MIT */
/* What every unit test shares (liburing's test/helpers.h is the model):
 * formatted strings, a temporary tree made and removed, files put into
 * it, and the parser fixture.  Each helper asserts its own success with
 * cmocka, so a test reads as the steps it takes. */
#ifndef INGEST_TEST_HELPERS_H
#define INGEST_TEST_HELPERS_H

#include "mail/mail_ctx.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A heap string from a format; never NULL. */
char *t_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A new directory under $TMPDIR (or /tmp), mode 0755 so that an
 * unprivileged child of a permission test can search it; tag names it. */
char *t_tmpdir(const char *tag);
/* Removes the tree through directory descriptors (past PATH_MAX, through
 * mode-000 directories) and frees base. */
void t_rmtree(char *base);
/* write(2) until all n bytes went. */
void t_write_all(int fd, const void *p, size_t n);
/* Creates base/rel (which must not exist) with the n bytes at p. */
void t_put(const char *base, const char *rel, const void *p, size_t n);
/* The same with a NUL-terminated text. */
void t_put_text(const char *base, const char *rel, const char *text);
/* mkdir base/rel for each entry of a NULL-terminated list, in order. */
void t_mkdirs(const char *base, const char *const *rel);
/* lstat(base/rel).st_ino. */
uint64_t t_ino_of(const char *base, const char *rel);

/* This process's CPU time in seconds (CLOCK_PROCESS_CPUTIME_ID: other
 * processes' work does not count). */
double t_cpu_seconds(void);
/* How a cost grows with its input, for tests of linear time: the least of
 * `rounds` measurements of cost(arg, 0) (the smaller input) and of
 * cost(arg, 1) (the larger, measured last in each round), interleaved so
 * that a busy moment of the machine hits both; returns the larger's over
 * the smaller's, t[0] and t[1] the two least costs.  A ratio of `limit` or
 * more is measured again, up to `attempts` times in all: a super-linear
 * cost gives it every time, a shared VM under load (stolen time counted as
 * ours) now and then.  Prints each attempt, named what. */
double t_cost_ratio(const char *what, double (*cost)(void *arg, int larger), void *arg, int rounds,
                    int attempts, double limit, double t[2]);

/* A struct mail_ctx built by hand for the header-level parser tests, which
 * need only the arena, the scratch buffer and the charset cache (no
 * libmagic cookie). */
void t_mail_ctx_init(struct mail_ctx *ctx);
void t_mail_ctx_release(struct mail_ctx *ctx);

/* cmocka setup and teardown for a test-case struct of `size` bytes whose
 * first member is a struct mail_ctx: zeroed, the context initialised. */
int t_ctx_case_setup(void **state, size_t size);
int t_ctx_case_teardown(void **state);
#define T_CTX_CASE(type)                                                        \
	static int setup(void **state) { return t_ctx_case_setup(state, sizeof(type)); } \
	static int teardown(void **state) { return t_ctx_case_teardown(state); }

/* cmocka setup and teardown for tests that parse whole messages through
 * one full context (libmagic included), kept in `ctx`. */
#define T_CTX_GLOBAL(ctx)                                                       \
	static int setup(void **state) { (void)state; ctx = mail_ctx_new(); return ctx ? 0 : -1; } \
	static int teardown(void **state) { (void)state; mail_ctx_free(ctx); return 0; }

/* cmocka setup and teardown for a test-case struct of `size` bytes whose
 * first member is a struct arena. */
int t_arena_case_setup(void **state, size_t size);
int t_arena_case_teardown(void **state);
#define T_ARENA_CASE(type)                                                      \
	static int setup(void **state) { return t_arena_case_setup(state, sizeof(type)); } \
	static int teardown(void **state) { return t_arena_case_teardown(state); }

/* In a forked child: drops root to nobody (a no-op when not root).
 * Returns 0, or -1 when privileges cannot be dropped here. */
int t_become_unprivileged(void);

/* Runs fn(arg, out) in a forked child and returns, NUL-terminated, what
 * it wrote to the descriptor out (*n, when not NULL, gets its length);
 * *status gets the child's exit status, fn's return (a signal: 128 + it).
 * unprivileged: root is dropped to nobody first, and a child that cannot
 * drop it exits 77 without calling fn. */
char *t_fork_output(int (*fn)(void *arg, int out), void *arg, bool unprivileged, int *status,
                    size_t *n);
/* The whole file base/rel (rel NULL: base), NUL-terminated; *n its size. */
char *t_read_file(const char *base, const char *rel, size_t *n);

/* Asserts that the view holds exactly the text want (NULL: absent). */
void t_assert_str(struct str s, const char *want);

#endif
