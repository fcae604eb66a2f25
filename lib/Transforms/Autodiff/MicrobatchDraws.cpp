//===- MicrobatchDraws.cpp - a microbatch's block of a random draw --------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/MicrobatchDraws.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::autopar;

FailureOr<std::optional<int64_t>>
mlir::autopar::getMicrobatchDrawDim(RandomUniformOp random, int64_t m) {
  std::optional<ArrayRef<int64_t>> whole = random.getWholeShape();
  if (!whole)
    return std::optional<int64_t>();
  ArrayRef<int64_t> shape = random.getResult().getType().getShape();
  std::optional<int64_t> split;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if ((*whole)[d] == size)
      continue;
    if (split || (*whole)[d] != size * m) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvm::interleave(*whole, os, "x");
      return random.emitOpError()
             << "draws a microbatch's block of shape "
             << random.getResult().getType() << " that is not one of " << m
             << " blocks along one dimension of the whole batch's draw of "
                "shape "
             << text;
    }
    split = d;
  }
  return split;
}
