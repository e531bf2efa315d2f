/*
 * The requeue decision, apart from any Slurm call so it can be unit-tested.
 */
#include "config.h"

#include "spank/admin.h"
#include "spank/requeue.h"
#include "util/parse.h"

#include <inttypes.h>
#include <stdio.h>

rp_requeue_verdict_t rp__requeue_decide(const rp_job_view_t *job, uint64_t max,
                                        char *why, size_t whylen)
{
    if (job->cancelled) {
        snprintf(why, whylen, "the job was cancelled; not requeued "
                 "(resubmit with the same --ckpt-dir to resume)");
        return RP_REQUEUE_NO_CANCELLED;
    }
    if (job->pending) {
        snprintf(why, whylen, "the job is back in the queue already");
        return RP_REQUEUE_NO_PENDING;
    }
    if (job->requeuing) {
        snprintf(why, whylen, "Slurm is already requeuing the job");
        return RP_REQUEUE_NO_ALREADY;
    }
    if (!job->requeuable) {
        snprintf(why, whylen, "the job cannot be requeued (an interactive "
                 "srun, or a batch job submitted with --no-requeue); "
                 "resubmit with the same --ckpt-dir to resume");
        return RP_REQUEUE_NO_NOT_REQUEUABLE;
    }
    if (job->restarts >= max) {
        /* After failures, say what a loop of them usually means. */
        snprintf(why, whylen, "requeue limit reached (%" PRIu32 " of %" PRIu64
                 ")%s; not requeued", job->restarts, max,
                 job->failed ? " after the step failed again: look at why "
                               "it fails (the first lines of its output)"
                             : "");
        return RP_REQUEUE_NO_LIMIT;
    }
    snprintf(why, whylen, "requeued after %s (requeue %" PRIu32 " of %"
             PRIu64 ")", job->failed ? "a failure" : "a stop",
             job->restarts + 1, max);
    return RP_REQUEUE;
}

uint64_t rp__requeue_max(const char *job_text, const rp_spank_admin_t *admin)
{
    uint64_t limit = rp__spank_admin_max_requeues(admin);
    uint64_t n;

    if (job_text != NULL &&
        rp__parse_uint(job_text, 0, UINT64_MAX, &n, NULL, 0) == RP_OK) {
        return n < limit ? n : limit;
    }
    return limit;
}
