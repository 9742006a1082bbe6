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

/* FNV's low bits are weak for short keys: a value is mixed again (the
 * murmur3 fmix64 finaliser) before its low bits pick a slot or a shard. */
static inline uint64_t hash_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

#endif
