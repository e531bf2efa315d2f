/*
 * ringpoint-example-train: a small data-parallel training job that survives
 * preemption.
 *
 * A two-layer perceptron learns a fixed "teacher" function from synthetic
 * data. Every rank draws its own samples (a per-rank data cursor and RNG),
 * computes gradients, and the ranks average them with rp_allreduce; SGD with
 * momentum then updates identical copies of the model everywhere. All of
 * the state is registered with ringpoint: the model and the optimizer's
 * momentum and the step counter are replicated, the RNG and the data cursor
 * are per rank. Because ringpoint's allreduce is deterministic and a
 * checkpoint holds the whole state, the final line
 *
 *     final step=<N> digest=<hex>
 *
 * is the same whether the run was uninterrupted or stopped and resumed any
 * number of times.
 *
 *   srun --mpi=pmix -N2 -n4 --ckpt-interval=30s --ckpt-dir=ckpt \
 *        ringpoint-example-train --steps 2000 --step-delay-ms 20
 */
#include <ringpoint.h>

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IN_DIM   16
#define OUT_DIM  4
#define BATCH    32


typedef struct options {
    uint64_t steps;
    unsigned hidden;
    unsigned delay_ms;
    float lr;
    float momentum;
    uint64_t seed;
    unsigned log_every;
} options_t;

/* Replicated state besides the parameters: identical on every rank. */
typedef struct trainer {
    uint64_t step;      /* steps completed */
    double last_loss;   /* mean loss of the last step, over all ranks */
} trainer_t;

/* Per-rank state: what makes rank r's data stream its own. */
typedef struct stream {
    uint64_t rng;       /* xorshift state for label noise */
    uint64_t cursor;    /* index of the next sample this rank draws */
} stream_t;

typedef struct model {
    unsigned hidden;
    size_t nparams;
    float *params;      /* W1[h][IN], b1[h], W2[OUT][h], b2[OUT] */
    float *velocity;    /* momentum, same layout */
    float *grad;
    float *w1, *b1, *w2, *b2;       /* views into params */
    float *gw1, *gb1, *gw2, *gb2;   /* views into grad */
} model_t;

/* splitmix64: a counter-based generator, so sample i is the same whoever
 * draws it and whenever. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static float unit_float(uint64_t bits)
{
    /* 24 random bits to [-1, 1), exactly representable. */
    return (float)(bits >> 40) / 8388608.0f - 1.0f;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

/* Sample @index of rank @rank: input x and the teacher's target y. */
static void sample(const options_t *o, int rank, uint64_t index, stream_t *st,
                   float x[IN_DIM], float y[OUT_DIM])
{
    uint64_t base = mix64(o->seed ^ mix64(((uint64_t)rank << 40) ^ index));
    unsigned i, k;

    for (i = 0; i < IN_DIM; i++) {
        x[i] = unit_float(mix64(base + i));
    }
    for (k = 0; k < OUT_DIM; k++) {
        float s = 0.0f;

        for (i = 0; i < IN_DIM; i++) {
            s += (float)((i * 7 + k * 3) % 11 - 5) * 0.1f * x[i];
        }
        /* The per-rank RNG adds label noise, so its state matters. */
        y[k] = sinf(s) + 0.01f * unit_float(xorshift(&st->rng));
    }
}

static int model_init(model_t *m, unsigned hidden, uint64_t seed)
{
    size_t n = (size_t)hidden * IN_DIM + hidden + (size_t)OUT_DIM * hidden + OUT_DIM;
    size_t i;

    m->hidden = hidden;
    m->nparams = n;
    m->params = calloc(n, sizeof(float));
    m->velocity = calloc(n, sizeof(float));
    m->grad = calloc(n, sizeof(float));
    if (m->params == NULL || m->velocity == NULL || m->grad == NULL) {
        return -1;
    }
    m->w1 = m->params;
    m->b1 = m->w1 + (size_t)hidden * IN_DIM;
    m->w2 = m->b1 + hidden;
    m->b2 = m->w2 + (size_t)OUT_DIM * hidden;
    m->gw1 = m->grad;
    m->gb1 = m->gw1 + (size_t)hidden * IN_DIM;
    m->gw2 = m->gb1 + hidden;
    m->gb2 = m->gw2 + (size_t)OUT_DIM * hidden;
    /* The same seed on every rank gives identical initial models. */
    for (i = 0; i < n; i++) {
        m->params[i] = 0.3f * unit_float(mix64(seed * 1000003u + i));
    }
    return 0;
}

static void model_free(model_t *m)
{
    free(m->params);
    free(m->velocity);
    free(m->grad);
}

