/**
 * @file ringpoint/context.h
 * @brief Start-up and identity: one context per process.
 */
#ifndef RINGPOINT_CONTEXT_H
#define RINGPOINT_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <ringpoint/api.h>
#include <ringpoint/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque handle to a ringpoint context. */
typedef struct rp_context *rp_context_h;

/** Longest node name stored in @ref rp_context_attr_t, with its NUL. */
#define RP_NAME_MAX 64

/** Bits of @ref rp_init_params_t::field_mask. Never renumbered. */
enum rp_init_field {
    RP_INIT_FIELD_FLAGS = 1u << 0, /**< rp_init_params_t::flags is set. */
    RP_INIT_FIELD_ERROR = 1u << 1  /**< rp_init_params_t::error and
                                        error_len are set. */
};

/** Flags for @ref rp_init_params_t::flags. */
enum rp_init_flag {
    /** Ignore any PMIx server and run as rank 0 of 1. */
    RP_INIT_FLAG_SINGLE = 1u << 0
};

/**
 * @brief Optional parameters of @ref rp_init.
 *
 * Set a bit in @p field_mask for every field you fill in; fields whose bit is
 * clear keep their defaults, so code written against this version keeps
 * compiling and behaving the same when fields are added.
 */
typedef struct rp_init_params {
    uint64_t field_mask; /**< Which fields are valid (enum rp_init_field). */
    uint64_t flags;      /**< enum rp_init_flag bits. */
    /** Where a failing rp_init writes what went wrong: the first error it
     *  logged, as one NUL-terminated line (also written to standard error
     *  as always); an empty string when it succeeds. For a language binding
     *  that turns the status into an exception carrying the reason. */
    char *error;
    size_t error_len;    /**< Bytes at @p error, with the NUL. */
} rp_init_params_t;

/** Bits of @ref rp_context_attr_t::field_mask. Never renumbered. */
enum rp_context_attr_field {
    RP_CONTEXT_ATTR_FIELD_RANK          = 1u << 0, /**< rank */
    RP_CONTEXT_ATTR_FIELD_SIZE          = 1u << 1, /**< size */
    RP_CONTEXT_ATTR_FIELD_LOCAL_RANK    = 1u << 2, /**< local_rank */
    RP_CONTEXT_ATTR_FIELD_LOCAL_SIZE    = 1u << 3, /**< local_size */
    RP_CONTEXT_ATTR_FIELD_NODE_ID       = 1u << 4, /**< node_id */
    RP_CONTEXT_ATTR_FIELD_NODE_COUNT    = 1u << 5, /**< node_count */
    RP_CONTEXT_ATTR_FIELD_NODE_NAME     = 1u << 6, /**< node_name */
    RP_CONTEXT_ATTR_FIELD_BOOTSTRAP     = 1u << 7, /**< bootstrap */
    RP_CONTEXT_ATTR_FIELD_JOB_ID        = 1u << 8, /**< job_id */
    RP_CONTEXT_ATTR_FIELD_CKPT_INTERVAL = 1u << 9, /**< ckpt_interval_s */
    RP_CONTEXT_ATTR_FIELD_RING          = 1u << 10, /**< left_/right_ fields */
    RP_CONTEXT_ATTR_FIELD_PARENT        = 1u << 11  /**< parent_rank, job_rank */
};

/**
 * @brief What a context knows about this process and its job.
 *
 * Set @p field_mask to the fields you want before calling
 * @ref rp_context_query; only those are written.
 */
typedef struct rp_context_attr {
    uint64_t field_mask;           /**< Requested fields (enum rp_context_attr_field). */
    int rank;                      /**< This process's rank, 0 .. size-1. */
    int size;                      /**< Number of ranks in the job step. */
    int local_rank;                /**< Rank among the processes on this node. */
    int local_size;                /**< Number of processes on this node. */
    int node_id;                   /**< Index of this node, 0 .. node_count-1. */
    int node_count;                /**< Number of nodes in the job step. */
    char node_name[RP_NAME_MAX];   /**< Slurm node name, else the host name. */
    const char *bootstrap;         /**< "pmix" or "single"; static string. */
    char job_id[RP_NAME_MAX];      /**< Slurm job id, else the PMIx namespace. */
    uint64_t ckpt_interval_s;      /**< Periodic checkpoint interval; 0: only on a signal. */
    int left_rank;                 /**< Previous rank on the ring. */
    int right_rank;                /**< Next rank on the ring. */
    char left_node[RP_NAME_MAX];   /**< Node of @p left_rank, learnt through the address exchange. */
    char right_node[RP_NAME_MAX];  /**< Node of @p right_rank, learnt through the address exchange. */
    /** A sub-communicator's (ringpoint/subcomm.h): this rank in the context
     *  it was made from; -1 for the job's context. (rank and size are the
     *  sub-communicator's; the node, job and ring fields the job's.) */
    int parent_rank;
    int job_rank;                  /**< This process's rank in the job. */
} rp_context_attr_t;

/**
 * @brief Start ringpoint in this process.
 *
 * Bootstraps from PMIx when the process was started by a PMIx-enabled
 * launcher (`srun --mpi=pmix`, `mpirun`), otherwise runs as rank 0 of 1.
 * Reads the settings the SPANK plugin exported (`RINGPOINT_*`), and exchanges
 * addresses with the ring neighbours. Collective: every rank must call it.
 *
 * @param params  Optional parameters, or NULL for the defaults.
 * @param ctx_p   On success, the new context; untouched on failure.
 * @return RP_OK, RP_ERR_INVALID_ARG for a malformed RINGPOINT_* setting,
 *         RP_ERR_BOOTSTRAP or RP_ERR_TIMEOUT when the process manager fails.
 */
RP_API rp_status_t rp_init(const rp_init_params_t *params, rp_context_h *ctx_p);

/**
 * @brief Stop ringpoint and free the context. Collective.
 * @param ctx  A context from @ref rp_init; NULL is ignored.
 */
RP_API void rp_finalize(rp_context_h ctx);

/**
 * @brief Read the fields named in @p attr->field_mask.
 * @return RP_OK, or RP_ERR_INVALID_ARG for a NULL argument.
 */
RP_API rp_status_t rp_context_query(rp_context_h ctx, rp_context_attr_t *attr);

/**
 * @brief The version of the library actually loaded, "MAJOR.MINOR.PATCH".
 *
 * Compare with RP_VERSION_STRING from the headers you compiled against.
 */
RP_API const char *rp_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_CONTEXT_H */
