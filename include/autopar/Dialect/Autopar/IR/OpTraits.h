//===- OpTraits.h - what every autopar op declares in ODS ----------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The C++ side of what an autopar op declares in its ODS definition besides
// its operands: its loop sharding rule (ShardingRuleInterface), its cost
// class (the `CostTrait` behind CostInterface) and whether it is a view of an
// operand's buffer (`IsView`). Analysis and planning query these instead of
// keeping lists of ops.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_OPTRAITS_H
#define AUTOPAR_DIALECT_AUTOPAR_IR_OPTRAITS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::autopar {

/// The op classes the cost model prices with their own FLOP rate (a
/// calibrated machine runs a matmul and an elementwise op at very different
/// fractions of its peak).
enum class OpClass {
  MatMul,        ///< matmul, gemm, einsum
  Conv,          ///< conv
  Elementwise,   ///< unary/binary/ternary maps
  Reduction,     ///< reductions, softmax, normalizations, pools
  DataMovement,  ///< transpose, reshape, concat, split, slice, gather, expand
  DepthwiseConv, ///< conv with one input channel per group: its reduction is
                 ///< the window alone, too short for a register-tiled GEMM
  BatchedMatMul, ///< matmul of two batched operands (attention's products):
                 ///< each batch has its own right-hand matrix, packed at run
                 ///< time, and small per-batch GEMMs
};
constexpr unsigned kNumOpClasses = 7;

/// Whether ops of class `c` are contractions (register-tiled products and
/// convolutions): they end elementwise fusion, and their FLOPs are what a
/// model's work is counted in.
inline bool isContractionClass(OpClass c) {
  return c == OpClass::MatMul || c == OpClass::BatchedMatMul ||
         c == OpClass::Conv || c == OpClass::DepthwiseConv;
}

/// The loop-based sharding rule of one op: iterator types and one indexing
/// map per operand then per result (a broadcast dimension, or one the op
/// needs whole such as a convolution window, maps to the constant 0), and
/// which loops may be split.
struct LoopShardingRule {
  SmallVector<utils::IteratorType> iterators;
  SmallVector<AffineMap> maps;
  /// Per loop; a loop that must stay whole is false.
  SmallVector<bool> splittable;

  /// Adds a loop and returns its position.
  unsigned addLoop(utils::IteratorType type, bool canSplit = true) {
    iterators.push_back(type);
    splittable.push_back(canSplit);
    return iterators.size() - 1;
  }
};

/// The rule of an elementwise op with multidirectional broadcasting: one
/// parallel loop per result dimension; broadcast operand dimensions map to 0.
/// The default of ShardingRuleInterface::getShardingRule.
LoopShardingRule getElementwiseShardingRule(Operation *op);

/// `CostTrait<OpClass::X, F>::Impl` gives an op its cost class and its FLOPs
/// per point of its loop nest (the methods CostInterface forwards to).
template <OpClass Class, int FlopsPerIteration> struct CostTrait {
  template <typename ConcreteType>
  class Impl : public OpTrait::TraitBase<ConcreteType, Impl> {
  public:
    static OpClass getCostClass() { return Class; }
    static double getFlopsPerIteration() { return FlopsPerIteration; }
  };
};

/// Marks an op whose result is a view of its operand's buffer once
/// bufferized (reshape, split, slice): it takes no memory of its own and runs
/// no loop nest.
template <typename ConcreteType>
class IsView : public OpTrait::TraitBase<ConcreteType, IsView> {};

/// True when `op` has the IsView trait.
inline bool isViewOp(Operation *op) { return op && op->hasTrait<IsView>(); }

/// Marks an op that reads its operand 0 only at the positions its indices
/// select, one element per result element (gathers): an embedding lookup
/// moves the gathered rows, not the table.
template <typename ConcreteType>
class ReadsByIndex : public OpTrait::TraitBase<ConcreteType, ReadsByIndex> {};

/// True when `op` reads its operand `index` only where its indices select
/// (the ReadsByIndex trait), not whole.
inline bool readsOperandByIndex(Operation *op, unsigned index) {
  return op && index == 0 && op->hasTrait<ReadsByIndex>();
}

/// Marks an op whose values depend on each element's position in the global
/// (unpartitioned) result (the counter-based random ops): the partitioner
/// records the result's global shape and sharding on it, so that each device
/// computes the elements of its own block.
template <typename ConcreteType>
class UsesGlobalPosition
    : public OpTrait::TraitBase<ConcreteType, UsesGlobalPosition> {};

} // namespace mlir::autopar

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_OPTRAITS_H
