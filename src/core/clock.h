/* SPDX-License-Identifier: MIT */
/* The one clock of the house: CLOCK_MONOTONIC in nanoseconds.  glibc
 * answers it from the vDSO, with no syscall, so timing a wait never
 * disturbs the syscall counters (docs/ARCHITECTURE.md, "Syscall
 * accounting"). */
#ifndef INGEST_CORE_CLOCK_H
#define INGEST_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
