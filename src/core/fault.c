/* Fault injection: see fault.h.  A global atomic counter numbers the calls;
 * the configuration is read from the environment once (getenv makes no
 * syscall).  This is test machinery: it is compiled to nothing unless the
 * build asks for it. */
#include "config.h"
#include "core/fault.h"

#if INGEST_FAULT_INJECTION
#include <errno.h>
#include <stdatomic.h>
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
	{ "EFBIG", EFBIG }, { "EROFS", EROFS },
};

static atomic_ulong fault_calls;
static atomic_int fault_state;   /* 0 unread, 1 off, 2 armed */
static unsigned long fault_nth;
static int fault_errno;
static int fault_kinds;
/* With a name, N counts only the calls of that syscall: a call made by one
 * thread then has the same number in every run, whatever the others do. */
static char fault_name[32];
static atomic_ulong fault_named_calls;

static void fault_report(void)
{
	fprintf(stderr, "ingest-fault: calls=%lu\n", atomic_load(&fault_calls));
}

static void fault_configure(void)
{
	int expected = 0;
	const char *spec = getenv("INGEST_FAULT");
	int state = 1;
	fault_kinds = FAULT_SYS | FAULT_ALLOC;
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
				            : FAULT_SYS | FAULT_ALLOC;
				if (kind[klen] == ':')
					snprintf(fault_name, sizeof(fault_name), "%s", kind + klen + 1);
			}
		}
		if (fault_nth && fault_errno > 0)
			state = 2;
	}
	const char *count = getenv("INGEST_FAULT_COUNT");
	if (count && *count == '1')
		atexit(fault_report);
	if (!atomic_compare_exchange_strong(&fault_state, &expected, state))
		return;
}

int fault_check(enum fault_kind kind, const char *name)
{
	if (atomic_load_explicit(&fault_state, memory_order_acquire) == 0)
		fault_configure();
	unsigned long n = atomic_fetch_add_explicit(&fault_calls, 1, memory_order_relaxed) + 1;
	if (atomic_load_explicit(&fault_state, memory_order_relaxed) != 2)
		return 0;
	if (!(fault_kinds & (int)kind))
		return 0;
	if (fault_name[0]) {
		if (!name || strcmp(name, fault_name))
			return 0;
		n = atomic_fetch_add_explicit(&fault_named_calls, 1, memory_order_relaxed) + 1;
	}
	return n == fault_nth ? -fault_errno : 0;
}
#else
int fault_check(enum fault_kind kind, const char *name)
{
	(void)kind;
	(void)name;
	return 0;
}
#endif
