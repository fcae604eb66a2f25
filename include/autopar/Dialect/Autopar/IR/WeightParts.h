//===- WeightParts.h - Weights cut from an initializer ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The attribute by which autopar-split-fused-projections tells the compiler
// driver that an `autopar.weight` is a contiguous range of another
// initializer along one dimension (a part of a fused [q | k | v] projection),
// so that the driver cuts its data from the original initializer. Each name
// is spelled here only.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_WEIGHTPARTS_H
#define AUTOPAR_DIALECT_AUTOPAR_IR_WEIGHTPARTS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>
#include <string>

namespace mlir::autopar {

/// On an `autopar.weight`: a dictionary `{source = "name", axis = a, offset =
/// o}`; the weight is elements [o, o + size) along dimension `a` of
/// initializer `source` (its size along `a` is the weight's), and the whole
/// of every other dimension.
inline constexpr llvm::StringLiteral kWeightPartAttrName =
    "autopar.weight_part";

/// A weight cut from another initializer (kWeightPartAttrName).
struct WeightPart {
  std::string source;
  int64_t axis = 0;
  int64_t offset = 0;
};

/// Returns the part `op` (an `autopar.weight`) records, or std::nullopt when
/// it has none or the attribute is malformed.
inline std::optional<WeightPart> getWeightPart(Operation *op) {
  auto dict = op->getAttrOfType<DictionaryAttr>(kWeightPartAttrName);
  if (!dict)
    return std::nullopt;
  auto source = dict.getAs<StringAttr>("source");
  auto axis = dict.getAs<IntegerAttr>("axis");
  auto offset = dict.getAs<IntegerAttr>("offset");
  if (!source || !axis || !offset)
    return std::nullopt;
  return WeightPart{source.str(), axis.getInt(), offset.getInt()};
}

/// Records `part` on `op` (an `autopar.weight`).
inline void setWeightPart(Operation *op, const WeightPart &part) {
  Builder b(op->getContext());
  op->setAttr(
      kWeightPartAttrName,
      b.getDictionaryAttr(
          {b.getNamedAttr("source", b.getStringAttr(part.source)),
           b.getNamedAttr("axis", b.getI64IntegerAttr(part.axis)),
           b.getNamedAttr("offset", b.getI64IntegerAttr(part.offset))}));
}

} // namespace mlir::autopar

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_WEIGHTPARTS_H
