#!/usr/bin/env python3
# ===- zoo_precision.py - zoo models against float64, op by op -----------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Tells an autopar bug from float32 rounding on a zoo model.

zoo_check.py compares autopar's float32 outputs with PyTorch's float32
outputs. When they differ by more than the tolerance, either an op is wrong
or both are within float32 rounding of the exact result and the model
amplifies that rounding beyond the tolerance. This tool measures which:

1. It rebuilds the model exactly as model_zoo.export() does and runs PyTorch
   in float32 and in float64 (the same weights, converted), and evaluates the
   exported ONNX graph itself in float64 (BatchNorm folded into the f32
   weights, as autopar sees it).
2. It compiles the model with autopar at grid 1 with the outputs of every
   node whose op is in --nodes added as graph outputs, runs it, and compares
   each value with the float64 evaluation of the ONNX graph, next to the error
   of the same graph evaluated in float32 by PyTorch's kernels.

It prints, per model, the final outputs' errors against PyTorch float64
(max absolute error and the elements beyond atol + rtol * |ref|) and, per
node, the error relative to the value's largest magnitude for autopar and
for PyTorch float32. A value is off when autopar's error is above both 4
times PyTorch float32's error on the same graph and 64 float32 units of
roundoff of the value's magnitude: a wrong op is off by orders of magnitude
more than rounding. Error carried in from upstream can also be amplified
by a node (a sigmoid's steep part, a cancellation) more for autopar than
for PyTorch by chance, so a value whose inputs are all known (probed,
constant or graph inputs) is also checked alone: the node is evaluated in
float64 and by PyTorch float32 on autopar's values of its inputs (columns
`local`), and it is flagged `WRONG` only when its own error is off by the
same rule. The local errors are printed for every node whose inputs are
known. It exits 1 when a node is flagged.

    /usr/bin/python3 python/autopar/testing/zoo_precision.py \\
        --autopar build/bin/autopar --cache build/models \\
        --models tv_inception_v3 --nodes Conv,Concat,AveragePool,Gemm

With --torch-only it measures only how well the model as exported is
conditioned, without autopar or the export: PyTorch float32 against PyTorch
float64 on the export's inputs (largest output, its spread across the batch,
the largest error, the elements beyond the tolerance and the largest error
over its element's tolerance, which should stay below 1/--margin so that any
correct float32 implementation passes the comparison):

    OMP_NUM_THREADS=1 /usr/bin/python3 python/autopar/testing/zoo_precision.py \\
        --torch-only --models zoo

The float64 evaluation of ONNX graphs supports the ops of the zoo's
torchvision exports: the convolutional nets (Conv, BatchNormalization, the
pools, Concat, Pad, Gemm, activations, ...) and the transformers (MatMul,
Einsum, LayerNormalization, Softmax, Erf, Transpose, Reshape, and the shape
computations of Swin's windows: Shape, Gather, Slice, ScatterND, Where,
Range, Mod, ...); others stop with an error naming the op.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.numpy_helper  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import model_zoo  # noqa: E402
import zoo_args  # noqa: E402

# float32's unit roundoff.
EPS32 = 2.0 ** -24


def read_tensor(path: str) -> np.ndarray:
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(tensor)


def node_attributes(node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a)
            for a in node.attribute}


def torch_pads(pads):
    """ONNX pads [b1, b2, ..., e1, e2, ...] -> F.pad's last-dim-first order."""
    rank = len(pads) // 2
    out = []
    for i in reversed(range(rank)):
        out += [int(pads[i]), int(pads[i + rank])]
    return out


# ONNX element types -> torch dtypes (float types are evaluated in the
# evaluation's precision).
ONNX_INTEGER_TYPES = {
    onnx.TensorProto.INT64: torch.int64, onnx.TensorProto.INT32: torch.int32,
    onnx.TensorProto.INT8: torch.int8, onnx.TensorProto.UINT8: torch.uint8,
    onnx.TensorProto.BOOL: torch.bool,
}
ONNX_FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
                    onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


def normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def gather(data, indices, axis: int):
    """ONNX Gather: negative indices count from the end of `axis`."""
    axis = normalize_axis(axis, data.dim())
    indices = torch.where(indices < 0, indices + data.shape[axis], indices)
    taken = torch.index_select(data, axis, indices.reshape(-1))
    return taken.reshape(data.shape[:axis] + indices.shape
                         + data.shape[axis + 1:])


