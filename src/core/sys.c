/* SPDX-License-Identifier: MIT */
/* Counted, fault-injectable syscall wrappers: see sys.h.
 *
 * syscall(2) is used instead of the glibc wrappers so that what strace names
 * is what we count: glibc 2.36 implements fstat() with newfstatat(2) and
 * open() with openat(2), for instance.  Each wrapper converts errno to a
 * negative return at the call, once.  `site`, every wrapper's first
 * parameter, is the caller's "FILE:LINE" from sys.h's macros: fault
 * injection counts and names calls by it (core/fault.h); NULL, and unused,
 * in a build without fault injection. */
#include "core/sys.h"
#include "core/fault.h"
#include "core/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *const sys_call_names[] = {
#define SYS_CALL_NAME(name) #name,
	SYS_CALLS(SYS_CALL_NAME)
#undef SYS_CALL_NAME
};

const char *sys_call_name(enum sys_call c)
{
	return (unsigned)c < SC__COUNT ? sys_call_names[c] : "?";
}

void sys_count(enum sys_call c)
{
	stats_count_sys(c);
}

int sys_fault_(const char *site, enum sys_call c)
{
	return fault_check_at(FAULT_SYS, sys_call_name(c), site);
}

/* Counts, lets fault injection fail the call before it is made (a failed
 * call costs no syscall, so it is not counted), then makes it.  `site` is
 * the wrapper's first parameter. */
#define SYS_DO(name, ...)                                       \
	do {                                                        \
		int fault_ = sys_fault_(site, SC_##name);               \
		if (fault_)                                             \
			return fault_;                                      \
		stats_count_sys(SC_##name);                            \
		long r_ = syscall(__VA_ARGS__);                         \
		return r_ < 0 ? -errno : r_;                            \
	} while (0)

int sys_openat_(const char *site, int dirfd, const char *path, int flags, mode_t mode)
{
	SYS_DO(openat, SYS_openat, dirfd, path, flags, mode);
}

int sys_statx_(const char *site, int dirfd, const char *path, int flags, unsigned mask, struct statx *out)
{
	SYS_DO(statx, SYS_statx, dirfd, path, flags, mask, out);
}

int sys_fstat_(const char *site, int fd, struct stat *st)
{
	SYS_DO(fstat, SYS_fstat, fd, st);
}

ssize_t sys_read_(const char *site, int fd, void *buf, size_t n)
{
	SYS_DO(read, SYS_read, fd, buf, n);
}

ssize_t sys_pread_(const char *site, int fd, void *buf, size_t n, uint64_t off)
{
	SYS_DO(pread64, SYS_pread64, fd, buf, n, off);
}

int sys_close_(const char *site, int fd)
{
	SYS_DO(close, SYS_close, fd);
}

ssize_t sys_getdents64_(const char *site, int fd, void *buf, size_t n)
{
	SYS_DO(getdents64, SYS_getdents64, fd, buf, n);
}

ssize_t sys_write_(const char *site, int fd, const void *buf, size_t n)
{
	SYS_DO(write, SYS_write, fd, buf, n);
}

ssize_t sys_writev_(const char *site, int fd, const struct iovec *iov, int iovcnt)
{
	SYS_DO(writev, SYS_writev, fd, iov, iovcnt);
}

int sys_ftruncate_(const char *site, int fd, uint64_t len)
{
	SYS_DO(ftruncate, SYS_ftruncate, fd, len);
}

int64_t sys_lseek_(const char *site, int fd, int64_t off, int whence)
{
	SYS_DO(lseek, SYS_lseek, fd, off, whence);
}

int sys_fsync_(const char *site, int fd)
{
	SYS_DO(fsync, SYS_fsync, fd);
}

int sys_madvise_(const char *site, void *addr, size_t len, int advice)
{
	SYS_DO(madvise, SYS_madvise, addr, len, advice);
}

int sys_renameat_(const char *site, int olddir, const char *oldpath, int newdir, const char *newpath)
{
	SYS_DO(renameat, SYS_renameat, olddir, oldpath, newdir, newpath);
}

int sys_linkat_(const char *site, int olddir, const char *oldpath, int newdir, const char *newpath,
                int flags)
{
	SYS_DO(linkat, SYS_linkat, olddir, oldpath, newdir, newpath, flags);
}

int sys_unlinkat_(const char *site, int dirfd, const char *path, int flags)
{
	SYS_DO(unlinkat, SYS_unlinkat, dirfd, path, flags);
}

int sys_faccessat_(const char *site, int dirfd, const char *path, int mode)
{
	SYS_DO(faccessat, SYS_faccessat, dirfd, path, mode);
}

int sys_fcntl_lock_(const char *site, int fd, int cmd, struct flock *l)
{
	SYS_DO(fcntl, SYS_fcntl, fd, cmd, l);
}

int sys_fchmod_(const char *site, int fd, mode_t mode)
{
	SYS_DO(fchmod, SYS_fchmod, fd, mode);
}

int sys_sleep_ns_(const char *site, uint64_t ns)
{
	struct timespec t = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	SYS_DO(clock_nanosleep, SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &t, NULL);
}

int sys_poll_(const char *site, int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	SYS_DO(poll, SYS_poll, &p, 1, timeout_ms);
}

int sys_sched_getaffinity_(const char *site, size_t size, void *mask)
{
	SYS_DO(sched_getaffinity, SYS_sched_getaffinity, 0, size, mask);
}

int sys_prlimit_nofile_(const char *site, uint64_t *soft, uint64_t *hard, uint64_t new_soft)
{
	struct rlimit old, want;
	int fault = sys_fault_(site, SC_prlimit64);
	if (fault)
		return fault;
	stats_count_sys(SC_prlimit64);
	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &old) < 0)
		return -errno;
	*soft = old.rlim_cur;
	*hard = old.rlim_max;
	if (!new_soft || new_soft <= old.rlim_cur)
		return 0;
	want.rlim_cur = new_soft < old.rlim_max ? new_soft : old.rlim_max;
	want.rlim_max = old.rlim_max;
	stats_count_sys(SC_prlimit64);
	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &want, NULL) < 0)
		return -errno;
	*soft = want.rlim_cur;
	return 0;
}

