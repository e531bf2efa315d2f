/*
 * ringpoint-info: what was built, and what a task sees.
 *
 * Started by a PMIx launcher (srun --mpi=pmix, mpirun) it joins the job
 * like an application would and prints one key=value line per rank: the
 * identity from the bootstrap, the settings the SPANK plugin handed down,
 * and the ring neighbours learnt through the address exchange. Started
 * alone it describes the build, like ucx_info -v or ompi_info.
 */
#include "config.h"

#include <ringpoint.h>

#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/settings.h"
#include "gpu/gpu.h"
#include "transport/module.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ringpoint-info [-b|--build] [-r|--rank] [-s|--single] [-S|--settings]\n"
            "                      [-V|--version]\n"
            "\n"
            "Without options: under a PMIx launcher (srun --mpi=pmix, mpirun)\n"
            "print one line per rank, otherwise describe the build.\n"
            "  -b, --build     describe the build and exit\n"
            "  -r, --rank      initialise and print this rank's line\n"
            "  -s, --single    like --rank, but ignore any PMIx server\n"
            "  -S, --settings  print every RINGPOINT_* setting: its effective\n"
            "                  value and where it came from (default, the\n"
            "                  environment, the plugin); exit 1 if one is\n"
            "                  malformed\n"
            "  -V, --version   print the version and exit\n"
            "  -h, --help      this text\n");
}

static void print_component(const char *name, const char *detail)
{
    printf("  %-14s %s\n", name, detail);
}

/* The GPU module and what it sees: loading it is what a task does at its
 * first device buffer, so this shows whether that would work here. */
static void print_gpus(void)
{
    char why[512] = "", line[512];
    const rp__gpu_ops_t *ops = rp__gpu_module(why, sizeof(why));
    rp__gpu_info_t info;
    int ndev = 0;

    if (ops == NULL) {
        print_component("gpu", why);
        return;
    }
    if (ops->probe(&ndev, why, sizeof(why)) != RP_OK) {
        snprintf(line, sizeof(line), "module %s loads; %s",
                 rp__gpu_module_path(), why);
        print_component("gpu", line);
        return;
    }
    ops->info(&info);
    snprintf(line, sizeof(line), "NCCL %d.%d.%d, CUDA driver %d.%d, runtime "
             "%d.%d, %d device%s (module %s)", info.nccl_version / 10000,
             info.nccl_version / 100 % 100, info.nccl_version % 100,
             info.driver_version / 1000, info.driver_version % 1000 / 10,
             info.runtime_version / 1000, info.runtime_version % 1000 / 10,
             info.ndev, info.ndev == 1 ? "" : "s", rp__gpu_module_path());
    print_component("gpu", line);
    for (int i = 0; i < info.ndev && i < RP_GPU_INFO_MAX; i++) {
        const rp__gpu_devinfo_t *d = &info.dev[i];

        printf("  gpu %d:%*s%s, %.1f GiB, compute %d.%d, PCI %s\n", i,
               i < 10 ? 8 : 7, "", d->name,
               (double)d->mem_bytes / (1u << 30), d->cc_major, d->cc_minor,
               d->pci_bus_id);
    }
}

#ifdef HAVE_UCX
/* The transport module: where it is looked for, and whether it loads
 * (which runs UCX's start-up, as a job's first transport would). */
static void print_ucx(const rp_settings_t *cfg)
{
    rp__transport_settings_t set = {.ucx_module = cfg->ucx_module,
                                    .ucx_config_cwd = cfg->ucx_config_cwd};
    char path[4096], why[5120], line[8192];
    const rp__transport_module_t *mod;

    rp__transport_module_path(set.ucx_module, path, sizeof(path));
    mod = rp__transport_module(&set, why, sizeof(why));
    if (mod != NULL) {
        snprintf(line, sizeof(line), "UCX %s transport (host-memory "
                 "collectives; module %s)", mod->version, path);
    } else {
        snprintf(line, sizeof(line), "UCX " RP_UCX_VERSION " transport, "
                 "not loadable: %s", why);
    }
    print_component("ucx", line);
}
#endif

static int print_build(void)
{
    rp_settings_t *cfg = calloc(1, sizeof(*cfg));

    if (cfg == NULL) {
        fprintf(stderr, "ringpoint-info: out of memory\n");
        return 1;
    }
    /* The modules rp_init would open (RINGPOINT_GPU_MODULE,
     * RINGPOINT_UCX_MODULE). A malformed setting is reported by the load
     * and left empty: the installed module is shown then. */
    (void)rp__settings_load(cfg);
    rp__gpu_module_set_path(cfg->gpu_module);
    printf("ringpoint %s (library %s)\n", PACKAGE_VERSION, rp_version());
#ifdef RP_SLURM_VERSION
    print_component("slurm", "SPANK plugin built against Slurm " RP_SLURM_VERSION);
#else
    print_component("slurm", "no (SPANK plugin not built)");
#endif
#ifdef HAVE_PMIX
    print_component("pmix", "PMIx " RP_PMIX_VERSION " bootstrap");
#else
    print_component("pmix", "no (single-process bootstrap only)");
#endif
#ifdef HAVE_UCX
    print_ucx(cfg);
#else
    print_component("ucx", "no");
#endif
#ifdef HAVE_CUDA
    print_component("cuda", "CUDA " RP_CUDA_VERSION " found");
#else
    print_component("cuda", "no");
#endif
#ifdef HAVE_NCCL
    print_component("nccl", "NCCL " RP_NCCL_VERSION " found");
#else
    print_component("nccl", "no");
#endif
    print_gpus();
    free(cfg);
    return 0;
}

