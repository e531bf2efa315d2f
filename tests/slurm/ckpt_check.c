/*
 * ringpoint-ckpt-check: the checkpoint engine on a real launch.
 *
 * A toy training loop whose state at step S is a known function of S
 * (replicated regions "model", "opt" and "step"; per-rank regions "rng"
 * and "cursor", which also depend on the rank), so whatever a restore
 * loads can be checked byte for byte against the step it claims to be.
 * The state changes after every rp_step, so an async snapshot that read
 * the memory late would be caught.
 *
 *   ringpoint-ckpt-check train -n STEPS   restore if possible, then run
 *                                         to step STEPS calling rp_step
 *   ringpoint-ckpt-check restore [-R]     restore and check only
 *                                         (-R: only the replicated regions)
 *   common: -b BYTES  size of "model" (default 1 MiB + 123)
 *           -x        rank 1 registers one region more (a mismatch)
 *           -p N      "opt" registered as N regions "opt.0".."opt.N-1"
 *                     (consecutive pieces; train and restore alike)
 *           -C        train: rp_checkpoint at the last step
 *           -s MS     train: sleep MS milliseconds in every step (so that
 *                     time passes, for RINGPOINT_CKPT_INTERVAL)
 *
 * Output, per rank: "ckpt-check: rank R restored step=S world=W ok" or
 * "ckpt-check: rank R fresh", and "ckpt-check: rank R rp_X(...) returned
 * 'status'" for every failing call; "ckpt-check: rank R checkpointed
 * step=S" for every checkpoint; "ckpt-check: rank R stop at step S";
 * exit 0 when every check passed, 1 on wrong data, 2 on a failing call.
 */
#include <ringpoint.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int g_rank, g_size;

static unsigned char gen(uint32_t region, uint64_t step, uint64_t off,
                         uint32_t rank)
{
    uint32_t x = (uint32_t)off * 2654435761u + (uint32_t)step * 0x9E3779B9u +
                 region * 0x85EBCA6Bu + rank * 0xC2B2AE35u;

    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (unsigned char)x;
}

typedef struct state {
    unsigned char *model, *opt, rng[40];
    uint64_t step, cursor, model_len, opt_len;
} state_t;

static void fill(state_t *s, uint64_t step)
{
    for (uint64_t i = 0; i < s->model_len; i++) s->model[i] = gen(1, step, i, 0);
    for (uint64_t i = 0; i < s->opt_len; i++) s->opt[i] = gen(2, step, i, 0);
    for (uint64_t i = 0; i < sizeof(s->rng); i++) s->rng[i] = gen(3, step, i, (uint32_t)g_rank);
    s->step = step;
    s->cursor = step * 1000 + (uint64_t)g_rank;
}

/* Count bytes that differ from the state of @step. */
static uint64_t check(const state_t *s, uint64_t step, int per_rank)
{
    uint64_t bad = 0;

    for (uint64_t i = 0; i < s->model_len; i++) bad += s->model[i] != gen(1, step, i, 0);
    for (uint64_t i = 0; i < s->opt_len; i++) bad += s->opt[i] != gen(2, step, i, 0);
    bad += s->step != step;
    if (per_rank) {
        for (uint64_t i = 0; i < sizeof(s->rng); i++) bad += s->rng[i] != gen(3, step, i, (uint32_t)g_rank);
        bad += s->cursor != step * 1000 + (uint64_t)g_rank;
    }
    return bad;
}

static int failed(const char *what, rp_status_t rc)
{
    printf("ckpt-check: rank %d %s returned '%s'\n", g_rank, what,
           rp_status_string(rc));
    fflush(stdout);
    return 2;
}

