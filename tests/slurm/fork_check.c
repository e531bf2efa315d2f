/*
 * ringpoint-fork-check: a process that forks after rp_init (a PyTorch
 * DataLoader worker, a helper that runs a command) must leave the rank's
 * context alone, and the rank must not notice the child at all.
 *
 * Each rank forks, in turn:
 *   work   a child that computes, tries a collective, a checkpoint and a
 *          step (each must be refused with RP_ERR_STATE at once, not run
 *          over the parent's connections nor hang), checks that it has
 *          none of the library's threads (no liveness pings, no progress),
 *          calls rp_finalize (must return at once) and ends with exit(),
 *          which runs the atexit handlers and library destructors;
 *   inflight the same while a large non-blocking allreduce of the parent
 *          is in flight on its progress thread;
 *   exec   a child that execs a shell: it must not inherit the listening
 *          and local sockets rp_init opened (UCX's: close-on-exec), or a
 *          dead rank's endpoints would stay open while the command runs
 *          (connections UCX accepts after rp_init may still be inherited:
 *          doc/reliability.md);
 *   term   a child that waits: SIGTERM must end it (ringpoint's stop
 *          handler would only note the signal), and the warning signal
 *          (SIGUSR2) likewise; the parent's next rp_step sees no stop.
 * After the children the ranks run 60 collectives over about three
 * seconds and take a checkpoint: every result is checked, and no error (a
 * lost peer) may be reported. Prints "fork-check: ok" on rank 0.
 *
 *   ringpoint-fork-check            (RINGPOINT_CKPT_DIR set; 2 or more ranks)
 */
#include <ringpoint.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_STATE 4096
#define BIG (8u << 20) /* floats: 32 MiB, long enough to be in flight */

static int g_rank;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The threads of this process (/proc/self/task). */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n;
}

/* The child of "work"/"inflight": 0 when every expectation held, else the
 * number of the first that failed. */
static int child_work(rp_context_h ctx, double *state)
{
    double x = 1.0, y = 0.0, t0;
    rp_step_result_t r;
    int threads;

    for (int i = 0; i < N_STATE; i++) { /* work of its own */
        y += state[i] * 0.5;
    }
    if (y < 0) {
        return 1;
    }
    threads = thread_count();
    if (threads != 1) {
        fprintf(stderr, "fork-check[%d]: child has %d threads, expected 1\n",
                g_rank, threads);
        return 2;
    }
    t0 = now_s();
    if (rp_allreduce(ctx, &x, &x, 1, RP_DTYPE_FLOAT64, RP_OP_SUM) !=
        RP_ERR_STATE) {
        return 3;
    }
    if (rp_checkpoint(ctx, 2) != RP_ERR_STATE) {
        return 4;
    }
    if (rp_step(ctx, 2, &r) != RP_ERR_STATE) {
        return 5;
    }
    rp_finalize(ctx);
    if (now_s() - t0 > 5.0) {
        return 6; /* refused, but only after waiting */
    }
    return 0;
}

/* waitpid with a limit: a child that outlives it is killed and counts as
 * hung. */
static int wait_child(pid_t pid, double limit_s, int *status)
{
    double t0 = now_s();
    pid_t w;

    for (;;) {
        w = waitpid(pid, status, WNOHANG);
        if (w == pid) {
            return 0;
        }
        if (w < 0 && errno != EINTR) {
            perror("fork-check: waitpid");
            return -1;
        }
        if (now_s() - t0 > limit_s) {
            fprintf(stderr, "fork-check[%d]: child %d still there after %.0f s\n",
                    g_rank, (int)pid, limit_s);
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            return -1;
        }
        usleep(10000);
    }
}

static int expect_exit(const char *what, pid_t pid, int code)
{
    int st;

    if (pid < 0) {
        perror("fork-check: fork");
        return -1;
    }
    if (wait_child(pid, 20.0, &st) != 0) {
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != code) {
        fprintf(stderr, "fork-check[%d]: %s child ended with status 0x%x, "
                "expected exit %d\n", g_rank, what, st, code);
        return -1;
    }
    return 0;
}

static int fork_work(rp_context_h ctx, double *state)
{
    pid_t pid = fork();

    if (pid == 0) {
        exit(child_work(ctx, state));
    }
    return expect_exit("work", pid, 0);
}

static int fork_inflight(rp_context_h ctx, double *state, float *big,
                         size_t size)
{
    rp_request_h req;
    pid_t pid;
    int rc;

    for (size_t i = 0; i < BIG; i++) {
        big[i] = 1.0f;
    }
    if (rp_iallreduce(ctx, big, big, BIG, RP_DTYPE_FLOAT32, RP_OP_SUM,
                      &req) != RP_OK) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        exit(child_work(ctx, state));
    }
    rc = expect_exit("inflight", pid, 0);
    if (rp_wait(&req) != RP_OK) {
        return -1;
    }
    for (size_t i = 0; i < BIG; i += 4099) {
        if (big[i] != (float)size) {
            fprintf(stderr, "fork-check[%d]: allreduce[%zu] = %g\n", g_rank,
                    i, (double)big[i]);
            return -1;
        }
    }
    return rc;
}

/* Whether descriptor @name of this process is a listening or a local
 * (AF_UNIX) socket. */
static int listening_or_local(const char *name)
{
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    int fd = atoi(name), on = 0;
    socklen_t onlen = sizeof(on);

    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &onlen) == 0 && on) {
        return 1;
    }
    return getsockname(fd, (struct sockaddr *)&sa, &salen) == 0 &&
           sa.ss_family == AF_UNIX;
}

