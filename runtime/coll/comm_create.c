/*
 * The communicator's assembly (comm_create.h): settings, the failure
 * notices' receive, then the set-ups that run collectives on the new
 * communicator (the tuning table, the node's segment, the hierarchy), and
 * the teardown. It sits above everything else in coll/: the set-ups use the
 * collectives, which use the point-to-point ground (comm.c) only.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/comm_create.h"
#include "coll/hier.h"
#include "coll/progress.h"
#include "coll/shm.h"
#include "coll/tune.h"
#include "util/log.h"
#include "util/parse.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* shm_max unless RINGPOINT_COLL_SHM_MAX says otherwise. Above it reading
 * the peer's buffer with one copy (single-copy reads, or the ring over
 * UCX, which does the same) beats the segment's copy in and out, which
 * moves every byte through memory twice (doc/benchmarks.md). */
#define RP_SHM_MAX_DEFAULT (128u * 1024)

/* More ranks on this node than cores? The machine's CPU count, not this
 * process's affinity: launchers bind each rank to one core, which says
 * nothing about sharing. RINGPOINT_COLL_OVERSUBSCRIBED says so where the
 * count misleads (a CPU set narrower than the node). */
static bool rp_oversubscribed(const rp_transport_t *tp,
                              const rp_settings_t *settings)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    if (settings->coll_oversubscribed >= 0) {
        return settings->coll_oversubscribed == 1;
    }
    return cpus > 0 && tp->bs->local_size > cpus;
}

static rp_status_t rp_post_notice_recv(rp_comm_t *c)
{
    return c->tp->ops->irecv(c->tp, RP_TRANSPORT_ANY_PEER,
                             (uint64_t)RP_COMM_NOTICE_SEQ << 16, &c->notice,
                             sizeof(c->notice), &c->notice_req);
}

