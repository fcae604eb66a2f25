//===- Random.cpp - random number generators ------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of RandomUniform(Like), RandomNormal(Like), Bernoulli and
// Dropout in training mode. Every one draws from autopar.random_uniform, a
// counter-based generator (Philox4x32-10) whose values are a pure function
// of (key, stream, step counter, global element index): the same program
// gives the same values on any grid, and reruns are reproducible.
//
// The key is the node's `seed` attribute when it has one, otherwise a hash
// of ImportOptions::seed (`--seed`) and the node's name, so that two
// dropout layers draw different masks. RandomNormal is Box-Muller from the
// node's streams 0 and 1.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerRandomImporters(OpImporterRegistry &registry) {
  registry.add("RandomUniform", 1, &OnnxImporter::importRandom);
  registry.add("RandomNormal", 1, &OnnxImporter::importRandom);
  registry.add("RandomUniformLike", 1, &OnnxImporter::importRandom);
  registry.add("RandomNormalLike", 1, &OnnxImporter::importRandom);
  registry.add("Bernoulli", 15, &OnnxImporter::importBernoulli);
}

uint64_t OnnxImporter::getRandomKey(const NodeRef &ref) {
  if (const onnx::AttributeProto *seed = findAttr(ref, "seed"))
    return llvm::bit_cast<uint32_t>(seed->f());
  std::string text = std::to_string(options.seed) + "/" + ref.name;
  return llvm::xxh3_64bits(llvm::StringRef(text));
}

Value OnnxImporter::createUniform(const NodeRef &ref, Location loc,
                                  ArrayRef<int64_t> shape, int64_t stream) {
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  return RandomUniformOp::create(
      builder, loc, type, /*counter=*/Value(), /*offsets=*/ValueRange(),
      builder.getI64IntegerAttr(static_cast<int64_t>(getRandomKey(ref))),
      builder.getI64IntegerAttr(stream), /*global_shape=*/nullptr,
      /*whole_shape=*/nullptr, /*whole_offsets=*/nullptr);
}

/// The float32 element type named by attribute `dtype` (ONNX TensorProto
/// data type; `defaultType` when absent), or an error naming the type.
static FailureOr<DType>
getRandomDType(FailureOr<int64_t> dtype,
               function_ref<InFlightDiagnostic()> emitError) {
  if (failed(dtype))
    return failure();
  std::optional<DType> type = getDTypeFromOnnx(*dtype);
  if (!type || *type != DType::F32)
    return emitError() << "unsupported element type "
                       << getOnnxDataTypeName(*dtype)
                       << " of attribute 'dtype'; supported: float32";
  return *type;
}

