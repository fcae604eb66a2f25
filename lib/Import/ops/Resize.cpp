//===- Resize.cpp - Resize and Upsample -----------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Resize (and the older Upsample) with constant scales or sizes. ONNX's
// interpolation is separable: each resized dimension is resampled on its
// own, one dimension after the other. With the sizes known at compile time,
// the source positions and the weights of every output position are known
// too, so each dimension becomes gathers along it at constant indices (one
// per tap: 1 for nearest, 2 for linear, 4 for cubic) summed with constant
// per-position weights. tf_crop_and_resize positions outside the input take
// the extrapolation value (a final where). Every piece is an autopar op with
// its sharding rule: the resized dimensions stay whole, the others split.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerResizeImporters(OpImporterRegistry &registry) {
  registry.add("Upsample", 9, &OnnxImporter::importResize);
  registry.add("Resize", 11, &OnnxImporter::importResize);
  registry.add("GridSample", 16, &OnnxImporter::importGridSample);
}

namespace {

/// How one dimension is resampled.
struct ResizeMode {
  std::string mode;      // nearest, linear, cubic
  std::string transform; // coordinate_transformation_mode
  std::string nearest;   // nearest_mode
  double cubicA = -0.75;
  bool excludeOutside = false;
};

/// The taps (source indices, unclamped) and weights of output position `o`
/// of a dimension of `in` elements resized by `scale` (`roi` = start, end
/// for tf_crop_and_resize); `outside` is set when the position falls outside
/// the input (tf_crop_and_resize only).
void computeTaps(const ResizeMode &m, int64_t in, double scale, int64_t o,
                 double roiStart, double roiEnd, SmallVectorImpl<int64_t> &taps,
                 SmallVectorImpl<double> &weights, bool &outside) {
  double outWidth = scale * static_cast<double>(in);
  double x = static_cast<double>(o);
  double src;
  const std::string &t = m.transform;
  if (t == "align_corners") {
    src = outWidth == 1 ? 0.0 : x * (in - 1) / (outWidth - 1);
  } else if (t == "asymmetric") {
    src = x / scale;
  } else if (t == "tf_crop_and_resize") {
    src = outWidth == 1 ? (roiEnd - roiStart) * (in - 1) / 2
                        : x * (roiEnd - roiStart) * (in - 1) / (outWidth - 1);
    src += roiStart * (in - 1);
  } else if (t == "pytorch_half_pixel") {
    src = outWidth == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  } else if (t == "tf_half_pixel_for_nn") {
    src = (x + 0.5) / scale;
  } else { // half_pixel
    src = (x + 0.5) / scale - 0.5;
  }
  outside = t == "tf_crop_and_resize" && (src < 0 || src > in - 1);
  double base = std::floor(src);
  double ratio = src - base;
  auto floorIndex = static_cast<int64_t>(base);
  taps.clear();
  weights.clear();
  if (m.mode == "nearest") {
    bool up;
    if (ratio == 0)
      up = false;
    else if (m.nearest == "round_prefer_ceil")
      up = ratio >= 0.5;
    else if (m.nearest == "floor")
      up = false;
    else if (m.nearest == "ceil")
      up = true;
    else // round_prefer_floor
      up = ratio > 0.5;
    taps.push_back(floorIndex + (up ? 1 : 0));
    weights.push_back(1.0);
    return;
  }
  if (m.mode == "linear") {
    taps.append({floorIndex, floorIndex + 1});
    weights.append({1 - ratio, ratio});
  } else { // cubic
    double a = m.cubicA, r = ratio, s = 1 - ratio;
    taps.append({floorIndex - 1, floorIndex, floorIndex + 1, floorIndex + 2});
    weights.append(
        {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
         ((a + 2) * r - (a + 3)) * r * r + 1,
         ((a + 2) * s - (a + 3)) * s * s + 1,
         ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a});
  }
  if (m.excludeOutside) {
    double sum = 0;
    for (auto [tap, w] : llvm::zip(taps, weights)) {
      if (tap < 0 || tap >= in)
        w = 0;
      sum += w;
    }
    for (double &w : weights)
      w /= sum;
  }
}

} // namespace

