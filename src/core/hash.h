/* SPDX-License-Identifier: MIT */
/* The one hash of the house: 64-bit FNV-1a.  Chosen for stable output ids
 * and shard numbers (the same bytes give the same value on every machine
 * and in every release, which a seeded hash would not), not for resistance
 * to chosen input: nothing that an attacker can collide decides a
 * security question.  Feed pieces with hash_fnv1a(h, ...), starting from
 * HASH_FNV1A_INIT. */
#ifndef INGEST_CORE_HASH_H
#define INGEST_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A_INIT UINT64_C(0xcbf29ce484222325)

static inline uint64_t hash_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

#endif
