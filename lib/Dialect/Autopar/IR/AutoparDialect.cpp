//===- AutoparDialect.cpp - autopar dialect and attributes ----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::autopar;

#include "autopar/Dialect/Autopar/IR/AutoparOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "autopar/Dialect/Autopar/IR/AutoparAttrs.cpp.inc"

#include "autopar/Dialect/Autopar/IR/AutoparInterfaces.cpp.inc"
#include "autopar/Dialect/Autopar/IR/AutoparGradientInterface.cpp.inc"

namespace mlir::autopar {
void attachShardingInterfaceModels(MLIRContext &ctx);
void attachGradientModels(MLIRContext &ctx);
} // namespace mlir::autopar

void AutoparDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "autopar/Dialect/Autopar/IR/AutoparOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "autopar/Dialect/Autopar/IR/AutoparAttrs.cpp.inc"
      >();
  // Every compute op carries its sharding rule through the upstream
  // interface, whichever tool loads the dialect.
  attachShardingInterfaceModels(*getContext());
  // Reverse-mode rules (Gradients.cpp) for autopar-differentiate.
  attachGradientModels(*getContext());
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

ShardingAttr ShardingAttr::getReplicated(MLIRContext *ctx, int64_t rank) {
  SmallVector<DenseI64ArrayAttr> dims(rank, DenseI64ArrayAttr::get(ctx, {}));
  return ShardingAttr::get(ctx, dims, {});
}

ShardingAttr ShardingAttr::get(MLIRContext *ctx,
                               ArrayRef<SmallVector<int64_t>> dims,
                               ArrayRef<int64_t> partial) {
  SmallVector<DenseI64ArrayAttr> dimAttrs;
  for (const SmallVector<int64_t> &axes : dims)
    dimAttrs.push_back(DenseI64ArrayAttr::get(ctx, axes));
  SmallVector<int64_t> sortedPartial(partial);
  llvm::sort(sortedPartial);
  return ShardingAttr::get(ctx, dimAttrs, sortedPartial);
}

bool ShardingAttr::isReplicated() const {
  if (isPartial())
    return false;
  return llvm::all_of(getDims(),
                      [](DenseI64ArrayAttr axes) { return axes.empty(); });
}

ShardingAttr ShardingAttr::withoutPartial() const {
  return ShardingAttr::get(getContext(), getDims(), {});
}

SmallVector<SmallVector<int64_t>> ShardingAttr::getDimsVector() const {
  SmallVector<SmallVector<int64_t>> result;
  for (DenseI64ArrayAttr axes : getDims())
    result.emplace_back(axes.asArrayRef());
  return result;
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     ArrayRef<DenseI64ArrayAttr> dims,
                     ArrayRef<int64_t> partial) {
  llvm::SmallSet<int64_t, 8> seen;
  auto check = [&](int64_t axis) -> LogicalResult {
    if (axis < 0)
      return emitError() << "grid axis must be non-negative, got " << axis;
    if (!seen.insert(axis).second)
      return emitError() << "grid axis " << axis
                         << " is used more than once in a sharding";
    return success();
  };
  for (DenseI64ArrayAttr axes : dims) {
    if (!axes)
      return emitError() << "missing split axes";
    for (int64_t axis : axes.asArrayRef())
      if (failed(check(axis)))
        return failure();
  }
  for (int64_t axis : partial)
    if (failed(check(axis)))
      return failure();
  return success();
}

static ParseResult parseAxisList(AsmParser &parser,
                                 SmallVectorImpl<int64_t> &axes) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        int64_t axis;
        if (parser.parseInteger(axis))
          return failure();
        axes.push_back(axis);
        return success();
      });
}

