/*
 * Moved to util/step_marker.h: the plugin shares only util/ with the
 * runtime (doc/architecture.md). This forward stays until
 * runtime/ckpt/api.c includes the new path.
 */
#include "util/step_marker.h"
