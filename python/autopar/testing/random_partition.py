#!/usr/bin/env python3
# ===- random_partition.py - randomized differential test of the partitioner -=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===-------------------------------------------------------------------------=== #
"""Randomized differential test of autopar's planner and partitioner.

Each case is a random small ONNX model (opset 17, static shapes, float32)
built from the ops autopar supports: MatMul (2-D, batched, 1-D operands), Gemm
(transA/transB/alpha/beta, C of shape [], [N], [1,N], [M,1] or [M,N]), Add
(numpy broadcasting) and Relu. Weights are initializers; there are one or two
runtime inputs and one or two outputs; values are reused by several consumers
so the graphs are DAGs, not just chains. Dimension sizes are mostly multiples
of 4 (they divide grids 1, 2, 4 and 2x2); some models have a size that does
not divide.

For every grid of 1, 2, 4 and 2x2 devices the case writes a random plan file
(docs/plan-format.md) pinning a random subset of the values (runtime inputs,
initializers, node outputs) to random shardings (splits that divide; pending
sums on MatMul/Gemm results, runtime inputs and weights), and runs

    autopar verify MODEL --grid G --plan PLAN --seed S --inputs DIR

which compiles and runs the partitioned and the single-device programs and
compares their outputs. DIR holds the inputs and the outputs of a numpy
evaluation of the model, so every run also checks the single-device program
against an independent reference. One more run per case uses a built-in plan
(data, tensor or replicated, in turn) on a random grid.

A valid plan must give exit code 0. Some plans are invalid on purpose (a
pending sum on an op with no reduction, a grid axis off the grid or used
twice, a wrong rank, a split that does not divide): they must give exit code 2
with one `autopar: error: ...` line, first on stderr, that names the value,
and no crash.

Prints one line per case and ends with
`random-partition: N cases, N passed, N failed`. A failing case is kept under
--out (model, inputs, plans and a repro.sh with the failing commands). Exits 1
when a case failed.

    /usr/bin/python3 python/autopar/testing/random_partition.py \\
        --autopar build/bin/autopar --seed 1 --time-budget 60
"""

import argparse
import collections
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Grids every random plan runs on, and the grids of the built-in plans.
PLAN_GRIDS = [(1,), (2,), (4,), (2, 2)]
BUILTIN_GRIDS = [(2,), (4,), (2, 2)]
BUILTIN_PLANS = ["data", "tensor", "replicated"]

# Dimension sizes: multiples of 4, and sizes that do not divide 4 devices.
EVEN_SIZES = [4, 8, 12, 16]
UNEVEN_SIZES = [2, 3, 5, 6]

# Markers of a crash in autopar's output.
CRASH_MARKERS = ["Stack dump", "PLEASE submit", "Assertion", "Segmentation",
                 "LLVM ERROR", "Traceback", "terminate called"]


def grid_text(grid):
    return "x".join(str(s) for s in grid)


def group_size(axes, grid):
    n = 1
    for a in axes:
        n *= grid[a]
    return n


class Value:
    """A tensor of the model: a runtime input, an initializer or a node
    output. `reduction` is the contraction size of a MatMul/Gemm result (the
    loop a pending sum splits), None for every other value."""

    def __init__(self, name, shape, kind, op=None, reduction=None):
        self.name = name
        self.shape = tuple(shape)
        self.kind = kind
        self.op = op
        self.reduction = reduction

    @property
    def rank(self):
        return len(self.shape)


