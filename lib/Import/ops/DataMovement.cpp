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
    if ((*training)->getNumElements() != 1 || (*training)->getInt(0) != 0)
      return emitError(ref) << "training_mode must be false; only inference "
                               "is supported";
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
