//===- ConvPool.cpp - convolution and pooling to linalg ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Convolution and pooling over NCHW... tensors with any number of spatial
// dimensions. The input is padded explicitly (`tensor.pad`: zeros for conv and
// average pooling, the lowest value for max pooling so that padding never
// wins), then one `linalg.generic` slides the window: input index
// `o * stride + k * dilation` per spatial dimension. Loops are ordered with
// the output's spatial loops innermost, so that the innermost loop walks the
// output contiguously. Depthwise convolutions with small windows are one
// elementwise generic over the window's views of the padded input; those
// with narrow output rows run over the flattened padded plane (FlatPlane),
// whose views are contiguous runs that whole vectors tile.
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

/// Pads the spatial dimensions (2..) of `input` with `padValue`: `pads` holds
/// the begin pads then the end pads (ONNX order). The end pads grow where
/// the windows of `outputShape` (ceil mode) reach past them.
static Value padSpatial(OpBuilder &b, Location loc, Value input,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                        ArrayRef<int64_t> outputShape, Value padValue) {
  auto type = cast<RankedTensorType>(input.getType());
  size_t spatial = type.getRank() - 2;
  SmallVector<int64_t> low(2, 0), high(2, 0), shape(type.getShape());
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = type.getDimSize(2 + i);
    int64_t needed = (outputShape[2 + i] - 1) * strides[i] +
                     (kernel[i] - 1) * dilations[i] + 1;
    int64_t end = std::max(pads[spatial + i], needed - in - pads[i]);
    low.push_back(pads[i]);
    high.push_back(std::max<int64_t>(end, 0));
    shape[2 + i] += low.back() + high.back();
  }
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return input;
  auto paddedType = RankedTensorType::get(shape, type.getElementType());
  MLIRContext *ctx = b.getContext();
  return tensor::PadOp::create(b, loc, paddedType, input,
                               getAsIndexOpFoldResult(ctx, low),
                               getAsIndexOpFoldResult(ctx, high), padValue);
}

/// Windows of at most this many positions are unrolled into one
/// elementwise generic over their shifted views (buildTapViews); larger ones
/// keep the loop nest with reduction loops.
static constexpr int64_t kMaxUnrolledTaps = 64;

/// The positions of a window, row-major, as offsets per spatial dimension.
static SmallVector<SmallVector<int64_t>>
getWindowTaps(ArrayRef<int64_t> kernel) {
  SmallVector<SmallVector<int64_t>> taps = {{}};
  for (int64_t size : kernel) {
    SmallVector<SmallVector<int64_t>> next;
    for (const SmallVector<int64_t> &tap : taps)
      for (int64_t k = 0; k < size; ++k) {
        next.push_back(tap);
        next.back().push_back(k);
      }
    taps = std::move(next);
  }
  return taps;
}

/// One view of the padded `input` ([N, C, spatial...]) per window position
/// `tap`: the elements that position reads for every output of `outType`
/// ([N, C, out spatial...]), a strided slice. An elementwise generic over
/// these views is a window reduction whose innermost loop runs along the
/// output's last dimension: contiguous at unit stride, so it vectorizes.
static SmallVector<Value> buildTapViews(OpBuilder &b, Location loc, Value input,
                                        RankedTensorType outType,
                                        ArrayRef<int64_t> kernel,
                                        ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> dilations) {
  auto inType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> viewShape = {inType.getDimSize(0), inType.getDimSize(1)};
  llvm::append_range(viewShape, outType.getShape().drop_front(2));
  auto viewType = RankedTensorType::get(viewShape, inType.getElementType());
  SmallVector<Value> views;
  for (const SmallVector<int64_t> &tap : getWindowTaps(kernel)) {
    SmallVector<int64_t> offsets = {0, 0}, steps = {1, 1};
    for (size_t i = 0; i < tap.size(); ++i) {
      offsets.push_back(tap[i] * dilations[i]);
      steps.push_back(strides[i]);
    }
    views.push_back(tensor::ExtractSliceOp::create(
        b, loc, viewType, input, ValueRange{}, ValueRange{}, ValueRange{},
        b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(viewShape),
        b.getDenseI64ArrayAttr(steps)));
  }
  return views;
}

