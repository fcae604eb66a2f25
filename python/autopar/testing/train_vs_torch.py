#!/usr/bin/env python3
# ===- train_vs_torch.py - autopar training steps against PyTorch ---------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Checks `autopar train` against PyTorch and its grids against one device.

For one model of the zoo (python/autopar/models/model_zoo.py), one loss and
one optimizer:

1. builds the model from seed 0, exports it for training
   (`training=TrainingMode.TRAINING`, `do_constant_folding=False`, so every
   PyTorch parameter is one ONNX initializer), and draws a batch and its
   target (mse: normal floats of the output's shape; cross_entropy: int64
   labels of the logits' shape without the last dimension); dropouts are
   set to p = 0, since random masks cannot be compared;
2. trains a copy of the PyTorch model for K steps on that batch with
   torch.optim.SGD or torch.optim.Adam (betas 0.9/0.999, eps 1e-8), recording
   the loss of each step's forward pass and the parameters after the last;
3. compiles the model with `autopar compile --mode training` on grid 1 and
   runs `autopar train --steps K --save`, and compares the printed losses and
   the saved initializers with PyTorch's;
4. does the same on every other `--configs` entry (GRID:PLAN) and compares
   it with the single-device run.

With --float64-steps (sgd only), each of autopar's single-device steps is
checked against one PyTorch float64 step from autopar's own weights before
it (`train --steps k --save` for every k): rounding then cannot accumulate
over the steps, and the tolerance below holds per step. Where the float64
step and autopar's disagree beyond it, a ReLU or MaxPool decision whose
float64 margin (a ReLU input's magnitude, a window's gap between its two
largest values) is at most 4 times PyTorch float32's own forward error at
that site may be taken the other way (decisions.py), one at a time while
that brings the step closer; every decision so taken is printed with its
margin. A step is right when its loss and every weight then match float64
within the tolerance. This is for models whose steps cross such a
discontinuity (resnet18: a batch-normalized ReLU input 3e-6 from zero), where
the float32 trajectories of PyTorch and autopar part at the crossing; a
wrong gradient rule is not a decision at a rounding-sized margin and still
fails.

With --float64-reference, PyTorch also runs the K steps in float64, and
every run (grid 1 and the configs) is judged against those: each loss and
weight must be inside the float32 tolerance of float64 or at most 4 times as
far from it as PyTorch's own float32 steps are (the rule of zoo_precision.py).
This is for models whose step amplifies float32 rounding beyond the
tolerance, where PyTorch float32 itself fails the float32 comparison
(mobilenet_v2's batch norms over 2x2 maps of 4 images).

Tolerance, elementwise: |a - b| <= atol + rtol |b|, rtol 1e-4; atol 1e-5
(verify's float32 default) for sgd and 0.1 lr for adam, whose update is
sign-like where gradients are tiny. Prints one line per run with the largest
errors and exits 1 when any run is outside the tolerance.

    /usr/bin/python3 python/autopar/testing/train_vs_torch.py \\
        --autopar build/bin/autopar --work /tmp/t --model mlp --loss mse \\
        --optimizer sgd --configs 2:data,2:tensor
"""

import argparse
import copy
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

# A run may be this many times further from float64 than PyTorch float32 is.
EXACT_FACTOR = 4.0

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import model_zoo  # noqa: E402

sys.path.insert(0, HERE)
import decisions  # noqa: E402

# The most decisions --float64-steps takes the other way in one step.
MAX_FLIPS = 4


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(array, name).SerializeToString())


def torch_loss(kind, output, target):
    if kind == "mse":
        return torch.mean((output - target) ** 2)
    vocab = output.shape[-1]
    return torch.nn.functional.cross_entropy(output.reshape(-1, vocab),
                                             target.reshape(-1))


def prepare(args):
    """Exports the model and the data; returns the PyTorch reference."""
    torch.manual_seed(0)
    model, inputs = model_zoo.MODELS[args.model]()
    args.batch = inputs[0].shape[0]
    model_zoo.randomize(model)
    model.train()
    # A training-mode dropout draws a random mask: autopar's (Philox, keyed
    # by --seed and the node's name) is not PyTorch's, so the comparison
    # runs without it (mobilenet_v2's classifier has one).
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout) and module.p != 0:
            print(f"note: {args.model}: dropout p={module.p} set to 0 for "
                  "the comparison (random masks cannot be compared)")
            module.p = 0.0
    with torch.no_grad():
        output = model(*inputs)
    if args.loss == "mse":
        target = torch.randn(output.shape)
    else:
        target = torch.randint(0, output.shape[-1], output.shape[:-1],
                               dtype=torch.long)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}

    path = os.path.join(args.work, "model.onnx")
    data = os.path.join(args.work, "data")
    os.makedirs(data, exist_ok=True)
    with torch.enable_grad():
        torch.onnx.export(model, inputs, path, opset_version=model_zoo.OPSET,
                          input_names=[f"input_{i}"
                                       for i in range(len(inputs))],
                          output_names=["output_0"],
                          # The batch stays a dimension of its own (shape
                          # computations instead of constants), so that a
                          # pipeline can import the model per microbatch;
                          # compile fixes it with --batch.
                          dynamic_axes={
                              **{f"input_{i}": {0: "batch"}
                                 for i in range(len(inputs))},
                              "output_0": {0: "batch"}},
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    for i, x in enumerate(inputs):
        write_tensor(os.path.join(data, f"input_{i}.pb"), x.numpy(),
                     f"input_{i}")
    write_tensor(os.path.join(data, "target.pb"), target.numpy(), "target")

    # PyTorch's own K steps from the same weights (and, on request, the
    # same steps in float64: the exact reference).
    losses, weights = torch_steps(args, model, initial, inputs, target,
                                  torch.float32)
    exact = (torch_steps(args, model, initial, inputs, target, torch.float64)
             if args.float64_reference else None)
    return path, data, losses, weights, exact, (model, initial, inputs, target)


def torch_steps(args, model, initial, inputs, target, dtype):
    """K PyTorch steps of `model` from the weights `initial` in `dtype`;
    returns the losses and the trained parameters (as float64 arrays for
    float64)."""
    model = copy.deepcopy(model)
    model.load_state_dict(initial)
    model.to(dtype)
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    if target.is_floating_point():
        target = target.to(dtype)
    params = [p for p in model.parameters()]
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=args.lr)
    else:
        opt = torch.optim.Adam(params, lr=args.lr, betas=(0.9, 0.999),
                               eps=1e-8)
    losses = []
    for _ in range(args.steps):
        opt.zero_grad()
        loss = torch_loss(args.loss, model(*inputs), target)
        loss.backward()
        losses.append(float(loss))
        opt.step()
    names = {id(p): n for n, p in model.named_parameters()}
    weights = {names[id(p)]: p.detach().numpy().copy() for p in params}
    return losses, weights


def run_tag(grid, plan):
    return f"g{grid}-{plan}".replace(";", "_").replace("=", "")


def run_autopar(args, model_path, data, grid, plan):
    tag = run_tag(grid, plan)
    out = os.path.join(args.work, tag)
    saved = os.path.join(args.work, f"{tag}.onnx")
    # A hand configuration: fixed=tp=T;pp=P;dp=D;micro_batch=b (';' for ',').
    placement = (["--fixed", plan[len("fixed="):].replace(";", ",")]
                 if plan.startswith("fixed=") else ["--plan", plan])
    compile_cmd = [args.autopar, "compile", model_path, "--mode", "training",
                   "--loss", args.loss, "--optimizer", args.optimizer,
                   "--lr", repr(args.lr), "--grid", grid, *placement,
                   "--batch", str(args.batch), "-o", out]
    if plan == "auto" and args.cluster:
        compile_cmd += ["--cluster", args.cluster]
    if args.distributed_optimizer:
        compile_cmd.append("--distributed-optimizer")
    train_cmd = [args.autopar, "train", out, "--data", data, "--steps",
                 str(args.steps), "--save", saved]
    for cmd in (compile_cmd, train_cmd):
        result = subprocess.run(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
            raise SystemExit(f"failed: {' '.join(cmd)}")
    losses = [float(m.group(2)) for m in
              re.finditer(r"^step (\d+) loss=(\S+)$", result.stdout, re.M)]
    if len(losses) != args.steps:
        raise SystemExit(f"{tag}: expected {args.steps} step lines, got:\n"
                         + result.stdout)
    weights = {init.name: onnx.numpy_helper.to_array(init)
               for init in onnx.load(saved).graph.initializer}
    return losses, weights


def autopar_weights_after(args, data, grid, plan, steps):
    """The weights of the compiled run (grid, plan) after `steps` steps (a
    new `train --steps` job of the compiled step)."""
    tag = run_tag(grid, plan)
    saved = os.path.join(args.work, f"{tag}-steps{steps}.onnx")
    cmd = [args.autopar, "train", os.path.join(args.work, tag), "--data", data,
           "--steps", str(steps), "--save", saved]
    result = subprocess.run(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return {init.name: onnx.numpy_helper.to_array(init)
            for init in onnx.load(saved).graph.initializer}


def tolerance_excess(args, weights, ref_weights):
    """The sum over every element of every weight of how far it lies
    outside the tolerance of `ref_weights` (0: all inside), the largest
    absolute error, and the weights outside by name and error."""
    atol = 0.1 * args.lr if args.optimizer == "adam" else 1e-5
    total, max_abs, outside = 0.0, 0.0, []
    for name, ref in ref_weights.items():
        got = weights[name].astype(np.float64)
        ref = ref.astype(np.float64)
        diff = np.abs(got - ref)
        over = np.maximum(diff - (atol + args.rtol * np.abs(ref)), 0.0)
        total += float(over.sum())
        max_abs = max(max_abs, float(diff.max()))
        if over.any():
            outside.append((float(over.max()), name, float(diff.max())))
    return total, max_abs, sorted(outside, reverse=True)


def sgd_step(model, recorder, weights, inputs, target, loss_kind, lr, flips):
    """One sgd step of the instrumented `model` (in its own precision) from
    `weights` with the decisions `flips` taken the other way; returns the
    loss and the weights after it, as float64 arrays."""
    dtype = next(model.parameters()).dtype
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(np.asarray(weights[name])).to(dtype))
    recorder.flips = flips
    recorder.reset()
    model.zero_grad(set_to_none=True)
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    if target.is_floating_point():
        target = target.to(dtype)
    loss = torch_loss(loss_kind, model(*inputs), target)
    loss.backward()
    return float(loss), {n: (p.detach() - lr * p.grad).double().numpy()
                         for n, p in model.named_parameters()}


def with_flip(flips, flip):
    site, position, value = flip[:3]
    merged = {s: dict(f) for s, f in flips.items()}
    merged.setdefault(site, {})[position] = value
    return merged


def describe_flip(recorder, flip):
    site, position, value, margin, error = flip
    shape = next(s.value.shape for s in recorder.sites if s.name == site)
    if value is None:
        where = tuple(int(i) for i in np.unravel_index(position, shape))
        what = f"relu {site} input {where}"
    else:
        out_shape = next(s.out_shape for s in recorder.sites
                         if s.name == site)
        where = tuple(int(i) for i in np.unravel_index(position, out_shape))
        taken = tuple(int(i) for i in np.unravel_index(value, shape[2:]))
        what = f"maxpool {site} output {where} takes input {taken}"
    return (f"{what} the other way: float64 margin {margin:.3e}, PyTorch "
            f"float32 forward error at the site {error:.3e}")


def check_float64_steps(args, reference, single_losses, single_weights, data):
    """--float64-steps: every single-device step of autopar against one
    PyTorch float64 step from autopar's weights before it. Prints one line
    per decision taken the other way; returns ok and a summary."""
    model, initial, inputs, target = reference
    model64, model32 = copy.deepcopy(model), copy.deepcopy(model)
    model64.load_state_dict(initial)
    model32.load_state_dict(initial)
    model64.to(torch.float64)
    recorder64 = decisions.instrument(model64)
    recorder32 = decisions.instrument(model32)
    names = [n for n, _ in model.named_parameters()]
    before = {n: initial[n].numpy() for n in names}
    ok, loss_err, max_abs, taken_total = True, 0.0, 0.0, 0
    for k in range(1, args.steps + 1):
        after = (single_weights if k == args.steps else
                 autopar_weights_after(args, data, "1", "replicated", k))
        loss64, ref = sgd_step(model64, recorder64, before, inputs, target,
                               args.loss, args.lr, {})
        total, _, _ = tolerance_excess(args, after, ref)
        flips, taken = {}, []
        if total > 0:
            sgd_step(model32, recorder32, before, inputs, target, args.loss,
                     args.lr, {})
            found = decisions.candidates(recorder64.sites, recorder32.sites,
                                         EXACT_FACTOR)
            print(f"  step {k}: {total:.3e} outside the tolerance of float64; "
                  f"{len(found)} decisions within {EXACT_FACTOR:g}x PyTorch "
                  "float32's forward error of their threshold")
            sites = list(recorder64.sites)
            while total > 0 and len(taken) < MAX_FLIPS:
                best = None
                for flip in found:
                    if flip in taken:
                        continue
                    trial = with_flip(flips, flip)
                    trial_loss, trial_ref = sgd_step(
                        model64, recorder64, before, inputs, target,
                        args.loss, args.lr, trial)
                    trial_total = tolerance_excess(args, after, trial_ref)[0]
                    if best is None or trial_total < best[0]:
                        best = (trial_total, flip, trial, trial_loss,
                                trial_ref)
                if best is None or best[0] >= total:
                    break
                total, flip, flips, loss64, ref = best
                taken.append(flip)
                recorder64.sites = sites
                print(f"  step {k}: {describe_flip(recorder64, flip)}")
        taken_total += len(taken)
        total, step_abs, outside = tolerance_excess(args, after, ref)
        err = abs(single_losses[k - 1] - loss64) / max(abs(loss64), 1e-30)
        loss_err, max_abs = max(loss_err, err), max(max_abs, step_abs)
        if err > args.rtol or total > 0:
            ok = False
            for _, name, diff in outside[:5]:
                print(f"  step {k}: outside the tolerance: {name} (abs err "
                      f"{diff:.3e})")
        before = after
    return ok, (f"loss_rel_err={loss_err:.3e} weight_abs_err={max_abs:.3e} "
                f"decisions_flipped={taken_total}")


def compare(args, losses, weights, ref_losses, ref_weights):
    atol = 0.1 * args.lr if args.optimizer == "adam" else 1e-5
    loss_err = max(abs(a - b) / max(abs(b), 1e-30)
                   for a, b in zip(losses, ref_losses))
    ok = all(abs(a - b) <= args.rtol * abs(b)
             for a, b in zip(losses, ref_losses))
    max_abs = max_rel = 0.0
    outside = []
    for name, ref in ref_weights.items():
        if name not in weights:
            raise SystemExit(f"the saved model has no initializer '{name}'")
        got = weights[name].astype(np.float64)
        ref = ref.astype(np.float64)
        diff = np.abs(got - ref)
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float((diff / np.maximum(np.abs(ref),
                                                         1e-30)).max()))
        excess = diff - (atol + args.rtol * np.abs(ref))
        if np.any(excess > 0):
            ok = False
            outside.append((float(excess.max()), name, float(diff.max())))
    # The weights furthest outside the tolerance name where a gradient is off.
    for _, name, err in sorted(outside, reverse=True)[:5]:
        print(f"  outside the tolerance: {name} (abs err {err:.3e})")
    return ok, loss_err, max_abs, max_rel


def compare_exact(args, losses, weights, exact, torch32):
    """Compares a run with PyTorch's float64 steps `exact`, next to PyTorch's
    own float32 steps `torch32`: a loss or weight passes when its largest
    error against float64 is inside the float32 tolerance or at most
    EXACT_FACTOR times PyTorch float32's largest error on it. On a model that
    amplifies float32 rounding beyond the tolerance, this tells a wrong
    gradient (orders of magnitude off) from rounding, as zoo_precision.py does
    for inference. Returns ok and a summary of the errors."""
    exact_losses, exact_weights = exact
    ref_losses, ref_weights = torch32
    atol = 0.1 * args.lr if args.optimizer == "adam" else 1e-5
    ok, worst, beyond = True, 0.0, 0
    items = [(f"loss {k + 1}", np.float64(a), np.float64(e), np.float64(r))
             for k, (a, e, r) in enumerate(zip(losses, exact_losses,
                                               ref_losses))]
    items += [(n, weights[n].astype(np.float64), e,
               ref_weights[n].astype(np.float64))
              for n, e in exact_weights.items()]
    outside = []
    for name, got, ex, ref32 in items:
        err = float(np.max(np.abs(got - ex)))
        torch_err = float(np.max(np.abs(ref32 - ex)))
        inside = bool(np.all(np.abs(got - ex) <= atol + args.rtol * np.abs(ex)))
        ratio = err / max(torch_err, 1e-30)
        if not inside:
            beyond += 1
            worst = max(worst, ratio)
            if ratio > EXACT_FACTOR:
                ok = False
                outside.append((ratio, name, err, torch_err))
    for ratio, name, err, torch_err in sorted(outside, reverse=True)[:5]:
        print(f"  off float64: {name} (abs err {err:.3e}, PyTorch float32 "
              f"{torch_err:.3e})")
    return ok, f"{beyond} of {len(items)} beyond the float32 tolerance, " \
        f"worst error ratio to PyTorch float32 {worst:.2f}"


def write_curve(path, title, curves):
    """Writes the loss curves {label: [loss per step]} as a standalone SVG
    (no plotting library needed): one polyline per curve over the steps."""
    width, height, left, bottom, top, right = 960, 420, 70, 50, 40, 330
    values = [v for losses in curves.values() for v in losses]
    lo, hi = min(values), max(values)
    if hi == lo:
        hi = lo + 1.0
    steps = max(len(losses) for losses in curves.values())
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(i):
        return left + plot_w * i / max(steps - 1, 1)

    def y(v):
        return top + plot_h * (hi - v) / (hi - lo)

    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    dashes = ["", "6,4", "2,3", "8,3,2,3", "1,2"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{title}</text>',
           f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" '
           f'y2="{top + plot_h}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" '
           'stroke="black"/>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{v:.3g}</text>')
        i = round((steps - 1) * k / 4)
        out.append(f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" '
                   f'text-anchor="middle">{i + 1}</text>')
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" '
               'text-anchor="middle">step</text>')
    out.append(f'<text x="16" y="{top + plot_h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + plot_h / 2})">loss</text>')
    for n, (label, losses) in enumerate(curves.items()):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}"
                          for i, v in enumerate(losses))
        color, dash = colors[n % len(colors)], dashes[n % len(dashes)]
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                   f'stroke-dasharray="{dash}" points="{points}"/>')
        ly = top + 14 + 18 * n
        out.append(f'<line x1="{left + plot_w + 12}" y1="{ly}" '
                   f'x2="{left + plot_w + 36}" y2="{ly}" stroke="{color}" '
                   f'stroke-dasharray="{dash}" stroke-width="1.5"/>')
        out.append(f'<text x="{left + plot_w + 40}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autopar", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--model", default="mlp",
                        choices=sorted(model_zoo.MODELS))
    parser.add_argument("--loss", default="mse",
                        choices=["mse", "cross_entropy"])
    parser.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--cluster", default="",
                        help="cluster description for the auto plans")
    parser.add_argument("--distributed-optimizer", action="store_true",
                        help="compile every run with "
                             "--distributed-optimizer (ZeRO-1)")
    parser.add_argument("--float64-reference", action="store_true",
                        help="judge every run against PyTorch's steps in "
                             "float64: a loss or weight passes inside the "
                             "float32 tolerance or within 4x PyTorch "
                             "float32's own error (models that amplify "
                             "float32 rounding beyond the tolerance)")
    parser.add_argument("--float64-steps", action="store_true",
                        help="check every single-device step against one "
                             "PyTorch float64 sgd step from autopar's "
                             "weights before it, a ReLU or MaxPool decision "
                             "within 4x PyTorch float32's forward error of "
                             "its threshold allowed the other way (printed); "
                             "models whose steps cross such a decision")
    parser.add_argument("--curve", default="",
                        help="write the loss curves of PyTorch, grid 1 and "
                             "every config as this SVG file")
    parser.add_argument("--configs", default="",
                        help="GRID:PLAN entries checked against grid 1, "
                             "comma-separated (2:data,4:tensor,2x2:auto); "
                             "PLAN may be a --fixed configuration written "
                             "fixed=tp=T;pp=P;dp=D;micro_batch=b")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    if args.float64_steps and args.optimizer != "sgd":
        parser.error("--float64-steps needs sgd (adam's state is not saved)")
    model_path, data, ref_losses, ref_weights, exact, reference = \
        prepare(args)
    single_losses, single_weights = run_autopar(args, model_path, data, "1",
                                                "replicated")
    failed = False
    ok, le, wa, wr = compare(args, single_losses, single_weights, ref_losses,
                             ref_weights)
    if args.float64_steps:
        # The float32 trajectories part where a decision is crossed; the
        # float64 steps decide.
        print(f"{args.model} {args.loss} {args.optimizer} grid 1 vs torch "
              f"float32: loss_rel_err={le:.3e} weight_abs_err={wa:.3e} "
              f"{'ok' if ok else 'outside the float32 tolerance'}")
        ok, summary = check_float64_steps(args, reference, single_losses,
                                          single_weights, data)
        failed |= not ok
        print(f"{args.model} {args.loss} {args.optimizer} grid 1 vs torch "
              f"float64 steps: {summary} {'ok' if ok else 'MISMATCH'}")
    elif exact:
        # The float32 comparison is informative only; float64 decides.
        print(f"{args.model} {args.loss} {args.optimizer} grid 1 vs torch "
              f"float32: loss_rel_err={le:.3e} weight_abs_err={wa:.3e} "
              f"{'ok' if ok else 'outside the float32 tolerance'}")
        ok, worst = compare_exact(args, single_losses, single_weights, exact,
                                  (ref_losses, ref_weights))
        failed |= not ok
        print(f"{args.model} {args.loss} {args.optimizer} grid 1 vs torch "
              f"float64: {worst} {'ok' if ok else 'MISMATCH'}")
    else:
        failed |= not ok
        print(f"{args.model} {args.loss} {args.optimizer} grid 1 vs torch: "
              f"loss_rel_err={le:.3e} weight_abs_err={wa:.3e} "
              f"weight_rel_err={wr:.3e} {'ok' if ok else 'MISMATCH'}")
    print("  losses: autopar " + " ".join(f"{x:.9g}" for x in single_losses))
    print("  losses: torch   " + " ".join(f"{x:.9g}" for x in ref_losses))
    curves = {"PyTorch": ref_losses, "autopar, 1 device": single_losses}
    for config in filter(None, args.configs.split(",")):
        grid, plan = config.split(":", 1)
        losses, weights = run_autopar(args, model_path, data, grid, plan)
        curves[f"autopar, grid {grid} "
               f"{plan.replace('fixed=', '').replace(';', ',')}"] = losses
        if exact:
            ok, worst = compare_exact(args, losses, weights, exact,
                                      (ref_losses, ref_weights))
            failed |= not ok
            print(f"{args.model} {args.loss} {args.optimizer} grid {grid} "
                  f"{plan} vs torch float64: {worst} "
                  f"{'ok' if ok else 'MISMATCH'}")
            continue
        ref = {n: single_weights[n] for n in ref_weights}
        ok, le, wa, wr = compare(args, losses, weights, single_losses, ref)
        failed |= not ok
        print(f"{args.model} {args.loss} {args.optimizer} grid {grid} "
              f"{plan} vs grid 1: loss_rel_err={le:.3e} "
              f"weight_abs_err={wa:.3e} weight_rel_err={wr:.3e} "
              f"{'ok' if ok else 'MISMATCH'}")
    if args.curve:
        write_curve(args.curve, f"{args.model}, {args.loss}, "
                    f"{args.optimizer} (lr {args.lr}), the same batch every "
                    "step", curves)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
