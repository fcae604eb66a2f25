//===- Shape.cpp - constants and shape computations ----------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of Constant, ConstantOfShape, Shape and Range (evaluated on the
// host when their inputs are known) and their registration by opset.
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

void OnnxImporter::registerShapeImporters(OpImporterRegistry &registry) {
  registry.add("Constant", 1, &OnnxImporter::importConstantNode);
  registry.add("ConstantOfShape", 1, &OnnxImporter::importConstantOfShape);
  registry.add("Shape", 1, &OnnxImporter::importShape);
  registry.add("Range", 1, &OnnxImporter::importRange);
  registry.add("Size", 1, &OnnxImporter::importSize);
  registry.add("EyeLike", 9, &OnnxImporter::importEyeLike);
}

/// Size: the element count of the (static) input, an int64 scalar known at
/// compile time.
LogicalResult OnnxImporter::importSize(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {})))
    return failure();
  ConstTensor size;
  size.dtype = DType::I64;
  size.ints = {product(inputType(ref, 0).getShape())};
  return setKnownOutput(ref, 0, std::move(size), loc);
}

/// EyeLike: ones on diagonal `k` of the 2-D input's shape, known at compile
/// time, of the `dtype` type (default: the input's).
LogicalResult OnnxImporter::importEyeLike(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"dtype", "k"})))
    return failure();
  RankedTensorType type = inputType(ref, 0);
  if (type.getRank() != 2)
    return emitError(ref) << "input must have rank 2, got "
                          << typeToString(type);
  FailureOr<int64_t> k = intAttr(ref, "k", 0);
  if (failed(k))
    return failure();
  std::optional<DType> dtype;
  if (FailureOr<DType> inputDType =
          getDTypeFromElementType(type.getElementType());
      succeeded(inputDType))
    dtype = *inputDType;
  if (findAttr(ref, "dtype")) {
    FailureOr<int64_t> onnxType = intAttr(ref, "dtype", 0);
    if (failed(onnxType))
      return failure();
    dtype = getDTypeFromOnnx(*onnxType);
    if (!dtype || !isSupportedNodeType(*dtype))
      return emitError(ref)
             << "unsupported element type " << getOnnxDataTypeName(*onnxType)
             << " of attribute 'dtype'; supported: float32, "
                "int64, int32, bool";
  }
  assert(dtype && "imported values have supported element types");
  ConstTensor eye;
  eye.dtype = *dtype;
  eye.shape = llvm::to_vector(type.getShape());
  for (int64_t i = 0; i < eye.shape[0]; ++i)
    for (int64_t j = 0; j < eye.shape[1]; ++j) {
      bool one = j - i == *k;
      if (eye.isFloat())
        eye.floats.push_back(one ? 1.0 : 0.0);
      else
        eye.ints.push_back(one ? 1 : 0);
    }
  return setKnownOutput(ref, 0, std::move(eye), loc);
}

LogicalResult OnnxImporter::importConstantNode(const NodeRef &ref,
                                               Location loc) {
  if (failed(checkNode(ref, 0, 0,
                       {"value", "value_float", "value_floats", "value_int",
                        "value_ints", "sparse_value", "value_string",
                        "value_strings"})))
    return failure();
  return importConstant(ref, loc);
}

