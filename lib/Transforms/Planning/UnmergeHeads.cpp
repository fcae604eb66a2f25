//===- UnmergeHeads.cpp - Keep attention's batch and heads apart ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-unmerge-heads: a reshape that merges a batch
// dimension with the heads of the next dimension ([.., B, H * D] ->
// [.., B * H, D], as nn.MultiheadAttention's export does) keeps B and H as
// two dimensions, through the transposes, batched matmuls, softmaxes and
// elementwise ops that read the merged dimension as a batch, up to the
// reshapes that end it. A split of the heads then passes the reshape, so the
// tensor plan gives every device whole heads.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "autopar-unmerge-heads"

namespace mlir::autopar {
#define GEN_PASS_DEF_UNMERGEHEADSPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// Where a value holds the merged dimension, and its two factors: after the
/// rewrite, dimension `pos` of extent `outer * inner` becomes the two
/// dimensions `pos` (outer, the batch) and `pos + 1` (inner, the heads).
struct Merged {
  int64_t pos = 0;
  int64_t outer = 1;
  int64_t inner = 1;
  /// The seed reshape whose region the value belongs to (the key of its
  /// equivalence class).
  Operation *seed = nullptr;
};

/// What the rewrite does at one op of a region.
struct Step {
  Operation *op = nullptr;
  /// The result's merged dimension (ops that end the region: none).
  std::optional<Merged> result;
  /// Operands outside the region that need a reshape into the expanded form:
  /// (operand number, dimension of the operand aligned with the merged one).
  SmallVector<std::pair<unsigned, int64_t>> entries;
};

struct UnmergeHeadsPass
    : public mlir::autopar::impl::UnmergeHeadsPassBase<UnmergeHeadsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// `type` with dimension `pos` replaced by the two dimensions `outer`,
/// `inner`.
static RankedTensorType expandType(Type type, int64_t pos, int64_t outer,
                                   int64_t inner) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[pos] = outer;
  shape.insert(shape.begin() + pos + 1, inner);
  return tensor.clone(shape);
}

/// The merged dimension a reshape creates: input [.., B, H * D, ..] and
/// result [.., B * H, D, ..] with every other dimension equal, B, H, D > 1.
static std::optional<Merged> matchSeed(ReshapeOp reshape) {
  auto inType = cast<RankedTensorType>(reshape.getInput().getType());
  auto outType = cast<RankedTensorType>(reshape.getType());
  if (!inType.hasStaticShape() || !outType.hasStaticShape() ||
      inType.getRank() != outType.getRank() || inType.getRank() < 2)
    return std::nullopt;
  ArrayRef<int64_t> in = inType.getShape(), out = outType.getShape();
  SmallVector<int64_t> differ;
  for (int64_t d = 0; d < inType.getRank(); ++d)
    if (in[d] != out[d])
      differ.push_back(d);
  if (differ.size() != 2 || differ[1] != differ[0] + 1)
    return std::nullopt;
  int64_t pos = differ[0];
  int64_t batch = in[pos], merged = out[pos], rest = out[pos + 1];
  if (batch <= 1 || rest <= 1 || merged % batch != 0)
    return std::nullopt;
  int64_t heads = merged / batch;
  if (heads <= 1 || in[pos + 1] != heads * rest)
    return std::nullopt;
  return Merged{pos, batch, heads, reshape};
}

/// Whether `op` computes each result element from the elements at the same
/// position of its (broadcast) operands: its sharding rule is the
/// elementwise rule, every loop splittable, and its values do not depend on
/// the positions themselves.
static bool isElementwise(Operation *op) {
  auto rule = dyn_cast<ShardingRuleInterface>(op);
  if (!rule || op->getNumResults() != 1 || op->getNumRegions() != 0 ||
      op->hasTrait<UsesGlobalPosition>() || isa<ReshapeOp>(op) ||
      !isa<RankedTensorType>(op->getResult(0).getType()))
    return false;
  int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || type.getRank() > rank)
      return false;
  }
  LoopShardingRule own = rule.getShardingRule();
  LoopShardingRule elementwise = getElementwiseShardingRule(op);
  return own.maps == elementwise.maps &&
         own.iterators == elementwise.iterators &&
         llvm::all_of(own.splittable, [](bool s) { return s; });
}

