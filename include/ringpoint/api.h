/**
 * @file ringpoint/api.h
 * @brief Symbol visibility for the public API.
 *
 * libringpoint is compiled with -fvisibility=hidden; only declarations marked
 * RP_API are exported, so internal helpers can never become ABI by accident.
 */
#ifndef RINGPOINT_API_H
#define RINGPOINT_API_H

#if defined(__GNUC__)
/** Marks a symbol as part of the exported, stable interface. */
#define RP_API __attribute__((visibility("default")))
#else
#define RP_API
#endif

#endif /* RINGPOINT_API_H */
