/*===- RunnerTestProgram.c - Hand-written device program for tests -*- C -*-===*
 *
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * Stands in for a compiled program.so in runner-test.py: it calls the
 * runtime exactly as lowered MLIR does (unranked memrefs: rank + pointer to
 * the ranked descriptor), on a 1-D grid.
 *
 * Normal run: y = w * x (w: weight 0, 2x3 f32, one per rank; x: input 0,
 * 2x3 f32), output 0 = all_reduce(y) over axis 0, output 1 = all_gather of
 * [group index] (i64) along dim 0; a scratch buffer of 1000 bytes and one
 * of 4096 bytes aligned to 64 go through the runtime's allocator (both live
 * at once: the profile's peak is at least 5096 bytes). Mode `sharded`:
 * each rank reads only its row (block) of input 0, rows split over axis 0,
 * and writes it times (rank + 1) as its block of output 0. Other values of
 * AUTOPAR_TEST_MODE select a misuse, to check the error path.
 *
 *===----------------------------------------------------------------------===*/

#include "autopar/Runtime/RuntimeABI.h"

#include <stdlib.h>
#include <string.h>

/* Ranked descriptors as laid out by MLIR's LLVM lowering. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} MemRef2xF32;

typedef struct {
  int64_t *allocated;
  int64_t *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} MemRef1xI64;

static MemRef2xF32 memref2x3(float *data) {
  MemRef2xF32 m = {data, data, 0, {2, 3}, {3, 1}};
  return m;
}

static MemRef1xI64 memref1d(int64_t *data, int64_t size) {
  MemRef1xI64 m = {data, data, 0, {size}, {1}};
  return m;
}

/* The layout of read_input/write_output: global sizes, then the encoded
 * grid axes splitting each dimension. */
static MemRef1xI64 layout(int64_t *values, int64_t rank) {
  return memref1d(values, 2 * rank);
}

static int modeIs(const char *mode) {
  const char *value = getenv("AUTOPAR_TEST_MODE");
  return value && strcmp(value, mode) == 0;
}

void autopar_main(void) {
  float w[6], x[6], y[6], sum[6];
  MemRef2xF32 dw = memref2x3(w), dx = memref2x3(x), dy = memref2x3(y),
              dsum = memref2x3(sum);

  if (modeIs("fail"))
    autopar_rt_fail("custom failure 42");
  int64_t whole2x3[4] = {2, 3, 0, 0}, rows2x3[4] = {2, 3, 0x1, 0},
          whole2[2] = {2, 0};
  MemRef1xI64 lwhole = layout(whole2x3, 2), lrows = layout(rows2x3, 2),
              lwhole2 = layout(whole2, 1);
  if (modeIs("sharded")) {
    float row[3];
    MemRef2xF32 drow = {row, row, 0, {1, 3}, {3, 1}};
    autopar_rt_read_input_f32(0, 2, &drow, 1, &lrows);
    int64_t self = autopar_rt_group_index(0x1);
    for (int i = 0; i < 3; ++i)
      row[i] *= (float)(self + 1);
    autopar_rt_write_output_f32(0, 2, &drow, 1, &lrows);
    return;
  }
  if (modeIs("noncontiguous")) {
    dw.strides[0] = 1;
    dw.strides[1] = 2;
  }
  autopar_rt_load_weight_f32(0, 2, &dw);
  autopar_rt_read_input_f32(0, 2, &dx, 1, &lwhole);
  for (int i = 0; i < 6; ++i)
    y[i] = w[i] * x[i];
  if (modeIs("badaxes"))
    autopar_rt_all_reduce_f32(2, &dy, 2, &dsum, 0x3);
  if (modeIs("badswap"))
    autopar_rt_swap_grid_axes_f32(2, &dy, 2, &dsum, 0, 1);
  autopar_rt_all_reduce_f32(2, &dy, 2, &dsum, 0x1);
  autopar_rt_write_output_f32(0, 2, &dsum, 1, &lwhole);

  char *scratch = (char *)_mlir_memref_to_llvm_alloc(1000);
  char *aligned = (char *)_mlir_memref_to_llvm_aligned_alloc(64, 4096);
  if ((uintptr_t)aligned % 64 != 0 || (uintptr_t)scratch % 16 != 0)
    autopar_rt_fail("misaligned allocation");
  memset(scratch, 1, 1000);
  memset(aligned, 2, 4096);
  _mlir_memref_to_llvm_free(aligned);
  _mlir_memref_to_llvm_free(scratch);

  int64_t index = autopar_rt_group_index(0x1);
  int64_t indices[8] = {0};
  MemRef1xI64 din = memref1d(&index, 1);
  MemRef1xI64 dindices = memref1d(indices, modeIs("badshape") ? 3 : 2);
  autopar_rt_all_gather_i64(1, &din, 1, &dindices, 0x1, 0);
  autopar_rt_write_output_i64(1, 1, &dindices, 1, &lwhole2);
}
