//===- HostIsaTest.cpp - ISA names and tiles --------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Target/Target.h"

#include <catch2/catch.hpp>

using namespace mlir::autopar;

TEST_CASE("every ISA's name parses back to it", "[target]") {
  for (CpuIsa isa : {CpuIsa::Generic, CpuIsa::Avx2, CpuIsa::Avx512,
                     CpuIsa::Avx512Bf16, CpuIsa::Amx}) {
    std::optional<CpuIsa> parsed = parseCpuIsa(stringifyCpuIsa(isa));
    REQUIRE(parsed);
    CHECK(*parsed == isa);
    CHECK(getCpuIsaNames().contains(stringifyCpuIsa(isa)));
  }
  CHECK(!parseCpuIsa("sse9"));
  CHECK(!parseCpuIsa("AMX"));
}

TEST_CASE("bf16 contractions: dot products, AMX tiles or neither", "[target]") {
  // AMX: A row-major (m0 = 1), B packed as for avx512bf16 (same weight
  // files), only AMX has tiles.
  std::optional<ContractionTile> amx = getBf16DotTile(CpuIsa::Amx);
  std::optional<ContractionTile> dot = getBf16DotTile(CpuIsa::Avx512Bf16);
  REQUIRE(amx);
  REQUIRE(dot);
  CHECK(amx->m0 == 1);
  CHECK(amx->n0 == dot->n0);
  CHECK(amx->k0 == 2);
  CHECK(dot->k0 == 2);
  CHECK(hasAmxTiles(CpuIsa::Amx));
  CHECK(!hasAmxTiles(CpuIsa::Avx512Bf16));
  CHECK(!getBf16DotTile(CpuIsa::Avx512));
  CHECK(!getBf16DotTile(CpuIsa::Avx2));
  // f32 contractions keep AVX-512's register tile on AMX.
  ContractionTile f32 = getContractionTile(CpuIsa::Amx);
  ContractionTile avx512 = getContractionTile(CpuIsa::Avx512);
  CHECK(f32.m0 == avx512.m0);
  CHECK(f32.n0 == avx512.n0);
  CHECK(f32.k0 == 1);
  CHECK(getF32VectorLanes(CpuIsa::Amx) == 16);
}
