/*
 * The step marker: how a task tells the ringpoint plugin in its slurmstepd
 * that it stopped through ringpoint's stop protocol (rp_step reported a
 * stop and the stop checkpoint was committed, or, when it could not fit
 * before SIGKILL, the previous one was kept). The plugin requeues a job
 * whose task exited RP_EXIT_STOPPED only when this marker came: exit 75
 * alone is EX_TEMPFAIL, used by many programs that never heard of
 * ringpoint, and those must not be requeued on its account.
 *
 * The channel is a pipe that slurmstepd creates for the step: no file and
 * no path, because slurmstepd runs as root and must not open what a user
 * controls; it reads only its own pipe, non-blocking, at the step's end.
 * Each task gets the write end, open across exec, named in
 * RINGPOINT_STEP_FD as "FD:INODE". The runtime writes only when FD is a
 * FIFO with that inode, so the variable inherited by a process where FD is
 * something else (a step without the pipe, a child that closed it) is
 * never written through. What the user's code writes into the pipe can at
 * most requeue the user's own job, which `scontrol requeue` does too.
 *
 * Header-only, shared by the plugin (the constants) and the runtime (the
 * write), which link nothing of each other.
 */
#ifndef RP_UTIL_STEP_MARKER_H
#define RP_UTIL_STEP_MARKER_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RP_STEP_MARKER_ENV  "RINGPOINT_STEP_FD"
#define RP_STEP_MARKER_STOP "ringpoint-stop\n"

/* In a task: say that it stopped through the stop protocol. Never fails
 * the caller: without the channel there is nothing to say it to. */
static inline void rp__step_marker_stop(void)
{
    const char *value = getenv(RP_STEP_MARKER_ENV);
    unsigned long long fd, ino;
    struct stat st;
    char extra;

    if (value == NULL ||
        sscanf(value, "%llu:%llu%c", &fd, &ino, &extra) != 2 || fd > 65535 ||
        fstat((int)fd, &st) != 0 || !S_ISFIFO(st.st_mode) ||
        (unsigned long long)st.st_ino != ino) {
        return;
    }
    /* Shorter than PIPE_BUF: one atomic write; the fd is non-blocking. */
    if (write((int)fd, RP_STEP_MARKER_STOP, sizeof(RP_STEP_MARKER_STOP) - 1) <
        0) {
        return;
    }
}

#endif /* RP_UTIL_STEP_MARKER_H */
