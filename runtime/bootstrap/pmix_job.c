/*
 * The job's layout as the PMIx bootstrap learns it: this process's rank,
 * the job's size, its node and local rank, from the job-level and
 * process-level keys the server publishes (Slurm's variables where a
 * server leaves one out), and whether another rank shares this host,
 * which the UCX transport's choices depend on.
 */
#include "config.h"

#include "bootstrap/host.h"
#include "bootstrap/pmix_int.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/str.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Resolve the identity fields; Slurm's variables fill gaps where a server
 * does not publish a key (PMIx servers differ in what they provide). */
rp_status_t rp__pmix_identity(rp_bootstrap_t *bs, rp_pmix_t *p)
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
 * picks its rendezvous threshold by the answer (transport/ucx_tune.c).
 * Every rank decides alike whether to trade (whether some node holds one
 * rank is a fact of the job, not of the rank), else the fence would wait
 * for ranks that never come; only the lone ones read the names. Once a
 * rank's data reached this node, Slurm's server answers a later key of
 * that rank from its copy: after a second fence that did not collect,
 * reads of the keys put after the trade failed now and then, and never
 * when both fences collected. So from here on every fence of this
 * bootstrap collects (p->collect), as after an rp_init again; only in
 * jobs where some node holds one rank (typically one rank per node, whose
 * data are then one address per node).
 * A rank whose name cannot be read is one the facts do not cover.
 */
rp_status_t rp__pmix_host_share(rp_bootstrap_t *bs, rp_pmix_t *p)
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
        status = bs->ops->put(bs, key, f.host != NULL ? f.host : "",
                              f.host != NULL ? strlen(f.host) + 1 : 1);
        if (status != RP_OK) {
            goto out;
        }
        p->collect = true;
        status = bs->ops->fence(bs);
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
                bs->ops->get(bs, r, key, &data, &len) != RP_OK) {
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
