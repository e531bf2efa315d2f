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
 * (rp_pmix_host_share).
 *
 * The PMIx client itself is opened by the first bootstrap and stays open
 * until the process exits, however many contexts come and go; see
 * rp_pmix_client below for why.
 */
#include "config.h"

#include "bootstrap/bootstrap.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/str.h"

#include <errno.h>
#include <pmix.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct rp_pmix {
    pmix_proc_t self;
    bool collect;
    int timeout_s; /* passed as PMIX_TIMEOUT so a dead peer cannot hang us */
} rp_pmix_t;

/* PMIx integer values come in whichever width the server chose. */
static bool rp_pmix_value_to_u64(const pmix_value_t *val, uint64_t *out)
{
    switch (val->type) {
    case PMIX_UINT8:  *out = val->data.uint8;  return true;
    case PMIX_UINT16: *out = val->data.uint16; return true;
    case PMIX_UINT32: *out = val->data.uint32; return true;
    case PMIX_UINT64: *out = val->data.uint64; return true;
    case PMIX_SIZE:   *out = val->data.size;   return true;
    case PMIX_PROC_RANK: *out = val->data.rank; return true;
    case PMIX_INT:
        if (val->data.integer < 0) {
            return false;
        }
        *out = (uint64_t)val->data.integer;
        return true;
    case PMIX_INT32:
        if (val->data.int32 < 0) {
            return false;
        }
        *out = (uint64_t)val->data.int32;
        return true;
    default:
        return false;
    }
}

/* Read an unsigned key. Fails quietly (returns false) so callers can fall
 * back to Slurm's variables where a server does not publish the key; what
 * PMIx said goes to *@rc_p for those that cannot. */
static bool rp_pmix_get_u64(const pmix_proc_t *proc, const char *key,
                            uint64_t *out, pmix_status_t *rc_p)
{
    pmix_value_t *val = NULL;
    pmix_status_t rc;
    bool ok;

    rc = PMIx_Get(proc, key, NULL, 0, &val);
    if (rc_p != NULL) {
        *rc_p = rc;
    }
    if (rc != PMIX_SUCCESS || val == NULL) {
        return false;
    }
    ok = rp_pmix_value_to_u64(val, out);
    PMIX_VALUE_RELEASE(val);
    return ok;
}

static bool rp_env_u64(const char *name, uint64_t *out)
{
    const char *value = getenv(name);

    return value != NULL &&
           rp__parse_uint(value, 0, INT32_MAX, out, NULL, 0) == RP_OK;
}

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
 * held rp_init past RINGPOINT_BOOTSTRAP_TIMEOUT for good (seen: 3+ minutes
 * in a requeued job whose rank on a returning node was killed at start).
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

/* Resolve the identity fields; Slurm's variables fill gaps where a server
 * does not publish a key (PMIx servers differ in what they provide). */
static rp_status_t rp_pmix_identity(rp_bootstrap_t *bs, rp_pmix_t *p)
{
    pmix_proc_t wild;
    pmix_value_t *val = NULL;
    pmix_status_t rc;
    uint64_t v;
    const char *job;

    PMIX_PROC_LOAD(&wild, p->self.nspace, PMIX_RANK_WILDCARD);
    bs->rank = (int)p->self.rank;
    if (!rp_pmix_get_u64(&wild, PMIX_JOB_SIZE, &v, &rc) || v == 0 ||
        v > INT32_MAX) {
        rp_error("bootstrap: PMIx_Get(%s) gave no valid job size: %s",
                 PMIX_JOB_SIZE, rc != PMIX_SUCCESS ? PMIx_Error_string(rc) :
                 "a value of an unexpected type or out of range");
        return RP_ERR_BOOTSTRAP;
    }
    bs->size = (int)v;
    if (bs->rank < 0 || bs->rank >= bs->size) {
        rp_error("bootstrap: PMIx rank %d is outside the job size %d",
                 bs->rank, bs->size);
        return RP_ERR_BOOTSTRAP;
    }

    if (rp_pmix_get_u64(&p->self, PMIX_LOCAL_RANK, &v, NULL) ||
        rp_env_u64("SLURM_LOCALID", &v)) {
        bs->local_rank = (int)v;
    }
    if (rp_pmix_get_u64(&wild, PMIX_LOCAL_SIZE, &v, NULL) ||
        rp_env_u64("SLURM_NTASKS_PER_NODE", &v)) {
        bs->local_size = (int)v;
    } else {
        bs->local_size = 1;
    }
    if (rp_pmix_get_u64(&p->self, PMIX_NODEID, &v, NULL) ||
        rp_env_u64("SLURM_NODEID", &v)) {
        bs->node_id = (int)v;
    }
    if (rp_pmix_get_u64(&wild, PMIX_NUM_NODES, &v, NULL) ||
        rp_env_u64("SLURM_NNODES", &v)) {
        bs->node_count = (int)v;
    } else {
        bs->node_count = 1;
    }

    if (getenv("SLURMD_NODENAME") == NULL &&
        PMIx_Get(&p->self, PMIX_HOSTNAME, NULL, 0, &val) == PMIX_SUCCESS &&
        val != NULL && val->type == PMIX_STRING && val->data.string != NULL) {
        rp__strlcpy(bs->node_name, val->data.string, sizeof(bs->node_name));
    } else {
        rp__bootstrap_default_node_name(bs->node_name, sizeof(bs->node_name));
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }

    job = getenv("SLURM_JOB_ID");
    rp__strlcpy(bs->job_id, job != NULL ? job : p->self.nspace,
                sizeof(bs->job_id));
    return RP_OK;
}

