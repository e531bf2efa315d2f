/*
 * ringpoint-faultfs.so: a file-system fault injector for the storage
 * tests (tests/slurm/test_storage.sh), loaded with LD_PRELOAD. Not a file
 * system: it sits between a program and the C library's file calls and
 * makes chosen ones fail, slow down, or find a planted symbolic link, at
 * exactly the step of the commit protocol a test names. Real full, slow
 * and read-only file systems are tested too; this reaches the points
 * they cannot hit on purpose (the manifest, the rename, an fsync).
 *
 *   RP_FAULTFS='RULE[;RULE...]'   RULE = OP:GLOB:ACTION[:FIRST[:COUNT]]
 *
 *   OP      open (open, openat, creat), mkdir (mkdir, mkdirat), write
 *           (write, pwrite), fsync (fsync, fdatasync), rename (rename,
 *           renameat, renameat2; the source or the target matches)
 *   GLOB    fnmatch(3) pattern over the absolute path; for write and
 *           fsync, the path the descriptor was opened with
 *   ACTION  an errno name (ENOSPC EIO EROFS EDQUOT EACCES EPERM): the call
 *           fails with it, nothing done; "short": a write writes half and
 *           returns that count, and the next write to that file fails
 *           ENOSPC (what a file system that fills up mid-write does);
 *           "delay=MS": sleep MS milliseconds, then do the call (a slow
 *           device); "symlink=TARGET": a symbolic link to TARGET is made
 *           at the path just before the call (an attacker who wins the
 *           race)
 *   FIRST   act from the FIRST matching call on (default 1)
 *   COUNT   act on COUNT calls (default 0: every one from FIRST on)
 *
 * Each fault is logged on stderr as "faultfs: OP PATH: ACTION", so a test
 * can tell that it was reached. Counts are per process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { OP_OPEN, OP_MKDIR, OP_WRITE, OP_FSYNC, OP_RENAME, OP_COUNT };
enum { ACT_ERRNO, ACT_SHORT, ACT_DELAY, ACT_SYMLINK };

#define FF_MAX_RULES 16
#define FF_MAX_FD 4096

typedef struct ff_rule {
    int op, act, err;
    long ms;
    unsigned long first, count, seen;
    char glob[PATH_MAX], target[PATH_MAX];
} ff_rule_t;

static const char *const ff_op_names[OP_COUNT] = {"open", "mkdir", "write",
                                                  "fsync", "rename"};
static const struct { const char *name; int err; } ff_errnos[] = {
    {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EROFS", EROFS},
    {"EDQUOT", EDQUOT}, {"EACCES", EACCES}, {"EPERM", EPERM}};

static ff_rule_t ff_rules[FF_MAX_RULES];
static int ff_nrules;
static char *ff_paths[FF_MAX_FD];     /* path of each descriptor opened */
static unsigned char ff_full[FF_MAX_FD]; /* "short" fired: next write fails */
static pthread_mutex_t ff_mu = PTHREAD_MUTEX_INITIALIZER;

static int ff_parse_rule(char *s, ff_rule_t *r)
{
    char *f[5] = {0};
    int n = 0, i;

    for (char *tok = s; tok != NULL && n < 5; n++) {
        f[n] = tok;
        /* The glob and the action's target may hold no ':' (paths here
         * never do); split on every ':'. */
        tok = strchr(tok, ':');
        if (tok != NULL) {
            *tok++ = '\0';
        }
    }
    if (n < 3) {
        return -1;
    }
    r->op = -1;
    for (i = 0; i < OP_COUNT; i++) {
        if (strcmp(f[0], ff_op_names[i]) == 0) {
            r->op = i;
        }
    }
    snprintf(r->glob, sizeof(r->glob), "%s", f[1]);
    r->act = -1;
    if (strcmp(f[2], "short") == 0) {
        r->act = ACT_SHORT;
    } else if (strncmp(f[2], "delay=", 6) == 0) {
        r->act = ACT_DELAY;
        r->ms = strtol(f[2] + 6, NULL, 10);
    } else if (strncmp(f[2], "symlink=", 8) == 0) {
        r->act = ACT_SYMLINK;
        snprintf(r->target, sizeof(r->target), "%s", f[2] + 8);
    } else {
        for (i = 0; i < (int)(sizeof(ff_errnos) / sizeof(ff_errnos[0])); i++) {
            if (strcmp(f[2], ff_errnos[i].name) == 0) {
                r->act = ACT_ERRNO;
                r->err = ff_errnos[i].err;
            }
        }
    }
    r->first = f[3] != NULL ? strtoul(f[3], NULL, 10) : 1;
    r->count = f[4] != NULL ? strtoul(f[4], NULL, 10) : 0;
    return r->op < 0 || r->act < 0 || r->first == 0 ? -1 : 0;
}