rp_status_t rp__comm_create(rp_transport_t *tp, int rank, int size,
                            const rp_settings_t *settings, rp_comm_t **comm_p)
{
    rp_comm_t *c;
    rp_status_t status;
    /* RINGPOINT_COLL_PROGRESS_SPIN_US: how long the progress thread
     * polls before sleeping on the transport; unset: as long as the
     * blocking calls do. Not polling at all turns every segment's wait
     * into a wakeup through the kernel, which costs more than a small
     * collective and slows large ones even with the application computing
     * beside them (ringpoint-bench -O, doc/benchmarks.md). */
    const bool bg_spin_set = settings->progress_spin_us >= 0;
    /* RINGPOINT_COLL_SHM_MAX: the largest allreduce, broadcast or
     * allgather (bytes of the result) that goes through the node's shared
     * segment rather than the ring; the same on every rank. Above it the
     * ring's single-copy transfers move fewer bytes through memory. */
    const bool shm_max_set = settings->shm_max_bytes >= 0;

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        rp_error("coll: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    /* The settings table checked every value at rp_init. */
    c->compression = (rp_compression_t)settings->compression;
    c->spin_bg_ns = bg_spin_set
                        ? (uint64_t)settings->progress_spin_us * 1000 : 0;
    c->shm_max = shm_max_set ? (size_t)settings->shm_max_bytes
                             : RP_SHM_MAX_DEFAULT;
    c->shm_max_set = shm_max_set;
    c->shm_on = settings->coll_shm;
    c->cma_on = settings->coll_cma;
    rp__progress_init(c);
    c->tp = tp;
    c->rank = rank;
    c->size = size;
    c->op = "collective";
    c->timeout_ns = settings->coll_timeout_s * 1000000000ULL;
    c->algo = settings->allreduce_algo;
    /* The algorithm decides the reduction order, so its choice may depend
     * only on what every rank of every launch of the job agrees on: the
     * world size and the message size, never on the layout. The ring's
     * 2(n-1) steps beat recursive doubling's log2(n) whole-buffer
     * exchanges sooner at 2 ranks, where each step is one message, than
     * at more ranks, where every extra step may cost a context switch
     * (the switch points: doc/benchmarks.md). */
    c->rd_max_bytes = settings->rd_max_bytes != RP_RD_MAX_AUTO
                          ? (size_t)settings->rd_max_bytes
                      : size <= 2 ? 8 * 1024
                                  : 64 * 1024;
    c->seg_bytes = (size_t)settings->segment_bytes;
    /* Unless set: what the transport prefers (1 MiB over TCP), else 512 KiB
     * at 2 ranks, where each ring block is half the buffer and fewer,
     * larger messages save rendezvous handshakes. Every rank must cut
     * alike, so this hangs only on the world size and on what seg_hint
     * promises to be uniform. */
    if (tp != NULL &&
        !rp__settings_given(settings, "RINGPOINT_COLL_SEGMENT")) {
        if (tp->seg_hint > 0) {
            c->seg_bytes = tp->seg_hint;
        } else if (size == 2) {
            c->seg_bytes = 512 * 1024;
        }
    }
    c->window = (int)settings->window;
    if (tp == NULL) {
        /* One rank: the progress thread runs the trivial collectives. */
        *comm_p = c;
        return RP_OK;
    }
    /* Plain spinning only pays when every rank has a core of its own;
     * oversubscribed ranks that spin steal the CPU from the peer they wait
     * for. But sleeping at once on the transport's event descriptor costs a
     * wakeup through the kernel per message, many times a small
     * allreduce's own cost, so oversubscribed ranks poll too, yielding the CPU between polls (the peer sharing the core
     * runs; with nobody else runnable the poll simply continues), and sleep
     * after 1 ms: no livelock, no wakeup cost on the common path. A local
     * choice: it changes timing, never results. */
    c->yield = rp_oversubscribed(tp, settings);
    if (c->yield && tp->bs->local_rank == 0) {
        rp_info("coll: %d ranks on this node's %ld CPUs%s: waits poll "
                "with sched_yield, then sleep (no busy-waiting)",
                tp->bs->local_size, sysconf(_SC_NPROCESSORS_ONLN),
                settings->coll_oversubscribed == 1
                    ? " (RINGPOINT_COLL_OVERSUBSCRIBED=1)" : "");
    }
    /* Where the segment's slots give way to single-copy reads (shm.h),
     * per collective, unless RINGPOINT_COLL_SHM_MAX says (the measurements
     * behind these: doc/benchmarks.md). Allgather reads the peers' inputs
     * from 16 KiB a rank: each rank then copies every byte once instead of
     * twice, which outweighs the reads' system calls sooner than an
     * allreduce's. Oversubscribed, the allreduce stays in the slots at
     * every size: a read waits for a peer that may not hold a core, while
     * the slots let the ranks take turns. The same on every rank: the
     * size, the CPU count and the ranks per node are. */
    c->shm_ar_max = c->shm_ag_max = c->shm_max;
    /* Above the slots every allreduce reads the peers and writes its
     * finished block into theirs (shm_cma.c), 2 ranks too: the ring over
     * UCX is itself one single-copy exchange a segment, but with a
     * transport's handshakes per message on top. */
    if (!shm_max_set) {
        if (c->yield) {
            c->shm_ar_max = SIZE_MAX;
        }
        if (c->shm_ag_max > (size_t)size * 16 * 1024) {
            c->shm_ag_max = (size_t)size * 16 * 1024;
        }
    }
    if (settings->coll_spin_us >= 0) {
        c->spin_ns = (uint64_t)settings->coll_spin_us * 1000;
    } else {
        c->spin_ns = (c->yield ? 1000 : 200) * 1000;
    }
    c->spin_fg_ns = c->spin_ns;
    if (!bg_spin_set) {
        c->spin_bg_ns = c->spin_ns;
    }

    status = RP_ERR_NO_MEMORY;
    c->touched = calloc((size_t)size, sizeof(*c->touched));
    c->notice_sends = calloc((size_t)size, sizeof(*c->notice_sends));
    if (c->touched == NULL || c->notice_sends == NULL) {
        rp_error("coll: out of memory for %d ranks", size);
        goto err_free;
    }
    status = rp_post_notice_recv(c);
    if (status != RP_OK) {
        goto err_free;
    }
    c->hier_max = SIZE_MAX;
    status = rp__tune_setup(c, settings->rd_max_bytes != RP_RD_MAX_AUTO,
                            shm_max_set,
                            settings->tune_file_set ? settings->tune_file
                                                    : NULL);
    if (status == RP_OK) {
        status = rp__shm_setup(c);
    }
    if (status == RP_OK) {
        status = rp__hier_setup(c, settings->coll_hier);
    }
    if (status != RP_OK) {
        goto err_notice;
    }
    *comm_p = c;
    return RP_OK;


err_notice:
    rp__shm_destroy(c->shm);
    c->tp->ops->cancel(c->tp, &c->notice_req);
    c->tp->ops->progress(c->tp);
err_free:
    free(c->notice_sends);
    free(c->touched);
    rp__progress_fini(c);
    free(c);
    return status;
}

void rp__comm_quiesce(rp_comm_t *c)
{
    if (c == NULL) {
        return;
    }
    /* What is queued runs first: the peers expect it. */
    rp__progress_stop(c);
    if (c->tp != NULL) {
        c->tp->ops->cancel(c->tp, &c->notice_req);
        /* The cancellation completes from progress; the request memory
         * must outlive it, so give it a moment rather than free early. */
        c->tp->ops->progress(c->tp);
    }
    /* Requests still in flight after an error point into reqs, work and
     * tmp: they are freed by the caller after the transport is gone. */
}

void rp__comm_destroy(rp_comm_t *c)
{
    if (c == NULL) {
        return;
    }
    rp__hier_destroy(c->hier);
    rp__shm_destroy(c->shm);
    free(c->reqs);
    free(c->work.ptr);
    free(c->tmp.ptr);
    free(c->fuse.ptr);
    free(c->notice_sends);
    free(c->touched);
    rp__progress_fini(c);
    free(c);
}
