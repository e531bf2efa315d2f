/*
 * Block and segment arithmetic for the collectives.
 */
#include "config.h"

#include "coll/chunk.h"

size_t rp__chunk_count(size_t count, int n, int i)
{
    size_t base = count / (size_t)n;

    return base + ((size_t)i < count % (size_t)n ? 1 : 0);
}

size_t rp__chunk_offset(size_t count, int n, int i)
{
    size_t base = count / (size_t)n, extra = count % (size_t)n;
    size_t ui = (size_t)i;

    return base * ui + (ui < extra ? ui : extra);
}

size_t rp__seg_count(size_t elems, size_t seg)
{
    return (elems + seg - 1) / seg;
}

int rp__pow2_floor(int n)
{
    int p = 1;

    while (p <= n / 2) {
        p *= 2;
    }
    return p;
}
