/*
 * Status strings. Kept in the dependency-free utility library so that the
 * SPANK plugin, the tools and the runtime describe errors the same way.
 */
#include "ringpoint/status.h"

const char *rp_status_string(rp_status_t status)
{
    switch (status) {
    case RP_OK:                return "success";
    case RP_ERR_INVALID_ARG:   return "invalid argument";
    case RP_ERR_NO_MEMORY:     return "out of memory";
    case RP_ERR_NOT_SUPPORTED: return "not supported";
    case RP_ERR_BOOTSTRAP:     return "process manager (PMIx) error";
    case RP_ERR_TRANSPORT:     return "transport error";
    case RP_ERR_TIMEOUT:       return "timed out";
    case RP_ERR_PEER_FAILED:   return "peer failed";
    case RP_ERR_IO:            return "I/O error";
    case RP_ERR_CORRUPT:       return "data corrupt";
    case RP_ERR_NOT_FOUND:     return "not found";
    case RP_ERR_BUSY:          return "busy";
    case RP_ERR_STATE:         return "invalid state";
    case RP_ERR_MISMATCH:      return "arguments differ between ranks";
    case RP_ERR_LAST:          break;
    }
    return "unknown status";
}
