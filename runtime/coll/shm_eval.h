/*
 * The allreduce's per-element expression, evaluated from operands the
 * caller lays out (shm_coll.c): the segment's slots, or copies of the
 * peers' data read across processes (shm_cma.c). Both paths must give the
 * transport's bits, so both use this one evaluator.
 */
#ifndef RP_COLL_SHM_EVAL_H
#define RP_COLL_SHM_EVAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ringpoint/types.h"

struct rp_comm;

typedef struct rp__shm_ar {
    int n;
    size_t count, es, wes;
    rp_dtype_t dtype, wtype;
    rp_op_t op, rop;
    bool half; /* widen to float32, round once */
    bool rd;
    const void **src; /* [n]: each rank's operand, from element p0 on */
    const void **v;   /* [n]: recursive doubling's operands */
    size_t p0;        /* the first element src[] points at */
    char *tmp;        /* scratch: p2 + n blocks of RP_SHM_BLK float32/wes */
} rp__shm_ar_t;

/* Fill @a for an allreduce of @count elements (the whole call's, which
 * decides the ring's blocks) and get its scratch. */
rp_status_t rp__shm_ar_init(struct rp_comm *c, rp__shm_ar_t *a, size_t count,
                            rp_dtype_t dtype, rp_op_t op, bool half_wire,
                            bool rd);
/* Elements [lo, lo + len) of the result into @dst, from a->src. */
void rp__shm_eval(const rp__shm_ar_t *a, size_t lo, size_t len, char *dst);

#endif /* RP_COLL_SHM_EVAL_H */
