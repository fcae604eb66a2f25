//===- DataMovement.cpp - transpose, reshapes, concat, slices, gathers ---===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the data movement operators (Identity, Transpose, Reshape,
// Flatten, Squeeze, Unsqueeze, Concat, Split, Slice, Gather, Expand, Dropout)
// and their registration by opset.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerDataMovementImporters(OpImporterRegistry &registry) {
  registry.add("Identity", 1, &OnnxImporter::importIdentity);
  registry.add("Transpose", 1, &OnnxImporter::importTranspose);
  registry.add("Reshape", 1, &OnnxImporter::importReshape);
  registry.add("Flatten", 1, &OnnxImporter::importFlatten);
  registry.add("Squeeze", 1, &OnnxImporter::importSqueeze);
  registry.add("Unsqueeze", 1, &OnnxImporter::importUnsqueeze);
  registry.add("Concat", 1, &OnnxImporter::importConcat);
  registry.add("Split", 1, &OnnxImporter::importSplit);
  registry.add("Slice", 1, &OnnxImporter::importSlice);
  registry.add("Gather", 1, &OnnxImporter::importGather);
  registry.add("Expand", 1, &OnnxImporter::importExpand);
  registry.add("Dropout", 1, &OnnxImporter::importDropout);
  registry.add("GatherElements", 11, &OnnxImporter::importGatherElements);
  registry.add("Pad", 2, &OnnxImporter::importPad);
  registry.add("Tile", 6, &OnnxImporter::importTile);
  registry.add("DepthToSpace", 1, &OnnxImporter::importDepthToSpace);
  registry.add("SpaceToDepth", 1, &OnnxImporter::importSpaceToDepth);
  registry.add("OneHot", 9, &OnnxImporter::importOneHot);
  registry.add("Trilu", 14, &OnnxImporter::importTrilu);
  registry.add("Compress", 9, &OnnxImporter::importCompress);
  registry.add("Scatter", 9, &OnnxImporter::importScatterElements);
  registry.add("ScatterElements", 11, &OnnxImporter::importScatterElements);
  registry.add("ScatterND", 11, &OnnxImporter::importScatterND);
  registry.add("GatherND", 11, &OnnxImporter::importGatherND);
  registry.add("ReverseSequence", 10, &OnnxImporter::importReverseSequence);
}

LogicalResult OnnxImporter::importIdentity(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {})))
    return failure();
  if (const ConstTensor *value = knownInput(ref, 0))
    return setKnownOutput(ref, 0, *value, loc);
  return setOutput(ref, 0, input(ref, 0));
}

