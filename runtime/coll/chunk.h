/*
 * How the collectives cut a buffer: into one block per rank (the ring's
 * chunks) and each block into segments (the unit of pipelining). Pure
 * arithmetic, shared by every algorithm so that sender and receiver always
 * agree on the size of each message, and unit-tested on its own.
 */
#ifndef RP_COLL_CHUNK_H
#define RP_COLL_CHUNK_H

#include <stddef.h>

/* Elements in block @i when @count elements are split over @n blocks: the
 * first count % n blocks hold one more than the rest. */
size_t rp__chunk_count(size_t count, int n, int i);

/* Index of the first element of block @i. */
size_t rp__chunk_offset(size_t count, int n, int i);

/* Number of segments of at most @seg elements (>= 1) in @elems elements;
 * 0 for an empty block. */
size_t rp__seg_count(size_t elems, size_t seg);

/* Largest power of two not above @n (n >= 1). */
int rp__pow2_floor(int n);

/* (a mod n) for a possibly negative a, n > 0. */
static inline int rp__mod(int a, int n)
{
    int m = a % n;
    return m < 0 ? m + n : m;
}

#endif /* RP_COLL_CHUNK_H */
