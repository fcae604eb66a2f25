/*===- RuntimeABI.h - C ABI between device programs and the runtime -*- C
 *-*-===*
 *
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 *===----------------------------------------------------------------------===*
 *
 * The contract between a compiled device program (program.so, produced by
 * `autopar compile`) and autopar's runtime (libAutoparRuntime, linked into
 * the `autopar-runner` executable that `mpirun` starts on every rank).
 *
 * Program side: the program exports `void autopar_main(void)`. It is SPMD: one
 * program for every rank of the grid; rank-dependent behaviour goes through
 * the calls below.
 *
 * Buffers: every tensor argument is an MLIR *unranked memref* as lowered by
 * `convert-func-to-llvm` without the C interface: two arguments, the rank
 * (int64_t) and a pointer to the ranked descriptor
 *   { T *allocated; T *aligned; int64_t offset; int64_t sizes[rank];
 *     int64_t strides[rank]; }.
 * The runtime requires identity (row-major contiguous) layouts and aborts the
 * job with a message otherwise.
 *
 * Element types: each entry point exists once per element type, with the
 * suffix `_f32`, `_f64`, `_bf16`, `_f16`, `_i64`, `_i32`, `_i8`, `_u8` (MLIR's
 * `ui8`, ONNX's UINT8) or `_i1` (i1 is stored one byte per element, as LLVM
 * lays out i1 in memory). bf16 and f16 (2 bytes, weights and activations of
 * programs compiled with `--precision`) are summed by the reducing
 * collectives with a user-defined MPI operation: each pairwise sum is
 * computed in f32 and rounded to nearest even once.
 *
 * Grid axes: a list of grid axes [a0, a1, ...] (major first) is passed as one
 * int64_t whose hexadecimal digits are (axis + 1), most significant digit
 * first: [0] -> 0x1, [1] -> 0x2, [0, 1] -> 0x12, [1, 0] -> 0x21. The group of
 * a device for such a list is the set of devices that share its coordinates
 * on every other axis; its index in the group is its coordinates on
 * a0, a1, ... read row-major (c[a0] * size[a1] + c[a1] ...).
 *
 * Ranks map to grid coordinates row-major: the last grid axis varies
 * fastest. In a pipeline (autopar-runner --stage S --stages P) the ranks are
 * those of the program's own stage, numbered from 0 inside it; the inputs
 * and outputs the runner marks as boundary tensors move point to point
 * between stages through the same read_input/write_output calls (see
 * Runner.h, TensorFile).
 *
 * Errors: any failed check aborts the whole job (MPI_Abort) after printing
 * one line `autopar-runtime: rank R: <message>` on stderr.
 *
 *===----------------------------------------------------------------------===*/

