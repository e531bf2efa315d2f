/*
 * ringpoint-ckpt ls, verify, show and prune (ckpt_tool.h).
 *
 * Every command judges a checkpoint with the one validator of
 * runtime/ckpt/catalog/validate.h and prints its verdict in the one wording,
 * "step N: STATE: ckpt/file[ part]: detail", so ls, ls --full, verify,
 * show and prune, and a restoring job's log, give the same answer about
 * the same bytes. ls alone uses the quick check (manifest, shard lengths
 * and headers; a flipped payload byte needs --full) and says so.
 */
#include "config.h"

#include "ckpt_tool.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog/catalog.h"
#include "ckpt/catalog/prune.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"
#include "ckpt/catalog/validate.h"
#include "util/parse.h"

/* One command's arguments, checked against what it takes. */
typedef struct rp_cargs {
    const char *dir;
    const char *step;   /* verify, show */
    bool full;          /* ls --full */
    bool have_keep;     /* prune --keep N */
    uint64_t keep;
} rp_cargs_t;

typedef struct rp_cmd {
    const char *name;
    const char *synopsis; /* after "ringpoint-ckpt " */
    const char *text;     /* the usage's description lines */
    unsigned min_pos, max_pos;
    int (*run)(const rp_cargs_t *a, FILE *out, FILE *err);
} rp_cmd_t;

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

/* "step N: STATE: verdict" (or "step N: complete, every chunk verified
 * (DIR/NAME)"): the one line every command prints about a checkpoint. */
static void print_verdict(FILE *out, const char *dir, uint64_t step,
                          const rp__ckpt_verdict_t *v)
{
    char why[640];

    if (v->state == RP_CKPT_COMPLETE) {
        fprintf(out, "step %" PRIu64 ": complete, every chunk verified "
                "(%s/%s)\n", step, dir, v->ckpt);
    } else {
        fprintf(out, "step %" PRIu64 ": %s: %s\n", step,
                rp__ckpt_state_name(v->state),
                rp__ckpt_verdict_format(v, why, sizeof(why)));
    }
}

static int scan(const char *dir, bool full, rp__ckpt_catalog_t *cat,
                FILE *err)
{
    rp_status_t status = rp__ckpt_catalog_scan(dir, full, cat);

    if (status == RP_ERR_NOT_FOUND) {
        fprintf(err, "ringpoint-ckpt: %s: no such directory\n", dir);
        return 2;
    }
    if (status != RP_OK) {
        fprintf(err, "ringpoint-ckpt: %s: %s\n", dir,
                rp_status_string(status));
        return 2;
    }
    return 0;
}

static int cmd_ls(const rp_cargs_t *a, FILE *out, FILE *err)
{
    rp__ckpt_catalog_t cat;
    char when[32], size[32];
    size_t i;
    int rc = scan(a->dir, a->full, &cat, err);

    if (rc != 0) {
        return rc;
    }
    if (cat.count == 0) {
        fprintf(out, "no checkpoints in %s\n", a->dir);
        rp__ckpt_catalog_free(&cat);
        return 0;
    }
    fprintf(out, "%12s  %-19s  %10s  %5s  %-10s  %s\n", "step", "time",
            "size", "ranks", "state", "");
    for (i = 0; i < cat.count; i++) {
        const rp__ckpt_entry_t *e = &cat.entries[i];

        format_time(e->created_ns, when, sizeof(when));
        format_bytes(e->total_bytes, size, sizeof(size));
        fprintf(out, "%12" PRIu64 "  %-19s  %10s  %5" PRIu32 "  %-10s  %s\n",
                e->step, when, size, e->world_size,
                rp__ckpt_state_name(e->state), e->reason);
    }
    if (!a->full) {
        fprintf(out, "(quick check: manifests, shard lengths and headers; "
                "ls --full or verify also reads every chunk)\n");
    }
    rp__ckpt_catalog_free(&cat);
    return 0;
}

