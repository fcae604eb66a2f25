//===- AutoparRandomOps.td - counter-based random numbers --*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The random-number source of the ONNX random ops (RandomUniform(Like),
// RandomNormal(Like), Bernoulli, Dropout in training). Included by
// AutoparOps.td; kept in its own file so that the op families of other
// branches merge without conflicts.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARRANDOMOPS_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARRANDOMOPS_TD

/// The op's values depend on each element's position in the global
/// (unpartitioned) result: the partitioner records the global shape and
/// the result's sharding on it, and the runtime lowering gives it the
/// device's offsets.
def Autopar_GlobalPosition : NativeOpTrait<"UsesGlobalPosition"> {
  let cppNamespace = "::mlir::autopar";
}

def Autopar_RandomUniformOp : Autopar_Op<"random_uniform", [Pure,
    AttrSizedOperandSegments, Autopar_OwnRule, Autopar_GlobalPosition,
    Autopar_CostInterface, Autopar_Cost<"Elementwise", 40>]> {
  let summary = "counter-based uniform random numbers in [0, 1)";
  let description = [{
    Element i of the result (i: the element's row-major linear index in the
    global result of shape `global_shape`, the result's own shape when
    absent) is `(x >> 8) * 2^-24`, x the first word of Philox4x32-10
    (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11;
    the Random123 reference) with key `(lo32(seed), hi32(seed))` and counter
    `(lo32(i), hi32(i), stream, counter)`. `counter` (a one-element int64
    tensor; 0 when absent) is the training step, so that each step draws new
    values; `stream` separates the independent draws of one node (the two
    uniforms of Box-Muller).

    The values are a pure function of (seed, stream, counter, global index):
    a device of a partitioned program computes exactly the elements of its
    block. The sharding rule is therefore elementwise (every dimension may
    be split). After partitioning, `global_shape` holds the global shape and
    `offsets` (one i64 per dimension, added by the runtime lowering from the
    device's grid coordinates) the position of the device's block.

    A pipeline stage's training step runs one copy of the microbatch's
    program per microbatch. There the draw is a block of the whole batch's:
    `whole_shape` is the shape of the single-device program's result, and
    `whole_offsets` the position of this microbatch's block in it (set per
    microbatch by autopar-build-stage-step), so that every microbatch draws
    the values the single-device step draws at its positions. Element i is
    then the one at `whole_offsets` + (its position in the global result)
    of the whole result.

    ```mlir
    %u = autopar.random_uniform {seed = 7 : i64, stream = 0 : i64}
        : () -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Optional<TensorOf<[I64]>>:$counter,
    Variadic<I64>:$offsets, I64Attr:$seed,
    DefaultValuedAttr<I64Attr, "0">:$stream,
    OptionalAttr<DenseI64ArrayAttr>:$global_shape,
    OptionalAttr<DenseI64ArrayAttr>:$whole_shape,
    OptionalAttr<DenseI64ArrayAttr>:$whole_offsets);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat =
    "(`counter` $counter^)? (`offsets` `(` $offsets^ `)`)? attr-dict `:` "
    "functional-type($counter, $result)";
  let hasVerifier = 1;
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARRANDOMOPS_TD
