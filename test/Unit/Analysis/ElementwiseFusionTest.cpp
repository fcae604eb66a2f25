//===- ElementwiseFusionTest.cpp - fused kernels and their bytes ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ElementwiseFusion.h"

#include "autopar/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringMap.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace mlir::autopar;

namespace {
/// Parses `source` (one func.func @f) and names each op by its result's
/// SSA name (`%g` -> "g").
struct Fixture {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  llvm::StringMap<Operation *> ops;
  Fixture(StringRef source) {
    ctx.loadDialect<AutoparDialect, func::FuncDialect, shard::ShardDialect>();
    module = parseSourceString<ModuleOp>(source, &ctx);
    REQUIRE(module);
    for (Operation &op : body())
      if (auto loc = dyn_cast<NameLoc>(op.getLoc()))
        ops[loc.getName().getValue()] = &op;
  }
  Block &body() {
    return module->lookupSymbol<func::FuncOp>("f").getBody().front();
  }
  Operation *op(StringRef name) {
    Operation *found = ops.lookup(name);
    REQUIRE(found);
    return found;
  }
  Value value(StringRef name) { return op(name)->getResult(0); }
  /// Local bytes `name` moves on one device, whole, with `fusion`.
  double bytes(StringRef name, const ElementwiseFusion *fusion) {
    FailureOr<ShardingRule> rule = ShardingRule::get(op(name));
    REQUIRE(succeeded(rule));
    return getOpWork(op(name), *rule, LoopAxes(rule->getNumLoops()), {1},
                     fusion)
        .bytes;
  }
};

/// A GPT MLP as `gpt_decoder.py` writes it: a bias add whose result two ops
/// of the exported GELU read, and a residual add of the second bias add.
const char *kMlp = R"mlir(
  func.func @f(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %b1: tensor<16xf32>,
               %w2: tensor<16x8xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %c = autopar.constant dense<1.41421354> : tensor<f32> loc("c")
    %one = autopar.constant dense<1.0> : tensor<f32> loc("one")
    %half = autopar.constant dense<0.5> : tensor<f32> loc("half")
    %y = autopar.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("y")
    %f = autopar.add %y, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("f")
    %d = autopar.div %f, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32> loc("d")
    %e = autopar.erf %d : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("e")
    %e1 = autopar.add %e, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32> loc("e1")
    %m = autopar.mul %f, %e1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("m")
    %g = autopar.mul %m, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32> loc("g")
    %z = autopar.matmul %g, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("z")
    %o = autopar.add %z, %b2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("o")
    %r = autopar.add %x, %o : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("r")
    return %r : tensor<4x8xf32>
  })mlir";
} // namespace

TEST_CASE("bias add and GELU: one kernel that reads y and writes g",
          "[fusion]") {
  Fixture f(kMlp);
  ElementwiseFusion fusion(f.body());
  // Every GELU intermediate, and the bias add read by two of its ops.
  for (StringRef name : {"f", "d", "e", "e1", "m"}) {
    INFO(name.str());
    CHECK(fusion.isFused(f.value(name)));
    CHECK(fusion.getKernel(f.op(name)) == f.op("g"));
  }
  // Read by a matmul; produced by a matmul.
  CHECK_FALSE(fusion.isFused(f.value("g")));
  CHECK_FALSE(fusion.isFused(f.value("y")));
  CHECK(fusion.getKernel(f.op("g")) == f.op("g"));
  // The second bias add is fused into the residual add.
  CHECK(fusion.isFused(f.value("o")));
  CHECK(fusion.getKernel(f.op("o")) == f.op("r"));
  CHECK_FALSE(fusion.isFused(f.value("r")));

  // Bytes (f32, 4 x 16 = 256 bytes a tensor): the kernel reads y (256) and
  // b1 (64) and the scalars (4 each), and writes g (256).
  CHECK(f.bytes("f", &fusion) == 256 + 64);
  CHECK(f.bytes("d", &fusion) == 4);
  CHECK(f.bytes("e", &fusion) == 0);
  CHECK(f.bytes("e1", &fusion) == 4);
  CHECK(f.bytes("m", &fusion) == 0);
  CHECK(f.bytes("g", &fusion) == 4 + 256);
  // Each op its own pass: 13 passes of 256 bytes and the small operands.
  double unfused = 0;
  for (StringRef name : {"f", "d", "e", "e1", "m", "g"})
    unfused += f.bytes(name, nullptr);
  CHECK(unfused == 13 * 256 + 64 + 3 * 4);
  // The residual kernel reads z, b2 and x, and writes r; x is not read by
  // the kernel twice.
  CHECK(f.bytes("o", &fusion) == 128 + 32);
  CHECK(f.bytes("r", &fusion) == 128 + 128);
  // Matmuls move their operands and results as before.
  CHECK(f.bytes("y", &fusion) == f.bytes("y", nullptr));
}

