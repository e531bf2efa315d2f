/*
 * ringpoint-ckpt's commands, apart from main() so that a test can run them
 * in-process many times (tests/tools/ckpt_flip.c): ls, verify, show and
 * prune, each printing the verdicts of runtime/ckpt/catalog/validate.h.
 */
#ifndef RP_TOOLS_CKPT_TOOL_H
#define RP_TOOLS_CKPT_TOOL_H

#include <stdio.h>

/*
 * Run "ringpoint-ckpt @argv[0] ..." (@argv[0] is the command: ls, verify,
 * show, prune) with @argc arguments; answers go to @out, usage and I/O
 * errors to @err. Returns the exit status: 0 good, 1 a checkpoint is bad
 * or missing, 2 usage or I/O error. "--help" or "-h" anywhere prints the
 * command's usage to @out and returns 0.
 */
int rp__ckpt_tool(int argc, char **argv, FILE *out, FILE *err);

/* The whole tool's usage (every command), as --help prints it. */
void rp__ckpt_tool_usage(FILE *out);

#endif /* RP_TOOLS_CKPT_TOOL_H */
