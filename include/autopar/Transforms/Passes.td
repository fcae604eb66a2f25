//===- Passes.td - autopar planning and partitioning passes -*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PASSES_TD
#define AUTOPAR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AppendLossPass : Pass<"autopar-append-loss", "mlir::ModuleOp"> {
  let summary = "end @main in a scalar training loss (for planning)";
  let description = [{
    Input contract: a module as produced by the importer, without shardings.
    `@main` then returns only the scalar loss, so no model output has to be
    gathered on every device:
    - `cross_entropy`: token cross-entropy over the last output (logits
      `[..., V]`) against a new int64 argument `labels` of the logits' shape
      without the last dimension (mean over positions of
      -log softmax(logits)[label]);
    - `mse`: mean squared error of the single output against a new float
      argument `target` of its shape;
    - `output`: the single output already is the loss (must be a scalar).

    Before (`--autopar-append-loss="loss=mse"`):
    ```mlir
    func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
      %y = autopar.relu %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
      return %y : tensor<8x4xf32>
    }
    ```
    After:
    ```mlir
    func.func @main(%x: tensor<8x4xf32>, %target: tensor<8x4xf32>) -> tensor<f32> {
      %y = autopar.relu %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
      %d = autopar.sub %y, %target : ...
      %s = autopar.mul %d, %d : ...
      %t = autopar.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : ...
      %f = autopar.constant dense<3.125000e-02> : tensor<f32>
      %l = autopar.mul %t, %f : (tensor<f32>, tensor<f32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"cross_entropy\"",
           "cross_entropy, mse or output">,
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def DifferentiatePass : Pass<"autopar-differentiate", "mlir::ModuleOp"> {
  let summary = "turn a forward function with a scalar loss into one "
                "training step (forward, backward, optimizer update)";
  let description = [{
    Input contract: an imported module (no shardings) whose `@main` returns
    one scalar float loss, as `autopar-append-loss` leaves it. The trainable
    parameters are the float `autopar.weight`s of rank >= 1 whose name is not
    in `freeze`.

    The pass appends to `@main`, in one function:
    - the backward pass: every op between a trainable weight and the loss
      builds its vector-Jacobian product through `GradientOpInterface`, in
      reverse program order; gradients of values used several times are
      summed, and the gradient of a broadcast operand is summed back to its
      shape. An op on that path without a rule is an error naming the node
      and the op;
    - the optimizer update, stored with `autopar.assign`:
      - `sgd`: w <- w - lr (g + weight_decay w);
      - `adam`: m <- b1 m + (1 - b1) g, v <- b2 v + (1 - b2) g^2,
        t <- t + 1, w <- w - lr/(1 - b1^t) m / (sqrt(v)/sqrt(1 - b2^t) + eps)
        with b1 0.9, b2 0.999, eps 1e-8; with `weight-decay` w is first
        scaled by 1 - lr weight_decay (AdamW). m, v (per parameter,
        `<name>.adam_m`/`.adam_v`) and t (`adam.step`, tensor<1xf32>) are
        new weights marked `autopar.zero_init`: the compiler writes zeros
        for them, the runtime keeps them between steps.
    `@main` still returns the loss (of the forward pass before the update).
    In a pipeline stage (`autopar-build-stage-step`), a weight marked
    `autopar.tied = {stages, self, tag}` is updated with the sum of every
    listed stage's gradient: this stage's gradient is sent to the others
    (`autopar.send ... tag t`), theirs are received, and the sum is taken in
    stage order, so that every stage computes the same value; all tied
    weights' sends come before their receives.

    Before (`--autopar-differentiate="optimizer=sgd lr=0.1"`):
    ```mlir
    func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
      %w = autopar.weight "w" : tensor<3xf32>
      %y = autopar.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
      %l = autopar.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : ...
      return %l : tensor<f32>
    }
    ```
    After:
    ```mlir
    func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
      %w = autopar.weight "w" : tensor<3xf32>
      ... forward as before ...
      %one = autopar.constant dense<1.0> : tensor<f32>
      %g0 = autopar.reshape %one : (tensor<f32>) -> tensor<1x1xf32>
      %g1 = autopar.expand %g0 : (tensor<1x1xf32>) -> tensor<4x3xf32>
      %g2 = autopar.mul %g1, %x : ...
      %gw = autopar.reduce_sum %g2 {axes = array<i64: 0>, keepdims = true} : ...
      %gr = autopar.reshape %gw : (tensor<1x3xf32>) -> tensor<3xf32>
      %lr = autopar.constant dense<1.0e-01> : tensor<f32>
      %s = autopar.mul %gr, %lr : ...
      %n = autopar.sub %w, %s : ...
      %0 = autopar.assign %w, %n : tensor<3xf32>
      return %l : tensor<f32>
    }
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd or adam">,
    Option<"learningRate", "lr", "double", /*default=*/"0.01",
           "learning rate">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 weight decay (sgd: added to the gradient; adam: decoupled, "
           "AdamW)">,
    ListOption<"freeze", "freeze", "std::string",
               "names of float initializers that are not trained">,
  ];
  let statistics = [
    Statistic<"numTrainable", "trainable-weights",
              "Number of weights updated by the step">,
    Statistic<"numBackwardOps", "backward-ops",
              "Number of ops built for the backward pass">,
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def ApplyPlanPass : Pass<"autopar-apply-plan", "mlir::ModuleOp"> {
  let summary = "annotate every value with the sharding of a parallel plan";
  let description = [{
    Input contract: a module as produced by the importer (`func.func @main` of
    autopar ops, weights as `autopar.weight`), without shardings. The pass
    adds the device grid as `shard.grid @grid` (unless the module already has
    one with the same shape) and writes a `#autopar.sharding` on every tensor
    value: `autopar.sharding` on each argument and result of `@main`,
    `autopar.shardings` on each op.

    Plans (`plan` option):
    - `replicated`: nothing is split.
    - `data`: dimension 0 of every runtime input is split over all grid axes;
      everything else follows by propagation through the ops' sharding rules.
    - `tensor`: Megatron-style over the last grid axis (and data parallel over
      axis 0 on a grid of two or more axes): along each chain of weight-bearing
      MatMul/Gemm/Conv ops, the first is split by output columns, the next by its
      contraction dimension (its result is a pending sum, reduced where a
      consumer needs it), and so on.
    - a path to a plan file (`plan.json`): its `values` pin the sharding of
      the named ONNX tensors; the rest propagates.

    Outputs of `@main` are requested replicated.

    Before (`--autopar-apply-plan="grid=2 plan=data"`):
    ```mlir
    func.func @main(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
      %w = autopar.weight "w" : tensor<4x16xf32>
      %y = autopar.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
      return %y : tensor<8x16xf32>
    }
    ```
    After:
    ```mlir
    shard.grid @grid(shape = 2)
    func.func @main(%x: tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[0], []]>})
        -> (tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
      %w = autopar.weight "w" {autopar.shardings = [#autopar.sharding<[[], []]>]} : tensor<4x16xf32>
      %y = autopar.matmul %x, %w {autopar.shardings = [#autopar.sharding<[[0], []]>]} : ...
      return %y : tensor<8x16xf32>
    }
    ```
  }];
  let options = [
    Option<"grid", "grid", "std::string", /*default=*/"\"1\"",
           "device grid: N or AxB[xC...]">,
    Option<"plan", "plan", "std::string", /*default=*/"\"replicated\"",
           "replicated, data, tensor, or the path of a plan file">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect",
                           "mlir::autopar::AutoparDialect"];
}

def AutoPlanPass : Pass<"autopar-auto-plan", "mlir::ModuleOp"> {
  let summary = "choose the fastest plan that fits in memory (exact search)";
  let description = [{
    Input contract: a module as produced by the importer (`func.func @main` of
    autopar ops), without shardings, and a cluster description
    (`cluster=FILE.json`, see docs/cost-model.md) with one entry per grid
    axis. The pass enumerates the strategies every op's sharding rule allows
    on the grid, prices compute (roofline), collectives (alpha-beta per grid
    axis) and memory (liveness), recognises repeated blocks, solves the
    integer program to proven optimality (COIN-OR CBC) and writes the chosen
    shardings exactly as `autopar-apply-plan` does, so the result feeds
    `autopar-partition`. With `remarks`, each op gets a remark naming its
    strategy and runner-up; the function gets one with the predicted step
    time and peak memory. A plan that cannot fit is an error naming the
    smallest peak any plan reaches.

    Before (`--autopar-auto-plan="grid=2 cluster=c.json"`):
    ```mlir
    func.func @main(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
      %w = autopar.weight "w" : tensor<4x16xf32>
      %y = autopar.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
      return %y : tensor<8x16xf32>
    }
    ```
    After (with slow links, the output columns are split and gathered once):
    ```mlir
    shard.grid @grid(shape = 2)
    func.func @main(%x: tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[], []]>})
        -> (tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
      %w = autopar.weight "w" {autopar.shardings = [#autopar.sharding<[[], [0]]>]} : tensor<4x16xf32>
      %y = autopar.matmul %x, %w {autopar.shardings = [#autopar.sharding<[[], [0]]>]} : ...
      return %y : tensor<8x16xf32>
    }
    ```
  }];
  let options = [
    Option<"grid", "grid", "std::string", /*default=*/"\"1\"",
           "device grid: N or AxB[xC...]">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "cluster description (JSON); required">,
    Option<"mode", "mode", "std::string", /*default=*/"\"inference\"",
           "inference or training">,
    Option<"fold", "fold", "bool", /*default=*/"true",
           "share one strategy among identical repeated blocks">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "emit a remark per op with its strategy and runner-up">,
    Option<"precision", "precision", "std::string", /*default=*/"\"model\"",
           "model, f32, f16 or bf16: the type compute, stored activations "
           "and communication are priced in">,
    Option<"shardOptimizer", "shard-optimizer", "bool", /*default=*/"false",
           "training: shard fp32 master weights and Adam states over each "
           "weight's replicas (ZeRO-1)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "training: microbatches accumulated per step (the module holds "
           "one)">,
    Option<"recompute", "recompute", "std::string", /*default=*/"\"none\"",
           "training: none, selective, full, full:K (the first K repeated "
           "blocks) or auto (none unless memory binds; then the fastest "
           "fitting of none, selective and full)">,
    Option<"timeLimit", "time-limit", "double", /*default=*/"600",
           "seconds the solver may take; on expiry without a solution the "
           "search fails saying so">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect",
                           "mlir::autopar::AutoparDialect"];
}

def SplitFusedProjectionsPass
    : Pass<"autopar-split-fused-projections", "mlir::ModuleOp"> {
  let summary = "split a fused [q | k | v] projection into one projection "
                "per part, so that tensor parallelism gives whole heads";
  let description = [{
    Input contract: an imported module (`func.func @main` of autopar ops, no
    shardings, no training step yet). The driver runs this pass on every
    import (`compile`, `plan`, `verify`, `import`), before the loss, the
    backward pass and planning. In a training step the parts are separate
    parameters (each with its own optimizer state; `--freeze` of the
    original name freezes them); `compile` records each part in
    training.json, and `train --save` and `verify --mode training` put the
    trained parts back together into the original initializer.

    A *fused projection* is an `autopar.matmul` whose B is a 2-d
    `autopar.weight` `[K, N]` or its own `autopar.transpose` of one `[N, K]`
    (PyTorch's training exports), or an `autopar.gemm` whose B is one, either
    orientation, with an optional 1-d weight C of N elements; optionally
    followed by an `autopar.add` of a 1-d weight of N elements, whose result
    is read only by one `autopar.split` along the last dimension into n >= 2
    equal parts, or only by n `autopar.slice`s that take n disjoint equal
    ranges of the last dimension covering it and all of every other
    dimension. This is how PyTorch's `nn.Linear(dim, 3 * dim)` followed by
    `.split` (GPT-2, the zoo's tiny_gpt), Hugging Face's `c_attn` and
    `nn.MultiheadAttention`'s `in_proj` export.

    Each part becomes its own projection on the part's columns of the weight
    and elements of the bias: new `autopar.weight`s named
    `<name>.part<i>of<n>` that carry `autopar.weight_part = {source, axis,
    offset}`, from which the compiler driver cuts their data out of the
    original initializer. The products and the order of accumulation of each
    output element are the same, so the results are identical (in a
    training step, the gradient of the projection's input becomes the sum of
    the n parts' products, added in part order). The tensor
    plan then splits each part by its own output columns: every device gets
    whole heads of q, k and v, where a column split of the fused weight
    would give device 0 all of q and half of k, and the split after it would
    gather the projection.

    A weight (or bias) read by several fused projections, each cut into the
    same number of parts along the same axis and all in the weight's block,
    is split once, and every one of them reads its parts: an eval-mode
    export of `nn.TransformerEncoder`, whose layers are copies of one layer,
    keeps one initializer for their equal in_proj weights. Weights or biases
    read by any other op too (or by projections cut differently), weights of
    rank other than 2, and splits along other dimensions are left as they
    are.

    Before:
    ```mlir
    %w = autopar.weight "qkv.weight" : tensor<64x192xf32>
    %b = autopar.weight "qkv.bias" : tensor<192xf32>
    %p = autopar.matmul %x, %w : (tensor<4x16x64xf32>, tensor<64x192xf32>) -> tensor<4x16x192xf32>
    %s = autopar.add %b, %p : (tensor<192xf32>, tensor<4x16x192xf32>) -> tensor<4x16x192xf32>
    %q, %k, %v = autopar.split %s {axis = 2 : i64} : (tensor<4x16x192xf32>) -> (...)
    ```
    After (likewise for parts 1 and 2):
    ```mlir
    %w0 = autopar.weight "qkv.weight.part0of3" {autopar.weight_part =
        {axis = 1 : i64, offset = 0 : i64, source = "qkv.weight"}} : tensor<64x64xf32>
    %b0 = autopar.weight "qkv.bias.part0of3" {autopar.weight_part =
        {axis = 0 : i64, offset = 0 : i64, source = "qkv.bias"}} : tensor<64xf32>
    %p0 = autopar.matmul %x, %w0 : (tensor<4x16x64xf32>, tensor<64x64xf32>) -> tensor<4x16x64xf32>
    %q = autopar.add %b0, %p0 : (tensor<64xf32>, tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let statistics = [
    Statistic<"numProjections", "projections",
              "Number of fused projections split">,
    Statistic<"numParts", "parts", "Number of projections made from them">,
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def UnmergeHeadsPass : Pass<"autopar-unmerge-heads", "mlir::ModuleOp"> {
  let summary = "keep attention's batch and head dimensions apart where a "
                "reshape merges them, so that tensor parallelism gives whole "
                "heads";
  let description = [{
    Input contract: an imported module, as for
    `autopar-split-fused-projections`, which the driver runs right before
    this pass on every import.

    `nn.MultiheadAttention` (PyTorch 1.13's export, the zoo's ViT and BERT,
    torchvision's ViTs) reshapes each of q, k and v from `[L, B, H * D]` to
    `[L, B * H, D]`: the batch and the heads become one dimension, B outer.
    A split of the heads (the tensor plan's column split of the projection)
    cannot pass that reshape, since a device's heads are not one contiguous
    block of `B * H`; the partitioner gathers each part before it.

    A *seed* is an `autopar.reshape` from `[.., B, H * D, ..]` to
    `[.., B * H, D, ..]` (every other dimension equal; B, H, D > 1). Its
    *region* is the values computed from it through ops that read the merged
    dimension as a batch: `autopar.transpose`; `autopar.matmul` where it is
    a batch dimension; `autopar.softmax` and `autopar.log_softmax` along
    another axis; and elementwise ops (the elementwise sharding rule, no
    position-dependent values), whose operands from outside the region
    either do not reach the merged dimension or have there an extent of 1
    or of `B * H` (they get a reshape into the expanded form). Every other
    `autopar.reshape` ends the region. In a region whose every value is read
    only by such ops (regions joined by an op are one region), the merged
    dimension becomes the two dimensions `B, H`: the seed reshapes to
    `[.., B, H, D, ..]`, transposes and softmax axes are renumbered, result
    types are expanded. The row-major order of every value is unchanged, so
    the reshapes that end the region read the same elements. A region with
    any other reader (an op along the merged dimension, a return) is left
    as it is.

    Before:
    ```mlir
    %r = autopar.reshape %q : (tensor<17x4x64xf32>) -> tensor<17x16x16xf32>
    %t = autopar.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<17x16x16xf32>) -> tensor<16x17x16xf32>
    ```
    After:
    ```mlir
    %r = autopar.reshape %q : (tensor<17x4x64xf32>) -> tensor<17x4x4x16xf32>
    %t = autopar.transpose %r {perm = array<i64: 1, 2, 0, 3>} : (tensor<17x4x4x16xf32>) -> tensor<4x4x17x16xf32>
    ```
  }];
  let statistics = [
    Statistic<"numReshapes", "reshapes",
              "Number of merging reshapes whose dimensions were kept apart">,
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def ShardOptimizerStatePass
    : Pass<"autopar-shard-optimizer-state", "mlir::ModuleOp"> {
  let summary = "shard each weight's optimizer update over its replicas (ZeRO-1)";
  let description = [{
    Input contract: an annotated training step (the output of
    `autopar-apply-plan` or `autopar-auto-plan` on a module that
    `autopar-differentiate` built), whose optimizer ops carry
    `autopar.optimizer_update` naming their weight. Output: the same module
    with new shardings only, still satisfying `autopar-verify-sharded`.

    A weight the plan keeps whole on several devices (replicated over some
    grid axes, as every weight of a data-parallel plan is) is updated
    redundantly by all of them, and each holds all of its optimizer state.
    This pass splits, per weight, one dimension of its optimizer state and of
    every value of its update over those replica axes (Megatron's distributed
    optimizer, ZeRO stage 1): the dimension whose local extent is the largest
    that the replicas divide. The partitioner then turns the gradient's
    pending sum into a `shard.reduce_scatter` instead of an all-reduce, each
    device updates and stores only its slice of the Adam moments, and the
    store of the weight (`autopar.assign`, which keeps the weight's own
    sharding) all-gathers the updated slices: the same communication volume,
    and the optimizer state divided by the replica count. A weight with no
    replica axis, or no dimension the replicas divide, is left as it is.
    Scalar values of the update (learning rate, bias corrections) stay
    replicated.

    Before (grid 2, data plan, adam):
    ```mlir
    %w = autopar.weight "w" {autopar.shardings = [#autopar.sharding<[[], []]>]} : tensor<4x16xf32>
    %m = autopar.weight "w.adam_m" {autopar.optimizer_update = "w",
        autopar.shardings = [#autopar.sharding<[[], []]>], ...} : tensor<4x16xf32>
    ...
    %m1 = autopar.add %a, %b {autopar.optimizer_update = "w",
        autopar.shardings = [#autopar.sharding<[[], []]>]} : ...
    ```
    After:
    ```mlir
    %m = autopar.weight "w.adam_m" {..., autopar.shardings = [#autopar.sharding<[[], [0]]>]} : tensor<4x16xf32>
    %m1 = autopar.add %a, %b {..., autopar.shardings = [#autopar.sharding<[[], [0]]>]} : ...
    ```
  }];
}

def BuildStageStepPass : Pass<"autopar-build-stage-step", "mlir::ModuleOp"> {
  let summary = "a pipeline stage's forward pass over all microbatches, "
                "boundary tensors sent and received in the program";
  let description = [{
    Input contract: the output of `autopar-split-stages` on a module whose
    @main ends in the scalar loss (`autopar-append-loss`), imported at the
    size of one microbatch. Output: each stage module's @main is the forward
    half of that stage's training step over `microbatches` microbatches, for
    `autopar-differentiate` to complete:
    - the body is cloned once per microbatch j, each op marked
      `autopar.microbatch = j` (for `autopar-schedule-microbatches`);
    - a runtime input becomes one argument per microbatch, marked
      `autopar.stage_input = {input = i, microbatch = j}` (the runtime reads
      that slice of the batch), or one argument every microbatch reads,
      `{input = i}`, for the inputs listed in `whole` (without a batch
      dimension);
    - a received boundary tensor b becomes `autopar.recv from s tag t` and a
      sent one `autopar.send ... to s tag t`, with t = b * microbatches + j;
    - the stage that holds the loss returns the mean of the microbatches'
      losses (`{output = 0}`); the other stages return nothing.
    A trainable weight that several stages read (tied embeddings, not in
    `freeze`) keeps one value: each of its loads in those stages is marked
    `autopar.tied = {stages = [...], self = s, tag = t}`, with one tag per
    such weight after the boundary tensors' (t >= boundaries *
    microbatches), and `autopar-differentiate` sums the stages' gradients.

    Before (`--autopar-build-stage-step="microbatches=2"`), stage 0 of 2:
    ```mlir
    func.func @main(%x: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64}})
        -> (tensor<2x4xf32> {autopar.stage_output = {boundary = 0 : i64, to = [1]}}) {
      %w = autopar.weight "w" : tensor<4x4xf32>
      %y = autopar.matmul %x, %w : ...
      return %y : tensor<2x4xf32>
    }
    ```
    After:
    ```mlir
    func.func @main(%x0: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64, microbatch = 0 : i64}},
                    %x1: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64, microbatch = 1 : i64}}) {
      %w0 = autopar.weight "w" {autopar.microbatch = 0 : i64} : tensor<4x4xf32>
      %y0 = autopar.matmul %x0, %w0 {autopar.microbatch = 0 : i64} : ...
      %s0 = autopar.send %y0 to 1 tag 0 {autopar.microbatch = 0 : i64} : tensor<2x4xf32>
      ... microbatch 1, tag 1 ...
      return
    }
    ```
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "microbatches per step">,
    ListOption<"whole", "whole", "int64_t",
               "runtime inputs every microbatch reads whole">,
    ListOption<"freeze", "freeze", "std::string",
               "weights that are not trained">,
  ];
  let statistics = [
    Statistic<"numTiedWeights", "tied-weights",
              "trainable weights read by several stages">,
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect",
                           "mlir::func::FuncDialect"];
}

def RecomputeRegionsPass
    : Pass<"autopar-recompute-regions", "mlir::ModuleOp"> {
  let summary = "recompute marked forward regions before the backward pass "
                "(activation recomputation)";
  let description = [{
    Input contract: a training step after `autopar-differentiate` (a pipeline
    stage's, before `autopar-schedule-microbatches`), whose forward ops carry
    `autopar.recompute_region = i` where the plan recomputes
    (`markRecomputeRegions`: attention cores, or whole repeated blocks).
    Output: every operand of a backward op (`autopar.backward`) produced by a
    pure op of a region, and read outside the region by no forward op, reads a
    clone of the region's ops instead. The clones are built right before the
    first backward op that reads them, marked backward of the same microbatch
    and `autopar.recomputed`; their own operands are the region's inputs and
    the values it stores (those forward ops outside it read). The original
    forward values then die with their last forward use, and a region's
    recomputed working set lives during its own backward pass only: the
    memory the planner's recomputation counts. Ops with side effects
    (sends, receives) are never cloned. Without marks the pass changes
    nothing.

    Before:
    ```mlir
    %h = autopar.relu %x {autopar.recompute_region = 0 : i64, autopar.microbatch = 0 : i64}
    %y = autopar.matmul %h, %w {autopar.recompute_region = 0 : i64, autopar.microbatch = 0 : i64}
    ...
    %dh = autopar.matmul %dy, %wt {autopar.backward, autopar.microbatch = 0 : i64}
    %dx = autopar.relu_grad %dh, %h {autopar.backward, autopar.microbatch = 0 : i64}
    ```
    After: `%h2 = autopar.relu %x {autopar.backward, autopar.microbatch = 0,
    autopar.recomputed}` right before the op reading `%h`, which reads `%h2`.
  }];
  let statistics = [
    Statistic<"numRecomputed", "recomputed-ops",
              "forward ops cloned before the backward pass">
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def ScheduleMicrobatchesPass
    : Pass<"autopar-schedule-microbatches", "mlir::ModuleOp"> {
  let summary = "order a pipeline stage's training step by its schedule";
  let description = [{
    Input contract: a stage module after `autopar-build-stage-step` and
    `autopar-differentiate` (ops marked `autopar.microbatch`, the backward
    ones also `autopar.backward`). Output: the same ops, in the order of
    `schedule` for stage `stage` of `stages`, with the marks removed:
    - `1f1b`: `stages - 1 - stage` warm-up forwards, then one forward and one
      backward in turn, then the remaining backwards. At most
      `stages - stage` microbatches' activations are alive at once;
    - `gpipe`: every forward, then every backward.
    Loads of a weight by several microbatches become one load at the top.
    Ops of no microbatch (the loss, gradient sums, the optimizer update) go
    as early as their operands allow, weight stores last. Since every
    stage's program order follows the same schedule, and sends do not wait,
    the boundary messages cannot deadlock.

    Before (`stage=1 stages=2`, two microbatches): F0 F1 B1 B0 in program
    order (as differentiation leaves them). After: F0 B0 F1 B1.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"0", "this stage">,
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "stages of the pipeline">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "1f1b or gpipe">,
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def SplitStagesPass : Pass<"autopar-split-stages", "mlir::ModuleOp"> {
  let summary = "split @main into one program per pipeline stage (MPMD)";
  let description = [{
    Input contract: a module as produced by the importer (or after
    `autopar-append-loss`), with a `func.func @main` that holds repeated
    blocks (the transformer layers of a GPT), not yet planned. Output: the
    module holds one nested `module @stage<s>` per pipeline stage (attribute
    `autopar.stage = s`) and no @main; each stage module has its own
    `func.func @main`, planned, partitioned and lowered afterwards like any
    single program on its slab of grid axis 0.

    The cut points are the pipeline planner's (PipelinePlan.cpp shares them):
    the model's most repeated block; stage s runs `blocks[s]` consecutive
    blocks, the first stage also the ops before the blocks (embedding) and the
    last stage the ops after (head). Weights and constants are copied into
    every stage that reads them. Every argument of a stage's @main carries
    `autopar.stage_input`: `{input = i}` (runtime input i of the model) or
    `{boundary = b, from = s}` (boundary tensor b, received from stage s); every
    result carries `autopar.stage_output`: `{output = j}` (runtime output j)
    or `{boundary = b, to = [t, ...]}` (sent to those stages). A value used by
    several later stages is sent to each of them directly.

    Options: `stages=P` splits the blocks evenly (later stages take the
    remainder), or `blocks=K0,K1,...` gives each stage's count (they must add
    up to the model's repeated blocks; no stage is empty).

    Before (`--autopar-split-stages="stages=2"`, two blocks):
    ```mlir
    func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
      %a = autopar.relu %x ...  // block 0
      %b = autopar.relu %a ...  // block 1
      return %b
    }
    ```
    After:
    ```mlir
    module @stage0 attributes {autopar.stage = 0 : i64} {
      func.func @main(%x: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64}})
          -> (tensor<2x4xf32> {autopar.stage_output = {boundary = 0 : i64, to = [1]}})
    }
    module @stage1 attributes {autopar.stage = 1 : i64} {
      func.func @main(%a: tensor<2x4xf32> {autopar.stage_input = {boundary = 0 : i64, from = 0 : i64}})
          -> (tensor<2x4xf32> {autopar.stage_output = {output = 0 : i64}})
    }
    ```
  }];
  let options = [
    Option<"stages", "stages", "unsigned", /*default=*/"0",
           "pipeline stages (blocks split evenly)">,
    ListOption<"blocks", "blocks", "unsigned",
               "repeated blocks per stage, e.g. 2,2">,
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def VerifyShardedPass : Pass<"autopar-verify-sharded", "mlir::ModuleOp"> {
  let summary = "check the planning contract: every tensor value is sharded";
  let description = [{
    Input contract of partitioning (upstream `shard-partition` segfaults when it
    is broken): the module has exactly one `shard.grid`; every tensor argument,
    op result and function result of `@main` carries a `#autopar.sharding`
    whose rank matches the value, whose axes exist on the grid, and whose split
    dimensions divide evenly. Each violation is an error on the offending value
    naming it (ONNX tensor name when known); the IR is not changed.

    ```mlir
    // expected-error @below {{value 'y' has no sharding}}
    %y = autopar.relu %x : (tensor<8xf32>) -> tensor<8xf32>
    ```
  }];
}

def PartitionPass : Pass<"autopar-partition", "mlir::ModuleOp"> {
  let summary = "partition an annotated module into the SPMD device program";
  let description = [{
    Input contract: the output of `autopar-verify-sharded`. Output: the same
    function computing one device's share: every value gets its local type,
    each op's operands are resharded to what the op's sharding rule requires
    (from its `shard::ShardingInterface` loop iterator types and indexing maps
    and the loop assignment implied by its result sharding), and the reshards
    are single-step collectives on `@grid`: `shard.all_reduce` (pending sum to
    replicated), `shard.reduce_scatter` (pending sum to split),
    `shard.all_gather`, `shard.all_to_all`, `shard.all_slice` (local), and
    `autopar.to_partial` (replicated to pending sum, local). The arguments and
    results of `@main` take the local types of their shardings: each device
    reads only its own block of an input and writes only its own block of an
    output. A split argument or result keeps its split (without pending
    sums: an input planned partial is read split and made partial locally, a
    partial result is summed first) in `autopar.sharding` and its global type
    in `autopar.global_type` (argument and result attributes); replicated
    ones have no attributes.
    `autopar.weight` ops get the local type and keep their global type in
    `autopar.global_type` and their sharding in `autopar.shardings`.

    Before (grid 2, data plan):
    ```mlir
    %y = autopar.matmul %x, %w {autopar.shardings = [#autopar.sharding<[[0], []]>]}
        : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
    ```
    After:
    ```mlir
    // %x : tensor<4x4xf32> {autopar.sharding = #autopar.sharding<[[0], []]>,
    //                       autopar.global_type = tensor<8x4xf32>}
    %y = autopar.matmul %x, %w : (tensor<4x4xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %g = shard.all_gather %y on @grid grid_axes = [0] gather_axis = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
    return %g : tensor<8x16xf32>   // the plan asked for a replicated output
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect",
                           "mlir::autopar::AutoparDialect"];
  let statistics = [
    Statistic<"numCollectives", "collectives",
              "number of communicating collectives inserted">,
  ];
}

#endif // AUTOPAR_TRANSFORMS_PASSES_TD
