// SPDX-License-Identifier: GPL-2.0
/* Instantiates the tracepoints declared in coll_trace.h. */
#define CREATE_TRACE_POINTS
#include "coll_trace.h"
