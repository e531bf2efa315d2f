/*
 * ringpoint-ckpt: look after a checkpoint directory by hand.
 *
 *   ringpoint-ckpt ls DIR              every checkpoint and its state
 *   ringpoint-ckpt verify DIR [STEP]   full CRC check (newest complete by default)
 *   ringpoint-ckpt show DIR STEP       the manifest, readable
 *   ringpoint-ckpt prune DIR --keep N  retention, as the runtime applies it
 *   ringpoint-ckpt bench --dir DIR --size BYTES   (under srun / mpirun)
 *
 * Everything is judged by content (manifest, shard headers, CRCs), exactly
 * as a restarting job judges it, so what this tool calls complete is what
 * a job would resume from. Exit status: 0 good, 1 a checkpoint is bad or
 * missing, 2 usage or I/O errors.
 */
#include "config.h"

#include "ckpt/catalog.h"
#include "ckpt/layout.h"
#include "ckpt/manifest.h"
#include "util/parse.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ringpoint-ckpt COMMAND DIR [ARGS]\n"
            "\n"
            "  ls DIR [--full]       list checkpoints: step, time, size, world size, state\n"
            "                        (--full also checks every chunk's CRC32C)\n"
            "  verify DIR [STEP]     verify every byte of STEP (default: the newest\n"
            "                        complete one); exit 1 naming the bad file and chunk\n"
            "  show DIR STEP         print the manifest of STEP in readable form\n"
            "  prune DIR --keep N    keep the newest N complete checkpoints (never fewer\n"
            "                        than 1) and remove older and broken ones\n"
            "  bench --dir DIR --size BYTES[K|M|G] [--iters N]\n"
            "                        under srun/mpirun: write and restore that much state,\n"
            "                        sync and async, beside raw O_DIRECT; print a table\n");
}

static void format_time(uint64_t ns, char *buf, size_t len)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;

    if (ns == 0 || localtime_r(&t, &tm) == NULL ||
        strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0) {
        snprintf(buf, len, "-");
    }
}

static void format_bytes(uint64_t n, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    unsigned u = 0;

    while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
}

static int parse_step(const char *text, uint64_t *step)
{
    char err[128];

    if (rp__parse_uint(text, 0, UINT64_MAX, step, err, sizeof(err)) != RP_OK) {
        fprintf(stderr, "ringpoint-ckpt: STEP: %s\n", err);
        return -1;
    }
    return 0;
}

static int scan(const char *dir, bool full, rp__ckpt_catalog_t *cat)
{
    rp_status_t status = rp__ckpt_catalog_scan(dir, full, cat);

    if (status == RP_ERR_NOT_FOUND) {
        fprintf(stderr, "ringpoint-ckpt: %s: no such directory\n", dir);
        return 2;
    }
    if (status != RP_OK) {
        fprintf(stderr, "ringpoint-ckpt: %s: %s\n", dir,
                rp_status_string(status));
        return 2;
    }
    return 0;
}

static int cmd_ls(const char *dir, bool full)
{
    rp__ckpt_catalog_t cat;
    char when[32], size[32];
    size_t i;
    int rc = scan(dir, full, &cat);

    if (rc != 0) {
        return rc;
    }
    if (cat.count == 0) {
        printf("no checkpoints in %s\n", dir);
    } else {
        printf("%12s  %-19s  %10s  %5s  %-10s  %s\n", "step", "time", "size",
               "ranks", "state", "");
    }
    for (i = 0; i < cat.count; i++) {
        const rp__ckpt_entry_t *e = &cat.entries[i];

        format_time(e->created_ns, when, sizeof(when));
        format_bytes(e->total_bytes, size, sizeof(size));
        printf("%12" PRIu64 "  %-19s  %10s  %5" PRIu32 "  %-10s  %s\n", e->step,
               when, size, e->world_size, rp__ckpt_state_name(e->state),
               e->state == RP_CKPT_COMPLETE ? "" : e->reason);
    }
    rp__ckpt_catalog_free(&cat);
    return 0;
}

