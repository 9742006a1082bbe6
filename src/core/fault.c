/* SPDX-License-Identifier: MIT */
/* Fault injection: see fault.h.  Test machinery, compiled to nothing unless
 * the build asks for it.
 *
 * The configuration is read from the environment once (pthread_once: the
 * first fallible call may race with another thread's).  Counters are
 * atomics, bumped by whichever thread makes the call:
 *
 *     fault_calls            every fallible call (the shared numbering)
 *     fault_kind_calls[k]    the calls of kind k (N:ERRNO:KIND)
 *     fault_which_calls      the calls named by WHICH (N:ERRNO:KIND:WHICH)
 *     fault_sites[]          per call site, only with INGEST_FAULT_COUNT=1
 *
 * A site is the caller's "FILE:LINE" string literal: the table is keyed by
 * its address (a lock-free open-addressed table; a slot, once claimed, is
 * never given back), and printed at exit.  The compiler spells __FILE__ as
 * meson passed it ("../src/io/walk.c"); what precedes "src/" is dropped
 * when a site is printed or compared, so that names match the source tree. */
#include "config.h"
#include "core/fault.h"

#if INGEST_FAULT_INJECTION
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct { const char *name; int value; } fault_errnos[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EINTR", EINTR },
	{ "EIO", EIO }, { "EBADF", EBADF }, { "EAGAIN", EAGAIN },
	{ "ENOMEM", ENOMEM }, { "EACCES", EACCES }, { "EBUSY", EBUSY },
	{ "EINVAL", EINVAL }, { "EMFILE", EMFILE }, { "ENOSPC", ENOSPC },
	{ "EPIPE", EPIPE }, { "ENOSYS", ENOSYS }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "ELOOP", ELOOP }, { "EISDIR", EISDIR }, { "ENFILE", ENFILE },
	{ "EFBIG", EFBIG }, { "EROFS", EROFS }, { "EXDEV", EXDEV },
	{ "ENOTDIR", ENOTDIR }, { "ESTALE", ESTALE }, { "EDQUOT", EDQUOT },
	{ "EOVERFLOW", EOVERFLOW }, { "ENAMETOOLONG", ENAMETOOLONG },
};

#define FAULT_SITES 1024        /* a power of two; ingest has ~150 sites */

struct fault_site {
	_Atomic(const char *) site;   /* the key: the literal's address */
	_Atomic(const char *) name;
	atomic_int kind;
	atomic_ulong calls;
};

static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static bool fault_armed, fault_counting;
static unsigned long fault_nth;
static int fault_errno;
static int fault_kinds;
static char fault_which[160];   /* empty: the shared (or per-kind) numbering */

static atomic_ulong fault_calls;
static atomic_ulong fault_kind_calls[3];
static atomic_ulong fault_which_calls;
static struct fault_site fault_sites[FAULT_SITES];
static atomic_uint fault_sites_lost;   /* the table was full (never, in practice) */

/* "../src/io/walk.c:480" (or "../tree/src/io/walk.c:480", from a build
 * directory beside the tree) → "src/io/walk.c:480". */
static const char *fault_site_text(const char *site)
{
	while (!strncmp(site, "../", 3))
		site += 3;
	if (!strncmp(site, "./", 2))
		site += 2;
	const char *src = strncmp(site, "src/", 4) ? strstr(site, "/src/") : NULL;
	return src ? src + 1 : site;
}

static const char *fault_kind_name(int kind)
{
	return kind == FAULT_SYS ? "sys" : kind == FAULT_ALLOC ? "alloc" : "lib";
}

static int fault_kind_index(int kind)
{
	return kind == FAULT_SYS ? 0 : kind == FAULT_ALLOC ? 1 : 2;
}

static void fault_site_count(enum fault_kind kind, const char *name, const char *site)
{
	const char *key = site ? site : name;
	size_t h = ((uintptr_t)key >> 3) * 0x9E3779B97F4A7C15u;
	for (size_t i = 0; i < FAULT_SITES; i++) {
		struct fault_site *s = &fault_sites[(h + i) & (FAULT_SITES - 1)];
		const char *cur = atomic_load_explicit(&s->site, memory_order_acquire);
		if (!cur) {
			const char *expected = NULL;
			if (atomic_compare_exchange_strong(&s->site, &expected, key)) {
				atomic_store(&s->kind, (int)kind);
				atomic_store(&s->name, name);
				cur = key;
			} else {
				cur = expected;
			}
		}
		if (cur == key) {
			atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
			return;
		}
	}
	atomic_fetch_add(&fault_sites_lost, 1);
}

