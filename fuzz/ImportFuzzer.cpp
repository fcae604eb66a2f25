//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Feeds arbitrary bytes to importOnnxBuffer. A diagnostic (malformed
// protobuf, unsupported op, failed verification, ...) is the expected answer
// to a bad model; a crash, an AddressSanitizer report, a failed assert, a
// hang or an exception escaping the importer is a bug.
//
// The first byte selects the format, the rest is the model:
//   'T'        ONNX text syntax (the buffer is named `fuzz.onnxtxt`)
//   any other  binary ModelProto, or text if the bytes look like text (the
//              importer's own sniffing; the buffer is named `fuzz`)
// Seeds in fuzz/corpus/ start with 'T' (text models) or 'B' (binary ones).
//
//===----------------------------------------------------------------------===//

#include "autopar/Import/Import.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool text = data[0] == 'T';
  llvm::StringRef bytes(reinterpret_cast<const char *>(data) + 1, size - 1);

  // A fresh context per input: nothing uniqued by one input leaks into the
  // next, and memory stays flat over a long run.
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler swallow(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::FailureOr<mlir::autopar::ImportedModel> model =
      mlir::autopar::importOnnxBuffer(bytes, text ? "fuzz.onnxtxt" : "fuzz",
                                      ctx, {});
  (void)model;
  return 0;
}
