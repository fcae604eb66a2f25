//===- Recurrent.cpp - RNN, GRU and LSTM ---------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the recurrent operators, unrolled over their static sequence
// length into autopar ops: per direction, one matmul projects every time
// step's input at once; each step adds a gemm of the previous hidden state
// and applies the gates' elementwise ops. Every op keeps its own sharding
// rule, so the batch dimension splits through the whole recurrence (the
// time and hidden dimensions stay whole where the steps slice them).
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerRecurrentImporters(OpImporterRegistry &registry) {
  registry.add("RNN", 7, &OnnxImporter::importRecurrent);
  registry.add("GRU", 7, &OnnxImporter::importRecurrent);
  registry.add("LSTM", 7, &OnnxImporter::importRecurrent);
}

namespace {
/// One activation function of a recurrent op with its parameters.
struct Activation {
  std::string name;
  float alpha = 0.0f, beta = 0.0f;
};
} // namespace

/// The default alpha and beta of activation `name` (case-insensitive), and
/// whether it reads them; nullopt for an unknown name.
static std::optional<std::pair<unsigned, std::pair<float, float>>>
activationParams(StringRef name) {
  using Params = std::pair<unsigned, std::pair<float, float>>;
  if (name.equals_insensitive("Sigmoid") || name.equals_insensitive("Tanh") ||
      name.equals_insensitive("Relu") || name.equals_insensitive("Softsign") ||
      name.equals_insensitive("Softplus"))
    return Params{0, {0.0f, 0.0f}};
  if (name.equals_insensitive("LeakyRelu"))
    return Params{1, {0.01f, 0.0f}};
  if (name.equals_insensitive("ThresholdedRelu") ||
      name.equals_insensitive("Elu"))
    return Params{1, {1.0f, 0.0f}};
  if (name.equals_insensitive("HardSigmoid"))
    return Params{2, {0.2f, 0.5f}};
  if (name.equals_insensitive("Affine"))
    return Params{2, {1.0f, 0.0f}};
  if (name.equals_insensitive("ScaledTanh"))
    return Params{2, {1.0f, 1.0f}};
  return std::nullopt;
}

