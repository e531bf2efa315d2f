/*
 * The --ckpt-dir rules. The path is checked lexically in the submitting
 * process (syntax, site roots) and expanded in slurmstepd, where the job id
 * and user are known; the plugin never looks at the file system, because
 * it partly runs as root and the path is the user's.
 */
#ifndef RP_SPANK_CKPT_DIR_H
#define RP_SPANK_CKPT_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

#define RP_CKPT_DIR_FORMS                                                   \
    "an absolute or relative path (relative to the submit directory) that " \
    "may contain %j (job id), %A (array job id), %a (array task id), "      \
    "%u (user) and %x (job name)"

/* What the % escapes expand to. */
typedef struct rp_ckpt_dir_vars {
    uint32_t job_id;
    uint32_t array_job_id;  /* 0: not an array job */
    uint32_t array_task_id;
    const char *user;
    const char *job_name;
} rp_ckpt_dir_vars_t;

/*
 * Make @text absolute against @base (when relative) and normalise it
 * lexically: no "//", "." or "..", no trailing "/". Escapes are kept. Fails
 * on an empty path, an unknown escape, control characters, ".." above "/",
 * or a result longer than @len.
 */
rp_status_t rp__ckpt_dir_normalize(const char *base, const char *text,
                                   char *out, size_t len, char *err,
                                   size_t errlen);

/*
 * Is the normalised @path inside one of the colon-separated absolute
 * @roots? Only the part before the first escape is compared, at a path
 * component boundary; expansions cannot leave it (they never contain '/').
 * NULL or empty @roots allows everything.
 */
rp_status_t rp__ckpt_dir_check_roots(const char *path, const char *roots,
                                     char *err, size_t errlen);

/* Expand the escapes of a normalised path. '/', '%' and a leading '.' in
 * the expanded values become '_', so an expansion never changes the
 * directory structure the roots were checked against, and the result
 * expands to itself when it is read as a pattern again (every srun inside
 * a batch job does). There is no literal '%': a second expansion could not
 * tell it from an escape. */
rp_status_t rp__ckpt_dir_expand(const char *path, const rp_ckpt_dir_vars_t *vars,
                                char *out, size_t len, char *err,
                                size_t errlen);

#endif /* RP_SPANK_CKPT_DIR_H */
