//===- Elementwise.cpp - elementwise autopar ops to linalg ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every elementwise op becomes one parallel `linalg.generic` over the result
// shape whose operands are read through numpy-broadcasting indexing maps; the
// body computes the ONNX formula on scalars with arith and math ops.
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

/// Element types an op accepts.
enum class Elements { Numeric, Float, Bool };

static bool isUnsignedOrBool(Type type) { return isUnsignedInteger(type); }

//===----------------------------------------------------------------------===//
// Scalar formulas: one overload per op
//===----------------------------------------------------------------------===//

static Value lowerScalar(AddOp, OpBuilder &b, Location loc, ValueRange args) {
  return createAdd(b, loc, args[0], args[1]);
}

static Value lowerScalar(SubOp, OpBuilder &b, Location loc, ValueRange args) {
  return createSub(b, loc, args[0], args[1]);
}

static Value lowerScalar(MulOp, OpBuilder &b, Location loc, ValueRange args) {
  return createMul(b, loc, args[0], args[1]);
}

static Value lowerScalar(DivOp, OpBuilder &b, Location loc, ValueRange args) {
  return createDiv(b, loc, args[0], args[1]);
}

/// Float bases: `powf` with the exponent converted to the base's type. Integer
/// bases: computed in f64 and truncated back (exact below 2^53).
static Value lowerScalar(PowOp, OpBuilder &b, Location loc, ValueRange args) {
  Value base = args[0], exponent = args[1];
  Type baseType = base.getType();
  auto toFloat = [&](Value v, FloatType target) -> Value {
    Type t = v.getType();
    if (t == target)
      return v;
    if (auto f = dyn_cast<FloatType>(t))
      return f.getWidth() < target.getWidth()
                 ? Value(arith::ExtFOp::create(b, loc, target, v))
                 : Value(arith::TruncFOp::create(b, loc, target, v));
    if (isUnsignedOrBool(t))
      return arith::UIToFPOp::create(b, loc, target, toSignless(b, loc, v));
    return arith::SIToFPOp::create(b, loc, target, toSignless(b, loc, v));
  };
  if (auto floatType = dyn_cast<FloatType>(baseType))
    return math::PowFOp::create(b, loc, base, toFloat(exponent, floatType));
  FloatType f64 = b.getF64Type();
  Value base64 = toFloat(base, f64);
  Value exponent64 = toFloat(exponent, f64);
  Value result = math::PowFOp::create(b, loc, base64, exponent64);
  Type signless = toSignless(b, loc, base).getType();
  if (isUnsignedOrBool(baseType))
    return fromSignless(
        b, loc, arith::FPToUIOp::create(b, loc, signless, result), baseType);
  return fromSignless(b, loc, arith::FPToSIOp::create(b, loc, signless, result),
                      baseType);
}

static Value lowerScalar(AndOp, OpBuilder &b, Location loc, ValueRange args) {
  return arith::AndIOp::create(b, loc, args[0], args[1]);
}

static Value createCompare(OpBuilder &b, Location loc, Value lhs, Value rhs,
                           arith::CmpFPredicate floatPredicate,
                           arith::CmpIPredicate signedPredicate,
                           arith::CmpIPredicate unsignedPredicate) {
  if (isa<FloatType>(lhs.getType()))
    return arith::CmpFOp::create(b, loc, floatPredicate, lhs, rhs);
  Value x = toSignless(b, loc, lhs);
  Value y = toSignless(b, loc, rhs);
  return arith::CmpIOp::create(
      b, loc,
      isUnsignedOrBool(lhs.getType()) ? unsignedPredicate : signedPredicate, x,
      y);
}

static Value lowerScalar(EqualOp, OpBuilder &b, Location loc, ValueRange args) {
  return createCompare(b, loc, args[0], args[1], arith::CmpFPredicate::OEQ,
                       arith::CmpIPredicate::eq, arith::CmpIPredicate::eq);
}

