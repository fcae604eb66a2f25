//===- ShapeFolding.cpp - Host evaluation of shape computations -----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the host evaluation of the ONNX operators that compute
// shapes (see ShapeFolding.h).
//
//===----------------------------------------------------------------------===//

#include "ShapeFolding.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

//===----------------------------------------------------------------------===//
// ConstTensor
//===----------------------------------------------------------------------===//

static int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t ConstTensor::getNumElements() const { return product(shape); }

int64_t ConstTensor::getInt(int64_t i) const {
  return isFloat() ? static_cast<int64_t>(floats[i]) : ints[i];
}

double ConstTensor::getDouble(int64_t i) const {
  return isFloat() ? floats[i] : static_cast<double>(ints[i]);
}

void ConstTensor::appendFrom(const ConstTensor &other, int64_t i) {
  if (isFloat())
    floats.push_back(other.floats[i]);
  else
    ints.push_back(other.ints[i]);
}

bool ConstTensor::isSplat() const {
  if (isFloat())
    return !floats.empty() && llvm::all_equal(floats);
  return !ints.empty() && llvm::all_equal(ints);
}

/// Rounds `value` to the precision of `dtype` (float32 results of host
/// arithmetic) or wraps it to the integer width.
static double roundFloat(DType dtype, double value) {
  return dtype == DType::F32 ? static_cast<double>(static_cast<float>(value))
                             : value;
}

static int64_t wrapInt(DType dtype, int64_t value) {
  switch (dtype) {
  case DType::I32:
    return static_cast<int32_t>(value);
  case DType::I8:
    return static_cast<int8_t>(value);
  case DType::U8:
    return static_cast<uint8_t>(value);
  case DType::Bool:
    return value != 0;
  default:
    return value;
  }
}

template <typename T>
static T load(const char *p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

ConstTensor importer::makeConstTensor(DType dtype, ArrayRef<int64_t> shape,
                                      ArrayRef<char> bytes) {
  ConstTensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  int64_t n = product(shape);
  int64_t size = getDTypeSize(dtype);
  for (int64_t i = 0; i < n; ++i) {
    const char *p = bytes.data() + i * size;
    switch (dtype) {
    case DType::F32:
      t.floats.push_back(load<float>(p));
      break;
    case DType::F64:
      t.floats.push_back(load<double>(p));
      break;
    case DType::I64:
      t.ints.push_back(load<int64_t>(p));
      break;
    case DType::I32:
      t.ints.push_back(load<int32_t>(p));
      break;
    case DType::I8:
      t.ints.push_back(load<int8_t>(p));
      break;
    case DType::U8:
      t.ints.push_back(load<uint8_t>(p));
      break;
    case DType::Bool:
      t.ints.push_back(*p != 0);
      break;
    }
  }
  return t;
}

ConstTensor importer::makeI64Vector(ArrayRef<int64_t> values) {
  ConstTensor t;
  t.shape = {static_cast<int64_t>(values.size())};
  t.ints.assign(values.begin(), values.end());
  return t;
}

ConstTensor importer::makeSplat(const ConstTensor &value,
                                ArrayRef<int64_t> shape) {
  ConstTensor t;
  t.dtype = value.dtype;
  t.shape.assign(shape.begin(), shape.end());
  int64_t n = product(shape);
  if (t.isFloat())
    t.floats.assign(n, value.floats[0]);
  else
    t.ints.assign(n, value.ints[0]);
  return t;
}

template <typename T>
static void store(std::vector<char> &out, T value) {
  const char *p = reinterpret_cast<const char *>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

std::vector<char> importer::toBytes(const ConstTensor &t) {
  std::vector<char> out;
  int64_t n = t.getNumElements();
  out.reserve(n * getDTypeSize(t.dtype));
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype) {
    case DType::F32:
      store<float>(out, static_cast<float>(t.floats[i]));
      break;
    case DType::F64:
      store<double>(out, t.floats[i]);
      break;
    case DType::I64:
      store<int64_t>(out, t.ints[i]);
      break;
    case DType::I32:
      store<int32_t>(out, static_cast<int32_t>(t.ints[i]));
      break;
    case DType::I8:
      store<int8_t>(out, static_cast<int8_t>(t.ints[i]));
      break;
    case DType::U8:
      store<uint8_t>(out, static_cast<uint8_t>(t.ints[i]));
      break;
    case DType::Bool:
      store<uint8_t>(out, t.ints[i] != 0);
      break;
    }
  }
  return out;
}

