//===- autopar-translate.cpp - autopar translation driver -----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mlir-translate with autopar's translations: `--import-onnx` turns an ONNX
// model (binary or ONNX text syntax, detected automatically) into autopar IR.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Import/Import.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

static llvm::cl::opt<bool> allowMissingWeightData(
    "allow-missing-weight-data",
    llvm::cl::desc("import models whose external weight data is missing"),
    llvm::cl::init(false));

static void registerImportOnnx() {
  TranslateToMLIRRegistration registration(
      "import-onnx", "import an ONNX model (.onnx or .onnxtxt)",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         MLIRContext *ctx) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        autopar::ImportOptions options;
        options.requireWeightData = !allowMissingWeightData;
        FailureOr<autopar::ImportedModel> model = autopar::importOnnxBuffer(
            buffer->getBuffer(), buffer->getBufferIdentifier(), *ctx, options);
        if (failed(model))
          return nullptr;
        return std::move(model->module);
      },
      [](DialectRegistry &registry) {
        registry.insert<autopar::AutoparDialect, func::FuncDialect>();
      });
}

int main(int argc, char **argv) {
  registerImportOnnx();
  return failed(mlirTranslateMain(argc, argv, "autopar translation driver"));
}