static Value lowerScalar(LessOp, OpBuilder &b, Location loc, ValueRange args) {
  return createCompare(b, loc, args[0], args[1], arith::CmpFPredicate::OLT,
                       arith::CmpIPredicate::slt, arith::CmpIPredicate::ult);
}

static Value lowerScalar(GreaterOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  return createCompare(b, loc, args[0], args[1], arith::CmpFPredicate::OGT,
                       arith::CmpIPredicate::sgt, arith::CmpIPredicate::ugt);
}

static Value lowerScalar(WhereOp, OpBuilder &b, Location loc, ValueRange args) {
  return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
}

/// The select that clamps a float `x` at `bound` as `std::max(x, bound)`
/// (`x < bound ? bound : x`) or `std::min(x, bound)` (`x > bound ? bound :
/// x`), as ONNX Runtime's Clip and PyTorch's clamp compute it: NaN stays NaN,
/// -0 stays -0. With a constant, non-NaN `bound` the select is one `maxps`
/// or `minps` (operands in the order that returns `x` on NaN);
/// `arith.maximumf`/`minimumf` would add a NaN check and a blend per vector.
static Value createClampSelect(OpBuilder &b, Location loc, Value x, Value bound,
                               arith::CmpFPredicate pastBound) {
  Value past = arith::CmpFOp::create(b, loc, pastBound, x, bound);
  return arith::SelectOp::create(b, loc, past, bound, x);
}

/// `std::max(x, bound)`: a NaN-keeping select for floats, createMax for
/// integers.
static Value createClampBelow(OpBuilder &b, Location loc, Value x,
                              Value bound) {
  if (!isa<FloatType>(x.getType()))
    return createMax(b, loc, x, bound);
  return createClampSelect(b, loc, x, bound, arith::CmpFPredicate::OLT);
}

/// `std::min(x, bound)`: a NaN-keeping select for floats, createMin for
/// integers.
static Value createClampAbove(OpBuilder &b, Location loc, Value x,
                              Value bound) {
  if (!isa<FloatType>(x.getType()))
    return createMin(b, loc, x, bound);
  return createClampSelect(b, loc, x, bound, arith::CmpFPredicate::OGT);
}

static Value lowerScalar(ReluOp, OpBuilder &b, Location loc, ValueRange args) {
  return createClampBelow(b, loc, args[0],
                          createConstant(b, loc, args[0].getType(), 0.0));
}

static Value lowerScalar(AbsOp, OpBuilder &b, Location loc, ValueRange args) {
  if (isa<FloatType>(args[0].getType()))
    return math::AbsFOp::create(b, loc, args[0]);
  if (isUnsignedOrBool(args[0].getType()))
    return args[0];
  return math::AbsIOp::create(b, loc, args[0]);
}

static Value lowerScalar(NegOp, OpBuilder &b, Location loc, ValueRange args) {
  if (isa<FloatType>(args[0].getType()))
    return arith::NegFOp::create(b, loc, args[0]);
  return arith::SubIOp::create(
      b, loc, createConstant(b, loc, args[0].getType(), 0.0), args[0]);
}

static Value lowerScalar(SqrtOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::SqrtOp::create(b, loc, args[0]);
}

static Value lowerScalar(ReciprocalOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  return arith::DivFOp::create(
      b, loc, createConstant(b, loc, args[0].getType(), 1.0), args[0]);
}

static Value lowerScalar(ExpOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::ExpOp::create(b, loc, args[0]);
}

static Value lowerScalar(LogOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::LogOp::create(b, loc, args[0]);
}

/// 1 / (1 + exp(-x)).
static Value lowerScalar(SigmoidOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  Type type = args[0].getType();
  Value one = createConstant(b, loc, type, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, args[0]));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

static Value lowerScalar(TanhOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::TanhOp::create(b, loc, args[0]);
}

static Value lowerScalar(ErfOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::ErfOp::create(b, loc, args[0]);
}