/// Depthwise output rows narrower than this many elements, that whole
/// vectors of 16 lanes do not tile (mobilenet_v2's 7x7 planes), are
/// computed over the flattened padded plane (buildFlatTapViews): a row of
/// its own would be one short vector of an odd width, which LLVM splits into
/// several narrower operations (a row of 7 into 4 + 2 + 1 lanes). Wider
/// rows (14, 28) measured faster as whole rows in tiles of several rows
/// (autopar-vectorize-elementwise), which need no copy of the output view
/// (2026-12-07, bench/depthwise.py: 192x28x28 36 us against 75 flattened,
/// 576x14x14 43 us against 48, loaded machine).
static constexpr int64_t kFlatRowMaxWidth = 8;

/// The flattened domain of a depthwise convolution is rounded up to a
/// multiple of this many elements: whole f32 vectors of AVX-512 (16 lanes)
/// and of AVX2 (8), so that autopar-vectorize-elementwise tiles it without
/// a remainder on either.
static constexpr int64_t kFlatDomainMultiple = 16;

/// A depthwise convolution computed over its flattened padded plane: the
/// output `[N, C, H, W]` is computed as `[N, C, length]`, position
/// `j = y * paddedWidth + x` of row `y`, column `x` (the columns from W to
/// the padded width are computed from the padding and dropped), so that
/// each window position's view of the padded input is one contiguous run
/// per channel, at offset `dy * paddedWidth + dx`.
struct FlatPlane {
  /// The padded input's width (columns per flattened row).
  int64_t paddedWidth;
  /// The flattened domain: H * paddedWidth rounded up to
  /// kFlatDomainMultiple.
  int64_t length;
  /// The output rows the padding must hold (padSpatial's output height):
  /// every view of `length` elements stays inside the padded input.
  int64_t paddedRows;
};

/// The flattened plane of a depthwise convolution of `input` ([N, C, H, W])
/// into `outType`, when it applies: two spatial dimensions, unit strides,
/// rows of the output narrower than kFlatRowMaxWidth that 16 lanes do not
/// divide.
static std::optional<FlatPlane>
getFlatPlane(RankedTensorType inType, RankedTensorType outType,
             ArrayRef<int64_t> pads, ArrayRef<int64_t> kernel,
             ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
  if (outType.getRank() != 4 || !inType.hasStaticShape() ||
      !outType.hasStaticShape() ||
      !llvm::all_of(strides, [](int64_t s) { return s == 1; }))
    return std::nullopt;
  int64_t height = outType.getDimSize(2), width = outType.getDimSize(3);
  if (width % kFlatDomainMultiple == 0 || width >= kFlatRowMaxWidth)
    return std::nullopt;
  // The padded width as padSpatial makes it.
  int64_t in = inType.getDimSize(3);
  int64_t needed = width + (kernel[1] - 1) * dilations[1];
  int64_t end = std::max<int64_t>(std::max(pads[3], needed - in - pads[1]), 0);
  FlatPlane plane;
  plane.paddedWidth = pads[1] + in + end;
  plane.length = llvm::alignTo(height * plane.paddedWidth, kFlatDomainMultiple);
  // The last view (window position kernel - 1) reads `length` elements from
  // offset (kh - 1) * dh rows + (kw - 1) * dw columns.
  int64_t lastOffset = (kernel[0] - 1) * dilations[0] * plane.paddedWidth +
                       (kernel[1] - 1) * dilations[1];
  int64_t rows = llvm::divideCeil(plane.length + lastOffset, plane.paddedWidth);
  plane.paddedRows = rows - (kernel[0] - 1) * dilations[0];
  return plane;
}

/// One view of the flattened padded input `flat` ([N, C, rows * width]) per
/// window position: `plane.length` contiguous elements per channel from
/// offset `dy * paddedWidth + dx` (FlatPlane).
static SmallVector<Value> buildFlatTapViews(OpBuilder &b, Location loc,
                                            Value flat, const FlatPlane &plane,
                                            ArrayRef<int64_t> kernel,
                                            ArrayRef<int64_t> dilations) {
  auto flatType = cast<RankedTensorType>(flat.getType());
  SmallVector<int64_t> viewShape = {flatType.getDimSize(0),
                                    flatType.getDimSize(1), plane.length};
  auto viewType = RankedTensorType::get(viewShape, flatType.getElementType());
  SmallVector<Value> views;
  for (const SmallVector<int64_t> &tap : getWindowTaps(kernel)) {
    int64_t offset =
        tap[0] * dilations[0] * plane.paddedWidth + tap[1] * dilations[1];
    views.push_back(tensor::ExtractSliceOp::create(
        b, loc, viewType, flat, ValueRange{}, ValueRange{}, ValueRange{},
        b.getDenseI64ArrayAttr({0, 0, offset}),
        b.getDenseI64ArrayAttr(viewShape), b.getDenseI64ArrayAttr({1, 1, 1})));
  }
  return views;
}

