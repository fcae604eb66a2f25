#!/usr/bin/env python3
# ===- onnx_node_tests.py - ONNX backend node tests through autopar -------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Runs the ONNX backend node tests through `autopar` on one device.

The node tests are those shipped by Debian's `libonnx-testdata`
(`/usr/share/libonnx-testdata/data/node/<test>/model.onnx` with
`test_data_set_0/{input,output}_<i>.pb`). A test is selected when it is a
float32 test: every graph input, output and initializer is a tensor of
float32, int64, int32 or bool, and at least one graph input or output is
float32 (issue 12's selection). The quantized tests form a second selection,
reported on their own line: every tensor is one of those types or int8/uint8,
and at least one is int8 or uint8.

Every selected test is compiled and run on one device:

    autopar compile model.onnx --grid 1 -o TMP/compiled
    autopar run TMP/compiled --inputs test_data_set_0 --outputs TMP/out

and every output_<i>.pb is compared with the reference with ONNX's own
tolerances, |actual - expected| <= atol + rtol * |expected| with rtol 1e-3,
atol 1e-7 (NaN matches NaN; integer and bool outputs must be equal; shapes
and element types must be equal). A few tests get looser tolerances where
float32 summation order demands it (TOLERANCE_OVERRIDES, each with its
reason).

Each test is classified as
    pass         every output matches,
    fail         an output does not match (mismatch),
    error        autopar failed (compile or run) other than for an operator
                 it does not support, or the test timed out,
    unsupported  autopar rejected an operator of the model ("unsupported
                 operator"): the set of supported operators is read from
                 autopar itself, so newly supported operators are picked up
                 without changing this script.

Tests are grouped by the operator they test: the single operator of a
one-node graph, else the operator named by the test (`test_reduce_sum_...`
is ReduceSum); function-expanded tests (`..._expanded`) form their own row
`<Op> (expanded)`.

The list of expected failures (`--expected-failures`, one test per line,
`test_name  # reason`) keeps the sweep honest: the script exits with 1 when a
test that is not listed fails or errors, or when a listed test passes;
`--update-expected` rewrites the list from the results (keeping the reasons
already written). With `--sample K` only up to K tests per row run (evenly
spread over the row's sorted names: deterministic), for CI.

Outputs: one line per test and a summary on stdout; `--markdown` writes the
per-operator report (docs/onnx-node-tests.md), `--json` the results in
machine-readable form. Regenerate the report with

    /usr/bin/python3 python/autopar/testing/onnx_node_tests.py \\
        --autopar build/bin/autopar \\
        --expected-failures test/Driver/Inputs/onnx-node-expected-failures.txt \\
        --markdown docs/onnx-node-tests.md --json docs/onnx-node-tests.json

Needs `python3-onnx` and `python3-numpy` (Debian's: run with /usr/bin/python3).
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy
import onnx
import onnx.defs
from onnx import numpy_helper

DEFAULT_DATA_DIR = "/usr/share/libonnx-testdata/data/node"
RTOL = 1e-3
ATOL = 1e-7

# Tests whose reference was computed in another summation order than a
# float32 program can reproduce: test name -> (rtol, atol, reason).
TOLERANCE_OVERRIDES = {}

ALLOWED_TYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.INT64,
    onnx.TensorProto.INT32,
    onnx.TensorProto.BOOL,
}

# The element types of the quantized selection, on top of ALLOWED_TYPES.
QUANTIZED_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.UINT8}

# The selections a test can belong to, in report order.
SELECTIONS = ("float32", "int8/uint8")

# Tests left out of the selection (issue 12): their outputs are random or
# have data-dependent shapes. Test-name pattern -> reason.
OUT_OF_SCOPE = [
    (r"^test_bernoulli", "random output (Bernoulli)"),
    (r"^test_training_dropout(?!_zero_ratio)",
     "random mask (Dropout in training mode with a non-zero ratio)"),
    (r"^test_nonmaxsuppression", "data-dependent output shape (NonMaxSuppression)"),
    (r"^test_unique", "data-dependent output shape (Unique)"),
]


def out_of_scope_reason(name):
    for pattern, reason in OUT_OF_SCOPE:
        if re.search(pattern, name):
            return reason
    return None

# Test-name spellings that are neither the snake_case nor the lowercase form
# of the operator's name.
NAME_ALIASES = {
    "batchnorm": "BatchNormalization",
    "instancenorm": "InstanceNormalization",
    "nllloss": "NegativeLogLikelihoodLoss",
    "sce": "SoftmaxCrossEntropyLoss",
    "less_equal": "LessOrEqual",
    "greater_equal": "GreaterOrEqual",
    "logsoftmax": "LogSoftmax",
    "mvn": "MeanVarianceNormalization",
    "shrink": "Shrink",
}

STATUSES = ("pass", "fail", "error", "unsupported")

# The operators of the frontend issue (issue 3), whose node tests must reach
# a 95% pass rate; the report gives their rate separately.
ISSUE_OPS = set("""
Abs Add Sub Mul Div Pow Sqrt Reciprocal Exp Log Neg Relu LeakyRelu Sigmoid
Tanh Erf Gelu Clip Softmax LogSoftmax LayerNormalization BatchNormalization
MatMul Gemm Conv MaxPool AveragePool GlobalAveragePool Transpose Reshape
Flatten Squeeze Unsqueeze Concat Split Slice Gather Expand Where Cast
ReduceMean ReduceSum ReduceMax Identity Dropout Equal Less Greater Not And
Constant ConstantOfShape Shape Range Einsum""".split())

REGENERATE = """\
scripts/setup.sh   # or: ninja -C build
/usr/bin/python3 python/autopar/testing/onnx_node_tests.py --autopar build/bin/autopar \\
    --expected-failures test/Driver/Inputs/onnx-node-expected-failures.txt \\
    --markdown docs/onnx-node-tests.md --json docs/onnx-node-tests.json"""

# --------------------------------------------------------------------------- #
# Selection and grouping
# --------------------------------------------------------------------------- #


def snake_case(name):
    """LayerNormalization -> layer_normalization."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def operator_spellings():
    """Maps each spelling of an ONNX operator in test names to its name."""
    spellings = dict(NAME_ALIASES)
    for schema in onnx.defs.get_all_schemas():
        if schema.domain not in ("", "ai.onnx"):
            continue
        spellings.setdefault(snake_case(schema.name), schema.name)
        spellings.setdefault(schema.name.lower(), schema.name)
    return spellings


def operator_from_name(name, spellings):
    """The operator a test name starts with (longest match), or None."""
    stem = name[len("test_"):] if name.startswith("test_") else name
    stem = stem.lower()
    best = None
    for spelling, op in spellings.items():
        if stem == spelling or stem.startswith(spelling + "_"):
            if best is None or len(spelling) > len(best[0]):
                best = (spelling, op)
    return best[1] if best else None


def tensor_type(value_info):
    """The element type of a graph value, or None when it is no tensor."""
    if not value_info.type.HasField("tensor_type"):
        return None
    return value_info.type.tensor_type.elem_type


def describe_test(data_dir, name, spellings):
    """Reads one test's model; returns its record, or None when the test is
    in neither selection (float32, int8/uint8)."""
    test_dir = os.path.join(data_dir, name)
    model_path = os.path.join(test_dir, "model.onnx")
    data_set = os.path.join(test_dir, "test_data_set_0")
    if not os.path.isfile(model_path) or not os.path.isdir(data_set):
        return None
    model = onnx.load(model_path, load_external_data=False)
    graph = model.graph
    io_types = [tensor_type(v) for v in list(graph.input) + list(graph.output)]
    init_types = [t.data_type for t in graph.initializer]
    all_types = io_types + init_types
    if any(t is None or t not in ALLOWED_TYPES | QUANTIZED_TYPES
           for t in all_types):
        return None
    if any(t in QUANTIZED_TYPES for t in all_types):
        selection = "int8/uint8"
    elif onnx.TensorProto.FLOAT in io_types:
        selection = "float32"
    else:
        return None
    # Operators of the default domain only (not ai.onnx.preview.training).
    if any(n.domain not in ("", "ai.onnx") for n in graph.node):
        return None
    node_ops = [n.op_type for n in graph.node]
    ops = sorted(set(node_ops))
    expanded = name.endswith("_expanded")
    compute = [op for op in node_ops if op != "Constant"]
    if not expanded and len(compute) == 1:
        op = compute[0]
    elif not expanded and len(node_ops) == 1:
        op = node_ops[0]
    else:
        stem = name[: -len("_expanded")] if expanded else name
        op = operator_from_name(stem, spellings) or "+".join(ops)
        if expanded:
            op += " (expanded)"
    return {
        "name": name,
        "op": op,
        "ops": ops,
        "selection": selection,
        "dir": test_dir,
        "inputs": [v.name for v in graph.input],
    }


def select_tests(data_dir, name_filter):
    """Returns (selected tests, {name: reason} of the float32 tests left out
    as out of scope)."""
    spellings = operator_spellings()
    tests, left_out = [], {}
    for name in sorted(os.listdir(data_dir)):
        if name_filter and not re.search(name_filter, name):
            continue
        record = describe_test(data_dir, name, spellings)
        if not record:
            continue
        reason = out_of_scope_reason(name)
        if reason:
            left_out[name] = reason
        else:
            tests.append(record)
    return tests, left_out


def sample_tests(tests, per_op):
    """Up to `per_op` tests of each row, evenly spread over its sorted
    names (always the first)."""
    rows = {}
    for test in tests:
        rows.setdefault(test["op"], []).append(test)
    chosen = []
    for op in sorted(rows):
        row = rows[op]
        if len(row) <= per_op:
            chosen.extend(row)
            continue
        indices = sorted({(i * len(row)) // per_op for i in range(per_op)})
        chosen.extend(row[i] for i in indices)
    return sorted(chosen, key=lambda t: t["name"])


# --------------------------------------------------------------------------- #
# Running one test
# --------------------------------------------------------------------------- #


def run_command(args, timeout):
    """Runs `args` in its own process group; returns (returncode, output,
    timed_out). On timeout the whole group is killed."""
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=max(timeout, 1))
        return proc.returncode, out.decode(errors="replace"), False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return -1, out.decode(errors="replace"), True


def error_reason(output):
    """The first `autopar: error:` line of `output`, without the prefix
    and with the test's paths shortened."""
    for line in output.splitlines():
        if "error:" in line:
            text = line.split("error:", 1)[1].strip()
            return re.sub(r"'[^']*/(model\.onnx|compiled|out)'", r"'\1'", text)
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def load_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def compare_outputs(test, out_dir, rtol, atol):
    """Returns (status, reason, max_abs_err, max_rel_err)."""
    ref_dir = os.path.join(test["dir"], "test_data_set_0")
    max_abs = 0.0
    max_rel = 0.0
    problems = []
    index = 0
    while os.path.exists(os.path.join(ref_dir, f"output_{index}.pb")):
        expected = load_tensor(os.path.join(ref_dir, f"output_{index}.pb"))
        actual_path = os.path.join(out_dir, f"output_{index}.pb")
        if not os.path.exists(actual_path):
            return "error", f"no output_{index}.pb written", None, None
        actual = load_tensor(actual_path)
        if actual.shape != expected.shape or actual.dtype != expected.dtype:
            problems.append(
                f"output {index}: {actual.dtype}{list(actual.shape)}, "
                f"expected {expected.dtype}{list(expected.shape)}"
            )
            index += 1
            continue
        if expected.size == 0:
            index += 1
            continue
        if expected.dtype.kind == "f":
            a = actual.astype(numpy.float64)
            b = expected.astype(numpy.float64)
            both_nan = numpy.isnan(a) & numpy.isnan(b)
            same = (a == b) | both_nan
            with numpy.errstate(invalid="ignore", divide="ignore"):
                err = numpy.where(same, 0.0, numpy.abs(a - b))
                err = numpy.where(numpy.isnan(err), numpy.inf, err)
                bound = atol + rtol * numpy.abs(b)
                rel = numpy.where(err > 0, err / numpy.abs(b), 0.0)
                rel = numpy.where(numpy.isnan(rel), numpy.inf, rel)
            # An infinite error (a NaN or infinity on one side only) never
            # matches, even against an infinite bound.
            bad = int(numpy.count_nonzero((err > bound) | numpy.isinf(err)))
            max_abs = max(max_abs, float(err.max()))
            max_rel = max(max_rel, float(rel.max()))
        else:
            mismatch = actual != expected
            bad = int(numpy.count_nonzero(mismatch))
            if bad:
                diff = numpy.abs(actual.astype(numpy.float64) - expected)
                max_abs = max(max_abs, float(diff.max()))
        if bad:
            problems.append(f"output {index}: {bad} of {expected.size} elements differ")
        index += 1
    if index == 0:
        return "error", "the test has no reference output", None, None
    if problems:
        reason = "; ".join(problems)
        return "fail", f"{reason} (max_abs_err={max_abs:.3e})", max_abs, max_rel
    return "pass", "", max_abs, max_rel


CONSTANT_INPUT_RE = re.compile(r"tensor '([^']+)'\) must be a compile-time constant")


def fold_inputs(test, names, work):
    """Writes a copy of the test's model in which the graph inputs `names`
    are initializers holding their values from test_data_set_0, and a data
    directory with the remaining inputs; returns (model, data_dir)."""
    data_set = os.path.join(test["dir"], "test_data_set_0")
    model = onnx.load(os.path.join(test["dir"], "model.onnx"),
                      load_external_data=False)
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    runtime = [v for v in graph.input if v.name not in initializers]
    kept = []
    for index, value in enumerate(runtime):
        path = os.path.join(data_set, f"input_{index}.pb")
        if value.name in names:
            tensor = onnx.TensorProto()
            with open(path, "rb") as f:
                tensor.ParseFromString(f.read())
            tensor.name = value.name
            graph.initializer.append(tensor)
            graph.input.remove(value)
        else:
            kept.append(path)
    folded_dir = os.path.join(work, "folded")
    shutil.rmtree(folded_dir, ignore_errors=True)
    data_dir = os.path.join(folded_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    for index, path in enumerate(kept):
        os.symlink(path, os.path.join(data_dir, f"input_{index}.pb"))
    model_path = os.path.join(folded_dir, "model.onnx")
    onnx.save(model, model_path)
    return model_path, data_dir


def input_ancestors(test, name):
    """The graph inputs tensor `name` of the test's model is computed from
    (`name` itself when it is one), in graph order."""
    model = onnx.load(os.path.join(test["dir"], "model.onnx"),
                      load_external_data=False)
    producers = {out: node for node in model.graph.node for out in node.output}
    inputs = [v.name for v in model.graph.input]
    seen, stack = set(), [name]
    while stack:
        tensor = stack.pop()
        if tensor in seen or not tensor:
            continue
        seen.add(tensor)
        if tensor in producers:
            stack.extend(producers[tensor].input)
    return [n for n in inputs if n in seen]


def compile_test(test, autopar, work, compiled, timeout, fold):
    """Compiles the test's model for one device. When autopar says that a
    graph input must be a compile-time constant (the node tests feed shapes,
    axes, starts, split sizes as inputs) and `fold` is set, that input
    becomes an initializer with the test's value and the compile is retried.
    Returns (code, output, timed_out, data_dir, folded input names)."""
    model = os.path.join(test["dir"], "model.onnx")
    data_dir = os.path.join(test["dir"], "test_data_set_0")
    graph_inputs = set(test["inputs"])
    folded = []
    while True:
        code, output, timed_out = run_command(
            [autopar, "compile", model, "--grid", "1", "-o", compiled], timeout)
        if code == 0 or timed_out or not fold:
            return code, output, timed_out, data_dir, folded
        match = CONSTANT_INPUT_RE.search(output)
        if not match:
            return code, output, timed_out, data_dir, folded
        # The tensor, or the graph inputs it is computed from (a shape
        # computation on a runtime input, as in function-expanded tests).
        names = [n for n in input_ancestors(test, match.group(1))
                 if n in graph_inputs and n not in folded]
        if not names:
            return code, output, timed_out, data_dir, folded
        folded.extend(names)
        model, data_dir = fold_inputs(test, set(folded), work)


def run_test(test, autopar, work_root, timeout, keep, fold):
    """Compiles, runs and checks one test; returns its result record."""
    start = time.monotonic()
    work = tempfile.mkdtemp(prefix=test["name"] + ".", dir=work_root)
    compiled = os.path.join(work, "compiled")
    out_dir = os.path.join(work, "out")
    rtol, atol = RTOL, ATOL
    if test["name"] in TOLERANCE_OVERRIDES:
        rtol, atol, _ = TOLERANCE_OVERRIDES[test["name"]]
    result = {
        "name": test["name"],
        "op": test["op"],
        "ops": test["ops"],
        "selection": test["selection"],
        "status": "error",
        "reason": "",
        "max_abs_err": None,
        "max_rel_err": None,
        "rtol": rtol,
        "atol": atol,
    }
    try:
        code, output, timed_out, data_dir, folded = compile_test(
            test, autopar, work, compiled, timeout, fold)
        result["constant_inputs"] = folded
        if timed_out:
            result["reason"] = f"compile timed out after {timeout} s"
            return result
        if code != 0:
            reason = error_reason(output)
            result["status"] = ("unsupported" if "unsupported operator" in reason
                                else "error")
            result["reason"] = "compile: " + reason
            return result
        left = max(1, int(timeout - (time.monotonic() - start)))
        code, output, timed_out = run_command(
            [autopar, "run", compiled, "--inputs", data_dir, "--outputs", out_dir,
             "--timeout", str(left)], left + 15)
        if timed_out or "timed out" in output:
            result["reason"] = f"run timed out after {timeout} s in all"
            return result
        if code != 0:
            result["reason"] = "run: " + error_reason(output)
            return result
        status, reason, max_abs, max_rel = compare_outputs(test, out_dir, rtol, atol)
        result.update(status=status, reason=reason, max_abs_err=max_abs,
                      max_rel_err=max_rel)
        return result
    except Exception as e:  # A broken test must not stop the sweep.
        result["reason"] = f"harness: {type(e).__name__}: {e}"
        return result
    finally:
        result["seconds"] = round(time.monotonic() - start, 3)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------- #
# Expected failures
# --------------------------------------------------------------------------- #


def read_expected(path):
    """Returns ({name: reason}, header lines, problems)."""
    expected, header, problems = {}, [], []
    if not path:
        return expected, header, problems
    with open(path) as f:
        lines = f.read().splitlines()
    in_header = True
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            if in_header:
                header.append(line)
            continue
        in_header = False
        name, _, reason = stripped.partition("#")
        name, reason = name.strip(), reason.strip()
        if not reason:
            problems.append(f"{path}:{number}: '{name}' has no reason (name  # reason)")
        if name in expected:
            problems.append(f"{path}:{number}: '{name}' is listed twice")
        expected[name] = reason
    return expected, header, problems


def write_expected(path, header, results, old):
    lines = list(header)
    if lines and lines[-1].strip():
        lines.append("")
    failing = sorted((r for r in results if r["status"] in ("fail", "error")),
                     key=lambda r: r["name"])
    width = max([len(r["name"]) for r in failing] + [0])
    for r in failing:
        reason = old.get(r["name"]) or f"{r['status']}: {r['reason']}"
        lines.append(f"{r['name'].ljust(width)}  # {reason}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- #
# Reports
# --------------------------------------------------------------------------- #


def per_op_counts(results):
    rows = {}
    for r in results:
        row = rows.setdefault(r["op"], dict({s: 0 for s in STATUSES}, tests=0))
        row["tests"] += 1
        row[r["status"]] += 1
    return dict(sorted(rows.items(), key=lambda kv: kv[0].lower()))


def totals(rows):
    total = dict({s: 0 for s in STATUSES}, tests=0)
    for row in rows.values():
        for key in total:
            total[key] += row[key]
    return total


def pass_rate(total):
    supported = total["tests"] - total["unsupported"]
    return (100.0 * total["pass"] / supported) if supported else 0.0


def selected_rate(total):
    """Passing tests among all selected ones (issue 12's measure)."""
    return (100.0 * total["pass"] / total["tests"]) if total["tests"] else 0.0


def selection_totals(results, selection):
    return totals(per_op_counts(
        [r for r in results if r.get("selection", "float32") == selection]))


def write_markdown(path, results, expected, args, seconds):
    rows = per_op_counts(results)
    total = selection_totals(results, "float32")
    quantized = selection_totals(results, "int8/uint8")
    supported_rows = {op: row for op, row in rows.items()
                      if row["unsupported"] < row["tests"]}
    unsupported_rows = [op for op, row in rows.items()
                        if row["unsupported"] == row["tests"]]
    today = datetime.date.today().isoformat()
    out = []
    out.append("# ONNX backend node tests")
    out.append("")
    out.append(f"Generated on {today} by `python/autopar/testing/onnx_node_tests.py` "
               f"({total['tests']} float32 and {quantized['tests']} int8/uint8 "
               "node tests of `libonnx-testdata`, "
               f"{args.jobs} workers, {seconds:.0f} s). Regenerate with:")
    out.append("")
    out.append("```sh")
    out.append(REGENERATE)
    out.append("```")
    out.append("")
    out.append("Each test is compiled with `autopar compile --grid 1` and run "
               "with `autopar run` (one device: no `mpirun`), and every output "
               f"is compared with the reference (rtol {RTOL:.0e}, atol {ATOL:.0e}: "
               "ONNX's own tolerances; integer and bool outputs exactly). "
               "A test is selected when its graph inputs, outputs and "
               "initializers are float32, int64, int32 or bool tensors with "
               "at least one float32 input or output and its operators are "
               "in the default domain (issue 12's selection; bool-only tests "
               "of `And`/`Not` are not selected), and its outputs are neither "
               "random nor of a data-dependent shape (those are listed "
               "below as out of scope). The int8/uint8 selection (the "
               "quantized operators' tests) takes the tests whose tensors are "
               "of those types or int8/uint8, with at least one int8 or "
               "uint8; it is counted on its own line and its rows are in the "
               "table. *unsupported*: autopar "
               "rejected an operator of the model; *error*: autopar failed "
               "otherwise (an attribute, dtype or form it does not handle, a "
               "crash, a timeout); *fail*: the numbers do not match. Tests "
               "are grouped by the operator they test; `(expanded)` rows are "
               "the function-expanded forms of an operator.")
    out.append("")
    supported = total["tests"] - total["unsupported"]
    out.append(f"**Total: {total['pass']} of {total['tests']} selected tests "
               f"pass ({selected_rate(total):.1f}%)**; {total['pass']} of "
               f"{supported} tests of supported operators pass "
               f"({pass_rate(total):.1f}%); {total['fail']} fail, "
               f"{total['error']} error, {total['unsupported']} of "
               f"{total['tests']} selected tests use an unsupported operator.")
    out.append("")
    out.append(f"**int8/uint8 selection: {quantized['pass']} of "
               f"{quantized['tests']} tests pass "
               f"({selected_rate(quantized):.1f}%)**; {quantized['fail']} "
               f"fail, {quantized['error']} error, {quantized['unsupported']} "
               "use an unsupported operator.")
    out.append("")
    left_out = getattr(args, "left_out", {})
    if left_out:
        by_reason = {}
        for name, reason in left_out.items():
            by_reason.setdefault(reason, []).append(name)
        out.append(f"**Out of scope** ({len(left_out)} tests left out of the "
                   "selection): " + "; ".join(
                       f"{reason}: {len(names)}"
                       for reason, names in sorted(by_reason.items())) + ".")
        out.append("")
    missing = sorted(ISSUE_OPS - {op.replace(" (expanded)", "") for op in rows})
    issue = totals({op: row for op, row in rows.items()
                    if op.replace(" (expanded)", "") in ISSUE_OPS})
    out.append(f"Operators of issue 3 (its op list, expanded forms included): "
               f"{issue['pass']} of {issue['tests'] - issue['unsupported']} "
               f"pass ({pass_rate(issue):.1f}%), {issue['unsupported']} "
               "unsupported." + (
                   " Operators of the list without a selected test (no "
                   "float32 node test in this libonnx-testdata: bool-only, "
                   "int32, float64 or other dtypes, or a newer opset): " +
                   ", ".join(missing) + "."
                   if missing and not (args.filter or args.sample) else ""))
    out.append("")
    out.append("| Op | Tests | Pass | Fail | Error | Unsupported |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for op, row in supported_rows.items():
        out.append(f"| {op} | {row['tests']} | {row['pass']} | {row['fail']} | "
                   f"{row['error']} | {row['unsupported']} |")
    shown = totals(supported_rows)  # both selections
    out.append(f"| **total (these rows)** | {shown['tests']} | {shown['pass']} | "
               f"{shown['fail']} | {shown['error']} | {shown['unsupported']} |")
    out.append("")
    if unsupported_rows:
        out.append("Rows whose tests all use an unsupported operator "
                   "(tests in parentheses): " +
                   ", ".join(f"{op} ({rows[op]['tests']})" for op in unsupported_rows) +
                   ".")
        out.append("")
    out.append("**In CI.** `test/Driver/onnx-node-tests.test` (lit, end-to-end "
               "tier) runs this whole sweep with the list of expected "
               "failures, and so does `scripts/test.sh --all`. Should the "
               "sweep outgrow the test budget, the lit test takes `--sample K`: "
               "at most K tests per row, evenly spread over the row's sorted "
               "names (deterministic).")
    out.append("")
    folded = {}
    for r in results:
        if r.get("constant_inputs"):
            folded.setdefault(r["op"], []).append(r)
    if folded:
        count = sum(len(rs) for rs in folded.values())
        out.append(f"**Constant inputs.** {count} tests feed shapes, axes, "
                   "slice bounds, split sizes or clip bounds as graph inputs. "
                   "autopar compiles static shapes and rejects such an input "
                   "(`... must be a compile-time constant`), so the harness "
                   "turns each input it names into an initializer holding "
                   "the test's value and compiles again (what onnx-mlir's "
                   "backend tests call a constant input; `--no-constant-inputs` "
                   "turns this off). The outputs are still checked against "
                   "the test's references. Folded inputs per row: " +
                   "; ".join(
                       f"{op} ({len(rs)}: " + ", ".join(sorted(
                           {n for r in rs for n in r["constant_inputs"]})) + ")"
                       for op, rs in sorted(folded.items())) + ".")
        out.append("")
    failing = [r for r in results if r["status"] in ("fail", "error")]
    out.append("## Expected failures")
    out.append("")
    if failing:
        out.append("Listed with their reasons in "
                   "`test/Driver/Inputs/onnx-node-expected-failures.txt`; the "
                   "sweep fails when a test not listed there fails, or a "
                   "listed one passes.")
        out.append("")
        out.append("| Test | Op | Status | Reason |")
        out.append("|---|---|---|---|")
        for r in sorted(failing, key=lambda r: r["name"]):
            reason = expected.get(r["name"]) or r["reason"]
            reason = reason.replace("|", "\\|")
            out.append(f"| `{r['name']}` | {r['op']} | {r['status']} | {reason} |")
    else:
        out.append("None: every selected test of a supported operator passes.")
    out.append("")
    out.append("## Tolerance overrides")
    out.append("")
    if TOLERANCE_OVERRIDES:
        out.append("| Test | rtol | atol | Why |")
        out.append("|---|---:|---:|---|")
        for name, (rtol, atol, why) in sorted(TOLERANCE_OVERRIDES.items()):
            out.append(f"| `{name}` | {rtol:g} | {atol:g} | {why} |")
    else:
        out.append(f"None: every test is checked at rtol {RTOL:.0e}, atol {ATOL:.0e}.")
    out.append("")
    with open(path, "w") as f:
        f.write("\n".join(out))


def write_json(path, results, seconds, args):
    rows = per_op_counts(results)
    data = {
        "date": datetime.date.today().isoformat(),
        "data_dir": args.data_dir,
        "rtol": RTOL,
        "atol": ATOL,
        "seconds": round(seconds, 1),
        "sample_per_op": args.sample,
        "totals": totals(rows),
        "selections": {s: selection_totals(results, s) for s in SELECTIONS},
        "out_of_scope": getattr(args, "left_out", {}),
        "ops": rows,
        "tests": sorted(({k: v for k, v in r.items() if k != "ops"}
                         for r in results), key=lambda r: r["name"]),
    }
    tests = data.pop("tests")
    # One test per line: readable diffs between two sweeps.
    text = json.dumps(data, indent=1)[:-2]
    text += ',\n "tests": [\n' + ",\n".join(
        "  " + json.dumps(t, sort_keys=True) for t in tests) + "\n ]\n}\n"
    with open(path, "w") as f:
        f.write(text)


# --------------------------------------------------------------------------- #
# Main
# --------------------------------------------------------------------------- #


def report_result(r, listed, quiet):
    """Prints one test's line (in quiet mode only unexpected results)."""
    bad = r["status"] in ("fail", "error")
    if quiet and (not bad or listed):
        return
    errs = ""
    if r["max_abs_err"] is not None:
        errs = (f" max_abs_err={r['max_abs_err']:.3e}"
                f" max_rel_err={r['max_rel_err']:.3e}")
    tag = r["status"].upper() + (" (expected)" if listed and bad else "")
    reason = f": {r['reason']}" if r["reason"] else ""
    print(f"{tag}: {r['name']} [{r['op']}] {r['seconds']:.1f}s{errs}{reason}")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(
        description="Runs the ONNX backend node tests through autopar "
                    "(compile --grid 1, run) and compares their outputs.")
    parser.add_argument("--autopar", required=True, help="the autopar executable")
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                        help=f"node test directory (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--expected-failures", metavar="FILE",
                        help="tests expected to fail or error (name  # reason)")
    parser.add_argument("--update-expected", action="store_true",
                        help="rewrite --expected-failures from the results")
    parser.add_argument("--sample", type=int, metavar="K",
                        help="run at most K tests per operator row")
    parser.add_argument("--filter", metavar="REGEX",
                        help="only tests whose name matches REGEX")
    parser.add_argument("-j", "--jobs", type=int, default=2,
                        help="tests run in parallel (default: 2)")
    parser.add_argument("--timeout", type=int, default=120,
                        help="seconds per test, compile and run (default: 120)")
    parser.add_argument("--markdown", metavar="FILE", help="write the per-op report")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--work-dir", metavar="DIR",
                        help="where compiled tests go (default: a temporary dir)")
    parser.add_argument("--keep", action="store_true",
                        help="keep each test's compiled program and outputs")
    parser.add_argument("--no-constant-inputs", action="store_true",
                        help="do not turn graph inputs that autopar needs as "
                             "compile-time constants into initializers")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print only failures and the summary")
    args = parser.parse_args()

    if not os.path.isdir(args.data_dir):
        print(f"onnx_node_tests: error: no node tests in '{args.data_dir}' "
              "(apt-get install libonnx-testdata)", file=sys.stderr)
        return 2
    autopar = (args.autopar if os.path.dirname(args.autopar)
               else shutil.which(args.autopar) or args.autopar)
    if not os.access(autopar, os.X_OK):
        print(f"onnx_node_tests: error: '{args.autopar}' is not executable",
              file=sys.stderr)
        return 2
    autopar = os.path.abspath(autopar)
    if args.update_expected and (args.sample or args.filter):
        print("onnx_node_tests: error: --update-expected needs the full sweep "
              "(no --sample, no --filter)", file=sys.stderr)
        return 2
    if args.update_expected and not args.expected_failures:
        print("onnx_node_tests: error: --update-expected needs "
              "--expected-failures FILE", file=sys.stderr)
        return 2
    expected, header, problems = read_expected(args.expected_failures)
    for problem in problems:
        print(f"onnx_node_tests: error: {problem}", file=sys.stderr)
    if problems:
        return 2

    tests, left_out = select_tests(args.data_dir, args.filter)
    args.left_out = left_out
    selected = len(tests)
    quantized = sum(1 for t in tests if t["selection"] == "int8/uint8")
    if args.sample:
        tests = sample_tests(tests, args.sample)
    print(f"onnx_node_tests: {selected - quantized} float32 node tests selected "
          f"and {quantized} int8/uint8 ({len(left_out)} out of scope left out), "
          f"running {len(tests)} with {args.jobs} workers")
    sys.stdout.flush()

    work_root = args.work_dir or tempfile.mkdtemp(prefix="autopar-node-tests.")
    os.makedirs(work_root, exist_ok=True)
    results = []
    start = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_test, t, autopar, work_root, args.timeout,
                                   args.keep, not args.no_constant_inputs)
                       for t in tests]
            for future in concurrent.futures.as_completed(futures):
                r = future.result()
                results.append(r)
                report_result(r, r["name"] in expected, args.quiet)
    finally:
        if not args.work_dir and not args.keep:
            shutil.rmtree(work_root, ignore_errors=True)
    seconds = time.monotonic() - start

    # Honesty checks against the list of expected failures.
    unexpected, fixed, stale = [], [], []
    ran = {r["name"]: r for r in results}
    for r in results:
        bad = r["status"] in ("fail", "error")
        if bad and r["name"] not in expected:
            unexpected.append(r)
        if r["status"] == "pass" and r["name"] in expected:
            fixed.append(r)
    if not args.sample and not args.filter:
        stale = sorted(n for n in expected
                       if n not in ran or ran[n]["status"] == "unsupported")

    rows = per_op_counts(results)
    total = totals(rows)
    print(f"onnx_node_tests: {total['tests']} tests in {seconds:.1f} s: "
          f"pass={total['pass']} fail={total['fail']} error={total['error']} "
          f"unsupported={total['unsupported']} "
          f"(pass rate of supported: {pass_rate(total):.1f}%, "
          f"of all selected: {selected_rate(total):.1f}%)")
    for selection in SELECTIONS:
        part = selection_totals(results, selection)
        print(f"onnx_node_tests: {selection} selection: {part['pass']} of "
              f"{part['tests']} pass ({selected_rate(part):.1f}%), "
              f"fail={part['fail']} error={part['error']} "
              f"unsupported={part['unsupported']}")
    for r in unexpected:
        print(f"onnx_node_tests: unexpected {r['status']}: {r['name']}: {r['reason']}")
    for r in fixed:
        print(f"onnx_node_tests: expected to fail but passed: {r['name']} "
              "(remove it from the list)")
    for name in stale:
        print(f"onnx_node_tests: note: listed but not run or unsupported: {name}")

    if args.update_expected:
        write_expected(args.expected_failures, header, results, expected)
        expected, _, _ = read_expected(args.expected_failures)
        print(f"onnx_node_tests: wrote {args.expected_failures}")
        unexpected, fixed = [], []
    if args.markdown:
        write_markdown(args.markdown, results, expected, args, seconds)
    if args.json:
        write_json(args.json, results, seconds, args)
    if unexpected or fixed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
