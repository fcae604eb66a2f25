//===- Autopar.h - autopar dialect, attributes and ops ------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The autopar dialect: ONNX-level operations with exact ONNX semantics and
// autopar's sharding state (split dimensions, pending sums).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPAR_H
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPAR_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "autopar/Dialect/Autopar/IR/OpTraits.h"

#include "autopar/Dialect/Autopar/IR/AutoparOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "autopar/Dialect/Autopar/IR/AutoparAttrs.h.inc"

#include "autopar/Dialect/Autopar/IR/AutoparInterfaces.h.inc"
#include "autopar/Dialect/Autopar/IR/AutoparGradientInterface.h.inc"

#define GET_OP_CLASSES
#include "autopar/Dialect/Autopar/IR/AutoparOps.h.inc"

namespace mlir::autopar {

/// Name of the discardable attribute that holds the shardings of an op's
/// results (an array with one `#autopar.sharding` per result).
constexpr llvm::StringLiteral kShardingsAttrName = "autopar.shardings";
/// Name of the argument/result attribute of a function that holds the sharding
/// of that argument or result.
constexpr llvm::StringLiteral kShardingAttrName = "autopar.sharding";
/// Name of the discardable attribute on `autopar.weight` in a partitioned
/// program that records the weight's global (unpartitioned) type.
constexpr llvm::StringLiteral kGlobalTypeAttrName = "autopar.global_type";

/// Result shape of ONNX multidirectional broadcasting of `lhs` and `rhs`, or
/// failure when they do not broadcast. Dynamic sizes stay dynamic.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs);

/// A parsed einsum equation with an explicit output: one term (string of
/// lowercase letters) per input.
struct EinsumEquation {
  SmallVector<std::string> inputs;
  std::string output;
};
/// Parses `ab,bc->ac`; failure for ellipses, implicit outputs, other
/// characters, or output letters that repeat or appear in no input.
FailureOr<EinsumEquation> parseEinsumEquation(StringRef text);

/// Returns the sharding recorded for `value` (op result or function argument),
/// or null when it has none.
ShardingAttr getSharding(Value value);
/// Records `sharding` for `value` (op result or block argument of a function
/// entry block).
void setSharding(Value value, ShardingAttr sharding);

/// Returns the single `shard.grid` of `module`, or null (with an error
/// emitted) when there is none or more than one.
shard::GridOp getUniqueGrid(Operation *module, bool emitErrors = true);

/// Location of an op imported from ONNX node `nodeName` whose outputs are
/// the tensors `outputNames`: `fused<"nodeName">[NameLoc(out0), ...]`.
Location getOnnxNodeLoc(MLIRContext *ctx, StringRef nodeName,
                        ArrayRef<std::string> outputNames);
/// Location of a graph input or initializer called `name`.
Location getOnnxTensorLoc(MLIRContext *ctx, StringRef name);

/// The ONNX tensor name of `value`: the name of the graph input (argument
/// location), of the node output (op location built by getOnnxNodeLoc), or of
/// the initializer (`autopar.weight`). Empty when unknown.
std::string getOnnxValueName(Value value);
/// The ONNX node name recorded in the location of `op`, or empty.
std::string getOnnxNodeName(Operation *op);

} // namespace mlir::autopar

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPAR_H