static Value lowerScalar(NotOp, OpBuilder &b, Location loc, ValueRange args) {
  return arith::XOrIOp::create(b, loc, args[0],
                               createConstant(b, loc, args[0].getType(), 1.0));
}

/// x < 0 ? alpha * x : x.
static Value lowerScalar(LeakyReluOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value alpha = createConstant(b, loc, type, op.getAlpha().convertToDouble());
  Value negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                         createConstant(b, loc, type, 0.0));
  return arith::SelectOp::create(b, loc, negative,
                                 arith::MulFOp::create(b, loc, alpha, x), x);
}

/// none: 0.5 x (1 + erf(x / sqrt(2)));
/// tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
static Value lowerScalar(GeluOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value inner;
  if (op.getApproximate() == "tanh") {
    Value cube =
        arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x), x);
    Value sum = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, createConstant(b, loc, type, 0.044715),
                              cube));
    inner = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc, createConstant(b, loc, type, std::sqrt(2.0 / M_PI)), sum));
  } else {
    inner = math::ErfOp::create(
        b, loc,
        arith::DivFOp::create(b, loc, x,
                              createConstant(b, loc, type, std::sqrt(2.0))));
  }
  Value half =
      arith::MulFOp::create(b, loc, createConstant(b, loc, type, 0.5), x);
  return arith::MulFOp::create(
      b, loc, half,
      arith::AddFOp::create(b, loc, createConstant(b, loc, type, 1.0), inner));
}

/// std::min(std::max(x, lo), hi) with absent bounds skipped (NaN stays NaN).
static Value lowerScalar(ClipOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  if (std::optional<APFloat> low = op.getMin())
    x = createClampBelow(b, loc, x,
                         createConstant(b, loc, type, low->convertToDouble()));
  if (std::optional<APFloat> high = op.getMax())
    x = createClampAbove(b, loc, x,
                         createConstant(b, loc, type, high->convertToDouble()));
  return x;
}

static Value lowerScalar(GreaterOrEqualOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  return createCompare(b, loc, args[0], args[1], arith::CmpFPredicate::OGE,
                       arith::CmpIPredicate::sge, arith::CmpIPredicate::uge);
}

static Value lowerScalar(LessOrEqualOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  return createCompare(b, loc, args[0], args[1], arith::CmpFPredicate::OLE,
                       arith::CmpIPredicate::sle, arith::CmpIPredicate::ule);
}

static Value lowerScalar(OrOp, OpBuilder &b, Location loc, ValueRange args) {
  return arith::OrIOp::create(b, loc, args[0], args[1]);
}

static Value lowerScalar(XorOp, OpBuilder &b, Location loc, ValueRange args) {
  return arith::XOrIOp::create(b, loc, args[0], args[1]);
}

static Value lowerScalar(MaxOp, OpBuilder &b, Location loc, ValueRange args) {
  return createMax(b, loc, args[0], args[1]);
}

static Value lowerScalar(MinOp, OpBuilder &b, Location loc, ValueRange args) {
  return createMin(b, loc, args[0], args[1]);
}

/// fmod: the remainder has the dividend's sign (C fmod, arith.rem*). Integer
/// mod (no fmod): the divisor's sign, r + b when r and b differ in sign.
static Value lowerScalar(ModOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0], y = args[1];
  if (isa<FloatType>(x.getType()))
    return arith::RemFOp::create(b, loc, x, y);
  bool fmod = op.getFmod();
  return createIntegerOp(
      b, loc, x, y,
      [fmod](OpBuilder &b, Location loc, Value x, Value y,
             bool isUnsigned) -> Value {
        // Unsigned remainders have no sign to fix.
        if (isUnsigned)
          return arith::RemUIOp::create(b, loc, x, y);
        Value r = arith::RemSIOp::create(b, loc, x, y);
        if (fmod)
          return r;
        Value zero = createConstant(b, loc, x.getType(), 0.0);
        Value nonZero =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
        Value rNeg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
        Value yNeg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y, zero);
        Value differ = arith::XOrIOp::create(b, loc, rNeg, yNeg);
        Value adjust = arith::AndIOp::create(b, loc, nonZero, differ);
        return arith::SelectOp::create(b, loc, adjust,
                                       arith::AddIOp::create(b, loc, r, y), r);
      });
}

