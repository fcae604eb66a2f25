//===- autopar-opt.cpp - autopar pass driver --------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Conversion/Passes.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Pipelines/Pipelines.h"
#include "autopar/Transforms/Lowering/Passes.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::autopar::test {
void registerTestShardingRulesPass();
} // namespace mlir::autopar::test

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::autopar::registerAutoparTransformsPasses();
  mlir::autopar::registerAutoparPipelines();
  mlir::autopar::registerAutoparConversionPasses();
  mlir::autopar::registerAutoparLoweringPasses();
  mlir::autopar::test::registerTestShardingRulesPass();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::autopar::AutoparDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "autopar optimizer driver\n", registry));
}
