/*
 * PMIx bootstrap: identity from the job-level and process-level keys the
 * server publishes, and a key-value exchange through Put/Commit/Fence/Get.
 *
 * The fence does not collect data by default: at thousands of ranks each
 * process needs a handful of peers' addresses (its ring neighbours and a
 * few log2(n) partners), so a full all-to-all at start-up would be wasted.
 * PMIx then fetches a peer's value from that peer's server on first Get
 * (direct modex). RINGPOINT_PMIX_COLLECT=1 switches to collecting all data
 * at the fence, for process managers without direct modex. It is also
 * what a second bootstrap in the same process does (a context finalized and
 * initialized again): Slurm's PMIx server keeps the first copy of a remote
 * rank's data it fetched and answers later gets from it, even with
 * PMIX_GET_REFRESH_CACHE, so only a collecting fence brings the new
 * generation's keys. The same for a job where some node holds a single
 * rank, whose ranks trade their host names in a fence of their own first
 * (rp__pmix_host_share).
 *
 * The PMIx client itself is opened by the first bootstrap and stays open
 * until the process exits, however many contexts come and go; see
 * rp_pmix_client below for why.
 *
 *   pmix.c      the exchange (Put/Commit/Fence/Get) and the client's life
 *   pmix_job.c  the job's layout: identity, and which ranks share a host
 */
#include "config.h"

#include "bootstrap/pmix_int.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/str.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static rp_status_t rp_pmix_put(rp_bootstrap_t *bs, const char *key,
                               const void *data, size_t len)
{
    pmix_value_t val;
    pmix_status_t rc;

    (void)bs;
    memset(&val, 0, sizeof(val));
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)data; /* PMIx_Put copies the bytes */
    val.data.bo.size = len;
    rc = PMIx_Put(PMIX_GLOBAL, key, &val);
    if (rc != PMIX_SUCCESS) {
        rp_error("bootstrap: PMIx_Put(%s) failed: %s", key,
                 PMIx_Error_string(rc));
        return RP_ERR_BOOTSTRAP;
    }
    return RP_OK;
}

static rp_status_t rp_pmix_fence(rp_bootstrap_t *bs)
{
    rp_pmix_t *p = bs->impl;
    pmix_info_t info[2];
    pmix_status_t rc;
    bool collect = p->collect;
    int timeout = p->timeout_s;

    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        rp_error("bootstrap: PMIx_Commit failed (rp_init #%u of this "
                 "process): %s", bs->generation + 1, PMIx_Error_string(rc));
        return RP_ERR_BOOTSTRAP;
    }
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    rc = PMIx_Fence(NULL, 0, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
        rp_error("bootstrap: PMIx_Fence(%s) failed (rp_init #%u of this "
                 "process): %s%s", collect ? "collecting data" : "no data",
                 bs->generation + 1, PMIx_Error_string(rc),
                 rc == PMIX_ERR_TIMEOUT ?
                 " (a rank did not arrive within RINGPOINT_BOOTSTRAP_TIMEOUT)" :
                 "");
        return rc == PMIX_ERR_TIMEOUT ? RP_ERR_TIMEOUT : RP_ERR_BOOTSTRAP;
    }
    return RP_OK;
}

/* One PMIx_Get_nb in flight. PMIX_TIMEOUT alone does not bound a get:
 * Slurm's PMIx server fetches a remote rank's data from that rank's node
 * (direct modex) and, when the rank died on the way (its node's step
 * daemon gone), leaves the request unanswered; a blocking PMIx_Get then
 * held rp_init past RINGPOINT_BOOTSTRAP_TIMEOUT for good (seen in a
 * requeued job whose rank on a returning node was killed at start).
 * So the wait is ours, with a deadline. A request given up on stays
 * allocated for PMIx (which keeps pointers to its key and info) and is
 * freed by the callback if that ever comes. */
typedef struct rp_pmix_get_req {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    bool abandoned;
    pmix_status_t rc;
    bool bytes;      /* the value was a byte object */
    void *data;      /* its copy */
    size_t len;
    char key[PMIX_MAX_KEYLEN + 1];
    pmix_info_t info;
} rp_pmix_get_req_t;

static void rp_pmix_get_req_free(rp_pmix_get_req_t *r)
{
    PMIX_INFO_DESTRUCT(&r->info);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->data);
    free(r);
}

