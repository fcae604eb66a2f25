//===- StrategyGraph.h - the planning problem as a graph --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The graph the planner searches over: @main in program order (runtime
// inputs, weights, constants, compute ops, and the return), every node with
// the strategies it may take, the producer/consumer edges, and the liveness
// points at which memory is counted. Private to the planning library.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_STRATEGYGRAPH_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_STRATEGYGRAPH_H

#include "autopar/Analysis/ElementwiseFusion.h"
#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Transforms/Planning/AutoPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::autopar::planning {

enum class NodeKind { Input, Weight, Constant, Compute, Output };

/// One way to run a node: the loop split of a compute op and the layouts it
/// implies, or the stored layout of an input or weight.
struct Strategy {
  LoopAxes loops;                     ///< compute ops only
  SmallVector<ShardingAttr> operands; ///< required operand layouts
  SmallVector<ShardingAttr> grads;    ///< training: operand gradient layouts
  SmallVector<ShardingAttr> results;
  double compute = 0; ///< forward seconds
  /// A lower bound on `compute` that holds in any program the op is cut
  /// into (a pipeline stage): the FLOP term and the op's overhead, without
  /// the memory traffic, which the fusion of the op's neighbours changes.
  double computeFloor = 0;
};

struct Node {
  NodeKind kind;
  Operation *op = nullptr; ///< null for inputs
  SmallVector<Value> results;
  /// (producer node, result index) per operand.
  SmallVector<std::pair<unsigned, unsigned>> operands;
  std::vector<Strategy> strategies;
  OpClass opClass = OpClass::Elementwise;
  unsigned rep = 0;      ///< representative node after folding
  unsigned seqPos = ~0u; ///< position among compute nodes
  std::string name;
  /// Stored and computed in the model's type whatever the plan's precision:
  /// a mixed-precision training step's master weights, optimizer state,
  /// accumulated gradients and update (getMasterRegion).
  bool keepsF32 = false;
  /// A weight a training step trains (isTrainableWeight with the options'
  /// frozen weights): it has a gradient, reduced once per step, and holds
  /// its optimizer state. Other weights are buffers, read only.
  bool trainable = false;
};

struct Edge {
  unsigned producer, result, consumer, operand;
};

/// A point in program order at which memory is counted: the values live
/// there and the edges whose resharded copies exist there.
struct LivenessPoint {
  unsigned node;
  SmallVector<std::pair<unsigned, unsigned>> live; ///< (node, result)
  SmallVector<unsigned> transient;                 ///< edges
};

/// A choice: the strategy index of every node.
using Choice = std::vector<unsigned>;

/// A node whose strategy the distributed optimizer's split decides from a
/// weight's (autopar-shard-optimizer-state, OptimizerStateSplit.h): under
/// the weight's strategy s the node takes strategy `strategies[s]`, or any
/// when that is -1 (the split leaves the update as planned).
struct SplitTie {
  unsigned weight, node;
  std::vector<int> strategies;
};

/// The strategy graph of one function.
class StrategyGraph {
public:
  StrategyGraph(func::FuncOp func, const AutoPlanOptions &options);

  /// Builds nodes, edges, strategies and liveness points; fails with a
  /// diagnostic on ops that cannot be planned.
  LogicalResult build();
  /// Reads the layouts written on the IR into a choice (adding strategies
  /// that the enumeration does not have).
  FailureOr<Choice> readAnnotated();
  /// Writes the layouts of `choice` on the IR.
  void annotate(const Choice &choice);
  /// Whether `choice` gives every node of `splitTies` the strategy its
  /// weight's strategy decides.
  bool satisfiesSplit(const Choice &choice) const;
  /// Expands a choice over representatives to every node.
  Choice expand(const Choice &repChoice) const;

  RankedTensorType typeOf(unsigned node, unsigned result) const {
    return cast<RankedTensorType>(nodes[node].results[result].getType());
  }
  /// The element type a value of element type `type` is priced in: the
  /// plan's precision for floats, `type` otherwise.
  Type getPricedElementType(Type type) const;
  /// typeOf with the priced element type (activations and communication).
  RankedTensorType pricedTypeOf(unsigned node, unsigned result) const {
    RankedTensorType t = typeOf(node, result);
    return t.clone(getPricedElementType(t.getElementType()));
  }
  /// The type a value is stored in (memory): the priced type, or the
  /// model's own for a node that keeps f32. Its communication is still
  /// priced in pricedTypeOf: a gradient is rounded for its reduction.
  RankedTensorType storedTypeOf(unsigned node, unsigned result) const {
    return nodes[node].keepsF32 ? typeOf(node, result)
                                : pricedTypeOf(node, result);
  }
  /// The least computeFloor of node `n`'s strategies (0 for a node that
  /// computes nothing): whatever its strategy, the node's forward pass takes
  /// at least this long, in this program or in any stage cut from it.
  double getComputeFloor(unsigned n) const;
  size_t getNumNodes() const { return nodes.size(); }
  size_t getNumReps() const;
  size_t getNumComputeOps() const { return sequence.size(); }

