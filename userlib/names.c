// SPDX-License-Identifier: MIT
/*
 * libcollective: name tables, error strings and communicator ids.
 *
 * Nothing here touches the device, so all of it works (and is tested) on a
 * machine without the module.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/random.h>

#include "libcollective.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const dtype_names[COLL_DTYPE_MAX] = {
	[COLL_INT8] = "int8",	[COLL_UINT8] = "uint8",
	[COLL_INT32] = "int32",	[COLL_UINT32] = "uint32",
	[COLL_INT64] = "int64",	[COLL_UINT64] = "uint64",
	[COLL_FP16] = "half",	[COLL_BF16] = "bfloat16",
	[COLL_FP32] = "float",	[COLL_FP64] = "double",
};

static const unsigned char dtype_sizes[COLL_DTYPE_MAX] = {
	[COLL_INT8] = 1,	[COLL_UINT8] = 1,
	[COLL_INT32] = 4,	[COLL_UINT32] = 4,
	[COLL_INT64] = 8,	[COLL_UINT64] = 8,
	[COLL_FP16] = 2,	[COLL_BF16] = 2,
	[COLL_FP32] = 4,	[COLL_FP64] = 8,
};

static const char *const redop_names[COLL_REDOP_MAX] = {
	[COLL_SUM] = "sum", [COLL_PROD] = "prod", [COLL_MIN] = "min",
	[COLL_MAX] = "max", [COLL_AVG] = "avg",
};

static const char *const prim_names[COLL_PRIM_MAX] = {
	[COLL_ALLREDUCE] = "allreduce",
	[COLL_REDUCE] = "reduce",
	[COLL_REDUCESCATTER] = "reducescatter",
	[COLL_ALLGATHER] = "allgather",
	[COLL_BROADCAST] = "broadcast",
	[COLL_SCATTER] = "scatter",
	[COLL_GATHER] = "gather",
	[COLL_ALLTOALL] = "alltoall",
	[COLL_BARRIER] = "barrier",
};

static const char *const algo_names[COLL_ALGO_MAX] = {
	[COLL_ALGO_AUTO] = "auto", [COLL_ALGO_RING] = "ring",
	[COLL_ALGO_DIRECT] = "direct", [COLL_ALGO_NAIVE] = "naive",
	[COLL_ALGO_TREE] = "tree", [COLL_ALGO_HIER] = "hier",
};

struct alias {
	const char *name;
	int value;
};

static const struct alias dtype_aliases[] = {
	{ "char", COLL_INT8 },		{ "i8", COLL_INT8 },
	{ "u8", COLL_UINT8 },		{ "int", COLL_INT32 },
	{ "i32", COLL_INT32 },		{ "u32", COLL_UINT32 },
	{ "i64", COLL_INT64 },		{ "u64", COLL_UINT64 },
	{ "float16", COLL_FP16 },	{ "fp16", COLL_FP16 },
	{ "f16", COLL_FP16 },		{ "bf16", COLL_BF16 },
	{ "float32", COLL_FP32 },	{ "fp32", COLL_FP32 },
	{ "f32", COLL_FP32 },		{ "float64", COLL_FP64 },
	{ "fp64", COLL_FP64 },		{ "f64", COLL_FP64 },
};

static const struct alias prim_aliases[] = {
	{ "all_reduce", COLL_ALLREDUCE },
	{ "reduce_scatter", COLL_REDUCESCATTER },
	{ "all_gather", COLL_ALLGATHER },
	{ "bcast", COLL_BROADCAST },
	{ "all_to_all", COLL_ALLTOALL },
};

static const char *name_of(const char *const *tab, int n, int v)
{
	if (v < 0 || v >= n || !tab[v])
		return "unknown";
	return tab[v];
}

static int from_name(const char *const *tab, int n, const struct alias *al,
		     size_t nal, const char *name)
{
	int i;
	size_t j;

	if (!name)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (tab[i] && !strcasecmp(name, tab[i]))
			return i;
	for (j = 0; j < nal; j++)
		if (!strcasecmp(name, al[j].name))
			return al[j].value;
	return -EINVAL;
}

size_t coll_dtype_size(int dtype)
{
	if (dtype < 0 || dtype >= COLL_DTYPE_MAX)
		return 0;
	return dtype_sizes[dtype];
}

const char *coll_dtype_name(int dtype)
{
	return name_of(dtype_names, COLL_DTYPE_MAX, dtype);
}

const char *coll_redop_name(int redop)
{
	return name_of(redop_names, COLL_REDOP_MAX, redop);
}

const char *coll_prim_name(int prim)
{
	return name_of(prim_names, COLL_PRIM_MAX, prim);
}

const char *coll_algo_name(int algo)
{
	return name_of(algo_names, COLL_ALGO_MAX, algo);
}

int coll_dtype_from_name(const char *name)
{
	return from_name(dtype_names, COLL_DTYPE_MAX, dtype_aliases,
			 ARRAY_SIZE(dtype_aliases), name);
}

int coll_redop_from_name(const char *name)
{
	return from_name(redop_names, COLL_REDOP_MAX, NULL, 0, name);
}

int coll_prim_from_name(const char *name)
{
	return from_name(prim_names, COLL_PRIM_MAX, prim_aliases,
			 ARRAY_SIZE(prim_aliases), name);
}

int coll_algo_from_name(const char *name)
{
	return from_name(algo_names, COLL_ALGO_MAX, NULL, 0, name);
}

/*
 * The errnos <linux/collective.h> documents, worded for collectives.  Other
 * values fall back to strerror().
 */