LogicalResult OnnxImporter::importTranspose(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"perm"})))
    return failure();
  RankedTensorType type = inputType(ref, 0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> reversed =
      llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank)));
  FailureOr<SmallVector<int64_t>> perm = intsAttr(ref, "perm", reversed);
  if (failed(perm))
    return failure();
  SmallVector<bool> seen(rank, false);
  if ((int64_t)perm->size() != rank || llvm::any_of(*perm, [&](int64_t p) {
        return p < 0 || p >= rank || std::exchange(seen[p], true);
      }))
    return emitError(ref) << "perm " << formatShape(*perm)
                          << " is not a permutation of rank " << rank;
  if (const ConstTensor *value = knownInput(ref, 0))
    return setKnownOutput(ref, 0, foldTranspose(*value, *perm), loc);
  TransposeOp::Properties props;
  props.setPerm(builder.getDenseI64ArrayAttr(*perm));
  FailureOr<Value> result =
      createOp<TransposeOp>(ref, loc, input(ref, 0), props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::finishReshape(const NodeRef &ref, Location loc,
                                          ArrayRef<int64_t> shape) {
  if (const ConstTensor *value = knownInput(ref, 0)) {
    ConstTensor reshaped = *value;
    reshaped.shape.assign(shape.begin(), shape.end());
    return setKnownOutput(ref, 0, std::move(reshaped), loc);
  }
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  Value result = ReshapeOp::create(builder, loc, type.clone(shape), x);
  return setOutput(ref, 0, result);
}

LogicalResult OnnxImporter::importReshape(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {"allowzero"})))
    return failure();
  FailureOr<int64_t> allowZero = intAttr(ref, "allowzero", 0);
  FailureOr<SmallVector<int64_t>> requested =
      succeeded(allowZero) ? requireKnownInts(ref, 1, "shape")
                           : FailureOr<SmallVector<int64_t>>(failure());
  if (failed(requested))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(*requested)) {
    if (d == 0 && !*allowZero) {
      if (i >= inShape.size())
        return emitError(ref)
               << "shape " << formatShape(*requested) << " copies dimension "
               << i << " of an input of rank " << inShape.size();
      d = inShape[i];
    } else if (d == -1) {
      if (inferred >= 0)
        return emitError(ref) << "shape " << formatShape(*requested)
                              << " has more than one -1";
      inferred = i;
      shape.push_back(1);
      continue;
    } else if (d < 0) {
      return emitError(ref) << "shape " << formatShape(*requested)
                            << " has a negative dimension";
    }
    shape.push_back(d);
    known *= d;
  }
  int64_t total = product(inShape);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return emitError(ref) << "cannot reshape " << formatShape(inShape)
                            << " to " << formatShape(*requested);
    shape[inferred] = total / known;
  }
  if (product(shape) != total)
    return emitError(ref) << "cannot reshape " << formatShape(inShape) << " ("
                          << total << " elements) to "
                          << formatShape(*requested);
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importFlatten(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"axis"})))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 1);
  if (failed(axisAttr))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size();
  if (*axisAttr < -rank || *axisAttr > rank)
    return emitError(ref) << "axis " << *axisAttr
                          << " is out of range for rank " << rank;
  int64_t axis = *axisAttr < 0 ? *axisAttr + rank : *axisAttr;
  SmallVector<int64_t> shape = {product(inShape.take_front(axis)),
                                product(inShape.drop_front(axis))};
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importSqueeze(const NodeRef &ref, Location loc) {
  bool axesInput = ref.opset >= 13;
  if (failed(axesInput ? checkNode(ref, 1, 2, {})
                       : checkNode(ref, 1, 1, {"axes"})))
    return failure();
  FailureOr<SmallVector<int64_t>> axes =
      axesInput ? (hasInput(ref, 1) ? requireKnownInts(ref, 1, "axes")
                                    : SmallVector<int64_t>())
                : intsAttr(ref, "axes", {});
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size();
  SmallVector<int64_t> squeezed;
  if (axes->empty()) {
    for (int64_t d = 0; d < rank; ++d)
      if (inShape[d] == 1)
        squeezed.push_back(d);
  } else {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(ref, *axes, rank);
    if (failed(normalized))
      return failure();
    squeezed = *normalized;
    for (int64_t d : squeezed)
      if (inShape[d] != 1)
        return emitError(ref) << "cannot squeeze dimension " << d << " of size "
                              << inShape[d] << " in " << formatShape(inShape);
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(squeezed, d))
      shape.push_back(inShape[d]);
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importUnsqueeze(const NodeRef &ref, Location loc) {
  bool axesInput = ref.opset >= 13;
  if (failed(axesInput ? checkNode(ref, 2, 2, {})
                       : checkNode(ref, 1, 1, {"axes"})))
    return failure();
  FailureOr<SmallVector<int64_t>> axes =
      axesInput ? requireKnownInts(ref, 1, "axes") : intsAttr(ref, "axes", {});
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size() + axes->size();
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ref, *axes, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape;
  auto next = inShape.begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*normalized, d) ? 1 : *next++);
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importConcat(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, kVariadic, {"axis"})))
    return failure();
  if (!findAttr(ref, "axis"))
    return emitError(ref) << "attribute 'axis' is required";
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(ref, *axisAttr, inputType(ref, 0).getRank());
  if (failed(axis))
    return failure();
  int n = ref.node->input_size();
  if (allInputsKnown(ref)) {
    SmallVector<const ConstTensor *> inputs;
    for (int i = 0; i < n; ++i)
      inputs.push_back(knownInput(ref, i));
    bool compatible = llvm::all_of(inputs, [&](const ConstTensor *t) {
      if (t->dtype != inputs[0]->dtype ||
          t->shape.size() != inputs[0]->shape.size())
        return false;
      for (size_t d = 0; d < t->shape.size(); ++d)
        if ((int64_t)d != *axis && t->shape[d] != inputs[0]->shape[d])
          return false;
      return true;
    });
    if (compatible)
      return setKnownOutput(ref, 0, foldConcat(inputs, *axis), loc);
  }
  SmallVector<Value> operands;
  for (int i = 0; i < n; ++i)
    operands.push_back(input(ref, i));
  ConcatOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  FailureOr<Value> result = createOp<ConcatOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importSplit(const NodeRef &ref, Location loc) {
  bool sizesInput = ref.opset >= 13;
  SmallVector<StringRef> allowed = {"axis"};
  if (!sizesInput)
    allowed.push_back("split");
  if (ref.opset >= 18)
    allowed.push_back("num_outputs");
  if (failed(checkNode(ref, 1, sizesInput ? 2 : 1, allowed, INT_MAX)))
    return failure();
  int numOutputs = ref.node->output_size();
  for (int i = 0; i < numOutputs; ++i)
    if (ref.node->output(i).empty())
      return emitError(ref) << "output " << i << " is missing";
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis = normalizeAxis(ref, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  int64_t size = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (sizesInput && hasInput(ref, 1)) {
    FailureOr<SmallVector<int64_t>> values = requireKnownInts(ref, 1, "split");
    if (failed(values))
      return failure();
    sizes = *values;
  } else if (!sizesInput && findAttr(ref, "split")) {
    FailureOr<SmallVector<int64_t>> values = intsAttr(ref, "split", {});
    if (failed(values))
      return failure();
    sizes = *values;
  } else if (findAttr(ref, "num_outputs")) {
    FailureOr<int64_t> count = intAttr(ref, "num_outputs", 0);
    if (failed(count))
      return failure();
    if (*count != numOutputs || *count <= 0)
      return emitError(ref) << "num_outputs = " << *count
                            << " but the node has " << numOutputs << " outputs";
    // Pieces of ceil(size / n), the last one smaller.
    int64_t piece = (size + *count - 1) / *count;
    for (int64_t i = 0, left = size; i < *count; ++i, left -= piece)
      sizes.push_back(std::max<int64_t>(0, std::min(piece, left)));
  } else {
    if (ref.opset >= 18)
      return emitError(ref) << "either input 'split' or attribute "
                               "'num_outputs' is required at opset 18";
    if (size % numOutputs != 0)
      return emitError(ref)
             << "cannot split dimension " << *axis << " of size " << size
             << " into " << numOutputs << " equal pieces";
    sizes.assign(numOutputs, size / numOutputs);
  }
  if ((int)sizes.size() != numOutputs)
    return emitError(ref) << "split has " << sizes.size() << " sizes for "
                          << numOutputs << " outputs";
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return emitError(ref) << "split sizes " << formatShape(sizes)
                            << " contain a negative size";
    total += s;
  }
  if (total != size)
    return emitError(ref) << "split sizes " << formatShape(sizes)
                          << " add up to " << total << ", dimension " << *axis
                          << " has size " << size;
  SmallVector<Type> types;
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = s;
    types.push_back(type.clone(shape));
  }
  auto split = SplitOp::create(builder, loc, types, x, *axis);
  for (int i = 0; i < numOutputs; ++i)
    if (failed(setOutput(ref, i, split.getResult(i))))
      return failure();
  return success();
}

