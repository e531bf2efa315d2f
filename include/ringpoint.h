/**
 * @file ringpoint.h
 * @brief The ringpoint runtime: fault-tolerant data-parallel training on Slurm.
 *
 * Include this header only; it pulls in the parts under ringpoint/.
 * Every function returns @ref rp_status_t or cannot fail; every exported
 * name starts with rp_ (functions, types) or RP_ (macros, constants).
 */
#ifndef RINGPOINT_H
#define RINGPOINT_H

#include <ringpoint/version.h>
#include <ringpoint/api.h>
#include <ringpoint/status.h>
#include <ringpoint/types.h>
#include <ringpoint/context.h>
#include <ringpoint/coll.h>
#include <ringpoint/ckpt.h>
#include <ringpoint/cuda.h>
#include <ringpoint/subcomm.h>

#endif /* RINGPOINT_H */
