/*
 * One candidate checkpoint for a restore (reader_plan.c): the read plan
 * against the registered table, and this rank's stripe read.
 */
#ifndef RP_CKPT_READER_PLAN_H
#define RP_CKPT_READER_PLAN_H

#include "ckpt/read/reader_int.h"

/* Read this rank's part of candidate @r->name. Returns a verdict. */
int rp__rd_read(rp__rd_t *r);

#endif /* RP_CKPT_READER_PLAN_H */