  func::FuncOp func;
  MLIRContext *ctx;
  const AutoPlanOptions &options;
  SmallVector<int64_t> gridShape;
  /// Grid axes of size > 1.
  SmallVector<int64_t> activeAxes;

  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::vector<std::vector<unsigned>> inEdges, outEdges;
  std::vector<unsigned> sequence; ///< compute nodes in program order
  unsigned outputNode = 0;
  std::vector<LivenessPoint> points;
  /// Values live at every point (weights, inputs, constants; in training
  /// the stored activations too: `parameters` plus `activations` less those
  /// recomputation drops).
  SmallVector<std::pair<unsigned, unsigned>> persistent;
  /// Weights, inputs and constants.
  SmallVector<std::pair<unsigned, unsigned>> parameters;
  /// Training: every activation the forward pass produces (views excluded).
  SmallVector<std::pair<unsigned, unsigned>> activations;
  /// The liveness points of the program itself; points after these are the
  /// working sets of recomputed regions during their backward pass.
  size_t numProgramPoints = 0;
  /// Training: per node, whether its forward pass runs again before its
  /// backward pass (recomputation). Empty: none.
  std::vector<bool> recomputed;
  /// The distributed optimizer's split (AutoPlanOptions::shardOptimizerState
  /// on a step whose optimizer updates are explicit): the nodes of each
  /// weight's update whose strategy the weight's decides. The plan the search
  /// picks is then the program autopar-shard-optimizer-state leaves (it
  /// sets the layouts the plan already has), and is priced as that program.
  std::vector<SplitTie> splitTies;
  /// The elementwise chains of @main that run as one pass over memory: each
  /// op's bytes leave out the values its kernel never stores and the
  /// operands it reads already (decided from the graph, so that an op's
  /// price under a strategy is its own).
  std::optional<ElementwiseFusion> fusion;

  /// How many times a persistent value of node `n` is held: the
  /// microbatches in flight (`activationCopies`) for the runtime inputs and
  /// stored activations of training, once otherwise.
  double getStoredCopies(unsigned n) const {
    NodeKind kind = nodes[n].kind;
    return options.mode == PlanMode::Training &&
                   (kind == NodeKind::Compute || kind == NodeKind::Input)
               ? double(options.activationCopies)
               : 1.0;
  }

  bool isRecomputed(unsigned node) const {
    return node < recomputed.size() && recomputed[node];
  }

private:
  LogicalResult enumerate(Node &node);
  Strategy makeComputeStrategy(Node &node, const ShardingRule &rule,
                               const LoopAxes &loops);
  ShardingAttr gradLayout(const ShardingRule &rule, unsigned operand,
                          const LoopAxes &loops, ShardingAttr required) const;
  void computeLiveness();
  /// Builds `splitTies`, adding the strategies the split gives; fails with a
  /// diagnostic on an update the split leaves half set.
  LogicalResult tieOptimizerSplit(
      const DenseMap<Value, std::pair<unsigned, unsigned>> &producer);
  /// The strategy of node `n` (an input, a weight or a compute op) whose
  /// results have layouts `results` (its loops follow from them), added
  /// when the enumeration does not have it.
  FailureOr<unsigned> getStrategyWithResults(unsigned n,
                                             ArrayRef<ShardingAttr> results);
  /// The strategy of compute node `node` with these loops and layouts, added
  /// (priced with the rule's loops) when the enumeration does not have it.
  unsigned findOrAddComputeStrategy(Node &node, const ShardingRule &rule,
                                    const LoopAxes &loops,
                                    ArrayRef<ShardingAttr> results,
                                    ArrayRef<ShardingAttr> operands);
  /// The node autopar-fuse-elementwise computes node `n`'s result inside
  /// (the rule of that pass, stated on autopar ops), given each buffer's
  /// last use; nullopt when the result is a buffer of its own.
  std::optional<unsigned> getFusedConsumer(
      unsigned n,
      const std::map<std::pair<unsigned, unsigned>, unsigned> &lastUse,
      llvm::function_ref<
          std::pair<unsigned, unsigned>(std::pair<unsigned, unsigned>)>
          rootOf) const;
};

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_STRATEGYGRAPH_H
