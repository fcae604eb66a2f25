//===- DType.cpp - Host element types and tensors -------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the DType helpers, HostTensor and the SHA-256 digest
// of model files.
//
//===----------------------------------------------------------------------===//

#include "autopar/Import/Import.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

using namespace mlir;
using namespace mlir::autopar;

int64_t mlir::autopar::getDTypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  llvm_unreachable("unknown DType");
}

StringRef mlir::autopar::getDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  case DType::U8:
    return "ui8";
  case DType::Bool:
    return "bool";
  }
  llvm_unreachable("unknown DType");
}

Type mlir::autopar::getDTypeElementType(MLIRContext *ctx, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return Float32Type::get(ctx);
  case DType::F64:
    return Float64Type::get(ctx);
  case DType::I64:
    return IntegerType::get(ctx, 64);
  case DType::I32:
    return IntegerType::get(ctx, 32);
  case DType::I8:
    return IntegerType::get(ctx, 8);
  case DType::U8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case DType::Bool:
    return IntegerType::get(ctx, 1);
  }
  llvm_unreachable("unknown DType");
}

FailureOr<DType> mlir::autopar::getDTypeFromElementType(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (auto intType = dyn_cast<IntegerType>(type)) {
    if (intType.isUnsigned() && intType.getWidth() == 8)
      return DType::U8;
    if (!intType.isSignless())
      return failure();
    switch (intType.getWidth()) {
    case 64:
      return DType::I64;
    case 32:
      return DType::I32;
    case 8:
      return DType::I8;
    case 1:
      return DType::Bool;
    default:
      return failure();
    }
  }
  return failure();
}

int64_t HostTensor::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string mlir::autopar::computeSha256(StringRef bytes) {
  llvm::SHA256 hasher;
  hasher.update(bytes);
  std::array<uint8_t, 32> digest = hasher.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}