/// A logical shift; shifting by the width or more gives 0 (arith's shifts
/// are poison there).
static Value lowerScalar(BitShiftOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  bool right = op.getRight();
  return createIntegerOp(
      b, loc, args[0], args[1],
      [right](OpBuilder &b, Location loc, Value x, Value y, bool) -> Value {
        Type type = x.getType();
        Value shifted = right ? Value(arith::ShRUIOp::create(b, loc, x, y))
                              : Value(arith::ShLIOp::create(b, loc, x, y));
        Value width =
            createConstant(b, loc, type, type.getIntOrFloatBitWidth());
        Value tooFar =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, y, width);
        return arith::SelectOp::create(
            b, loc, tooFar, createConstant(b, loc, type, 0.0), shifted);
      });
}

/// x < 0 ? slope * x : x.
static Value lowerScalar(PReluOp, OpBuilder &b, Location loc, ValueRange args) {
  Value x = args[0];
  Value negative =
      createCompare(b, loc, x, createConstant(b, loc, x.getType(), 0.0),
                    arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt,
                    arith::CmpIPredicate::ult);
  return arith::SelectOp::create(b, loc, negative,
                                 createMul(b, loc, args[1], x), x);
}

static Value lowerScalar(SinOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::SinOp::create(b, loc, args[0]);
}
static Value lowerScalar(CosOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::CosOp::create(b, loc, args[0]);
}
static Value lowerScalar(TanOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::TanOp::create(b, loc, args[0]);
}
static Value lowerScalar(AsinOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::AsinOp::create(b, loc, args[0]);
}
static Value lowerScalar(AcosOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::AcosOp::create(b, loc, args[0]);
}
static Value lowerScalar(AtanOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::AtanOp::create(b, loc, args[0]);
}
static Value lowerScalar(SinhOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::SinhOp::create(b, loc, args[0]);
}
static Value lowerScalar(CoshOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::CoshOp::create(b, loc, args[0]);
}
static Value lowerScalar(AsinhOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::AsinhOp::create(b, loc, args[0]);
}
static Value lowerScalar(AcoshOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::AcoshOp::create(b, loc, args[0]);
}
static Value lowerScalar(AtanhOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::AtanhOp::create(b, loc, args[0]);
}
static Value lowerScalar(FloorOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::FloorOp::create(b, loc, args[0]);
}
static Value lowerScalar(CeilOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::CeilOp::create(b, loc, args[0]);
}
/// Halves round to even, as ONNX Round does.
static Value lowerScalar(RoundOp, OpBuilder &b, Location loc, ValueRange args) {
  return math::RoundEvenOp::create(b, loc, args[0]);
}

/// x > 0 ? 1 : x < 0 ? -1 : x (zero, or NaN for floats).
static Value lowerScalar(SignOp, OpBuilder &b, Location loc, ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value zero = createConstant(b, loc, type, 0.0);
  Value positive =
      createCompare(b, loc, x, zero, arith::CmpFPredicate::OGT,
                    arith::CmpIPredicate::sgt, arith::CmpIPredicate::ugt);
  Value negative =
      createCompare(b, loc, x, zero, arith::CmpFPredicate::OLT,
                    arith::CmpIPredicate::slt, arith::CmpIPredicate::ult);
  Value rest =
      isUnsignedOrBool(type)
          ? x
          : Value(arith::SelectOp::create(
                b, loc, negative, createConstant(b, loc, type, -1.0), x));
  return arith::SelectOp::create(b, loc, positive,
                                 createConstant(b, loc, type, 1.0), rest);
}

