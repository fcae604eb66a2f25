//===- HostIsa.cpp - vector ISA of the host and its register tiles -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the choice of the vector ISA from LLVM's host feature
// list and the register tile each ISA implies for contractions.
//
//===----------------------------------------------------------------------===//

#include "autopar/Target/Target.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::autopar;

/// The ISA named `name` (not `auto`).
static std::optional<CpuIsa> parseNamedIsa(StringRef name) {
  return llvm::StringSwitch<std::optional<CpuIsa>>(name)
      .Case("generic", CpuIsa::Generic)
      .Case("avx2", CpuIsa::Avx2)
      .Case("avx512", CpuIsa::Avx512)
      .Case("avx512bf16", CpuIsa::Avx512Bf16)
      .Case("amx", CpuIsa::Amx)
      .Default(std::nullopt);
}

CpuIsa mlir::autopar::getHostIsa() {
  // AUTOPAR_CPU_ISA caps what `auto` finds (as oneDNN's ONEDNN_MAX_CPU_ISA
  // does), so that benchmarks can compare ISA paths on one machine (bf16
  // extended to f32 against dot products on an AVX512-BF16 CPU). Naming an
  // ISA the CPU lacks makes programs that stop with an illegal instruction.
  if (const char *forced = std::getenv("AUTOPAR_CPU_ISA")) {
    if (std::optional<CpuIsa> isa = parseNamedIsa(forced))
      return *isa;
    static bool reported = false;
    if (!reported)
      llvm::errs() << "autopar: ignoring AUTOPAR_CPU_ISA='" << forced
                   << "' (expected amx, avx512bf16, avx512, avx2 or generic)\n";
    reported = true;
  }
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto has = [&](StringRef name) { return features.lookup(name); };
  if (has("avx512f") && has("avx512bf16"))
    return has("amx-tile") && has("amx-bf16") ? CpuIsa::Amx
                                              : CpuIsa::Avx512Bf16;
  if (has("avx512f"))
    return CpuIsa::Avx512;
  if (has("avx2") && has("fma"))
    return CpuIsa::Avx2;
  return CpuIsa::Generic;
}

std::optional<CpuIsa> mlir::autopar::parseCpuIsa(StringRef name) {
  if (name == "auto")
    return getHostIsa();
  return parseNamedIsa(name);
}

StringRef mlir::autopar::getCpuIsaNames() {
  return "auto, amx, avx512bf16, avx512, avx2 or generic";
}

StringRef mlir::autopar::stringifyCpuIsa(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Generic:
    return "generic";
  case CpuIsa::Avx2:
    return "avx2";
  case CpuIsa::Avx512:
    return "avx512";
  case CpuIsa::Avx512Bf16:
    return "avx512bf16";
  case CpuIsa::Amx:
    return "amx";
  }
  llvm_unreachable("unknown CpuIsa");
}

int64_t mlir::autopar::getF32VectorLanes(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Avx512:
  case CpuIsa::Avx512Bf16:
  case CpuIsa::Amx:
    return 16;
  case CpuIsa::Avx2:
    return 8;
  case CpuIsa::Generic:
    return 4;
  }
  llvm_unreachable("unknown CpuIsa");
}

ContractionTile mlir::autopar::getContractionTile(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Avx512:
  case CpuIsa::Avx512Bf16:
  case CpuIsa::Amx:
    // 8 rows x 2 zmm = 16 accumulators of 32; the broadcasts of A and the two
    // B vectors fit in the rest.
    return {8, 32, 1};
  case CpuIsa::Avx2:
    // 6 rows x 2 ymm = 12 accumulators of 16 registers.
    return {6, 16, 1};
  case CpuIsa::Generic:
    // 4 rows x 2 xmm = 8 accumulators of 16 (SSE2, or 128-bit elsewhere).
    return {4, 8, 1};
  }
  llvm_unreachable("unknown CpuIsa");
}

bool mlir::autopar::hasAmxTiles(CpuIsa isa) { return isa == CpuIsa::Amx; }

std::optional<ContractionTile> mlir::autopar::getBf16DotTile(CpuIsa isa) {
  if (isa == CpuIsa::Amx) {
    // The rows of A unpacked (m0 = 1: an AMX tile loads 16 of them at their
    // row stride), B in panels of 32 columns by pairs of k, as for
    // vdpbf16ps: 16 pairs of a panel are two 16x32 bf16 tiles of B (the
    // weight files are the same as avx512bf16's).
    return ContractionTile{1, 32, 2};
  }
  if (isa != CpuIsa::Avx512Bf16)
    return std::nullopt;
  // The f32 tile's 8 rows x 2 zmm accumulators; each vdpbf16ps takes a
  // broadcast bf16 pair of A and 16 pairs of B (one zmm), so a step of the
  // reduction loop is two k.
  return ContractionTile{8, 32, 2};
}