RankedTensorType importer::getConstTensorType(MLIRContext *ctx,
                                              const ConstTensor &t) {
  return RankedTensorType::get(t.shape, getDTypeElementType(ctx, t.dtype));
}

DenseElementsAttr importer::toAttr(MLIRContext *ctx, const ConstTensor &t) {
  RankedTensorType type = getConstTensorType(ctx, t);
  if (t.dtype == DType::Bool) {
    SmallVector<bool> bools(llvm::map_range(t.ints, [](int64_t v) {
      return v != 0;
    }));
    return DenseElementsAttr::get(type, ArrayRef<bool>(bools));
  }
  if (t.isSplat()) {
    ConstTensor one = t;
    one.shape.clear();
    one.ints.resize(one.ints.empty() ? 0 : 1);
    one.floats.resize(one.floats.empty() ? 0 : 1);
    std::vector<char> bytes = toBytes(one);
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  }
  std::vector<char> bytes = toBytes(t);
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

std::string importer::formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
importer::broadcastStatic(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return failure();
    result[i] = l == 1 ? r : l;
  }
  return result;
}

/// Row-major strides of `shape` as seen from a result of rank `rank`, with
/// stride 0 on broadcast dimensions.
static SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                             ArrayRef<int64_t> result) {
  SmallVector<int64_t> strides(result.size(), 0);
  int64_t stride = 1;
  size_t offset = result.size() - shape.size();
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    strides[offset + i] = shape[i] == 1 && result[offset + i] != 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

/// Calls `fn(result index, operand indices...)` for every element of the
/// broadcast result of `shape`.
static void forEachBroadcast(ArrayRef<int64_t> resultShape,
                             ArrayRef<SmallVector<int64_t>> strides,
                             function_ref<void(ArrayRef<int64_t>)> fn) {
  int64_t n = product(resultShape);
  size_t rank = resultShape.size();
  SmallVector<int64_t> index(rank, 0);
  SmallVector<int64_t> offsets(strides.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    fn(offsets);
    for (int64_t d = rank - 1; d >= 0; --d) {
      ++index[d];
      for (auto [o, s] : llvm::zip(offsets, strides))
        o += s[d];
      if (index[d] < resultShape[d])
        break;
      for (auto [o, s] : llvm::zip(offsets, strides))
        o -= s[d] * index[d];
      index[d] = 0;
    }
  }
}

FailureOr<ConstTensor> importer::foldBinary(StringRef op,
                                            const ConstTensor &lhs,
                                            const ConstTensor &rhs,
                                            std::string &error, bool fmod) {
  FailureOr<SmallVector<int64_t>> shape = broadcastStatic(lhs.shape, rhs.shape);
  if (failed(shape)) {
    error = "operand shapes " + formatShape(lhs.shape) + " and " +
            formatShape(rhs.shape) + " do not broadcast";
    return failure();
  }
  bool compare = op == "Equal" || op == "Less" || op == "Greater";
  ConstTensor result;
  result.dtype = compare ? DType::Bool : lhs.dtype;
  result.shape = *shape;
  SmallVector<SmallVector<int64_t>> strides = {
      broadcastStrides(lhs.shape, *shape), broadcastStrides(rhs.shape, *shape)};
  bool isFloat = lhs.isFloat();
  bool divByZero = false;
  forEachBroadcast(*shape, strides, [&](ArrayRef<int64_t> at) {
    if (isFloat) {
      double a = lhs.floats[at[0]], b = rhs.getDouble(at[1]);
      if (compare) {
        result.ints.push_back(op == "Equal" ? a == b
                              : op == "Less" ? a < b
                                             : a > b);
        return;
      }
      double r = op == "Add"   ? a + b
                 : op == "Sub" ? a - b
                 : op == "Mul" ? a * b
                 : op == "Div" ? a / b
                 : op == "Mod" ? std::fmod(a, b)
                               : std::pow(a, b);
      result.floats.push_back(roundFloat(lhs.dtype, r));
      return;
    }
    int64_t a = lhs.ints[at[0]], b = rhs.getInt(at[1]);
    if (compare) {
      result.ints.push_back(op == "Equal" ? a == b : op == "Less" ? a < b
                                                                  : a > b);
      return;
    }
    int64_t r = 0;
    if (op == "Add")
      r = static_cast<int64_t>(static_cast<uint64_t>(a) + uint64_t(b));
    else if (op == "Sub")
      r = static_cast<int64_t>(static_cast<uint64_t>(a) - uint64_t(b));
    else if (op == "Mul")
      r = static_cast<int64_t>(static_cast<uint64_t>(a) * uint64_t(b));
    else if (op == "And")
      r = (a != 0) && (b != 0);
    else if (op == "Div") {
      if (b == 0 || (a == INT64_MIN && b == -1))
        divByZero = true;
      else
        r = a / b;
    } else if (op == "Mod") {
      // fmod: C's remainder, with the dividend's sign; otherwise the
      // divisor's sign (r + b when the remainder and b differ in sign).
      if (b == 0) {
        divByZero = true;
      } else if (b != -1) {
        r = a % b;
        if (!fmod && r != 0 && (r < 0) != (b < 0))
          r += b;
      }
    } else {
      r = static_cast<int64_t>(std::pow(double(a), rhs.getDouble(at[1])));
    }
    result.ints.push_back(wrapInt(lhs.dtype, r));
  });
  if (divByZero) {
    error = op == "Mod" ? "integer modulo by zero in a constant computation"
                        : "integer division by zero in a constant computation";
    return failure();
  }
  return result;
}

FailureOr<ConstTensor> importer::foldUnary(StringRef op,
                                           const ConstTensor &input,
                                           std::string &error) {
  ConstTensor result = input;
  for (double &v : result.floats)
    v = op == "Neg" ? -v : std::fabs(v);
  for (int64_t &v : result.ints)
    v = op == "Not" ? !v : op == "Neg" ? wrapInt(input.dtype, -v)
                                       : wrapInt(input.dtype, v < 0 ? -v : v);
  return result;
}

FailureOr<ConstTensor> importer::foldWhere(const ConstTensor &cond,
                                           const ConstTensor &x,
                                           const ConstTensor &y,
                                           std::string &error) {
  FailureOr<SmallVector<int64_t>> xy = broadcastStatic(x.shape, y.shape);
  FailureOr<SmallVector<int64_t>> shape = failure();
  if (succeeded(xy))
    shape = broadcastStatic(cond.shape, *xy);
  if (failed(shape)) {
    error = "operand shapes " + formatShape(cond.shape) + ", " +
            formatShape(x.shape) + " and " + formatShape(y.shape) +
            " do not broadcast";
    return failure();
  }
  ConstTensor result;
  result.dtype = x.dtype;
  result.shape = *shape;
  SmallVector<SmallVector<int64_t>> strides = {
      broadcastStrides(cond.shape, *shape), broadcastStrides(x.shape, *shape),
      broadcastStrides(y.shape, *shape)};
  forEachBroadcast(*shape, strides, [&](ArrayRef<int64_t> at) {
    if (cond.ints[at[0]])
      result.appendFrom(x, at[1]);
    else
      result.appendFrom(y, at[2]);
  });
  return result;
}

ConstTensor importer::foldCast(const ConstTensor &input, DType to) {
  ConstTensor result;
  result.dtype = to;
  result.shape = input.shape;
  int64_t n = input.getNumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (result.isFloat()) {
      result.floats.push_back(roundFloat(to, input.getDouble(i)));
    } else if (to == DType::Bool) {
      result.ints.push_back(input.getDouble(i) != 0);
    } else {
      result.ints.push_back(wrapInt(to, input.getInt(i)));
    }
  }
  return result;
}

