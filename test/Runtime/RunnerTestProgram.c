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
 * at once: the profile's peak is at least 5096 bytes). AUTOPAR_TEST_MODE
 * selects a misuse instead, to check the error path.
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
  if (modeIs("noncontiguous")) {
    dw.strides[0] = 1;
    dw.strides[1] = 2;
  }
  autopar_rt_load_weight_f32(0, 2, &dw);
  autopar_rt_read_input_f32(0, 2, &dx);
  for (int i = 0; i < 6; ++i)
    y[i] = w[i] * x[i];
  if (modeIs("badaxes"))
    autopar_rt_all_reduce_f32(2, &dy, 2, &dsum, 0x3);
  if (modeIs("badswap"))
    autopar_rt_swap_grid_axes_f32(2, &dy, 2, &dsum, 0, 1);
  autopar_rt_all_reduce_f32(2, &dy, 2, &dsum, 0x1);
  autopar_rt_write_output_f32(0, 2, &dsum);

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
  autopar_rt_write_output_i64(1, 1, &dindices);
}
