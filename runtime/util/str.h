/*
 * Bounded string copy. strncpy neither guarantees termination nor says
 * whether it truncated; every fixed-size name in ringpoint goes through here.
 */
#ifndef RP_UTIL_STR_H
#define RP_UTIL_STR_H

#include <stdbool.h>
#include <stddef.h>

/* Copy @src into @dst of @size bytes, always NUL-terminated (if size > 0).
 * Returns false if @src did not fit and was truncated. */
bool rp__strlcpy(char *dst, const char *src, size_t size);

/* Format a message into a caller's error buffer; NULL or empty buffers are
 * allowed (the caller did not want the reason). */
void rp__errbuf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* RP_UTIL_STR_H */