class Model:
    """A random model: its values, ONNX nodes and a numpy evaluation."""

    def __init__(self):
        self.values = []  # every Value, in definition order
        self.inputs = []  # runtime inputs (Value)
        self.weights = {}  # initializer name -> np.ndarray
        self.nodes = []  # (op, input names, output name, attributes)
        self.outputs = []  # output Values
        self.uneven = False  # has a size that does not divide 4

    def value(self, name):
        return next(v for v in self.values if v.name == name)

    def consumers(self, name):
        return [n for n in self.nodes if name in n[1]]

    def describe(self):
        ops = ",".join(n[0] for n in self.nodes)
        return (f"{len(self.nodes)} nodes [{ops}], {len(self.inputs)} inputs, "
                f"{len(self.weights)} weights, {len(self.outputs)} outputs"
                + (", uneven" if self.uneven else ""))

    def to_onnx(self):
        def info(v):
            return helper.make_tensor_value_info(v.name, TensorProto.FLOAT,
                                                 list(v.shape))
        nodes = [
            helper.make_node(op, ins, [out], name=out.rsplit("_output", 1)[0],
                             **attrs)
            for op, ins, out, attrs in self.nodes
        ]
        graph = helper.make_graph(
            nodes, "random_partition", [info(v) for v in self.inputs],
            [info(v) for v in self.outputs],
            initializer=[numpy_helper.from_array(a, n)
                         for n, a in self.weights.items()])
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)],
            producer_name="autopar random_partition")
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        return model

    def evaluate(self, feeds):
        """The outputs of the model on `feeds` (name -> array), computed in
        float64 by numpy and rounded to float32."""
        env = {n: a.astype(np.float64) for n, a in self.weights.items()}
        env.update({n: a.astype(np.float64) for n, a in feeds.items()})
        for op, ins, out, attrs in self.nodes:
            args = [env[n] for n in ins]
            if op == "MatMul":
                env[out] = np.matmul(args[0], args[1])
            elif op == "Add":
                env[out] = args[0] + args[1]
            elif op == "Relu":
                env[out] = np.maximum(args[0], 0.0)
            elif op == "Gemm":
                a = args[0].T if attrs.get("transA", 0) else args[0]
                b = args[1].T if attrs.get("transB", 0) else args[1]
                y = attrs.get("alpha", 1.0) * (a @ b)
                if len(args) == 3:
                    y = y + attrs.get("beta", 1.0) * args[2]
                env[out] = y
            else:
                raise AssertionError(f"unknown op {op}")
            assert env[out].shape == self.value(out).shape, (op, out)
        return [env[v.name].astype(np.float32) for v in self.outputs]


