/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the modules of different hosts say to each other.  Every field is
 * little-endian; every frame starts with a magic and carries the version it
 * was written for; reserved fields are sent as 0 and checked.
 *
 * A connection between two hosts of a communicator (one per pair, the host
 * with the lower index connects) starts with an authentication that proves
 * knowledge of the communicator's id without sending it (rtrs-style private
 * data, HMAC-SHA256 over fresh nonces):
 *
 *   active  -> passive  HELLO   tag, hosts, layout, nonce A
 *   passive -> active   REPLY   status, nonce B, MAC("reply", HELLO, B)
 *   active  -> passive  PROOF   MAC("proof", HELLO, REPLY)
 *
 * The tag names the communicator (the first 16 bytes of HMAC(id, "tag")),
 * the layout is HMAC(id, the host tables) so that both sides know they
 * agree on them.  Over rdma_cm, HELLO is the connect request's private data
 * (at most 56 bytes) and REPLY the accept's; PROOF is the first message.
 * Nothing but PROOF is accepted before PROOF has been checked.
 *
 * Then frames: a struct coll_wire_hdr and @len bytes of payload.
 */
#ifndef COLL_WIRE_H
#define COLL_WIRE_H

#include <linux/types.h>

#define COLL_WIRE_MAGIC		0x6c6c6f43	/* "Coll" */
#define COLL_WIRE_VERSION	1
#define COLL_WIRE_TAG_BYTES	16
#define COLL_WIRE_NONCE_BYTES	16
#define COLL_WIRE_MAC_BYTES	32

/* coll_wire_hello.flags */
#define COLL_WIRE_F_RDMA	0x1	/* this is the RDMA connection */
#define COLL_WIRE_F_CHAN	0x0f00	/* RDMA: which queue pair (0: frames) */
#define COLL_WIRE_F_CHAN_SHIFT	8

struct coll_wire_hello {
	__le32 magic;
	__le16 version;
	__le16 flags;
	u8 tag[COLL_WIRE_TAG_BYTES];
	__le16 src_host;		/* the connecting host */
	__le16 dst_host;		/* the host it wants */
	__le32 layout;			/* first bytes of HMAC(id, tables) */
	u8 nonce[COLL_WIRE_NONCE_BYTES];
} __packed;				/* 48 bytes: fits rdma_cm's 56 */

/* coll_wire_reply.status */
enum {
	COLL_WIRE_OK = 0,
	COLL_WIRE_RETRY,		/* not ready yet: try again shortly */
	COLL_WIRE_REFUSED,		/* no such communicator, or taken */
};

struct coll_wire_reply {
	__le32 magic;
	__le16 version;
	__le16 status;
	u8 nonce[COLL_WIRE_NONCE_BYTES];
	u8 mac[COLL_WIRE_MAC_BYTES];
} __packed;				/* 56 bytes */

struct coll_wire_proof {
	__le32 magic;
	__le32 __reserved;
	u8 mac[COLL_WIRE_MAC_BYTES];
} __packed;

/* Frame types */
enum coll_msg_type {
	COLL_MSG_READY = 1,	/* seq, round: the sender may go on to @round */
	COLL_MSG_ABORT,		/* seq, arg = errno: the collective failed */
	COLL_MSG_READ_REQ,	/* TCP: send me these bytes of yours */
	COLL_MSG_READ_RESP,	/* TCP: here they are */
	COLL_MSG_PING,		/* liveness */
	COLL_MSG_BYE,		/* orderly close: a rank of the sender left */
	COLL_MSG_CREDIT,	/* RDMA: receive buffers given back */
	COLL_MSG_TYPE_MAX,
};

struct coll_wire_hdr {
	__le32 magic;
	u8 type;		/* enum coll_msg_type */
	u8 flags;		/* 0 */
	__le16 credits;		/* RDMA: receive buffers given back */
	__le32 len;		/* payload bytes after this header */
	__le32 round;
	__le64 seq;		/* the collective's sequence number */
	__le64 arg;		/* type-specific */
} __packed;			/* 32 bytes */

/*
 * READY's payload at round 0 (the agreement): what every rank must agree
 * on, then (RDMA) one export per local buffer the peer may read.  At any
 * round, eager data follows: the bytes of the segments the receiver needs
 * from the sender in that round, in the order both compute (coll_xhost.c).
 */
struct coll_wire_desc {
	__le32 prim;
	__le32 dtype;
	__le32 redop;
	__le32 root;
	__le32 algo;		/* as chosen: hosts must choose alike */
	__le32 flags;		/* bit 0: in place (AlltoAll) */
	__le64 count;
	__le64 chunk;		/* the plan's ring chunk (module parameters) */
	__le32 nexports;	/* struct coll_wire_export that follow */
	__le32 group;		/* the group's fingerprint (COLL_GROUP), or 0 */
} __packed;

struct coll_wire_export {	/* a grant: the peer may read these bytes */
	__le32 rank;		/* a rank of the sender */
	__le32 buf;		/* enum coll_sbuf */
	__le32 rkey;
	__le32 __reserved;
	__le64 off;		/* bytes [off, off + len) of that buffer */
	__le64 len;
	__le64 addr;		/* the address of byte off, for RDMA READ */
} __packed;

/* READ_REQ's payload (TCP): arg of the header is the requester's cookie. */
struct coll_wire_read {
	__le32 rank;		/* a rank of the receiver */
	__le32 buf;
	__le64 off;		/* bytes into that rank's buffer */
	__le64 len;
} __packed;

/* Frames carry at most this much payload (eager data, exports, reads). */
#define COLL_WIRE_MAX_PAYLOAD	0x100000U

#endif /* COLL_WIRE_H */
