/*
 * The node's shared segment's set-up (shm.h): whether the layout allows
 * it, creating and mapping it (rank 0 creates, the others open what it
 * tells them), the single-copy probe, and the teardown. A set-up: it runs
 * collectives over the transport on the communicator being created, which
 * has no segment yet (c->shm NULL).
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/select.h"
#include "coll/shm.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RP_SHM_MAGIC 0x72707368u /* "rpsh" */
/* Per rank and parity. Big enough that a collective of a few MiB is a few
 * steps, small enough that 2 x ranks of them stay a modest mapping. */
#define RP_SHM_SLOT_BYTES (1024u * 1024)
/* Allreduce pieces up to this are reduced whole by every rank (one step);
 * larger ones are shared out (two steps and a copy, but each byte reduced
 * once). Uniform: the number of steps must agree on every rank. Larger
 * whole pieces make every rank reduce every byte, which costs more than
 * the step they save (doc/benchmarks.md). */
#define RP_SHM_DIRECT_BYTES (8u * 1024)
typedef struct rp_shm_hdr {
    uint32_t magic;
    uint32_t n;
    uint64_t slot_bytes;
    uint64_t pidns;            /* rank 0's pid namespace */
    _Atomic uint32_t sleepers; /* ranks in a futex wait */
} rp_shm_hdr_t;

/* What rank 0 tells the others. */
typedef struct rp_shm_card {
    int32_t ok;
    char name[60];
} rp_shm_card_t;

static size_t rp_round_page(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

static uint64_t rp_pidns(void)
{
    struct stat st;

    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Does UCX_TLS (the same on every rank) leave shared memory out? Then the
 * user keeps ranks on the network (the inter-node emulation over
 * loopback), and so do the collectives. */
static bool rp_tls_excludes_shm(void)
{
    static const char *const shm[] = {"all", "sm", "shm", "posix", "sysv",
                                       "cma", "knem", "xpmem"};
    const char *tls = getenv("UCX_TLS");
    char buf[256], *tok, *save = NULL;

    if (tls == NULL || *tls == '\0' || tls[0] == '^' ||
        strlen(tls) >= sizeof(buf)) {
        return false;
    }
    strcpy(buf, tls);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < sizeof(shm) / sizeof(shm[0]); i++) {
            if (strcmp(tok, shm[i]) == 0) {
                return false;
            }
        }
    }
    return true;
}

static size_t rp_shm_map_bytes(int n, size_t slot)
{
    return 4096 + rp_round_page((size_t)n * sizeof(uint32_t)) +
           rp_round_page((size_t)n * RP_SHM_DEPTH * sizeof(rp__shm_line_t)) +
           (size_t)n * RP_SHM_DEPTH * RP_SHM_SMALL +
           (size_t)n * 2 * slot;
}

/* Rank 0: create, size and map the segment under a fresh name. */
static rp_status_t rp_shm_create(rp__shm_t *sh, rp_shm_card_t *card)
{
    static unsigned gen;
    int fd, err;

    snprintf(card->name, sizeof(card->name), "/ringpoint-coll.%d.%u.%llx",
             (int)getpid(), gen++, (unsigned long long)rp__comm_now_ns());
    fd = shm_open(card->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        rp_info("coll: no shared segment (shm_open %s: %s); the "
                "collectives use the transport", card->name, strerror(errno));
        return RP_ERR_NO_MEMORY;
    }
    /* Reserve the pages now: a /dev/shm short of room would otherwise
     * kill us with SIGBUS at the first touch. */
    err = posix_fallocate(fd, 0, (off_t)sh->map_bytes);
    if (err == 0) {
        sh->base = mmap(NULL, sh->map_bytes, PROT_READ | PROT_WRITE,
                        MAP_SHARED, fd, 0);
        err = sh->base == MAP_FAILED ? errno : 0;
    }
    close(fd);
    if (err != 0) {
        sh->base = NULL;
        shm_unlink(card->name);
        rp_info("coll: no shared segment (%zu bytes in /dev/shm: %s); the "
                "collectives use the transport", sh->map_bytes, strerror(err));
        return RP_ERR_NO_MEMORY;
    }
    return RP_OK;
}