/* Every entry of the settings table, as rp_init would read it here. */
static int print_settings(void)
{
    rp_settings_t *cfg = malloc(sizeof(*cfg));
    rp_status_t status;
    size_t i, n = rp__settings_count();
    int width = 0;

    if (cfg == NULL) {
        fprintf(stderr, "ringpoint-info: out of memory\n");
        return 1;
    }
    status = rp__settings_load(cfg); /* a malformed value is logged */
    for (i = 0; i < n; i++) {
        rp_setting_info_t info;
        int len;

        rp__settings_info(i, &info);
        len = (int)strlen(info.name);
        width = len > width ? len : width;
    }
    for (i = 0; i < n; i++) {
        rp_setting_info_t info;
        char value[RP_SETTING_PATH_LEN];

        rp__settings_info(i, &info);
        rp__settings_value(cfg, i, value, sizeof(value));
        printf("%-*s  %-11s  %s\n", width, info.name,
               rp__settings_source_name(cfg->source[i]), value);
    }
    free(cfg);
    return status == RP_OK ? 0 : 1;
}

/* The table for the manual (libringpoint(3), ENVIRONMENT): one line per
 * setting, NAME, meaning, forms and default parted by tabs, that
 * doc/man/mkman.sh turns into roff. So the page is the table's own. */
static int print_settings_table(void)
{
    size_t i, n = rp__settings_count();

    for (i = 0; i < n; i++) {
        rp_setting_info_t info;

        rp__settings_info(i, &info);
        if (!info.hidden) {
            printf("%s\t%s\t%s\t%s\n", info.name, info.meaning, info.forms,
                   info.def);
        }
    }
    return 0;
}

static int print_rank(bool single)
{
    rp_init_params_t params = {
        .field_mask = RP_INIT_FIELD_FLAGS,
        .flags = single ? RP_INIT_FLAG_SINGLE : 0,
    };
    rp_context_attr_t attr;
    rp_context_h ctx;
    rp_status_t status;
    char line[1024];
    int n;

    status = rp_init(&params, &ctx);
    if (status != RP_OK) {
        fprintf(stderr, "ringpoint-info: rp_init failed: %s\n",
                rp_status_string(status));
        return 1;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE |
                      RP_CONTEXT_ATTR_FIELD_LOCAL_RANK |
                      RP_CONTEXT_ATTR_FIELD_LOCAL_SIZE |
                      RP_CONTEXT_ATTR_FIELD_NODE_ID |
                      RP_CONTEXT_ATTR_FIELD_NODE_COUNT |
                      RP_CONTEXT_ATTR_FIELD_NODE_NAME |
                      RP_CONTEXT_ATTR_FIELD_BOOTSTRAP |
                      RP_CONTEXT_ATTR_FIELD_JOB_ID |
                      RP_CONTEXT_ATTR_FIELD_CKPT_INTERVAL |
                      RP_CONTEXT_ATTR_FIELD_RING;
    status = rp_context_query(ctx, &attr);
    if (status != RP_OK) {
        fprintf(stderr, "ringpoint-info: rp_context_query failed: %s\n",
                rp_status_string(status));
        rp_finalize(ctx);
        return 1;
    }
    /* One write per line: srun merges the ranks' output line by line. */
    n = snprintf(line, sizeof(line),
                 "rank=%d size=%d local_rank=%d local_size=%d node=%s "
                 "node_id=%d nodes=%d bootstrap=%s job=%s ckpt_interval=%" PRIu64
                 " left=%d@%s right=%d@%s pid=%ld\n",
                 attr.rank, attr.size, attr.local_rank, attr.local_size,
                 attr.node_name, attr.node_id, attr.node_count, attr.bootstrap,
                 attr.job_id, attr.ckpt_interval_s, attr.left_rank,
                 attr.left_node, attr.right_rank, attr.right_node,
                 (long)getpid());
    if (n > 0) {
        fputs(line, stdout);
        fflush(stdout);
    }
    rp_finalize(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"build",   no_argument, NULL, 'b'},
        {"rank",    no_argument, NULL, 'r'},
        {"single",  no_argument, NULL, 's'},
        {"settings", no_argument, NULL, 'S'},
        /* For the build (doc/man/local.mk): not in --help. */
        {"settings-table", no_argument, NULL, 'R'},
        {"version", no_argument, NULL, 'V'},
        {"help",    no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    enum {
        MODE_AUTO, MODE_BUILD, MODE_RANK, MODE_SINGLE, MODE_SETTINGS,
        MODE_TABLE
    } mode = MODE_AUTO;
    int c;

    while ((c = getopt_long(argc, argv, "brsSVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': mode = MODE_BUILD; break;
        case 'r': mode = MODE_RANK; break;
        case 's': mode = MODE_SINGLE; break;
        case 'S': mode = MODE_SETTINGS; break;
        case 'R': mode = MODE_TABLE; break;
        case 'V': printf("ringpoint %s\n", PACKAGE_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "ringpoint-info: unexpected argument '%s'\n",
                argv[optind]);
        usage(stderr);
        return 2;
    }
    if (mode == MODE_AUTO) {
        mode = getenv("PMIX_NAMESPACE") != NULL ? MODE_RANK : MODE_BUILD;
    }
    switch (mode) {
    case MODE_BUILD:  return print_build();
    case MODE_SINGLE: return print_rank(true);
    case MODE_SETTINGS: return print_settings();
    case MODE_TABLE:  return print_settings_table();
    default:          return print_rank(false);
    }
}