__attribute__((constructor)) static void ff_init(void)
{
    const char *v = getenv("RP_FAULTFS");
    char *copy, *rule, *save = NULL;

    if (v == NULL || *v == '\0' || (copy = strdup(v)) == NULL) {
        return;
    }
    for (rule = strtok_r(copy, ";", &save); rule != NULL;
         rule = strtok_r(NULL, ";", &save)) {
        if (ff_nrules == FF_MAX_RULES ||
            ff_parse_rule(rule, &ff_rules[ff_nrules]) != 0) {
            fprintf(stderr, "faultfs: bad rule '%s' in RP_FAULTFS (OP:GLOB:"
                    "ACTION[:FIRST[:COUNT]])\n", rule);
            abort();
        }
        ff_nrules++;
    }
    free(copy);
}

static void *ff_next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);

    if (f == NULL) {
        fprintf(stderr, "faultfs: no %s in the C library\n", name);
        abort();
    }
    return f;
}

/* The absolute form of @path relative to @dirfd (no symlinks resolved:
 * the rule names what the program asked for). */
static void ff_abs(int dirfd, const char *path, char *out, size_t len)
{
    char link[64], dir[PATH_MAX];
    ssize_t n;

    if (path[0] == '/') {
        snprintf(out, len, "%s", path);
        return;
    }
    if (dirfd == AT_FDCWD) {
        n = getcwd(dir, sizeof(dir)) != NULL ? (ssize_t)strlen(dir) : -1;
    } else {
        snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
        n = readlink(link, dir, sizeof(dir) - 1);
    }
    if (n < 0) {
        snprintf(out, len, "%s", path);
        return;
    }
    dir[n] = '\0';
    snprintf(out, len, "%s/%s", dir, path);
}

/* The rule that acts on this call of @op on @path, counted; NULL if none. */
static ff_rule_t *ff_match(int op, const char *path)
{
    ff_rule_t *hit = NULL;
    int i;

    if (path == NULL || ff_nrules == 0) {
        return NULL;
    }
    pthread_mutex_lock(&ff_mu);
    for (i = 0; i < ff_nrules && hit == NULL; i++) {
        ff_rule_t *r = &ff_rules[i];

        if (r->op != op || fnmatch(r->glob, path, 0) != 0) {
            continue;
        }
        r->seen++;
        if (r->seen >= r->first &&
            (r->count == 0 || r->seen < r->first + r->count)) {
            hit = r;
        }
    }
    pthread_mutex_unlock(&ff_mu);
    if (hit != NULL) {
        fprintf(stderr, "faultfs: %s %s: %s%s%s\n", ff_op_names[op], path,
                hit->act == ACT_ERRNO ? strerrorname_np(hit->err)
                : hit->act == ACT_SHORT ? "short write"
                : hit->act == ACT_DELAY ? "delay"
                                        : "symlink to ",
                hit->act == ACT_SYMLINK ? hit->target : "",
                hit->act == ACT_DELAY ? " ms" : "");
    }
    return hit;
}

/* Does the pre-call part of @r; returns -1 (errno set) to fail the call. */
static int ff_act(ff_rule_t *r, const char *path)
{
    if (r == NULL) {
        return 0;
    }
    switch (r->act) {
    case ACT_ERRNO:
        errno = r->err;
        return -1;
    case ACT_DELAY: {
        struct timespec ts = {r->ms / 1000, (r->ms % 1000) * 1000000L};

        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        return 0;
    }
    case ACT_SYMLINK:
        if (symlink(r->target, path) != 0) {
            fprintf(stderr, "faultfs: symlink %s: %s\n", path,
                    strerror(errno));
        }
        return 0;
    default:
        return 0;
    }
}

static void ff_remember(int fd, const char *path)
{
    if (fd >= 0 && fd < FF_MAX_FD && ff_nrules > 0) {
        pthread_mutex_lock(&ff_mu);
        free(ff_paths[fd]);
        ff_paths[fd] = strdup(path);
        ff_full[fd] = 0;
        pthread_mutex_unlock(&ff_mu);
    }
}

static const char *ff_path_of(int fd)
{
    return fd >= 0 && fd < FF_MAX_FD ? ff_paths[fd] : NULL;
}