int main(int argc, char **argv)
{
    rp_context_h ctx;
    rp_context_attr_t attr = {.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                                            RP_CONTEXT_ATTR_FIELD_SIZE};
    rp_restore_info_t info;
    state_t s;
    const char *mode;
    uint64_t steps = 0, first = 1, extra = 0, sleep_ms = 0;
    int opt, replicated_only = 0, mismatch = 0, final_ckpt = 0, rc = 0;
    unsigned pieces = 0;
    rp_status_t st;

    memset(&s, 0, sizeof(s));
    s.model_len = (1u << 20) + 123;
    if (argc < 2) {
        fprintf(stderr, "usage: ringpoint-ckpt-check train|restore [options]\n");
        return 2;
    }
    mode = argv[1];
    optind = 2;
    while ((opt = getopt(argc, argv, "n:b:s:p:RxC")) != -1) {
        switch (opt) {
        case 'n': steps = strtoull(optarg, NULL, 10); break;
        case 'b': s.model_len = strtoull(optarg, NULL, 10); break;
        case 's': sleep_ms = strtoull(optarg, NULL, 10); break;
        case 'R': replicated_only = 1; break;
        case 'x': mismatch = 1; break;
        case 'C': final_ckpt = 1; break;
        case 'p': pieces = (unsigned)strtoul(optarg, NULL, 10); break;
        default: return 2;
        }
    }
    s.opt_len = s.model_len / 2 + 77;
    s.model = calloc(1, s.model_len + 1);
    s.opt = calloc(1, s.opt_len + 1);
    if (s.model == NULL || s.opt == NULL) {
        return 2;
    }
    if ((st = rp_init(NULL, &ctx)) != RP_OK) {
        return failed("rp_init", st);
    }
    rp_context_query(ctx, &attr);
    g_rank = attr.rank;
    g_size = attr.size;

    /* Many regions make every stripe cross many region edges. */
    for (unsigned i = 0; i < pieces; i++) {
        const uint64_t lo = s.opt_len * i / pieces, hi = s.opt_len * (i + 1) / pieces;
        char name[32];

        snprintf(name, sizeof(name), "opt.%u", i);
        if ((st = rp_region_register(ctx, name, s.opt + lo, hi - lo, RP_REGION_REPLICATED)) != RP_OK) {
            rc = failed("rp_region_register", st);
            goto out;
        }
    }
    if ((st = rp_region_register(ctx, "model", s.model, s.model_len, RP_REGION_REPLICATED)) != RP_OK ||
        (pieces == 0 &&
         (st = rp_region_register(ctx, "opt", s.opt, s.opt_len, RP_REGION_REPLICATED)) != RP_OK) ||
        (st = rp_region_register(ctx, "step", &s.step, sizeof(s.step), RP_REGION_REPLICATED)) != RP_OK ||
        (st = rp_region_register(ctx, "rng", s.rng, sizeof(s.rng), RP_REGION_PER_RANK)) != RP_OK ||
        (st = rp_region_register(ctx, "cursor", &s.cursor, sizeof(s.cursor), RP_REGION_PER_RANK)) != RP_OK) {
        rc = failed("rp_region_register", st);
        goto out;
    }
    if (mismatch && g_rank == 1 &&
        (st = rp_region_register(ctx, "extra", &extra, sizeof(extra), RP_REGION_REPLICATED)) != RP_OK) {
        rc = failed("rp_region_register", st);
        goto out;
    }

    {
        static const char *const rep[] = {"model", "opt", "step"};

        st = rp_restore(ctx, replicated_only ? rep : NULL,
                        replicated_only ? 3 : 0, &info);
    }
    if (st != RP_OK) {
        rc = failed("rp_restore", st);
        goto out;
    }
    if (info.restored) {
        uint64_t bad = check(&s, info.step, !replicated_only);

        printf("ckpt-check: rank %d restored step=%" PRIu64 " world=%u age=%.1fs path=%s %s bad=%" PRIu64 "\n",
               g_rank, info.step, info.world_size, info.age_s, info.path,
               bad == 0 ? "ok" : "WRONG", bad);
        if (bad != 0) {
            rc = 1;
        }
        first = info.step + 1;
    } else {
        printf("ckpt-check: rank %d fresh\n", g_rank);
    }
    fflush(stdout);

    if (strcmp(mode, "train") == 0) {
        for (uint64_t step = first; step <= steps; step++) {
            rp_step_result_t res;

            fill(&s, step); /* "training" produces the state of this step */
            if (sleep_ms > 0) {
                struct timespec ts = {(time_t)(sleep_ms / 1000),
                                      (long)(sleep_ms % 1000) * 1000000L};

                while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
                }
            }
            st = rp_step(ctx, step, &res);
            if (st != RP_OK) {
                char what[64];

                snprintf(what, sizeof(what), "rp_step(%" PRIu64 ")", step);
                rc = failed(what, st);
                if (st == RP_ERR_PEER_FAILED || st == RP_ERR_TIMEOUT) {
                    goto out;
                }
                rc = 0; /* a failed checkpoint; training goes on */
            }
            if (res.checkpointed) {
                printf("ckpt-check: rank %d checkpointed step=%" PRIu64 "\n", g_rank, step);
            }
            if (res.stop) {
                printf("ckpt-check: rank %d stop at step %" PRIu64 "\n", g_rank, step);
                break;
            }
            /* The next step's training starts right away and changes the
             * memory while a background write may still run. */
            memset(s.model, 0xA5, s.model_len);
        }
        fill(&s, steps);
        if (final_ckpt && (st = rp_checkpoint(ctx, steps)) != RP_OK) {
            rc = failed("rp_checkpoint", st);
        }
        printf("ckpt-check: rank %d trained to step=%" PRIu64 "\n", g_rank, steps);
    }
out:
    fflush(stdout);
    rp_finalize(ctx);
    free(s.model);
    free(s.opt);
    return rc;
}