class ModelGenerator:
    """Builds a random Model from one random.Random."""

    def __init__(self, rng):
        self.rng = rng
        self.model = Model()
        self.uneven = rng.random() < 0.25
        self.max_inputs = rng.choice([1, 2])

    def size(self):
        if self.uneven and self.rng.random() < 0.3:
            self.model.uneven = True
            return self.rng.choice(UNEVEN_SIZES)
        return self.rng.choice(EVEN_SIZES)

    def add_value(self, value):
        self.model.values.append(value)
        return value

    def leaf(self, shape, allow_input=True):
        """A new runtime input or initializer of `shape`."""
        m = self.model
        # A runtime input is split along dimension 0 by the data plan, so it
        # needs one that is not a broadcast of size 1.
        if (allow_input and len(m.inputs) < self.max_inputs and len(shape) >= 1
                and shape[0] != 1 and self.rng.random() < 0.4):
            v = self.add_value(Value(f"x{len(m.inputs)}", shape, "input"))
            m.inputs.append(v)
            return v
        name = f"w{len(m.weights)}"
        fan_in = shape[-1] if shape else 1
        data = self.rng_np().uniform(-1, 1, size=shape) / np.sqrt(fan_in)
        m.weights[name] = np.asarray(data, dtype=np.float32)
        return self.add_value(Value(name, shape, "weight"))

    def rng_np(self):
        return np.random.default_rng(self.rng.getrandbits(32))

    def operand(self, shape, reuse=0.5):
        """An existing value of `shape` (reused), or a new leaf."""
        matches = [v for v in self.model.values if v.shape == tuple(shape)]
        if matches and self.rng.random() < reuse:
            return self.rng.choice(matches)
        return self.leaf(tuple(shape))

    def pick(self):
        """A value to extend the graph from, biased to recent node outputs.
        It is never a weight: every node then depends on a runtime input, so
        the importer cannot fold it away (with its pin) into a constant."""
        values = [v for v in self.model.values if v.kind != "weight"]
        nodes = [v for v in values if v.kind == "node"]
        if nodes and self.rng.random() < 0.6:
            return nodes[-1] if self.rng.random() < 0.5 else self.rng.choice(nodes)
        return self.rng.choice(values)

    def node(self, op, ins, shape, attrs=None, reduction=None):
        m = self.model
        out = f"/n{len(m.nodes)}/{op}_output_0"
        m.nodes.append((op, [v.name for v in ins], out, attrs or {}))
        return self.add_value(Value(out, shape, "node", op, reduction))

    def matmul(self, p):
        rng = self.rng
        if p.rank == 0 or p.rank > 3:
            return None
        if rng.random() < 0.7 or p.rank == 1:
            # p is A: [..., M, K] or [K].
            k = p.shape[-1]
            n = self.size()
            choices = [(k, n)]
            if rng.random() < 0.2:
                choices.append((k,))
            if p.rank == 3:
                choices += [(p.shape[0], k, n), (1, k, n)]
            elif p.rank == 2 and rng.random() < 0.5:
                choices.append((self.size(), k, n))
            b_shape = rng.choice(choices)
            a, b = p, self.operand(b_shape)
        else:
            # p is B: [..., K, N].
            k = p.shape[-2]
            choices = [(self.size(), k)]
            if rng.random() < 0.2:
                choices.append((k,))
            if p.rank == 3:
                choices += [(p.shape[0], self.size(), k), (1, self.size(), k)]
            a, b = self.operand(rng.choice(choices)), p
        shape = np.matmul(np.zeros(a.shape), np.zeros(b.shape)).shape
        if len(shape) > 3:
            return None
        return self.node("MatMul", [a, b], shape, reduction=a.shape[-1])

    def gemm(self, p):
        rng = self.rng
        if p.rank != 2:
            return None
        trans_a, trans_b = rng.random() < 0.3, rng.random() < 0.5
        if rng.random() < 0.75:
            a = p
            m, k = p.shape[::-1] if trans_a else p.shape
            n = self.size()
            b = self.operand((n, k) if trans_b else (k, n))
        else:
            b = p
            n, k = p.shape if trans_b else p.shape[::-1]
            m = self.size()
            a = self.operand((k, m) if trans_a else (m, k))
        attrs = {}
        if trans_a or rng.random() < 0.2:
            attrs["transA"] = int(trans_a)
        if trans_b or rng.random() < 0.2:
            attrs["transB"] = int(trans_b)
        if rng.random() < 0.4:
            attrs["alpha"] = rng.choice([0.5, 2.0, -1.0, 1.0])
        ins = [a, b]
        if rng.random() < 0.8:
            c_shape = rng.choice([(), (n,), (1, n), (m, 1), (m, n), (m, n)])
            ins.append(self.operand(c_shape, reuse=0.3))
            if rng.random() < 0.4:
                attrs["beta"] = rng.choice([0.5, 2.0, -1.0, 1.0])
        return self.node("Gemm", ins, (m, n), attrs, reduction=k)

    def add(self, p):
        rng = self.rng
        shape = list(p.shape)
        r = rng.random()
        if r < 0.1:
            other = p  # the same value twice
        elif r < 0.4:
            # Broadcast the other operand: drop leading dims, set some to 1.
            drop = rng.randint(0, len(shape))
            other_shape = [1 if rng.random() < 0.3 else s
                           for s in shape[drop:]]
            other = self.operand(other_shape)
        elif r < 0.55 and p.rank < 3:
            # p broadcasts against a larger operand.
            other = self.operand([self.size()] + shape)
        else:
            other = self.operand(shape)
        ins = [p, other] if rng.random() < 0.5 else [other, p]
        out = np.broadcast_shapes(ins[0].shape, ins[1].shape)
        return self.node("Add", ins, out)

    def relu(self, p):
        return self.node("Relu", [p], p.shape)

    def generate(self):
        rng = self.rng
        rank = rng.choice([1, 2, 2, 2, 3])
        # The first runtime input; its dimension 0 is split by the data plan.
        shape = (rng.choice(EVEN_SIZES),) + tuple(self.size()
                                                  for _ in range(rank - 1))
        m = self.model
        m.inputs.append(self.add_value(Value("x0", shape, "input")))
        target = rng.randint(2, 7)
        attempts = 0
        while len(m.nodes) < target and attempts < 100:
            attempts += 1
            op = rng.choices(["MatMul", "Gemm", "Add", "Relu"],
                             [0.3, 0.25, 0.25, 0.2])[0]
            p = self.pick()
            getattr(self, op.lower())(p)
        # Outputs: one or two node outputs nothing consumes (the last node's
        # first); a dead end left over becomes an output too, up to two.
        sinks = [v for v in m.values
                 if v.kind == "node" and not m.consumers(v.name)]
        m.outputs = sinks[::-1][:2]
        if len(m.outputs) == 1 and rng.random() < 0.3:
            extra = [v for v in m.values if v.kind == "node"
                     and v is not m.outputs[0]]
            if extra:
                m.outputs.append(rng.choice(extra))
        # Drop nodes that reach no output.
        live = {v.name for v in m.outputs}
        kept = []
        for node in reversed(m.nodes):
            if node[2] in live:
                kept.append(node)
                live.update(node[1])
        m.nodes = kept[::-1]
        m.values = [v for v in m.values if v.name in live]
        m.inputs = [v for v in m.inputs if v.name in live]
        m.weights = {n: a for n, a in m.weights.items() if n in live}
        if not m.inputs:
            return None
        return m


