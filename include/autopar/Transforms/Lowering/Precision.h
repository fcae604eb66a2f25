//===- Precision.h - storage precision of device programs -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The element type a device program stores its weights and activations in
// (`autopar compile --precision`, autopar-lower-precision), and the driver's
// side of that contract: weight data converted from f32 when the files are
// written.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_LOWERING_PRECISION_H
#define AUTOPAR_TRANSFORMS_LOWERING_PRECISION_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <vector>

namespace mlir::autopar {

/// The storage type of a device program's f32 weights and activations;
/// compute stays f32 (contractions accumulate in f32).
enum class StoragePrecision { F32, BF16, F16 };

/// `f32`, `bf16` or `f16`; nullopt otherwise.
std::optional<StoragePrecision> parseStoragePrecision(StringRef name);

/// The option spelling of `precision`.
StringRef stringifyStoragePrecision(StoragePrecision precision);

/// f32, bf16 or f16.
Type getStorageElementType(MLIRContext *ctx, StoragePrecision precision);

/// Converts the row-major f32 `f32Data` into the 2-byte float `elementType`
/// (bf16 or f16), rounding to nearest even, into `out`.
void convertWeightPrecision(ArrayRef<char> f32Data, Type elementType,
                            std::vector<char> &out);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_LOWERING_PRECISION_H