FailureOr<ConstTensor> importer::foldGather(const ConstTensor &data,
                                            const ConstTensor &indices,
                                            int64_t axis, std::string &error) {
  ConstTensor result;
  result.dtype = data.dtype;
  ArrayRef<int64_t> shape = data.shape;
  result.shape.assign(shape.begin(), shape.begin() + axis);
  llvm::append_range(result.shape, indices.shape);
  result.shape.append(shape.begin() + axis + 1, shape.end());
  int64_t outer = product(shape.take_front(axis));
  int64_t size = shape[axis];
  int64_t inner = product(shape.drop_front(axis + 1));
  int64_t count = indices.getNumElements();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      int64_t index = indices.ints[k];
      if (index < -size || index >= size) {
        error = "gather index " + std::to_string(index) +
                " is out of range for a dimension of size " +
                std::to_string(size);
        return failure();
      }
      if (index < 0)
        index += size;
      for (int64_t i = 0; i < inner; ++i)
        result.appendFrom(data, (o * size + index) * inner + i);
    }
  }
  return result;
}

ConstTensor importer::foldConcat(ArrayRef<const ConstTensor *> inputs,
                                 int64_t axis) {
  ConstTensor result;
  result.dtype = inputs.front()->dtype;
  result.shape = inputs.front()->shape;
  result.shape[axis] = 0;
  for (const ConstTensor *t : inputs)
    result.shape[axis] += t->shape[axis];
  int64_t outer = product(ArrayRef<int64_t>(result.shape).take_front(axis));
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor *t : inputs) {
      int64_t chunk = product(ArrayRef<int64_t>(t->shape).drop_front(axis));
      for (int64_t i = 0; i < chunk; ++i)
        result.appendFrom(*t, o * chunk + i);
    }
  }
  return result;
}