static Value lowerScalar(IsNaNOp, OpBuilder &b, Location loc, ValueRange args) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, args[0],
                               args[0]);
}

static Value lowerScalar(IsInfOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value result = createConstant(b, loc, b.getI1Type(), 0.0);
  if (op.getDetectPositive())
    result = arith::OrIOp::create(
        b, loc, result,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                              createConstant(b, loc, type, INFINITY)));
  if (op.getDetectNegative())
    result = arith::OrIOp::create(
        b, loc, result,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                              createConstant(b, loc, type, -INFINITY)));
  return result;
}

/// alpha * (exp(x) - 1), with expm1 for accuracy near 0.
static Value createExpm1Scaled(OpBuilder &b, Location loc, Value x,
                               double alpha) {
  Value e = math::ExpM1Op::create(b, loc, x);
  return arith::MulFOp::create(b, loc,
                               createConstant(b, loc, x.getType(), alpha), e);
}

/// x < 0 ? alpha * (exp(x) - 1) : x.
static Value lowerScalar(EluOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Value negative =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                            createConstant(b, loc, x.getType(), 0.0));
  return arith::SelectOp::create(
      b, loc, negative,
      createExpm1Scaled(b, loc, x, op.getAlpha().convertToDouble()), x);
}

/// gamma * (x <= 0 ? alpha * (exp(x) - 1) : x).
static Value lowerScalar(SeluOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value nonPositive = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OLE, x, createConstant(b, loc, type, 0.0));
  Value inner = arith::SelectOp::create(
      b, loc, nonPositive,
      createExpm1Scaled(b, loc, x, op.getAlpha().convertToDouble()), x);
  return arith::MulFOp::create(
      b, loc, createConstant(b, loc, type, op.getGamma().convertToDouble()),
      inner);
}

/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
static Value lowerScalar(CeluOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  double alpha = op.getAlpha().convertToDouble();
  Value zero = createConstant(b, loc, type, 0.0);
  Value scaled =
      arith::DivFOp::create(b, loc, x, createConstant(b, loc, type, alpha));
  Value negativePart =
      createMin(b, loc, zero, createExpm1Scaled(b, loc, scaled, alpha));
  return arith::AddFOp::create(b, loc, createMax(b, loc, zero, x),
                               negativePart);
}

/// max(0, min(1, alpha * x + beta)).
static Value createHardSigmoid(OpBuilder &b, Location loc, Value x,
                               double alpha, double beta) {
  Type type = x.getType();
  Value linear = arith::AddFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, createConstant(b, loc, type, alpha), x),
      createConstant(b, loc, type, beta));
  return createMax(
      b, loc, createConstant(b, loc, type, 0.0),
      createMin(b, loc, createConstant(b, loc, type, 1.0), linear));
}

static Value lowerScalar(HardSigmoidOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  return createHardSigmoid(b, loc, args[0], op.getAlpha().convertToDouble(),
                           op.getBeta().convertToDouble());
}

/// x * HardSigmoid(x) with alpha 1/6, beta 1/2.
static Value lowerScalar(HardSwishOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  return arith::MulFOp::create(
      b, loc, args[0], createHardSigmoid(b, loc, args[0], 1.0 / 6.0, 0.5));
}

/// log(exp(x) + 1) computed as max(x, 0) + log1p(exp(-|x|)), which neither
/// overflows nor loses the small values.
static Value lowerScalar(SoftplusOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value negAbs = arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x));
  Value tail =
      math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, negAbs));
  return arith::AddFOp::create(
      b, loc, createMax(b, loc, x, createConstant(b, loc, type, 0.0)), tail);
}

/// x / (1 + |x|).
static Value lowerScalar(SoftsignOp, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Value denominator =
      arith::AddFOp::create(b, loc, createConstant(b, loc, x.getType(), 1.0),
                            math::AbsFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, x, denominator);
}