def slice_tensor(data, starts, ends, axes, steps):
    """ONNX Slice: Python's slice bounds clamp as ONNX's do (a negative step
    walks backwards from a start clamped to the last element)."""
    out = data
    axes = axes.tolist() if axes is not None else list(range(len(starts)))
    steps = steps.tolist() if steps is not None else [1] * len(starts)
    for start, end, axis, step in zip(starts.tolist(), ends.tolist(), axes,
                                      steps):
        axis = normalize_axis(axis, data.dim())
        size = data.shape[axis]
        if step < 0 and start < -size:
            start = 0
        index = list(range(*slice(start, end, step).indices(size)))
        out = torch.index_select(out, axis,
                                 torch.tensor(index, dtype=torch.int64))
    return out


def scatter_nd(data, indices, updates):
    """ONNX ScatterND (reduction none)."""
    out = data.clone()
    k = indices.shape[-1]
    flat = indices.reshape(-1, k).tolist()
    values = updates.reshape((len(flat),) + tuple(data.shape[k:]))
    for i, index in enumerate(flat):
        out[tuple(index)] = values[i]
    return out


def evaluate_node(node, x: list, dtype):
    """The outputs of ONNX `node` on the input tensors `x` (None for an
    absent optional input), computed by PyTorch in `dtype`: a tensor, or a
    tuple of them for a node with several outputs."""

    def tensor(array):
        t = torch.from_numpy(np.array(array))
        return t.to(dtype) if t.is_floating_point() else t

    a = node_attributes(node)
    op = node.op_type

    def opt(i):
        """Optional input i, or None."""
        return x[i] if len(x) > i else None

    if op == "Constant":
        y = tensor(onnx.numpy_helper.to_array(a["value"]))
    elif op == "Conv":
        pads = a.get("pads", [0] * 4)
        inp = F.pad(x[0], torch_pads(pads))
        y = F.conv2d(inp, x[1], x[2] if len(x) > 2 else None,
                     a.get("strides", [1, 1]), 0,
                     a.get("dilations", [1, 1]), a.get("group", 1))
    elif op in ("MaxPool", "AveragePool"):
        pads = a.get("pads", [0] * 4)
        if pads[0] != pads[2] or pads[1] != pads[3]:
            raise NotImplementedError(f"{op} with asymmetric pads")
        args = (x[0], a["kernel_shape"], a.get("strides", [1, 1]),
                (pads[0], pads[1]))
        ceil = bool(a.get("ceil_mode", 0))
        if op == "MaxPool":
            y = F.max_pool2d(*args, ceil_mode=ceil)
        else:
            y = F.avg_pool2d(*args, ceil_mode=ceil, count_include_pad=bool(
                a.get("count_include_pad", 0)))
    elif op == "GlobalAveragePool":
        y = x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True)
    elif op == "BatchNormalization":
        shape = [1, -1] + [1] * (x[0].dim() - 2)
        scale, bias, mean, var = (t.reshape(shape) for t in x[1:5])
        y = (x[0] - mean) / torch.sqrt(var + a.get("epsilon", 1e-5)) \
            * scale + bias
    elif op == "LayerNormalization":
        axis = normalize_axis(a.get("axis", -1), x[0].dim())
        y = F.layer_norm(x[0], x[0].shape[axis:], x[1], opt(2),
                         a.get("epsilon", 1e-5))
    elif op == "Softmax":
        y = torch.softmax(x[0], dim=a.get("axis", -1))
    elif op == "Pad":
        if a.get("mode", b"constant") != b"constant":
            raise NotImplementedError("Pad other than constant")
        value = float(x[2]) if len(x) > 2 and x[2] is not None else 0.0
        y = F.pad(x[0], torch_pads(x[1].tolist()), value=value)
    elif op == "Gemm":
        lhs = x[0].T if a.get("transA", 0) else x[0]
        rhs = x[1].T if a.get("transB", 0) else x[1]
        y = a.get("alpha", 1.0) * (lhs @ rhs)
        if len(x) > 2:
            y = y + a.get("beta", 1.0) * x[2]
    elif op == "MatMul":
        y = x[0] @ x[1]
    elif op == "Einsum":
        y = torch.einsum(a["equation"].decode(), *x)
    elif op == "Flatten":
        axis = a.get("axis", 1)
        y = x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)
    elif op == "Reshape":
        shape = [int(v) for v in x[1]]
        if not a.get("allowzero", 0):
            shape = [x[0].shape[i] if v == 0 else v
                     for i, v in enumerate(shape)]
        y = x[0].reshape(shape)
    elif op == "Transpose":
        y = x[0].permute(a.get("perm", list(reversed(range(x[0].dim())))))
    elif op == "Unsqueeze":
        axes = sorted(normalize_axis(int(v), x[0].dim() + len(x[1]))
                      for v in x[1])
        y = x[0]
        for axis in axes:
            y = y.unsqueeze(axis)
    elif op == "Squeeze":
        axes = [normalize_axis(int(v), x[0].dim()) for v in opt(1)] \
            if opt(1) is not None else \
            [i for i, d in enumerate(x[0].shape) if d == 1]
        y = x[0]
        for axis in sorted(axes, reverse=True):
            y = y.squeeze(axis)
    elif op == "Concat":
        y = torch.cat(x, dim=a["axis"])
    elif op == "Split":
        axis = a.get("axis", 0)
        sizes = opt(1).tolist() if opt(1) is not None else \
            x[0].shape[axis] // len(node.output)
        y = tuple(torch.split(x[0], sizes, dim=axis))
    elif op == "Gather":
        y = gather(x[0], x[1], a.get("axis", 0))
    elif op == "Slice":
        y = slice_tensor(x[0], x[1], x[2], opt(3), opt(4))
    elif op == "ScatterND":
        if a.get("reduction", b"none") != b"none":
            raise NotImplementedError("ScatterND with a reduction")
        y = scatter_nd(x[0], x[1], x[2])
    elif op == "Expand":
        shape = torch.broadcast_shapes(x[0].shape,
                                       tuple(int(v) for v in x[1]))
        y = x[0].expand(shape).clone()
    elif op == "Shape":
        y = torch.tensor(list(x[0].shape), dtype=torch.int64)
    elif op == "ConstantOfShape":
        value = tensor(onnx.numpy_helper.to_array(a["value"])) \
            if "value" in a else torch.zeros(1, dtype=dtype)
        y = value.reshape(()).expand(tuple(int(v) for v in x[0])).clone()
    elif op == "Range":
        y = torch.arange(x[0].item(), x[1].item(), x[2].item(),
                         dtype=x[0].dtype)
    elif op == "Cast":
        to = a["to"]
        if to in ONNX_FLOAT_TYPES:
            y = x[0].to(dtype)
        elif to in ONNX_INTEGER_TYPES:
            y = x[0].to(ONNX_INTEGER_TYPES[to])
        else:
            raise NotImplementedError(f"Cast to ONNX type {to}")
    elif op in ("Identity", "Dropout"):
        y = x[0]
    elif op == "Where":
        y = torch.where(x[0], x[1], x[2])
    elif op == "Equal":
        y = torch.eq(x[0], x[1])
    elif op == "Not":
        y = torch.logical_not(x[0])
    elif op == "Mod":
        y = torch.fmod(x[0], x[1]) if a.get("fmod", 0) else \
            torch.remainder(x[0], x[1])
    elif op == "Div" and not x[0].is_floating_point():
        y = torch.div(x[0], x[1], rounding_mode="trunc")
    elif op in ("Add", "Sub", "Mul", "Div", "Pow"):
        y = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
             "Div": torch.div, "Pow": torch.pow}[op](x[0], x[1])
    elif op in ("Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Neg"):
        y = {"Relu": torch.relu, "Sigmoid": torch.sigmoid,
             "Tanh": torch.tanh, "Erf": torch.erf, "Sqrt": torch.sqrt,
             "Exp": torch.exp, "Neg": torch.neg}[op](x[0])
    elif op == "ReduceMean":
        axes = a.get("axes", list(range(x[0].dim())))
        y = x[0].mean(dim=tuple(axes), keepdim=bool(a.get("keepdims", 1)))
    elif op == "Clip":
        y = torch.clamp(x[0], x[1] if len(x) > 1 else None,
                        x[2] if len(x) > 2 else None)
    elif op == "HardSigmoid":
        y = torch.clamp(a.get("alpha", 0.2) * x[0] + a.get("beta", 0.5),
                        0, 1)
    elif op == "HardSwish":
        y = x[0] * torch.clamp(x[0] / 6 + 0.5, 0, 1)
    else:
        raise NotImplementedError(f"no float64 evaluation of {op}")
    return y


