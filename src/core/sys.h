/* SPDX-License-Identifier: MIT */
/* Every syscall ingest issues itself goes through one of these wrappers.
 *
 * Three jobs in one place:
 *  - the call is made with syscall(2), so that the name strace prints is the
 *    name counted here (glibc's fstat() is newfstatat(2) underneath, for one);
 *  - it is counted, by name, in the calling thread's counters (core/stats.h);
 *  - with -Dfault_injection=true, INGEST_FAULT can make it fail (core/fault).
 *
 * All return >= 0 on success and -errno on failure (errno is not used: it
 * does not cross threads with ring completions, and one convention is
 * simpler).  Syscalls made inside libraries (the allocator's mmap, the
 * dynamic loader, libmagic's load, glibc's thread start) are not ours and are
 * not counted; README explains the window in which strace and the counters
 * must agree. */
#ifndef INGEST_SYS_H
#define INGEST_SYS_H

#include "core/fault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#define SYS_CALLS(X)          \
	X(openat)                 \
	X(statx)                  \
	X(fstat)                  \
	X(read)                   \
	X(pread64)                \
	X(close)                  \
	X(getdents64)             \
	X(write)                  \
	X(writev)                 \
	X(ftruncate)              \
	X(lseek)                  \
	X(fsync)                  \
	X(renameat)               \
	X(linkat)                 \
	X(unlinkat)               \
	X(io_uring_setup)         \
	X(io_uring_enter)         \
	X(io_uring_register)      \
	X(futex)                  \
	X(ioctl)                  \
	X(faccessat)              \
	X(sched_getaffinity)      \
	X(prlimit64)              \
	X(prctl)                  \
	X(fcntl)                  \
	X(fchmod)                 \
	X(madvise)                \
	X(clock_nanosleep)         \
	X(poll)

enum sys_call {
#define SYS_CALL_ENUM(name) SC_##name,
	SYS_CALLS(SYS_CALL_ENUM)
#undef SYS_CALL_ENUM
	SC__COUNT
};

const char *sys_call_name(enum sys_call c);

struct statx;

/* Each wrapper is a macro that passes the caller's FAULT_SITE ("FILE:LINE",
 * NULL without fault injection) to the function of the same name with a
 * trailing underscore: a fault names the line that saw it (core/fault.h).
 * Call the macro. */
int sys_openat_(const char *site, int dirfd, const char *path, int flags, mode_t mode);
int sys_statx_(const char *site, int dirfd, const char *path, int flags, unsigned mask,
               struct statx *out);
int sys_fstat_(const char *site, int fd, struct stat *st);
ssize_t sys_read_(const char *site, int fd, void *buf, size_t n);
ssize_t sys_pread_(const char *site, int fd, void *buf, size_t n, uint64_t off);
int sys_close_(const char *site, int fd);
ssize_t sys_getdents64_(const char *site, int fd, void *buf, size_t n);
ssize_t sys_write_(const char *site, int fd, const void *buf, size_t n);
ssize_t sys_writev_(const char *site, int fd, const struct iovec *iov, int iovcnt);
int sys_ftruncate_(const char *site, int fd, uint64_t len);
int64_t sys_lseek_(const char *site, int fd, int64_t off, int whence);
int sys_fsync_(const char *site, int fd);
int sys_madvise_(const char *site, void *addr, size_t len, int advice);
int sys_renameat_(const char *site, int olddir, const char *oldpath, int newdir,
                  const char *newpath);
int sys_linkat_(const char *site, int olddir, const char *oldpath, int newdir,
                const char *newpath, int flags);
int sys_unlinkat_(const char *site, int dirfd, const char *path, int flags);
int sys_faccessat_(const char *site, int dirfd, const char *path, int mode);
struct flock;
int sys_fcntl_lock_(const char *site, int fd, int cmd, struct flock *l);
int sys_fchmod_(const char *site, int fd, mode_t mode);
int sys_sleep_ns_(const char *site, uint64_t ns);
int sys_poll_(const char *site, int fd, short events, int timeout_ms);
int sys_sched_getaffinity_(const char *site, size_t size, void *mask);
int sys_prlimit_nofile_(const char *site, uint64_t *soft, uint64_t *hard, uint64_t new_soft);
int sys_set_thread_name_(const char *site, const char *name);
int sys_thread_create_(const char *site, pthread_t *t, const pthread_attr_t *attr,
                       void *(*fn)(void *), void *arg);