/// Calls `fn(input offset)` for every element of a strided view of `shape`
/// starting at `starts` with `steps`, of `resultShape`.
static void forEachStrided(ArrayRef<int64_t> shape, ArrayRef<int64_t> starts,
                           ArrayRef<int64_t> steps,
                           ArrayRef<int64_t> resultShape,
                           function_ref<void(int64_t)> fn) {
  int64_t n = product(resultShape);
  size_t rank = shape.size();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  SmallVector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += (starts[d] + index[d] * steps[d]) * strides[d];
    fn(offset);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < resultShape[d])
        break;
      index[d] = 0;
    }
  }
}

ConstTensor importer::foldSlice(const ConstTensor &input,
                                ArrayRef<int64_t> starts,
                                ArrayRef<int64_t> steps,
                                ArrayRef<int64_t> resultShape) {
  ConstTensor result;
  result.dtype = input.dtype;
  result.shape.assign(resultShape.begin(), resultShape.end());
  forEachStrided(input.shape, starts, steps, resultShape,
                 [&](int64_t offset) { result.appendFrom(input, offset); });
  return result;
}

ConstTensor importer::foldExpand(const ConstTensor &input,
                                 ArrayRef<int64_t> shape) {
  ConstTensor result;
  result.dtype = input.dtype;
  result.shape.assign(shape.begin(), shape.end());
  SmallVector<SmallVector<int64_t>> strides = {
      broadcastStrides(input.shape, shape)};
  forEachBroadcast(shape, strides, [&](ArrayRef<int64_t> at) {
    result.appendFrom(input, at[0]);
  });
  return result;
}

ConstTensor importer::foldTranspose(const ConstTensor &input,
                                    ArrayRef<int64_t> perm) {
  size_t rank = input.shape.size();
  SmallVector<int64_t> inStrides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * input.shape[d + 1];
  SmallVector<int64_t> shape, strides;
  for (int64_t p : perm) {
    shape.push_back(input.shape[p]);
    strides.push_back(inStrides[p]);
  }
  ConstTensor result;
  result.dtype = input.dtype;
  result.shape = shape;
  int64_t n = product(shape);
  SmallVector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += index[d] * strides[d];
    result.appendFrom(input, offset);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return result;
}
