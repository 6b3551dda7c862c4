/** @file rlock/export.h
 * @brief Symbol visibility: the shared library exports only what is marked
 * RLOCK_API. */
#ifndef RLOCK_EXPORT_H
#define RLOCK_EXPORT_H

#if defined(__GNUC__) && !defined(RLOCK_STATIC_BUILD)
/** Marks a function the library exports (default visibility with GCC and
 * Clang; empty when RLOCK_STATIC_BUILD is defined or on other compilers). */
#define RLOCK_API __attribute__((visibility("default")))
#else
#define RLOCK_API
#endif

#endif
