//===- SplitFusedProjections.cpp - One projection per part of a fused one -===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-split-fused-projections: a projection on a
// weight whose result (after an optional bias add) is cut into equal parts
// along its output columns (attention's fused [q | k | v] projection) becomes
// one projection per part, on new weights that are the parts of the original
// weight and bias (WeightParts.h), so that the tensor plan's column split
// gives each device whole heads. A weight read by several such projections
// (an eval-mode export of nn.TransformerEncoder, whose layers are copies of
// one layer, keeps one initializer for their equal weights) is split once and
// its parts are read by every one of them.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/WeightParts.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "autopar-split-fused-projections"

namespace mlir::autopar {
#define GEN_PASS_DEF_SPLITFUSEDPROJECTIONSPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// A projection whose result is cut into equal parts along its last
/// dimension.
struct FusedProjection {
  /// The `autopar.matmul` or `autopar.gemm`.
  Operation *product = nullptr;
  /// Its weight, the weight's dimension along the output columns, and the
  /// transpose through which the product reads it as B (PyTorch's training
  /// exports of nn.Linear), or null.
  WeightOp weight;
  int64_t weightAxis = 1;
  TransposeOp transpose;
  /// A gemm's C (1-d), or null.
  WeightOp gemmBias;
  /// The bias `autopar.add` after the product and its weight operand, or
  /// null.
  Operation *add = nullptr;
  WeightOp addBias;
  /// The value that is cut (the add's result, or the product's).
  Value fused;
  /// The ops that cut it (one split, or the slices).
  SmallVector<Operation *> cuts;
  /// The value of each part, in column order.
  SmallVector<Value> parts;
};

struct SplitFusedProjectionsPass
    : public mlir::autopar::impl::SplitFusedProjectionsPassBase<
          SplitFusedProjectionsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

/// `name` of part `index` of `count`.
static std::string getPartName(StringRef name, unsigned index, unsigned count) {
  return (name + ".part" + Twine(index) + "of" + Twine(count)).str();
}

/// The weight `value` loads when it is a static tensor of `rank` and not a
/// part already; else null. Its other uses are checked once every projection
/// is matched (`rejectPartlyRead`).
static WeightOp getProjectionWeight(Value value, int64_t rank) {
  auto weight = value.getDefiningOp<WeightOp>();
  if (!weight || getWeightPart(weight))
    return {};
  auto type = cast<RankedTensorType>(weight.getType());
  if (type.getRank() != rank || !type.hasStaticShape())
    return {};
  return weight;
}

/// Whether `projection.fused` is read only by one split along its last
/// dimension into equal parts, or only by slices that take disjoint equal
/// ranges of the last dimension covering it (and all of every other
/// dimension); records the cuts and the parts.
static bool matchCuts(FusedProjection &projection) {
  Value fused = projection.fused;
  auto type = cast<RankedTensorType>(fused.getType());
  int64_t last = type.getRank() - 1;
  int64_t columns = type.getDimSize(last);
  SmallVector<Operation *> users(fused.getUsers());
  if (users.size() == 1) {
    auto split = dyn_cast<SplitOp>(users.front());
    if (!split || split.getNumResults() < 2)
      return false;
    int64_t axis = split.getAxis();
    if ((axis < 0 ? axis + type.getRank() : axis) != last)
      return false;
    int64_t size = columns / split.getNumResults();
    for (Value result : split.getResults())
      if (cast<RankedTensorType>(result.getType()).getDimSize(last) != size)
        return false;
    projection.cuts.push_back(split);
    projection.parts.assign(split.getResults().begin(),
                            split.getResults().end());
    return true;
  }
  int64_t count = users.size();
  if (count < 2 || columns % count != 0)
    return false;
  int64_t size = columns / count;
  SmallVector<Value> parts(count);
  for (Operation *user : users) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice)
      return false;
    auto sliceType = cast<RankedTensorType>(slice.getType());
    ArrayRef<int64_t> starts = slice.getStarts();
    ArrayRef<int64_t> steps = slice.getSteps();
    for (int64_t d = 0; d < last; ++d)
      if (starts[d] != 0 || steps[d] != 1 ||
          sliceType.getDimSize(d) != type.getDimSize(d))
        return false;
    if (steps[last] != 1 || sliceType.getDimSize(last) != size ||
        starts[last] % size != 0)
      return false;
    Value &part = parts[starts[last] / size];
    if (part)
      return false;
    part = slice.getResult();
  }
  projection.cuts = users;
  projection.parts = parts;
  return true;
}

