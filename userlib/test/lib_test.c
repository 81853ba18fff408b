// SPDX-License-Identifier: MIT
/*
 * lib_test: what libcollective does without a module: name tables, ids,
 * error strings, argument checks, and the error paths of a missing device
 * (ENOENT from open) and of a file that is not the device (ENOTTY from the
 * ioctl).  TAP output; exit status 1 if anything failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcollective.h"

static int ntest, nfail;

#define CHECK(cond) do {						\
	ntest++;							\
	if (cond) {							\
		printf("ok %d - %s\n", ntest, #cond);			\
	} else {							\
		printf("not ok %d - %s (line %d)\n", ntest, #cond, __LINE__); \
		nfail++;						\
	}								\
} while (0)

#define CHECK_EQ(a, b) do {						\
	long long _a = (long long)(a), _b = (long long)(b);		\
	ntest++;							\
	if (_a == _b) {							\
		printf("ok %d - %s == %s\n", ntest, #a, #b);		\
	} else {							\
		printf("not ok %d - %s == %s: %lld != %lld (line %d)\n", \
		       ntest, #a, #b, _a, _b, __LINE__);		\
		nfail++;						\
	}								\
} while (0)

static void test_names(void)
{
	int i;

	for (i = 0; i < COLL_DTYPE_MAX; i++)
		CHECK_EQ(coll_dtype_from_name(coll_dtype_name(i)), i);
	for (i = 0; i < COLL_REDOP_MAX; i++)
		CHECK_EQ(coll_redop_from_name(coll_redop_name(i)), i);
	for (i = 0; i < COLL_PRIM_MAX; i++)
		CHECK_EQ(coll_prim_from_name(coll_prim_name(i)), i);
	for (i = 0; i < COLL_ALGO_MAX; i++)
		CHECK_EQ(coll_algo_from_name(coll_algo_name(i)), i);

	CHECK(!strcmp(coll_dtype_name(COLL_FP32), "float"));
	CHECK(!strcmp(coll_dtype_name(COLL_BF16), "bfloat16"));
	CHECK(!strcmp(coll_dtype_name(COLL_FP16), "half"));
	CHECK(!strcmp(coll_prim_name(COLL_REDUCESCATTER), "reducescatter"));
	CHECK(!strcmp(coll_algo_name(COLL_ALGO_NAIVE), "naive"));
	CHECK(!strcmp(coll_redop_name(COLL_AVG), "avg"));
	CHECK(!strcmp(coll_dtype_name(COLL_DTYPE_MAX), "unknown"));
	CHECK(!strcmp(coll_dtype_name(-1), "unknown"));
	CHECK(!strcmp(coll_prim_name(COLL_PRIM_MAX), "unknown"));

	CHECK_EQ(coll_dtype_from_name("FLOAT"), COLL_FP32);
	CHECK_EQ(coll_dtype_from_name("fp16"), COLL_FP16);
	CHECK_EQ(coll_dtype_from_name("bf16"), COLL_BF16);
	CHECK_EQ(coll_prim_from_name("all_reduce"), COLL_ALLREDUCE);
	CHECK_EQ(coll_prim_from_name("bcast"), COLL_BROADCAST);
	CHECK_EQ(coll_dtype_from_name("unknown"), -EINVAL);
	CHECK_EQ(coll_dtype_from_name(""), -EINVAL);
	CHECK_EQ(coll_dtype_from_name(NULL), -EINVAL);
	CHECK_EQ(coll_redop_from_name("mean"), -EINVAL);
	CHECK_EQ(coll_algo_from_name("tree"), COLL_ALGO_TREE);
	CHECK_EQ(coll_algo_from_name("hier"), COLL_ALGO_HIER);
	CHECK_EQ(coll_algo_from_name("butterfly"), -EINVAL);
	CHECK(!strcmp(coll_algo_name(COLL_ALGO_HIER), "hier"));

	CHECK_EQ(coll_dtype_size(COLL_INT8), 1);
	CHECK_EQ(coll_dtype_size(COLL_FP16), 2);
	CHECK_EQ(coll_dtype_size(COLL_BF16), 2);
	CHECK_EQ(coll_dtype_size(COLL_UINT32), 4);
	CHECK_EQ(coll_dtype_size(COLL_FP64), 8);
	CHECK_EQ(coll_dtype_size(COLL_DTYPE_MAX), 0);
	CHECK_EQ(coll_dtype_size(-3), 0);
}

static void test_ids(void)
{
	coll_id_t a, b;
	char s[33], small[32];

	CHECK_EQ(coll_get_unique_id(&a), 0);
	CHECK_EQ(coll_get_unique_id(&b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) != 0);
	CHECK_EQ(coll_id_to_str(&a, s, sizeof(s)), 0);
	CHECK_EQ(strlen(s), 32);
	CHECK_EQ(coll_id_from_str(&b, s), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	CHECK_EQ(coll_id_to_str(&a, small, sizeof(small)), -ERANGE);
	CHECK_EQ(coll_id_from_str(&b, "00112233445566778899AABBCCDDEEFF"), 0);
	CHECK_EQ(b.bytes[0], 0x00);
	CHECK_EQ(b.bytes[15], 0xff);
	CHECK_EQ(coll_id_to_str(&b, s, sizeof(s)), 0);
	CHECK(!strcmp(s, "00112233445566778899aabbccddeeff"));
	CHECK_EQ(coll_id_from_str(&b, "00112233445566778899aabbccddeef"), -EINVAL);
	CHECK_EQ(coll_id_from_str(&b, "00112233445566778899aabbccddeeff0"), -EINVAL);
	CHECK_EQ(coll_id_from_str(&b, "00112233445566778899aabbccddeefg"), -EINVAL);
	CHECK_EQ(coll_id_from_str(&b, ""), -EINVAL);
	CHECK_EQ(coll_id_from_str(&b, NULL), -EINVAL);
}

static void test_strerror(void)
{
	CHECK(strstr(coll_strerror(-EPROTO), "disagree") != NULL);
	CHECK(strstr(coll_strerror(EPROTO), "disagree") != NULL);
	CHECK(strstr(coll_strerror(-ECONNRESET), "peer rank left") != NULL);
	CHECK(strstr(coll_strerror(-EBUSY), "rank already taken") != NULL);
	CHECK(strstr(coll_strerror(-ENOENT), "module loaded") != NULL);
	CHECK(!strcmp(coll_strerror(0), "success"));
	CHECK(!strcmp(coll_strerror(-EACCES), strerror(EACCES)));
}

static void test_no_device(void)
{
	coll_comm_t *c = (coll_comm_t *)&c;
	struct coll_info info;
	coll_id_t id;
	coll_req_t req = { 0 };

	memset(&id, 0, sizeof(id));
	CHECK_EQ(coll_comm_init(&c, 0, 0, &id, 0), -EINVAL);
	CHECK(c == NULL);
	CHECK_EQ(coll_comm_init(&c, 2, 2, &id, 0), -EINVAL);
	CHECK_EQ(coll_comm_init(&c, 2, -1, &id, 0), -EINVAL);
	CHECK_EQ(coll_comm_init(&c, 2, 0, NULL, 0), -EINVAL);
	CHECK_EQ(coll_comm_init(NULL, 2, 0, &id, 0), -EINVAL);

	setenv("COLL_DEVICE", "/nonexistent/collective", 1);
	errno = 1234;
	CHECK_EQ(coll_comm_init(&c, 1, 0, &id, 0), -ENOENT);
	CHECK_EQ(errno, 1234);
	CHECK(c == NULL);
	CHECK_EQ(coll_get_info(&info), -ENOENT);

	/* Not the collective device: the ioctl fails with ENOTTY. */
	setenv("COLL_DEVICE", "/dev/null", 1);
	CHECK_EQ(coll_comm_init(&c, 1, 0, &id, 0), -ENOTTY);
	CHECK(c == NULL);
	CHECK_EQ(coll_get_info(&info), -ENOTTY);
	CHECK_EQ(coll_get_info(NULL), -EINVAL);

	CHECK_EQ(coll_comm_destroy(NULL), 0);
	CHECK_EQ(coll_comm_rank(NULL), -EINVAL);
	CHECK_EQ(coll_comm_size(NULL), -EINVAL);
	CHECK_EQ(coll_comm_fd(NULL), -EINVAL);
	CHECK_EQ(coll_comm_set_algo(NULL, 0), -EINVAL);
	CHECK_EQ(coll_wait(NULL, 0), -EINVAL);
	CHECK_EQ(coll_wait(&req, 0), -EINVAL);
	CHECK_EQ(coll_test(&req), -EINVAL);
	CHECK_EQ(coll_allreduce(NULL, NULL, NULL, 1, COLL_FP32, COLL_SUM), -EINVAL);
	CHECK_EQ(coll_barrier(NULL), -EINVAL);
}