/// The step at `op`, which reads at least one value of a region (`merged`),
/// whose operands broadcast to its result (elementwise ops, and the batch
/// dimensions of a matmul): every region operand has the merged dimension
/// at the same result dimension, with the same factors; an operand outside
/// the region has there an extent of 1 or the merged extent (it gets an
/// entry reshape) or does not reach it. Null if it cannot be expanded.
static std::optional<Step>
matchBroadcast(Operation *op, ArrayRef<Value> operands,
               const llvm::DenseMap<Value, Merged> &merged) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  std::optional<Merged> result;
  for (Value operand : operands) {
    auto it = merged.find(operand);
    if (it == merged.end())
      continue;
    Merged m = it->second;
    m.pos += rank - static_cast<int64_t>(shapeOf(operand).size());
    if (result && (result->pos != m.pos || result->outer != m.outer ||
                   result->inner != m.inner))
      return std::nullopt;
    if (!result)
      result = m;
  }
  assert(result && "a step reads a value of a region");
  if (resultType.getDimSize(result->pos) != result->outer * result->inner)
    return std::nullopt;
  Step step{op, result, {}};
  for (auto [index, operand] : llvm::enumerate(operands)) {
    if (merged.count(operand))
      continue;
    ArrayRef<int64_t> shape = shapeOf(operand);
    int64_t dim = result->pos - (rank - static_cast<int64_t>(shape.size()));
    if (dim < 0)
      continue;
    if (shape[dim] != 1 && shape[dim] != result->outer * result->inner)
      return std::nullopt;
    step.entries.push_back({static_cast<unsigned>(index), dim});
  }
  return step;
}

/// The step at `op`, a reader of a region value; null if the region cannot
/// be expanded through it.
static std::optional<Step>
matchStep(Operation *op, const llvm::DenseMap<Value, Merged> &merged) {
  SmallVector<Value> operands(op->getOperands());
  // A reshape ends the region: the expanded value's elements are in the
  // merged value's row-major order, so it reads the same rows.
  if (isa<ReshapeOp>(op))
    return Step{op, std::nullopt, {}};
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    Merged m = merged.lookup(transpose.getInput());
    ArrayRef<int64_t> perm = transpose.getPerm();
    auto *it = llvm::find(perm, m.pos);
    m.pos = it - perm.begin();
    return Step{op, m, {}};
  }
  if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    Merged m = merged.lookup(operands.front());
    int64_t rank = shapeOf(operands.front()).size();
    int64_t axis = isa<SoftmaxOp>(op) ? cast<SoftmaxOp>(op).getAxis()
                                      : cast<LogSoftmaxOp>(op).getAxis();
    if (axis < 0)
      axis += rank;
    if (axis == m.pos)
      return std::nullopt;
    return Step{op, m, {}};
  }
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    // The merged dimension must be a batch dimension of the result, and
    // both operands must be matrices (no 1-D promotion).
    int64_t rank = matmul.getType().getRank();
    if (shapeOf(matmul.getA()).size() < 2 || shapeOf(matmul.getB()).size() < 2)
      return std::nullopt;
    std::optional<Step> step = matchBroadcast(op, operands, merged);
    if (!step || step->result->pos >= rank - 2)
      return std::nullopt;
    return step;
  }
  if (isElementwise(op))
    return matchBroadcast(op, operands, merged);
  return std::nullopt;
}

/// The new axis attribute of a softmax along `axis` of a value whose merged
/// dimension `pos` becomes two.
static int64_t shiftAxis(int64_t axis, int64_t rank, int64_t pos) {
  if (axis < 0)
    axis += rank;
  return axis > pos ? axis + 1 : axis;
}