static void rp_pmix_get_done(pmix_status_t status, pmix_value_t *kv,
                             void *cbdata)
{
    rp_pmix_get_req_t *r = cbdata;
    bool abandoned;

    pthread_mutex_lock(&r->mu);
    r->rc = status;
    /* PMIx releases @kv when this returns: keep a copy. */
    if (status == PMIX_SUCCESS && kv != NULL && kv->type == PMIX_BYTE_OBJECT) {
        r->bytes = true;
        r->len = kv->data.bo.size;
        r->data = malloc(r->len > 0 ? r->len : 1);
        if (r->data == NULL) {
            r->rc = PMIX_ERR_NOMEM;
        } else if (r->len > 0) {
            memcpy(r->data, kv->data.bo.bytes, r->len);
        }
    }
    r->done = true;
    abandoned = r->abandoned;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (abandoned) {
        rp_pmix_get_req_free(r);
    }
}

static rp_status_t rp_pmix_get(rp_bootstrap_t *bs, int rank, const char *key,
                               void **data_p, size_t *len_p)
{
    rp_pmix_t *p = bs->impl;
    pmix_proc_t peer;
    pmix_status_t rc;
    rp_pmix_get_req_t *r;
    struct timespec dl;
    int timeout = p->timeout_s, err = 0;
    rp_status_t status;

    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        rp_error("bootstrap: out of memory reading '%s' of rank %d", key, rank);
        return RP_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&r->mu, NULL);
    rp__cond_init_monotonic(&r->cv);
    rp__strlcpy(r->key, key, sizeof(r->key));
    PMIX_INFO_LOAD(&r->info, PMIX_TIMEOUT, &timeout, PMIX_INT);
    PMIX_PROC_LOAD(&peer, p->self.nspace, (pmix_rank_t)rank);
    rc = PMIx_Get_nb(&peer, r->key, &r->info, 1, rp_pmix_get_done, r);
    if (rc != PMIX_SUCCESS) {
        rp_pmix_get_req_free(r);
        if (rc == PMIX_ERR_NOT_FOUND) {
            return RP_ERR_NOT_FOUND;
        }
        rp_error("bootstrap: PMIx_Get_nb(rank %d, %s) failed: %s", rank, key,
                 PMIx_Error_string(rc));
        return RP_ERR_BOOTSTRAP;
    }
    dl = rp__deadline_after((uint64_t)timeout * 1000000000ull);
    pthread_mutex_lock(&r->mu);
    while (!r->done && err != ETIMEDOUT) {
        err = pthread_cond_timedwait(&r->cv, &r->mu, &dl);
    }
    if (!r->done) {
        r->abandoned = true; /* the callback frees it, if it comes */
        pthread_mutex_unlock(&r->mu);
        rp_error("bootstrap: rank %d's '%s' did not arrive within %d s "
                 "(RINGPOINT_BOOTSTRAP_TIMEOUT): that rank died or hangs "
                 "in its start-up", rank, key, timeout);
        return RP_ERR_TIMEOUT;
    }
    pthread_mutex_unlock(&r->mu);
    if (r->rc == PMIX_ERR_NOT_FOUND) {
        status = RP_ERR_NOT_FOUND;
    } else if (r->rc != PMIX_SUCCESS) {
        rp_error("bootstrap: PMIx_Get(rank %d, %s) failed: %s", rank, key,
                 PMIx_Error_string(r->rc));
        status = r->rc == PMIX_ERR_NOMEM ? RP_ERR_NO_MEMORY : RP_ERR_BOOTSTRAP;
    } else if (!r->bytes) {
        rp_error("bootstrap: rank %d published '%s' with an unexpected type",
                 rank, key);
        status = RP_ERR_BOOTSTRAP;
    } else {
        *data_p = r->data;
        *len_p = r->len;
        r->data = NULL;
        status = RP_OK;
    }
    rp_pmix_get_req_free(r);
    return status;
}

/* The client stays open (see rp_pmix_client): only this bootstrap goes. */
static void rp_pmix_finalize(rp_bootstrap_t *bs)
{
    free(bs->impl);
    bs->impl = NULL;
}

static const rp_bootstrap_ops_t rp_pmix_ops = {
    .name     = "pmix",
    .put      = rp_pmix_put,
    .fence    = rp_pmix_fence,
    .get      = rp_pmix_get,
    .finalize = rp_pmix_finalize,
};