LogicalResult OnnxImporter::importSlice(const NodeRef &ref, Location loc) {
  bool asInputs = ref.opset >= 10;
  if (failed(asInputs ? checkNode(ref, 3, 5, {})
                      : checkNode(ref, 1, 1, {"starts", "ends", "axes"})))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size();
  FailureOr<SmallVector<int64_t>> starts = failure(), ends = failure(),
                                  axes = failure(), steps = failure();
  if (asInputs) {
    starts = requireKnownInts(ref, 1, "starts");
    ends = requireKnownInts(ref, 2, "ends");
    if (failed(starts) || failed(ends))
      return failure();
    axes =
        hasInput(ref, 3)
            ? requireKnownInts(ref, 3, "axes")
            : llvm::to_vector(llvm::seq<int64_t>(0, (int64_t)starts->size()));
    steps = hasInput(ref, 4) ? requireKnownInts(ref, 4, "steps")
                             : SmallVector<int64_t>(starts->size(), 1);
  } else {
    starts = intsAttr(ref, "starts", {});
    ends = intsAttr(ref, "ends", {});
    if (failed(starts) || failed(ends))
      return failure();
    axes = intsAttr(ref, "axes",
                    llvm::to_vector(llvm::seq<int64_t>(0, starts->size())));
    steps = SmallVector<int64_t>(starts->size(), 1);
  }
  if (failed(axes) || failed(steps))
    return failure();
  size_t n = starts->size();
  if (ends->size() != n || axes->size() != n || steps->size() != n)
    return emitError(ref) << "starts, ends, axes and steps have different "
                             "lengths: "
                          << n << ", " << ends->size() << ", " << axes->size()
                          << ", " << steps->size();
  SmallVector<int64_t> normStarts(rank, 0), normSteps(rank, 1), shape(inShape);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = (*axes)[i];
    if (axis < -rank || axis >= rank)
      return emitError(ref)
             << "axis " << axis << " is out of range for rank " << rank;
    if (axis < 0)
      axis += rank;
    if (std::exchange(seen[axis], true))
      return emitError(ref) << "axis " << (*axes)[i] << " is repeated";
    int64_t dim = inShape[axis], step = (*steps)[i];
    if (step == 0)
      return emitError(ref) << "step of axis " << (*axes)[i] << " is 0";
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start = start < -dim ? -1 : start + dim;
    if (end < 0)
      end = end < -dim ? -1 : end + dim;
    int64_t size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? (start - end - step - 1) / -step : 0;
    }
    normStarts[axis] = size == 0 ? 0 : start;
    normSteps[axis] = step;
    shape[axis] = size;
  }
  if (const ConstTensor *value = knownInput(ref, 0))
    return setKnownOutput(ref, 0,
                          foldSlice(*value, normStarts, normSteps, shape), loc);
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  Value result = SliceOp::create(builder, loc, type.clone(shape), x,
                                 builder.getDenseI64ArrayAttr(normStarts),
                                 builder.getDenseI64ArrayAttr(normSteps));
  return setOutput(ref, 0, result);
}

LogicalResult OnnxImporter::importGather(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {"axis"})) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(ref, *axisAttr, inputType(ref, 0).getRank());
  if (failed(axis))
    return failure();
  const ConstTensor *data = knownInput(ref, 0), *indices = knownInput(ref, 1);
  if (data && indices) {
    std::string error;
    FailureOr<ConstTensor> folded = foldGather(*data, *indices, *axis, error);
    if (failed(folded))
      return emitError(ref) << error;
    return setKnownOutput(ref, 0, std::move(*folded), loc);
  }
  if (indices) {
    // Constant indices are checked at compile time.
    int64_t size = inputType(ref, 0).getDimSize(*axis);
    for (int64_t index : indices->ints)
      if (index < -size || index >= size)
        return emitError(ref)
               << "index " << index << " is out of range for dimension "
               << *axis << " of size " << size;
  }
  GatherOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  FailureOr<Value> result =
      createOp<GatherOp>(ref, loc, {input(ref, 0), input(ref, 1)}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importExpand(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {})))
    return failure();
  FailureOr<SmallVector<int64_t>> requested = requireKnownInts(ref, 1, "shape");
  if (failed(requested))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  FailureOr<SmallVector<int64_t>> shape = broadcastStatic(inShape, *requested);
  if (failed(shape))
    return emitError(ref) << "input shape " << formatShape(inShape)
                          << " does not broadcast with "
                          << formatShape(*requested);
  const ConstTensor *value = knownInput(ref, 0);
  if (value && product(*shape) <= kMaxFoldElements)
    return setKnownOutput(ref, 0, foldExpand(*value, *shape), loc);
  Value x = input(ref, 0);
  if (ArrayRef<int64_t>(*shape) == inShape)
    return setOutput(ref, 0, x);
  auto type = cast<RankedTensorType>(x.getType());
  Value result = ExpandOp::create(builder, loc, type.clone(*shape), x);
  return setOutput(ref, 0, result);
}

