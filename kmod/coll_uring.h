/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The io_uring command's definitions, wherever this kernel keeps them:
 * <linux/io_uring/cmd.h> from 6.7 (Kbuild sets COLL_HAVE_IO_URING_CMD_H),
 * <linux/io_uring.h> before.  For coll_uring.c and coll_eager.c.
 */
#ifndef COLL_URING_H
#define COLL_URING_H

#ifdef COLL_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

#endif /* COLL_URING_H */
