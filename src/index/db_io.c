/* SPDX-License-Identifier: MIT */
/* The counting VFS: see db_io.h.  Every method hands its call to the VFS
 * that was the default when this one was registered, unchanged; the file
 * methods count before they call, so a failed call is counted as the
 * system call it made. */
#include "index/db_io.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

static _Atomic uint64_t db_io_n[DB_IO__COUNT];

static void db_io_count(enum db_io_op op)
{
	atomic_fetch_add_explicit(&db_io_n[op], 1, memory_order_relaxed);
}

void db_io_reset(void)
{
	for (int i = 0; i < DB_IO__COUNT; i++)
		atomic_store_explicit(&db_io_n[i], 0, memory_order_relaxed);
}

void db_io_get(struct db_io_counts *out)
{
	for (int i = 0; i < DB_IO__COUNT; i++)
		out->n[i] = atomic_load_explicit(&db_io_n[i], memory_order_relaxed);
}

const char *const db_io_op_names[DB_IO__COUNT] = {
#define DB_IO_NAME(name) #name,
	DB_IO_OPS(DB_IO_NAME)
#undef DB_IO_NAME
};

/* An open file: ours, then the real VFS's right after it (szOsFile). */
struct db_io_file {
	sqlite3_file base;
	sqlite3_file *real;
};

static sqlite3_file *db_io_real(sqlite3_file *f)
{
	return ((struct db_io_file *)f)->real;
}

static int db_io_close(sqlite3_file *f)
{
	db_io_count(DB_IO_close);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xClose(r);
}

static int db_io_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	db_io_count(DB_IO_read);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xRead(r, buf, n, off);
}

static int db_io_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	db_io_count(DB_IO_write);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xWrite(r, buf, n, off);
}

static int db_io_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	db_io_count(DB_IO_truncate);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xTruncate(r, size);
}

static int db_io_sync(sqlite3_file *f, int flags)
{
	db_io_count(DB_IO_sync);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xSync(r, flags);
}

static int db_io_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	db_io_count(DB_IO_size);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xFileSize(r, size);
}

static int db_io_lock(sqlite3_file *f, int level)
{
	db_io_count(DB_IO_lock);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xLock(r, level);
}

static int db_io_unlock(sqlite3_file *f, int level)
{
	db_io_count(DB_IO_lock);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xUnlock(r, level);
}

static int db_io_check_reserved(sqlite3_file *f, int *out)
{
	db_io_count(DB_IO_lock);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xCheckReservedLock(r, out);
}

/* Not counted: file controls, sector size, device characteristics and
 * memory barriers answer from memory in the unix VFS. */
static int db_io_file_control(sqlite3_file *f, int op, void *arg)
{
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xFileControl(r, op, arg);
}

static int db_io_sector_size(sqlite3_file *f)
{
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xSectorSize(r);
}

static int db_io_device(sqlite3_file *f)
{
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xDeviceCharacteristics(r);
}

static int db_io_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out)
{
	db_io_count(DB_IO_shm_map);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xShmMap(r, region, size, extend, out);
}

static int db_io_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	db_io_count(DB_IO_lock);
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xShmLock(r, offset, n, flags);
}

static void db_io_shm_barrier(sqlite3_file *f)
{
	sqlite3_file *r = db_io_real(f);
	r->pMethods->xShmBarrier(r);
}

static int db_io_shm_unmap(sqlite3_file *f, int delete_flag)
{
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xShmUnmap(r, delete_flag);
}

static int db_io_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **out)
{
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xFetch(r, off, n, out);
}

static int db_io_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = db_io_real(f);
	return r->pMethods->xUnfetch(r, off, p);
}

/* Version 3, as the unix VFS's; a real file of an older version gets the
 * methods of its version only (db_io_open). */
static const sqlite3_io_methods db_io_methods[3] = {
	{ 1, db_io_close, db_io_read, db_io_write, db_io_truncate, db_io_sync, db_io_file_size, db_io_lock,
	  db_io_unlock, db_io_check_reserved, db_io_file_control, db_io_sector_size, db_io_device, NULL, NULL,
	  NULL, NULL, NULL, NULL },
	{ 2, db_io_close, db_io_read, db_io_write, db_io_truncate, db_io_sync, db_io_file_size, db_io_lock,
	  db_io_unlock, db_io_check_reserved, db_io_file_control, db_io_sector_size, db_io_device,
	  db_io_shm_map, db_io_shm_lock, db_io_shm_barrier, db_io_shm_unmap, NULL, NULL },
	{ 3, db_io_close, db_io_read, db_io_write, db_io_truncate, db_io_sync, db_io_file_size, db_io_lock,
	  db_io_unlock, db_io_check_reserved, db_io_file_control, db_io_sector_size, db_io_device,
	  db_io_shm_map, db_io_shm_lock, db_io_shm_barrier, db_io_shm_unmap, db_io_fetch, db_io_unfetch },
};

static sqlite3_vfs *db_io_under(sqlite3_vfs *vfs)
{
	return vfs->pAppData;
}