def random_sharding(rng, value, grid):
    """A random valid sharding of `value` on `grid`: (split, partial). Each
    grid axis splits one dimension it divides, or is a pending sum (results
    of MatMul/Gemm whose contraction it divides, runtime inputs, weights), or
    is unused."""
    split = [[] for _ in value.shape]
    partial = []
    axes = list(range(len(grid)))
    rng.shuffle(axes)
    for axis in axes:
        options = [None, None]
        for d, size in enumerate(value.shape):
            if size % (group_size(split[d], grid) * grid[axis]) == 0:
                options.append(d)
        if (value.reduction is not None and
                value.reduction % (group_size(partial, grid) * grid[axis]) == 0):
            options += ["partial", "partial"]
        elif value.kind != "node" and rng.random() < 0.3:
            # A runtime input or weight may be pinned as a pending sum: one
            # device holds it, the others zeros.
            options.append("partial")
        choice = rng.choice(options)
        if choice == "partial":
            partial.append(axis)
        elif choice is not None:
            split[choice].append(axis)
    return split, sorted(partial)


def invalid_pin(rng, model, grid):
    """An invalid pin for some value on `grid`: (name, entry, why), or None
    when the model offers no pin of the chosen kind."""
    kinds = ["pending sum without reduction", "axis off the grid",
             "wrong rank", "axis used twice", "split does not divide",
             "pending sum does not divide"]
    kind = rng.choice(kinds)
    values = model.values
    ndim = len(grid)
    if kind == "pending sum without reduction":
        vs = [v for v in values if v.kind == "node" and v.reduction is None]
        if not vs:
            return None
        v = rng.choice(vs)
        return v.name, {"split": [[] for _ in v.shape], "partial": [0]}, kind
    if kind == "axis off the grid":
        v = rng.choice(values)
        if v.rank == 0 or (v.reduction is not None and rng.random() < 0.5):
            return v.name, {"split": [[] for _ in v.shape],
                            "partial": [ndim]}, kind
        split = [[] for _ in v.shape]
        split[rng.randrange(v.rank)] = [ndim]
        return v.name, {"split": split}, kind
    if kind == "wrong rank":
        v = rng.choice(values)
        split = [[] for _ in range(v.rank + rng.choice([-1, 1]))]
        if v.rank == 0:
            split = [[]]
        return v.name, {"split": split, "partial": []}, kind
    if kind == "axis used twice":
        v = rng.choice([v for v in values if v.rank >= 1])
        split = [[] for _ in v.shape]
        r = rng.random()
        if r < 0.3:
            split[0] = [0, 0]
            return v.name, {"split": split}, kind
        if r < 0.6 and v.rank >= 2:
            split[0], split[1] = [0], [0]
            return v.name, {"split": split}, kind
        split[rng.randrange(v.rank)] = [0]
        return v.name, {"split": split, "partial": [0]}, kind
    if kind == "split does not divide":
        cands = [(v, d, a) for v in values for d, s in enumerate(v.shape)
                 for a in range(ndim) if s % grid[a] != 0]
        if not cands:
            return None
        v, d, a = rng.choice(cands)
        split = [[] for _ in v.shape]
        split[d] = [a]
        return v.name, {"split": split}, kind
    # A pending sum whose contraction does not divide the axis.
    cands = [(v, a) for v in values if v.reduction is not None
             for a in range(ndim) if v.reduction % grid[a] != 0]
    if not cands:
        return None
    v, a = rng.choice(cands)
    return v.name, {"split": [[] for _ in v.shape], "partial": [a]}, kind