LogicalResult OnnxImporter::importDropout(const NodeRef &ref, Location loc) {
  bool asInputs = ref.opset >= 12;
  if (failed(asInputs ? checkNode(ref, 1, 3, {"seed"}, 2)
                      : checkNode(ref, 1, 1, {"ratio", "is_test"}, 2)))
    return failure();
  if (asInputs && hasInput(ref, 2)) {
    FailureOr<const ConstTensor *> training =
        requireKnown(ref, 2, "training_mode");
    if (failed(training))
      return failure();
    if ((*training)->getNumElements() != 1)
      return emitError(ref) << "input 2 ('training_mode') must be a scalar";
    // Training with a zero ratio drops nothing: the same as inference.
    double ratio = 0.5;
    if (hasInput(ref, 1)) {
      FailureOr<const ConstTensor *> known = requireKnown(ref, 1, "ratio");
      if (failed(known))
        return failure();
      if ((*known)->getNumElements() != 1)
        return emitError(ref) << "input 1 ('ratio') must be a scalar";
      ratio = (*known)->getDouble(0);
    }
    if ((*training)->getInt(0) != 0 && ratio != 0.0) {
      // Drops random elements: output and mask from the random source.
      FailureOr<Value> keep = importTrainingDropout(ref, loc, ratio);
      if (failed(keep))
        return failure();
      return isOutputUsed(ref, 1) ? setOutput(ref, 1, *keep) : success();
    }
  }
  LogicalResult output = knownInput(ref, 0)
                             ? setKnownOutput(ref, 0, *knownInput(ref, 0), loc)
                             : setOutput(ref, 0, input(ref, 0));
  if (failed(output) || !isOutputUsed(ref, 1))
    return output;
  // In inference the mask keeps every element: an all-true splat of X's
  // shape (bool from opset 10, X's element type before).
  RankedTensorType type = inputType(ref, 0);
  Type elementType =
      ref.opset >= 10 ? builder.getI1Type() : type.getElementType();
  auto maskType = type.clone(elementType);
  Attribute one = builder.getOneAttr(elementType);
  Value mask = ConstantOp::create(builder, loc, maskType,
                                  cast<ElementsAttr>(DenseElementsAttr::get(
                                      maskType, ArrayRef<Attribute>(one))));
  return setOutput(ref, 1, mask);
}