LogicalResult OnnxImporter::importResize(const NodeRef &ref, Location loc) {
  bool upsample = ref.node->op_type() == "Upsample";
  if (failed(upsample
                 ? checkNode(ref, 2, 2, {"mode"})
                 : checkNode(ref, 1, 4,
                             {"coordinate_transformation_mode", "cubic_coeff_a",
                              "exclude_outside", "extrapolation_value", "mode",
                              "nearest_mode"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  ResizeMode m;
  FailureOr<std::string> mode = stringAttr(ref, "mode", "nearest");
  FailureOr<std::string> transform =
      stringAttr(ref, "coordinate_transformation_mode",
                 upsample ? "asymmetric" : "half_pixel");
  FailureOr<std::string> nearest = stringAttr(
      ref, "nearest_mode", upsample ? "floor" : "round_prefer_floor");
  FailureOr<float> cubicA = floatAttr(ref, "cubic_coeff_a", -0.75f);
  FailureOr<int64_t> exclude = intAttr(ref, "exclude_outside", 0);
  FailureOr<float> extrapolation = floatAttr(ref, "extrapolation_value", 0.0f);
  if (failed(mode) || failed(transform) || failed(nearest) || failed(cubicA) ||
      failed(exclude) || failed(extrapolation))
    return failure();
  if (*mode != "nearest" && *mode != "linear" && *mode != "cubic")
    return emitError(ref) << "attribute 'mode' must be 'nearest', 'linear' or "
                             "'cubic', got '"
                          << *mode << "'";
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn",
                           "tf_crop_and_resize"},
                          *transform))
    return emitError(ref) << "unsupported coordinate_transformation_mode '"
                          << *transform << "'";
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          *nearest))
    return emitError(ref) << "unsupported nearest_mode '" << *nearest << "'";
  m.mode = *mode;
  m.transform = *transform;
  m.nearest = *nearest;
  m.cubicA = *cubicA;
  m.excludeOutside = *exclude != 0;

  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  Type element = type.getElementType();

  // Scales (input 1 of Upsample, 2 of Resize) or sizes (input 3); an empty
  // scales tensor means "not given".
  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  unsigned scalesIndex = upsample ? 1 : 2;
  if (!upsample && hasInput(ref, 3)) {
    FailureOr<SmallVector<int64_t>> values = requireKnownInts(ref, 3, "sizes");
    if (failed(values))
      return failure();
    sizes = *values;
  }
  if (sizes.empty() && hasInput(ref, scalesIndex)) {
    FailureOr<const ConstTensor *> values =
        requireKnown(ref, scalesIndex, "scales");
    if (failed(values))
      return failure();
    for (int64_t i = 0, e = (*values)->getNumElements(); i < e; ++i)
      scales.push_back((*values)->getDouble(i));
  }
  if (sizes.empty() && scales.empty())
    return emitError(ref) << "one of 'scales' and 'sizes' must be given";
  if (!sizes.empty() && (int64_t)sizes.size() != rank)
    return emitError(ref) << "'sizes' has " << sizes.size()
                          << " values for an input of rank " << rank;
  if (sizes.empty() && (int64_t)scales.size() != rank)
    return emitError(ref) << "'scales' has " << scales.size()
                          << " values for an input of rank " << rank;
  SmallVector<int64_t> outShape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!sizes.empty()) {
      if (sizes[d] <= 0)
        return emitError(ref)
               << "'sizes' must be positive, got " << formatShape(sizes);
      scales.push_back(static_cast<double>(sizes[d]) / shape[d]);
      outShape.push_back(sizes[d]);
    } else {
      if (!(scales[d] > 0))
        return emitError(ref) << "'scales' must be positive, got " << scales[d]
                              << " for dimension " << d;
      outShape.push_back(static_cast<int64_t>(scales[d] * shape[d]));
    }
  }
  SmallVector<double> roi;
  if (m.transform == "tf_crop_and_resize") {
    if (!hasInput(ref, 1))
      return emitError(ref)
             << "input 1 ('roi') is required by tf_crop_and_resize";
    FailureOr<const ConstTensor *> values = requireKnown(ref, 1, "roi");
    if (failed(values))
      return failure();
    if ((*values)->getNumElements() != 2 * rank)
      return emitError(ref) << "'roi' must have " << 2 * rank << " values";
    for (int64_t i = 0; i < 2 * rank; ++i)
      roi.push_back((*values)->getDouble(i));
  }

  Value y = x;
  Value outsideMask; // i1, broadcast over the dimensions seen so far
  SmallVector<int64_t> taps;
  SmallVector<double> weights;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = shape[d], out = outShape[d];
    bool cropped = m.transform == "tf_crop_and_resize" &&
                   (roi[d] != 0 || roi[rank + d] != 1);
    if (in == out && scales[d] == 1.0 && !cropped)
      continue;
    if (in == 0)
      return emitError(ref) << "cannot resize the empty dimension " << d;
    // Per tap: clamped indices and weights of every output position.
    SmallVector<SmallVector<int64_t>> tapIndices;
    SmallVector<SmallVector<float>> tapWeights;
    SmallVector<bool> outside(out, false);
    bool anyOutside = false;
    for (int64_t o = 0; o < out; ++o) {
      bool isOutside = false;
      computeTaps(m, in, scales[d], o, roi.empty() ? 0.0 : roi[d],
                  roi.empty() ? 1.0 : roi[rank + d], taps, weights, isOutside);
      outside[o] = isOutside;
      anyOutside |= isOutside;
      tapIndices.resize(taps.size());
      tapWeights.resize(taps.size());
      for (size_t t = 0; t < taps.size(); ++t) {
        tapIndices[t].push_back(std::clamp<int64_t>(taps[t], 0, in - 1));
        tapWeights[t].push_back(static_cast<float>(weights[t]));
      }
    }
    SmallVector<int64_t> weightShape(rank, 1);
    weightShape[d] = out;
    auto weightType = RankedTensorType::get(weightShape, element);
    Value sum;
    for (size_t t = 0; t < tapIndices.size(); ++t) {
      GatherOp::Properties props;
      props.setAxis(builder.getI64IntegerAttr(d));
      FailureOr<Value> gathered = createOp<GatherOp>(
          ref, loc, {y, createI64Constant(loc, tapIndices[t], {out})}, props);
      if (failed(gathered))
        return failure();
      Value term = *gathered;
      if (m.mode != "nearest") {
        Value w = ConstantOp::create(
            builder, loc, weightType,
            cast<ElementsAttr>(DenseElementsAttr::get(
                weightType, ArrayRef<float>(tapWeights[t]))));
        FailureOr<Value> weighted = createOp<MulOp>(ref, loc, {term, w});
        if (failed(weighted))
          return failure();
        term = *weighted;
      }
      if (!sum) {
        sum = term;
        continue;
      }
      FailureOr<Value> added = createOp<AddOp>(ref, loc, {sum, term});
      if (failed(added))
        return failure();
      sum = *added;
    }
    y = sum;
    if (anyOutside) {
      auto maskType = RankedTensorType::get(weightShape, builder.getI1Type());
      SmallVector<bool> bits(outside.begin(), outside.end());
      Value mask = ConstantOp::create(
          builder, loc, maskType,
          cast<ElementsAttr>(DenseElementsAttr::get(maskType, bits)));
      if (!outsideMask) {
        outsideMask = mask;
      } else {
        FailureOr<Value> either = createOp<OrOp>(ref, loc, {outsideMask, mask});
        if (failed(either))
          return failure();
        outsideMask = *either;
      }
    }
  }
  if (outsideMask) {
    FailureOr<Value> extrapolated = createOp<WhereOp>(
        ref, loc,
        {outsideMask, createScalarConstant(loc, element, *extrapolation), y});
    if (failed(extrapolated))
      return failure();
    y = *extrapolated;
  }
  return setOutput(ref, 0, y);
}