int sys_fault_(const char *site, enum sys_call c);

#define sys_openat(...) sys_openat_(FAULT_SITE, __VA_ARGS__)
#define sys_statx(...) sys_statx_(FAULT_SITE, __VA_ARGS__)
#define sys_fstat(...) sys_fstat_(FAULT_SITE, __VA_ARGS__)
#define sys_read(...) sys_read_(FAULT_SITE, __VA_ARGS__)
#define sys_pread(...) sys_pread_(FAULT_SITE, __VA_ARGS__)
#define sys_close(...) sys_close_(FAULT_SITE, __VA_ARGS__)
#define sys_getdents64(...) sys_getdents64_(FAULT_SITE, __VA_ARGS__)
#define sys_write(...) sys_write_(FAULT_SITE, __VA_ARGS__)
#define sys_writev(...) sys_writev_(FAULT_SITE, __VA_ARGS__)
#define sys_ftruncate(...) sys_ftruncate_(FAULT_SITE, __VA_ARGS__)
/* Only on the failure path of the output (pipeline/writer.c, output_cut). */
#define sys_lseek(...) sys_lseek_(FAULT_SITE, __VA_ARGS__)
/* Once a run for each file made durable: the output with --state, the
 * state file and its directory, an index built aside. */
#define sys_fsync(...) sys_fsync_(FAULT_SITE, __VA_ARGS__)
/* MADV_HUGEPAGE only (core/hugepage.c): glibc's own madvise calls are
 * not ingest's and are not counted. */
#define sys_madvise(...) sys_madvise_(FAULT_SITE, __VA_ARGS__)
#define sys_renameat(...) sys_renameat_(FAULT_SITE, __VA_ARGS__)
/* Names the state's unnamed new file (O_TMPFILE) once it is whole
 * (io/state.c, state_save). */
#define sys_linkat(...) sys_linkat_(FAULT_SITE, __VA_ARGS__)
#define sys_unlinkat(...) sys_unlinkat_(FAULT_SITE, __VA_ARGS__)
#define sys_faccessat(...) sys_faccessat_(FAULT_SITE, __VA_ARGS__)
/* fcntl's record locks (F_SETLK, F_SETLKW, F_GETLK): the --state lock.  The
 * one other fcntl, counted under the same name, is sys_may_block's F_GETFL. */
#define sys_fcntl_lock(...) sys_fcntl_lock_(FAULT_SITE, __VA_ARGS__)
#define sys_fchmod(...) sys_fchmod_(FAULT_SITE, __VA_ARGS__)
/* clock_nanosleep on CLOCK_MONOTONIC: 0, or -EINTR when a signal ended it
 * (the --wait-state wait for the state's lock, io/state.c). */
#define sys_sleep_ns(...) sys_sleep_ns_(FAULT_SITE, __VA_ARGS__)
/* poll of one descriptor for events (POLLIN, POLLOUT): 1 when it has news
 * (ready, the end, an error), 0 when timeout_ms passed (-1: no limit),
 * -EINTR when a signal ended it (sys_read_stoppable, the write loops). */
#define sys_poll(...) sys_poll_(FAULT_SITE, __VA_ARGS__)
#define sys_sched_getaffinity(...) sys_sched_getaffinity_(FAULT_SITE, __VA_ARGS__)
#define sys_prlimit_nofile(...) sys_prlimit_nofile_(FAULT_SITE, __VA_ARGS__)
/* Names the calling thread (PR_SET_NAME; at most 15 bytes are kept).
 * glibc's pthread_setname_np on another thread opens /proc/self/task/N/comm
 * instead: uncounted syscalls, so threads name themselves. */
#define sys_set_thread_name(...) sys_set_thread_name_(FAULT_SITE, __VA_ARGS__)
/* pthread_create, 0 or -errno.  Not counted: glibc's clone3 and the stack's
 * mmap happen before the thread can count anything (README's window), but
 * fault-injectable by the name "pthread_create". */
#define sys_thread_create(...) sys_thread_create_(FAULT_SITE, __VA_ARGS__)

/* Loops over EINTR and short counts, after bfs's xread and xwrite: each
 * call inside is the wrapper of the same name, counted and fault-injectable
 * at the caller's site, and a failure returns its -errno once (bytes moved
 * before it are not reported, except by sys_writev_full).  A signal does
 * not end them: main.c's handlers only set the run's stop flag, which each
 * stage checks between calls (docs/ARCHITECTURE.md, "The pipeline and its
 * threads", Stopping).  A read whose short count already proves the end of
 * the file (the reader's size+1 read) uses the _restart form: the _full
 * form would spend one more call to see the end, and the syscall contract
 * allows none. */

