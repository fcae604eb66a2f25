//===- fork_join.c - the cost of an OpenMP fork and join ----------*- C -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The fork and join of libomp's team as autopar's programs pay it: an empty
// work-sharing loop of 2 iterations in a parallel region, idle threads
// spinning 1 ms (the runner's kmp_set_blocktime), each after GAP
// microseconds of sequential work on the calling thread. Prints the time per
// region beyond the sequential work, the mean over 20000 regions (after one
// warm-up pass). The grain of autopar-size-thread-teams is this cost times a
// core's FLOP rate.
//
//   clang-14 -O2 -fopenmp bench/fork_join.c -o /tmp/fork_join \
//       -L/usr/lib/llvm-22/lib -Wl,-rpath,/usr/lib/llvm-22/lib -lomp
//   /tmp/fork_join THREADS GAP
//
//===----------------------------------------------------------------------===//

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int omp_get_max_threads(void);
void omp_set_num_threads(int);
void kmp_set_blocktime(int);
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static volatile double sink;
static void spin_us(double us) {
  double end = now() + us * 1e-6;
  while (now() < end)
    sink += 1;
}
int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  double gap = argc > 2 ? atof(argv[2]) : 0;
  int reps = 20000;
  omp_set_num_threads(threads);
  kmp_set_blocktime(1);
  volatile int out[64];
  for (int warm = 0; warm < 2; ++warm) {
    double t0 = now();
    for (int r = 0; r < reps; ++r) {
      spin_us(gap);
#pragma omp parallel for schedule(static)
      for (int i = 0; i < 2; ++i)
        out[i * 16] = i;
    }
    double with = now() - t0;
    t0 = now();
    for (int r = 0; r < reps; ++r)
      spin_us(gap);
    double without = now() - t0;
    if (warm)
      printf("threads=%d gap=%.0fus fork/join=%.2f us\n", threads, gap,
             (with - without) / reps * 1e6);
  }
  return 0;
}
