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
