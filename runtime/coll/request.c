/*
 * Requests (request.h): the public test and wait, which reach the backend
 * only through the request's ops table.
 */
#include "config.h"

#include "coll/request.h"
#include "util/log.h"

static rp_status_t rp_finish(rp_request_h *req_p)
{
    struct rp_request *req = *req_p;
    rp_status_t status = req->status;

    req->ops->release(req);
    *req_p = NULL;
    return status;
}

rp_status_t rp_test(rp_request_h *req_p, int *done)
{
    if (req_p == NULL || done == NULL) {
        rp_error("rp_test: NULL %s", req_p == NULL ? "request pointer"
                                                   : "done pointer");
        return RP_ERR_INVALID_ARG;
    }
    if (*req_p == NULL) {
        *done = 1; /* like a completed request */
        return RP_OK;
    }
    if (!(*req_p)->ops->test(*req_p)) {
        *done = 0;
        return RP_OK;
    }
    *done = 1;
    return rp_finish(req_p);
}

rp_status_t rp_wait(rp_request_h *req_p)
{
    if (req_p == NULL) {
        rp_error("rp_wait: NULL request pointer");
        return RP_ERR_INVALID_ARG;
    }
    if (*req_p == NULL) {
        return RP_OK;
    }
    (void)(*req_p)->ops->wait(*req_p);
    return rp_finish(req_p);
}
