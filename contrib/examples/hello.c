/*
 * The smallest ringpoint program: join the job, say who we are, leave.
 *
 *   cc hello.c $(pkg-config --cflags --libs ringpoint) -o hello
 *   srun --mpi=pmix -N2 -n4 --ckpt-interval=15m ./hello
 */
#include <ringpoint.h>

#include <stdio.h>

int main(void)
{
    rp_context_attr_t attr = {
        .field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE |
                      RP_CONTEXT_ATTR_FIELD_NODE_NAME |
                      RP_CONTEXT_ATTR_FIELD_CKPT_INTERVAL,
    };
    rp_context_h ctx;
    rp_status_t status;

    status = rp_init(NULL, &ctx);
    if (status != RP_OK) {
        fprintf(stderr, "hello: rp_init: %s\n", rp_status_string(status));
        return 1;
    }
    rp_context_query(ctx, &attr);
    printf("hello from rank %d of %d on %s (checkpoint every %llus)\n",
           attr.rank, attr.size, attr.node_name,
           (unsigned long long)attr.ckpt_interval_s);
    rp_finalize(ctx);
    return 0;
}