#ifndef AUTOPAR_RUNTIME_RUNTIMEABI_H
#define AUTOPAR_RUNTIME_RUNTIMEABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Declares the per-element-type entry points. */
#define AUTOPAR_RT_DECLARE(SUFFIX)                                             \
  /* Fills the buffer with weight `id` of this rank                            \
   * (`<weights>/rank<R>/w<id>.bin`); its byte size must match. */             \
  void autopar_rt_load_weight_##SUFFIX(int64_t id, int64_t rank, void *desc);  \
  /* Fills the program's resident buffer of weight `id` (a global of the       \
   * program) on the first call of the process; later calls with the same      \
   * buffer return at once. The buffer counts as live memory from then on. */  \
  void autopar_rt_resident_weight_##SUFFIX(int64_t id, int64_t rank,           \
                                           void *desc);                        \
  /* Keeps the buffer's contents as the next value of weight `id` of this      \
   * rank (training state): later loads of `id` in this process read it        \
   * instead of the file. */                                                   \
  void autopar_rt_store_weight_##SUFFIX(int64_t id, int64_t rank, void *desc); \
  /* Fills the buffer with this device's block of runtime input `index`.       \
   * `layout` is a 1-D i64 buffer of 2R values for a rank-R input: its         \
   * global sizes, then per dimension the encoded grid axes that split it      \
   * (0: whole). Along a dimension split over axes A, the device holds block   \
   * group_index(A) of size global / group size (the buffer's size); only      \
   * that block is read from the file (raw row-major bytes of the global       \
   * tensor, at the offset the runner was given). */                           \
  void autopar_rt_read_input_##SUFFIX(int64_t index, int64_t rank, void *desc, \
                                      int64_t layoutRank, void *layout);       \
  /* Writes this device's block of output `index` (layout as for inputs)       \
   * at its place in the output file. Of the devices holding the same block    \
   * (they differ only on grid axes that split no dimension), the one whose    \
   * coordinates on those axes are all 0 writes; the others return. */         \
  void autopar_rt_write_output_##SUFFIX(int64_t index, int64_t rank,           \
                                        void *desc, int64_t layoutRank,        \
                                        void *layout);                         \
  /* out = sum of `in` over the group of `axes`; same shape. */                \
  void autopar_rt_all_reduce_##SUFFIX(                                         \
      int64_t inRank, void *in, int64_t outRank, void *out, int64_t axes);     \
  /* out = concatenation along `dim` of every group member's `in`, in group    \
   * index order. */                                                           \
  void autopar_rt_all_gather_##SUFFIX(int64_t inRank, void *in,                \
                                      int64_t outRank, void *out,              \
                                      int64_t axes, int64_t dim);              \
  /* out = block `groupIndex` along `dim` of the sum of `in` over the group.   \
   */                                                                          \
  void autopar_rt_reduce_scatter_##SUFFIX(int64_t inRank, void *in,            \
                                          int64_t outRank, void *out,          \
                                          int64_t axes, int64_t dim);          \
  /* Splits `in` into group-size blocks along `splitDim`, sends block j to     \
   * member j, and concatenates the received blocks along `concatDim` in       \
   * sender order. */                                                          \
  void autopar_rt_all_to_all_##SUFFIX(                                         \
      int64_t inRank, void *in, int64_t outRank, void *out, int64_t axes,      \
      int64_t splitDim, int64_t concatDim);                                    \
  /* Point to point: sends `in` to, and receives `out` from, the device whose  \
   * coordinates on grid axes `axisA` and `axisB` (plain axis numbers, same    \
   * size) are exchanged; a device whose two coordinates are equal copies.     \
   */                                                                          \
  void autopar_rt_swap_grid_axes_##SUFFIX(int64_t inRank, void *in,            \
                                          int64_t outRank, void *out,          \
                                          int64_t axisA, int64_t axisB);       \
  /* Pipeline stages: sends the whole buffer to the device of this rank in     \
   * stage `stage` with message tag `tag` (0..32767), without waiting for the  \
   * receiver (the runtime keeps a copy until the program returns). */         \
  void autopar_rt_send_##SUFFIX(int64_t stage, int64_t tag, int64_t rank,      \
                                void *desc);                                   \
  /* Fills the buffer with the tensor the device of this rank in stage         \
   * `stage` sends with `tag`; its byte size must match. */                    \
  void autopar_rt_recv_##SUFFIX(int64_t stage, int64_t tag, int64_t rank,      \
                                void *desc);

AUTOPAR_RT_DECLARE(f32)
AUTOPAR_RT_DECLARE(f64)
AUTOPAR_RT_DECLARE(bf16)
AUTOPAR_RT_DECLARE(f16)
AUTOPAR_RT_DECLARE(i64)
AUTOPAR_RT_DECLARE(i32)
AUTOPAR_RT_DECLARE(i8)
AUTOPAR_RT_DECLARE(u8)
AUTOPAR_RT_DECLARE(i1)

#undef AUTOPAR_RT_DECLARE

/* This device's index in its group for the grid axes `axes` (encoded as
 * above); 0 for an empty list. */
int64_t autopar_rt_group_index(int64_t axes);

/* The microbatch this call of `autopar_main` runs: k while autopar-runner
 * streams microbatch k of an inference pipeline through the program
 * (`--microbatches M`, k in [0, M)); 0 otherwise (a training stage's program
 * runs all its microbatches in one call). A random op of a pipeline's
 * microbatch program draws its microbatch's block of the whole batch's
 * values from it. */
int64_t autopar_rt_microbatch_index(void);

/* Buffer allocation: the program allocates and frees every buffer through
 * these (MLIR's finalize-memref-to-llvm with use-generic-functions), so that
 * the runtime can count live bytes (`autopar-runner --profile` reports the
 * peak). A block comes from the allocation functions only and is freed once;
 * alignments are powers of two. */
void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *ptr);

/* Aborts the job with `message` (a NUL-terminated string). */
void autopar_rt_fail(const char *message);

/* Requests the AMX tile state from Linux (arch_prctl ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA) once per process; aborts the job if it is refused.
 * Called at the entry of each function of a program compiled with isa=amx
 * that runs AMX tile instructions. */
void autopar_rt_require_amx(void);

/* Exported by the device program. */
void autopar_main(void);

#ifdef __cplusplus
}
#endif

#endif /* AUTOPAR_RUNTIME_RUNTIMEABI_H */
