/* SPDX-License-Identifier: MIT */
/* How many threads the machine lets this process use.
 *
 * The default of --threads: the CPUs in the affinity mask, capped by the
 * cgroup v2 cpu.max quota, probed once per process (see parallelism.c for the
 * trade-off of caching it). */
#ifndef INGEST_PARALLELISM_H
#define INGEST_PARALLELISM_H

/* Available CPUs: the affinity mask (sched_getaffinity) capped by the cgroup
 * v2 cpu.max quota (ceil(quota / period)) of this process's cgroup and of its
 * ancestors.  Probed on the first call and cached for the process; a quota or
 * mask changed later is not seen.  Never less than 1, never more than
 * LIMIT_MAX_THREADS.  Thread-safe. */
unsigned parallelism_default(void);

/* The CPUs one cpu.max file grants: "max 100000" gives 0 (no quota),
 * "150000 100000" gives 2 (a quota of 1.5 CPUs still runs two threads, each
 * part of the time).  Malformed text gives 0: an unreadable quota must not
 * serialise the run.  Exposed for the unit tests. */
unsigned parallelism_cpu_max_parse(const char *text);

#endif
