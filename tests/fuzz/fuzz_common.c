/*
 * The replay driver and stderr redirection shared by every target.
 *
 * Built with libFuzzer (--enable-fuzz), libFuzzer provides main(). In any
 * other build (gcc with ASan+UBSan in make check) main() here runs the
 * target once on each file named, or on each file of each directory
 * named, so the committed corpora are regression tests everywhere.
 */
#include "config.h"

#include "fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int fuzz_quiet_begin(void)
{
    int saved, null;

    if (getenv("RP_FUZZ_VERBOSE") != NULL) {
        return -1;
    }
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved < 0 || null < 0) {
        if (saved >= 0) {
            close(saved);
        }
        if (null >= 0) {
            close(null);
        }
        return -1;
    }
    dup2(null, STDERR_FILENO);
    close(null);
    return saved;
}

void fuzz_quiet_end(int saved)
{
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
}

static int fuzz_capture_fd = -1;

int fuzz_capture_begin(void)
{
    int saved;

    if (fuzz_capture_fd < 0) {
        fuzz_capture_fd = memfd_create("fuzz-stderr", MFD_CLOEXEC);
        if (fuzz_capture_fd < 0) {
            perror("memfd_create");
            abort();
        }
    }
    if (ftruncate(fuzz_capture_fd, 0) != 0 ||
        lseek(fuzz_capture_fd, 0, SEEK_SET) != 0) {
        abort();
    }
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    if (saved < 0) {
        abort();
    }
    dup2(fuzz_capture_fd, STDERR_FILENO);
    return saved;
}

void fuzz_capture_end(int saved, char *buf, size_t len)
{
    ssize_t n;

    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    n = pread(fuzz_capture_fd, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    if (getenv("RP_FUZZ_VERBOSE") != NULL) {
        fputs(buf, stderr);
    }
}

#ifndef RP_FUZZ_LIBFUZZER
static int fuzz_replay_file(const char *path)
{
    struct stat st;
    uint8_t *buf;
    ssize_t got;
    size_t off = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    /* One byte more, so an empty file is still a valid pointer. */
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        close(fd);
        return 1;
    }
    while (off < (size_t)st.st_size &&
           (got = read(fd, buf + off, (size_t)st.st_size - off)) > 0) {
        off += (size_t)got;
    }
    close(fd);
    /* A copy of exactly the input's size, as libFuzzer gives it, so a
     * read past the end is caught. */
    {
        uint8_t *exact = malloc(off > 0 ? off : 1);

        memcpy(exact, buf, off);
        free(buf);
        LLVMFuzzerTestOneInput(exact, off);
        free(exact);
    }
    return 0;
}

static int fuzz_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    unsigned long runs = 0;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *de;
            char **names = NULL;
            size_t n = 0;

            if (d == NULL) {
                return 1;
            }
            while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.') {
                    continue;
                }
                names = realloc(names, (n + 1) * sizeof(*names));
                if (asprintf(&names[n], "%s/%s", argv[i], de->d_name) < 0) {
                    return 1;
                }
                n++;
            }
            closedir(d);
            qsort(names, n, sizeof(*names), fuzz_name_cmp);
            for (size_t k = 0; k < n; k++) {
                rc |= fuzz_replay_file(names[k]);
                runs++;
                free(names[k]);
            }
            free(names);
        } else {
            rc |= fuzz_replay_file(argv[i]);
            runs++;
        }
    }
    printf("%s: %lu inputs replayed\n", argv[0], runs);
    return rc;
}
#endif