static int ff_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    static int (*real)(int, const char *, int, ...);
    char abs[PATH_MAX];
    int fd;

    if (real == NULL) {
        real = ff_next("openat");
    }
    if (ff_nrules == 0) {
        return real(dirfd, path, flags, mode);
    }
    ff_abs(dirfd, path, abs, sizeof(abs));
    if (ff_act(ff_match(OP_OPEN, abs), abs) != 0) {
        return -1;
    }
    fd = real(dirfd, path, flags, mode);
    ff_remember(fd, abs);
    return fd;
}

#define FF_MODE(flags, mode)                                                \
    do {                                                                    \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                              \
            va_list ap;                                                     \
            va_start(ap, flags);                                            \
            mode = va_arg(ap, mode_t);                                      \
            va_end(ap);                                                     \
        }                                                                   \
    } while (0)

int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;

    FF_MODE(flags, mode);
    return ff_openat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;

    FF_MODE(flags, mode);
    return ff_openat(dirfd, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;

    FF_MODE(flags, mode);
    return ff_openat(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;

    FF_MODE(flags, mode);
    return ff_openat(AT_FDCWD, path, flags, mode);
}

int creat(const char *path, mode_t mode)
{
    return ff_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
    static int (*real)(int, const char *, mode_t);
    char abs[PATH_MAX];

    if (real == NULL) {
        real = ff_next("mkdirat");
    }
    if (ff_nrules > 0) {
        ff_abs(dirfd, path, abs, sizeof(abs));
        if (ff_act(ff_match(OP_MKDIR, abs), abs) != 0) {
            return -1;
        }
    }
    return real(dirfd, path, mode);
}

int mkdir(const char *path, mode_t mode)
{
    return mkdirat(AT_FDCWD, path, mode);
}

/* The write-side rules; *@n_p may be cut (short). -1: fail the call. */
static int ff_write_check(int fd, size_t *n_p)
{
    const char *path = ff_path_of(fd);
    ff_rule_t *r;

    if (path == NULL) {
        return 0;
    }
    if (ff_full[fd]) {
        errno = ENOSPC;
        return -1;
    }
    r = ff_match(OP_WRITE, path);
    if (r != NULL && r->act == ACT_SHORT) {
        *n_p = *n_p > 1 ? *n_p / 2 : *n_p;
        ff_full[fd] = 1;
        return 0;
    }
    return ff_act(r, path);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);

    if (real == NULL) {
        real = ff_next("write");
    }
    if (ff_nrules > 0 && ff_write_check(fd, &n) != 0) {
        return -1;
    }
    return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);

    if (real == NULL) {
        real = ff_next("pwrite");
    }
    if (ff_nrules > 0 && ff_write_check(fd, &n) != 0) {
        return -1;
    }
    return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite(fd, buf, n, off);
}

static int ff_sync(const char *name, int fd)
{
    static int (*reals[2])(int);
    int i = strcmp(name, "fsync") == 0 ? 0 : 1;

    if (reals[i] == NULL) {
        reals[i] = ff_next(name);
    }
    if (ff_nrules > 0 && ff_act(ff_match(OP_FSYNC, ff_path_of(fd)),
                                ff_path_of(fd)) != 0) {
        return -1;
    }
    return reals[i](fd);
}

int fsync(int fd) { return ff_sync("fsync", fd); }
int fdatasync(int fd) { return ff_sync("fdatasync", fd); }

int renameat2(int ofd, const char *old, int nfd, const char *new,
              unsigned flags)
{
    static int (*real)(int, const char *, int, const char *, unsigned);
    char a[PATH_MAX], b[PATH_MAX];
    ff_rule_t *r;

    if (real == NULL) {
        real = ff_next("renameat2");
    }
    if (ff_nrules > 0) {
        ff_abs(ofd, old, a, sizeof(a));
        ff_abs(nfd, new, b, sizeof(b));
        r = ff_match(OP_RENAME, a);
        if (r == NULL) {
            r = ff_match(OP_RENAME, b);
        }
        if (ff_act(r, b) != 0) {
            return -1;
        }
    }
    return real(ofd, old, nfd, new, flags);
}

int renameat(int ofd, const char *old, int nfd, const char *new)
{
    return renameat2(ofd, old, nfd, new, 0);
}

int rename(const char *old, const char *new)
{
    return renameat2(AT_FDCWD, old, AT_FDCWD, new, 0);
}

int close(int fd)
{
    static int (*real)(int);

    if (real == NULL) {
        real = ff_next("close");
    }
    if (ff_nrules > 0 && fd >= 0 && fd < FF_MAX_FD) {
        pthread_mutex_lock(&ff_mu);
        free(ff_paths[fd]);
        ff_paths[fd] = NULL;
        pthread_mutex_unlock(&ff_mu);
    }
    return real(fd);
}