def evaluate(model, feeds: dict, dtype) -> dict:
    """Every value of ONNX `model` on `feeds`, computed by PyTorch in
    `dtype` (float tensors only; integer tensors keep their type)."""

    def tensor(array):
        t = torch.from_numpy(np.array(array))
        return t.to(dtype) if t.is_floating_point() else t

    env = {i.name: tensor(onnx.numpy_helper.to_array(i))
           for i in model.graph.initializer}
    env.update({k: tensor(v) for k, v in feeds.items()})
    for node in model.graph.node:
        y = evaluate_node(node, [env[i] if i else None for i in node.input],
                          dtype)
        outputs = y if isinstance(y, tuple) else (y,)
        for name, value in zip(node.output, outputs):
            if name:
                env[name] = value
    return env


def report(title: str, got: np.ndarray, ref: np.ndarray, atol: float,
           rtol: float) -> None:
    err = np.abs(got.astype(np.float64) - ref)
    beyond = int((err > atol + rtol * np.abs(ref)).sum())
    print(f"  {title:38s} max_abs_err={err.max():.3e} beyond tolerance: "
          f"{beyond} of {err.size}")


def is_off(ours: float, theirs: float) -> bool:
    """Whether autopar's error `ours` (relative to the value's magnitude) is
    beyond rounding: above both 4 times PyTorch float32's error `theirs` on
    the same computation and 64 float32 units of roundoff."""
    return ours > 4 * theirs and ours > 64 * EPS32


