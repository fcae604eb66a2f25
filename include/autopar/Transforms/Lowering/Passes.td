//===- Passes.td - autopar lowering transforms -------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Transforms of the lowering stage that are not conversions of autopar ops:
// buffer placement and copies after bufferization, runtime checks.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_LOWERING_PASSES_TD
#define AUTOPAR_TRANSFORMS_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerPrecisionPass
    : Pass<"autopar-lower-precision", "mlir::ModuleOp"> {
  let summary = "store weights and activations of a device program in bf16 "
                "or f16, computing in f32";
  let description = [{
    Input contract: a device program (after `autopar-partition`, before
    `autopar-pack-contractions`). With `precision` `bf16` or `f16`, every f32
    tensor of `@main` between its arguments and its results is stored in the
    lower type (`f32` leaves the program unchanged):

    - `autopar.weight` ops take the lower element type (also in
      `autopar.global_type`): the compiler driver converts the weight data
      (round to nearest even) when it writes the per-rank files
      (`convertWeightPrecision`);
    - graph inputs and outputs keep their f32 type at the program boundary:
      an `autopar.cast` converts them at entry and exit, so the `.pb` files
      are unchanged;
    - ops that only move data (transpose, reshape, expand, concat, split,
      slice, gather, gather_elements, scatter_*, pad, to_partial,
      swap_grid_axes) and the `shard` collectives move the lower type: a
      split contraction's all-reduce sums bf16 or f16 values (the runtime
      accumulates each pairwise sum in f32);
    - `autopar.constant`s stay f32 for the ops computing with them (an op
      moving data converts them in);
    - every other op computes in f32: its lower-type operands are converted
      by `autopar.cast` and its f32 results rounded back. After lowering
      these casts fuse into the elementwise loops next to them, so
      normalizations, softmax and reductions compute internally in f32 and
      read and write the lower type;
    - contractions (matmul, gemm, conv) see `autopar.cast`s of lower-type
      operands: `autopar-pack-contractions` packs the lower-type sources
      (weights stay packed in the lower type), extends the packed left
      operand to f32 once per call, and emits `linalg.mmt4d` with the
      lower-type right operand and an f32 accumulator;
      `autopar-tile-contractions` reads its register tile as one vector and
      extends it in registers;
    - pipeline sends and receives move the lower type (both stages are
      lowered alike).

    A training step (a program with `autopar.assign`s) is mixed precision:
    the forward and backward passes are lowered as above, and the optimizer
    keeps f32. The master region stays f32: the assigns, the ops carrying
    `autopar.optimizer_update`, the tied-gradient exchange
    (`autopar.gradient_exchange`), the return (the loss), and every op
    whose results only that region reads, directly or through a collective
    (the accumulation of a weight's gradient over its loads and
    microbatches, the Adam step count, the loss's last reduction), and the
    ops and collectives moving master data only to it (a ZeRO update's
    slice of its weight, the all-gather of the updated slices). Gradients
    are still communicated in the lower type: the f32 accumulated gradient
    is rounded once for its all-reduce or reduce-scatter. Assigned weights
    (parameters and optimizer state) keep f32 storage; their reads outside
    the region go through one rounding cast.

    Before:
    ```mlir
    %w = autopar.weight "w" : tensor<8x4xf32>
    %y = autopar.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    ```
    After (`precision=bf16`):
    ```mlir
    %x16 = autopar.cast %x : (tensor<2x8xf32>) -> tensor<2x8xbf16>
    %w = autopar.weight "w" : tensor<8x4xbf16>
    %a = autopar.cast %x16 : (tensor<2x8xbf16>) -> tensor<2x8xf32>
    %b = autopar.cast %w : (tensor<8x4xbf16>) -> tensor<8x4xf32>
    %y = autopar.matmul %a, %b : (...) -> tensor<2x4xf32>
    %y16 = autopar.cast %y : (tensor<2x4xf32>) -> tensor<2x4xbf16>
    %out = autopar.cast %y16 : (tensor<2x4xbf16>) -> tensor<2x4xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"f32\"",
           "element type weights and activations are stored in: f32, bf16 "
           "or f16">
  ];
  let statistics = [
    Statistic<"numLoweredWeights", "lowered-weights",
              "weights stored in the lower type">,
    Statistic<"numMasterWeights", "master-weights",
              "assigned weights (parameters, optimizer state) kept in f32">,
    Statistic<"numMasterOps", "master-ops",
              "ops of a training step's optimizer region kept in f32">,
    Statistic<"numComputeOps", "compute-ops",
              "ops computing in f32 between conversions">
  ];
  let dependentDialects = ["mlir::autopar::AutoparDialect"];
}

def PackContractionsPass
    : Pass<"autopar-pack-contractions", "mlir::ModuleOp"> {
  let summary = "data-tile f32 matmuls, gemms and convolutions into mmt4d "
                "(also those of bf16/f16 operands converted to f32)";
  let description = [{
    Input contract: a device program (after `autopar-partition`, before
    `autopar-lower-program-to-runtime`) with static types. Each f32
    `autopar.matmul` whose right operand is a matrix and whose left operand has
    rank >= 2 (batch dimensions are folded into the rows), and each f32
    `autopar.gemm` without `trans_a`, becomes MLIR's data-tiled form:

    - the left operand (M x K) is packed per call by `linalg.pack` into
      `M1 x K1 x m0 x k0` tiles, padded with zeros;
    - the right operand becomes `N1 x K1 x n0 x k0` tiles. When it is an
      `autopar.weight` used only by such contractions and `pack-weights` is
      set, the weight itself takes the packed type (attributes
      `autopar.packed_tiles`, `autopar.packed_source_type`,
      `autopar.packed_transposed`, see
      autopar/Transforms/Lowering/PackedWeights.h) and the compiler driver
      writes its file packed, so that no step re-lays it out (when the tiles
      do not divide N and K, the file holds the zero padding too: allowed up
      to a sixteenth more than the shard the plan accounts for); otherwise it
      is packed per call by
      `linalg.pack`;
    - `linalg.mmt4d` accumulates into a zero-filled `M1 x N1 x m0 x n0`
      tensor, `linalg.unpack` drops the padding, and a gemm's
      `alpha`, `beta` and bias apply in one elementwise `linalg.generic`.

    The register tile `m0 x n0 x k0` comes from the ISA (`isa`: `auto` for
    the host CPU, `avx512` 8x32x1, `avx2` 6x16x1, `generic` 4x8x1). Operands
    stored in bf16 or f16 (autopar-lower-precision) are packed in that type
    and accumulated in f32: the packed left operand is extended to f32 once
    per call. With `avx512bf16` (AVX512-BF16), matmuls, gemms and batched
    matmuls with a bf16 operand use the tile 8x32x2 instead: both operands
    packed in bf16 pairs along K (an f32 one rounded per call), the pairs
    that `vdpbf16ps` consumes (see autopar-tile-contractions); convolutions
    keep the f32 tile. With `amx` (AMX tiles), the same contractions use the
    tile 1x32x2: B packed as for `avx512bf16`, A row-major (M x K1 x 1 x 2),
    for autopar-amx-contractions.
    `autopar-tile-contractions` then tiles and vectorizes the `linalg.mmt4d`.
    An ungrouped f32 `autopar.conv` (any number of spatial dimensions) is the
    same product in im2col form: the input is zero-padded and copied into its
    im2col matrix, P x K with one row per output position (n, out...) and one
    column per (c, kernel...), packed like a left operand (a 1x1 convolution
    of one image with unit strides and no padding packs X [C, positions]
    directly, without the copy); the weight [M, C, kernel...] is the right
    operand N x K (packed at compile time like a transposed gemm weight); after
    the unpack, one `linalg.generic` moves the output channels back in front
    of the positions (NCHW...) and adds the bias. When the output channels
    fill the m0-row tiles (at most a sixteenth of padding) the weight is the
    left operand instead (`W * cols^T`: tiles of m0 channels by n0
    positions, whose epilogue is a transpose keeping rows of positions),
    unless the reduction is long (K >= 512) and the positions would pad
    n0-wide tiles by more than an eighth over m0-wide ones (7x7 outputs: 64
    columns against 56 rows). A pointwise convolution of one image whose
    output channels are a multiple of m0 and whose positions are a multiple
    of n0 (or of n0 / 2, with column tiles of n0 / 2), f32, with the weight
    on the left, is not packed: one `linalg.contract` (marked
    `autopar.register_tile = [m0, n0, 1]`, loops (M1, P1, m0, n0, K, 1))
    reads X [C, positions] in place as K x P1 x n0 x 1 and accumulates into
    the output itself, viewed as M1 x m0 x P1 x n0 and initialized with the
    bias (no pack, no epilogue). Grouped and depthwise convolutions keep
    their direct lowering. Other contractions are left
    alone.

    With `winograd` (the default) and `pack-weights`, a 2-d, ungrouped,
    3x3, unit-stride, undilated f32 convolution with a weight of its own and
    at least 32 input and output channels is computed in the Winograd form
    F(2x2, 3x3) when its 16 products (padding included) do at most two
    thirds of the multiply-adds of its im2col product: the weight takes the
    type `16 x M1 x C x Q0 x 1` (attribute `autopar.winograd`; the driver
    transforms it, U = G g G^T per channel pair, and packs each tap), the
    input's even and odd columns are copied apart, one `linalg.generic`
    writes the 16 taps of B^T d B of every 4 x 4 input tile in the packed
    layout (tiles of P0 positions: whole lines of the padded grid of 2 x 2
    output tiles, or blocks of P0 tiles of a line), 16 `linalg.mmt4d`s
    multiply them (the weight on the left, P0 = n0, or on the right,
    P0 = m0, whichever pads less), one `linalg.generic` applies A^T . A to
    the accumulators, and one per output row parity writes those rows of
    the NCHW result in place (the two outputs of a tile interleaved) and
    adds the bias.

    Before:
    ```mlir
    %w = autopar.weight "fc.weight" : tensor<64x96xf32>
    %y = autopar.matmul %x, %w : (tensor<16x64xf32>, tensor<64x96xf32>) -> tensor<16x96xf32>
    ```
    After (`isa=avx2 pack-weights=true`):
    ```mlir
    %w = autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x96xf32>,
        autopar.packed_tiles = array<i64: 16, 1>} : tensor<6x64x16x1xf32>
    %xp = linalg.pack %x padding_value(%zero : f32) inner_dims_pos = [0, 1]
        inner_tiles = [6, 1] into %e0 : tensor<16x64xf32> -> tensor<3x64x6x1xf32>
    %c = linalg.mmt4d ins(%xp, %w : ...) outs(%filled : tensor<3x6x6x16xf32>)
    %y = linalg.unpack %c inner_dims_pos = [0, 1] inner_tiles = [6, 16]
        into %e1 : tensor<3x6x6x16xf32> -> tensor<16x96xf32>
    ```
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"auto\"",
           "vector ISA of the register tile: auto, amx, avx512bf16, avx512, avx2 "
           "or generic">,
    Option<"packWeights", "pack-weights", "bool", /*default=*/"false",
           "give weights the packed type (the driver then writes them "
           "packed); otherwise weights are packed per call">,
    Option<"winograd", "winograd", "bool", /*default=*/"true",
           "compute qualifying 3x3 convolutions in the Winograd form "
           "F(2x2, 3x3) (with pack-weights only: the driver transforms "
           "their weights)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numContractions", "contractions",
              "number of contractions data-tiled">,
    Statistic<"numPackedWeights", "packed-weights",
              "number of weight ops given the packed type">,
    Statistic<"numWinograd", "winograd-convolutions",
              "number of convolutions computed in the Winograd form">,
  ];
}

def FuseElementwisePass
    : Pass<"autopar-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "compute single-use elementwise linalg.generics in their consumer";
  let description = [{
    Input contract: linalg on tensors (after `autopar-convert-to-linalg` and
    `autopar-pack-contractions`), before bufferization.

    An elementwise `linalg.generic` (all loops parallel) whose result has one
    use, an input of another `linalg.generic` that reads it through a
    permutation map, is fused into that consumer
    (`linalg::populateElementwiseOpsFusionPatterns`): the consumer computes
    the producer's body per element, and the intermediate tensor is never
    materialized.

    A `tensor.pad` with a constant value (a convolution's or pooling's
    padded input) of an elementwise generic that has no other use is fused
    into that producer (`linalg::populateFuseTensorPadWithProducerLinalgOpPatterns`):
    the producer writes into the interior of the filled, padded tensor, and
    the pad's copy goes. A chain (a convolution's bias epilogue, then Relu, then the
    residual Add; GELU's polynomial; the scale and shift of a normalization)
    becomes one loop nest and one memory pass. A producer with several uses,
    or read through a broadcast (which would recompute it per copy), is left
    alone, as are named ops (`linalg.mmt4d`, `linalg.pack`).

    Fusion computes the producer where the consumer is, so the producer's
    operands stay live until then. A producer is not fused across a
    contraction, a reduction or a runtime call when the operands that would
    die at it (no later use; weights and inputs read from resident buffers
    never die) are larger than its result: a gradient accumulated over
    microbatches (`acc_k = acc_{k-1} + g_k`, each add used once by the next)
    would otherwise be summed at the last microbatch, with every
    microbatch's gradient live until then.

    Before:
    ```mlir
    %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
      ^bb0(%a: f32, %o: f32):
        %s = arith.addf %a, %a : f32
        linalg.yield %s : f32
    } -> tensor<8xf32>
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%t : tensor<8xf32>) outs(%e : tensor<8xf32>) {
      ^bb0(%a: f32, %o: f32):
        %r = arith.maximumf %a, %zero : f32
        linalg.yield %r : f32
    } -> tensor<8xf32>
    ```
    After: one `linalg.generic` over `%x` whose body adds, then takes the
    maximum.

    A depthwise convolution over its flattened padded plane
    (`autopar-convert-to-linalg`: a generic over `[N, C, length]` whose
    output `[N, C, H, W]` is a leading slice, an expand of the last
    dimension into rows of the padded width, and a leading slice of the
    columns) is handled first: an elementwise consumer of that output
    whose other inputs do not index rows and columns (Clip, a per-channel
    scale) and whose body computes on floats without side effects is
    rebuilt over `[N, C, length]` and the views are taken of its result, so
    that the convolution fuses into it; a use of the output by an op that
    is not a linalg op (a pad, a reshape, a return) reads an elementwise
    copy generic instead, which is vectorized and which a pad fuses with
    (bufferization would copy the view with a scalar loop nest).
  }];
  let dependentDialects = [
    "mlir::affine::AffineDialect",
    "mlir::linalg::LinalgDialect",
  ];
}

def TileContractionsPass
    : Pass<"autopar-tile-contractions", "mlir::func::FuncOp"> {
  let summary = "tile and vectorize linalg.mmt4d; lower linalg.pack/unpack";
  let description = [{
    Input contract: linalg on tensors with static shapes, as produced by
    `autopar-pack-contractions` and `autopar-convert-to-linalg`, before
    bufferization.

    - Each `linalg.mmt4d` is tiled (`scf::tileUsingSCF`) into a parallel
      `scf.forall` over N1 (outermost: one packed column panel of the right
      operand stays in cache while the row tiles of the left operand stream
      past; the pipeline runs its iterations on the rank's OpenMP threads),
      then loops over M1 and the reduction K1, around one register tile `1x1x1 x m0 x n0 x k0`, which
      `linalg::vectorize` turns into a `vector.contract` of `m0 x n0`
      (canonicalized from the multi-reduction, leading unit dimensions
      dropped). The accumulator's `vector.transfer_read` / `transfer_write`
      are hoisted out of the reduction loop, so it lives in registers there;
      the vector lowering turns the contraction into outer products (one
      broadcast FMA per row).
    - A `linalg.contract` marked `autopar.register_tile` (a pointwise
      convolution, see autopar-pack-contractions; loops M1, N1, m0, n0, K1,
      k0) is tiled the same way; the unit dimensions of its register tile
      (its accumulator tile is m0 x 1 x n0) are dropped from the
      `vector.contract`, so that it is the m0 x n0 tile of an mmt4d.
    - A tile of two bf16 operands packed in pairs (`m0 x 2` and `n0 x 2`,
      n0 a multiple of 16) becomes, with `isa=avx512bf16`, dot products of
      bf16 pairs: both tiles read as contiguous 1-D vectors, and per row A's
      pair (one 32-bit word) broadcast to 16 lanes and one
      `x86vector.avx512.dot` (`vdpbf16ps`) per 16 columns into the f32
      accumulator. With `isa=amx`, such an `linalg.mmt4d` (m0 = 1) is only
      tiled into the parallel `scf.forall` over N1 and left for
      autopar-amx-contractions (after bufferization). On other ISAs both
      operands are extended to f32.
    - `linalg.pack` becomes `tensor.pad` + `tensor.expand_shape` +
      `linalg.transpose`, and `linalg.unpack` `linalg.transpose` +
      `tensor.collapse_shape` + `tensor.extract_slice` (`linalg::lowerPack`,
      `linalg::lowerUnPack`).

    Before:
    ```mlir
    %c = linalg.mmt4d ins(%a, %b : tensor<3x64x6x1xf32>, tensor<6x64x16x1xf32>)
        outs(%acc : tensor<3x6x6x16xf32>) -> tensor<3x6x6x16xf32>
    ```
    After:
    ```mlir
    scf.forall (%n1) in (6) shared_outs(%o = %acc) -> (tensor<3x6x6x16xf32>) {
      %panel = tensor.extract_slice %o[0, %n1, 0, 0] [3, 1, 6, 16] [1, 1, 1, 1]
      scf.for %m1 = %c0 to %c3 step %c1 iter_args(%p = %panel) -> (tensor<3x1x6x16xf32>) {
        %init = vector.transfer_read %p[%m1, %c0, %c0, %c0] ... : vector<6x16xf32>
        %sum = scf.for %k1 = %c0 to %c64 step %c1 iter_args(%r = %init) -> (vector<6x16xf32>) {
          %va = vector.transfer_read %a[%m1, %k1, %c0, %c0] ... : vector<6x1xf32>
          %vb = vector.transfer_read %b[%n1, %k1, %c0, %c0] ... : vector<16x1xf32>
          %x = vector.contract ... %va, %vb, %r : vector<6x1xf32>, vector<16x1xf32> into vector<6x16xf32>
          scf.yield %x : vector<6x16xf32>
        }
        %w = vector.transfer_write %sum, %p[%m1, %c0, %c0, %c0] ...
        ...
    ```
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"auto\"",
           "vector ISA of the register tile: auto, amx, avx512bf16, avx512, "
           "avx2 or generic (bf16 x bf16 tiles become dot products of bf16 "
           "pairs on avx512bf16, are left for autopar-amx-contractions on "
           "amx, f32 FMAs of extended operands elsewhere)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::vector::VectorDialect",
    "mlir::x86vector::X86VectorDialect",
  ];
  let statistics = [
    Statistic<"numTiled", "tiled", "number of linalg.mmt4d ops vectorized">,
    Statistic<"numDotBf16", "dot-bf16",
              "number of bf16 register tiles as dot products of bf16 pairs">,
    Statistic<"numAmxPanels", "amx-panels",
              "number of bf16 linalg.mmt4d ops left for AMX tiles">,
  ];
}

def VectorizeElementwisePass
    : Pass<"autopar-vectorize-elementwise", "mlir::func::FuncOp"> {
  let summary = "vectorize all-parallel linalg ops by the target's vector width";
  let description = [{
    Input contract: linalg on tensors with static shapes, before
    bufferization (after `autopar-fuse-elementwise` and
    `autopar-tile-contractions`, whose pack/unpack lowering leaves
    `linalg.transpose` ops).

    Each `linalg.generic`, `linalg.transpose` and `linalg.copy` whose loops
    are all parallel and which MLIR's vectorizer accepts (projected
    permutation maps, vectorizable body):

    - has the run of innermost loops that is contiguous in every operand
      (as one dimension or absent, e.g. a bias read per channel) collapsed
      into one loop (`linalg::collapseOpIterationDims`, generics and copies
      only): an elementwise op
      on `[N, C, H, W]` becomes one loop over `N*C*H*W`. A run is not
      collapsed across an operand that is a strided or partial
      `tensor.extract_slice` (a depthwise convolution's window views of its
      padded input, a result written into a padded tensor): bufferization
      would copy the slice into a new buffer;
    - is tiled (`scf::tileUsingSCF`) by `1 x ... x 1 x lanes`, with lanes
      the f32 vector width of `isa` (`avx512` 16, `avx2` 8, `generic` 4),
      or half of them down to 8 when the lanes do not divide the innermost
      loop (rows of 56), or, for an f32 loop of 5 to 4 x lanes that neither
      divides (rows of 28, 14 or 7), by the whole loop (one vector of its
      length, which LLVM splits into registers);
    - when it reads views of one tensor at unit strides that start on
      different rows (a depthwise convolution's or a pooling's window
      views of its padded input), takes 4, 3 or 2 rows per tile (the
      largest that divides the rows, at most 8 vectors of the ISA's width
      in all), so that the rows share their input row loads and weight
      broadcasts; the tile's 2-D vectors are unrolled into 1-D rows;
    - is vectorized (`linalg::vectorize`) with that vector size.

    A copy generic that gathers its input through affine expressions (the
    packed im2col copy of a convolution, `x[n, c, oh + kh, lt * 32 + i + kw]`)
    is vectorized along its innermost loop of more than one iteration when
    only the input's last index reads that loop, at unit stride, and the
    lanes (or half of them: 8-row tiles on AVX-512) divide it: every other
    loop is tiled by one, the unit loops of the tile are dropped
    (`linalg::dropUnitDims`) and the remaining 1-D copy becomes one vector
    read and write.

    An f32 reduction along the innermost loop only (softmax's max and sum,
    layer norm's mean and variance), of at least two vectors per row, keeps
    a vector of `lanes` partial results per row: the whole vectors of the
    row are split off (`linalg::splitOp`; the remainder stays a scalar
    reduction that continues from their result), their reduction is split
    into `lanes` interleaved ones (`linalg::splitReduction`, inner
    dimension parallel), tiled by one vector and vectorized, and a scalar
    reduction combines the `lanes` partial results. The sum's order
    changes (rounding within the node tests' tolerances).

    An op reading a view that steps by 2 along its innermost loop (a
    stride-2 window view of a convolution's or pooling's padded input) is
    vectorized too: once the vectors are simplified to 1-D transfers, each
    read of such a view becomes one contiguous read of twice the lanes from
    the viewed tensor and a `vector.shuffle` of its even lanes (in bounds
    when the view ends at least one element before its source does, padded
    otherwise), not a gather of one load per lane.

    Ops whose innermost loop is longer than 4 x lanes and not divided by
    the widths above (no masked vectors), ops reading a slice with a stride
    other than 1 or 2 along the innermost loop (each vector would be a
    gather; LLVM's loop vectorizer measured faster), other reductions, and
    gathers at strides other than one or with divisions in their maps (flat
    im2col rows) are left to the scalar loops.

    Before (`isa=avx2`):
    ```mlir
    %y = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = [4 x "parallel"]}
        ins(%x : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) { maximumf }
    ```
    After:
    ```mlir
    %c = tensor.collapse_shape %x [[0], [1], [2, 3]] ...   // 1x8x16
    %r = scf.for %i = 0 to 1 ... scf.for %j = 0 to 8 ... scf.for %k = 0 to 16 step 8 ... {
      %v = vector.transfer_read %slice ... : vector<1x1x8xf32>
      %m = arith.maximumf %v, %zero : vector<1x1x8xf32>
      vector.transfer_write %m, ...
    }
    %y = tensor.expand_shape %r [[0], [1], [2, 3]] ...
    ```
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"auto\"",
           "vector width: auto (the host CPU), amx, avx512bf16, avx512, avx2 or "
           "generic">,
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect",
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::vector::VectorDialect",
  ];
  let statistics = [
    Statistic<"numVectorized", "vectorized", "number of linalg ops vectorized">,
  ];
}

def ApproximateMathPass
    : Pass<"autopar-approximate-math", "mlir::func::FuncOp"> {
  let summary = "f32 erf, tanh, exp, log, log1p, expm1 as vectorizable polynomials";
  let description = [{
    Input contract: any function (typically linalg on tensors after
    `autopar-convert-to-linalg`). `math.erf`, `math.tanh`, `math.exp`,
    `math.log`, `math.log1p` and `math.expm1` on f32 (scalars or vectors)
    become MLIR's polynomial approximations
    (`populateMathPolynomialApproximationPatterns`): arith and `math.fma`
    ops with range reduction and clamping, no library call, so the loops
    that compute them vectorize (a scalar `erff` call per element costs ~7x
    the vectorized polynomial over the GELUs of a GPT-2 block). Their errors
    stay within the ONNX node tests' tolerances (rtol 1e-3, atol 1e-7),
    which those tests check. Other math ops and f64 are left to libm.

    Before:
    ```mlir
    %y = math.erf %x : f32
    ```
    After:
    ```mlir
    %a = math.absf %x : f32
    ... arith.mulf / math.fma / arith.select ...   // no call
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::math::MathDialect",
    "mlir::vector::VectorDialect",
  ];
}

