/*
 * The allreduce's one per-element expression, which fixes its bits.
 *
 * For n ranks, element i of the result is the same expression of the n
 * ranks' element i wherever it lies: at any offset in a buffer of any
 * length, in any grouping of tensors into buffers, whichever path the size
 * selects. It is recursive doubling's: ranks past the largest power of
 * two p2 fold into rank - p2 first (x_q OP x_q+p2), then pairs,
 * quadruples, ... of consecutive ranks, the lower operand always first:
 * for 3 ranks (x0 + x2) + x1, for 4 (x0 + x1) + (x2 + x3). float16 and
 * bfloat16 are combined in float32 and rounded once (with wire
 * compression, every operation's result is rounded to the half type);
 * AVG divides the sum by n at the end.
 *
 * Recursive doubling and halving evaluate it by their exchanges
 * (allreduce_rd.c, allreduce_rh.c), the two-rank ring by its one fold
 * (allreduce_ring.c: x0 OP x1). Every other path has each element's n
 * operands in one place and evaluates it here: the owner of a block in the transport's bandwidth algorithm
 * (allreduce_owners.c), the node's segment (shm_coll.c) and the
 * single-copy reads (shm_cma.c). The reduction kernels are element-wise,
 * so how the elements are cut into pieces never shows in the bits.
 */
#ifndef RP_COLL_EVAL_H
#define RP_COLL_EVAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ringpoint/status.h"
#include "ringpoint/types.h"

struct rp_comm;

/* Elements per pass of the expression: its temporaries stay in L1/L2. */
#define RP_EVAL_BLK 1024

typedef struct rp__eval {
    int n;
    size_t es, wes;
    rp_dtype_t dtype, wtype;
    rp_op_t op, rop;
    bool half;        /* widen to float32, round once */
    const void **src; /* [n]: each rank's operand, from element p0 on */
    const void **v;   /* [n]: the expression's operands, internal */
    size_t p0;        /* the first element src[] points at */
    char *tmp;        /* scratch: p2 + n blocks of RP_EVAL_BLK wes */
} rp__eval_t;

/* Fill @a for an allreduce of @dtype/@op among @n >= 2 ranks, with @ptrs (2n
 * entries, the caller's) for the operand lists, and take its scratch
 * (the communicator's tmp buffer). */
rp_status_t rp__eval_init(struct rp_comm *c, rp__eval_t *a, int n,
                          const void **ptrs, rp_dtype_t dtype, rp_op_t op,
                          bool half_wire);

/* Elements [lo, lo + len) of the result into @dst, from a->src. @dst may
 * be an operand's own memory (in place): each piece is written after all
 * its operands were read. */
void rp__eval(const rp__eval_t *a, size_t lo, size_t len, char *dst);

#endif /* RP_COLL_EVAL_H */
