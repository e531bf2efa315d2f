/*
 * The safe point. Every rank calls rp_step with the same step; one small
 * allreduce(MAX) of four flags makes the decision the same everywhere:
 *
 *   [0] the interval elapsed, by rank 0's clock only (clocks of different
 *       nodes disagree; one judge means one answer)
 *   [1] the step is a multiple of RINGPOINT_CKPT_EVERY
 *   [2] a stop was requested on this rank (signal handlers set a flag)
 *   [3] this rank's background write is still running
 *   [4] this rank's region table changed since it was checked across
 *       ranks (then every rank checks it, before anything else)
 *
 * A checkpoint in flight is committed when every rank's write finished
 * ([3] is 0 everywhere) or when a new checkpoint or a stop needs it out of
 * the way (then every rank waits for its writer first). So each commit
 * runs its collectives on every rank at the same safe point.
 */
#include "config.h"

#include "ckpt/engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "ckpt/engine/devstage.h"
#include "ckpt/engine/regions.h"
#include "ckpt/engine/root.h"
#include "ckpt/engine/watchdog.h"
#include "ckpt/format/fileio.h"
#include "ckpt/write/async.h"
#include "ckpt/write/commit.h"
#include "core/context.h"
#include "ringpoint/coll.h"
#include "signal/signal.h"
#include "util/log.h"
#include "util/parse.h"

/* A stop asked for before the engine exists (a signal during start-up)
 * must not be lost; one context per process, so one flag is enough. */
static volatile sig_atomic_t rp_eng_stop_pending;

/* RINGPOINT_CKPT_FAULT=KIND:RANK[:STEP], a test hook: KIND "write" makes
 * RANK's shard writes fail half way with an I/O error, "kill" makes RANK
 * SIGKILL itself half way through writing, for checkpoints of steps >=
 * STEP (default 0); "stop" makes RANK request a stop at step STEP, as a
 * signal handler would. Documented in doc/checkpoint-format.md. */
static void rp_eng_parse_fault(rp__ckpt_engine_t *e)
{
    const char *v = e->ctx->settings.ckpt_fault;
    char kind[16];
    unsigned rank;
    unsigned long long step = 0;
    int n;

    if (*v == '\0') {
        return;
    }
    n = sscanf(v, "%15[a-z]:%u:%llu", kind, &rank, &step);
    if (n < 2 || (strcmp(kind, "write") != 0 && strcmp(kind, "kill") != 0 &&
                  strcmp(kind, "stop") != 0)) {
        rp_warn("RINGPOINT_CKPT_FAULT=%s ignored (KIND:RANK[:STEP], KIND "
                "write, kill or stop)", v);
        return;
    }
    e->fault = strcmp(kind, "kill") == 0   ? RP_CKPT_FAULT_KILL
               : strcmp(kind, "stop") == 0 ? RP_CKPT_FAULT_STOP
                                           : RP_CKPT_FAULT_WRITE;
    e->fault_rank = rank;
    e->fault_step = step;
}

/* Rank 0 warns, where the user reads the job's output, about a warning
 * signal that cannot reach it: otherwise the job is simply killed at its
 * limit with no checkpoint and nothing says why (budget.h). */
static void rp_eng_check_signal(const rp__ckpt_engine_t *e)
{
    /* srun's tasks have a step id; the batch script has none (or "batch"
     * in newer Slurm versions). */
    const char *step = getenv("SLURM_STEP_ID");
    bool in_step = step != NULL && strcmp(step, "batch") != 0 &&
                   strcmp(step, "4294967291") != 0;
    char msg[512];

    const char *restarts = getenv("SLURM_RESTART_COUNT");
    const rp_settings_t *set = &e->ctx->settings;
    uint64_t done = 0;

    if (rp__job_limits_warn_no_srun(e->limits.kill_wait_s >= 0, in_step,
                                    set->ckpt_signal, msg, sizeof(msg))) {
        rp_warn("%s", msg);
    }
    /* Say it before it matters: after this run the job is not requeued
     * again, whether it stops or fails. */
    if (restarts != NULL && set->ckpt_requeue_set &&
        rp__parse_uint(restarts, 0, UINT64_MAX, &done, NULL, 0) == RP_OK &&
        done > 0 && done >= set->ckpt_requeue) {
        rp_warn("this is the job's last requeue allowed (%llu of %llu): if it "
                "stops or fails again, it stays down",
                (unsigned long long)done,
                (unsigned long long)set->ckpt_requeue);
    }
}