const char *coll_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case ENOTTY:
		return "unknown ioctl: not a collective device, or module and library disagree on the ABI";
	case EINVAL:
		return "invalid argument (rank, count, root, buffer layout or reserved field)";
	case E2BIG:
		return "the module is older than the library and does not know a field it set";
	case EOPNOTSUPP:
		return "primitive, data type, reduction op, algorithm or flag not supported by this module";
	case ENOENT:
		return "not found: no collective device (is the module loaded?), or unknown communicator or request handle";
	case EFAULT:
		return "bad buffer address, or a buffer that cannot be pinned";
	case EOVERFLOW:
		return "count * element size * nranks too large";
	case ENOMEM:
		return "out of memory, or pinning the buffers would exceed RLIMIT_MEMLOCK";
	case EBUSY:
		return "rank already taken in this communicator";
	case EPROTO:
		return "ranks disagree on the collective's arguments";
	case ETIMEDOUT:
		return "timed out: not every rank joined (wrong id or world size?), or the wait timed out";
	case EAGAIN:
		return "request not complete yet";
	case ECONNRESET:
		return "a peer rank left the communicator";
	case EINTR:
		return "interrupted by a fatal signal";
	default:
		return strerror(err);
	}
}

int coll_get_unique_id(coll_id_t *id)
{
	size_t got = 0;
	ssize_t n;

	if (!id)
		return -EINVAL;
	while (got < sizeof(id->bytes)) {
		n = getrandom(id->bytes + got, sizeof(id->bytes) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOSYS)
				break;
			return -errno;
		}
		got += n;
	}
	if (got < sizeof(id->bytes)) {
		/* Kernel without getrandom(): fall back to the device. */
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		while (got < sizeof(id->bytes)) {
			n = read(fd, id->bytes + got, sizeof(id->bytes) - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				int err = n < 0 ? -errno : -EIO;

				close(fd);
				return err;
			}
			got += n;
		}
		close(fd);
	}
	return 0;
}

int coll_id_to_str(const coll_id_t *id, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (!id || !buf)
		return -EINVAL;
	if (len < 2 * COLL_ID_BYTES + 1)
		return -ERANGE;
	for (i = 0; i < COLL_ID_BYTES; i++) {
		buf[2 * i] = hex[id->bytes[i] >> 4];
		buf[2 * i + 1] = hex[id->bytes[i] & 15];
	}
	buf[2 * COLL_ID_BYTES] = '\0';
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly 32 hex digits, either case; anything else is -EINVAL. */
int coll_id_from_str(coll_id_t *id, const char *str)
{
	coll_id_t tmp;
	size_t i;

	if (!id || !str)
		return -EINVAL;
	for (i = 0; i < COLL_ID_BYTES; i++) {
		int hi = hexval(str[2 * i]), lo;

		if (hi < 0)
			return -EINVAL;
		lo = hexval(str[2 * i + 1]);
		if (lo < 0)
			return -EINVAL;
		tmp.bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	if (str[2 * COLL_ID_BYTES] != '\0')
		return -EINVAL;
	*id = tmp;
	return 0;
}