//===----------------------------------------------------------------------===//
// GridSample
//===----------------------------------------------------------------------===//

/// GridSample (opset 16, 4-D) as ONNX's reference computes it: each grid
/// point (x, y) in [-1, 1] is unnormalized to pixel coordinates (corner
/// pixel centers or corners by align_corners); out of the border [min, max]
/// (0 .. size - 1, or -0.5 .. size - 0.5 without align_corners) `border`
/// clamps the point into the image and `reflection` reflects it; `nearest`
/// rounds it half to even first. The value is the sum over the taps of the
/// mode (1, 2 x 2 bilinear, 4 x 4 bicubic with A = -0.75) of weight times
/// pixel, a pixel outside the image being 0 (`zeros`), the nearest border
/// pixel (`border`) or the reflected one (`reflection`). Composed of
/// elementwise ops and one gather_elements per tap on X viewed as
/// [N, C, H * W] with indices [N, C, Hout * Wout]: batch and channels split.
LogicalResult OnnxImporter::importGridSample(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {"align_corners", "mode", "padding_mode"})) ||
      failed(checkInputType(ref, 0, kFloat)) ||
      failed(checkInputType(ref, 1, kFloat)))
    return failure();
  FailureOr<int64_t> alignCorners = intAttr(ref, "align_corners", 0);
  FailureOr<std::string> mode = stringAttr(ref, "mode", "bilinear");
  FailureOr<std::string> paddingMode = stringAttr(ref, "padding_mode", "zeros");
  if (failed(alignCorners) || failed(mode) || failed(paddingMode))
    return failure();
  if (*mode != "bilinear" && *mode != "nearest" && *mode != "bicubic")
    return emitError(ref) << "attribute 'mode' must be 'bilinear', 'nearest' "
                             "or 'bicubic', got '"
                          << *mode << "'";
  if (*paddingMode != "zeros" && *paddingMode != "border" &&
      *paddingMode != "reflection")
    return emitError(ref) << "attribute 'padding_mode' must be 'zeros', "
                             "'border' or 'reflection', got '"
                          << *paddingMode << "'";
  Value x = input(ref, 0), grid = input(ref, 1);
  auto xType = cast<RankedTensorType>(x.getType());
  auto gridType = cast<RankedTensorType>(grid.getType());
  ArrayRef<int64_t> xs = xType.getShape(), gs = gridType.getShape();
  if (xs.size() != 4 || gs.size() != 4 || gs[0] != xs[0] || gs[3] != 2)
    return emitError(ref) << "expected X [N, C, H, W] and grid [N, Hout, "
                             "Wout, 2], got "
                          << formatShape(xs) << " and " << formatShape(gs);
  int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  int64_t points = gs[1] * gs[2];
  if (h < 1 || w < 1)
    return emitError(ref) << "X must not be empty, got " << formatShape(xs);
  Type f32 = xType.getElementType();
  bool align = *alignCorners != 0;

  bool ok = true;
  auto check = [&](FailureOr<Value> v) -> Value {
    if (failed(v)) {
      ok = false;
      return Value();
    }
    return *v;
  };
  auto scalar = [&](double v) { return createScalarConstant(loc, f32, v); };
  auto add = [&](Value a, Value b) {
    return ok ? check(createOp<AddOp>(ref, loc, {a, b})) : Value();
  };
  auto sub = [&](Value a, Value b) {
    return ok ? check(createOp<SubOp>(ref, loc, {a, b})) : Value();
  };
  auto mul = [&](Value a, Value b) {
    return ok ? check(createOp<MulOp>(ref, loc, {a, b})) : Value();
  };
  auto floor = [&](Value a) {
    return ok ? check(createOp<FloorOp>(ref, loc, a, EmptyProperties()))
              : Value();
  };
  auto where = [&](Value cond, Value a, Value b) {
    return ok ? check(createOp<WhereOp>(ref, loc, {cond, a, b})) : Value();
  };
  auto less = [&](Value a, Value b) {
    return ok ? check(createOp<LessOp>(ref, loc, {a, b})) : Value();
  };
  auto greater = [&](Value a, Value b) {
    return ok ? check(createOp<GreaterOp>(ref, loc, {a, b})) : Value();
  };
  auto either = [&](Value a, Value b) {
    return ok ? check(createOp<OrOp>(ref, loc, {a, b})) : Value();
  };
  auto both = [&](Value a, Value b) {
    return ok ? check(createOp<AndOp>(ref, loc, {a, b})) : Value();
  };
  auto clip = [&](Value a, double lo, double hi) -> Value {
    if (!ok)
      return Value();
    ClipOp::Properties props;
    props.setMin(builder.getF64FloatAttr(lo));
    props.setMax(builder.getF64FloatAttr(hi));
    return check(createOp<ClipOp>(ref, loc, a, props));
  };
  // ONNX's reflection of `v` into [lo, hi].
  auto reflect = [&](Value v, double lo, double hi) -> Value {
    double range = hi - lo;
    if (range <= 0)
      return add(mul(v, scalar(0.0)), scalar(lo));
    Value below = less(v, scalar(lo)), above = greater(v, scalar(hi));
    Value d = where(below, sub(scalar(lo), v), sub(v, scalar(hi)));
    Value turns = floor(mul(d, scalar(1.0 / range)));
    Value r = sub(d, mul(turns, scalar(range)));
    ModOp::Properties modProps;
    modProps.setFmod(builder.getBoolAttr(true));
    Value parity =
        ok ? check(createOp<ModOp>(ref, loc, {turns, scalar(2.0)}, modProps))
           : Value();
    Value even = ok ? check(createOp<EqualOp>(ref, loc, {parity, scalar(0.0)}))
                    : Value();
    // Below: an even number of turns lands r above lo; above: r below hi.
    Value fromLow =
        ok ? check(createOp<EqualOp>(ref, loc, {below, even})) : Value();
    Value reflected = where(fromLow, add(scalar(lo), r), sub(scalar(hi), r));
    return where(either(below, above), reflected, v);
  };

  // The grid's x and y as [N, 1, Hout * Wout].
  auto coordinate = [&](int64_t index) {
    SmallVector<int64_t> starts = {0, 0, 0, index}, steps = {1, 1, 1, 1};
    Value part =
        SliceOp::create(builder, loc, gridType.clone({gs[0], gs[1], gs[2], 1}),
                        grid, builder.getDenseI64ArrayAttr(starts),
                        builder.getDenseI64ArrayAttr(steps));
    return createReshape(loc, part, {n, 1, points});
  };
  auto unnormalize = [&](Value g, int64_t size) {
    // align: (g + 1) / 2 * (size - 1); else ((g + 1) * size - 1) / 2.
    Value plusOne = add(g, scalar(1.0));
    if (align)
      return mul(plusOne, scalar((size - 1) / 2.0));
    return sub(mul(plusOne, scalar(size / 2.0)), scalar(0.5));
  };
  Value px = unnormalize(coordinate(0), w);
  Value py = unnormalize(coordinate(1), h);
  if (*mode == "nearest" && ok) {
    px = check(createOp<RoundOp>(ref, loc, px, EmptyProperties()));
    py = ok ? check(createOp<RoundOp>(ref, loc, py, EmptyProperties()))
            : Value();
  }
  double xMin = align ? 0.0 : -0.5, xMax = align ? w - 1.0 : w - 0.5;
  double yMin = align ? 0.0 : -0.5, yMax = align ? h - 1.0 : h - 0.5;
  if (*paddingMode == "border") {
    Value out =
        either(either(less(px, scalar(xMin)), greater(px, scalar(xMax))),
               either(less(py, scalar(yMin)), greater(py, scalar(yMax))));
    px = where(out, clip(px, 0.0, w - 1.0), px);
    py = where(out, clip(py, 0.0, h - 1.0), py);
  } else if (*paddingMode == "reflection") {
    px = reflect(px, xMin, xMax);
    py = reflect(py, yMin, yMax);
  }
  if (!ok)
    return failure();

  // The taps of each axis: (integer-valued coordinate, weight or null).
  using Taps = SmallVector<std::pair<Value, Value>>;
  auto taps = [&](Value p) -> Taps {
    if (*mode == "nearest")
      return {{p, Value()}};
    Value base = floor(p);
    Value t = sub(p, base);
    if (*mode == "bilinear")
      return {{base, sub(scalar(1.0), t)}, {add(base, scalar(1.0)), t}};
    // Bicubic (A = -0.75) at distances t + 1, t, 1 - t, 2 - t.
    constexpr double a = -0.75;
    auto far = [&](Value s) { // ((a s - 5a) s + 8a) s - 4a
      Value v = sub(mul(s, scalar(a)), scalar(5 * a));
      v = add(mul(v, s), scalar(8 * a));
      return sub(mul(v, s), scalar(4 * a));
    };
    auto near = [&](Value s) { // ((a + 2) s - (a + 3)) s s + 1
      Value v = sub(mul(s, scalar(a + 2)), scalar(a + 3));
      return add(mul(mul(v, s), s), scalar(1.0));
    };
    Value oneMinus = sub(scalar(1.0), t);
    return {{add(base, scalar(-1.0)), far(add(t, scalar(1.0)))},
            {base, near(t)},
            {add(base, scalar(1.0)), near(oneMinus)},
            {add(base, scalar(2.0)), far(add(oneMinus, scalar(1.0)))}};
  };
  Taps xTaps = taps(px), yTaps = taps(py);
  if (!ok)
    return failure();

  // One pixel coordinate as an in-range index (and, for zeros, whether it
  // was in range).
  auto pixelIndex = [&](Value v, int64_t size, double lo, double hi,
                        Value &inside) -> Value {
    if (*paddingMode == "zeros")
      inside = both(greater(v, scalar(-1.0)), less(v, scalar(size)));
    else if (*paddingMode == "reflection")
      v = reflect(v, lo, hi);
    // Truncation toward zero, as the reference's integer conversion.
    return clip(v, 0.0, size - 1.0);
  };
  Value flatX = createReshape(loc, x, {n, c, h * w});
  auto i64Type = RankedTensorType::get({n, 1, points}, builder.getI64Type());
  Value result;
  for (auto [yPos, yWeight] : yTaps) {
    Value yInside;
    Value row = pixelIndex(yPos, h, yMin, yMax, yInside);
    for (auto [xPos, xWeight] : xTaps) {
      Value xInside;
      Value col = pixelIndex(xPos, w, xMin, xMax, xInside);
      Value flat = add(mul(floor(row), scalar(w)), floor(col));
      if (!ok)
        return failure();
      Value index = CastOp::create(builder, loc, i64Type, flat);
      Value indices =
          ExpandOp::create(builder, loc, i64Type.clone({n, c, points}), index);
      GatherElementsOp::Properties gatherProps;
      gatherProps.setAxis(builder.getI64IntegerAttr(2));
      Value pixel = check(
          createOp<GatherElementsOp>(ref, loc, {flatX, indices}, gatherProps));
      if (yInside)
        pixel = where(both(yInside, xInside), pixel, scalar(0.0));
      Value weight = xWeight && yWeight ? mul(yWeight, xWeight)
                     : xWeight          ? xWeight
                                        : yWeight;
      Value term = weight ? mul(pixel, weight) : pixel;
      result = result ? add(result, term) : term;
      if (!ok)
        return failure();
    }
  }
  return setOutput(ref, 0, createReshape(loc, result, {n, c, gs[1], gs[2]}));
}