def local_errors(node, inputs: list, result: np.ndarray, scale: float):
    """The errors of `node` alone, relative to `scale`: autopar's `result`
    and PyTorch float32's value of the node, each against the node evaluated
    in float64 on the same `inputs` (autopar's values of the node's inputs,
    float64 tensors)."""
    exact = evaluate_node(node, inputs, torch.float64)
    exact = (exact[0] if isinstance(exact, tuple) else exact).numpy()
    f32 = evaluate_node(node, [t.float() if t is not None and
                               t.is_floating_point() else t
                               for t in inputs], torch.float32)
    f32 = (f32[0] if isinstance(f32, tuple) else f32).numpy()
    ours = float(np.abs(result.astype(np.float64) - exact).max()) / scale
    theirs = float(np.abs(f32.astype(np.float64) - exact).max()) / scale
    return ours, theirs


def check_model(args, name: str) -> int:
    model_dir = model_zoo.export(name, args.cache)
    data = os.path.join(model_dir, "test_data_set_0")
    graph = onnx.load(os.path.join(model_dir, "model.onnx"))
    feeds = {inp.name: read_tensor(os.path.join(data, f"input_{i}.pb"))
             for i, inp in enumerate(graph.graph.input)}
    reference = read_tensor(os.path.join(data, "output_0.pb"))

    # PyTorch's own model, built as export() builds it, in f32 and f64.
    module, inputs = model_zoo.instance(name)
    for i, t in enumerate(inputs):
        if not np.array_equal(t.numpy(), list(feeds.values())[i]):
            print(f"{name}: error: the rebuilt model's input {i} differs "
                  f"from the export in '{data}'")
            return 1
    with torch.no_grad():
        exact = module.double()(*[t.double() if t.is_floating_point() else t
                                  for t in inputs])
    exact = (exact[0] if isinstance(exact, (tuple, list)) else exact).numpy()

    # autopar at grid 1, with the chosen nodes' values as extra outputs.
    ops = set(args.nodes.split(",")) if args.nodes else set()
    inferred = onnx.shape_inference.infer_shapes(graph)
    infos = {v.name: v for v in inferred.graph.value_info}
    probes = [n.output[0] for n in graph.graph.node
              if n.op_type in ops and n.output[0] in infos]
    for value in probes:
        graph.graph.output.append(infos[value])
    with tempfile.TemporaryDirectory(prefix=f"zoo-precision-{name}-") as tmp:
        onnx.save(graph, os.path.join(tmp, "model.onnx"))
        for cmd in ([args.autopar, "compile", os.path.join(tmp, "model.onnx"),
                     "--grid", "1", "-o", os.path.join(tmp, "compiled")],
                    [args.autopar, "run", os.path.join(tmp, "compiled"),
                     "--inputs", data, "--outputs", os.path.join(tmp, "out"),
                     "--timeout", str(args.timeout)]):
            proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                print(f"{name}: error: '{' '.join(cmd[:2])}' failed:\n"
                      f"{proc.stdout[-2000:]}")
                return 1
        got = [read_tensor(os.path.join(tmp, "out", f"output_{i}.pb"))
               for i in range(len(graph.graph.output))]

    graph64 = evaluate(graph, feeds, torch.float64)
    print(f"{name}: output 0, largest magnitude "
          f"{np.abs(exact).max():.3g} (PyTorch float64)")
    report("PyTorch float32 vs PyTorch float64", reference, exact,
           args.atol, args.rtol)
    report("autopar vs PyTorch float64", got[0], exact, args.atol, args.rtol)
    report("autopar vs PyTorch float32", got[0], reference.astype(np.float64),
           args.atol, args.rtol)
    report("ONNX graph float64 vs PyTorch float64",
           graph64[graph.graph.output[0].name].numpy(), exact, args.atol,
           args.rtol)
    if not probes:
        return 0

    graph32 = evaluate(graph, feeds, torch.float32)
    kinds = {n.output[0]: n.op_type for n in graph.graph.node}
    nodes = {n.output[0]: n for n in graph.graph.node}
    ours_by_value = {o.name: v for o, v in zip(graph.graph.output, got)}
    # Values autopar and the reference share exactly: graph inputs,
    # initializers and Constant nodes.
    exact_values = set(feeds) | {i.name for i in graph.graph.initializer} | {
        n.output[0] for n in graph.graph.node if n.op_type == "Constant"}
    print(f"  {'value':60s} {'op':18s} {'max|x|':>9s} {'autopar':>9s} "
          f"{'torch f32':>9s} {'ratio':>6s} {'local':>9s} {'torch':>9s} "
          "(errors relative to max|x|; local: of the node alone)")
    wrong = 0
    local_ratios = {}
    for value, result in ours_by_value.items():
        ref = graph64[value].numpy()
        scale = max(float(np.abs(ref).max()), np.finfo(np.float32).tiny)
        ours = float(np.abs(result.astype(np.float64) - ref).max()) / scale
        theirs = float(np.abs(graph32[value].numpy().astype(np.float64)
                              - ref).max()) / scale
        flag = is_off(ours, theirs)
        local = "-"
        node = nodes.get(value)
        if node is not None and all(
                not i or i in exact_values or i in ours_by_value
                for i in node.input):
            # The node's own error: the node evaluated on autopar's values
            # of its inputs, so that error carried in from upstream (which
            # the node may amplify, e.g. a sigmoid's steep part) does not
            # count against it.
            inputs = [None if not i else
                      torch.from_numpy(np.array(ours_by_value[i])).double()
                      if i in ours_by_value else graph64[i]
                      for i in node.input]
            ours_local, theirs_local = local_errors(node, inputs, result,
                                                    scale)
            flag = flag and is_off(ours_local, theirs_local)
            local = f"{ours_local:9.2e} {theirs_local:9.2e}"
            if theirs_local > 0:
                local_ratios.setdefault(node.op_type, []).append(
                    ours_local / theirs_local)
        wrong += flag
        ratio = ours / theirs if theirs > 0 else float("inf")
        print(f"  {value[-60:]:60s} {kinds.get(value, '?'):18s} "
              f"{scale:9.2e} {ours:9.2e} {theirs:9.2e} {ratio:6.2f} {local}"
              + ("  WRONG" if flag else ""))
    if local_ratios:
        print(f"{name}: local error / PyTorch float32's, median per op: "
              + ", ".join(f"{op} {np.median(r):.2f} ({len(r)})"
                          for op, r in sorted(local_ratios.items())))
    print(f"{name}: {len(probes) + 1} values, {wrong} wrong")
    return 1 if wrong else 0


