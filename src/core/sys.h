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
	X(unlinkat)               \
	X(io_uring_setup)         \
	X(io_uring_enter)         \
	X(io_uring_register)      \
	X(futex)                  \
	X(ioctl)                  \
	X(faccessat)              \
	X(sched_getaffinity)      \
	X(prlimit64)              \
	X(prctl)

enum sys_call {
#define SYS_CALL_ENUM(name) SC_##name,
	SYS_CALLS(SYS_CALL_ENUM)
#undef SYS_CALL_ENUM
	SC__COUNT
};

const char *sys_call_name(enum sys_call c);

struct statx;

int sys_openat(int dirfd, const char *path, int flags, mode_t mode);
int sys_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *out);
int sys_fstat(int fd, struct stat *st);
ssize_t sys_read(int fd, void *buf, size_t n);
ssize_t sys_pread(int fd, void *buf, size_t n, uint64_t off);
int sys_close(int fd);
ssize_t sys_getdents64(int fd, void *buf, size_t n);
ssize_t sys_write(int fd, const void *buf, size_t n);
ssize_t sys_writev(int fd, const struct iovec *iov, int iovcnt);
int sys_ftruncate(int fd, uint64_t len);
/* Only on the failure path of the output (src/ingest.c, output_cut). */
int64_t sys_lseek(int fd, int64_t off, int whence);
int sys_fsync(int fd);
int sys_renameat(int olddir, const char *oldpath, int newdir, const char *newpath);
int sys_unlinkat(int dirfd, const char *path, int flags);
int sys_faccessat(int dirfd, const char *path, int mode);
int sys_sched_getaffinity(size_t size, void *mask);
int sys_prlimit_nofile(uint64_t *soft, uint64_t *hard, uint64_t new_soft);
/* Names the calling thread (PR_SET_NAME; at most 15 bytes are kept).
 * glibc's pthread_setname_np on another thread opens /proc/self/task/N/comm
 * instead: uncounted syscalls, so threads name themselves. */
int sys_set_thread_name(const char *name);
/* futex on a 32-bit word, private to the process. */
int sys_futex_wait(uint32_t *word, uint32_t expected);
int sys_futex_wake(uint32_t *word, int n);

/* Counts a syscall made on our behalf by code that cannot use a wrapper
 * (liburing's io_uring_enter/io_uring_setup/io_uring_register). */
void sys_count(enum sys_call c);

/* Fault injection: returns -errno when this call should fail, 0 otherwise.
 * Always 0 unless built with -Dfault_injection=true and INGEST_FAULT set. */
int sys_fault(enum sys_call c);

#endif
