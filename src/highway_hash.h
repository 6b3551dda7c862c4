/* HighwayHash-128 (Alakuijala, Cox, Wassenberg: "Fast keyed hash/pseudo-
 * random function using SIMD multiply and permute", 2016), the portable
 * form, and Redisson's Hash.hash128toBase64 on top of it: the faster
 * multi-lock stores each value as that hash, so two clients (and Redisson)
 * that hash the same bytes lock the same field. */
#ifndef RLOCK_HIGHWAY_HASH_H
#define RLOCK_HIGHWAY_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The 128-bit hash of data[0..len) under key. */
void rlock__highway_hash128(const uint64_t key[4], const void *data, size_t len, uint64_t out[2]);

/* Redisson's Hash.hash128toBase64: the hash under Redisson's key, its two
 * words big-endian, in standard Base64 without the trailing "==": 22
 * characters and a NUL in out. */
#define RLOCK__HASH_B64_LEN 22
void rlock__hash128_base64(const void *data, size_t len, char out[RLOCK__HASH_B64_LEN + 1]);

#endif
