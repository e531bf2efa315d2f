/*
 * ucx-exchange-bench: the floor under a small collective of two ranks over
 * UCX. Each iteration every rank sends S bytes to its partner (rank ^ 1)
 * and receives S bytes from it with UCX tagged messages, polling the
 * worker until both are done: a 2-rank allreduce of S bytes below the
 * ring's size (one exchange of the whole buffer), or a barrier with S = 0.
 * Nothing else runs in the loop (no reduction, no deadline, no failure
 * notices), so ringpoint's and Open MPI's pml ucx times over the same
 * transport are set against what UCX itself takes for the messages they
 * cannot avoid. scripts/bench-allreduce.sh runs it beside them in every
 * round of its tcp layout.
 *
 *   mpirun -np 2 [-x UCX_TLS=tcp,self] ucx-exchange-bench [-b MIN] [-e MAX]
 *        [-f FACTOR] [-n ITERS] [-w WARMUP] [-m median|mean|loop]
 *
 * MPI only starts the ranks, exchanges the UCX worker addresses and
 * combines the times (run it with Open MPI's ob1, which leaves UCX alone:
 * the script passes --mca pml ob1). The table and the statistic are
 * ringpoint-bench's (runtime/tools/benchtable.c): per size, the median (or
 * mean) of the slowest rank's per-iteration times, or with -m loop the
 * loop's time per call; both placement columns show the same exchange,
 * timed twice. #wrong counts received bytes that differ from the pattern.
 */
#include <mpi.h>
#include <ucp/api/ucp.h>

#include "tools/benchtable.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bench {
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h ep;
    int rank, partner;
} bench_t;

/* Poll until @req is done; false if it failed. */
static bool wait_req(bench_t *b, ucs_status_ptr_t req)
{
    ucs_status_t st;

    if (req == NULL) {
        return true;
    }
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "ucx-exchange-bench: %s\n",
                ucs_status_string(UCS_PTR_STATUS(req)));
        return false;
    }
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(b->worker);
    }
    ucp_request_free(req);
    if (st != UCS_OK) {
        fprintf(stderr, "ucx-exchange-bench: %s\n", ucs_status_string(st));
    }
    return st == UCS_OK;
}

/* One exchange of @bytes with the partner: the receive posted first, as
 * ringpoint and Open MPI post theirs. */
static bool exchange(bench_t *b, const char *sbuf, char *rbuf, size_t bytes,
                     uint64_t tag)
{
    ucp_request_param_t p = {0};
    ucs_status_ptr_t rreq, sreq;
    bool ok;

    rreq = ucp_tag_recv_nbx(b->worker, rbuf, bytes, tag, UINT64_MAX, &p);
    sreq = ucp_tag_send_nbx(b->ep, sbuf, bytes, tag, &p);
    ok = wait_req(b, sreq);
    return wait_req(b, rreq) && ok;
}

static int setup(bench_t *b)
{
    ucp_params_t params = {0};
    ucp_worker_params_t wparams = {0};
    ucp_ep_params_t eparams = {0};
    ucp_address_t *addr;
    size_t len;
    unsigned long mine, max_len = 0;
    char *theirs;
    int rc = -1;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    if (ucp_init(&params, NULL, &b->context) != UCS_OK) {
        return -1;
    }
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(b->context, &wparams, &b->worker) != UCS_OK ||
        ucp_worker_get_address(b->worker, &addr, &len) != UCS_OK) {
        return -1;
    }
    /* Only the partner's address matters: a pairwise swap, into room for
     * the longest. */
    mine = len;
    MPI_Allreduce(&mine, &max_len, 1, MPI_UNSIGNED_LONG, MPI_MAX,
                  MPI_COMM_WORLD);
    theirs = malloc(max_len);
    if (theirs != NULL) {
        MPI_Sendrecv(addr, (int)len, MPI_BYTE, b->partner, 1, theirs,
                     (int)max_len, MPI_BYTE, b->partner, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        eparams.address = (const ucp_address_t *)theirs;
        rc = ucp_ep_create(b->worker, &eparams, &b->ep) == UCS_OK ? 0 : -1;
    }
    free(theirs);
    ucp_worker_release_address(b->worker, addr);
    return rc;
}

