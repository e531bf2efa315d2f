/*
 * The fork guard (see fork.h).
 */
#include "config.h"

#include "core/fork.h"
#include "signal/signal.h"
#include "util/log.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

/* The pid of the process that called rp_init; 0 before. */
static _Atomic pid_t rp_fork_owner;
static pthread_once_t rp_fork_once = PTHREAD_ONCE_INIT;
static atomic_bool rp_fork_told;
/* The handler below is registered, and has run in this process (a child
 * forked after rp_init). While it has not, no pid needs comparing: the
 * check before every collective is a load, not a getpid() system call,
 * which would cost a small collective a large share of its time. */
static atomic_bool rp_fork_hooked, rp_fork_forked;

/* In the child, before fork() returns there: only async-signal-safe work. */
static void rp_fork_child(void)
{
    atomic_store(&rp_fork_forked, true);
    if (rp__fork_is_child()) {
        rp__signal_reset_in_child();
        atomic_store(&rp_fork_told, false); /* a grandchild says it too */
    }
}

static void rp_fork_register(void)
{
    /* Nothing to do before the fork or in the parent; a failure (ENOMEM)
     * leaves the pid checks, which do not depend on it. */
    if (pthread_atfork(NULL, NULL, rp_fork_child) != 0) {
        rp_debug("pthread_atfork failed: forked children keep ringpoint's "
                 "signal handlers until they exec");
        return;
    }
    atomic_store(&rp_fork_hooked, true);
}

/* The open descriptors, ascending, into @fds (malloc'd); false when the
 * list cannot be read. */
static bool rp_fork_list_fds(rp__fork_fds_t *fds)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    size_t cap = 0;
    int *grown;

    fds->open = NULL;
    fds->n = 0;
    if (d == NULL) {
        return false;
    }
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);

        if (*end != '\0' || end == e->d_name || fd == dirfd(d)) {
            continue;
        }
        if (fds->n == cap) {
            cap = cap == 0 ? 64 : 2 * cap;
            grown = realloc(fds->open, cap * sizeof(int));
            if (grown == NULL) {
                rp__fork_fds_free(fds);
                closedir(d);
                return false;
            }
            fds->open = grown;
        }
        fds->open[fds->n++] = (int)fd;
    }
    closedir(d);
    return true;
}

static bool rp_fork_had(const rp__fork_fds_t *before, int fd)
{
    for (size_t i = 0; i < before->n; i++) {
        if (before->open[i] == fd) {
            return true;
        }
    }
    return false;
}

void rp__fork_fds_note(rp__fork_fds_t *before)
{
    if (!rp_fork_list_fds(before)) {
        rp_debug("cannot list /proc/self/fd: descriptors rp_init opens stay "
                 "inheritable");
    }
}

void rp__fork_fds_free(rp__fork_fds_t *fds)
{
    free(fds->open);
    fds->open = NULL;
    fds->n = 0;
}

void rp__fork_guard_init(const rp__fork_fds_t *before)
{
    rp__fork_fds_t now;
    int flags;

    atomic_store(&rp_fork_owner, getpid());
    (void)pthread_once(&rp_fork_once, rp_fork_register);
    if (before->open == NULL || !rp_fork_list_fds(&now)) {
        return;
    }
    /* A descriptor the application opened meanwhile in another thread is
     * marked too: rp_init is collective and rarely concurrent with that,
     * and close-on-exec is what a library's descriptors want anyway. */
    for (size_t i = 0; i < now.n; i++) {
        if (!rp_fork_had(before, now.open[i])) {
            flags = fcntl(now.open[i], F_GETFD);
            if (flags >= 0 && !(flags & FD_CLOEXEC)) {
                (void)fcntl(now.open[i], F_SETFD, flags | FD_CLOEXEC);
            }
        }
    }
    rp__fork_fds_free(&now);
}

bool rp__fork_is_child(void)
{
    pid_t owner = atomic_load_explicit(&rp_fork_owner, memory_order_relaxed);

    if (owner == 0 ||
        (atomic_load_explicit(&rp_fork_hooked, memory_order_relaxed) &&
         !atomic_load_explicit(&rp_fork_forked, memory_order_relaxed))) {
        return false;
    }
    return owner != getpid();
}

rp_status_t rp__fork_check(const char *what)
{
    if (!rp__fork_is_child()) {
        return RP_OK;
    }
    if (!atomic_exchange(&rp_fork_told, true)) {
        rp_error("%s: this process (pid %d) was forked from rank process %d "
                 "after rp_init; ringpoint works only in the process that "
                 "called rp_init (a DataLoader worker or other forked child "
                 "must leave collectives and checkpoints to its parent)",
                 what, (int)getpid(), (int)atomic_load(&rp_fork_owner));
    }
    return RP_ERR_STATE;
}