/// RandomUniform(Like): low + u (high - low). RandomNormal(Like):
/// mean + scale sqrt(-2 ln(1 - u1)) cos(2 pi u2) (Box-Muller; 1 - u1 lies in
/// (0, 1], so the logarithm is finite).
LogicalResult OnnxImporter::importRandom(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  bool like = op.ends_with("Like");
  bool normal = op.starts_with("RandomNormal");
  SmallVector<StringRef> allowed = {"dtype", "seed"};
  allowed.append(normal ? std::initializer_list<StringRef>{"mean", "scale"}
                        : std::initializer_list<StringRef>{"low", "high"});
  if (!like)
    allowed.push_back("shape");
  if (failed(checkNode(ref, like ? 1 : 0, like ? 1 : 0, allowed)))
    return failure();
  SmallVector<int64_t> shape;
  int64_t defaultType = onnx::TensorProto::FLOAT;
  if (like) {
    RankedTensorType input = inputType(ref, 0);
    shape.assign(input.getShape().begin(), input.getShape().end());
    FailureOr<DType> inputDType =
        getDTypeFromElementType(input.getElementType());
    if (succeeded(inputDType) && *inputDType != DType::F32)
      defaultType = -1; // No float32 default: `dtype` must say float32.
  } else {
    if (!findAttr(ref, "shape"))
      return emitError(ref) << "missing required attribute 'shape'";
    FailureOr<SmallVector<int64_t>> attr = intsAttr(ref, "shape", {});
    if (failed(attr))
      return failure();
    for (int64_t size : *attr)
      if (size < 0)
        return emitError(ref)
               << "attribute 'shape' has a negative size " << size;
    shape = *attr;
  }
  if (!findAttr(ref, "dtype") && defaultType < 0)
    return emitError(ref) << "unsupported element type "
                          << typeToString(inputType(ref, 0))
                          << " of input 0 without a 'dtype' attribute; "
                             "supported: float32";
  if (failed(getRandomDType(intAttr(ref, "dtype", defaultType),
                            [&]() { return emitError(ref); })))
    return failure();
  FailureOr<float> a = floatAttr(ref, normal ? "mean" : "low", 0.0f);
  FailureOr<float> b = floatAttr(ref, normal ? "scale" : "high", 1.0f);
  if (failed(a) || failed(b))
    return failure();
  Type f32 = builder.getF32Type();
  auto scalar = [&](double v) { return createScalarConstant(loc, f32, v); };
  Value sample = createUniform(ref, loc, shape, /*stream=*/0);
  FailureOr<Value> value = sample;
  if (normal) {
    Value u2 = createUniform(ref, loc, shape, /*stream=*/1);
    // Each step's operand is the previous step's result (failure stops).
    auto then = [&](FailureOr<Value> v, auto build) -> FailureOr<Value> {
      if (failed(v))
        return failure();
      return build(*v);
    };
    FailureOr<Value> radius =
        then(createOp<SubOp>(ref, loc, {scalar(1.0), sample}), [&](Value open) {
          return then(createOp<LogOp>(ref, loc, {open}), [&](Value log) {
            return then(
                createOp<MulOp>(ref, loc, {log, scalar(-2.0)}),
                [&](Value r2) { return createOp<SqrtOp>(ref, loc, {r2}); });
          });
        });
    FailureOr<Value> cos =
        then(createOp<MulOp>(ref, loc, {u2, scalar(2 * M_PI)}),
             [&](Value angle) { return createOp<CosOp>(ref, loc, {angle}); });
    if (failed(radius) || failed(cos))
      return failure();
    value = createOp<MulOp>(ref, loc, {*radius, *cos});
    // mean + scale z
    if (succeeded(value) && *b != 1.0f)
      value = createOp<MulOp>(ref, loc, {*value, scalar(*b)});
    if (succeeded(value) && *a != 0.0f)
      value = createOp<AddOp>(ref, loc, {*value, scalar(*a)});
  } else {
    if (*b - *a != 1.0f)
      value = createOp<MulOp>(ref, loc, {sample, scalar(*b - *a)});
    if (succeeded(value) && *a != 0.0f)
      value = createOp<AddOp>(ref, loc, {*value, scalar(*a)});
  }
  return failed(value) ? failure() : setOutput(ref, 0, *value);
}

/// Bernoulli: 1 where u < p, 0 elsewhere, in `dtype` (the input's type by
/// default).
LogicalResult OnnxImporter::importBernoulli(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"dtype", "seed"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<int64_t> dtype = intAttr(ref, "dtype", onnx::TensorProto::FLOAT);
  if (failed(dtype))
    return failure();
  std::optional<DType> type = getDTypeFromOnnx(*dtype);
  if (!type || !isSupportedNodeType(*type))
    return emitError(ref) << "unsupported element type "
                          << getOnnxDataTypeName(*dtype)
                          << " of attribute 'dtype'; supported: float32, "
                             "int64, int32, bool";
  Value p = input(ref, 0);
  RankedTensorType pType = inputType(ref, 0);
  Value u = createUniform(ref, loc, pType.getShape(), /*stream=*/0);
  FailureOr<Value> hit = createOp<LessOp>(ref, loc, {u, p});
  if (failed(hit))
    return failure();
  Type element = getDTypeElementType(&ctx, *type);
  Value result = *hit;
  if (element != builder.getI1Type())
    result = CastOp::create(builder, loc, pType.clone(element), *hit);
  return setOutput(ref, 0, result);
}

FailureOr<Value> OnnxImporter::importTrainingDropout(const NodeRef &ref,
                                                     Location loc,
                                                     double ratio) {
  if (ratio < 0.0 || ratio >= 1.0)
    return emitError(ref) << "ratio must be in [0, 1), got " << ratio;
  Value x = input(ref, 0);
  RankedTensorType type = inputType(ref, 0);
  if (!isa<Float32Type>(type.getElementType()))
    return emitError(ref) << "training_mode needs a float32 input, got "
                          << typeToString(type);
  Value u = createUniform(ref, loc, type.getShape(), /*stream=*/0);
  Type f32 = builder.getF32Type();
  FailureOr<Value> keep = createOp<GreaterOrEqualOp>(
      ref, loc, {u, createScalarConstant(loc, f32, ratio)});
  if (failed(keep))
    return failure();
  FailureOr<Value> scaled = createOp<MulOp>(
      ref, loc, {x, createScalarConstant(loc, f32, 1.0 / (1.0 - ratio))});
  if (failed(scaled))
    return failure();
  FailureOr<Value> output = createOp<WhereOp>(
      ref, loc, {*keep, *scaled, createScalarConstant(loc, f32, 0.0)});
  if (failed(output) || failed(setOutput(ref, 0, *output)))
    return failure();
  return *keep;
}