/* The directory of STEP, whatever state it is in. */
static char *step_path(const char *dir, uint64_t step)
{
    char name[RP_CKPT_NAME_MAX];
    size_t len;
    char *path;

    rp__ckpt_name_committed(step, name, sizeof(name));
    len = strlen(dir) + 1 + strlen(name) + 1;
    path = malloc(len);
    if (path != NULL) {
        snprintf(path, len, "%s/%s", dir, name);
    }
    return path;
}

static int cmd_verify(const char *dir, const char *step_text)
{
    rp__ckpt_state_t state;
    char msg[512] = "";
    uint64_t step;
    char *path = NULL;
    rp_status_t status;
    int rc;

    if (step_text == NULL) {
        status = rp__ckpt_newest_complete(dir, true, &step, &path);
        if (status == RP_ERR_NOT_FOUND) {
            fprintf(stderr, "ringpoint-ckpt: no complete checkpoint in %s\n",
                    dir);
            return 1;
        }
        if (status != RP_OK) {
            fprintf(stderr, "ringpoint-ckpt: %s: %s\n", dir,
                    rp_status_string(status));
            return 2;
        }
        printf("step %" PRIu64 ": complete, every chunk verified (%s)\n", step,
               path);
        free(path);
        return 0;
    }
    if (parse_step(step_text, &step) != 0) {
        return 2;
    }
    path = step_path(dir, step);
    if (path == NULL) {
        fprintf(stderr, "ringpoint-ckpt: out of memory\n");
        return 2;
    }
    status = rp__ckpt_verify(path, true, &state, NULL, msg, sizeof(msg));
    if (status == RP_OK) {
        printf("step %" PRIu64 ": complete, every chunk verified (%s)\n", step,
               path);
        rc = 0;
    } else if (status == RP_ERR_NOT_FOUND) {
        fprintf(stderr, "ringpoint-ckpt: step %" PRIu64 ": no checkpoint at %s\n",
                step, path);
        rc = 1;
    } else {
        fprintf(stderr, "ringpoint-ckpt: step %" PRIu64 ": %s: %s\n", step,
                rp__ckpt_state_name(state), msg[0] ? msg : rp_status_string(status));
        rc = status == RP_ERR_CORRUPT ? 1 : 2;
    }
    free(path);
    return rc;
}

static int cmd_show(const char *dir, const char *step_text)
{
    rp__ckpt_manifest_t m;
    rp__ckpt_state_t state;
    char msg[512] = "", id[2 * RP_CKPT_ID_SIZE + 1], when[32], size[32];
    uint64_t step;
    char *path;
    rp_status_t status;
    uint32_t i;

    if (parse_step(step_text, &step) != 0) {
        return 2;
    }
    path = step_path(dir, step);
    if (path == NULL) {
        fprintf(stderr, "ringpoint-ckpt: out of memory\n");
        return 2;
    }
    status = rp__ckpt_verify(path, false, &state, &m, msg, sizeof(msg));
    if (status == RP_ERR_NOT_FOUND) {
        fprintf(stderr, "ringpoint-ckpt: step %" PRIu64 ": no checkpoint at %s\n",
                step, path);
        free(path);
        return 1;
    }
    if (m.world_size == 0) { /* the manifest itself did not verify */
        fprintf(stderr, "ringpoint-ckpt: step %" PRIu64 ": %s: %s\n", step,
                rp__ckpt_state_name(state), msg);
        rp__ckpt_manifest_free(&m);
        free(path);
        return 1;
    }
    rp__ckpt_id_format(m.ckpt_id, id, sizeof(id));
    format_time(m.created_ns, when, sizeof(when));
    format_bytes(rp__ckpt_manifest_payload_bytes(&m), size, sizeof(size));
    printf("checkpoint     %s\n", path);
    printf("state          %s%s%s\n", rp__ckpt_state_name(state),
           msg[0] ? ": " : "", msg);
    printf("format         %" PRIu32 "\n", m.version);
    printf("step           %" PRIu64 "\n", m.step);
    printf("created        %s\n", when);
    printf("id             %s\n", id);
    printf("world size     %" PRIu32 "\n", m.world_size);
    printf("slurm job      %" PRIu32 " (restart %" PRIu32 ")\n", m.job_id,
           m.restart_count);
    printf("payload        %s (replicated stream %" PRIu64 " B, per rank %"
           PRIu64 " B)\n", size, m.stream_length, m.per_rank_length);
    printf("chunk size     %" PRIu64 " B\n", m.chunk_size);
    printf("\nregions (%" PRIu32 "):\n", m.nregions);
    for (i = 0; i < m.nregions; i++) {
        printf("  %-24s %-10s offset %-12" PRIu64 " size %" PRIu64 "\n",
               m.regions[i].name,
               m.regions[i].kind == RP_CKPT_REGION_REPLICATED ? "replicated"
                                                              : "per-rank",
               m.regions[i].offset, m.regions[i].size);
    }
    printf("\nshards:\n");
    for (i = 0; i < m.world_size; i++) {
        const rp__ckpt_shard_info_t *s = &m.shards[i];

        printf("  rank %-6" PRIu32 " stripe [%" PRIu64 ", +%" PRIu64 ")  %"
               PRIu64 " B in %" PRIu32 " chunk%s\n", i, s->stripe_offset,
               s->stripe_length, s->length, s->nchunks,
               s->nchunks == 1 ? "" : "s");
    }
    rp__ckpt_manifest_free(&m);
    free(path);
    return 0;
}

