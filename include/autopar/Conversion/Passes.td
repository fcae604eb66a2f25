//===- Passes.td - autopar lowering passes -----------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_CONVERSION_PASSES_TD
#define AUTOPAR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerProgramToRuntimePass
    : Pass<"autopar-lower-program-to-runtime", "mlir::ModuleOp"> {
  let summary = "turn a device program into `autopar_main` calling the runtime";
  let description = [{
    Input contract: a device program as produced by `autopar-partition`: a
    module with one `shard.grid` and a `func.func @main` whose arguments and
    results have the global (static) types, whose body holds autopar ops on
    local static tensor types, `autopar.weight` ops with local types, the
    collectives `shard.all_reduce` (sum), `shard.all_gather`,
    `shard.all_slice`, `shard.reduce_scatter` (sum), `shard.all_to_all` and
    `autopar.to_partial`. Element types: f32, f64, i64, i32, i8, i1.

    Output: `@main` becomes `func.func @autopar_main()` (no arguments or
    results, the entry point of the runtime ABI, see
    `autopar/Runtime/RuntimeABI.h`) and everything that touches data outside
    the device becomes a call of a private runtime declaration taking unranked
    memrefs (which lower to the ABI's `(int64_t rank, void *desc)` pairs):

    - argument `i`: `memref.alloc` of its local type +
      `autopar_rt_read_input_<T>(i, buf, layout)` +
      `bufferization.to_tensor restrict`, where `layout` is an i64 constant:
      the global sizes, then the encoded grid axes splitting each dimension
      (from the argument's `autopar.sharding` and `autopar.global_type`,
      which the partitioner sets on split arguments; 0 when whole), so that
      each device reads only its block;
    - result `j`: `autopar_rt_write_output_<T>(j, buf, layout)` before the
      return (layout from the result attributes), each block written once;
    - `autopar.weight`, where `id` numbers weight names in order of first
      appearance (`getProgramWeightOrder`,
      autopar/Conversion/ProgramToRuntime.h):
      - a weight the program never stores (no `autopar.assign`; every
        weight of an inference program) is resident: one uninitialized,
        64-byte aligned private `memref.global @__autopar_weight_<id>`,
        filled by `autopar_rt_resident_weight_<T>(id, buf)` at the start of
        `autopar_main` (the runtime reads the file on the first step of the
        process only) and read through one `bufferization.to_tensor
        restrict` (not writable: bufferization copies before any write), so
        that a step neither reads weight files nor maps fresh pages;
      - a weight the program stores (training state) keeps a fresh buffer
        per step: `memref.alloc` + `autopar_rt_load_weight_<T>(id, buf)`;
    - `shard.all_reduce`, `shard.all_gather`, `shard.reduce_scatter`,
      `shard.all_to_all`: the matching runtime collective writing a buffer
      allocated by the caller; grid axes are passed encoded
      (`encodeGridAxes`);
    - `autopar.swap_grid_axes`: `autopar_rt_swap_grid_axes_<T>(in, out, a, b)`
      with the two grid axes as plain numbers, into a caller-allocated buffer;
    - `shard.all_slice`: `tensor.extract_slice` at offset
      `autopar_rt_group_index(axes) * localSize` along the slice axis;
    - `autopar.to_partial`: `arith.select` of the value on the device with
      group index 0 and zeros elsewhere.

    The `shard.grid` is erased. Other autopar compute ops are left for
    `autopar-convert-to-linalg`. Dynamic shapes, unsupported element types,
    non-sum reductions, unknown ops of the shard dialect and argument or
    result attributes whose global type and sharding do not match the local
    type are errors.

    Before:
    ```mlir
    shard.grid @grid(shape = 2)
    func.func @main(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
      %s = shard.all_slice %x on @grid grid_axes = [0] slice_axis = 0
          : tensor<8x4xf32> -> tensor<4x4xf32>
      %r = shard.all_reduce %s on @grid grid_axes = [0]
          : tensor<4x4xf32> -> tensor<4x4xf32>
      return %r : tensor<4x4xf32>
    }
    ```
    After:
    ```mlir
    func.func private @autopar_rt_read_input_f32(i64, memref<*xf32>, memref<*xi64>)
    ...
    func.func @autopar_main() {
      %buf = memref.alloc() : memref<8x4xf32>
      %u = memref.cast %buf : memref<8x4xf32> to memref<*xf32>
      %l = ... arith.constant dense<[8, 4, 0, 0]> : tensor<4xi64>, as memref<*xi64>
      call @autopar_rt_read_input_f32(%c0, %u, %l) : (i64, memref<*xf32>, memref<*xi64>) -> ()
      %x = bufferization.to_tensor %buf restrict : memref<8x4xf32> to tensor<8x4xf32>
      %g = call @autopar_rt_group_index(%c1) : (i64) -> i64
      %off = arith.index_cast ... : i64 to index   // %g * 4
      %s = tensor.extract_slice %x[%off, 0] [4, 4] [1, 1] : tensor<8x4xf32> to tensor<4x4xf32>
      %in = bufferization.to_buffer %s read_only : tensor<4x4xf32> to memref<4x4xf32>
      %out = memref.alloc() : memref<4x4xf32>
      call @autopar_rt_all_reduce_f32(%inu, %outu, %c1) : (memref<*xf32>, memref<*xf32>, i64) -> ()
      %r = bufferization.to_tensor %out restrict : memref<4x4xf32> to tensor<4x4xf32>
      ...
      call @autopar_rt_write_output_f32(%c0, %ru, %rl) : (i64, memref<*xf32>, memref<*xi64>) -> ()
      return
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"main\"",
           "name of the device program's function">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::func::FuncDialect",
    "mlir::memref::MemRefDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numRuntimeCalls", "runtime-calls",
              "number of runtime calls emitted">,
  ];
}

def ConvertAutoparToLinalgPass
    : Pass<"autopar-convert-to-linalg", "mlir::func::FuncOp"> {
  let summary = "lower autopar compute ops to linalg, tensor, arith and math";
  let description = [{
    Input contract: a function of autopar compute ops on static tensor types
    (typically after `autopar-lower-program-to-runtime`), with the attributes
    the importer normalizes (non-negative axes, explicit pads, sorted
    reduction axes). Output: the same computation in `linalg` on tensors,
    `tensor`, `arith`, `math` and `cf.assert`, ready for One-Shot Bufferize:

    - contractions: `autopar.matmul` (numpy semantics: 1-D operands promoted,
      batch dimensions broadcast; loops (batch..., m, k, n) so that the
      lowered nest has a contiguous, vectorizable innermost loop),
      `autopar.gemm` (loops m, k, n accumulating `alpha * op(A) * op(B)` into
      `beta * C` broadcast to `M x N`, or zeros) and `autopar.einsum` (one
      loop per letter, summed letters before the last output letter; size-1
      letters broadcast, repeated letters read diagonals): one
      `linalg.generic` each;
    - elementwise ops (`add sub mul div pow and equal less greater where`
      with multidirectional broadcasting through the indexing maps; `abs neg
      sqrt reciprocal exp log sigmoid tanh erf not relu leaky_relu gelu clip
      cast`): one parallel `linalg.generic` computing the ONNX formula with
      arith and math ops. Comparisons yield i1. Integer division truncates
      toward zero; integer `pow` is computed in f64; `cast` truncates floats
      toward zero and maps to bool as `x != 0`;
    - `autopar.softmax` / `log_softmax`: max, `exp(x - max)`, sum and a
      division (or `x - max - log(sum)`) along the axis; `autopar.layer_norm`:
      mean, centered values, variance, then
      `d * (1 / sqrt(var + epsilon)) * scale + bias`; `autopar.batch_norm`:
      one generic reading the per-channel vectors;
    - `autopar.reduce_sum` / `reduce_mean` / `reduce_max`: a reduction
      generic into a filled init (0, or -inf / the integer minimum), then a
      division by the count for the mean and a `tensor.expand_shape` for
      `keepdims`;
    - `autopar.transpose`: `linalg.transpose`; `autopar.reshape`:
      `tensor.collapse_shape` / `tensor.expand_shape` (through 1-D when the
      shapes do not nest); `autopar.expand`: a broadcasting generic;
      `autopar.concat`: `tensor.insert_slice`s into a `tensor.empty`;
      `autopar.split` and positive-step `autopar.slice`:
      `tensor.extract_slice`; a negative-step slice: a generic reading
      `start + step * i`;
    - `autopar.gather`: a generic extracting from the data at the wrapped
      index; an index outside `[-size, size)` fails a `cf.assert` whose
      message names the node (see `autopar-lower-asserts-to-runtime`) and is
      clamped so that nothing is read out of bounds;
    - `autopar.conv`: zero `tensor.pad`, groups made explicit by
      `tensor.expand_shape`, one generic (loops n, g, m, c, k..., o...)
      accumulating into the bias, collapsed back; a depthwise convolution
      (one group and one output channel per input channel) with a window of
      at most 64 positions is instead one elementwise generic over one
      strided `tensor.extract_slice` view of the padded input per window
      position and the weight's column for it, so that it vectorizes along
      the output's last dimension (2-D, unit strides, output rows narrower
      than 8: over the flattened padded plane instead, position
      `y * paddedWidth + x` rounded up to a multiple of 16, each view one
      contiguous run per channel, the padding a row or two taller so that
      the last view stays inside, the output a view of the result's first
      H rows and W columns); `autopar.max_pool`: padding with the
      lowest value (padding never wins) and a window reduction (the same
      per-position views for windows of at most 64 positions, else a
      generic with reduction loops);
      `autopar.average_pool`: window sums divided by constant per-dimension
      counts (padding counted only with `count_include_pad`, ceil-mode
      overhang never); `autopar.global_average_pool`: sum and division;
    - `autopar.constant`: `arith.constant`.

    Every autopar op is illegal afterwards: one that is left (dynamic shapes,
    an op without a lowering, an unsupported element type) is an error.

    Before:
    ```mlir
    %y = autopar.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<4xf32>
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst = arith.constant 0.000000e+00 : f32
      %m = arith.maximumf %in, %cst : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::cf::ControlFlowDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
  ];
}

#endif // AUTOPAR_CONVERSION_PASSES_TD
