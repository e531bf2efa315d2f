/**
 * @file ringpoint/status.h
 * @brief The one status type every ringpoint call returns.
 */
#ifndef RINGPOINT_STATUS_H
#define RINGPOINT_STATUS_H

#include <ringpoint/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Result of a ringpoint call.
 *
 * Zero is success and every error is negative. Values are part of the ABI:
 * new codes are appended before @ref RP_ERR_LAST and existing ones are never
 * renumbered, so a status logged by one version reads the same in another.
 */
typedef enum rp_status {
    RP_OK                 = 0,   /**< Success. */
    RP_ERR_INVALID_ARG    = -1,  /**< An argument or a setting is malformed or out of range. */
    RP_ERR_NO_MEMORY      = -2,  /**< An allocation failed. */
    RP_ERR_NOT_SUPPORTED  = -3,  /**< Not built in, or not possible on this system. */
    RP_ERR_BOOTSTRAP      = -4,  /**< The process manager (PMIx) failed or is inconsistent. */
    RP_ERR_TRANSPORT      = -5,  /**< The communication layer (UCX, NCCL) failed. */
    RP_ERR_TIMEOUT        = -6,  /**< An operation did not finish within its time limit. */
    RP_ERR_PEER_FAILED    = -7,  /**< Another rank died or stopped answering. */
    RP_ERR_IO             = -8,  /**< A file system operation failed. */
    RP_ERR_CORRUPT        = -9,  /**< Data failed a checksum, length or format check. */
    RP_ERR_NOT_FOUND      = -10, /**< The requested object does not exist. */
    RP_ERR_BUSY           = -11, /**< A previous operation is still in flight. */
    RP_ERR_STATE          = -12, /**< The call is not valid in the object's current state. */
    RP_ERR_MISMATCH       = -13, /**< The ranks called a collective with different arguments. */
    RP_ERR_LAST           = -14  /**< One past the last code; not a real status. */
} rp_status_t;

/**
 * @brief Describe a status in a few words.
 *
 * @param status  Any value; unknown values give "unknown status".
 * @return A static, NUL-terminated English string. Never NULL.
 */
RP_API const char *rp_status_string(rp_status_t status);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_STATUS_H */