static void test_env(void)
{
	coll_comm_t *c = NULL;

	setenv("COLL_DEVICE", "/nonexistent/collective", 1);
	unsetenv("RANK");
	unsetenv("WORLD_SIZE");
	unsetenv("COLL_ID");
	unsetenv("COLL_TIMEOUT_MS");
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);
	setenv("WORLD_SIZE", "4", 1);
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);
	setenv("RANK", "4", 1);
	setenv("COLL_ID", "00112233445566778899aabbccddeeff", 1);
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);	/* rank >= size */
	setenv("RANK", "3x", 1);
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);
	setenv("RANK", "3", 1);
	setenv("COLL_ID", "0011", 1);
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);
	setenv("COLL_ID", "00112233445566778899aabbccddeeff", 1);
	setenv("COLL_TIMEOUT_MS", "-5", 1);
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);
	setenv("COLL_TIMEOUT_MS", "1000", 1);
	CHECK_EQ(coll_comm_init_env(&c), -ENOENT);	/* got as far as open() */
	setenv("WORLD_SIZE", "0", 1);
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);
	setenv("WORLD_SIZE", "100000", 1);
	CHECK_EQ(coll_comm_init_env(&c), -EINVAL);
	CHECK(c == NULL);
}

int main(void)
{
	test_names();
	test_ids();
	test_strerror();
	test_no_device();
	test_env();
	printf("1..%d\n", ntest);
	if (nfail)
		printf("# %d of %d failed\n", nfail, ntest);
	return nfail ? 1 : 0;
}
