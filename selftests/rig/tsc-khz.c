// SPDX-License-Identifier: GPL-2.0
/*
 * tsc-khz: print this machine's TSC frequency in kHz (x86; nothing
 * elsewhere).  Under TCG a guest's TSC runs at the host's rate, so vm.sh
 * hands the value to the guest kernel (tsc_early_khz=): its own boot-time
 * calibration against the emulated PIT goes wrong when the host is busy
 * (another guest booting), and a guest whose clock runs three times too
 * fast makes every timeout and every measured time wrong.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	struct timespec nap = { 0, 100 * 1000 * 1000 };
	double khz[5];
	int i;

	for (i = 0; i < 5; i++) {
		double t0 = now_ns(), t1;
		uint64_t c0 = __rdtsc(), c1;

		nanosleep(&nap, NULL);
		c1 = __rdtsc();
		t1 = now_ns();
		khz[i] = (double)(c1 - c0) / (t1 - t0) * 1e6;
	}
	qsort(khz, 5, sizeof(khz[0]), cmp);
	if (khz[2] < 100000 || khz[2] > 20000000)
		return 1;
	printf("%.0f\n", khz[2]);
	return 0;
}
#else
int main(void)
{
	return 1;
}
#endif