rp_status_t rp__ckpt_engine_get(struct rp_context *ctx,
                                rp__ckpt_engine_t **e_p)
{
    rp__ckpt_engine_t *e = ctx->ckpt;
    rp_status_t status;

    if (e != NULL) {
        *e_p = e;
        return RP_OK;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        rp_error("checkpoint: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    /* The bounds were checked by rp_init (settings table). */
    e->ckpt_timeout_ns = ctx->settings.ckpt_timeout_s * 1000000000ull;
    rp__ckpt_pcopy_threads(ctx->settings.ckpt_copy_threads,
                           ctx->bootstrap != NULL
                               ? ctx->bootstrap->local_size : 1,
                           &e->copy_threads);
    /* Stop signals are watched from the moment the application registers
     * state: before that it has nothing to save, and a program that never
     * checkpoints keeps the default action of SIGTERM. */
    status = rp__signal_install(ctx->settings.ckpt_signal,
                                ctx->bootstrap == NULL ||
                                    ctx->bootstrap->rank == 0);
    if (status != RP_OK) {
        free(e);
        return status;
    }
    e->ctx = ctx;
    e->rank = (uint32_t)ctx->bootstrap->rank;
    e->size = (uint32_t)ctx->bootstrap->size;
    snprintf(e->dir, sizeof(e->dir), "%s", ctx->settings.ckpt_dir);
    e->interval_s = ctx->settings.ckpt_interval_s;
    e->every = ctx->settings.ckpt_every;
    e->keep = ctx->settings.ckpt_keep;
    e->chunk_size = ctx->settings.ckpt_chunk;
    e->async = ctx->settings.ckpt_async != 0;
    e->rootfd = -1;
    e->pend.cfd = -1;
    rp_eng_parse_fault(e);
    rp__job_limits_load(&ctx->settings, &e->limits);
    if (e->rank == 0) {
        rp_eng_check_signal(e);
    }
    ctx->ckpt = e;
    *e_p = e;
    return RP_OK;
}

void rp__ckpt_request_stop(struct rp_context *ctx)
{
    rp_eng_stop_pending = 1;
    if (ctx != NULL && ctx->ckpt != NULL) {
        ctx->ckpt->stop_requested = 1;
    }
}

void rp__ckpt_get_stats(struct rp_context *ctx, rp__ckpt_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    if (ctx != NULL && ctx->ckpt != NULL) {
        rp__ckpt_prune_join(ctx->ckpt); /* its figure is written there */
        *st = ctx->ckpt->stats;
    }
}

/* Start the interval clock at the first collective use (not again when a
 * changed table is checked later). */
static void rp_eng_clock(rp__ckpt_engine_t *e)
{
    if (!e->clock_started) {
        e->last_ckpt_ns = rp__ckpt_now_ns();
        e->clock_started = true;
    }
}

/* Check the table across ranks (every rank calls it at the same point,
 * whatever its own table did) and start the clock. */
static rp_status_t rp_eng_ready(rp__ckpt_engine_t *e)
{
    rp_status_t rc = rp__ckpt_regions_check(e);

    if (rc == RP_OK) {
        rp_eng_clock(e);
    }
    return rc;
}

/* Commit the checkpoint in flight, after this rank's writer is done. */
static rp_status_t rp_eng_settle(rp__ckpt_engine_t *e)
{
    if (!e->pend.active) {
        return RP_OK;
    }
    rp__ckpt_async_wait(e);
    return rp__ckpt_finish(e);
}

/* Take a checkpoint of @step; with @wait, return once it is committed. */
static rp_status_t rp_eng_take(rp__ckpt_engine_t *e, uint64_t step, bool wait,
                               bool *taken_p)
{
    uint64_t t0 = rp__ckpt_now_ns();
    rp_status_t rc;

    *taken_p = false;
    rc = rp__ckpt_begin(e, step);
    if (rc == RP_ERR_STATE) {
        return RP_OK; /* this step is committed already */
    }
    if (rc != RP_OK) {
        return rc;
    }
    if (e->rank == 0) {
        e->last_ckpt_ns = t0;
    }
    if (e->dev != NULL) {
        /* Device regions first, into pinned staging; a failure (a GPU
         * that did not drain in time) fails this checkpoint everywhere
         * through the agreement, like a failed write. */
        uint64_t s0 = rp__ckpt_now_ns();
        rp_status_t d = rp__ckpt_devstage_out(e);

        e->stats.stage_ns = rp__ckpt_now_ns() - s0;

        if (d != RP_OK && e->pend.write_status == RP_OK) {
            e->pend.write_status = d;
        }
    }
    if (!e->async) {
        rp__ckpt_write_sync(e);
        rc = rp__ckpt_finish(e);
    } else {
        rp_status_t snap = rp__ckpt_async_snapshot(e);

        if (snap != RP_OK && e->pend.write_status == RP_OK) {
            e->pend.write_status = snap;
        }
        if (wait) {
            if (e->pend.write_status == RP_OK) {
                rp_status_t w = rp__ckpt_write_staged(e);

                e->pend.write_status = w;
            }
            rc = rp__ckpt_finish(e);
        } else if (e->pend.write_status == RP_OK) {
            rc = rp__ckpt_async_start(e);
            if (rc != RP_OK) {
                e->pend.write_status = rc;
                rc = RP_OK; /* reported by the agreement at the next step */
            }
        }
        /* A failed snapshot is reported by the agreement at the next safe
         * point, like a failed background write. */
    }
    e->stats.stall_ns = rp__ckpt_now_ns() - t0;
    *taken_p = rc == RP_OK;
    return rc;
}

static void rp_eng_log_stop(const rp__ckpt_engine_t *e, uint64_t step,
                            int why, bool committed);

/* A checkpoint that failed in the file system (or for memory), agreed on
 * by every rank, rather than a failure of the ranks' communication. */
static bool rp_eng_write_failed(rp_status_t rc)
{
    return rc != RP_ERR_TRANSPORT && rc != RP_ERR_TIMEOUT &&
           rc != RP_ERR_PEER_FAILED && rc != RP_ERR_BOOTSTRAP &&
           rc != RP_ERR_MISMATCH;
}

/* The budget of a stop by @signo (the MAX of the ranks' flags: a signal
 * number, or 1 for a stop asked for in code) as this rank sees it. */
static void rp_eng_budget(const rp__ckpt_engine_t *e, int signo,
                          rp__stop_budget_t *b)
{
    struct timespec ts;
    int64_t now_ms;

    clock_gettime(CLOCK_REALTIME, &ts);
    now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    rp__stop_budget(&e->limits, signo > 1 ? signo : SIGTERM,
                    e->ctx->settings.ckpt_signal,
                    signo > 1 ? rp__signal_time_ms() : 0, now_ms, b);
}

/* Every rank bounds the waits of its own stop (watchdog.h): past the
 * limit the process exits RP_EXIT_STOPPED, naming the directory. @signo as
 * in rp_eng_budget; 0: no stop, RINGPOINT_CKPT_TIMEOUT alone. */
static void rp_eng_watch(const rp__ckpt_engine_t *e, rp__ckpt_watchdog_t *wd,
                         const char *what, uint64_t step, int signo)
{
    rp__stop_budget_t b;

    if (signo != 0) {
        rp_eng_budget(e, signo, &b);
    }
    rp__ckpt_watchdog_arm(wd, rp__ckpt_watchdog_limit_ns(e->ckpt_timeout_ns,
                                                         signo != 0 ? &b
                                                                    : NULL),
                          what, e->dir, step);
}

/* Rank 0 weighs the time the stop has against its recent checkpoints, logs
 * the budget and decides (for all: a broadcast) whether the stop
 * checkpoint can be written. Collective; runs only when stopping. */
static rp_status_t rp_eng_stop_budget(rp__ckpt_engine_t *e, uint64_t step,
                                      int signo, bool *skip_p)
{
    int32_t skip = 0;
    rp_status_t rc;

    if (e->rank == 0) {
        rp__stop_budget_t b;
        uint64_t est = 0;
        unsigned i;

        for (i = 0; i < e->nrecent; i++) {
            est = e->recent_ns[i] > est ? e->recent_ns[i] : est;
        }
        rp_eng_budget(e, signo, &b);
        skip = rp__stop_skip(&b, est);
        if (b.left_ms >= 0) {
            char slowest[64] = "no checkpoint measured yet";

            if (est > 0) {
                snprintf(slowest, sizeof(slowest), "slowest recent "
                         "checkpoint %.2f s", (double)est / 1e9);
            }
            rp_warn("stop at step %llu: %s%.1f s until SIGKILL (%s); %s%s",
                    (unsigned long long)step, b.exact ? "" : "at least ",
                    (double)b.left_ms / 1e3, b.why, slowest,
                    skip ? ": no time for a stop checkpoint" : "");
        } else {
            rp_info("stop at step %llu: time until SIGKILL unknown (%s)",
                    (unsigned long long)step, b.why);
        }
        if (skip) {
            rp_warn("stopping WITHOUT a checkpoint so that the job can still "
                    "be requeued; it resumes from step %llu",
                    e->have_ckpt_step ? (unsigned long long)e->ckpt_step : 0ull);
        }
    }
    rc = rp_broadcast(e->ctx, &skip, 1, RP_DTYPE_INT32, 0);
    *skip_p = skip != 0;
    return rc;
}

rp_status_t rp__ckpt_step(rp__ckpt_engine_t *e, uint64_t step,
                          rp_step_result_t *result)
{
    int64_t v[5];
    int sig;
    bool due, stop, taken = false;
    rp_status_t rc, prev = RP_OK;
    rp__ckpt_watchdog_t wd = {.started = false};
    char what[64];

    if (result != NULL) {
        memset(result, 0, sizeof(*result));
    }
    if (e->stopped) {
        if (result != NULL) {
            result->stop = 1;
        }
        return RP_OK;
    }
    if (e->have_step && step <= e->last_step) {
        rp_error("rp_step: step %llu after step %llu (steps must increase)",
                 (unsigned long long)step, (unsigned long long)e->last_step);
        return RP_ERR_INVALID_ARG;
    }
    rp_eng_clock(e);
    if (e->fault == RP_CKPT_FAULT_STOP && e->fault_rank == e->rank &&
        step >= e->fault_step) {
        e->stop_requested = 1;
    }
    v[0] = e->rank == 0 && e->interval_s > 0 &&
           rp__ckpt_now_ns() - e->last_ckpt_ns >= e->interval_s * 1000000000ull;
    v[1] = e->every > 0 && step % e->every == 0;
    /* The signal number travels in the MAX, for the log line below. */
    sig = rp__signal_pending();
    v[2] = sig != 0 ? sig : (e->stop_requested != 0 || rp_eng_stop_pending != 0);
    v[3] = e->pend.active && !rp__ckpt_async_done(e);
    /* The table changed on some rank since it was last checked: every
     * rank checks it now (a rank that changed nothing included, so ranks
     * that disagree get an error rather than mismatched collectives). */
    v[4] = !e->checked;
    rc = rp_allreduce(e->ctx, v, v, 5, RP_DTYPE_INT64, RP_OP_MAX);
    if (rc != RP_OK) {
        return rc;
    }
    if (v[4] != 0) {
        rc = rp__ckpt_regions_check(e);
        if (rc != RP_OK) {
            return rc;
        }
    }
    e->have_step = true;
    e->last_step = step;
    stop = v[2] != 0;
    due = v[0] != 0 || v[1] != 0 || stop;
    if (stop) {
        /* From here on a stop waits for writes (one in flight, its own):
         * bounded, so that a hung file system cannot hold it to SIGKILL. */
        snprintf(what, sizeof(what), "stop at step %llu",
                 (unsigned long long)step);
        rp_eng_watch(e, &wd, what, step, (int)v[2]);
    }
    if (e->pend.active && v[0] != 0 && v[1] == 0 && !stop && v[3] != 0) {
        /* A slow file system must not slow training down: a checkpoint
         * that the interval makes due while the last one is still being
         * written is put off, not waited for, and taken at the first safe
         * point after the write ends. A stop, RINGPOINT_CKPT_EVERY (the
         * caller asked for those steps), rp_checkpoint and rp_finalize
         * wait for a write in flight. */
        if (e->rank == 0 && !e->pend.postponed) {
            rp_warn("checkpoint of step %llu postponed: the one of step "
                    "%llu is still being written to %s",
                    (unsigned long long)step,
                    (unsigned long long)e->pend.step, e->dir);
        }
        e->pend.postponed = true;
        due = false;
    }
    if (e->pend.active && (due || v[3] == 0)) {
        /* A background write failed: this is the safe point that says so;
         * training and the next checkpoint go on. */
        prev = rp_eng_settle(e);
    }
    if (stop && due) {
        bool skip;

        rc = rp_eng_stop_budget(e, step, (int)v[2], &skip);
        if (rc != RP_OK) {
            rp__ckpt_watchdog_disarm(&wd);
            return rc;
        }
        due = !skip;
    }
    if (due) {
        rc = rp_eng_take(e, step, stop, &taken);
    }
    if (stop) {
        /* The stop checkpoint is committed, or failed (logged where it
         * failed): leave the loop either way, the job is being stopped.
         * A write that failed (a full or failing disk) with the ranks
         * still talking is a stop without a new checkpoint, as when there
         * is no time for one: rp_step says RP_OK, so that the caller exits
         * RP_EXIT_STOPPED and the job resumes from the previous one. An
         * earlier background write that failed (@prev, logged) must not
         * hide the stop either. */
        if (rc != RP_OK && rp_eng_write_failed(rc)) {
            if (e->rank == 0) {
                rp_warn("stop at step %llu: its checkpoint could not be "
                        "written (%s); stopping without it, the job resumes "
                        "from step %llu", (unsigned long long)step,
                        rp_status_string(rc),
                        e->have_ckpt_step ? (unsigned long long)e->ckpt_step
                                          : 0ull);
            }
            rc = RP_OK;
        }
        prev = RP_OK;
        if (e->rank == 0) {
            rp_eng_log_stop(e, step, (int)v[2], rc == RP_OK && taken);
        }
        e->stopped = true;
        e->stop_requested = 0;
        rp_eng_stop_pending = 0;
        rp__ckpt_watchdog_disarm(&wd);
    }
    if (result != NULL) {
        result->checkpointed = taken;
        result->stop = stop;
    }
    return rc != RP_OK ? rc : prev;
}

/* Rank 0 says why the job stops and what happens next, where the user
 * reads the job's output: a job that ends early on a signal looks like a
 * crash unless it says it stopped on purpose and will be requeued. */
static void rp_eng_log_stop(const rp__ckpt_engine_t *e, uint64_t step,
                            int why, bool committed)
{
    const rp_settings_t *set = &e->ctx->settings;
    const char *restarts = getenv("SLURM_RESTART_COUNT");
    const char *name = why > 1 ? rp__signal_name(why) : NULL;
    uint64_t done = 0;

    char cost[200] = "";

    if (restarts != NULL) {
        (void)rp__parse_uint(restarts, 0, UINT64_MAX, &done, NULL, 0);
    }
    if (committed) {
        /* What the stop cost, against what it had, so a user can size
         * the warning signal's lead time: the bytes,
         * the time since the signal reached this rank (or the write and
         * commit alone when it came to another rank), and what is left
         * before SIGKILL. */
        int64_t sig_ms = rp__signal_time_ms(), now_ms;
        rp__stop_budget_t b;
        struct timespec ts;
        int n;

        clock_gettime(CLOCK_REALTIME, &ts);
        now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        n = snprintf(cost, sizeof(cost), ", %llu bytes, %.2f s %s",
                     (unsigned long long)e->stats.bytes_total,
                     sig_ms > 0 ? (double)(now_ms - sig_ms) / 1e3
                                : (double)(e->stats.write_ns +
                                           e->stats.commit_ns) / 1e9,
                     sig_ms > 0 ? "after the signal" : "to write and commit");
        rp__stop_budget(&e->limits, why > 1 ? why : SIGTERM,
                        e->ctx->settings.ckpt_signal, sig_ms > 0 ? sig_ms : 0,
                        now_ms, &b);
        if (b.left_ms >= 0 && n > 0 && (size_t)n < sizeof(cost)) {
            snprintf(cost + n, sizeof(cost) - (size_t)n,
                     ", %s%.1f s left before SIGKILL", b.exact ? "" : "at least ",
                     (double)b.left_ms / 1e3);
        }
    }
    rp_warn("stopping at step %llu (%s%s): %s%s", (unsigned long long)step,
            name != NULL ? "SIG" : "", name != NULL ? name : "stop requested",
            committed ? "checkpoint committed" : "NO new checkpoint", cost);
    if (set->ckpt_requeue_set && done >= set->ckpt_requeue) {
        rp_warn("requeue limit reached (%llu of %llu): the job will not be "
                "requeued; resubmit with the same --ckpt-dir to resume",
                (unsigned long long)done,
                (unsigned long long)set->ckpt_requeue);
    }
}

rp_status_t rp__ckpt_checkpoint_now(rp__ckpt_engine_t *e, uint64_t step)
{
    bool taken, inflight;
    rp_status_t rc, prev;

    rc = rp_eng_ready(e);
    if (rc != RP_OK) {
        return rc;
    }
    /* The checkpoint of this very step may be in flight (rp_step took it
     * in the background): waiting for its commit is what the caller asks
     * for, not a second one. Every rank has the same one in flight and
     * the same outcome from the commit's agreement, so all return here. */
    inflight = e->pend.active && e->pend.step == step;
    prev = rp_eng_settle(e);
    if (inflight && prev == RP_OK) {
        return RP_OK;
    }
    rc = rp_eng_take(e, step, true, &taken);
    if (rc == RP_OK && taken) {
        e->have_step = true;
        e->last_step = step > e->last_step ? step : e->last_step;
    }
    return rc != RP_OK ? rc : prev;
}

void rp__ckpt_engine_destroy(struct rp_context *ctx)
{
    rp__ckpt_engine_t *e = ctx->ckpt;

    if (e == NULL) {
        return;
    }
    if (e->pend.active) {
        rp__ckpt_watchdog_t wd;

        /* rp_finalize is collective: commit what is in flight, so a job
         * that ends normally keeps its last checkpoint; within
         * RINGPOINT_CKPT_TIMEOUT when set. */
        rp_eng_watch(e, &wd, "rp_finalize", e->pend.step, 0);
        (void)rp_eng_settle(e);
        rp__ckpt_watchdog_disarm(&wd);
    }
    rp__ckpt_async_stop(e);
    rp__ckpt_prune_join(e);
    /* The stop signals' handlers stay to the end of rp_finalize
     * (rp__signal_release): a repeated SIGTERM must not kill a rank in
     * its barrier. */
    (void)rp__ckpt_close(&e->rootfd, e->dir);
    rp__ckpt_io_free(e->staging);
    rp__ckpt_pcopy_free(e->pcopy);
    rp__ckpt_devstage_free(e);
    free(e->regs);
    free(e);
    ctx->ckpt = NULL;
}
