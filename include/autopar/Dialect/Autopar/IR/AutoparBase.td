//===- AutoparBase.td - autopar dialect definition ---------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARBASE_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Autopar_Dialect : Dialect {
  let name = "autopar";
  let cppNamespace = "::mlir::autopar";
  let summary = "ONNX-level operations and autopar's sharding state";
  let description = [{
    The `autopar` dialect holds the operations imported from ONNX, with exact
    ONNX semantics (numpy broadcasting, attribute defaults of the opset they
    were imported from), and the sharding state autopar plans with: per value,
    the tensor dimensions split over grid axes and the grid axes that hold a
    pending (partial) sum. Weights are never printed as literals: an
    `autopar.weight` op names an initializer whose data stays outside the IR.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

class Autopar_Op<string mnemonic, list<Trait> traits = []>
    : Op<Autopar_Dialect, mnemonic, traits>;

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARBASE_TD