/* The other ranks: map what rank 0 made and check it. */
static rp_status_t rp_shm_open(rp__shm_t *sh, const rp_shm_card_t *card)
{
    const rp_shm_hdr_t *hdr;
    int fd;

    fd = shm_open(card->name, O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        rp_info("coll: cannot open the shared segment %s: %s", card->name,
                strerror(errno));
        return RP_ERR_NO_MEMORY;
    }
    sh->base = mmap(NULL, sh->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                    fd, 0);
    close(fd);
    if (sh->base == MAP_FAILED) {
        sh->base = NULL;
        rp_info("coll: cannot map the shared segment %s: %s", card->name,
                strerror(errno));
        return RP_ERR_NO_MEMORY;
    }
    hdr = sh->base;
    if (hdr->magic != RP_SHM_MAGIC || hdr->n != (uint32_t)sh->n ||
        hdr->slot_bytes != sh->slot_bytes) {
        rp_info("coll: the shared segment %s is not this job's", card->name);
        return RP_ERR_STATE;
    }
    return RP_OK;
}

static void rp_shm_layout(rp__shm_t *sh)
{
    rp_shm_hdr_t *hdr = sh->base;
    char *p = sh->base;

    sh->sleepers = &hdr->sleepers;
    p += 4096;
    sh->pids = (uint32_t *)p;
    p += rp_round_page((size_t)sh->n * sizeof(uint32_t));
    sh->lines = (rp__shm_line_t *)p;
    p += rp_round_page((size_t)sh->n * RP_SHM_DEPTH *
                       sizeof(rp__shm_line_t));
    sh->small = p;
    p += (size_t)sh->n * RP_SHM_DEPTH * RP_SHM_SMALL;
    sh->data = p;
}

/* May this process's posts be plain stores? Only if a rank about to
 * sleep can make every running rank's last post visible (and its next
 * load of the sleepers count see the sleeper) with one system call: the
 * global expedited membarrier, which every rank must register for before
 * the first post. Not where seccomp or an old kernel refuses it. */
static bool rp_fence_register(void)
{
    const long need = MEMBARRIER_CMD_GLOBAL_EXPEDITED |
                      MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

    return cmds >= 0 && (cmds & need) == need &&
           syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
                   0, 0) == 0;
}

/* Can every rank read every peer's memory (process_vm_readv)? The same
 * answer on every rank: an allreduce over the transport. */
static rp_status_t rp_cma_setup(rp_comm_t *c, rp__shm_t *sh, bool on)
{
    int32_t ok = on;
    rp_status_t status;

    for (int q = 0; q < sh->n && ok; q++) {
        uint64_t addr;

        memcpy(&addr, rp__shm_line(sh, q, 0)->data, sizeof(addr));
        ok = q == sh->rank ||
             rp__cma_probe(sh, q, (const void *)(uintptr_t)addr);
        if (!ok) {
            rp_debug("coll: cannot read rank %d's memory (pid %u): %s", q,
                     sh->pids[q], sh->pids[q] == 0 ? "another pid namespace"
                                                   : strerror(errno));
        }
    }
    status = rp__comm_allreduce(c, &ok, &ok, 1, RP_DTYPE_INT32, RP_OP_MIN);
    sh->cma = status == RP_OK && ok;
    if (status == RP_OK && on && !ok && c->rank == 0) {
        rp_info("coll: no single-copy reads between the ranks (a ptrace "
                "restriction, or another pid namespace): collectives above "
                "RINGPOINT_COLL_SHM_MAX use the transport");
    }
    return status;
}

