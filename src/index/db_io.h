/* SPDX-License-Identifier: MIT */
/* The database's own file operations, counted for --stats.  ingest's
 * syscalls are counted at their call sites (core/sys.h); SQLite's are
 * not ingest's to count there, and would blur the per-file contract, so
 * the index's connections open their files through a VFS of ours,
 * "ingest-counting", which hands every call to the default VFS (unix) and
 * counts the ones that are a system call there: a read is a pread64, a
 * write a pwrite64, a sync an fdatasync or fsync, and so on.  The VFS is
 * registered once per copy of this code, under a name of its own, never
 * made the default, and taken out when its code is unloaded: a program
 * hosting libingest keeps its own SQLite configuration. */
#ifndef INGEST_INDEX_DB_IO_H
#define INGEST_INDEX_DB_IO_H

#include <stdbool.h>
#include <stdint.h>

#define DB_IO_OPS(X) X(read) X(write) X(sync) X(truncate) X(size) X(open) X(close) X(delete) \
	X(access) X(lock) X(shm_map)

enum db_io_op {
#define DB_IO_ENUM(name) DB_IO_##name,
	DB_IO_OPS(DB_IO_ENUM)
#undef DB_IO_ENUM
	DB_IO__COUNT
};

struct db_io_counts {
	uint64_t n[DB_IO__COUNT];
};

/* The VFS's name for sqlite3_open_v2, registering it on first use; NULL
 * (SQLite's default, uncounted) when it cannot be registered. */
const char *db_io_vfs(void);
/* Whether it was registered: the counts mean something. */
bool db_io_counting(void);

/* The counts since the last reset, process-wide: one run at a time writes
 * an index (ingest_run's rule), and nothing else opens through the VFS
 * (db_open_path_counted, the index's connections only). */
void db_io_reset(void);
void db_io_get(struct db_io_counts *out);
/* Each operation's name, in enum db_io_op's order (--stats prints them). */
extern const char *const db_io_op_names[DB_IO__COUNT];

#endif
