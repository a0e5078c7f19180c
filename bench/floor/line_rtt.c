/*
 * line_rtt: the round trip of one cache line between two CPUs (default 0 and 1), in ns: two
 * threads pinned one to each CPU hand a counter back and forth through two lines, 300000 times.
 * The floor of every small collective between two ranks on those CPUs.
 *
 * On a virtual machine the hypervisor may place the two virtual CPUs on cores that share a cache
 * or on cores that do not, and move them between runs: on the 2-core VM this reads ~110-125 ns or
 * ~370-430 ns from one run to the next, and every small collective (jccl's and Open MPI's alike)
 * takes twice as long in the second case. bench/two-core-vs-mpi.sh runs it around every run so that
 * only runs at the same placement are compared.
 *
 *   cc -O2 -pthread -o line_rtt line_rtt.c && ./line_rtt [cpuA cpuB]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 300000L

static _Alignas(128) atomic_long ping;
static _Alignas(128) atomic_long pong;
static int cpu_b = 1;

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0) {
        fprintf(stderr, "line_rtt: cannot pin to CPU %d\n", cpu);
        exit(1);
    }
}

static void *peer(void *unused) {
    (void) unused;
    pin(cpu_b);
    for (long i = 1; i <= ROUNDS; i++) {
        while (atomic_load_explicit(&ping, memory_order_acquire) != i) {
            __builtin_ia32_pause();
        }
        atomic_store_explicit(&pong, i, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int cpu_a = argc > 2 ? atoi(argv[1]) : 0;
    cpu_b = argc > 2 ? atoi(argv[2]) : 1;
    pin(cpu_a);
    pthread_t t;
    pthread_create(&t, NULL, peer, NULL);
    struct timespec s, e;
    clock_gettime(CLOCK_MONOTONIC, &s);
    for (long i = 1; i <= ROUNDS; i++) {
        atomic_store_explicit(&ping, i, memory_order_release);
        while (atomic_load_explicit(&pong, memory_order_acquire) != i) {
            __builtin_ia32_pause();
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &e);
    pthread_join(t, NULL);
    printf("%.1f\n", ((e.tv_sec - s.tv_sec) * 1e9 + (e.tv_nsec - s.tv_nsec)) / ROUNDS);
    return 0;
}