TEST_CASE("a kernel reads a value once", "[fusion]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
      %a = autopar.add %x, %y : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("a")
      %b = autopar.mul %a, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("b")
      %s = autopar.mul %b, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("s")
      return %s : tensor<16xf32>
    })mlir");
  ElementwiseFusion fusion(f.body());
  // x and y once, at `a`; `a` and `b` are fused; s is written.
  CHECK(fusion.readsOperand(f.op("a"), 0));
  CHECK(fusion.readsOperand(f.op("a"), 1));
  CHECK_FALSE(fusion.readsOperand(f.op("b"), 0));
  CHECK_FALSE(fusion.readsOperand(f.op("b"), 1));
  CHECK_FALSE(fusion.readsOperand(f.op("s"), 0));
  CHECK_FALSE(fusion.readsOperand(f.op("s"), 1));
  CHECK(f.bytes("a", &fusion) == 128);
  CHECK(f.bytes("b", &fusion) == 0);
  CHECK(f.bytes("s", &fusion) == 64);
  // A lone op reads its repeated operand once too.
  Fixture g(R"mlir(
    func.func @f(%x: tensor<16xf32>) -> tensor<16xf32> {
      %s = autopar.mul %x, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("s")
      return %s : tensor<16xf32>
    })mlir");
  ElementwiseFusion lone(g.body());
  CHECK(g.bytes("s", &lone) == 64 + 64);
  CHECK(g.bytes("s", nullptr) == 3 * 64);
}

TEST_CASE("attention scores: scale and mask fuse, softmax reads and writes",
          "[fusion]") {
  Fixture f(R"mlir(
    func.func @f(%q: tensor<2x8x4xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
      %scale = autopar.constant dense<0.5> : tensor<f32> loc("scale")
      %mask = autopar.constant dense<0.0> : tensor<8x8xf32> loc("mask")
      %s = autopar.matmul %q, %k : (tensor<2x8x4xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32> loc("s")
      %t = autopar.mul %s, %scale : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32> loc("t")
      %u = autopar.add %t, %mask : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32> loc("u")
      %p = autopar.softmax %u {axis = 2 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32> loc("p")
      %c = autopar.matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32> loc("c")
      return %c : tensor<2x8x4xf32>
    })mlir");
  ElementwiseFusion fusion(f.body());
  CHECK(fusion.isFused(f.value("t")));
  // Softmax is a reduction: its lowering reads its input in two loop nests.
  CHECK_FALSE(fusion.isFused(f.value("u")));
  CHECK_FALSE(fusion.isFused(f.value("p")));
  // 2 x 8 x 8 f32 = 512 bytes: Mul reads s (and the scalar), Add reads the
  // mask and writes u, softmax reads u and writes p.
  CHECK(f.bytes("t", &fusion) == 512 + 4);
  CHECK(f.bytes("u", &fusion) == 256 + 512);
  CHECK(f.bytes("p", &fusion) == f.bytes("p", nullptr));
  CHECK(f.bytes("p", &fusion) == 2 * 512);
}

TEST_CASE("what is not fused: broadcast reads, readers in two kernels",
          "[fusion]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<8xf32>, %y: tensor<4x8xf32>, %z: tensor<16xf32>) -> (tensor<4x8xf32>, tensor<16xf32>, tensor<16xf32>) {
      %e = autopar.exp %x : (tensor<8xf32>) -> tensor<8xf32> loc("e")
      %b = autopar.add %e, %y : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("b")
      %n = autopar.neg %z : (tensor<16xf32>) -> tensor<16xf32> loc("n")
      %m = autopar.mul %n, %z : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("m")
      %a = autopar.add %n, %z : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("a")
      return %b, %m, %a : tensor<4x8xf32>, tensor<16xf32>, tensor<16xf32>
    })mlir");
  ElementwiseFusion fusion(f.body());
  // Read with broadcast: fusing would compute exp once per copy.
  CHECK_FALSE(fusion.isFused(f.value("e")));
  // Two readers, each the last op of its own kernel (returned).
  CHECK_FALSE(fusion.isFused(f.value("n")));
  CHECK_FALSE(fusion.isFused(f.value("m")));
  CHECK(f.bytes("n", &fusion) == f.bytes("n", nullptr));
}