/* Judge checkpoint @name of @dir in full. 0, 1 (bad or missing) or 2. */
static int judge(const char *dir, const char *name, uint64_t step,
                 rp__ckpt_manifest_t *m_out, FILE *out, FILE *err)
{
    rp__ckpt_verdict_t v;
    rp_status_t status;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (m_out != NULL) {
        memset(m_out, 0, sizeof(*m_out));
    }
    if (dfd < 0) {
        fprintf(err, "ringpoint-ckpt: %s: no such directory\n", dir);
        return 2;
    }
    status = rp__ckpt_validate_at(dfd, name, true, &v, m_out);
    (void)close(dfd);
    if (status == RP_ERR_NOT_FOUND) {
        fprintf(out, "step %" PRIu64 ": no checkpoint at %s/%s\n", step, dir,
                name);
        return 1;
    }
    print_verdict(out, dir, step, &v);
    if (status == RP_OK || status == RP_ERR_CORRUPT) {
        return status == RP_OK ? 0 : 1;
    }
    return 2; /* could not read: logged */
}

static int parse_step(const char *text, uint64_t *step, char *name,
                      FILE *err)
{
    char why[128];

    if (rp__parse_uint(text, 0, UINT64_MAX, step, why, sizeof(why)) !=
        RP_OK) {
        fprintf(err, "ringpoint-ckpt: STEP: %s\n", why);
        return -1;
    }
    rp__ckpt_name_committed(*step, name, RP_CKPT_NAME_MAX);
    return 0;
}

/* verify DIR: the checkpoints newest first, in full, down to the first
 * complete one (what a restart would resume from). 0 only when the newest
 * is complete. */
static int verify_newest(const char *dir, FILE *out, FILE *err)
{
    rp__ckpt_catalog_t cat;
    size_t i;
    int rc = scan(dir, false, &cat, err), first = -1;

    if (rc != 0) {
        return rc;
    }
    for (i = cat.count; i > 0; i--) {
        const rp__ckpt_entry_t *e = &cat.entries[i - 1];

        if (e->state == RP_CKPT_INFLIGHT) {
            continue;
        }
        rc = judge(dir, e->name, e->step, NULL, out, err);
        first = first < 0 ? rc : first;
        if (rc == 0) {
            break;
        }
    }
    rp__ckpt_catalog_free(&cat);
    if (first < 0) {
        fprintf(out, "no checkpoints in %s\n", dir);
        return 1;
    }
    if (rc != 0) {
        fprintf(out, "no complete checkpoint in %s\n", dir);
    }
    return first;
}

static int cmd_verify(const rp_cargs_t *a, FILE *out, FILE *err)
{
    char name[RP_CKPT_NAME_MAX];
    uint64_t step;

    if (a->step == NULL) {
        return verify_newest(a->dir, out, err);
    }
    if (parse_step(a->step, &step, name, err) != 0) {
        return 2;
    }
    return judge(a->dir, name, step, NULL, out, err);
}

static void show_manifest(const rp__ckpt_manifest_t *m, FILE *out)
{
    char id[2 * RP_CKPT_ID_SIZE + 1], when[32], size[32];
    uint32_t i;

    rp__ckpt_id_format(m->ckpt_id, id, sizeof(id));
    format_time(m->created_ns, when, sizeof(when));
    format_bytes(rp__ckpt_manifest_payload_bytes(m), size, sizeof(size));
    fprintf(out, "format         %" PRIu32 "\n", m->version);
    fprintf(out, "step           %" PRIu64 "\n", m->step);
    fprintf(out, "created        %s\n", when);
    fprintf(out, "id             %s\n", id);
    fprintf(out, "world size     %" PRIu32 "\n", m->world_size);
    fprintf(out, "slurm job      %" PRIu32 " (restart %" PRIu32 ")\n",
            m->job_id, m->restart_count);
    fprintf(out, "payload        %s (replicated stream %" PRIu64 " B, per "
            "rank %" PRIu64 " B)\n", size, m->stream_length,
            m->per_rank_length);
    fprintf(out, "chunk size     %" PRIu64 " B\n", m->chunk_size);
    fprintf(out, "\nregions (%" PRIu32 "):\n", m->nregions);
    for (i = 0; i < m->nregions; i++) {
        fprintf(out, "  %-24s %-10s offset %-12" PRIu64 " size %" PRIu64 "\n",
                m->regions[i].name,
                m->regions[i].kind == RP_CKPT_REGION_REPLICATED
                    ? "replicated" : "per-rank",
                m->regions[i].offset, m->regions[i].size);
    }
    fprintf(out, "\nshards:\n");
    for (i = 0; i < m->world_size; i++) {
        const rp__ckpt_shard_info_t *s = &m->shards[i];

        fprintf(out, "  rank %-6" PRIu32 " stripe [%" PRIu64 ", +%" PRIu64
                ")  %" PRIu64 " B in %" PRIu32 " chunk%s\n", i,
                s->stripe_offset, s->stripe_length, s->length, s->nchunks,
                s->nchunks == 1 ? "" : "s");
    }
}

