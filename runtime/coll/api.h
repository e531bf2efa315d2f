/*
 * What the public collectives' files (api.c, api_exchange.c) share: the
 * common argument checks and the hand-over to a backend (backend.h).
 */
#ifndef RP_COLL_API_H
#define RP_COLL_API_H

#include <stdbool.h>
#include <stddef.h>

#include "ringpoint/coll.h"
#include "coll/dispatch.h"

/* Do [a, a+alen) and [b, b+blen) share a byte? */
bool rp__api_overlap(const void *a, size_t alen, const void *b, size_t blen);

/* @ctx and @dtype valid? Logs under @what. */
rp_status_t rp__api_check(const char *what, rp_context_h ctx,
                          rp_dtype_t dtype);

/* Run @a on its backend, after the non-blocking calls still outstanding. */
rp_status_t rp__api_blocking(const char *what, rp_context_h ctx,
                             const rp__coll_args_t *a);

/* Start @a on its backend; @status: its argument check's (not RP_OK:
 * returned, with *@req NULL). */
rp_status_t rp__api_start(const char *what, rp_context_h ctx,
                          const rp__coll_args_t *a, rp_status_t status,
                          rp_request_h *req);

#endif /* RP_COLL_API_H */
