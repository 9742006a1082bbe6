/* SPDX-License-Identifier: MIT */
/* Available parallelism: affinity mask capped by the cgroup v2 CPU quota.
 *
 * The affinity mask says which CPUs the scheduler may put us on (taskset,
 * cpuset cgroups, Docker's --cpuset-cpus); cpu.max says how much CPU time we
 * may use (Docker's --cpus, systemd's CPUQuota=).  A container limited to
 * 2 CPUs on a 64-core host sees 64 CPUs in its mask, and 64 threads there
 * would be throttled in turn, so both are read.  The quota of every ancestor
 * cgroup applies too (systemd puts CPUQuota= on slices), so the walk goes up
 * to the root and keeps the smallest.  Only cgroup v2 is read: on a v1 or
 * hybrid host the files are absent and the mask alone decides.
 *
 * Trade-off: the answer is computed once per process and cached.  Probing
 * costs about a dozen syscalls (the mask, /proc/self/cgroup, one cpu.max per
 * level), which would be noise per run but not per batch, and a stable answer
 * keeps the thread count of one run fixed.  The price is that a quota or
 * affinity changed while we run is not seen: the pool keeps the thread count
 * it started with, which is at worst too many threads (throttled, still
 * correct) or too few (slower, still correct).
 *
 * The syscalls go through core/sys.h so that they are counted; any failure
 * only loses information (no quota found means no cap), never the run. */
#include "sched/parallelism.h"

#include "core/sys.h"
#include "core/xalloc.h"
#include "core/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
/* The kernel refuses a mask smaller than its nr_cpu_ids bits: grow until it
 * fits, up to a size no real machine reaches. */
#define AFFINITY_MIN_BYTES 128          /* 1024 CPUs */
#define AFFINITY_MAX_BYTES (64 * 1024)  /* 512 Ki CPUs */

/* 0 until probed.  Not pthread_once: glibc's wakes its waiters with a
 * futex call whether or not there are any, one syscall a run for nothing.
 * Two threads asking first at once both probe, and store the same answer. */
static _Atomic unsigned parallelism_cached;

static unsigned parallelism_affinity(void)
{
	for (size_t size = AFFINITY_MIN_BYTES; size <= AFFINITY_MAX_BYTES; size *= 2) {
		unsigned char *mask = xcalloc(size, 1);
		if (!mask)
			return 0;
		int r = sys_sched_getaffinity(size, mask);
		unsigned n = 0;
		if (r >= 0) {
			/* The raw syscall fills only the kernel's mask size and
			 * leaves the rest as we zeroed it: counting the whole
			 * buffer is right whatever r says. */
			for (size_t i = 0; i < size; i++)
				n += (unsigned)__builtin_popcount(mask[i]);
		}
		xfree(mask);
		if (r >= 0)
			return n;
		if (r != -EINVAL)
			return 0;
	}
	return 0;
}

/* Reads a small pseudo-file whole into buf (NUL-terminated); 0 or -errno.
 * -E2BIG when it does not fit: a truncated cgroup path would name another
 * cgroup, so the caller must not use a partial answer. */
static int parallelism_read_file(const char *path, char *buf, size_t size)
{
	int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	size_t len = 0;
	int ret = 0;
	for (;;) {
		if (len == size - 1) {
			ret = -E2BIG;
			break;
		}
		size_t want = size - 1 - len;
		ssize_t n = sys_read(fd, buf + len, want);
		if (n < 0) {
			ret = (int)n;
			break;
		}
		len += (size_t)n;
		/* Both files are seq_files whose text is made in one show
		 * call (procfs' single_open for /proc/self/cgroup, kernfs for
		 * cpu.max): a read copies as much of it as fits, so a short one
		 * is the end, and asking again for the 0 of end-of-file is a
		 * syscall for nothing (systemd reads such files the same way).
		 * A seq_file that prints record by record may stop short at a
		 * page, which these two do not. */
		if ((size_t)n < want)
			break;
	}
	sys_close(fd);
	buf[len] = '\0';
	return ret;
}

unsigned parallelism_cpu_max_parse(const char *text)
{
	char *end;
	if (strncmp(text, "max", 3) == 0)
		return 0;
	errno = 0;
	unsigned long long quota = strtoull(text, &end, 10);
	if (errno || end == text || *end != ' ')
		return 0;
	const char *p = end + 1;
	unsigned long long period = strtoull(p, &end, 10);
	if (errno || end == p || period == 0 || quota == 0)
		return 0;
	unsigned long long cpus = quota / period + (quota % period != 0);
	return cpus > UINT32_MAX ? UINT32_MAX : (unsigned)cpus;
}

/* The smallest quota, in whole CPUs, of our cgroup and its ancestors; 0 when
 * there is none or it cannot be read. */
static unsigned parallelism_cgroup_quota(void)
{
	char *buf = xmalloc(2 * PATH_MAX);
	if (!buf)
		return 0;
	char *path = buf + PATH_MAX;
	unsigned best = 0;

	/* The v2 line is "0::/path"; with a cgroup namespace it is "0::/" and
	 * /sys/fs/cgroup is our own cgroup, whose cpu.max is the container's. */
	if (parallelism_read_file("/proc/self/cgroup", buf, PATH_MAX) < 0)
		goto out;
	char *line = buf;
	while (line && strncmp(line, "0::", 3) != 0) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	if (!line)
		goto out;
	char *cg = line + 3;
	cg[strcspn(cg, "\n")] = '\0';
	if (cg[0] != '/')
		goto out;

	/* Walk from our cgroup up to the root; the root has no cpu.max. */
	for (;;) {
		char text[64];
		size_t len = strlen(cg);
		if (len > 1 && cg[len - 1] == '/')
			cg[--len] = '\0';
		int n = snprintf(path, PATH_MAX, CGROUP_ROOT "%s/cpu.max",
		                 len == 1 ? "" : cg);
		if (n > 0 && n < PATH_MAX &&
		    parallelism_read_file(path, text, sizeof(text)) == 0) {
			unsigned cpus = parallelism_cpu_max_parse(text);
			if (cpus && (!best || cpus < best))
				best = cpus;
		}
		if (len <= 1)
			break;
		char *slash = strrchr(cg, '/');
		slash[slash == cg] = '\0';   /* "/a" becomes "/", "/a/b" becomes "/a" */
	}
out:
	xfree(buf);
	return best;
}

static void parallelism_probe(void)
{
	unsigned n = parallelism_affinity();
	if (!n) {
		/* Only a failed allocation or an injected fault gets here. */
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		n = online > 0 ? (unsigned)(online > LIMIT_MAX_THREADS ? LIMIT_MAX_THREADS : online) : 1;
	}
	unsigned quota = parallelism_cgroup_quota();
	if (quota && quota < n)
		n = quota;
	if (n > LIMIT_MAX_THREADS)
		n = LIMIT_MAX_THREADS;
	atomic_store(&parallelism_cached, n ? n : 1);
}

unsigned parallelism_default(void)
{
	unsigned n = atomic_load(&parallelism_cached);
	if (!n) {
		parallelism_probe();
		n = atomic_load(&parallelism_cached);
	}
	return n;
}