LogicalResult OnnxImporter::importGatherElements(const NodeRef &ref,
                                                 Location loc) {
  if (failed(checkNode(ref, 2, 2, {"axis"})) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(ref, *axisAttr, inputType(ref, 0).getRank());
  if (failed(axis))
    return failure();
  GatherElementsOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  FailureOr<Value> result = createOp<GatherElementsOp>(
      ref, loc, {input(ref, 0), input(ref, 1)}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// Pad: opset 2 takes `pads` and `value` as attributes; from opset 11 the
/// pads (constant) and the constant value (a scalar, which may be computed
/// at run time) are inputs; from 18 an `axes` input (constant) names the
/// padded dimensions.
LogicalResult OnnxImporter::importPad(const NodeRef &ref, Location loc) {
  bool asInputs = ref.opset >= 11;
  if (failed(asInputs ? checkNode(ref, 2, ref.opset >= 18 ? 4 : 3, {"mode"})
                      : checkNode(ref, 1, 1, {"mode", "pads", "value"})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  FailureOr<std::string> mode = stringAttr(ref, "mode", "constant");
  if (failed(mode))
    return failure();
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge" &&
      !(*mode == "wrap" && ref.opset >= 19))
    return emitError(ref) << "unsupported pad mode '" << *mode
                          << "'; supported: constant, reflect, edge"
                          << (ref.opset >= 19 ? ", wrap" : "");
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  FailureOr<SmallVector<int64_t>> given =
      asInputs ? requireKnownInts(ref, 1, "pads") : intsAttr(ref, "pads", {});
  if (failed(given))
    return failure();
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (asInputs && hasInput(ref, 3)) {
    FailureOr<SmallVector<int64_t>> values = requireKnownInts(ref, 3, "axes");
    if (failed(values))
      return failure();
    axes.clear();
    for (int64_t a : *values) {
      FailureOr<int64_t> axis = normalizeAxis(ref, a, rank);
      if (failed(axis))
        return failure();
      if (llvm::is_contained(axes, *axis))
        return emitError(ref) << "axis " << a << " of 'axes' is repeated";
      axes.push_back(*axis);
    }
  }
  int64_t n = axes.size();
  if ((int64_t)given->size() != 2 * n)
    return emitError(ref) << "'pads' needs " << 2 * n
                          << " values (begin and end of " << n << " axes), got "
                          << given->size();
  SmallVector<int64_t> pads(2 * rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    pads[axes[i]] = (*given)[i];
    pads[rank + axes[i]] = (*given)[n + i];
  }
  SmallVector<Value> operands = {x};
  if (*mode == "constant") {
    if (asInputs && hasInput(ref, 2)) {
      RankedTensorType valueType = inputType(ref, 2);
      if (valueType.getNumElements() != 1)
        return emitError(ref) << "input 2 ('constant_value') must be a scalar, "
                                 "got shape "
                              << formatShape(valueType.getShape());
      operands.push_back(input(ref, 2));
    } else if (!asInputs && findAttr(ref, "value")) {
      FailureOr<float> value = floatAttr(ref, "value", 0.0f);
      if (failed(value))
        return failure();
      operands.push_back(
          createScalarConstant(loc, type.getElementType(), *value));
    }
  }
  PadOp::Properties props;
  props.setPads(builder.getDenseI64ArrayAttr(pads));
  props.setMode(builder.getStringAttr(*mode));
  FailureOr<Value> result = createOp<PadOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// Tile as a broadcast: X of shape [d0, d1, ..] is viewed as [1, d0, 1, d1,
/// ..], expanded to [r0, d0, r1, d1, ..] and viewed as [r0 d0, r1 d1, ..].
LogicalResult OnnxImporter::importTile(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {})))
    return failure();
  FailureOr<SmallVector<int64_t>> repeats = requireKnownInts(ref, 1, "repeats");
  if (failed(repeats))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> shape = type.getShape();
  if (repeats->size() != shape.size())
    return emitError(ref) << "'repeats' has " << repeats->size()
                          << " values for an input of rank " << shape.size();
  SmallVector<int64_t> interleaved, expanded, tiled;
  for (auto [d, r] : llvm::zip(shape, *repeats)) {
    if (r < 0)
      return emitError(ref)
             << "'repeats' must be non-negative, got " << formatShape(*repeats);
    interleaved.append({1, d});
    expanded.append({r, d});
    tiled.push_back(r * d);
  }
  Value view = createReshape(loc, x, interleaved);
  Value broadcast = ExpandOp::create(builder, loc, type.clone(expanded), view);
  return setOutput(ref, 0, createReshape(loc, broadcast, tiled));
}

/// DepthToSpace as ONNX defines it: a reshape to 6-D, a transpose, a reshape
/// (DCR: depth-column-row order of the channel blocks, CRD: column-row-depth).
LogicalResult OnnxImporter::importDepthToSpace(const NodeRef &ref,
                                               Location loc) {
  if (failed(checkNode(ref, 1, 1, {"blocksize", "mode"})))
    return failure();
  FailureOr<int64_t> blocksize = intAttr(ref, "blocksize", 0);
  FailureOr<std::string> mode = stringAttr(ref, "mode", "DCR");
  if (failed(blocksize) || failed(mode))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() != 4)
    return emitError(ref) << "input must have rank 4, got "
                          << typeToString(type);
  if (*mode != "DCR" && *mode != "CRD")
    return emitError(ref) << "attribute 'mode' must be 'DCR' or 'CRD', got '"
                          << *mode << "'";
  int64_t b = *blocksize;
  auto [n, c, h, w] = std::make_tuple(type.getDimSize(0), type.getDimSize(1),
                                      type.getDimSize(2), type.getDimSize(3));
  if (b <= 0 || c % (b * b) != 0)
    return emitError(ref) << "attribute 'blocksize' (" << b
                          << ") squared must divide the " << c << " channels";
  int64_t depth = c / (b * b);
  bool dcr = *mode == "DCR";
  SmallVector<int64_t> split = dcr ? SmallVector<int64_t>{n, b, b, depth, h, w}
                                   : SmallVector<int64_t>{n, depth, b, b, h, w};
  SmallVector<int64_t> perm = dcr ? SmallVector<int64_t>{0, 3, 4, 1, 5, 2}
                                  : SmallVector<int64_t>{0, 1, 4, 2, 5, 3};
  TransposeOp::Properties props;
  props.setPerm(builder.getDenseI64ArrayAttr(perm));
  FailureOr<Value> moved =
      createOp<TransposeOp>(ref, loc, createReshape(loc, x, split), props);
  if (failed(moved))
    return failure();
  return setOutput(ref, 0,
                   createReshape(loc, *moved, {n, depth, h * b, w * b}));
}

/// SpaceToDepth: the inverse of DepthToSpace in DCR order.
LogicalResult OnnxImporter::importSpaceToDepth(const NodeRef &ref,
                                               Location loc) {
  if (failed(checkNode(ref, 1, 1, {"blocksize"})))
    return failure();
  FailureOr<int64_t> blocksize = intAttr(ref, "blocksize", 0);
  if (failed(blocksize))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() != 4)
    return emitError(ref) << "input must have rank 4, got "
                          << typeToString(type);
  int64_t b = *blocksize;
  auto [n, c, h, w] = std::make_tuple(type.getDimSize(0), type.getDimSize(1),
                                      type.getDimSize(2), type.getDimSize(3));
  if (b <= 0 || h % b != 0 || w % b != 0)
    return emitError(ref) << "attribute 'blocksize' (" << b
                          << ") must divide the spatial sizes " << h << " and "
                          << w;
  TransposeOp::Properties props;
  props.setPerm(builder.getDenseI64ArrayAttr({0, 3, 5, 1, 2, 4}));
  FailureOr<Value> moved = createOp<TransposeOp>(
      ref, loc, createReshape(loc, x, {n, c, h / b, b, w / b, b}), props);
  if (failed(moved))
    return failure();
  return setOutput(ref, 0,
                   createReshape(loc, *moved, {n, c * b * b, h / b, w / b}));
}

