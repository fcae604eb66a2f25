//===- Target.h - host target description and code generation ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Target code generation, separate from pipeline assembly: the vector ISA of
// the host CPU (from which the lowering chooses its register tiles), and the
// translation of an LLVM-dialect module into a host shared object
// (LLVM IR -> optimized object in process -> `cc -shared`).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TARGET_TARGET_H
#define AUTOPAR_TARGET_TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace mlir::autopar {

/// The vector instruction sets the code generator distinguishes. Each one
/// implies its register tile for contractions (see `getContractionTile`).
enum class CpuIsa {
  /// No AVX2/FMA assumed: 128-bit vectors (SSE2 on x86-64, or any other CPU).
  Generic,
  /// AVX2 + FMA: 16 ymm registers of 8 floats.
  Avx2,
  /// AVX-512F: 32 zmm registers of 16 floats.
  Avx512,
  /// AVX-512F with AVX512-BF16: the f32 register tile of `Avx512`, and bf16
  /// contractions as `vdpbf16ps` dot products of bf16 pairs (k0 = 2) into
  /// f32 accumulators (see `getBf16DotTile`).
  Avx512Bf16,
  /// AVX512-BF16 with AMX (amx-tile and amx-bf16): the f32 register tile of
  /// `Avx512`, and bf16 contractions on AMX tiles (`tdpbf16ps` on 16x16 f32
  /// accumulator tiles, see `getBf16DotTile` and autopar-amx-contractions).
  Amx,
};

/// The ISA of the CPU this process runs on (LLVM's host feature list), or
/// the one named by the environment variable `AUTOPAR_CPU_ISA` (amx,
/// avx512bf16, avx512, avx2 or generic; an invalid name is reported on stderr
/// and ignored).
CpuIsa getHostIsa();

/// Parses `auto` (the host), `generic`, `avx2`, `avx512`, `avx512bf16` or
/// `amx`; nullopt otherwise.
std::optional<CpuIsa> parseCpuIsa(StringRef name);

/// The names `parseCpuIsa` accepts, for diagnostics: "auto, avx512bf16, ...".
StringRef getCpuIsaNames();

/// The lowercase name of `isa` as `parseCpuIsa` accepts it.
StringRef stringifyCpuIsa(CpuIsa isa);

/// Register tile of a single-precision contraction on `isa`: `m0` rows of
/// the left operand times `n0` columns of the right one, accumulated in
/// `m0 * n0 / lanes` vector registers, fewer than the ISA's register file
/// holds (a 16x32 tile on AVX-512 spills).
struct ContractionTile {
  int64_t m0;
  int64_t n0;
  int64_t k0;
};
ContractionTile getContractionTile(CpuIsa isa);

/// Register tile of a bf16 x bf16 -> f32 contraction computed with dot
/// products of bf16 pairs (`x86vector.avx512.dot`, `vdpbf16ps`): k0 = 2, the
/// pair each f32 lane consumes, and n0 a multiple of the 16 f32 lanes. Both
/// operands are packed in bf16 with this tile. On AMX, m0 = 1: the packed
/// left operand is row-major (M x K1 x 1 x 2), so that an AMX tile of A is a
/// strided load of 16 rows of 32 consecutive k, and a tile of B is 16 pairs
/// of k by 16 columns of the n0 = 32 panel. nullopt where `isa` has no bf16
/// dot product (the bf16 operands are then extended to f32).
std::optional<ContractionTile> getBf16DotTile(CpuIsa isa);

/// Whether bf16 contractions on `isa` run on AMX tiles.
bool hasAmxTiles(CpuIsa isa);

/// The f32 lanes of one vector register on `isa` (4, 8 or 16).
int64_t getF32VectorLanes(CpuIsa isa);

/// Translates an LLVM-dialect `module` to LLVM IR, compiles it for the host
/// (in process, LLVM TargetMachine, -O2) and links it into the shared object
/// `soPath` with the system C compiler (`cc`, or `$AUTOPAR_CC`). Errors are
/// emitted on `module`.
LogicalResult emitSharedLibrary(ModuleOp module, StringRef soPath);

} // namespace mlir::autopar

#endif // AUTOPAR_TARGET_TARGET_H