def first_output(outputs) -> torch.Tensor:
    return outputs[0] if isinstance(outputs, (tuple, list)) else outputs


def conditioning(name: str, atol: float, rtol: float) -> dict:
    """How well PyTorch float32 reproduces PyTorch float64 on zoo model
    `name` as exported (model_zoo.instance(), the export's inputs), without
    autopar or the export: output 0's largest magnitude, its spread across
    the batch (the RMS of each element's deviation from its batch mean over
    the RMS of the output: 0 when every input gives the same output), the
    largest float32 error, the elements beyond atol + rtol * |float64|, and
    the largest error as a fraction of that element's tolerance (`worst`)."""
    import time
    start = time.process_time()
    module, inputs = model_zoo.instance(name)
    with torch.no_grad():
        y32 = first_output(module(*inputs)).double()
        module.double()
        y64 = first_output(module(*[t.double() if t.is_floating_point()
                                     else t for t in inputs]))
    err = (y32 - y64).abs()
    tol = atol + rtol * y64.abs()
    rms = float(y64.pow(2).mean().sqrt())
    deviation = float((y64 - y64.mean(0, keepdim=True)).pow(2).mean().sqrt())
    return {
        "max_y": float(y64.abs().max()),
        "spread": deviation / rms if rms > 0 else 0.0,
        "max_err": float(err.max()),
        "beyond": int((err > tol).sum()),
        "size": err.numel(),
        "worst": float((err / tol).max()),
        "cpu_s": time.process_time() - start,
    }


