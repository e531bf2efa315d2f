/*
 * ringpoint-coll-check: what its parts share.
 */
#ifndef RP_TESTS_COLL_CHECK_H
#define RP_TESTS_COLL_CHECK_H

#include <ringpoint.h>

#include <stddef.h>
#include <stdint.h>

extern int g_rank, g_size, g_errors;
extern uint64_t g_hash;

uint64_t fnv(uint64_t h, const void *data, size_t len);
double now_s(void);
/* Exit 2 unless @st is RP_OK. */
void check_status(const char *what, rp_status_t st);
/* Count an error unless every rank holds the same bits; hash them in. */
void check_identical(rp_context_h ctx, const char *what, const void *buf,
                     size_t len);

/* Element @i of @buf of type @t, from or to a double (coll_check.c). */
void store(rp_dtype_t t, void *buf, size_t i, double v);
double load(rp_dtype_t t, const void *buf, size_t i);

/* coll_check_exchange.c */
void check_reduce_scatter(rp_context_h ctx, size_t max_count);
void check_alltoall(rp_context_h ctx, size_t max_count);
void check_join(rp_context_h ctx);

/* coll_check_nb.c */
void check_nonblocking(rp_context_h ctx, size_t max_count);
void check_compression(rp_context_h ctx, size_t max_count);
void check_signature(rp_context_h ctx);

/* coll_check_layout.c */
void check_layout(rp_context_h ctx);

#endif