static int db_io_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	struct db_io_file *p = (struct db_io_file *)f;
	p->base.pMethods = NULL;
	p->real = (sqlite3_file *)(p + 1);
	db_io_count(DB_IO_open);
	sqlite3_vfs *under = db_io_under(vfs);
	p->real->pMethods = NULL;
	int rc = under->xOpen(under, name, p->real, flags, out_flags);
	/* a failed open that left its methods set wants its xClose (SQLite's
	 * contract): ours forwards it */
	const sqlite3_io_methods *m = p->real->pMethods;
	if (m) {
		/* the methods of the version whose methods the real file has:
		 * SQLite asks the version, then calls what it promises */
		int v = m->iVersion < 1 ? 1 : m->iVersion > 3 ? 3 : m->iVersion;
		if (v == 3 && (!m->xFetch || !m->xUnfetch))
			v = 2;
		if (v == 2 && (!m->xShmMap || !m->xShmLock || !m->xShmBarrier || !m->xShmUnmap))
			v = 1;
		p->base.pMethods = &db_io_methods[v - 1];
	}
	return rc;
}

static int db_io_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	db_io_count(DB_IO_delete);
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xDelete(under, name, sync_dir);
}

static int db_io_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	db_io_count(DB_IO_access);
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xAccess(under, name, flags, out);
}

static int db_io_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xFullPathname(under, name, n, out);
}

static void *db_io_dl_open(sqlite3_vfs *vfs, const char *name)
{
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xDlOpen(under, name);
}

static void db_io_dl_error(sqlite3_vfs *vfs, int n, char *msg)
{
	sqlite3_vfs *under = db_io_under(vfs);
	under->xDlError(under, n, msg);
}

static void (*db_io_dl_sym(sqlite3_vfs *vfs, void *lib, const char *sym))(void)
{
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xDlSym(under, lib, sym);
}

static void db_io_dl_close(sqlite3_vfs *vfs, void *lib)
{
	sqlite3_vfs *under = db_io_under(vfs);
	under->xDlClose(under, lib);
}

static int db_io_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xRandomness(under, n, out);
}

static int db_io_sleep(sqlite3_vfs *vfs, int us)
{
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xSleep(under, us);
}

static int db_io_current_time(sqlite3_vfs *vfs, double *out)
{
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xCurrentTime(under, out);
}

static int db_io_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	sqlite3_vfs *under = db_io_under(vfs);
	return under->xGetLastError ? under->xGetLastError(under, n, out) : 0;
}

static int db_io_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	sqlite3_vfs *under = db_io_under(vfs);
	if (under->iVersion >= 2 && under->xCurrentTimeInt64)
		return under->xCurrentTimeInt64(under, out);
	double d;
	int rc = under->xCurrentTime(under, &d);
	*out = (sqlite3_int64)(d * 86400000.0);
	return rc;
}

static sqlite3_vfs db_io_vfs_;
/* Its name: one per copy of this code in the process (a host's
 * libingest.so.1 and the Python module's own copy each register theirs),
 * since SQLite finds a VFS by name and a later one shadows an earlier. */
static char db_io_vfs_name[48];
static atomic_int db_io_state;   /* 0: not yet; 1: registered; -1: cannot be */
/* Ours: a static mutex of SQLite's (SQLITE_MUTEX_STATIC_APP1) is the
 * host's, and held by it while this registers would deadlock. */
static pthread_mutex_t db_io_register_lock = PTHREAD_MUTEX_INITIALIZER;

const char *db_io_vfs(void)
{
	int st = atomic_load_explicit(&db_io_state, memory_order_acquire);
	if (st == 0) {
		pthread_mutex_lock(&db_io_register_lock);
		st = atomic_load_explicit(&db_io_state, memory_order_relaxed);
		if (st == 0) {
			sqlite3_vfs *under = sqlite3_initialize() == SQLITE_OK ? sqlite3_vfs_find(NULL) : NULL;
			st = -1;
			if (under) {
				snprintf(db_io_vfs_name, sizeof(db_io_vfs_name), "ingest-counting-%p",
				         (void *)&db_io_vfs_);
				/* version 2: the interface of the system-call
				 * hooks (version 3) is the unix VFS's own, and
				 * SQLite asks for it by the VFS it opened with */
				db_io_vfs_ = (sqlite3_vfs){
					.iVersion = 2,
					.szOsFile = (int)sizeof(struct db_io_file) + under->szOsFile,
					.mxPathname = under->mxPathname,
					.zName = db_io_vfs_name,
					.pAppData = under,
					.xOpen = db_io_open,
					.xDelete = db_io_delete,
					.xAccess = db_io_access,
					.xFullPathname = db_io_full_pathname,
					.xDlOpen = db_io_dl_open,
					.xDlError = db_io_dl_error,
					.xDlSym = db_io_dl_sym,
					.xDlClose = db_io_dl_close,
					.xRandomness = db_io_randomness,
					.xSleep = db_io_sleep,
					.xCurrentTime = db_io_current_time,
					.xGetLastError = db_io_last_error,
					.xCurrentTimeInt64 = db_io_current_time64,
				};
				if (sqlite3_vfs_register(&db_io_vfs_, 0) == SQLITE_OK)
					st = 1;
			}
			atomic_store_explicit(&db_io_state, st, memory_order_release);
		}
		pthread_mutex_unlock(&db_io_register_lock);
	}
	return st > 0 ? db_io_vfs_name : NULL;
}

bool db_io_counting(void)
{
	return atomic_load_explicit(&db_io_state, memory_order_acquire) > 0;
}

/* A copy of this code unloaded (dlclose of a libingest, of the Python
 * module) takes its VFS out of SQLite's list, which would otherwise point
 * into unmapped memory for the host's next open. */
__attribute__((destructor)) static void db_io_unregister(void)
{
	if (atomic_load_explicit(&db_io_state, memory_order_acquire) > 0)
		sqlite3_vfs_unregister(&db_io_vfs_);
}