def check_conditioning(names: list, atol: float, rtol: float,
                       margin: float) -> int:
    """Prints conditioning() of each model as a table; returns how many
    models' `worst` is above 1 / margin."""
    print(f"{'model':24s} {'max|y|':>9s} {'spread':>7s} {'f32 err':>9s} "
          f"{'beyond':>11s} {'err/tol':>8s} {'cpu s':>6s}  "
          f"(PyTorch float32 vs float64, atol {atol:g} rtol {rtol:g}; "
          f"ok: err/tol <= 1/{margin:g})")
    bad = 0
    for name in names:
        c = conditioning(name, atol, rtol)
        ok = c["worst"] <= 1.0 / margin
        bad += not ok
        print(f"{name:24s} {c['max_y']:9.3g} {c['spread']:7.3f} "
              f"{c['max_err']:9.2e} {c['beyond']:5d}/{c['size']:<5d} "
              f"{c['worst']:8.3f} {c['cpu_s']:6.1f}  "
              + ("ok" if ok else "ILL-CONDITIONED"), flush=True)
    print(f"zoo_precision: {len(names)} models, {bad} ill-conditioned")
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    zoo_args.add_arguments(parser, "comma-separated zoo models, or 'zoo' "
                           "for all")
    parser.add_argument("--nodes", default="",
                        help="comma-separated ONNX op types whose outputs "
                        "are compared node by node (e.g. Conv,Add,Gemm)")
    parser.add_argument("--timeout", type=int, default=1200,
                        help="seconds for the autopar run (default 1200)")
    parser.add_argument("--torch-only", action="store_true",
                        help="only compare PyTorch float32 with float64 on "
                        "each model (no autopar, no export): its "
                        "conditioning")
    parser.add_argument("--margin", type=float, default=3.0,
                        help="--torch-only: a model is well conditioned "
                        "when float32's largest error is at most 1/MARGIN "
                        "of that element's tolerance (default 3)")
    parser.add_argument("--residual-scale", type=float,
                        help="--torch-only: build the instances with this "
                        "model_zoo.RESIDUAL_BRANCH_SCALE instead (1: the "
                        "instances before it existed)")
    parser.add_argument("--skip", default="",
                        help="--torch-only: build the instances without "
                        "these comma-separated conditioning steps of "
                        "model_zoo.instance(): calibrate_layers, condition "
                        "(the instances before them)")
    parser.add_argument("--threads", type=int, default=1,
                        help="PyTorch's CPU threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        names = zoo_args.model_names(args.models, model_zoo.ZOO)
    except ValueError as e:
        print(f"zoo_precision: error: {e}", file=sys.stderr)
        return 2
    if args.residual_scale is not None:
        if not args.torch_only:
            print("zoo_precision: error: --residual-scale needs --torch-only "
                  "(autopar runs the exported model)", file=sys.stderr)
            return 2
        model_zoo.RESIDUAL_BRANCH_SCALE = args.residual_scale
    skipped = [s.strip() for s in args.skip.split(",") if s.strip()]
    steps = {"calibrate_layers": lambda *_: 0, "condition": lambda *_: 0.0}
    for step in skipped:
        if step not in steps or not args.torch_only:
            print(f"zoo_precision: error: --skip takes {', '.join(steps)} "
                  f"with --torch-only, got: {step}", file=sys.stderr)
            return 2
        setattr(model_zoo, step, steps[step])
    if args.torch_only:
        return 1 if check_conditioning(names, args.atol, args.rtol,
                                       args.margin) else 0
    failed = 0
    for name in names:
        try:
            failed += check_model(args, name)
        except NotImplementedError as e:
            print(f"{name}: error: {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