def random_plan(rng, model, grid, invalid):
    """A plan file's object for `grid`, why it is invalid and the value whose
    pin makes it so (None, None for a valid plan)."""
    plan = {"schema_version": 1, "values": {}}
    density = rng.choice([0.2, 0.4, 0.7])
    for v in model.values:
        if rng.random() >= density:
            continue
        split, partial = random_sharding(rng, v, grid)
        entry = {"split": split}
        if partial or rng.random() < 0.5:
            entry["partial"] = partial
        plan["values"][v.name] = entry
    why = culprit = None
    if invalid:
        pin = invalid_pin(rng, model, grid)
        if pin:
            name, entry, why = pin
            plan["values"][name] = entry
            # A split that does not divide may be reported on a value that
            # follows the pin and is defined before it (a weight it splits).
            if "divide" not in why:
                culprit = name
    return plan, why, culprit


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def check_run(proc, expect, culprit=None):
    """None when a finished verify matches `expect` ('ok', 'error' or
    'either'), else what went wrong. An error must name `culprit`, the value
    whose pin is invalid."""
    out = proc.stdout + proc.stderr
    for marker in CRASH_MARKERS:
        if marker in out:
            return f"crash ('{marker}')"
    rc = proc.returncode
    if rc == 0:
        if expect == "error":
            return "accepted an invalid plan (exit 0)"
        if "reference '" not in proc.stdout:
            return "no reference comparison in the output"
        return None
    if rc == 2:
        lines = proc.stderr.splitlines()
        errors = [l for l in lines if l.startswith("autopar: error: ")]
        if len(errors) != 1 or not lines[0].startswith("autopar: error: "):
            return "exit 2 without one 'autopar: error:' line first"
        if expect == "ok":
            return f"rejected a valid plan: {errors[0]}"
        if culprit and culprit not in proc.stderr:
            return f"the error does not name '{culprit}': {errors[0]}"
        return None
    if rc == 1:
        return "outputs differ (exit 1)"
    return f"exit code {rc}"


def run_case(args, seed, index, workdir, stats):
    """Generates and runs one case; returns (ok, line, failing commands).
    Counts the runs and the collectives of the accepted plans in `stats`."""
    rng = random.Random(f"{seed}:{index}")
    model = None
    while model is None:
        model = ModelGenerator(rng).generate()
    os.makedirs(workdir, exist_ok=True)
    model_path = os.path.join(workdir, "model.onnx")
    onnx.save(model.to_onnx(), model_path)

    # Inputs and the numpy reference outputs, in the ONNX test-data layout.
    data_dir = os.path.join(workdir, "data")
    os.makedirs(data_dir, exist_ok=True)
    nprng = np.random.default_rng(rng.getrandbits(32))
    feeds = {}
    for i, v in enumerate(model.inputs):
        feeds[v.name] = nprng.uniform(-1, 1, size=v.shape).astype(np.float32)
        write_tensor(os.path.join(data_dir, f"input_{i}.pb"), feeds[v.name],
                     v.name)
    for i, (v, y) in enumerate(zip(model.outputs, model.evaluate(feeds))):
        write_tensor(os.path.join(data_dir, f"output_{i}.pb"), y, v.name)

    runs = []  # (grid, plan argument, expectation, culprit, what)
    for grid in PLAN_GRIDS:
        plan, why, culprit = random_plan(rng, model, grid,
                                         rng.random() < 0.15)
        path = os.path.join(workdir, f"plan-{grid_text(grid)}.json")
        with open(path, "w") as f:
            json.dump(plan, f, indent=1)
        pinned = len(plan["values"])
        runs.append((grid, path, "error" if why else "ok", culprit,
                     f"{pinned} pinned" + (f", invalid: {why}" if why else "")))
    builtin = BUILTIN_PLANS[index % len(BUILTIN_PLANS)]
    grid = rng.choice(BUILTIN_GRIDS)
    # The data plan splits dimension 0 of every runtime input; the tensor
    # plan's splits are not predicted on a model with uneven sizes.
    expect = "ok"
    if builtin == "data":
        devices = group_size(range(len(grid)), grid)
        if any(v.rank >= 1 and v.shape[0] % devices for v in model.inputs):
            expect = "error"
    elif builtin == "tensor" and model.uneven:
        expect = "either"
    runs.append((grid, builtin, expect, None, builtin))

    failures = []
    verify_seed = rng.randrange(1000)
    for grid, plan, expect, culprit, what in runs:
        cmd = [args.autopar, "verify", model_path, "--grid", grid_text(grid),
               "--plan", plan, "--seed", str(verify_seed), "--inputs", data_dir,
               "--timeout", str(args.run_timeout)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=args.run_timeout + 60)
            problem = check_run(proc, expect, culprit)
            log = proc.stdout + proc.stderr
            stats["runs"] += 1
            stats["accepted" if proc.returncode == 0 else "rejected"] += 1
            for kind in re.findall(r"<- (\w+) axes=", proc.stdout):
                stats[kind] += 1
        except subprocess.TimeoutExpired:
            problem, log = "timed out", ""
        if problem:
            failures.append((cmd, f"grid {grid_text(grid)} ({what}): {problem}",
                             log))
    line = (f"case {index} (seed {seed}): {model.describe()}; "
            f"{len(runs)} runs")
    if failures:
        line += "; FAIL: " + "; ".join(f[1] for f in failures)
    else:
        line += "; ok"
    return not failures, line, failures