/// Matches a fused projection at `op` (an `autopar.matmul` or
/// `autopar.gemm`).
static std::optional<FusedProjection> matchProjection(Operation *op) {
  FusedProjection projection;
  projection.product = op;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType.hasStaticShape() || resultType.getRank() == 0)
    return std::nullopt;
  int64_t columns = resultType.getDimSize(resultType.getRank() - 1);
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    projection.weight = getProjectionWeight(matmul.getB(), 2);
    projection.weightAxis = 1;
    // B = transpose(W) of a [N, K] weight read by this product alone.
    auto transpose = matmul.getB().getDefiningOp<TransposeOp>();
    if (!projection.weight && transpose && matmul.getB().hasOneUse() &&
        transpose.getPerm() == ArrayRef<int64_t>{1, 0}) {
      projection.weight = getProjectionWeight(transpose.getInput(), 2);
      projection.weightAxis = 0;
      projection.transpose = transpose;
    }
  } else if (auto gemm = cast<GemmOp>(op)) {
    projection.weight = getProjectionWeight(gemm.getB(), 2);
    projection.weightAxis = gemm.getTransB() ? 0 : 1;
    if (Value c = gemm.getC()) {
      projection.gemmBias = getProjectionWeight(c, 1);
      if (!projection.gemmBias ||
          cast<RankedTensorType>(c.getType()).getDimSize(0) != columns)
        return std::nullopt;
    }
  }
  if (!projection.weight ||
      cast<RankedTensorType>(projection.weight.getType())
              .getDimSize(projection.weightAxis) != columns)
    return std::nullopt;

  // An optional bias add of a 1-d weight of the column count.
  projection.fused = op->getResult(0);
  if (projection.fused.hasOneUse())
    if (auto add = dyn_cast<AddOp>(*projection.fused.getUsers().begin())) {
      Value other =
          add.getLhs() == projection.fused ? add.getRhs() : add.getLhs();
      WeightOp bias = getProjectionWeight(other, 1);
      if (bias && add.getType() == resultType &&
          cast<RankedTensorType>(bias.getType()).getDimSize(0) == columns) {
        projection.add = add;
        projection.addBias = bias;
        projection.fused = add.getResult();
      }
    }
  if (!matchCuts(projection))
    return std::nullopt;
  return projection;
}

/// The parts of each split weight, by the weight's op, in column order.
using WeightPartMap = llvm::DenseMap<Operation *, SmallVector<Value>>;

