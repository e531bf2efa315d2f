/*
 * Bounded string helpers.
 */
#include "util/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool rp__strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);

    if (size == 0) {
        return len == 0;
    }
    if (len >= size) {
        memcpy(dst, src, size - 1);
        dst[size - 1] = '\0';
        return false;
    }
    memcpy(dst, src, len + 1);
    return true;
}

void rp__errbuf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