def keep_failure(out_dir, workdir, name, failures):
    dest = os.path.join(out_dir, name)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(workdir, dest)
    with open(os.path.join(dest, "repro.sh"), "w") as f:
        f.write("#!/bin/sh\n# Failing runs of this case; each rerun from "
                "this directory.\ncd \"$(dirname \"$0\")\"\n")
        for cmd, problem, _ in failures:
            rel = [os.path.relpath(c, workdir) if c.startswith(workdir) else c
                   for c in cmd]
            f.write(f"# {problem}\n{shlex.join(rel)}\n")
    with open(os.path.join(dest, "log.txt"), "w") as f:
        for cmd, problem, log in failures:
            f.write(f"$ {shlex.join(cmd)}\n# {problem}\n{log}\n")
    return dest


def main():
    parser = argparse.ArgumentParser(
        description="Randomized differential test of autopar's partitioner.")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the random cases (default 0)")
    parser.add_argument("--cases", type=int, default=0,
                        help="number of cases (default: as many as the "
                             "time budget allows)")
    parser.add_argument("--time-budget", type=float, default=60.0,
                        help="seconds after which no new case starts "
                             "(default 60; 0: no limit)")
    parser.add_argument("--out", default=None,
                        help="directory that keeps failing cases (default: a "
                             "new temporary directory)")
    parser.add_argument("--autopar", default="autopar",
                        help="the autopar command (default: autopar on PATH)")
    parser.add_argument("--run-timeout", type=int, default=120,
                        help="seconds one MPI job may run (default 120)")
    args = parser.parse_args()
    if args.cases <= 0 and args.time_budget <= 0:
        parser.error("give --cases or --time-budget")
    autopar = shutil.which(args.autopar)
    if not autopar:
        parser.error(f"autopar command '{args.autopar}' not found")
    args.autopar = os.path.abspath(autopar)

    start = time.monotonic()
    passed = failed = 0
    stats = collections.Counter()
    kept = []
    scratch = tempfile.mkdtemp(prefix="autopar-random-")
    out_dir = args.out or tempfile.mkdtemp(prefix="autopar-random-failures-")
    try:
        index = 0
        while True:
            if args.cases and index >= args.cases:
                break
            elapsed = time.monotonic() - start
            if index and args.time_budget > 0:
                per_case = elapsed / index
                if elapsed + per_case > args.time_budget:
                    break
            workdir = os.path.join(scratch, f"case-{index}")
            ok, line, failures = run_case(args, args.seed, index, workdir,
                                          stats)
            print(line, flush=True)
            if ok:
                passed += 1
            else:
                failed += 1
                os.makedirs(out_dir, exist_ok=True)
                kept.append(keep_failure(out_dir, workdir,
                                         f"seed{args.seed}-case{index}",
                                         failures))
            shutil.rmtree(workdir, ignore_errors=True)
            index += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for path in kept:
        print(f"kept failing case: {path}")
    kinds = sorted(k for k in stats
                   if k not in ("runs", "accepted", "rejected"))
    print(f"random-partition: {stats['runs']} verify runs, "
          f"{stats['accepted']} plans accepted, {stats['rejected']} rejected; "
          "collectives: " + (", ".join(f"{k}={stats[k]}" for k in kinds)
                             or "none"))
    if not kept and not args.out:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(f"random-partition: {passed + failed} cases, {passed} passed, "
          f"{failed} failed ({time.monotonic() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
