/* See highway_hash.h. The portable algorithm, lane by lane, as the
 * reference C implementation and Redisson's HighwayHash.java do it. */
#include "highway_hash.h"

#include <string.h>

typedef struct hh_state {
    uint64_t v0[4], v1[4], mul0[4], mul1[4];
} hh_state;

static void reset(const uint64_t key[4], hh_state *s) {
    static const uint64_t init0[4] = {0xdbe6d5d5fe4cce2fULL, 0xa4093822299f31d0ULL,
                                      0x13198a2e03707344ULL, 0x243f6a8885a308d3ULL};
    static const uint64_t init1[4] = {0x3bd39e10cb0ef593ULL, 0xc0acf169b5f18a8cULL,
                                      0xbe5466cf34e90c6cULL, 0x452821e638d01377ULL};
    for (int i = 0; i < 4; i++) {
        s->mul0[i] = init0[i];
        s->mul1[i] = init1[i];
        s->v0[i] = init0[i] ^ key[i];
        s->v1[i] = init1[i] ^ ((key[i] >> 32) | (key[i] << 32));
    }
}

static void zipper_merge_add(uint64_t v1, uint64_t v0, uint64_t *add1, uint64_t *add0) {
    *add0 += (((v0 & 0xff000000ULL) | (v1 & 0xff00000000ULL)) >> 24) |
             (((v0 & 0xff0000000000ULL) | (v1 & 0xff000000000000ULL)) >> 16) | (v0 & 0xff0000ULL) |
             ((v0 & 0xff00ULL) << 32) | ((v1 & 0xff00000000000000ULL) >> 8) | (v0 << 56);
    *add1 += (((v1 & 0xff000000ULL) | (v0 & 0xff00000000ULL)) >> 24) | (v1 & 0xff0000ULL) |
             ((v1 & 0xff0000000000ULL) >> 16) | ((v1 & 0xff00ULL) << 24) |
             ((v0 & 0xff000000000000ULL) >> 8) | ((v1 & 0xffULL) << 48) |
             (v0 & 0xff00000000000000ULL);
}

static void update(const uint64_t lanes[4], hh_state *s) {
    for (int i = 0; i < 4; i++) {
        s->v1[i] += s->mul0[i] + lanes[i];
        s->mul0[i] ^= (s->v1[i] & 0xffffffffULL) * (s->v0[i] >> 32);
        s->v0[i] += s->mul1[i];
        s->mul1[i] ^= (s->v0[i] & 0xffffffffULL) * (s->v1[i] >> 32);
    }
    zipper_merge_add(s->v1[1], s->v1[0], &s->v0[1], &s->v0[0]);
    zipper_merge_add(s->v1[3], s->v1[2], &s->v0[3], &s->v0[2]);
    zipper_merge_add(s->v0[1], s->v0[0], &s->v1[1], &s->v1[0]);
    zipper_merge_add(s->v0[3], s->v0[2], &s->v1[3], &s->v1[2]);
}

static uint64_t read64_le(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static void update_packet(const uint8_t packet[32], hh_state *s) {
    uint64_t lanes[4];
    for (int i = 0; i < 4; i++) {
        lanes[i] = read64_le(packet + 8 * i);
    }
    update(lanes, s);
}

/* Each 32-bit half of each lane rotated left by count (1..31). */
static void rotate32_by(unsigned count, uint64_t lanes[4]) {
    for (int i = 0; i < 4; i++) {
        uint32_t half0 = (uint32_t)lanes[i];
        uint32_t half1 = (uint32_t)(lanes[i] >> 32);
        half0 = (half0 << count) | (half0 >> (32 - count));
        half1 = (half1 << count) | (half1 >> (32 - count));
        lanes[i] = (uint64_t)half0 | ((uint64_t)half1 << 32);
    }
}

/* The last 1..31 bytes. */
static void update_remainder(const uint8_t *bytes, size_t size_mod32, hh_state *s) {
    size_t size_mod4 = size_mod32 & 3;
    const uint8_t *remainder = bytes + (size_mod32 & ~(size_t)3);
    uint8_t packet[32] = {0};
    for (int i = 0; i < 4; i++) {
        s->v0[i] += ((uint64_t)size_mod32 << 32) + size_mod32;
    }
    rotate32_by((unsigned)size_mod32, s->v1);
    memcpy(packet, bytes, (size_t)(remainder - bytes));
    if (size_mod32 & 16) {
        for (int i = 0; i < 4; i++) {
            packet[28 + i] = remainder[i + size_mod4 - 4];
        }
    } else if (size_mod4 != 0) {
        packet[16 + 0] = remainder[0];
        packet[16 + 1] = remainder[size_mod4 >> 1];
        packet[16 + 2] = remainder[size_mod4 - 1];
    }
    update_packet(packet, s);
}

static void permute_and_update(hh_state *s) {
    uint64_t p[4] = {(s->v0[2] >> 32) | (s->v0[2] << 32), (s->v0[3] >> 32) | (s->v0[3] << 32),
                     (s->v0[0] >> 32) | (s->v0[0] << 32), (s->v0[1] >> 32) | (s->v0[1] << 32)};
    update(p, s);
}

void rlock__highway_hash128(const uint64_t key[4], const void *data, size_t len, uint64_t out[2]) {
    const uint8_t *bytes = data;
    hh_state s;
    reset(key, &s);
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        update_packet(bytes + i, &s);
    }
    if ((len & 31) != 0) {
        update_remainder(bytes + i, len & 31, &s);
    }
    for (int k = 0; k < 6; k++) {
        permute_and_update(&s);
    }
    out[0] = s.v0[0] + s.mul0[0] + s.v1[2] + s.mul1[2];
    out[1] = s.v0[1] + s.mul0[1] + s.v1[3] + s.mul1[3];
}

void rlock__hash128_base64(const void *data, size_t len, char out[RLOCK__HASH_B64_LEN + 1]) {
    /* org.redisson.misc.Hash.KEY */
    static const uint64_t key[4] = {0x9e3779b97f4a7c15ULL, 0xf39cc0605cedc834ULL,
                                    0x1082276bf3a27251ULL, 0xf86c6a11d0c18e95ULL};
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint64_t h[2];
    rlock__highway_hash128(key, data, len, h);
    uint8_t be[18] = {0}; /* 16 bytes, padded to a multiple of 3 */
    for (int w = 0; w < 2; w++) {
        for (int b = 0; b < 8; b++) {
            be[8 * w + b] = (uint8_t)(h[w] >> (56 - 8 * b));
        }
    }
    size_t o = 0;
    for (int i = 0; i < 18 && o < RLOCK__HASH_B64_LEN; i += 3) {
        uint32_t v = ((uint32_t)be[i] << 16) | ((uint32_t)be[i + 1] << 8) | be[i + 2];
        for (int k = 3; k >= 0 && o < RLOCK__HASH_B64_LEN; k--) {
            out[o++] = b64[(v >> (6 * k)) & 63];
        }
    }
    out[RLOCK__HASH_B64_LEN] = '\0';
}