/// Applies `step`: entry reshapes for its outside operands, the expanded
/// result type and the op's dimension attributes.
static void applyStep(const Step &step,
                      const llvm::DenseMap<Value, Merged> &merged) {
  Operation *op = step.op;
  OpBuilder b(op);
  if (!step.result)
    return; // A reshape that ends the region reads the rows as they are.
  const Merged &m = *step.result;
  for (auto [index, dim] : step.entries) {
    Value operand = op->getOperand(index);
    bool unit = shapeOf(operand)[dim] == 1;
    RankedTensorType type = expandType(operand.getType(), dim,
                                       unit ? 1 : m.outer, unit ? 1 : m.inner);
    Value entry = ReshapeOp::create(b, op->getLoc(), type, operand);
    op->setOperand(index, entry);
  }
  Type oldType = op->getResult(0).getType();
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    int64_t inPos = merged.lookup(transpose.getInput()).pos;
    SmallVector<int64_t> perm;
    for (int64_t p : transpose.getPerm()) {
      if (p == inPos) {
        perm.push_back(p);
        perm.push_back(p + 1);
      } else {
        perm.push_back(p > inPos ? p + 1 : p);
      }
    }
    transpose.setPerm(perm);
  } else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    int64_t rank = cast<RankedTensorType>(oldType).getRank();
    softmax.setAxis(shiftAxis(softmax.getAxis(), rank, m.pos));
  } else if (auto logSoftmax = dyn_cast<LogSoftmaxOp>(op)) {
    int64_t rank = cast<RankedTensorType>(oldType).getRank();
    logSoftmax.setAxis(shiftAxis(logSoftmax.getAxis(), rank, m.pos));
  }
  op->getResult(0).setType(expandType(oldType, m.pos, m.outer, m.inner));
}

void UnmergeHeadsPass::runOnOperation() {
  ModuleOp module = getOperation();
  module.walk([&](func::FuncOp func) {
    if (func.isExternal())
      return;
    // Each value of a region, its merged dimension; regions are the
    // equivalence classes of their seeds (an op reading two regions joins
    // them), and a region any of whose values has a reader the rewrite
    // cannot expand is left as it is.
    llvm::DenseMap<Value, Merged> merged;
    llvm::EquivalenceClasses<Operation *> regions;
    llvm::DenseSet<Operation *> rejected;
    SmallVector<Step> steps;
    func.walk([&](Operation *op) {
      auto reshape = dyn_cast<ReshapeOp>(op);
      if (reshape && op->getParentOp() == func)
        if (!merged.count(reshape.getInput()))
          if (std::optional<Merged> seed = matchSeed(reshape)) {
            merged[reshape.getResult()] = *seed;
            regions.insert(op);
            steps.push_back(Step{op, seed, {}});
            return;
          }
      SmallVector<Operation *> seeds;
      for (Value operand : op->getOperands()) {
        auto it = merged.find(operand);
        if (it != merged.end() && !llvm::is_contained(seeds, it->second.seed))
          seeds.push_back(it->second.seed);
      }
      if (seeds.empty())
        return;
      for (Operation *seed : seeds)
        regions.unionSets(seeds.front(), seed);
      std::optional<Step> step =
          op->getParentOp() == func ? matchStep(op, merged) : std::nullopt;
      if (!step) {
        LLVM_DEBUG(llvm::dbgs()
                   << "left merged: cannot expand " << *op << "\n");
        rejected.insert(seeds.front());
        return;
      }
      if (step->result) {
        step->result->seed = seeds.front();
        merged[op->getResult(0)] = *step->result;
      }
      steps.push_back(std::move(*step));
    });
    if (steps.empty())
      return;

    // A region is rejected when any of its seeds' classes is.
    llvm::DenseSet<Operation *> rejectedLeaders;
    for (Operation *seed : rejected)
      rejectedLeaders.insert(regions.getLeaderValue(seed));
    auto isKept = [&](const Step &step) {
      Operation *seed = step.result ? step.result->seed : nullptr;
      if (!seed)
        for (Value operand : step.op->getOperands())
          if (auto it = merged.find(operand); it != merged.end())
            seed = it->second.seed;
      return !rejectedLeaders.contains(regions.getLeaderValue(seed));
    };
    // Decide every step before any type changes: the types are read while
    // deciding and written while applying.
    SmallVector<bool> kept;
    for (const Step &step : steps)
      kept.push_back(isKept(step));
    for (auto [step, keep] : llvm::zip_equal(steps, kept)) {
      if (!keep)
        continue;
      if (step.result && step.result->seed == step.op)
        ++numReshapes;
      applyStep(step, merged);
    }
  });
}