/// RNN, GRU and LSTM (opset 7 on; `layout` from 14), every direction, with
/// optional biases, initial states, sequence lengths (known or computed at
/// run time: a batch entry's state stops changing after its length and its
/// outputs there are zeros), peepholes, clip, input_forget,
/// linear_before_reset and the activation functions ONNX lists.
LogicalResult OnnxImporter::importRecurrent(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  bool isLstm = op == "LSTM", isGru = op == "GRU";
  int64_t numGates = isLstm ? 4 : isGru ? 3 : 1;
  SmallVector<StringRef> allowed = {"activation_alpha", "activation_beta",
                                    "activations",      "clip",
                                    "direction",        "hidden_size"};
  if (ref.opset >= 14)
    allowed.push_back("layout");
  if (isLstm)
    allowed.push_back("input_forget");
  if (isGru)
    allowed.push_back("linear_before_reset");
  if (failed(checkNode(ref, 3, isLstm ? 8 : 6, allowed, isLstm ? 3 : 2,
                       /*allOutputsOptional=*/true)) ||
      failed(checkInputType(ref, 0, kFloat)) ||
      (hasInput(ref, 4) && failed(checkInputType(ref, 4, kIndices))))
    return failure();

  FailureOr<std::string> direction = stringAttr(ref, "direction", "forward");
  FailureOr<int64_t> layout = intAttr(ref, "layout", 0);
  FailureOr<int64_t> hiddenAttr = intAttr(ref, "hidden_size", -1);
  FailureOr<int64_t> inputForget = intAttr(ref, "input_forget", 0);
  FailureOr<int64_t> linearBeforeReset = intAttr(ref, "linear_before_reset", 0);
  FailureOr<float> clip = floatAttr(ref, "clip", 0.0f);
  if (failed(direction) || failed(layout) || failed(hiddenAttr) ||
      failed(inputForget) || failed(linearBeforeReset) || failed(clip))
    return failure();
  if (*direction != "forward" && *direction != "reverse" &&
      *direction != "bidirectional")
    return emitError(ref) << "unknown direction '" << *direction
                          << "'; expected forward, reverse or bidirectional";
  if (*layout != 0 && *layout != 1)
    return emitError(ref) << "layout must be 0 or 1, got " << *layout;
  bool hasClip = findAttr(ref, "clip") != nullptr;
  if (hasClip && *clip <= 0.0f)
    return emitError(ref) << "clip must be positive, got " << *clip;
  int64_t numDirs = *direction == "bidirectional" ? 2 : 1;

  // Shapes: X [T, N, I] (layout 1: [N, T, I]), W [D, G*H, I], R [D, G*H, H],
  // B [D, 2*G*H], sequence_lens [N], initial_h/c [D, N, H] (layout 1:
  // [N, D, H]), P [D, 3*H].
  Value x = input(ref, 0), w = input(ref, 1), r = input(ref, 2);
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  auto rType = cast<RankedTensorType>(r.getType());
  if (xType.getRank() != 3 || wType.getRank() != 3 || rType.getRank() != 3)
    return emitError(ref) << "expected X, W and R of rank 3, got "
                          << typeToString(xType) << ", "
                          << typeToString(wType) << " and "
                          << typeToString(rType);
  Type f32 = xType.getElementType();
  if (*layout == 1) {
    TransposeOp::Properties props;
    props.setPerm(builder.getDenseI64ArrayAttr({1, 0, 2}));
    FailureOr<Value> t = createOp<TransposeOp>(ref, loc, x, props);
    if (failed(t))
      return failure();
    x = *t;
    xType = cast<RankedTensorType>(x.getType());
  }
  int64_t steps = xType.getDimSize(0), batch = xType.getDimSize(1),
          inputSize = xType.getDimSize(2);
  int64_t hidden = rType.getDimSize(2);
  if (*hiddenAttr >= 0 && *hiddenAttr != hidden)
    return emitError(ref) << "hidden_size " << *hiddenAttr
                          << " does not match R " << typeToString(rType);
  int64_t gh = numGates * hidden;
  auto expectShape = [&](unsigned index, StringRef what,
                         ArrayRef<int64_t> shape) -> LogicalResult {
    RankedTensorType type = inputType(ref, index);
    if (type.getShape() != shape)
      return emitError(ref) << "input " << index << " ('" << what
                            << "') must have shape " << formatShape(shape)
                            << ", got " << typeToString(type);
    return success();
  };
  SmallVector<int64_t> stateShape =
      *layout == 0 ? SmallVector<int64_t>{numDirs, batch, hidden}
                   : SmallVector<int64_t>{batch, numDirs, hidden};
  if (failed(expectShape(1, "W", {numDirs, gh, inputSize})) ||
      failed(expectShape(2, "R", {numDirs, gh, hidden})) ||
      (hasInput(ref, 3) &&
       failed(expectShape(3, "B", {numDirs, 2 * gh}))) ||
      (hasInput(ref, 4) && failed(expectShape(4, "sequence_lens", {batch}))) ||
      (hasInput(ref, 5) &&
       failed(expectShape(5, "initial_h", stateShape))) ||
      (isLstm && hasInput(ref, 6) &&
       failed(expectShape(6, "initial_c", stateShape))) ||
      (isLstm && hasInput(ref, 7) &&
       failed(expectShape(7, "P", {numDirs, 3 * hidden}))))
    return failure();

  // Activations: ONNX's defaults per direction; alpha and beta are consumed
  // in order by the functions that read them.
  SmallVector<StringRef> defaults =
      isLstm ? SmallVector<StringRef>{"Sigmoid", "Tanh", "Tanh"}
      : isGru ? SmallVector<StringRef>{"Sigmoid", "Tanh"}
              : SmallVector<StringRef>{"Tanh"};
  SmallVector<Activation> activations;
  const onnx::AttributeProto *namesAttr = findAttr(ref, "activations");
  const onnx::AttributeProto *alphaAttr = findAttr(ref, "activation_alpha");
  const onnx::AttributeProto *betaAttr = findAttr(ref, "activation_beta");
  size_t numActivations = defaults.size() * numDirs;
  if (namesAttr && (size_t)namesAttr->strings_size() != numActivations)
    return emitError(ref) << "attribute 'activations' must list "
                          << numActivations << " functions, got "
                          << namesAttr->strings_size();
  int alphaNext = 0, betaNext = 0;
  for (size_t i = 0; i < numActivations; ++i) {
    Activation act;
    act.name = namesAttr ? namesAttr->strings(i)
                         : defaults[i % defaults.size()].str();
    auto params = activationParams(act.name);
    if (!params)
      return emitError(ref) << "unsupported activation '" << act.name
                            << "'; supported: Relu, Tanh, Sigmoid, Affine, "
                               "LeakyRelu, ThresholdedRelu, ScaledTanh, "
                               "HardSigmoid, Elu, Softsign, Softplus";
    act.alpha = params->second.first;
    act.beta = params->second.second;
    if (params->first >= 1 && alphaAttr && alphaNext < alphaAttr->floats_size())
      act.alpha = alphaAttr->floats(alphaNext++);
    if (params->first >= 2 && betaAttr && betaNext < betaAttr->floats_size())
      act.beta = betaAttr->floats(betaNext++);
    activations.push_back(act);
  }

  // Builders; each failure has already been reported with the node.
  bool ok = true;
  auto check = [&](FailureOr<Value> v) -> Value {
    if (failed(v)) {
      ok = false;
      return Value();
    }
    return *v;
  };
  auto binary = [&](auto tag, Value a, Value b) -> Value {
    using OpTy = decltype(tag);
    if (!ok)
      return Value();
    return check(createOp<OpTy>(ref, loc, {a, b}));
  };
  auto add = [&](Value a, Value b) { return binary(AddOp(), a, b); };
  auto sub = [&](Value a, Value b) { return binary(SubOp(), a, b); };
  auto mul = [&](Value a, Value b) { return binary(MulOp(), a, b); };
  auto scalar = [&](double v) { return createScalarConstant(loc, f32, v); };
  // The slice [starts, starts + sizes) of `v`.
  auto slice = [&](Value v, ArrayRef<int64_t> starts,
                   ArrayRef<int64_t> sizes) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getShape() == sizes)
      return v;
    return SliceOp::create(builder, loc, type.clone(sizes), v,
                           builder.getDenseI64ArrayAttr(starts),
                           builder.getDenseI64ArrayAttr(
                               SmallVector<int64_t>(sizes.size(), 1)));
  };
  // Row `d` of a [D, ...] tensor, without the leading dimension.
  auto row = [&](Value v, int64_t d) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), sizes(type.getShape());
    starts[0] = d;
    sizes[0] = 1;
    return createReshape(loc, slice(v, starts, sizes),
                         type.getShape().drop_front());
  };
  // Gate `g` ([N, H]) of a [N, G*H] tensor.
  auto gate = [&](Value v, int64_t g) {
    return slice(v, {0, g * hidden}, {batch, hidden});
  };
  auto gemmT = [&](Value a, Value b) -> Value {
    if (!ok)
      return Value();
    GemmOp::Properties props;
    props.setAlpha(builder.getF32FloatAttr(1.0f));
    props.setBeta(builder.getF32FloatAttr(1.0f));
    props.setTransA(builder.getBoolAttr(false));
    props.setTransB(builder.getBoolAttr(true));
    return check(createOp<GemmOp>(ref, loc, {a, b}, props));
  };
  auto clipped = [&](Value v) -> Value {
    if (!ok || !hasClip)
      return v;
    ClipOp::Properties props;
    props.setMin(builder.getF64FloatAttr(-*clip));
    props.setMax(builder.getF64FloatAttr(*clip));
    return check(createOp<ClipOp>(ref, loc, v, props));
  };
  auto apply = [&](const Activation &act, Value v) -> Value {
    v = clipped(v);
    if (!ok)
      return Value();
    StringRef name = act.name;
    if (name.equals_insensitive("Sigmoid"))
      return check(createOp<SigmoidOp>(ref, loc, v));
    if (name.equals_insensitive("Tanh"))
      return check(createOp<TanhOp>(ref, loc, v));
    if (name.equals_insensitive("Relu"))
      return check(createOp<ReluOp>(ref, loc, v));
    if (name.equals_insensitive("Softsign"))
      return check(createOp<SoftsignOp>(ref, loc, v));
    if (name.equals_insensitive("Softplus"))
      return check(createOp<SoftplusOp>(ref, loc, v));
    if (name.equals_insensitive("LeakyRelu")) {
      LeakyReluOp::Properties props;
      props.setAlpha(builder.getF32FloatAttr(act.alpha));
      return check(createOp<LeakyReluOp>(ref, loc, v, props));
    }
    if (name.equals_insensitive("ThresholdedRelu")) {
      ThresholdedReluOp::Properties props;
      props.setAlpha(builder.getF32FloatAttr(act.alpha));
      return check(createOp<ThresholdedReluOp>(ref, loc, v, props));
    }
    if (name.equals_insensitive("Elu")) {
      EluOp::Properties props;
      props.setAlpha(builder.getF32FloatAttr(act.alpha));
      return check(createOp<EluOp>(ref, loc, v, props));
    }
    if (name.equals_insensitive("HardSigmoid")) {
      HardSigmoidOp::Properties props;
      props.setAlpha(builder.getF32FloatAttr(act.alpha));
      props.setBeta(builder.getF32FloatAttr(act.beta));
      return check(createOp<HardSigmoidOp>(ref, loc, v, props));
    }
    if (name.equals_insensitive("Affine"))
      return add(mul(v, scalar(act.alpha)), scalar(act.beta));
    // ScaledTanh: alpha * tanh(beta * v).
    Value t = mul(v, scalar(act.beta));
    if (!ok)
      return Value();
    return mul(check(createOp<TanhOp>(ref, loc, t)), scalar(act.alpha));
  };

  // Sequence lengths: a [N, 1] mask per step, unless every length is T.
  Value lens;
  if (hasInput(ref, 4)) {
    const ConstTensor *known = knownInput(ref, 4);
    bool full = known != nullptr;
    for (int64_t b = 0; full && b < batch; ++b)
      full = known->getInt(b) == steps;
    if (!full) {
      lens = input(ref, 4);
      auto lensType = cast<RankedTensorType>(lens.getType());
      if (lensType.getElementType() != builder.getI64Type())
        lens = CastOp::create(builder, loc,
                              lensType.clone(builder.getI64Type()), lens);
      lens = createReshape(loc, lens, {batch, 1});
    }
  }
  // Initial states as [D, N, H].
  auto initialState = [&](unsigned index) -> Value {
    if (!hasInput(ref, index))
      return Value();
    Value v = input(ref, index);
    if (*layout == 0)
      return v;
    TransposeOp::Properties props;
    props.setPerm(builder.getDenseI64ArrayAttr({1, 0, 2}));
    return check(createOp<TransposeOp>(ref, loc, v, props));
  };
  Value initialH = initialState(5), initialC = isLstm ? initialState(6) : Value();
  if (!ok)
    return failure();

  SmallVector<Value> ys, yhs, ycs;
  bool wantY = isOutputUsed(ref, 0);
  for (int64_t d = 0; d < numDirs; ++d) {
    bool reverse = *direction == "reverse" || d == 1;
    const Activation *acts = &activations[d * defaults.size()];
    Value wd = row(w, d), rd = row(r, d);
    // Biases: Wb + Rb join the input projection, except GRU's Rbh with
    // linear_before_reset, which joins the recurrent gemm.
    Value inputBias, recurrentBias;
    if (hasInput(ref, 3)) {
      Value bd = row(input(ref, 3), d);
      Value wb = slice(bd, {0}, {gh}), rb = slice(bd, {gh}, {gh});
      if (isGru && *linearBeforeReset) {
        inputBias = wb;
        recurrentBias = rb;
      } else {
        inputBias = add(wb, rb);
      }
    }
    // Every step's input projection at once: X [T, N, I] @ W^T [I, G*H].
    TransposeOp::Properties perm;
    perm.setPerm(builder.getDenseI64ArrayAttr({1, 0}));
    Value wt = check(createOp<TransposeOp>(ref, loc, wd, perm));
    if (!ok)
      return failure();
    Value projected = check(createOp<MatMulOp>(ref, loc, {x, wt}));
    if (inputBias)
      projected = add(projected, inputBias);
    Value peepI, peepO, peepF;
    if (isLstm && hasInput(ref, 7)) {
      Value pd = row(input(ref, 7), d);
      peepI = slice(pd, {0}, {hidden});
      peepO = slice(pd, {hidden}, {hidden});
      peepF = slice(pd, {2 * hidden}, {hidden});
    }
    // GRU without linear_before_reset multiplies the reset gate into the
    // state before the recurrent gemm of the candidate: split R.
    Value rdGates, rdCandidate;
    if (isGru && !*linearBeforeReset) {
      rdGates = slice(rd, {0, 0}, {2 * hidden, hidden});
      rdCandidate = slice(rd, {2 * hidden, 0}, {hidden, hidden});
    }
    Value zeros = createScalarConstant(loc, f32, 0.0, {batch, hidden});
    Value h = initialH ? row(initialH, d) : zeros;
    Value c = initialC ? row(initialC, d) : zeros;
    SmallVector<Value> outputs(steps);
    for (int64_t i = 0; i < steps && ok; ++i) {
      int64_t t = reverse ? steps - 1 - i : i;
      Value xt = createReshape(loc, slice(projected, {t, 0, 0}, {1, batch, gh}),
                               {batch, gh});
      Value hNew, cNew;
      if (isLstm) {
        // Gates i, o, f, c.
        Value pre = add(xt, gemmT(h, rd));
        Value iPre = gate(pre, 0), oPre = gate(pre, 1), fPre = gate(pre, 2),
              cPre = gate(pre, 3);
        if (peepI) {
          iPre = add(iPre, mul(peepI, c));
          fPre = add(fPre, mul(peepF, c));
        }
        Value ig = apply(acts[0], iPre);
        Value fg = *inputForget ? sub(scalar(1.0), ig) : apply(acts[0], fPre);
        Value cand = apply(acts[1], cPre);
        cNew = add(mul(fg, c), mul(ig, cand));
        if (peepO)
          oPre = add(oPre, mul(peepO, cNew));
        Value og = apply(acts[0], oPre);
        hNew = mul(og, apply(acts[2], cNew));
      } else if (isGru) {
        // Gates z, r, h.
        Value z, rg, cand;
        if (*linearBeforeReset) {
          Value rec = gemmT(h, rd);
          if (recurrentBias)
            rec = add(rec, recurrentBias);
          z = apply(acts[0], add(gate(xt, 0), gate(rec, 0)));
          rg = apply(acts[0], add(gate(xt, 1), gate(rec, 1)));
          cand = apply(acts[1], add(gate(xt, 2), mul(rg, gate(rec, 2))));
        } else {
          Value rec = gemmT(h, rdGates);
          z = apply(acts[0], add(gate(xt, 0), slice(rec, {0, 0},
                                                     {batch, hidden})));
          rg = apply(acts[0], add(gate(xt, 1), slice(rec, {0, hidden},
                                                      {batch, hidden})));
          cand = apply(acts[1],
                       add(gate(xt, 2), gemmT(mul(rg, h), rdCandidate)));
        }
        // (1 - z) * cand + z * h.
        hNew = add(mul(sub(scalar(1.0), z), cand), mul(z, h));
      } else {
        hNew = apply(acts[0], add(xt, gemmT(h, rd)));
      }
      if (!ok)
        return failure();
      Value out = hNew;
      if (lens) {
        Value mask = check(createOp<LessOp>(
            ref, loc, {createI64Constant(loc, {t}, {}), lens}));
        if (!ok)
          return failure();
        out = check(createOp<WhereOp>(ref, loc, {mask, hNew, zeros}));
        hNew = check(createOp<WhereOp>(ref, loc, {mask, hNew, h}));
        if (isLstm)
          cNew = check(createOp<WhereOp>(ref, loc, {mask, cNew, c}));
      }
      h = hNew;
      c = cNew;
      if (wantY)
        outputs[t] = createReshape(loc, out, {1, 1, batch, hidden});
    }
    if (!ok)
      return failure();
    if (wantY && steps > 0) {
      ConcatOp::Properties props;
      props.setAxis(builder.getI64IntegerAttr(0));
      ys.push_back(check(createOp<ConcatOp>(ref, loc, outputs, props)));
    }
    yhs.push_back(createReshape(loc, h, {1, batch, hidden}));
    if (isLstm)
      ycs.push_back(createReshape(loc, c, {1, batch, hidden}));
  }
  if (!ok)
    return failure();

  // Outputs: Y [T, D, N, H] (layout 1: [N, T, D, H]), Y_h and Y_c [D, N, H]
  // (layout 1: [N, D, H]).
  auto finish = [&](SmallVector<Value> &parts, int64_t axis,
                    ArrayRef<int64_t> layoutPerm) -> Value {
    Value v = parts.front();
    if (parts.size() > 1) {
      ConcatOp::Properties props;
      props.setAxis(builder.getI64IntegerAttr(axis));
      v = check(createOp<ConcatOp>(ref, loc, parts, props));
    }
    if (!ok || *layout == 0)
      return v;
    TransposeOp::Properties props;
    props.setPerm(builder.getDenseI64ArrayAttr(layoutPerm));
    return check(createOp<TransposeOp>(ref, loc, v, props));
  };
  if (wantY) {
    if (ys.empty())
      return emitError(ref) << "output Y of an empty sequence is not supported";
    Value y = finish(ys, 1, {2, 0, 1, 3});
    if (!ok || failed(setOutput(ref, 0, y)))
      return failure();
  }
  if (isOutputUsed(ref, 1)) {
    Value yh = finish(yhs, 0, {1, 0, 2});
    if (!ok || failed(setOutput(ref, 1, yh)))
      return failure();
  }
  if (isLstm && isOutputUsed(ref, 2)) {
    Value yc = finish(ycs, 0, {1, 0, 2});
    if (!ok || failed(setOutput(ref, 2, yc)))
      return failure();
  }
  return success();
}