static void teardown(bench_t *b)
{
    ucp_request_param_t p = {0};

    if (b->ep != NULL) {
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = 0; /* a flush first: the partner may still want our acks */
        wait_req(b, ucp_ep_close_nbx(b->ep, &p));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (b->worker != NULL) {
        ucp_worker_destroy(b->worker);
    }
    if (b->context != NULL) {
        ucp_cleanup(b->context);
    }
}

/* One timed round at @bytes: the statistic over the slowest rank's
 * per-iteration times; *wrong_p gets the bytes received wrong. */
static double run_round(bench_t *b, size_t bytes, int iters, int warmup,
                        bool mean, bool loop, char *sbuf, char *rbuf,
                        double *times, long *wrong_p)
{
    uint64_t tag = 0;
    long wrong = 0;
    double t0;

    memset(rbuf, 0, bytes); /* the pattern has no zeros: a miss shows */
    for (int it = 0; it < warmup + 1; it++) {
        if (!exchange(b, sbuf, rbuf, bytes, tag++)) {
            return -1;
        }
    }
    if (loop) {
        t0 = bt_now_us();
        for (int it = 0; it < iters; it++) {
            if (!exchange(b, sbuf, rbuf, bytes, tag++)) {
                return -1;
            }
        }
        times[0] = (bt_now_us() - t0) / iters;
        iters = 1;
    } else {
        for (int it = 0; it < iters; it++) {
            t0 = bt_now_us();
            if (!exchange(b, sbuf, rbuf, bytes, tag++)) {
                return -1;
            }
            times[it] = bt_now_us() - t0;
        }
    }
    for (size_t i = 0; i < bytes; i++) {
        wrong += rbuf[i] != (char)(b->partner + 1 + (int)(i % 7));
    }
    *wrong_p = wrong;
    MPI_Allreduce(MPI_IN_PLACE, times, iters, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    return loop ? times[0] : bt_stat(times, iters, mean);
}

static int usage(void)
{
    fprintf(stderr, "usage: ucx-exchange-bench [-b MIN] [-e MAX] [-f FACTOR] "
            "[-n ITERS] [-w WARMUP] [-m median|mean|loop] (an even number of "
            "ranks)\n");
    return 64;
}

int main(int argc, char **argv)
{
    size_t min = 0, max = 1024, factor = 4;
    int iters = 1000, warmup = 100, ch, size, rc = 0;
    bool mean = false, loop = false;
    bench_t b = {0};
    char *sbuf = NULL, *rbuf = NULL;
    double *times = NULL;
    long wrong_total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((ch = getopt(argc, argv, "b:e:f:n:w:m:")) != -1) {
        switch (ch) {
        case 'b': if (!bt_parse_size(optarg, &min)) iters = 0; break;
        case 'e': if (!bt_parse_size(optarg, &max)) iters = 0; break;
        case 'f': factor = (size_t)strtoul(optarg, NULL, 10); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'm': if (!bt_parse_stat(optarg, &mean, &loop)) iters = 0; break;
        default: iters = 0; break;
        }
    }
    if (iters <= 0 || warmup < 0 || factor < 2 || min > max || size % 2 != 0) {
        if (b.rank == 0) {
            usage();
        }
        MPI_Finalize();
        return 64;
    }
    b.partner = b.rank ^ 1;
    sbuf = malloc(max + 1);
    rbuf = malloc(max + 1);
    times = calloc((size_t)iters, sizeof(*times));
    if (sbuf == NULL || rbuf == NULL || times == NULL || setup(&b) != 0) {
        fprintf(stderr, "ucx-exchange-bench: rank %d: setting up UCX failed\n",
                b.rank);
        rc = 2;
        goto out;
    }
    for (size_t i = 0; i < max; i++) {
        sbuf[i] = (char)(b.rank + 1 + (int)(i % 7));
    }
    if (b.rank == 0) {
        printf("# ucx-exchange-bench: UCX tagged exchange between rank pairs, "
               "%d ranks, iters %d warmup %d\n", size, iters, warmup);
        bt_print_time_note(loop, mean);
        printf("#\n");
        bt_print_heads();
    }
    for (size_t bytes = min;; bytes = bytes == 0 ? 1 : bytes * factor) {
        double t[2];
        long wrong[2];

        for (int i = 0; i < 2; i++) {
            t[i] = run_round(&b, bytes, iters, warmup, mean, loop, sbuf, rbuf,
                             times, &wrong[i]);
            if (t[i] < 0) {
                rc = 2;
                goto out;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, wrong, 2, MPI_LONG, MPI_SUM,
                      MPI_COMM_WORLD);
        if (b.rank == 0) {
            bt_print_row_head(bytes, bytes, "byte", "none", -1);
            bt_print_result(t[0], wrong[0], bytes, 1.0);
            bt_print_result(t[1], wrong[1], bytes, 1.0);
            printf("\n");
        }
        wrong_total += wrong[0] + wrong[1];
        if (bytes >= max || bytes > max / factor) {
            break;
        }
    }
    if (b.rank == 0) {
        bt_print_wrong_total(wrong_total);
    }
    rc = wrong_total != 0;

out:
    teardown(&b);
    free(times);
    free(rbuf);
    free(sbuf);
    MPI_Finalize();
    return rc;
}