static int cmd_prune(const char *dir, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"keep", required_argument, NULL, 'k'}, {NULL, 0, NULL, 0}
    };
    uint64_t keep = 0;
    bool have_keep = false;
    unsigned removed = 0;
    char err[128];
    rp_status_t status;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "k:", longopts, NULL)) != -1) {
        if (c != 'k') {
            usage(stderr);
            return 2;
        }
        if (rp__parse_uint(optarg, 1, UINT32_MAX, &keep, err, sizeof(err)) !=
            RP_OK) {
            fprintf(stderr, "ringpoint-ckpt: --keep: %s\n", err);
            return 2;
        }
        have_keep = true;
    }
    if (!have_keep || optind != argc) {
        fprintf(stderr, "ringpoint-ckpt: prune needs --keep N and nothing else\n");
        return 2;
    }
    /* By hand, nothing vouches for the newest checkpoint: judge every
     * candidate by its CRCs before deciding what is safe to delete. */
    status = rp__ckpt_prune(dir, (unsigned)keep, true, &removed);
    printf("removed %u checkpoint%s from %s\n", removed, removed == 1 ? "" : "s",
           dir);
    if (status != RP_OK) {
        fprintf(stderr, "ringpoint-ckpt: prune %s: %s\n", dir,
                rp_status_string(status));
        return 2;
    }
    return 0;
}

/* ckpt_bench.c */
int rp__ckpt_bench_main(int argc, char **argv);

int main(int argc, char **argv)
{
    const char *cmd, *dir;

    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "bench") == 0) {
        return rp__ckpt_bench_main(argc - 1, argv + 1);
    }
    if (argc < 3) {
        usage(stderr);
        return 2;
    }
    cmd = argv[1];
    dir = argv[2];
    if (strcmp(cmd, "ls") == 0 && argc <= 4) {
        if (argc == 4 && strcmp(argv[3], "--full") != 0) {
            usage(stderr);
            return 2;
        }
        return cmd_ls(dir, argc == 4);
    }
    if (strcmp(cmd, "verify") == 0 && argc <= 4) {
        return cmd_verify(dir, argc == 4 ? argv[3] : NULL);
    }
    if (strcmp(cmd, "show") == 0 && argc == 4) {
        return cmd_show(dir, argv[3]);
    }
    if (strcmp(cmd, "prune") == 0) {
        return cmd_prune(dir, argc - 2, argv + 2);
    }
    fprintf(stderr, "ringpoint-ckpt: unknown command or wrong arguments: %s\n",
            cmd);
    usage(stderr);
    return 2;
}