static void fault_report(void)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "ingest-fault: calls=%lu\n", atomic_load(&fault_calls));
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
	for (size_t i = 0; i < FAULT_SITES; i++) {
		struct fault_site *s = &fault_sites[i];
		const char *site = atomic_load(&s->site);
		const char *name = atomic_load(&s->name);
		if (!site || !name)
			continue;
		n = snprintf(line, sizeof(line), "ingest-fault: count %s %s %s %lu\n",
		             fault_kind_name(atomic_load(&s->kind)), name,
		             site == name ? name : fault_site_text(site), atomic_load(&s->calls));
		if (n > 0 && (size_t)n < sizeof(line) && write(STDERR_FILENO, line, (size_t)n) < 0)
			return;
	}
	if (atomic_load(&fault_sites_lost)) {
		n = snprintf(line, sizeof(line), "ingest-fault: %u calls at sites beyond the table\n",
		             atomic_load(&fault_sites_lost));
		if (write(STDERR_FILENO, line, (size_t)n) < 0)
			return;
	}
}

static void fault_configure(void)
{
	const char *spec = getenv("INGEST_FAULT");
	fault_kinds = FAULT_SYS | FAULT_ALLOC | FAULT_LIB;
	if (spec && *spec) {
		char *end;
		fault_nth = strtoul(spec, &end, 10);
		if (*end == ':') {
			const char *e = end + 1;
			size_t len = strcspn(e, ":");
			fault_errno = (int)strtol(e, NULL, 10);
			for (size_t i = 0; i < sizeof(fault_errnos) / sizeof(fault_errnos[0]); i++)
				if (strlen(fault_errnos[i].name) == len &&
				    !strncmp(fault_errnos[i].name, e, len))
					fault_errno = fault_errnos[i].value;
			const char *k = e + len;
			if (*k == ':') {
				const char *kind = k + 1;
				size_t klen = strcspn(kind, ":");
				fault_kinds = klen == 3 && !strncmp(kind, "sys", 3) ? FAULT_SYS
				            : klen == 5 && !strncmp(kind, "alloc", 5) ? FAULT_ALLOC
				            : klen == 3 && !strncmp(kind, "lib", 3) ? FAULT_LIB
				            : FAULT_SYS | FAULT_ALLOC | FAULT_LIB;
				/* WHICH runs to the end: a site has a colon of its own */
				if (kind[klen] == ':')
					snprintf(fault_which, sizeof(fault_which), "%s", kind + klen + 1);
			}
		}
		fault_armed = fault_nth && fault_errno > 0;
	}
	const char *count = getenv("INGEST_FAULT_COUNT");
	fault_counting = count && *count == '1';
	if (fault_counting)
		atexit(fault_report);
}

static const char *fault_errno_name(int e, char *buf, size_t n)
{
	for (size_t i = 0; i < sizeof(fault_errnos) / sizeof(fault_errnos[0]); i++)
		if (fault_errnos[i].value == e)
			return fault_errnos[i].name;
	snprintf(buf, n, "%d", e);
	return buf;
}

/* One write(2) per line: other threads may write to stderr too. */
static void fault_fired(unsigned long n, const char *name, const char *site)
{
	char line[320], num[16];
	int len = snprintf(line, sizeof(line), "ingest-fault: fired %lu %s at %s %s\n", n,
	                   fault_errno_name(fault_errno, num, sizeof(num)), name,
	                   site ? fault_site_text(site) : name);
	if (len > 0 && (size_t)len < sizeof(line) && write(STDERR_FILENO, line, (size_t)len) < 0)
		return;
}

int fault_check_at(enum fault_kind kind, const char *name, const char *site)
{
	if (!name)
		name = "?";
	pthread_once(&fault_once, fault_configure);
	unsigned long all = atomic_fetch_add_explicit(&fault_calls, 1, memory_order_relaxed) + 1;
	unsigned long of_kind =
		atomic_fetch_add_explicit(&fault_kind_calls[fault_kind_index((int)kind)], 1,
		                          memory_order_relaxed) + 1;
	if (fault_counting)
		fault_site_count(kind, name, site);
	if (!fault_armed || !(fault_kinds & (int)kind))
		return 0;
	unsigned long n;
	if (fault_which[0]) {
		if (strcmp(name, fault_which) && (!site || strcmp(fault_site_text(site), fault_which)))
			return 0;
		n = atomic_fetch_add_explicit(&fault_which_calls, 1, memory_order_relaxed) + 1;
	} else {
		/* one kind: its own numbering; any kind: the shared one */
		n = fault_kinds == (int)kind ? of_kind : all;
	}
	if (n != fault_nth)
		return 0;
	fault_fired(n, name, site);
	return -fault_errno;
}
#else
int fault_check_at(enum fault_kind kind, const char *name, const char *site)
{
	(void)kind;
	(void)name;
	(void)site;
	return 0;
}
#endif