static void printAxisList(AsmPrinter &printer, ArrayRef<int64_t> axes) {
  printer << '[';
  llvm::interleaveComma(axes, printer);
  printer << ']';
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  SmallVector<DenseI64ArrayAttr> dims;
  SmallVector<int64_t> partial;
  MLIRContext *ctx = parser.getContext();
  if (parser.parseLess())
    return {};
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            SmallVector<int64_t> axes;
            if (parseAxisList(parser, axes))
              return failure();
            dims.push_back(DenseI64ArrayAttr::get(ctx, axes));
            return success();
          }))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisList(parser, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  llvm::sort(partial);
  return parser.getChecked<ShardingAttr>(ctx, dims, partial);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDims(), printer, [&](DenseI64ArrayAttr axes) {
    printAxisList(printer, axes.asArrayRef());
  });
  printer << ']';
  if (!getPartial().empty()) {
    printer << ", partial = ";
    printAxisList(printer, getPartial());
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// Sharding accessors
//===----------------------------------------------------------------------===//

ShardingAttr mlir::autopar::getSharding(Value value) {
  if (auto result = dyn_cast<OpResult>(value)) {
    auto array = result.getOwner()->getAttrOfType<ArrayAttr>(kShardingsAttrName);
    if (!array || array.size() != result.getOwner()->getNumResults())
      return {};
    return dyn_cast<ShardingAttr>(array[result.getResultNumber()]);
  }
  auto arg = cast<BlockArgument>(value);
  auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!func || arg.getOwner() != &func.getFunctionBody().front())
    return {};
  return func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                             kShardingAttrName);
}

void mlir::autopar::setSharding(Value value, ShardingAttr sharding) {
  if (auto result = dyn_cast<OpResult>(value)) {
    Operation *op = result.getOwner();
    SmallVector<Attribute> shardings;
    if (auto array = op->getAttrOfType<ArrayAttr>(kShardingsAttrName);
        array && array.size() == op->getNumResults())
      shardings.assign(array.begin(), array.end());
    else
      shardings.assign(op->getNumResults(), UnitAttr::get(op->getContext()));
    shardings[result.getResultNumber()] = sharding;
    op->setAttr(kShardingsAttrName, ArrayAttr::get(op->getContext(), shardings));
    return;
  }
  auto arg = cast<BlockArgument>(value);
  auto func = cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  func.setArgAttr(arg.getArgNumber(), kShardingAttrName, sharding);
}

shard::GridOp mlir::autopar::getUniqueGrid(Operation *module, bool emitErrors) {
  shard::GridOp found;
  unsigned count = 0;
  for (Region &region : module->getRegions())
    for (Block &block : region)
      for (auto grid : block.getOps<shard::GridOp>()) {
        found = grid;
        ++count;
      }
  if (count == 1)
    return found;
  if (emitErrors)
    module->emitError() << "expected exactly one shard.grid in the module, got "
                        << count;
  return {};
}

//===----------------------------------------------------------------------===//
// ONNX names in locations
//===----------------------------------------------------------------------===//

Location mlir::autopar::getOnnxNodeLoc(MLIRContext *ctx, StringRef nodeName,
                                       ArrayRef<std::string> outputNames) {
  SmallVector<Location> outputs;
  for (const std::string &name : outputNames)
    outputs.push_back(NameLoc::get(StringAttr::get(ctx, name)));
  return FusedLoc::get(outputs, StringAttr::get(ctx, nodeName), ctx);
}

Location mlir::autopar::getOnnxTensorLoc(MLIRContext *ctx, StringRef name) {
  return NameLoc::get(StringAttr::get(ctx, name));
}

std::string mlir::autopar::getOnnxNodeName(Operation *op) {
  if (auto fused = dyn_cast<FusedLoc>(op->getLoc()))
    if (auto name = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
      return name.str();
  return {};
}

std::string mlir::autopar::getOnnxValueName(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (auto name = dyn_cast<NameLoc>(arg.getLoc()))
      return name.getName().str();
    return {};
  }
  Operation *op = value.getDefiningOp();
  if (auto weight = dyn_cast<WeightOp>(op))
    return weight.getName().str();
  unsigned index = cast<OpResult>(value).getResultNumber();
  if (auto fused = dyn_cast<FusedLoc>(op->getLoc())) {
    ArrayRef<Location> locs = fused.getLocations();
    if (index < locs.size())
      if (auto name = dyn_cast<NameLoc>(locs[index]))
        return name.getName().str();
  }
  if (auto name = dyn_cast<NameLoc>(op->getLoc()); name && index == 0)
    return name.getName().str();
  return {};
}