/* The sockets this process holds ("socket:[INODE]" joined by '|') that
 * @before ("" or such a list) lacks; with @only_fixed, only listening and
 * local ones. */
static void list_sockets(char *out, size_t len, const char *before,
                         int only_fixed)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char path[512], link[128];
    size_t used = 0;
    ssize_t n;

    out[0] = '\0';
    while (d != NULL && (e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0) {
            continue;
        }
        link[n] = '\0';
        if (strncmp(link, "socket:", 7) != 0 || strstr(before, link) != NULL ||
            used + (size_t)n + 2 >= len ||
            (only_fixed && !listening_or_local(e->d_name))) {
            continue;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%s",
                                 used > 0 ? "|" : "", link);
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* The exec'd shell exits with the number of the sockets in @ours (those
 * rp_init opened) that it holds (at most 100). */
static int fork_exec(const char *ours)
{
    static const char script[] =
        "n=0; for f in /proc/$$/fd/*; do l=$(readlink $f); "
        "case \"|$OURS|\" in *\"|$l|\"*) n=$((n+1));; esac; done; "
        "exit $((n > 100 ? 100 : n))";
    pid_t pid;
    int st;

    if (ours[0] == '\0') {
        return 0; /* rp_init opened no socket (no UCX: 1 rank per node?) */
    }
    pid = fork();
    if (pid == 0) {
        setenv("OURS", ours, 1);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || wait_child(pid, 20.0, &st) != 0) {
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "fork-check[%d]: exec'd child inherited %d sockets "
                "(status 0x%x)\n", g_rank, WEXITSTATUS(st), st);
        return -1;
    }
    return 0;
}

static int fork_signalled(int signo)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        for (int i = 0; i < 3000; i++) { /* 30 s at most */
            usleep(10000);
        }
        _exit(0);
    }
    if (pid < 0) {
        return -1;
    }
    usleep(100000);
    kill(pid, signo);
    if (wait_child(pid, 10.0, &st) != 0) {
        return -1;
    }
    if (!WIFSIGNALED(st) || WTERMSIG(st) != signo) {
        fprintf(stderr, "fork-check[%d]: SIG%s did not end the child (status "
                "0x%x)\n", g_rank, signo == SIGTERM ? "TERM" : "USR2", st);
        return -1;
    }
    return 0;
}

/* @n collectives 50 ms apart, each result checked. (A count, not a time:
 * every rank must call as many.) */
static int keep_going(rp_context_h ctx, int size, int n)
{
    double v;

    for (int i = 0; i < n; i++) {
        v = 1.0;
        if (rp_allreduce(ctx, &v, &v, 1, RP_DTYPE_FLOAT64, RP_OP_SUM) !=
                RP_OK ||
            v != (double)size) {
            fprintf(stderr, "fork-check[%d]: allreduce after the children "
                    "failed or gave %g\n", g_rank, v);
            return -1;
        }
        usleep(50000);
    }
    return 0;
}

int main(void)
{
    static double state[N_STATE];
    static char before[16384], ours[16384];
    rp_context_attr_t attr;
    rp_step_result_t r;
    rp_context_h ctx;
    const char *failed = NULL;
    float *big;
    int bad;

    big = malloc(BIG * sizeof(float));
    list_sockets(before, sizeof(before), "", 0);
    if (big == NULL || rp_init(NULL, &ctx) != RP_OK) {
        return 2;
    }
    list_sockets(ours, sizeof(ours), before, 1);
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE;
    if (rp_context_query(ctx, &attr) != RP_OK || attr.size < 2) {
        fprintf(stderr, "fork-check: needs 2 or more ranks\n");
        return 2;
    }
    g_rank = attr.rank;
    for (int i = 0; i < N_STATE; i++) {
        state[i] = attr.rank + i * 0.25;
    }
    if (rp_region_register(ctx, "state", state, sizeof(state),
                           RP_REGION_PER_RANK) != RP_OK ||
        rp_checkpoint(ctx, 1) != RP_OK) {
        return 2;
    }
    if (fork_work(ctx, state) != 0) {
        failed = "work";
    } else if (fork_inflight(ctx, state, big, (size_t)attr.size) != 0) {
        failed = "inflight";
    } else if (fork_exec(ours) != 0) {
        failed = "exec";
    } else if (fork_signalled(SIGTERM) != 0 || fork_signalled(SIGUSR2) != 0) {
        failed = "term";
    } else if (rp_step(ctx, 3, &r) != RP_OK || r.stop) {
        failed = "step after the signalled children";
    } else if (keep_going(ctx, attr.size, 60) != 0 ||
               rp_checkpoint(ctx, 4) != RP_OK) {
        failed = "after the children";
    }
    /* Every rank's verdict, so that one failing rank fails them all. */
    bad = failed != NULL;
    if (rp_allreduce(ctx, &bad, &bad, 1, RP_DTYPE_INT32, RP_OP_SUM) != RP_OK) {
        bad = 1;
    }
    if (failed != NULL) {
        fprintf(stderr, "fork-check[%d]: FAILED: %s\n", g_rank, failed);
    }
    rp_finalize(ctx);
    free(big);
    if (bad == 0 && g_rank == 0) {
        printf("fork-check: ok\n");
    }
    return bad == 0 ? 0 : 1;
}