/// OneHot: the indices (negative ones wrapped by `depth`) compared with the
/// positions 0..depth-1 along the new axis select the on or off value. The
/// depth defines the result's shape and must be a compile-time constant; the
/// values may be computed at run time. Indices out of range match no
/// position (all off).
LogicalResult OnnxImporter::importOneHot(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 3, 3, {"axis"})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  FailureOr<const ConstTensor *> depthValue = requireKnown(ref, 1, "depth");
  if (failed(depthValue))
    return failure();
  if ((*depthValue)->getNumElements() != 1)
    return emitError(ref) << "input 1 ('depth') must be a scalar, got shape "
                          << formatShape((*depthValue)->shape);
  int64_t depth = (*depthValue)->getInt(0);
  if (depth <= 0)
    return emitError(ref) << "input 1 ('depth') must be positive, got "
                          << depth;
  RankedTensorType valuesType = inputType(ref, 2);
  if (valuesType.getNumElements() != 2)
    return emitError(ref) << "input 2 ('values') must have 2 elements (off, "
                             "on), got shape "
                          << formatShape(valuesType.getShape());
  Value indices = input(ref, 0);
  auto indicesType = cast<RankedTensorType>(indices.getType());
  int64_t rank = indicesType.getRank();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", -1);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis = normalizeAxis(ref, *axisAttr, rank + 1);
  if (failed(axis))
    return failure();
  Type indexElement = indicesType.getElementType();
  // Negative indices count from depth.
  Value zero = createScalarConstant(loc, indexElement, 0.0);
  Value depthScalar =
      createScalarConstant(loc, indexElement, static_cast<double>(depth));
  FailureOr<Value> negative = createOp<LessOp>(ref, loc, {indices, zero});
  if (failed(negative))
    return failure();
  FailureOr<Value> shifted = createOp<AddOp>(ref, loc, {indices, depthScalar});
  if (failed(shifted))
    return failure();
  FailureOr<Value> wrapped =
      createOp<WhereOp>(ref, loc, {*negative, *shifted, indices});
  if (failed(wrapped))
    return failure();
  SmallVector<int64_t> expandedShape(indicesType.getShape());
  expandedShape.insert(expandedShape.begin() + *axis, 1);
  SmallVector<int64_t> positionShape(rank + 1, 1);
  positionShape[*axis] = depth;
  SmallVector<int64_t> positions =
      llvm::to_vector(llvm::seq<int64_t>(0, depth));
  Value positionValue = createI64Constant(loc, positions, positionShape);
  if (indexElement != builder.getI64Type())
    positionValue = CastOp::create(
        builder, loc,
        cast<RankedTensorType>(positionValue.getType()).clone(indexElement),
        positionValue);
  FailureOr<Value> hot = createOp<EqualOp>(
      ref, loc, {createReshape(loc, *wrapped, expandedShape), positionValue});
  if (failed(hot))
    return failure();
  // off = values[0], on = values[1] (scalars, broadcast).
  Value values = createReshape(loc, input(ref, 2), {2});
  auto pick = [&](int64_t i) -> FailureOr<Value> {
    GatherOp::Properties props;
    props.setAxis(builder.getI64IntegerAttr(0));
    return createOp<GatherOp>(ref, loc,
                              {values, createI64Constant(loc, {i}, {})}, props);
  };
  FailureOr<Value> off = pick(0), on = pick(1);
  if (failed(off) || failed(on))
    return failure();
  FailureOr<Value> result = createOp<WhereOp>(ref, loc, {*hot, *on, *off});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// Trilu: the elements with j - i >= k (upper) or j - i <= k (lower) of the
/// last two dimensions, zeros elsewhere: where over a mask that compares
/// the constant j - i with k, which may be computed at run time.
LogicalResult OnnxImporter::importTrilu(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 2, {"upper"})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  FailureOr<int64_t> upper = intAttr(ref, "upper", 1);
  if (failed(upper))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 2)
    return emitError(ref) << "input must have rank >= 2, got "
                          << typeToString(type);
  int64_t rows = type.getDimSize(type.getRank() - 2);
  int64_t cols = type.getDimSize(type.getRank() - 1);
  SmallVector<int64_t> diagonal;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      diagonal.push_back(j - i);
  Value offsets = createI64Constant(loc, diagonal, {rows, cols});
  Value k;
  if (hasInput(ref, 1)) {
    RankedTensorType kType = inputType(ref, 1);
    if (kType.getNumElements() != 1 ||
        kType.getElementType() != builder.getI64Type())
      return emitError(ref) << "input 1 ('k') must be an int64 scalar, got "
                            << typeToString(kType);
    k = input(ref, 1);
  } else {
    k = createI64Constant(loc, {0}, {});
  }
  FailureOr<Value> mask =
      *upper ? createOp<GreaterOrEqualOp>(ref, loc, {offsets, k})
             : createOp<LessOrEqualOp>(ref, loc, {offsets, k});
  if (failed(mask))
    return failure();
  FailureOr<Value> result = createOp<WhereOp>(
      ref, loc,
      {*mask, x, createScalarConstant(loc, type.getElementType(), 0.0)});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// Compress: the result's shape depends on the condition, which must be a