def LowerAssertsToRuntimePass
    : Pass<"autopar-lower-asserts-to-runtime", "mlir::ModuleOp"> {
  let summary = "turn cf.assert into a call of the runtime's autopar_rt_fail";
  let description = [{
    Input contract: any module (typically right after
    `autopar-convert-to-linalg`, whose gather lowering checks indices with
    `cf.assert`). `cf.assert` would lower to a bare `abort()` of one rank;
    instead each one becomes an `scf.if` on the negated condition calling
    `autopar_rt_fail(const char *)` (autopar/Runtime/RuntimeABI.h), which
    prints the message with the rank and aborts the whole job. Messages
    become private constant LLVM globals (one per distinct message); the
    runtime function is declared when missing.

    Before:
    ```mlir
    cf.assert %ok, "gather: index out of range"
    ```
    After:
    ```mlir
    llvm.mlir.global internal constant @autopar_assert_message("gather: index out of range\00")
    func.func private @autopar_rt_fail(!llvm.ptr)
    ...
    %bad = arith.xori %ok, %true : i1
    scf.if %bad {
      %m = llvm.mlir.addressof @autopar_assert_message : !llvm.ptr
      func.call @autopar_rt_fail(%m) : (!llvm.ptr) -> ()
    }
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect",
    "mlir::scf::SCFDialect",
  ];
  let statistics = [
    Statistic<"numAsserts", "asserts", "number of cf.assert ops lowered">,
  ];
}

def LowerStridedCopiesPass
    : Pass<"autopar-lower-strided-copies", "mlir::func::FuncOp"> {
  let summary = "rewrite memref.copy of non-identity layouts into linalg.copy";
  let description = [{
    Input contract: bufferized IR. `finalize-memref-to-llvm` lowers a
    `memref.copy` between identity-layout (contiguous) memrefs to `memcpy`,
    but any other copy to a call of `memrefCopy` from MLIR's C runner
    utilities, a library the device program is not linked with. This pass
    rewrites those copies (e.g. of a column block produced by
    `shard.all_slice`, copied by One-Shot Bufferize to hand the runtime an
    identity-layout buffer) into `linalg.copy`, which `convert-linalg-to-loops`
    turns into loops. Copies of identity layouts are left alone.

    Before:
    ```mlir
    memref.copy %sv, %buf : memref<8x2xf32, strided<[4, 1], offset: ?>> to memref<8x2xf32>
    ```
    After:
    ```mlir
    linalg.copy ins(%sv : memref<8x2xf32, strided<[4, 1], offset: ?>>) outs(%buf : memref<8x2xf32>)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def FreeBuffersEarlyPass
    : Pass<"autopar-free-buffers-early", "mlir::func::FuncOp"> {
  let summary = "move each buffer's dealloc right after its last use";
  let description = [{
    Input contract: bufferized IR after `buffer-deallocation-pipeline`, where
    every `memref.dealloc` of a straight-line device program sits at the end
    of the function. A program then holds every intermediate buffer until it
    returns, so its peak memory is the sum of all of them instead of what is
    live at once. This pass moves each unconditional `memref.dealloc` of a
    buffer allocated in the same block to just after the last op of that
    block that uses the buffer or any of its aliases (views, casts, reshapes:
    `BufferViewFlowAnalysis`), with uses inside nested regions counting as
    their enclosing op. A buffer with a use outside the block, or one not
    allocated by `memref.alloc`, is left alone, and so are the buffers of
    weights and runtime inputs (filled by `autopar_rt_load_weight_*` and
    `autopar_rt_read_input_*`), which stay resident for the whole step. The device program is single
    threaded and the runtime's calls are synchronous, so freeing after the
    last use is safe; the cost model's liveness-based peak memory then
    describes what runs.

    Before:
    ```mlir
    %a = memref.alloc() : memref<4xf32>
    linalg.exp ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
    %b = memref.alloc() : memref<4xf32>
    linalg.exp ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    ...
    memref.dealloc %a : memref<4xf32>
    memref.dealloc %b : memref<4xf32>
    ```
    After:
    ```mlir
    %a = memref.alloc() : memref<4xf32>
    linalg.exp ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
    %b = memref.alloc() : memref<4xf32>
    linalg.exp ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    memref.dealloc %a : memref<4xf32>
    ...
    ```
  }];
  let statistics = [
    Statistic<"numMoved", "moved", "number of deallocs moved earlier">,
  ];
}

def AmxContractionsPass
    : Pass<"autopar-amx-contractions", "mlir::ModuleOp"> {
  let summary = "compute bf16 linalg.mmt4d on buffers with AMX tiles";
  let description = [{
    Input contract: bufferized IR after autopar-tile-contractions with
    `isa=amx`, whose bf16 contractions are `linalg.mmt4d` (or a
    `linalg.batch_mmt4d` of batch 1) of one column panel: A row-major
    `M x K1 x 1 x 2` bf16, B `1 x K1 x n0 x 2` bf16 (n0 a multiple of 16, the
    pairs of k that `tdpbf16ps` consumes), the accumulator `M x 1 x 1 x n0`
    f32, all of static shape. With `isa=amx`, each becomes AMX dialect ops:
    blocks of 32 rows by 32 columns, four 16x16 f32 accumulator tiles
    (`amx.tile_load` of the accumulator, carried through the reduction loop,
    `amx.tile_store` after it); per step of 16 pairs of k, two 16x32 bf16
    tiles of A (rows of A at its row stride) and two of B (16 pairs by 16
    columns of the panel), and four `amx.tile_mulf`. Rows and pairs that do
    not fill a tile take a smaller tile (statically shaped). Each function
    with AMX tiles first calls `autopar_rt_require_amx`, which asks Linux
    for the AMX tile state (`arch_prctl(ARCH_REQ_XCOMP_PERM)`) once per
    process. Other ops, and every op on other ISAs, are left alone.

    Before:
    ```mlir
    linalg.mmt4d ins(%a, %b : memref<64x48x1x2xbf16>, memref<1x48x32x2xbf16, strided<...>>)
        outs(%c : memref<64x1x1x32xf32, strided<...>>)
    ```
    After (one block of 32 rows):
    ```mlir
    %c00 = amx.tile_load %c2[%m, %c0] : memref<64x32xf32, ...> into !amx.tile<16x16xf32>
    ...
    %r:4 = scf.for %k = %c0 to %c48 step %c16 iter_args(%t00 = %c00, ...) {
      %a0 = amx.tile_load %a2[%m, %k2] : memref<64x96xbf16> into !amx.tile<16x32xbf16>
      %b0 = amx.tile_load %b2[%k, %c0] : memref<48x64xbf16, ...> into !amx.tile<16x32xbf16>
      %n00 = amx.tile_mulf %a0, %b0, %t00 : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
      ...
    }
    amx.tile_store %c2[%m, %c0], %r#0 : memref<64x32xf32, ...>, !amx.tile<16x16xf32>
    ```
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"auto\"",
           "vector ISA: auto, amx, avx512bf16, avx512, avx2 or generic (the "
           "pass rewrites only with amx)">,
  ];
  let dependentDialects = [
    "mlir::amx::AMXDialect",
    "mlir::arith::ArithDialect",
    "mlir::func::FuncDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
  ];
  let statistics = [
    Statistic<"numAmx", "amx-contractions",
              "number of bf16 contractions computed on AMX tiles">,
  ];
}

def SizeThreadTeamsPass
    : Pass<"autopar-size-thread-teams", "mlir::ModuleOp"> {
  let summary = "run parallel loops too small for a fork/join on one thread; "
                "give the others no more threads than their work fills";
  let description = [{
    Input contract: OpenMP work-sharing loops as `convert-scf-to-openmp` makes
    them of an `scf.parallel` without reductions (`omp.parallel` without
    clauses around `omp.wsloop` around `omp.loop_nest`, the body one block
    ending in `omp.yield`), before the vector ops of their bodies are lowered
    (`convert-vector-to-scf`). In autopar's pipeline these are the column
    panel loops of the data-tiled contractions (autopar-tile-contractions:
    matmuls, batched matmuls, convolutions as GEMMs, Winograd products);
    elementwise ops, normalizations, reductions and pooling are sequential
    `scf.for` loops and never reach OpenMP. Other `omp.parallel` ops, and
    those nested in another, are left alone.

    A fork and join of the OpenMP team costs a fixed time F whatever the
    loop: waking the workers, handing out the iterations, the closing
    barrier. A loop of W FLOPs on T threads at a per-core rate R takes
    W / (T R) + F instead of W / R, so threads pay off only when each
    thread's share of the work takes longer than about F, i.e. holds at
    least F x R FLOPs. `min-flops-per-thread` is that product, taken with a
    generous F and the fastest per-core rate, so that a loop given threads
    is never slower for it on a slower core either: F = 5 us (taken for
    libomp's fork and join of a team whose idle threads spin; more under
    load, with sleeping threads or with more threads) times R = 200 GFLOP/s
    (about the AVX-512 FMA peak of one core: 240 GFLOP/s measured on a Xeon)
    gives the default of 1,000,000 FLOPs.

    Each loop's work is estimated statically: its trip count times the
    FLOPs of one iteration, which counts 2 per multiply-add of
    `vector.contract`, `x86vector.avx512.dot`, `amx.tile_mulf/muli`,
    `vector.fma` and `vector.outerproduct`; a linalg op's iterations times
    the arithmetic ops of its body; one per result element of other arith
    and math ops (index arithmetic excluded); `scf.for` bodies times their
    static trip count. Data movement is not counted. A loop whose work
    depends on a run-time value inside its body is left alone. Then:

    - threads = min(iterations, floor(W / min-flops-per-thread));
    - static bounds and threads < 2 (a tiny loop, or one iteration): the
      loop becomes `scf.for` loops over the same bounds around the body (in
      an `scf.execute_region`: the lowering of the body's
      `memref.alloca_scope` splits blocks, which an `scf.for` body may not
      have), run by the calling thread: no outlined region, no fork, no
      join;
    - static bounds otherwise: `num_threads(min(omp_get_max_threads(),
      threads))`, so that no thread of the team is left without a grain of
      work or without an iteration (`omp_get_max_threads()`: the rank's
      threads, `autopar run --threads`), and the `omp.wsloop` is `nowait`:
      the end of the parallel region right after it is a barrier (the
      join), so the loop's own closing barrier made every thread wait
      twice;
    - bounds known at run time: the same decision at run time, `if(threads
      >= 2)` and `num_threads(min(omp_get_max_threads(), max(threads, 1)))`,
      with threads = min(iterations, iterations / ceil(min-flops-per-thread
      / FLOPs of one iteration)), and `nowait`.

    `min-flops-per-thread=0` leaves every loop as it is (all the rank's
    threads, whatever its work).

    Before (a 64x64x64 matmul's two panels, 0.5 MFLOP):
    ```mlir
    omp.parallel {
      omp.wsloop {
        omp.loop_nest (%n1) : index = (%c0) to (%c2) step (%c1) {
          memref.alloca_scope {
            scf.for %m1 = %c0 to %c8 step %c1 {
              ... vector.contract ... : vector<8x1xf32>, vector<32x1xf32> into vector<8x32xf32>
            }
          }
          omp.yield
        }
      }
      omp.terminator
    }
    ```
    After:
    ```mlir
    scf.for %n1 = %c0 to %c2 step %c1 {
      scf.execute_region {
        memref.alloca_scope {
          scf.for %m1 = %c0 to %c8 step %c1 {
            ...
          }
        }
        scf.yield
      }
    }
    ```
    A 256x256x512 matmul's 16 panels (67 MFLOP) keep their loop, with at
    most 16 threads:
    ```mlir
    %max = func.call @omp_get_max_threads() : () -> i32
    %c16_i32 = arith.constant 16 : i32
    %n = arith.minsi %max, %c16_i32 : i32
    omp.parallel num_threads(%n : i32) {
      omp.wsloop nowait {
        ...
      }
      omp.terminator
    }
    ```
  }];
  let options = [
    Option<"minFlopsPerThread", "min-flops-per-thread", "int64_t",
           /*default=*/"::mlir::autopar::kDefaultMinFlopsPerThread",
           "FLOPs each thread of a parallel loop must get for the loop to be "
           "threaded (the fork/join cost times the fastest per-core rate; "
           "default 1000000; 0: every loop on all threads)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::func::FuncDialect",
    "mlir::scf::SCFDialect",
  ];
  let statistics = [
    Statistic<"numSequential", "sequential",
              "number of parallel loops run on one thread">,
    Statistic<"numSized", "sized",
              "number of parallel loops given a thread count">,
    Statistic<"numUnknownWork", "unknown-work",
              "number of parallel loops whose work is not known statically "
              "(left alone)">,
  ];
}

#endif // AUTOPAR_TRANSFORMS_LOWERING_PASSES_TD