/*
 * The PMIx client of this process: opened by the first bootstrap, closed
 * when the process exits (or the library is unloaded), never in between.
 * Closing it in rp_finalize and opening it again in the next rp_init raced
 * with the other ranks of the node: a PMIx server that loses a client's
 * connection while a fence of that client's namespace is in progress
 * counts the client out of that fence (lost_connection() in PMIx 4.2's
 * ptl_base_sendrecv.c). A rank that had already re-initialized and
 * entered the next fence while a slower one was still inside
 * PMIx_Finalize got that fence back as "PARTIAL SUCCESS", or saw it
 * complete without the slow rank, whose own fence then waited alone until
 * the timeout. Seen with ranks re-initializing under mpirun, and the same
 * server code runs inside Slurm's PMIx plugin. A
 * client that stays connected leaves nothing to race: each rp_init is one
 * more Put/Commit/Fence under keys of its own generation.
 */
static struct {
    pthread_mutex_t lock;
    bool open;
    bool exit_hook;
    pid_t pid;         /* the opener: a forked child must not close it */
    pmix_proc_t self;
    unsigned sessions; /* bootstraps started so far */
} rp_pmix_client = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* At exit, or when the library is unloaded (atexit() from a shared library
 * registers against it): a launcher counts a process that exits with its
 * client still connected as one that died without finalizing. */
static void rp_pmix_client_close(void)
{
    pmix_status_t rc;

    pthread_mutex_lock(&rp_pmix_client.lock);
    if (rp_pmix_client.open && rp_pmix_client.pid == getpid()) {
        rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS) {
            rp_warn("bootstrap: PMIx_Finalize failed: %s",
                    PMIx_Error_string(rc));
        }
    }
    rp_pmix_client.open = false;
    pthread_mutex_unlock(&rp_pmix_client.lock);
}

/* Open the client if this is the first bootstrap; count the session. */
static rp_status_t rp_pmix_client_open(pmix_proc_t *self, unsigned *gen_p)
{
    rp_status_t status = RP_OK;
    pmix_status_t rc;

    pthread_mutex_lock(&rp_pmix_client.lock);
    if (rp_pmix_client.open && rp_pmix_client.pid != getpid()) {
        rp_error("bootstrap: this process was forked from rank %u, whose "
                 "PMIx connection it cannot use; call rp_init in the "
                 "launched process, not in a forked child",
                 (unsigned)rp_pmix_client.self.rank);
        status = RP_ERR_BOOTSTRAP;
        goto out;
    }
    if (!rp_pmix_client.open) {
        rc = PMIx_Init(&rp_pmix_client.self, NULL, 0);
        if (rc != PMIX_SUCCESS) {
            rp_error("bootstrap: PMIx_Init failed: %s (PMIX_NAMESPACE is "
                     "set, so a PMIx server was expected; with srun use "
                     "--mpi=pmix)", PMIx_Error_string(rc));
            status = RP_ERR_BOOTSTRAP;
            goto out;
        }
        rp_pmix_client.open = true;
        rp_pmix_client.pid = getpid();
        if (!rp_pmix_client.exit_hook) {
            rp_pmix_client.exit_hook = atexit(rp_pmix_client_close) == 0;
            if (!rp_pmix_client.exit_hook) {
                rp_warn("bootstrap: cannot register the PMIx_Finalize at "
                        "exit; the launcher may report this process as "
                        "having exited without finalizing");
            }
        }
    }
    *self = rp_pmix_client.self;
    *gen_p = rp_pmix_client.sessions++;
out:
    pthread_mutex_unlock(&rp_pmix_client.lock);
    return status;
}

rp_status_t rp__bootstrap_pmix_init(rp_bootstrap_t *bs,
                                    const rp__bootstrap_settings_t *set)
{
    rp_pmix_t *p;
    rp_status_t status;

    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        rp_error("bootstrap: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    p->timeout_s = (int)set->timeout_s; /* at most 366 days */

    status = rp_pmix_client_open(&p->self, &bs->generation);
    if (status != RP_OK) {
        goto err_free;
    }
    p->collect = set->pmix_collect || bs->generation > 0;
    bs->ops = &rp_pmix_ops;
    bs->impl = p;
    status = rp__pmix_identity(bs, p);
    if (status != RP_OK) {
        goto err_impl;
    }
    status = rp__pmix_host_share(bs, p);
    if (status != RP_OK) {
        goto err_impl;
    }
    return RP_OK;

err_impl:
    bs->impl = NULL;
err_free:
    free(p);
    return status;
}
