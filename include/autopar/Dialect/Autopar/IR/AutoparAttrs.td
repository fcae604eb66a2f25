//===- AutoparAttrs.td - autopar attributes ----------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARATTRS_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARATTRS_TD

include "autopar/Dialect/Autopar/IR/AutoparBase.td"

def Autopar_ShardingAttr : AttrDef<Autopar_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a tensor value is laid out over the device grid";
  let description = [{
    The sharding state of one tensor value on the module's device grid
    (`shard.grid`). `dims` has one entry per tensor dimension: the grid axes
    that split that dimension, major axis first (the block index of a device is
    its coordinates on those axes, read row-major). `partial` lists grid axes
    over which the value is a pending sum: the logical value is the sum of the
    per-device values over each of those axes.

    A grid axis appears at most once in a sharding. A dimension whose size does
    not divide by the product of its axes is split unevenly (ceiling-sized
    blocks, the last ones shorter); the partitioner reports where it cannot
    handle that yet.

    ```mlir
    #autopar.sharding<[[], []]>                 // replicated matrix
    #autopar.sharding<[[0, 1], []]>             // rows over axes 0 and 1
    #autopar.sharding<[[0], []], partial = [1]> // rows over 0, partial sum over 1
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::DenseI64ArrayAttr", "split axes per dimension">:$dims,
    ArrayRefParameter<"int64_t", "grid axes with a pending sum">:$partial
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Returns the replicated sharding of a tensor of `rank` dimensions.
    static ShardingAttr getReplicated(::mlir::MLIRContext *ctx, int64_t rank);
    /// Builds a sharding from plain vectors.
    static ShardingAttr get(::mlir::MLIRContext *ctx,
                            ::llvm::ArrayRef<::llvm::SmallVector<int64_t>> dims,
                            ::llvm::ArrayRef<int64_t> partial);
    int64_t getRank() const { return getDims().size(); }
    /// Split axes of dimension `dim`.
    ::llvm::ArrayRef<int64_t> getDimAxes(int64_t dim) const {
      return getDims()[dim].asArrayRef();
    }
    /// True when no dimension is split and nothing is partial.
    bool isReplicated() const;
    /// True when some axis holds a pending sum.
    bool isPartial() const { return !getPartial().empty(); }
    /// The same sharding without pending sums.
    ShardingAttr withoutPartial() const;
    /// Plain-vector form of `dims`.
    ::llvm::SmallVector<::llvm::SmallVector<int64_t>> getDimsVector() const;
  }];
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARATTRS_TD