/// x > alpha ? x : 0.
static Value lowerScalar(ThresholdedReluOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value above = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OGT, x,
      createConstant(b, loc, type, op.getAlpha().convertToDouble()));
  return arith::SelectOp::create(b, loc, above, x,
                                 createConstant(b, loc, type, 0.0));
}

/// x < -lambd ? x + bias : x > lambd ? x - bias : 0.
static Value lowerScalar(ShrinkOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  double lambd = op.getLambd().convertToDouble();
  Value bias = createConstant(b, loc, type, op.getBias().convertToDouble());
  Value below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                      createConstant(b, loc, type, -lambd));
  Value above = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                      createConstant(b, loc, type, lambd));
  Value upper = arith::SelectOp::create(b, loc, above,
                                        arith::SubFOp::create(b, loc, x, bias),
                                        createConstant(b, loc, type, 0.0));
  return arith::SelectOp::create(b, loc, below,
                                 arith::AddFOp::create(b, loc, x, bias), upper);
}

/// ONNX Cast: float to integer truncates toward zero, to bool is `x != 0`,
/// from bool is 0 or 1.
static Value createCast(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  // Unsigned values (ui8) convert as the signless integers of their width,
  // extended or converted by their signedness; an unsigned result is the
  // signless one, recast.
  bool fromUnsigned = isUnsignedOrBool(from);
  bool toUnsigned = isUnsignedOrBool(to);
  Type target = to;
  if (auto toInt = dyn_cast<IntegerType>(to); toInt && !toInt.isSignless())
    target = IntegerType::get(b.getContext(), toInt.getWidth());
  x = toSignless(b, loc, x);
  from = x.getType();
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(target);
  Value result;
  if (from == target) {
    result = x;
  } else if (target.isInteger(1)) {
    if (fromFloat)
      result = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                     createConstant(b, loc, from, 0.0));
    else
      result = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                     createConstant(b, loc, from, 0.0));
  } else if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      result = arith::ExtFOp::create(b, loc, target, x);
    else
      result = arith::TruncFOp::create(b, loc, target, x);
  } else if (fromFloat) {
    result = toUnsigned ? Value(arith::FPToUIOp::create(b, loc, target, x))
                        : Value(arith::FPToSIOp::create(b, loc, target, x));
  } else if (toFloat) {
    result = fromUnsigned ? Value(arith::UIToFPOp::create(b, loc, target, x))
                          : Value(arith::SIToFPOp::create(b, loc, target, x));
  } else {
    unsigned fromWidth = from.getIntOrFloatBitWidth();
    unsigned toWidth = target.getIntOrFloatBitWidth();
    if (fromWidth > toWidth)
      result = arith::TruncIOp::create(b, loc, target, x);
    else if (fromWidth < toWidth)
      result = fromUnsigned ? Value(arith::ExtUIOp::create(b, loc, target, x))
                            : Value(arith::ExtSIOp::create(b, loc, target, x));
    else
      result = arith::BitcastOp::create(b, loc, target, x);
  }
  return fromSignless(b, loc, result, to);
}