/* Reads until n bytes or the end of the file: the bytes read, fewer than n
 * only at the end (which cost one more call, returning 0), or -errno.  n
 * of 0 makes no call. */
ssize_t sys_read_full_(const char *site, int fd, void *buf, size_t n);
ssize_t sys_pread_full_(const char *site, int fd, void *buf, size_t n, uint64_t off);
/* One call, made again while it fails with EINTR (what SA_RESTART would
 * do): a short count is returned as it is. */
ssize_t sys_read_restart_(const char *site, int fd, void *buf, size_t n);
ssize_t sys_getdents64_restart_(const char *site, int fd, void *buf, size_t n);
/* Writes all n bytes: 0 or -errno (-EIO for a write that wrote nothing).
 * On a descriptor another process set O_NONBLOCK, EAGAIN is waited for
 * (poll) as a blocking write waits. */
int sys_write_full_(const char *site, int fd, const void *buf, size_t n);
/* Writes all of iov, which it advances past what went out: 0 or -errno,
 * with *written the bytes that went out either way. */
int sys_writev_full_(const char *site, int fd, struct iovec *iov, int iovcnt, uint64_t *written);

/* The inputs read whole before a run (a --files-from list, `ingest -`)
 * may be a pipe, a FIFO or a terminal that nobody writes to, where a
 * read would wait for ever and only a signal to this thread ends it; an
 * interrupt from another thread (a library host's ingest_interrupt(), a
 * Python scan dropped) sets a flag, which a blocked read never looks at.
 * So for such a descriptor (may_block: sys_may_block) each read waits
 * first in polls of SYS_STOP_POLL_MS, *stop looked at between them, and
 * reads only once there is news; it returns what one read returns (-EINTR
 * once *stop is set), a read that fails with EINTR or EAGAIN (a FIFO
 * opened O_NONBLOCK so that its open does not wait for a writer) is
 * waited for again.  A regular file never waits: it is read as it is. */
#define SYS_STOP_POLL_MS 20
bool sys_may_block_(const char *site, int fd);
ssize_t sys_read_stoppable_(const char *site, int fd, void *buf, size_t n, bool may_block,
                            const atomic_int *stop);

#define sys_read_full(...) sys_read_full_(FAULT_SITE, __VA_ARGS__)
#define sys_may_block(...) sys_may_block_(FAULT_SITE, __VA_ARGS__)
#define sys_read_stoppable(...) sys_read_stoppable_(FAULT_SITE, __VA_ARGS__)
#define sys_pread_full(...) sys_pread_full_(FAULT_SITE, __VA_ARGS__)
#define sys_read_restart(...) sys_read_restart_(FAULT_SITE, __VA_ARGS__)
#define sys_getdents64_restart(...) sys_getdents64_restart_(FAULT_SITE, __VA_ARGS__)
#define sys_write_full(...) sys_write_full_(FAULT_SITE, __VA_ARGS__)
#define sys_writev_full(...) sys_writev_full_(FAULT_SITE, __VA_ARGS__)

/* The same two read loops over another one-call read at an offset (a
 * reader backend's, which may go through the ring): `pread` is called
 * with ctx and returns what one call returns, or -errno. */
ssize_t sys_pread_full_by(ssize_t (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t off),
                          void *ctx, int fd, void *buf, size_t n, uint64_t off);
ssize_t sys_pread_restart_by(ssize_t (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t off),
                             void *ctx, int fd, void *buf, size_t n, uint64_t off);

/* futex on a 32-bit word, private to the process. */
int sys_futex_wait(uint32_t *word, uint32_t expected);
/* The same, ending after ns at most (0: no limit), as a wake-up does (0). */
int sys_futex_wait_for(uint32_t *word, uint32_t expected, uint64_t ns);
int sys_futex_wake(uint32_t *word, int n);

/* Counts a syscall made on our behalf by code that cannot use a wrapper
 * (liburing's io_uring_enter/io_uring_setup/io_uring_register). */
void sys_count(enum sys_call c);

/* Fault injection for such a call: returns -errno when it should fail, 0
 * otherwise.  Always 0 unless built with -Dfault_injection=true and
 * INGEST_FAULT set. */
#define sys_fault(c) sys_fault_(FAULT_SITE, (c))

#endif
