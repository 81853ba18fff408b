/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The vector loop shared by the reduction templates (coll_reduce_fpt.h,
 * coll_reduce_intv.h).  COLL_VEC_LOOP4() runs d[i] = COLL_VOP(x[i], y[i])
 * over the whole vectors of type coll_vt (COLL_VEC_LANES lanes) that fit
 * in n, leaving i at the first element it did not do, for the caller's
 * scalar tail.  The includer defines coll_vt, COLL_VEC_LANES and, around
 * each use, COLL_VOP(u, v) (named, not passed, so that no macro argument
 * is expanded twice).
 *
 * Four vectors a turn, all eight loads before the four stores: one vector a
 * turn kept a single add in flight behind a load and a store, and the
 * compiler may not reorder across the stores itself since d may alias x.
 * It may only alias exactly (d == x), so storing d[i .. i + 4L) after
 * loading x[i .. i + 4L) is safe.  Loads and stores are unaligned
 * (memcpy() of a vector, which GCC turns into vmovdqu/movups).  A turn of
 * one vector then takes what is left of the whole vectors.
 */
#ifndef COLL_REDUCE_VEC_H
#define COLL_REDUCE_VEC_H

#define COLL_VLD(V, p)		({ V __vl; memcpy(&__vl, (p), sizeof(__vl)); __vl; })
#define COLL_VST(p, V, val)	do { V __vs = (val); memcpy((p), &__vs, sizeof(__vs)); } while (0)

#define COLL_VL			COLL_VEC_LANES
#define COLL_VEC_LOOP4()						\
	do {								\
		for (; i + 4 * COLL_VL <= n; i += 4 * COLL_VL) {	\
			coll_vt u0 = COLL_VLD(coll_vt, x + i);		\
			coll_vt u1 = COLL_VLD(coll_vt, x + i + COLL_VL); \
			coll_vt u2 = COLL_VLD(coll_vt, x + i + 2 * COLL_VL); \
			coll_vt u3 = COLL_VLD(coll_vt, x + i + 3 * COLL_VL); \
			coll_vt v0 = COLL_VLD(coll_vt, y + i);		\
			coll_vt v1 = COLL_VLD(coll_vt, y + i + COLL_VL); \
			coll_vt v2 = COLL_VLD(coll_vt, y + i + 2 * COLL_VL); \
			coll_vt v3 = COLL_VLD(coll_vt, y + i + 3 * COLL_VL); \
									\
			u0 = COLL_VOP(u0, v0);				\
			u1 = COLL_VOP(u1, v1);				\
			u2 = COLL_VOP(u2, v2);				\
			u3 = COLL_VOP(u3, v3);				\
			COLL_VST(d + i, coll_vt, u0);			\
			COLL_VST(d + i + COLL_VL, coll_vt, u1);		\
			COLL_VST(d + i + 2 * COLL_VL, coll_vt, u2);	\
			COLL_VST(d + i + 3 * COLL_VL, coll_vt, u3);	\
		}							\
		for (; i + COLL_VL <= n; i += COLL_VL)			\
			COLL_VST(d + i, coll_vt,			\
				 COLL_VOP(COLL_VLD(coll_vt, x + i),	\
					  COLL_VLD(coll_vt, y + i)));	\
	} while (0)

#endif /* COLL_REDUCE_VEC_H */
