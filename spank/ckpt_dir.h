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
#include "util/parse.h"

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
 * a relative @text with a '%' in @base, or a result longer than @len.
 */
rp_status_t rp__ckpt_dir_normalize(const char *base, const char *text,
                                   char *out, size_t len, char *err,
                                   size_t errlen);

/* The longest --ckpt-dir, before and after expansion: the one limit of
 * every RINGPOINT_* value (the runtime's RINGPOINT_CKPT_DIR holds as much). */
#define RP_CKPT_DIR_MAX RP_VALUE_MAX_LEN

/*
 * Is the normalised @path inside one of the colon-separated absolute
 * @roots, at a path component boundary? Roots hold no '%', so a component
 * with an unexpanded escape is inside none. NULL or empty @roots allows
 * everything.
 */
rp_status_t rp__ckpt_dir_check_roots(const char *path, const char *roots,
                                     char *err, size_t errlen);

/* Expand the escapes of the user's @path (relative or absolute, before
 * normalisation). '/', '%' and a leading '.' in the expanded values become
 * '_', and a component that an expansion made "." or ".." is refused, so
 * an expansion never changes the directory structure. There is no literal
 * '%': the result is read back as a template by every srun inside a batch
 * job, where it must expand to itself. */
rp_status_t rp__ckpt_dir_expand(const char *path, const rp_ckpt_dir_vars_t *vars,
                                char *out, size_t len, char *err,
                                size_t errlen);

/*
 * The one --ckpt-dir rule of both sides: check @text, expand it (with
 * @vars; NULL in the submitting process, where the job's ids are not known
 * yet and the escapes stay), then make it absolute against @base (the
 * submit directory, taken literally), normalise, and check the result
 * against @roots.
 */
rp_status_t rp__ckpt_dir_resolve(const char *base, const char *text,
                                 const rp_ckpt_dir_vars_t *vars,
                                 const char *roots, char *out, size_t len,
                                 char *err, size_t errlen);

#endif /* RP_SPANK_CKPT_DIR_H */