LogicalResult OnnxImporter::importConstantOfShape(const NodeRef &ref,
                                                  Location loc) {
  if (failed(checkNode(ref, 1, 1, {"value"})))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = requireKnownInts(ref, 0, "input");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return emitError(ref)
             << "shape " << formatShape(*shape) << " has a negative dimension";
  ConstTensor value;
  value.dtype = DType::F32;
  value.floats = {0.0};
  if (const onnx::AttributeProto *attr = findAttr(ref, "value")) {
    if (attr->type() != onnx::AttributeProto::TENSOR)
      return emitError(ref) << "attribute 'value' must be a tensor";
    const onnx::TensorProto &tensor = attr->t();
    std::optional<DType> dtype = getDTypeFromOnnx(tensor.data_type());
    if (!dtype || !isSupportedNodeType(*dtype))
      return emitError(ref) << "unsupported element type "
                            << getOnnxDataTypeName(tensor.data_type())
                            << " of attribute 'value'; supported: float32, "
                               "int64, int32, bool";
    SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    if (getNumElements(dims) != 1)
      return emitError(ref) << "attribute 'value' must have one element";
    std::vector<char> bytes;
    std::string error;
    if (tensor.has_raw_data()) {
      bytes.assign(tensor.raw_data().begin(), tensor.raw_data().end());
      if ((int64_t)bytes.size() != getDTypeSize(*dtype))
        return emitError(ref) << "attribute 'value' has " << bytes.size()
                              << " bytes of raw_data";
    } else if (failed(decodeTypedData(tensor, *dtype, 1, bytes, error))) {
      return emitError(ref) << error;
    }
    value = makeConstTensor(*dtype, {}, bytes);
  }
  if (product(*shape) > kMaxFoldElements) {
    // Too large to hold on the host: a splat constant.
    ConstTensor one = value;
    auto type =
        RankedTensorType::get(*shape, getDTypeElementType(&ctx, value.dtype));
    DenseElementsAttr attr = toAttr(&ctx, one);
    Value splat =
        ConstantOp::create(builder, loc, type,
                           cast<ElementsAttr>(DenseElementsAttr::get(
                               type, attr.getSplatValue<Attribute>())));
    return setOutput(ref, 0, splat);
  }
  return setKnownOutput(ref, 0, makeSplat(value, *shape), loc);
}

LogicalResult OnnxImporter::importShape(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"start", "end"})))
    return failure();
  ArrayRef<int64_t> shape = inputType(ref, 0).getShape();
  int64_t rank = shape.size();
  FailureOr<int64_t> startAttr = intAttr(ref, "start", 0);
  FailureOr<int64_t> endAttr = intAttr(ref, "end", rank);
  if (failed(startAttr) || failed(endAttr))
    return failure();
  auto clampIndex = [&](int64_t i) {
    return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank);
  };
  int64_t start = clampIndex(*startAttr), end = clampIndex(*endAttr);
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(shape[d]);
  return setKnownOutput(ref, 0, makeI64Vector(dims), loc);
}

LogicalResult OnnxImporter::importRange(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 3, 3, {})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  const char *names[] = {"start", "limit", "delta"};
  const ConstTensor *operands[3];
  for (unsigned i = 0; i < 3; ++i) {
    FailureOr<const ConstTensor *> value = requireKnown(ref, i, names[i]);
    if (failed(value))
      return failure();
    if ((*value)->getNumElements() != 1)
      return emitError(ref) << "input " << i << " ('" << names[i]
                            << "') must be a scalar, got shape "
                            << formatShape((*value)->shape);
    operands[i] = *value;
  }
  ConstTensor result;
  result.dtype = operands[0]->dtype;
  if (result.isFloat()) {
    double start = operands[0]->floats[0], limit = operands[1]->getDouble(0),
           delta = operands[2]->getDouble(0);
    if (delta == 0)
      return emitError(ref) << "delta is 0";
    int64_t count =
        std::max<int64_t>(0, (int64_t)std::ceil((limit - start) / delta));
    if (count > kMaxFoldElements)
      return emitError(ref) << "range of " << count << " elements is too large";
    for (int64_t i = 0; i < count; ++i)
      result.floats.push_back(result.dtype == DType::F32
                                  ? (double)(float)(start + i * delta)
                                  : start + i * delta);
    result.shape = {count};
  } else {
    int64_t start = operands[0]->ints[0], limit = operands[1]->getInt(0),
            delta = operands[2]->getInt(0);
    if (delta == 0)
      return emitError(ref) << "delta is 0";
    int64_t span = limit - start;
    int64_t count = std::max<int64_t>(
        0, span / delta + (span % delta != 0 && (span > 0) == (delta > 0)));
    if (count > kMaxFoldElements)
      return emitError(ref) << "range of " << count << " elements is too large";
    for (int64_t i = 0; i < count; ++i)
      result.ints.push_back(start + i * delta);
    result.shape = {count};
  }
  return setKnownOutput(ref, 0, std::move(result), loc);
}