rp_status_t rp__shm_setup(rp_comm_t *c)
{
    const rp_bootstrap_t *bs = c->tp->bs;
    rp_shm_card_t card;
    rp__shm_t *sh;
    const bool on = c->shm_on;
    rp_status_t status, mine;
    int32_t ok;
    uint64_t addr;
    const bool cma_on = c->cma_on; /* RINGPOINT_COLL_CMA */
    /* Every rank sees the same environment and the same answer to "are
     * we all on one node", so every rank returns here alike. */
    /* A node's part of the hierarchy (c->parent) is one node's by
     * construction, and keeps the segment whatever UCX_TLS says of the
     * network between the nodes. */
    if (!on || bs->local_size != c->size ||
        (c->parent == NULL && rp_tls_excludes_shm())) {
        rp_debug("coll: no shared segment (%s)",
                 !on ? "RINGPOINT_COLL_SHM=0"
                 : bs->local_size != c->size ? "ranks on several nodes"
                                             : "UCX_TLS without shared memory");
        return RP_OK;
    }
    sh = calloc(1, sizeof(*sh));
    if (sh != NULL) {
        sh->ptrs = calloc(2 * (size_t)c->size, sizeof(*sh->ptrs));
    }
    if (sh == NULL || sh->ptrs == NULL) {
        free(sh);
        rp_error("coll: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    sh->n = c->size;
    sh->rank = c->rank;
    sh->slot_bytes = RP_SHM_SLOT_BYTES;
    sh->direct_bytes = RP_SHM_DIRECT_BYTES;
    sh->map_bytes = rp_shm_map_bytes(sh->n, sh->slot_bytes);

    memset(&card, 0, sizeof(card));
    mine = RP_OK;
    if (c->rank == 0) {
        mine = rp_shm_create(sh, &card);
        if (mine == RP_OK) {
            rp_shm_hdr_t *hdr = sh->base;

            hdr->magic = RP_SHM_MAGIC;
            hdr->n = (uint32_t)sh->n;
            hdr->slot_bytes = sh->slot_bytes;
            hdr->pidns = rp_pidns();
        }
        card.ok = mine == RP_OK;
    }
    /* Over the transport: c->shm is still NULL. */
    status = rp__comm_broadcast(c, &card, sizeof(card), 0);
    if (status != RP_OK) {
        goto err_unmap;
    }
    card.name[sizeof(card.name) - 1] = '\0';
    if (c->rank != 0) {
        mine = card.ok ? rp_shm_open(sh, &card) : RP_ERR_STATE;
    }
    if (mine == RP_OK) {
        const rp_shm_hdr_t *hdr = sh->base;

        rp_shm_layout(sh);
        /* A pid means the same process to all only in one namespace. */
        sh->pids[sh->rank] =
            hdr->pidns != 0 && hdr->pidns == rp_pidns() ? (uint32_t)getpid()
                                                        : 0;
        /* What the peers' probe of cross-memory reads looks for, and
         * where: in our first flag line, unused until the 8th step. */
        sh->probe = (uint64_t)getpid() << 32 | RP_SHM_PROBE;
        addr = (uint64_t)(uintptr_t)&sh->probe;
        memcpy(rp__shm_line(sh, sh->rank, 0)->data, &addr, sizeof(addr));
    }
    /* Everyone mapped it, or nobody uses it; and everyone can fence for
     * the others (2), or every post pays a full fence itself (1). */
    ok = mine != RP_OK ? 0 : rp_fence_register() ? 2 : 1;
    status = rp__comm_allreduce(c, &ok, &ok, 1, RP_DTYPE_INT32, RP_OP_MIN);
    sh->fenced = ok == 2;
    if (c->rank == 0 && card.ok) {
        shm_unlink(card.name); /* mapped where needed: no file left behind */
    }
    if (status != RP_OK) {
        goto err_unmap;
    }
    if (!ok) {
        if (c->rank == 0) {
            rp_info("coll: not every rank could map the shared segment; the "
                    "collectives use the transport");
        }
        rp__shm_destroy(sh);
        return RP_OK;
    }
    /* Everyone posted its probe's address before the allreduce. */
    status = rp_cma_setup(c, sh, cma_on);
    if (status != RP_OK) {
        goto err_unmap;
    }
    c->shm = sh;
    rp_debug("coll: shared segment of %zu bytes for %d ranks%s%s",
             sh->map_bytes, sh->n,
             sh->cma ? ", single-copy reads of the peers' buffers" : "",
             c->yield ? " (oversubscribed: waits yield, then sleep)" : "");
    return RP_OK;

err_unmap:
    rp__shm_destroy(sh);
    return status;
}

void rp__shm_destroy(rp__shm_t *sh)
{
    if (sh == NULL) {
        return;
    }
    if (sh->base != NULL) {
        munmap(sh->base, sh->map_bytes);
    }
    free(sh->ptrs);
    free(sh);
}