/* Forward and backward over one local batch; returns the batch's mean loss. */
static double local_gradients(const options_t *o, model_t *m, int rank,
                              stream_t *st)
{
    const unsigned h = m->hidden;
    float x[IN_DIM], y[OUT_DIM], out[OUT_DIM], dout[OUT_DIM];
    float *act = malloc(h * sizeof(float)), *dact = malloc(h * sizeof(float));
    double loss = 0.0;
    unsigned b, i, j, k;

    if (act == NULL || dact == NULL) {
        fprintf(stderr, "train: out of memory\n");
        exit(1);
    }
    memset(m->grad, 0, m->nparams * sizeof(float));
    for (b = 0; b < BATCH; b++) {
        sample(o, rank, st->cursor++, st, x, y);
        for (j = 0; j < h; j++) {
            float s = m->b1[j];

            for (i = 0; i < IN_DIM; i++) {
                s += m->w1[j * IN_DIM + i] * x[i];
            }
            act[j] = tanhf(s);
        }
        for (k = 0; k < OUT_DIM; k++) {
            float s = m->b2[k];

            for (j = 0; j < h; j++) {
                s += m->w2[k * h + j] * act[j];
            }
            out[k] = s;
            dout[k] = 2.0f * (out[k] - y[k]) / (BATCH * OUT_DIM);
            loss += (double)(out[k] - y[k]) * (out[k] - y[k]);
        }
        for (j = 0; j < h; j++) {
            dact[j] = 0.0f;
        }
        for (k = 0; k < OUT_DIM; k++) {
            m->gb2[k] += dout[k];
            for (j = 0; j < h; j++) {
                m->gw2[k * h + j] += dout[k] * act[j];
                dact[j] += dout[k] * m->w2[k * h + j];
            }
        }
        for (j = 0; j < h; j++) {
            float dz = dact[j] * (1.0f - act[j] * act[j]);

            m->gb1[j] += dz;
            for (i = 0; i < IN_DIM; i++) {
                m->gw1[j * IN_DIM + i] += dz * x[i];
            }
        }
    }
    free(act);
    free(dact);
    return loss / (BATCH * OUT_DIM);
}

static void sgd_update(const options_t *o, model_t *m)
{
    size_t i;

    for (i = 0; i < m->nparams; i++) {
        m->velocity[i] = o->momentum * m->velocity[i] + m->grad[i];
        m->params[i] -= o->lr * m->velocity[i];
    }
}

/* FNV-1a over the parameters' bytes: the run's fingerprint. */
static uint64_t digest(const model_t *m)
{
    const unsigned char *p = (const unsigned char *)m->params;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < m->nparams * sizeof(float); i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ringpoint-example-train [--steps N] [--hidden N] [--step-delay-ms MS]\n"
            "                               [--lr X] [--seed N] [--log-every N]\n"
            "\n"
            "A data-parallel MLP trained on synthetic data; all of its state is\n"
            "checkpointed by ringpoint, so a preempted run resumes where it stopped.\n"
            "  --steps N          train until step N (default 500)\n"
            "  --hidden N         hidden units: the model's size (default 64)\n"
            "  --step-delay-ms MS sleep MS per step, to make runs long enough to preempt\n"
            "  --lr X             learning rate (default 0.05)\n"
            "  --seed N           model and data seed (default 1)\n"
            "  --log-every N      rank 0 logs every N steps (default 100; 0: never)\n"
            "The last line is 'final step=N digest=HEX', the same for any number of\n"
            "interruptions.\n");
}

static int parse_args(int argc, char **argv, options_t *o)
{
    static const struct option longopts[] = {
        {"steps", required_argument, NULL, 's'},
        {"hidden", required_argument, NULL, 'H'},
        {"step-delay-ms", required_argument, NULL, 'd'},
        {"lr", required_argument, NULL, 'l'},
        {"seed", required_argument, NULL, 'S'},
        {"log-every", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    char *end;
    int c;

    *o = (options_t){.steps = 500, .hidden = 64, .lr = 0.05f, .momentum = 0.9f,
                     .seed = 1, .log_every = 100};
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        unsigned long long v = 0;
        double d = 0;

        if (c == 'h') {
            usage(stdout);
            exit(0);
        }
        if (c == '?') {
            usage(stderr);
            return -1;
        }
        if (c == 'l') {
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d > 0) || d > 10) {
                fprintf(stderr, "train: --lr needs a number in (0, 10], got '%s'\n", optarg);
                return -1;
            }
            o->lr = (float)d;
            continue;
        }
        v = strtoull(optarg, &end, 10);
        if (*optarg == '\0' || *optarg == '-' || *end != '\0') {
            fprintf(stderr, "train: --%s needs a whole number, got '%s'\n",
                    c == 's' ? "steps" : c == 'H' ? "hidden" : c == 'd' ? "step-delay-ms"
                    : c == 'S' ? "seed" : "log-every", optarg);
            return -1;
        }
        switch (c) {
        case 's': o->steps = v; break;
        case 'S': o->seed = v; break;
        case 'd':
            if (v > 60000) {
                fprintf(stderr, "train: --step-delay-ms is at most 60000\n");
                return -1;
            }
            o->delay_ms = (unsigned)v;
            break;
        case 'L': o->log_every = (unsigned)(v > 1000000000 ? 1000000000 : v); break;
        case 'H':
            if (v < 1 || v > 1u << 20) {
                fprintf(stderr, "train: --hidden must be in [1, 1048576]\n");
                return -1;
            }
            o->hidden = (unsigned)v;
            break;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "train: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -1;
    }
    return 0;
}