/* show DIR STEP: the verdict first (in full), then the manifest if it
 * could be read. */
static int cmd_show(const rp_cargs_t *a, FILE *out, FILE *err)
{
    rp__ckpt_manifest_t m;
    char name[RP_CKPT_NAME_MAX];
    uint64_t step;
    int rc;

    if (parse_step(a->step, &step, name, err) != 0) {
        return 2;
    }
    rc = judge(a->dir, name, step, &m, out, err);
    if (m.shards != NULL) {
        fprintf(out, "checkpoint     %s/%s\n", a->dir, name);
        show_manifest(&m, out);
    }
    rp__ckpt_manifest_free(&m);
    return rc;
}

/* prune's report: every checkpoint that is not complete, or is removed. */
static void prune_line(const rp__ckpt_entry_t *e, rp__ckpt_prune_action_t act,
                       void *arg)
{
    static const char *const what[] = {
        [RP_CKPT_KEPT] = "kept",
        [RP_CKPT_KEPT_NEWER] = "kept: at or above the newest complete step",
        [RP_CKPT_KEPT_NO_COMPLETE] = "kept: no complete checkpoint, nothing "
                                     "is removed",
        [RP_CKPT_REMOVED] = "removed",
        [RP_CKPT_REMOVE_FAILED] = "removal failed",
    };
    FILE *out = arg;
    char why[640];

    if (e->state == RP_CKPT_COMPLETE && act == RP_CKPT_KEPT) {
        return;
    }
    fprintf(out, "step %" PRIu64 ": %s%s%s (%s)\n", e->step,
            rp__ckpt_state_name(e->state), e->reason[0] != '\0' ? ": " : "",
            rp__ckpt_verdict_format(&e->verdict, why, sizeof(why)),
            what[act]);
}

static int cmd_prune(const rp_cargs_t *a, FILE *out, FILE *err)
{
    unsigned removed = 0;
    rp_status_t status;

    if (!a->have_keep) {
        fprintf(err, "ringpoint-ckpt: prune needs --keep N\n");
        return 2;
    }
    /* By hand, nothing vouches for the newest checkpoint: judge every
     * candidate by its CRCs before deciding what is safe to delete. */
    status = rp__ckpt_prune_report(a->dir, (unsigned)a->keep, true, &removed,
                                   prune_line, out);
    fprintf(out, "removed %u checkpoint%s from %s\n", removed,
            removed == 1 ? "" : "s", a->dir);
    if (status != RP_OK) {
        fprintf(err, "ringpoint-ckpt: prune %s: %s\n", a->dir,
                rp_status_string(status));
        return 2;
    }
    return 0;
}

static const rp_cmd_t rp_cmds[] = {
    {"ls", "ls DIR [--full]",
     "list checkpoints: step, time, size, world size, state\n"
     "(a quick check; --full also checks every chunk's CRC32C)\n",
     1, 1, cmd_ls},
    {"verify", "verify DIR [STEP]",
     "verify every byte of STEP, or of the newest checkpoints\n"
     "down to the first complete one; exit 1 naming the bad\n"
     "file and its chunk or header\n",
     1, 2, cmd_verify},
    {"show", "show DIR STEP",
     "verify STEP, then print its manifest in readable form\n", 2, 2,
     cmd_show},
    {"prune", "prune DIR --keep N",
     "keep the newest N complete checkpoints (never fewer\n"
     "than 1) and remove older and broken ones\n", 1, 1, cmd_prune},
};
#define RP_NCMDS (sizeof(rp_cmds) / sizeof(rp_cmds[0]))

