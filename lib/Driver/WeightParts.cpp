//===- WeightParts.cpp - Fused projections split at import ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements splitFusedProjections: the driver runs
// autopar-split-fused-projections and autopar-unmerge-heads on an imported
// inference model and gives the model's weight store the data of the weights
// the first pass cut from the original initializers (WeightParts.h).
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/WeightParts.h"
#include "autopar/Import/Import.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// The imported weights and the parts cut from them. A part's bytes are cut
/// from its source on first use and kept while the store lives.
class WeightPartStore final : public WeightStore {
public:
  explicit WeightPartStore(std::unique_ptr<WeightStore> base)
      : base(std::move(base)), weights(this->base->getWeights().begin(),
                                       this->base->getWeights().end()) {}

  /// Adds weight `name` of `shape`, part `part` of a weight of the base
  /// store.
  void addPart(StringRef name, ArrayRef<int64_t> shape, const WeightPart &part,
               DType dtype) {
    weights.push_back(Weight{name.str(), dtype, SmallVector<int64_t>(shape)});
    parts[name] = part;
  }

  ArrayRef<Weight> getWeights() const override { return weights; }

  FailureOr<ArrayRef<char>> getData(StringRef name,
                                    std::string &error) override {
    auto part = parts.find(name);
    if (part == parts.end())
      return base->getData(name, error);
    auto cached = data.find(name);
    if (cached != data.end())
      return ArrayRef<char>(cached->second);
    const WeightPart &range = part->second;
    const Weight *source = base->lookup(range.source);
    const Weight *self = lookup(name);
    assert(source && self && "parts are checked when they are added");
    FailureOr<ArrayRef<char>> bytes = base->getData(range.source, error);
    if (failed(bytes))
      return failure();
    // The part is `outer` runs of `self->shape[axis] * inner` bytes, one
    // from each `source->shape[axis] * inner` of the source.
    int64_t element = getDTypeSize(source->dtype);
    int64_t outer = 1, inner = element;
    for (int64_t d = 0; d < range.axis; ++d)
      outer *= source->shape[d];
    for (size_t d = range.axis + 1; d < source->shape.size(); ++d)
      inner *= source->shape[d];
    int64_t sourceRun = source->shape[range.axis] * inner;
    int64_t run = self->shape[range.axis] * inner;
    if (static_cast<int64_t>(bytes->size()) != outer * sourceRun) {
      error = "weight '" + range.source + "' holds " +
              std::to_string(bytes->size()) + " bytes, expected " +
              std::to_string(outer * sourceRun);
      return failure();
    }
    std::vector<char> &cut = data[name];
    cut.resize(outer * run);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(cut.data() + o * run,
                  bytes->data() + o * sourceRun + range.offset * inner, run);
    return ArrayRef<char>(cut);
  }

private:
  std::unique_ptr<WeightStore> base;
  std::vector<Weight> weights;
  llvm::StringMap<WeightPart> parts;
  llvm::StringMap<std::vector<char>> data;
};

} // namespace

LogicalResult mlir::autopar::splitFusedProjections(MLIRContext &ctx,
                                                   ImportedModel &model,
                                                   bool unmergeHeads) {
  PassManager pm(&ctx, ModuleOp::getOperationName());
  pm.addPass(createSplitFusedProjectionsPass());
  if (unmergeHeads)
    pm.addPass(createUnmergeHeadsPass());
  if (failed(pm.run(*model.module))) {
    driver::emitDriverError(ctx)
        << "splitting fused projections and their heads failed";
    return failure();
  }
  SmallVector<WeightOp> parts;
  model.module->walk([&](WeightOp op) {
    if (op->hasAttr(kWeightPartAttrName))
      parts.push_back(op);
  });
  if (parts.empty())
    return success();

  auto store = std::make_unique<WeightPartStore>(std::move(model.weights));
  for (WeightOp op : parts) {
    std::optional<WeightPart> part = getWeightPart(op);
    const WeightStore::Weight *source =
        part ? store->lookup(part->source) : nullptr;
    auto type = cast<RankedTensorType>(op.getType());
    if (!source ||
        static_cast<int64_t>(source->shape.size()) != type.getRank() ||
        part->axis < 0 || part->axis >= type.getRank() || part->offset < 0 ||
        part->offset + type.getDimSize(part->axis) >
            source->shape[part->axis]) {
      op.emitError() << "weight '" << op.getName()
                     << "' is no part of an initializer of the model";
      model.weights = std::move(store);
      return failure();
    }
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != part->axis && type.getDimSize(d) != source->shape[d]) {
        op.emitError() << "weight part '" << op.getName() << "' has type "
                       << type << ", which does not match its source '"
                       << part->source << "' of shape "
                       << driver::formatShape(source->shape);
        model.weights = std::move(store);
        return failure();
      }
    store->addPart(op.getName(), type.getShape(), *part, source->dtype);
  }
  model.weights = std::move(store);
  return success();
}