/// Slides a window of `kernel` over the padded `input` ([N, C, spatial...])
/// into `outType` ([N, C, out spatial...]), accumulating from `init` with
/// `combine({element, accumulator})`, window positions in row-major order.
/// Small windows: one elementwise generic over the views of buildTapViews.
/// Others: loops n, c, window..., output....
static Value buildWindowReduction(OpBuilder &b, Location loc, Value input,
                                  RankedTensorType outType,
                                  ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> dilations, Value init,
                                  ScalarFn combine) {
  MLIRContext *ctx = b.getContext();
  int64_t taps = 1;
  for (int64_t size : kernel)
    taps *= size;
  if (taps <= kMaxUnrolledTaps) {
    SmallVector<Value> views =
        buildTapViews(b, loc, input, outType, kernel, strides, dilations);
    SmallVector<AffineMap> maps(views.size(),
                                b.getMultiDimIdentityMap(outType.getRank()));
    return buildGeneric(b, loc, outType, views, maps,
                        [&](OpBuilder &nb, Location nl, ValueRange args) {
                          Value acc = init;
                          for (Value element : args)
                            acc = combine(nb, nl, ValueRange{element, acc});
                          return acc;
                        });
  }
  unsigned spatial = kernel.size();
  unsigned numLoops = 2 + 2 * spatial;
  auto window = [&](unsigned i) { return getAffineDimExpr(2 + i, ctx); };
  auto out = [&](unsigned i) { return getAffineDimExpr(2 + spatial + i, ctx); };
  SmallVector<AffineExpr> inExprs = {getAffineDimExpr(0, ctx),
                                     getAffineDimExpr(1, ctx)};
  SmallVector<AffineExpr> windowExprs, outExprs = inExprs;
  for (unsigned i = 0; i < spatial; ++i) {
    inExprs.push_back(out(i) * strides[i] + window(i) * dilations[i]);
    windowExprs.push_back(window(i));
    outExprs.push_back(out(i));
  }
  SmallVector<utils::IteratorType> iterators(numLoops,
                                             utils::IteratorType::parallel);
  for (unsigned i = 0; i < spatial; ++i)
    iterators[2 + i] = utils::IteratorType::reduction;
  // The window operand only gives the window loops their sizes.
  Value windowShape =
      tensor::EmptyOp::create(b, loc, kernel, outType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{input, windowShape},
      ValueRange{createFilled(b, loc, outType, init)},
      ArrayRef<AffineMap>{AffineMap::get(numLoops, 0, inExprs, ctx),
                          AffineMap::get(numLoops, 0, windowExprs, ctx),
                          AffineMap::get(numLoops, 0, outExprs, ctx)},
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(
            nested, nestedLoc,
            combine(nested, nestedLoc, ValueRange{args[0], args[2]}));
      });
  return generic.getResult(0);
}

namespace {

/// Groups are made explicit by expanding the channel dimensions:
/// X [N, C, ...] -> [N, G, C/G, ...], W [M, C/G, K...] -> [G, M/G, C/G, K...],
/// result [N, G, M/G, O...] (initialized with the bias) collapsed back to
/// [N, M, O...]. Loops: n, g, m, c, k..., o....
struct ConvLowering : public OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto xType = cast<RankedTensorType>(adaptor.getInput().getType());
    auto wType = cast<RankedTensorType>(adaptor.getWeight().getType());
    Type element = type.getElementType();
    if (xType.getElementType() != element || wType.getElementType() != element)
      return rewriter.notifyMatchFailure(op, "mixed element types");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    unsigned spatial = type.getRank() - 2;
    int64_t groups = op.getGroup();
    int64_t n = type.getDimSize(0), m = type.getDimSize(1);
    int64_t c = xType.getDimSize(1);
    ArrayRef<int64_t> kernel = wType.getShape().drop_front(2);
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();