/// compile-time constant; the slices it selects are a gather at constant
/// indices (of the flattened input when there is no axis).
LogicalResult OnnxImporter::importCompress(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {"axis"})) ||
      failed(checkInputType(ref, 1, kBool)))
    return failure();
  FailureOr<const ConstTensor *> condition = requireKnown(ref, 1, "condition");
  if (failed(condition))
    return failure();
  if ((*condition)->shape.size() != 1)
    return emitError(ref) << "input 1 ('condition') must be 1-D, got shape "
                          << formatShape((*condition)->shape);
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t axis = 0;
  if (findAttr(ref, "axis")) {
    FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
    if (failed(axisAttr))
      return failure();
    FailureOr<int64_t> normalized =
        normalizeAxis(ref, *axisAttr, type.getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else {
    x = createReshape(loc, x, {product(type.getShape())});
  }
  int64_t size = cast<RankedTensorType>(x.getType()).getDimSize(axis);
  int64_t length = (*condition)->getNumElements();
  if (length > size)
    return emitError(ref) << "input 1 ('condition') has " << length
                          << " elements for a dimension of size " << size;
  SmallVector<int64_t> selected;
  for (int64_t i = 0; i < length; ++i)
    if ((*condition)->getInt(i))
      selected.push_back(i);
  GatherOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(axis));
  FailureOr<Value> result = createOp<GatherOp>(
      ref, loc,
      {x, createI64Constant(loc, selected, {(int64_t)selected.size()})}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// ReverseSequence: a gather_elements along the time axis at t' = len[b] - 1
/// - t where t < len[b] (else t), computed from the sequence lengths, which
/// may be known only at run time.
LogicalResult OnnxImporter::importReverseSequence(const NodeRef &ref,
                                                  Location loc) {
  if (failed(checkNode(ref, 2, 2, {"batch_axis", "time_axis"})) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<int64_t> batchAttr = intAttr(ref, "batch_axis", 1);
  FailureOr<int64_t> timeAttr = intAttr(ref, "time_axis", 0);
  if (failed(batchAttr) || failed(timeAttr))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || !((*batchAttr == 0 && *timeAttr == 1) ||
                    (*batchAttr == 1 && *timeAttr == 0)))
    return emitError(ref) << "batch_axis and time_axis must be 0 and 1 (in "
                             "either order) of an input of rank >= 2";
  int64_t batchAxis = *batchAttr, timeAxis = *timeAttr;
  int64_t batch = type.getDimSize(batchAxis), time = type.getDimSize(timeAxis);
  RankedTensorType lensType = inputType(ref, 1);
  if (lensType.getShape() != ArrayRef<int64_t>{batch})
    return emitError(ref) << "input 1 ('sequence_lens') must have shape ["
                          << batch << "], got " << typeToString(lensType);
  Value lens = input(ref, 1);
  if (lensType.getElementType() != builder.getI64Type())
    lens = CastOp::create(builder, loc, lensType.clone(builder.getI64Type()),
                          lens);
  // Both index tensors are [time, batch] or [batch, time] (then broadcast).
  SmallVector<int64_t> timeShape(2, 1), lenShape(2, 1);
  timeShape[timeAxis] = time;
  lenShape[batchAxis] = batch;
  Value t = createI64Constant(loc, llvm::to_vector(llvm::seq<int64_t>(0, time)),
                              timeShape);
  Value l = createReshape(loc, lens, lenShape);
  FailureOr<Value> inside = createOp<LessOp>(ref, loc, {t, l});
  if (failed(inside))
    return failure();
  FailureOr<Value> last =
      createOp<SubOp>(ref, loc, {l, createI64Constant(loc, {1}, {})});
  if (failed(last))
    return failure();
  FailureOr<Value> reversed = createOp<SubOp>(ref, loc, {*last, t});
  if (failed(reversed))
    return failure();
  FailureOr<Value> index = createOp<WhereOp>(ref, loc, {*inside, *reversed, t});
  if (failed(index))
    return failure();
  // [time, batch] (or [batch, time]) indices viewed with the trailing
  // dimensions and expanded to the input's shape.
  SmallVector<int64_t> viewShape(
      cast<RankedTensorType>(index->getType()).getShape());
  viewShape.append(rank - 2, 1);
  Value view = createReshape(loc, *index, viewShape);
  Value full =
      ExpandOp::create(builder, loc, type.clone(builder.getI64Type()), view);
  GatherElementsOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(timeAxis));
  FailureOr<Value> result =
      createOp<GatherElementsOp>(ref, loc, {x, full}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// ScatterElements (and Scatter, its name in opsets 9 and 10). The
/// `reduction` attribute comes in opset 16 (none, add, mul); 18 adds max
/// and min.
LogicalResult OnnxImporter::importScatterElements(const NodeRef &ref,
                                                  Location loc) {
  bool hasReduction = ref.opset >= 16;
  SmallVector<StringRef> allowed = {"axis"};
  if (hasReduction)
    allowed.push_back("reduction");
  if (failed(checkNode(ref, 3, 3, allowed)) ||
      failed(checkInputType(ref, 0, kNumeric)) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  FailureOr<std::string> reduction = stringAttr(ref, "reduction", "none");
  if (failed(axisAttr) || failed(reduction))
    return failure();
  bool known = *reduction == "none" || *reduction == "add" ||
               *reduction == "mul" ||
               (ref.opset >= 18 && (*reduction == "max" || *reduction == "min"));
  if (!known)
    return emitError(ref) << "unsupported reduction '" << *reduction
                          << "'; supported: none, add, mul"
                          << (ref.opset >= 18 ? ", max, min" : "");
  FailureOr<int64_t> axis =
      normalizeAxis(ref, *axisAttr, inputType(ref, 0).getRank());
  if (failed(axis))
    return failure();
  ScatterElementsOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  props.setReduction(builder.getStringAttr(*reduction));
  FailureOr<Value> result = createOp<ScatterElementsOp>(
      ref, loc, {input(ref, 0), input(ref, 1), input(ref, 2)}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// ScatterND, with `reduction` as for ScatterElements.
LogicalResult OnnxImporter::importScatterND(const NodeRef &ref, Location loc) {
  bool hasReduction = ref.opset >= 16;
  if (failed(checkNode(ref, 3, 3,
                       hasReduction ? ArrayRef<StringRef>{"reduction"}
                                    : ArrayRef<StringRef>{})) ||
      failed(checkInputType(ref, 0, kNumeric)) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<std::string> reduction = stringAttr(ref, "reduction", "none");
  if (failed(reduction))
    return failure();
  bool known = *reduction == "none" || *reduction == "add" ||
               *reduction == "mul" ||
               (ref.opset >= 18 && (*reduction == "max" || *reduction == "min"));
  if (!known)
    return emitError(ref) << "unsupported reduction '" << *reduction
                          << "'; supported: none, add, mul"
                          << (ref.opset >= 18 ? ", max, min" : "");
  ScatterNDOp::Properties props;
  props.setReduction(builder.getStringAttr(*reduction));
  FailureOr<Value> result = createOp<ScatterNDOp>(
      ref, loc, {input(ref, 0), input(ref, 1), input(ref, 2)}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// GatherND as a gather along dimension 0 of the data viewed as [B * P,
/// rest...], where B is the product of the `batch_dims` leading dimensions
/// and P that of the k dimensions an index tuple addresses: the flat index
/// of a tuple is its (wrapped) components times their row-major strides,
/// summed, plus the batch position times P. The gather checks the flat
/// index's range at run time; a single component out of its own range
/// whose flat index still lands inside the data is not detected.
LogicalResult OnnxImporter::importGatherND(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2,
                       ref.opset >= 12 ? ArrayRef<StringRef>{"batch_dims"}
                                       : ArrayRef<StringRef>{})) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<int64_t> batchDims = intAttr(ref, "batch_dims", 0);
  if (failed(batchDims))
    return failure();
  Value data = input(ref, 0), indices = input(ref, 1);
  auto dataType = cast<RankedTensorType>(data.getType());
  auto indicesType = cast<RankedTensorType>(indices.getType());
  int64_t r = dataType.getRank(), q = indicesType.getRank(), b = *batchDims;
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return emitError(ref) << "batch_dims = " << b
                          << " must be below the ranks of data and indices ("
                          << r << ", " << q << ")";
  ArrayRef<int64_t> dataShape = dataType.getShape(),
                    indicesShape = indicesType.getShape();
  int64_t k = indicesShape.back();
  if (k < 1 || b + k > r)
    return emitError(ref) << "the last dimension of indices (" << k
                          << ") must be in [1, " << r - b
                          << "] (rank of data minus batch_dims)";
  if (dataShape.take_front(b) != indicesShape.take_front(b))
    return emitError(ref) << "the batch dimensions of data "
                          << typeToString(dataType) << " and indices "
                          << typeToString(indicesType) << " differ";
  Type i64 = builder.getI64Type();
  if (indicesType.getElementType() != i64)
    indices = CastOp::create(builder, loc, indicesType.clone(i64), indices);
  // Wrap negative components: idx < 0 ? idx + size : idx.
  ArrayRef<int64_t> addressed = dataShape.slice(b, k);
  Value sizes = createI64Constant(loc, addressed, {k});
  FailureOr<Value> negative =
      createOp<LessOp>(ref, loc, {indices, createI64Constant(loc, {0}, {})});
  FailureOr<Value> shifted = createOp<AddOp>(ref, loc, {indices, sizes});
  if (failed(negative) || failed(shifted))
    return failure();
  FailureOr<Value> wrapped =
      createOp<WhereOp>(ref, loc, {*negative, *shifted, indices});
  if (failed(wrapped))
    return failure();
  SmallVector<int64_t> strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * addressed[j + 1];
  FailureOr<Value> scaled =
      createOp<MulOp>(ref, loc, {*wrapped, createI64Constant(loc, strides, {k})});
  if (failed(scaled))
    return failure();
  ReduceSumOp::Properties sumProps;
  sumProps.setAxes(builder.getDenseI64ArrayAttr({q - 1}));
  sumProps.setKeepdims(builder.getBoolAttr(false));
  FailureOr<Value> flat = createOp<ReduceSumOp>(ref, loc, {*scaled}, sumProps);
  if (failed(flat))
    return failure();
  int64_t tuple = product(addressed);
  int64_t batch = product(dataShape.take_front(b));
  if (b > 0) {
    SmallVector<int64_t> offsets;
    for (int64_t i = 0; i < batch; ++i)
      offsets.push_back(i * tuple);
    SmallVector<int64_t> offsetShape(dataShape.take_front(b));
    offsetShape.append(q - 1 - b, 1);
    FailureOr<Value> withBatch = createOp<AddOp>(
        ref, loc, {*flat, createI64Constant(loc, offsets, offsetShape)});
    if (failed(withBatch))
      return failure();
    flat = withBatch;
  }
  SmallVector<int64_t> viewShape = {batch * tuple};
  llvm::append_range(viewShape, dataShape.drop_front(b + k));
  GatherOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(0));
  FailureOr<Value> result = createOp<GatherOp>(
      ref, loc, {createReshape(loc, data, viewShape), *flat}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
