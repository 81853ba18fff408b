/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel's pure files (kmod/coll_sched.c) take from the kernel,
 * for building them natively: forced in with -include by the Makefile.
 */
#ifndef COLL_NATIVE_H
#define COLL_NATIVE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define check_mul_overflow(a, b, d) __builtin_mul_overflow(a, b, d)
#define check_add_overflow(a, b, d) __builtin_add_overflow(a, b, d)
#define div64_u64(a, b) ((a) / (b))

#endif /* COLL_NATIVE_H */