    Value zero = createConstant(rewriter, loc, element, 0.0);
    int64_t taps = 1;
    for (int64_t size : kernel)
      taps *= size;
    if (groups == c && m == c && taps <= kMaxUnrolledTaps) {
      // Depthwise: y[n, c, o] = bias[c] + sum over window positions t of
      // x[n, c, o * s + t] * w[c, t], one elementwise generic over the views
      // of the positions and the weight's column per position (positions
      // in row-major order, as the loop nest below sums them). Narrow
      // planes are computed over their flattened padded rows (FlatPlane).
      std::optional<FlatPlane> plane =
          getFlatPlane(xType, type, op.getPads(), kernel, strides, dilations);
      RankedTensorType domainType = type;
      SmallVector<Value> operands;
      if (plane) {
        SmallVector<int64_t> paddedOutShape(type.getShape());
        paddedOutShape[2] = plane->paddedRows;
        Value padded =
            padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), kernel,
                       strides, dilations, paddedOutShape, zero);
        assert(cast<RankedTensorType>(padded.getType()).getDimSize(3) ==
                   plane->paddedWidth &&
               "the flattened plane's width is the padded input's");
        Value flat = tensor::CollapseShapeOp::create(
            rewriter, loc, padded,
            ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
        operands =
            buildFlatTapViews(rewriter, loc, flat, *plane, kernel, dilations);
        domainType = RankedTensorType::get({n, c, plane->length}, element);
      } else {
        Value padded =
            padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), kernel,
                       strides, dilations, type.getShape(), zero);
        operands = buildTapViews(rewriter, loc, padded, type, kernel, strides,
                                 dilations);
      }
      unsigned rank = domainType.getRank();
      SmallVector<AffineMap> maps(operands.size(),
                                  rewriter.getMultiDimIdentityMap(rank));
      AffineMap channelMap =
          AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
      // W [C, 1, K...] as [C, taps]: one column per window position.
      SmallVector<ReassociationIndices> wFlat = {{0}, {}};
      for (int64_t i = 1; i < wType.getRank(); ++i)
        wFlat[1].push_back(i);
      Value w = tensor::CollapseShapeOp::create(rewriter, loc,
                                                adaptor.getWeight(), wFlat);
      auto columnType = RankedTensorType::get({c}, element);
      for (int64_t t = 0; t < taps; ++t) {
        operands.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, columnType, w, ValueRange{}, ValueRange{},
            ValueRange{}, rewriter.getDenseI64ArrayAttr({0, t}),
            rewriter.getDenseI64ArrayAttr({c, 1}),
            rewriter.getDenseI64ArrayAttr({1, 1})));
        maps.push_back(channelMap);
      }
      bool hasBias = static_cast<bool>(adaptor.getBias());
      if (hasBias) {
        operands.push_back(adaptor.getBias());
        maps.push_back(channelMap);
      }
      Value result = buildGeneric(
          rewriter, loc, domainType, operands, maps,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value acc =
                hasBias ? args.back() : createConstant(b, l, element, 0.0);
            // f32/f64 taps as fused multiply-adds: one instruction per tap
            // instead of two, the depthwise loop's arithmetic halved (and
            // each tap rounded once).
            auto floatType = dyn_cast<FloatType>(element);
            bool fused = floatType && floatType.getWidth() >= 32;
            for (int64_t t = 0; t < taps; ++t)
              acc = fused ? math::FmaOp::create(b, l, args[t], args[taps + t],
                                                acc)
                                .getResult()
                          : createAdd(b, l, acc,
                                      createMul(b, l, args[t], args[taps + t]));
            return acc;
          });
      if (plane) {
        // [N, C, length] -> its first H rows [N, C, H, paddedWidth] -> the
        // columns of the output.
        int64_t height = type.getDimSize(2), width = type.getDimSize(3);
        int64_t rows = height * plane->paddedWidth;
        if (rows != plane->length)
          result = tensor::ExtractSliceOp::create(
              rewriter, loc, RankedTensorType::get({n, c, rows}, element),
              result, ValueRange{}, ValueRange{}, ValueRange{},
              rewriter.getDenseI64ArrayAttr({0, 0, 0}),
              rewriter.getDenseI64ArrayAttr({n, c, rows}),
              rewriter.getDenseI64ArrayAttr({1, 1, 1}));
        result = tensor::ExpandShapeOp::create(
            rewriter, loc,
            RankedTensorType::get({n, c, height, plane->paddedWidth}, element),
            result, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
        result = tensor::ExtractSliceOp::create(
            rewriter, loc, type, result, ValueRange{}, ValueRange{},
            ValueRange{}, rewriter.getDenseI64ArrayAttr({0, 0, 0, 0}),
            rewriter.getDenseI64ArrayAttr({n, c, height, width}),
            rewriter.getDenseI64ArrayAttr({1, 1, 1, 1}));
      }
      rewriter.replaceOp(op, result);
      return success();
    }
    Value padded =
        padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), kernel,
                   strides, dilations, type.getShape(), zero);
    auto paddedType = cast<RankedTensorType>(padded.getType());
    SmallVector<int64_t> xShape = {n, groups, c / groups};
    llvm::append_range(xShape, paddedType.getShape().drop_front(2));
    SmallVector<ReassociationIndices> xGroups = {{0}, {1, 2}};
    SmallVector<int64_t> wShape = {groups, m / groups, c / groups};
    llvm::append_range(wShape, kernel);
    SmallVector<ReassociationIndices> wGroups = {{0, 1}, {2}};
    SmallVector<int64_t> outShape = {n, groups, m / groups};
    llvm::append_range(outShape, type.getShape().drop_front(2));
    for (unsigned i = 0; i < spatial; ++i) {
      xGroups.push_back({3 + i});
      wGroups.push_back({3 + i});
    }
    Value x = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(xShape, element), padded, xGroups);
    Value w = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(wShape, element),
        adaptor.getWeight(), wGroups);
    auto outType = RankedTensorType::get(outShape, element);

    Value init;
    if (Value bias = adaptor.getBias()) {
      Value groupedBias = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({groups, m / groups}, element),
          bias, ArrayRef<ReassociationIndices>{{0, 1}});
      AffineMap biasMap = AffineMap::get(
          outType.getRank(), 0,
          {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx);
      init = buildGeneric(
          rewriter, loc, outType, ValueRange{groupedBias}, {biasMap},
          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    } else {
      init = createFilled(rewriter, loc, outType,
                          createConstant(rewriter, loc, element, 0.0));
    }

    // Loops: n, g, m, c, k..., o....
    unsigned numLoops = 4 + 2 * spatial;
    auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
    SmallVector<AffineExpr> xExprs = {dim(0), dim(1), dim(3)};
    SmallVector<AffineExpr> wExprs = {dim(1), dim(2), dim(3)};
    SmallVector<AffineExpr> outExprs = {dim(0), dim(1), dim(2)};
    for (unsigned i = 0; i < spatial; ++i) {
      AffineExpr k = dim(4 + i), o = dim(4 + spatial + i);
      xExprs.push_back(o * strides[i] + k * dilations[i]);
      wExprs.push_back(k);
      outExprs.push_back(o);
    }
    SmallVector<utils::IteratorType> iterators(numLoops,
                                               utils::IteratorType::parallel);
    for (unsigned d = 3; d < 4 + spatial; ++d)
      iterators[d] = utils::IteratorType::reduction;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{outType}, ValueRange{x, w}, ValueRange{init},
        ArrayRef<AffineMap>{AffineMap::get(numLoops, 0, xExprs, ctx),
                            AffineMap::get(numLoops, 0, wExprs, ctx),
                            AffineMap::get(numLoops, 0, outExprs, ctx)},
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value product = createMul(b, l, args[0], args[1]);
          linalg::YieldOp::create(b, l, createAdd(b, l, args[2], product));
        });
    SmallVector<ReassociationIndices> outGroups = {{0}, {1, 2}};
    for (unsigned i = 0; i < spatial; ++i)
      outGroups.push_back({3 + i});
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, type, generic.getResult(0), outGroups);
    return success();
  }
};