TEST_CASE("no fusion that holds dying operands across a barrier", "[fusion]") {
  // `p`'s operands a and b (compute results, 2 x 64 bytes) die at p. Fused
  // into q, past the matmul, they would live until q: more than p's 64.
  Fixture f(R"mlir(
    func.func @f(%x: tensor<16xf32>, %y: tensor<16xf32>, %l: tensor<4x4xf32>, %r: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>) {
      %a = autopar.exp %x : (tensor<16xf32>) -> tensor<16xf32> loc("a")
      %b = autopar.exp %y : (tensor<16xf32>) -> tensor<16xf32> loc("b")
      %p = autopar.add %a, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("p")
      %mm = autopar.matmul %l, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mm")
      %q = autopar.mul %p, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("q")
      return %q, %mm : tensor<16xf32>, tensor<4x4xf32>
    })mlir");
  ElementwiseFusion fusion(f.body());
  CHECK_FALSE(fusion.isFused(f.value("p")));
  // a and b are fused into p, which stays a kernel of its own: it reads x
  // and y and writes p.
  CHECK(fusion.isFused(f.value("a")));
  CHECK(fusion.isFused(f.value("b")));
  CHECK(fusion.getKernel(f.op("a")) == f.op("p"));
  CHECK(f.bytes("a", &fusion) + f.bytes("b", &fusion) + f.bytes("p", &fusion) ==
        3 * 64);
  // q reads p and x again.
  CHECK(f.bytes("q", &fusion) == 3 * 64);

  // Without the matmul between them, p is fused into q, which reads x once.
  Fixture g(R"mlir(
    func.func @f(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
      %a = autopar.exp %x : (tensor<16xf32>) -> tensor<16xf32> loc("a")
      %b = autopar.exp %y : (tensor<16xf32>) -> tensor<16xf32> loc("b")
      %p = autopar.add %a, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("p")
      %q = autopar.mul %p, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("q")
      return %q : tensor<16xf32>
    })mlir");
  ElementwiseFusion fused(g.body());
  CHECK(fused.isFused(g.value("p")));
  CHECK(fused.getKernel(g.op("a")) == g.op("q"));
  CHECK(g.bytes("q", &fused) == 64);
}

TEST_CASE("fused bytes follow the op's split", "[fusion]") {
  Fixture f(kMlp);
  ElementwiseFusion fusion(f.body());
  Operation *op = f.op("f");
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  REQUIRE(succeeded(rule));
  // Columns over 2 devices: half of y and of b1.
  LoopAxes columns(rule->getNumLoops());
  columns[1] = {0};
  CHECK(getOpWork(op, *rule, columns, {2}, &fusion).bytes == (256 + 64) / 2);
  CHECK(getOpWork(op, *rule, columns, {2}, &fusion).flops ==
        getOpWork(op, *rule, columns, {2}).flops);
}