static Value lowerScalar(CastOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  return createCast(b, loc, args[0], op.getType().getElementType());
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// Lowers `OpTy` to a broadcasting parallel generic computing
/// `lowerScalar(op, ...)`, when every data operand has an element type of
/// `kind` (Where's condition is not a data operand).
template <typename OpTy, Elements kind = Elements::Numeric>
struct ElementwiseLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange operands = adaptor.getOperands();
    ValueRange data =
        std::is_same_v<OpTy, WhereOp> ? operands.drop_front() : operands;
    for (Value operand : data) {
      Type element = getElementTypeOrSelf(operand.getType());
      bool supported = kind == Elements::Float  ? isa<FloatType>(element)
                       : kind == Elements::Bool ? element.isInteger(1)
                                                : element.isIntOrFloat();
      if (!supported)
        return rewriter.notifyMatchFailure(op, "unsupported element type");
    }
    auto type = cast<RankedTensorType>(op.getType());
    Value result =
        buildBroadcastGeneric(rewriter, op.getLoc(), type, operands,
                              [&](OpBuilder &b, Location loc, ValueRange args) {
                                return lowerScalar(op, b, loc, args);
                              });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void tolinalg::populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering<AbsOp>, ElementwiseLowering<AddOp>,
               ElementwiseLowering<CastOp>, ElementwiseLowering<ClipOp>,
               ElementwiseLowering<DivOp>, ElementwiseLowering<EqualOp>,
               ElementwiseLowering<GreaterOp>, ElementwiseLowering<LessOp>,
               ElementwiseLowering<MulOp>, ElementwiseLowering<NegOp>,
               ElementwiseLowering<PowOp>, ElementwiseLowering<ReluOp>,
               ElementwiseLowering<SubOp>, ElementwiseLowering<WhereOp>>(ctx);
  patterns.add<ElementwiseLowering<GreaterOrEqualOp>,
               ElementwiseLowering<LessOrEqualOp>, ElementwiseLowering<MaxOp>,
               ElementwiseLowering<MinOp>, ElementwiseLowering<ModOp>,
               ElementwiseLowering<PReluOp>, ElementwiseLowering<SignOp>,
               ElementwiseLowering<BitShiftOp>>(ctx);
  patterns.add<ElementwiseLowering<AndOp, Elements::Bool>,
               ElementwiseLowering<NotOp, Elements::Bool>,
               ElementwiseLowering<OrOp, Elements::Bool>,
               ElementwiseLowering<XorOp, Elements::Bool>>(ctx);
  patterns.add<ElementwiseLowering<SinOp, Elements::Float>,
               ElementwiseLowering<CosOp, Elements::Float>,
               ElementwiseLowering<TanOp, Elements::Float>,
               ElementwiseLowering<AsinOp, Elements::Float>,
               ElementwiseLowering<AcosOp, Elements::Float>,
               ElementwiseLowering<AtanOp, Elements::Float>,
               ElementwiseLowering<SinhOp, Elements::Float>,
               ElementwiseLowering<CoshOp, Elements::Float>,
               ElementwiseLowering<AsinhOp, Elements::Float>,
               ElementwiseLowering<AcoshOp, Elements::Float>,
               ElementwiseLowering<AtanhOp, Elements::Float>,
               ElementwiseLowering<FloorOp, Elements::Float>,
               ElementwiseLowering<CeilOp, Elements::Float>,
               ElementwiseLowering<RoundOp, Elements::Float>,
               ElementwiseLowering<IsNaNOp, Elements::Float>,
               ElementwiseLowering<IsInfOp, Elements::Float>,
               ElementwiseLowering<EluOp, Elements::Float>,
               ElementwiseLowering<SeluOp, Elements::Float>,
               ElementwiseLowering<CeluOp, Elements::Float>,
               ElementwiseLowering<HardSigmoidOp, Elements::Float>,
               ElementwiseLowering<HardSwishOp, Elements::Float>,
               ElementwiseLowering<SoftplusOp, Elements::Float>,
               ElementwiseLowering<SoftsignOp, Elements::Float>,
               ElementwiseLowering<ThresholdedReluOp, Elements::Float>,
               ElementwiseLowering<ShrinkOp, Elements::Float>>(ctx);
  patterns.add<ElementwiseLowering<ErfOp, Elements::Float>,
               ElementwiseLowering<ExpOp, Elements::Float>,
               ElementwiseLowering<GeluOp, Elements::Float>,
               ElementwiseLowering<LeakyReluOp, Elements::Float>,
               ElementwiseLowering<LogOp, Elements::Float>,
               ElementwiseLowering<ReciprocalOp, Elements::Float>,
               ElementwiseLowering<SigmoidOp, Elements::Float>,
               ElementwiseLowering<SqrtOp, Elements::Float>,
               ElementwiseLowering<TanhOp, Elements::Float>>(ctx);
}