/// Replaces `projection` by one projection per part. The parts of a weight
/// that an earlier projection split already are the ones in `splitWeights`.
static void splitProjection(FusedProjection &projection,
                            WeightPartMap &splitWeights) {
  MLIRContext *ctx = projection.product->getContext();
  unsigned count = projection.parts.size();
  auto fusedType = cast<RankedTensorType>(projection.fused.getType());
  int64_t last = fusedType.getRank() - 1;
  int64_t size = fusedType.getDimSize(last) / count;
  auto productType =
      cast<RankedTensorType>(projection.product->getResult(0).getType());
  SmallVector<int64_t> partShape(productType.getShape());
  partShape.back() = size;
  auto partType = productType.clone(partShape);
  std::string fusedName = getOnnxValueName(projection.fused);
  std::string productName = getOnnxValueName(projection.product->getResult(0));

  OpBuilder b(projection.product);
  // Part `index` of `weight` along `axis`, loaded before the first product
  // that reads it (the products of one weight are in one block).
  auto getWeightPartValue = [&](WeightOp weight, int64_t axis,
                                unsigned index) -> Value {
    SmallVector<Value> &parts = splitWeights[weight];
    if (parts.empty())
      parts.resize(count);
    if (parts[index])
      return parts[index];
    auto type = cast<RankedTensorType>(weight.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = size;
    std::string name = getPartName(weight.getName(), index, count);
    auto part = WeightOp::create(b, getOnnxTensorLoc(ctx, name),
                                 type.clone(shape), name);
    setWeightPart(part, {weight.getName().str(), axis, index * size});
    return parts[index] = part.getResult();
  };
  // The location of part `index` of `op`, whose result is called `name`.
  auto getPartLoc = [&](Operation *op, unsigned index,
                        StringRef name) -> Location {
    if (name.empty())
      return op->getLoc();
    std::string node = getOnnxNodeName(op);
    if (node.empty())
      return getOnnxTensorLoc(ctx, name);
    return getOnnxNodeLoc(ctx, getPartName(node, index, count), {name.str()});
  };
  // The name of part `index`'s value: the one of the value it replaces.
  auto getPartValueName = [&](unsigned index) -> std::string {
    std::string name = getOnnxValueName(projection.parts[index]);
    if (name.empty() && !fusedName.empty())
      name = getPartName(fusedName, index, count);
    return name;
  };

  // The parts are built op kind by op kind (every weight part, then every
  // transpose, product and bias add), not part by part: n consecutive
  // identical chains would be found as repeated blocks (BlockFolding), and a
  // pipeline could then be cut between q, k and v.
  SmallVector<Value> weightParts, gemmBiasParts;
  for (unsigned i = 0; i < count; ++i) {
    weightParts.push_back(
        getWeightPartValue(projection.weight, projection.weightAxis, i));
    if (projection.gemmBias)
      gemmBiasParts.push_back(getWeightPartValue(projection.gemmBias, 0, i));
  }
  if (projection.transpose) {
    // Each part's own transpose, named after the transposed weight's part.
    auto transposed = cast<RankedTensorType>(projection.transpose.getType());
    SmallVector<int64_t> shape(transposed.getShape());
    shape[1] = size;
    std::string name = getOnnxValueName(projection.transpose.getResult());
    for (unsigned i = 0; i < count; ++i) {
      Operation *transpose = b.clone(*projection.transpose);
      transpose->setOperand(0, weightParts[i]);
      transpose->getResult(0).setType(transposed.clone(shape));
      if (!name.empty())
        transpose->setLoc(
            getPartLoc(projection.transpose, i, getPartName(name, i, count)));
      weightParts[i] = transpose->getResult(0);
    }
  }
  Value fusedB = projection.transpose ? projection.transpose.getResult()
                                      : projection.weight.getResult();
  SmallVector<Value> values;
  for (unsigned i = 0; i < count; ++i) {
    IRMapping mapping;
    mapping.map(fusedB, weightParts[i]);
    if (projection.gemmBias)
      mapping.map(projection.gemmBias.getResult(), gemmBiasParts[i]);
    Operation *product = b.clone(*projection.product, mapping);
    product->getResult(0).setType(partType);
    std::string name;
    if (projection.add && !productName.empty())
      name = getPartName(productName, i, count);
    else if (!projection.add)
      name = getPartValueName(i);
    product->setLoc(getPartLoc(projection.product, i, name));
    values.push_back(product->getResult(0));
  }
  if (projection.add) {
    SmallVector<Value> biasParts;
    for (unsigned i = 0; i < count; ++i)
      biasParts.push_back(getWeightPartValue(projection.addBias, 0, i));
    for (unsigned i = 0; i < count; ++i) {
      IRMapping mapping;
      mapping.map(projection.product->getResult(0), values[i]);
      mapping.map(projection.addBias.getResult(), biasParts[i]);
      Operation *add = b.clone(*projection.add, mapping);
      add->getResult(0).setType(
          cast<RankedTensorType>(projection.parts[i].getType()));
      add->setLoc(getPartLoc(projection.add, i, getPartValueName(i)));
      values[i] = add->getResult(0);
    }
  }
  for (unsigned i = 0; i < count; ++i) {
    assert(values[i].getType() == projection.parts[i].getType() &&
           "a part's projection must have the part's type");
    projection.parts[i].replaceAllUsesWith(values[i]);
  }

  for (Operation *cut : projection.cuts)
    cut->erase();
  if (projection.add)
    projection.add->erase();
  projection.product->erase();
  if (projection.transpose)
    projection.transpose->erase();
  for (WeightOp weight :
       {projection.weight, projection.gemmBias, projection.addBias})
    if (weight && weight->use_empty())
      weight->erase();
}

/// Drops from `found` every projection that reads a weight (as its weight,
/// its gemm's C or its bias) that is also read by an op outside the found
/// projections, by one in another role or with another part count or axis,
/// or from another block; repeats until no projection is dropped (dropping
/// one can leave another's weight partly read).
static void rejectPartlyRead(SmallVector<FusedProjection> &found) {
  /// How a projection reads a weight: 0 weight, 1 gemm C, 2 bias add.
  struct Read {
    unsigned role;
    int64_t axis;
    size_t parts;
    Block *block;
  };
  for (bool changed = true; changed;) {
    changed = false;
    llvm::DenseMap<Operation *, SmallVector<Read>> reads;
    for (FusedProjection &projection : found) {
      Block *block = projection.product->getBlock();
      size_t parts = projection.parts.size();
      reads[projection.weight].push_back(
          {0, projection.weightAxis, parts, block});
      if (projection.gemmBias)
        reads[projection.gemmBias].push_back({1, 0, parts, block});
      if (projection.addBias)
        reads[projection.addBias].push_back({2, 0, parts, block});
    }
    auto isWhole = [&](WeightOp weight) {
      if (!weight)
        return true;
      const SmallVector<Read> &all = reads[weight];
      const Read &first = all.front();
      if (first.block != weight->getBlock())
        return false;
      for (const Read &read : all)
        if (read.role != first.role || read.axis != first.axis ||
            read.parts != first.parts || read.block != first.block)
          return false;
      // Each projection reads its weight once (its product or transpose).
      return llvm::range_size(weight->getUses()) == all.size();
    };
    size_t before = found.size();
    llvm::erase_if(found, [&](FusedProjection &projection) {
      bool keep = isWhole(projection.weight) && isWhole(projection.gemmBias) &&
                  isWhole(projection.addBias);
      LLVM_DEBUG(if (!keep) llvm::dbgs()
                 << "left fused: '" << projection.weight.getName()
                 << "' or its bias is also read elsewhere\n");
      return !keep;
    });
    changed = found.size() != before;
  }
}

void SplitFusedProjectionsPass::runOnOperation() {
  ModuleOp module = getOperation();
  llvm::StringSet<> names;
  module.walk([&](WeightOp weight) { names.insert(weight.getName()); });

  SmallVector<FusedProjection> found;
  module.walk([&](Operation *op) {
    if (!isa<MatMulOp, GemmOp>(op))
      return;
    std::optional<FusedProjection> projection = matchProjection(op);
    if (!projection)
      return;
    // New names must not clash with the model's.
    unsigned count = projection->parts.size();
    for (WeightOp weight :
         {projection->weight, projection->gemmBias, projection->addBias})
      for (unsigned i = 0; weight && i < count; ++i)
        if (names.contains(getPartName(weight.getName(), i, count))) {
          LLVM_DEBUG(llvm::dbgs() << "left fused: part names of '"
                                  << weight.getName() << "' are taken\n");
          return;
        }
    found.push_back(std::move(*projection));
  });
  rejectPartlyRead(found);

  WeightPartMap splitWeights;
  for (FusedProjection &projection : found) {
    LLVM_DEBUG(llvm::dbgs()
               << "splitting '" << projection.weight.getName() << "' into "
               << projection.parts.size() << " parts\n");
    ++numProjections;
    numParts += projection.parts.size();
    splitProjection(projection, splitWeights);
  }
}