/* "  SYNOPSIS   text" with the text's lines aligned at column 24. */
static void usage_item(FILE *out, const char *synopsis, const char *text)
{
    const char *p = text;
    int first = 1;

    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        int n = nl != NULL ? (int)(nl - p) : (int)strlen(p);

        fprintf(out, "  %-20s  %.*s\n", first ? synopsis : "", n, p);
        first = 0;
        p += n + (nl != NULL);
    }
}

void rp__ckpt_tool_usage(FILE *out)
{
    size_t i;

    fprintf(out, "Usage: ringpoint-ckpt COMMAND DIR [ARGS]\n"
                 "       ringpoint-ckpt COMMAND --help\n\n");
    for (i = 0; i < RP_NCMDS; i++) {
        usage_item(out, rp_cmds[i].synopsis, rp_cmds[i].text);
    }
    fprintf(out, "  bench --dir DIR --size BYTES[K|M|G] [--iters N]\n"
                 "                        under srun/mpirun: write and "
                 "restore that much state,\n"
                 "                        sync and async, beside raw "
                 "O_DIRECT; print a table\n");
}

static void cmd_usage(const rp_cmd_t *c, FILE *out)
{
    fprintf(out, "Usage: ringpoint-ckpt %s\n\n", c->synopsis);
    usage_item(out, c->synopsis, c->text);
    fprintf(out, "\nExit status: 0 good, 1 a checkpoint is bad or missing, "
                 "2 usage or I/O error.\n");
}

/* Sort @argv[1..] into @a: 0, 1 (--help: done) or 2 (usage error). */
static int parse_args(const rp_cmd_t *c, int argc, char **argv,
                      rp_cargs_t *a, FILE *out, FILE *err)
{
    const char *pos[3] = {NULL, NULL, NULL};
    unsigned npos = 0;
    bool dashdash = false;
    char why[128];
    int i;

    memset(a, 0, sizeof(*a));
    /* --help anywhere wins: "verify --help" is never a directory. */
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cmd_usage(c, out);
            return 1;
        }
    }
    for (i = 1; i < argc; i++) {
        const char *s = argv[i], *val = NULL;
        bool prune = strcmp(c->name, "prune") == 0;

        if (dashdash || s[0] != '-' || s[1] == '\0') {
            if (npos < sizeof(pos) / sizeof(pos[0])) {
                pos[npos] = s;
            }
            npos++;
            continue;
        }
        if (strcmp(s, "--") == 0) {
            dashdash = true;
            continue;
        }
        if (strcmp(c->name, "ls") == 0 && strcmp(s, "--full") == 0) {
            a->full = true;
            continue;
        }
        if (prune && strncmp(s, "--keep=", 7) == 0) {
            val = s + 7;
        } else if (prune && (strcmp(s, "--keep") == 0 ||
                             strcmp(s, "-k") == 0)) {
            val = i + 1 < argc ? argv[++i] : "";
        } else {
            fprintf(err, "ringpoint-ckpt %s: unknown option '%s'\n", c->name,
                    s);
            cmd_usage(c, err);
            return 2;
        }
        if (rp__parse_uint(val, 1, UINT32_MAX, &a->keep, why, sizeof(why)) !=
            RP_OK) {
            fprintf(err, "ringpoint-ckpt prune: --keep: %s\n", why);
            return 2;
        }
        a->have_keep = true;
    }
    if (npos < c->min_pos || npos > c->max_pos) {
        fprintf(err, "ringpoint-ckpt %s: wrong number of arguments\n",
                c->name);
        cmd_usage(c, err);
        return 2;
    }
    a->dir = pos[0];
    a->step = npos > 1 ? pos[1] : NULL;
    return 0;
}

int rp__ckpt_tool(int argc, char **argv, FILE *out, FILE *err)
{
    rp_cargs_t a;
    size_t i;
    int rc;

    if (argc < 1) {
        rp__ckpt_tool_usage(err);
        return 2;
    }
    for (i = 0; i < RP_NCMDS; i++) {
        if (strcmp(argv[0], rp_cmds[i].name) == 0) {
            rc = parse_args(&rp_cmds[i], argc, argv, &a, out, err);
            if (rc != 0) {
                return rc == 1 ? 0 : 2;
            }
            return rp_cmds[i].run(&a, out, err);
        }
    }
    fprintf(err, "ringpoint-ckpt: unknown command '%s'\n", argv[0]);
    rp__ckpt_tool_usage(err);
    return 2;
}