#define RP_PMIX_HOST_KEY "ringpoint.host"

/* PMIx's name of this node, or NULL. Slurm's server gives the Slurm node
 * name, which may or may not be the host's; mpirun's gives the host's. */
static char *rp_pmix_node_name(const rp_pmix_t *p)
{
    pmix_value_t *val = NULL;
    char *name = NULL;

    if (PMIx_Get(&p->self, PMIX_HOSTNAME, NULL, 0, &val) == PMIX_SUCCESS &&
        val != NULL && val->type == PMIX_STRING && val->data.string != NULL) {
        name = strdup(val->data.string);
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }
    return name;
}

/* Does some node of the job hold a single rank? The same answer on every
 * rank (PMIx's map of the job), so all or none trade host names. Without
 * the map, whether every node holds one. */
static bool rp_pmix_some_node_alone(const rp_bootstrap_t *bs,
                                    const rp_pmix_t *p)
{
    char *nodes = NULL, *tok, *save = NULL;
    pmix_proc_t *procs;
    size_t n;
    bool alone = false;

    if (PMIx_Resolve_nodes(p->self.nspace, &nodes) != PMIX_SUCCESS ||
        nodes == NULL || *nodes == '\0') {
        free(nodes);
        return bs->size == bs->node_count;
    }
    for (tok = strtok_r(nodes, ",", &save); tok != NULL && !alone;
         tok = strtok_r(NULL, ",", &save)) {
        procs = NULL;
        n = 0;
        if (PMIx_Resolve_peers(tok, p->self.nspace, &procs, &n) ==
                PMIX_SUCCESS && procs != NULL) {
            alone = n == 1;
            PMIX_PROC_FREE(procs, n);
        }
    }
    free(nodes);
    return alone;
}

/*
 * Does another rank of the job run on this host? Several ranks on this
 * node say yes at once. For a rank alone on its node the node names do not
 * tell (several slurmd of one machine are several nodes; Slurm's PMIx
 * server names nodes as Slurm does, not after their hosts), so the ranks
 * trade their host names, before any transport exists since the transport
 * picks its rendezvous threshold by the answer (transport/ucx.c). Every
 * rank decides alike whether to trade (whether some node holds one rank is
 * a fact of the job, not of the rank), else the fence would wait for ranks
 * that never come; only the lone ones read the names. Once a rank's data reached this node, Slurm's server answers a
 * later key of that rank from its copy: with a second fence that did not
 * collect, 0-3 of the 12 reads of the keys put after the trade failed
 * (srun -N2 -n4, a trade by a fence with or without collecting), 0 of 60
 * when both fences collected. So from here on every fence of this
 * bootstrap collects (p->collect), as after an rp_init again; only in
 * jobs where some node holds one rank (typically one rank per node, whose
 * data are then one address per node).
 * A rank whose name cannot be read is one the facts do not cover.
 */
static rp_status_t rp_pmix_host_share(rp_bootstrap_t *bs, rp_pmix_t *p)
{
    rp_host_facts_t f;
    char host[256], key[64];
    char **hosts = NULL;
    char *node;
    void *data;
    size_t len;
    rp_status_t status = RP_OK;
    int r;

    memset(&f, 0, sizeof(f));
    f.rank = bs->rank;
    f.size = bs->size;
    f.local_size = bs->local_size;
    if (gethostname(host, sizeof(host) - 1) == 0) {
        host[sizeof(host) - 1] = '\0';
        f.host = host;
    }
    node = rp_pmix_node_name(p);
    f.node = node;
    if (bs->size > 1 && bs->node_count > 1 && rp_pmix_some_node_alone(bs, p)) {
        snprintf(key, sizeof(key), "%s.%u", RP_PMIX_HOST_KEY, bs->generation);
        status = rp_pmix_put(bs, key, f.host != NULL ? f.host : "",
                             f.host != NULL ? strlen(f.host) + 1 : 1);
        if (status != RP_OK) {
            goto out;
        }
        p->collect = true;
        status = rp_pmix_fence(bs);
        if (status != RP_OK) {
            goto out;
        }
        if (bs->local_size > 1) {
            goto decide; /* shares this host already */
        }
        hosts = calloc((size_t)bs->size, sizeof(*hosts));
        if (hosts == NULL) {
            rp_warn("bootstrap: out of memory for %d host names; the "
                    "transport guesses which ranks share this host",
                    bs->size);
        }
        for (r = 0; hosts != NULL && r < bs->size; r++) {
            if (r == bs->rank ||
                rp_pmix_get(bs, r, key, &data, &len) != RP_OK) {
                continue;
            }
            if (len > 1 && ((char *)data)[len - 1] == '\0') {
                hosts[r] = data; /* an empty name stays unknown */
            } else {
                free(data);
            }
        }
        f.hosts = (const char *const *)hosts;
    }
decide:
    bs->host_share = rp__bootstrap_host_share(&f, bs->host_share_why,
                                              sizeof(bs->host_share_why));
out:
    if (hosts != NULL) {
        for (r = 0; r < bs->size; r++) {
            free(hosts[r]);
        }
        free(hosts);
    }
    free(node);
    return status;
}

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
 * the timeout: 3 runs in 10 of 3 ranks re-initializing 3 times under
 * mpirun, and the same server code runs inside Slurm's PMIx plugin. A
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
    status = rp_pmix_identity(bs, p);
    if (status != RP_OK) {
        goto err_impl;
    }
    status = rp_pmix_host_share(bs, p);
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