struct MaxPoolLowering : public OpConversionPattern<MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    if (!element.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Location loc = op.getLoc();
    Value lowest = createLowest(rewriter, loc, element);
    Value padded = padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(),
                              op.getKernelShape(), op.getStrides(),
                              op.getDilations(), type.getShape(), lowest);
    Value result =
        buildWindowReduction(rewriter, loc, padded, type, op.getKernelShape(),
                             op.getStrides(), op.getDilations(), lowest,
                             [](OpBuilder &b, Location l, ValueRange args) {
                               return createMax(b, l, args[1], args[0]);
                             });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Sums each window of the zero-padded input, then divides by the number of
/// window positions that lie inside the input (count_include_pad = false) or
/// inside the input and its explicit pads (true); positions that ceil mode
/// adds past the end pads never count. The count is a product of one
/// constant vector per spatial dimension.
struct AveragePoolLowering : public OpConversionPattern<AveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    if (!isa<FloatType>(element))
      return rewriter.notifyMatchFailure(op, "average_pool needs floats");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto inType = cast<RankedTensorType>(adaptor.getInput().getType());
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      dilations = op.getDilations(), pads = op.getPads();
    size_t spatial = kernel.size();
    Value zero = createConstant(rewriter, loc, element, 0.0);
    Value padded = padSpatial(rewriter, loc, adaptor.getInput(), pads, kernel,
                              strides, dilations, type.getShape(), zero);
    Value sum = buildWindowReduction(
        rewriter, loc, padded, type, kernel, strides, dilations, zero,
        [](OpBuilder &b, Location l, ValueRange args) {
          return createAdd(b, l, args[1], args[0]);
        });

    SmallVector<Value> operands = {sum};
    SmallVector<AffineMap> maps = {
        rewriter.getMultiDimIdentityMap(type.getRank())};
    for (size_t i = 0; i < spatial; ++i) {
      int64_t in = inType.getDimSize(2 + i);
      int64_t lo = op.getCountIncludePad() ? -pads[i] : 0;
      int64_t hi = op.getCountIncludePad() ? in + pads[spatial + i] : in;
      int64_t outSize = type.getDimSize(2 + i);
      SmallVector<double> counts;
      for (int64_t o = 0; o < outSize; ++o) {
        int64_t count = 0;
        for (int64_t k = 0; k < kernel[i]; ++k) {
          int64_t position = o * strides[i] - pads[i] + k * dilations[i];
          count += position >= lo && position < hi;
        }
        counts.push_back(static_cast<double>(count));
      }
      auto countType = RankedTensorType::get({outSize}, element);
      SmallVector<Attribute> values;
      for (double count : counts)
        values.push_back(rewriter.getFloatAttr(element, count));
      operands.push_back(arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(countType, values)));
      maps.push_back(AffineMap::get(type.getRank(), 0,
                                    {getAffineDimExpr(2 + i, ctx)}, ctx));
    }
    Value result =
        buildGeneric(rewriter, loc, type, operands, maps,
                     [](OpBuilder &b, Location l, ValueRange args) -> Value {
                       Value count = args[1];
                       for (Value next : args.drop_front(2))
                         count = arith::MulFOp::create(b, l, count, next);
                       return arith::DivFOp::create(b, l, args[0], count);
                     });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GlobalAveragePoolLowering
    : public OpConversionPattern<GlobalAveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GlobalAveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto inType = cast<RankedTensorType>(adaptor.getInput().getType());
    Type element = type.getElementType();
    if (!isa<FloatType>(element))
      return rewriter.notifyMatchFailure(op,
                                         "global_average_pool needs floats");
    Location loc = op.getLoc();
    SmallVector<int64_t> axes =
        llvm::to_vector(llvm::seq<int64_t>(2, inType.getRank()));
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= inType.getDimSize(axis);
    Value sum = buildSum(rewriter, loc, adaptor.getInput(), axes);
    Value countValue =
        createConstant(rewriter, loc, element, static_cast<double>(count));
    Value mean = buildBroadcastGeneric(
        rewriter, loc, cast<RankedTensorType>(sum.getType()), ValueRange{sum},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::DivFOp::create(b, l, args[0], countValue);
        });
    rewriter.replaceOp(op, createReshape(rewriter, loc, mean, type));
    return success();
  }
};

} // namespace

void tolinalg::populateConvPoolPatterns(RewritePatternSet &patterns) {
  patterns.add<AveragePoolLowering, ConvLowering, GlobalAveragePoolLowering,
               MaxPoolLowering>(patterns.getContext());
}