#define CHECK(call)                                                         \
    do {                                                                    \
        rp_status_t s_ = (call);                                            \
        if (s_ != RP_OK) {                                                  \
            fprintf(stderr, "train: rank %d: %s: %s\n", rank, #call,        \
                    rp_status_string(s_));                                  \
            goto err_finalize;                                              \
        }                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    rp_context_attr_t attr = {.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                                            RP_CONTEXT_ATTR_FIELD_SIZE};
    rp_restore_info_t restored;
    rp_step_result_t result;
    trainer_t trainer = {0, 0.0};
    stream_t stream;
    model_t model;
    options_t o;
    rp_context_h ctx;
    rp_status_t status;
    int rank = -1, rc = 1;
    double loss;

    if (parse_args(argc, argv, &o) != 0) {
        return 2;
    }
    status = rp_init(NULL, &ctx);
    if (status != RP_OK) {
        fprintf(stderr, "train: rp_init: %s\n", rp_status_string(status));
        return 1;
    }
    rp_context_query(ctx, &attr);
    rank = attr.rank;
    if (model_init(&model, o.hidden, o.seed) != 0) {
        fprintf(stderr, "train: out of memory for %u hidden units\n", o.hidden);
        goto err_finalize;
    }
    stream.rng = mix64(o.seed + 0x5bd1e995u * (uint64_t)(rank + 1)) | 1;
    stream.cursor = 0;

    CHECK(rp_region_register(ctx, "model", model.params,
                             model.nparams * sizeof(float), RP_REGION_REPLICATED));
    CHECK(rp_region_register(ctx, "optimizer", model.velocity,
                             model.nparams * sizeof(float), RP_REGION_REPLICATED));
    CHECK(rp_region_register(ctx, "trainer", &trainer, sizeof(trainer),
                             RP_REGION_REPLICATED));
    CHECK(rp_region_register(ctx, "stream", &stream, sizeof(stream),
                             RP_REGION_PER_RANK));
    CHECK(rp_restore(ctx, NULL, 0, &restored));
    if (rank == 0) {
        if (restored.restored) {
            printf("resumed from step %" PRIu64 " (checkpoint %.1fs old, %s)\n",
                   restored.step, restored.age_s, restored.path);
        } else {
            printf("starting fresh: %u ranks, %zu parameters, %" PRIu64 " steps\n",
                   attr.size, model.nparams, o.steps);
        }
        fflush(stdout);
    }

    while (trainer.step < o.steps) {
        loss = local_gradients(&o, &model, rank, &stream);
        CHECK(rp_allreduce(ctx, model.grad, model.grad,
                           model.nparams, RP_DTYPE_FLOAT32, RP_OP_AVG));
        CHECK(rp_allreduce(ctx, &loss, &trainer.last_loss, 1, RP_DTYPE_FLOAT64,
                           RP_OP_AVG));
        sgd_update(&o, &model);
        trainer.step++;
        if (rank == 0 && o.log_every != 0 && trainer.step % o.log_every == 0) {
            printf("step %" PRIu64 " loss %.6f\n", trainer.step, trainer.last_loss);
            fflush(stdout);
        }
        if (o.delay_ms != 0) {
            sleep_ms(o.delay_ms);
        }
        status = rp_step(ctx, trainer.step, &result);
        if (status == RP_ERR_IO || status == RP_ERR_NO_MEMORY) {
            /* A checkpoint could not be written (a full or failing disk;
             * the runtime logged which file): the model is intact and the
             * previous checkpoint stays, so training goes on. */
            if (rank == 0) {
                fprintf(stderr, "train: checkpoint failed (%s); training goes on\n",
                        rp_status_string(status));
            }
        } else if (status != RP_OK) {
            fprintf(stderr, "train: rank %d: rp_step: %s\n", rank,
                    rp_status_string(status));
            goto err_finalize;
        }
        if (result.stop) {
            if (rank == 0) {
                printf("stopping at step %" PRIu64 ": %s\n", trainer.step,
                       result.checkpointed ? "checkpoint committed"
                                           : "no new checkpoint");
                fflush(stdout);
            }
            /* Tells the plugin the job may be requeued to resume. */
            rc = RP_EXIT_STOPPED;
            goto out;
        }
    }
    if (rank == 0) {
        printf("final step=%" PRIu64 " digest=%016" PRIx64 "\n", trainer.step,
               digest(&model));
        fflush(stdout);
    }
    rc = 0;
out:
    model_free(&model);
    rp_finalize(ctx);
    return rc;

err_finalize:
    model_free(&model);
    rp_finalize(ctx);
    return 1;
}