int sys_set_thread_name_(const char *site, const char *name)
{
	SYS_DO(prctl, SYS_prctl, PR_SET_NAME, name, 0, 0, 0);
}

int sys_thread_create_(const char *site, pthread_t *t, const pthread_attr_t *attr,
                       void *(*fn)(void *), void *arg)
{
	int fault = fault_check_at(FAULT_LIB, "pthread_create", site);
	if (fault)
		return fault;
	return -pthread_create(t, attr, fn, arg);
}

/* The read loops of sys.h, over one call of either wrapper or of a
 * reader backend.  `at` carries the wrapper's site and name. */
struct sys_at {
	const char *site;
	enum sys_call c;
};

static ssize_t sys_at_call(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
	const struct sys_at *at = ctx;
	switch (at->c) {
	case SC_pread64:
		return sys_pread_(at->site, fd, buf, n, off);
	case SC_getdents64:
		return sys_getdents64_(at->site, fd, buf, n);
	default:
		return sys_read_(at->site, fd, buf, n);
	}
}

ssize_t sys_pread_full_by(ssize_t (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t off),
                          void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(ctx, fd, (char *)buf + got, n - got, off + got);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

ssize_t sys_pread_restart_by(ssize_t (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t off),
                             void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r;
	do
		r = pread(ctx, fd, buf, n, off);
	while (r == -EINTR);
	return r;
}

ssize_t sys_read_full_(const char *site, int fd, void *buf, size_t n)
{
	struct sys_at at = { site, SC_read };
	return sys_pread_full_by(sys_at_call, &at, fd, buf, n, 0);
}

ssize_t sys_pread_full_(const char *site, int fd, void *buf, size_t n, uint64_t off)
{
	struct sys_at at = { site, SC_pread64 };
	return sys_pread_full_by(sys_at_call, &at, fd, buf, n, off);
}

ssize_t sys_read_restart_(const char *site, int fd, void *buf, size_t n)
{
	struct sys_at at = { site, SC_read };
	return sys_pread_restart_by(sys_at_call, &at, fd, buf, n, 0);
}

static int sys_fcntl_getfl(const char *site, int fd)
{
	SYS_DO(fcntl, SYS_fcntl, fd, F_GETFL);
}

bool sys_may_block_(const char *site, int fd)
{
	struct stat st = { 0 };
	/* a descriptor fstat cannot judge is polled: the poll reports it */
	if (sys_fstat_(site, fd, &st) < 0)
		return true;
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return false;
	/* open for writing only (`0>&1` on a pipe): no poll would ever report
	 * it readable; its read fails at once (EBADF), as it should */
	int fl = sys_fcntl_getfl(site, fd);
	return fl < 0 || (fl & O_ACCMODE) != O_WRONLY;
}

ssize_t sys_read_stoppable_(const char *site, int fd, void *buf, size_t n, bool may_block,
                            const atomic_int *stop)
{
	for (;;) {
		if (atomic_load(stop))
			return -EINTR;
		if (may_block) {
			int p = sys_poll_(site, fd, POLLIN, SYS_STOP_POLL_MS);
			if (p == 0 || p == -EINTR)
				continue;
			if (p < 0)
				return p;
		}
		ssize_t r = sys_read_(site, fd, buf, n);
		if (r != -EINTR && !(r == -EAGAIN && may_block))
			return r;
	}
}

ssize_t sys_getdents64_restart_(const char *site, int fd, void *buf, size_t n)
{
	struct sys_at at = { site, SC_getdents64 };
	return sys_pread_restart_by(sys_at_call, &at, fd, buf, n, 0);
}

/* What a write loop does after a write that returned r: 1 to write
 * again (EINTR; EAGAIN once the descriptor can take more), 0 to go on
 * with r, -errno when the poll itself fails.  A descriptor set O_NONBLOCK
 * by whoever shares it (a parent's pipe) answers a full pipe with EAGAIN:
 * waited for as a blocking write would wait, so that no record is cut at
 * the pipe's size. */
static int sys_write_again(const char *site, int fd, ssize_t r)
{
	if (r == -EINTR)
		return 1;
	if (r != -EAGAIN)
		return 0;
	int p = sys_poll_(site, fd, POLLOUT, -1);
	return p < 0 && p != -EINTR ? p : 1;
}

int sys_write_full_(const char *site, int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = sys_write_(site, fd, p, n);
		int again = sys_write_again(site, fd, w);
		if (again < 0)
			return again;
		if (again)
			continue;
		if (w < 0)
			return (int)w;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A writev of 0 bytes is progress when the iovecs left are empty ones. */
int sys_writev_full_(const char *site, int fd, struct iovec *iov, int iovcnt, uint64_t *written)
{
	*written = 0;
	while (iovcnt > 0) {
		ssize_t r = sys_writev_(site, fd, iov, iovcnt);
		int again = sys_write_again(site, fd, r);
		if (again < 0)
			return again;
		if (again)
			continue;
		if (r < 0)
			return (int)r;
		*written += (uint64_t)r;
		while (iovcnt > 0 && (size_t)r >= iov->iov_len) {
			r -= (ssize_t)iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (char *)iov->iov_base + r;
			iov->iov_len -= (size_t)r;
		}
	}
	return 0;
}

/* Futexes are not fault-injected: a failed wait is indistinguishable from a
 * spurious wake-up, which every caller already handles by re-checking. */
int sys_futex_wait(uint32_t *word, uint32_t expected)
{
	return sys_futex_wait_for(word, expected, 0);
}

int sys_futex_wait_for(uint32_t *word, uint32_t expected, uint64_t ns)
{
	stats_count_sys(SC_futex);
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	long r = syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, ns ? &ts : NULL, NULL, 0);
	return r < 0 && errno != ETIMEDOUT ? -errno : 0;
}

int sys_futex_wake(uint32_t *word, int n)
{
	stats_count_sys(SC_futex);
	long r = syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	return r < 0 ? -errno : (int)r;
}
