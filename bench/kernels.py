#!/usr/bin/env python3
"""Kernel and model benchmark of autopar's generated code.

Prints the CPU model, then
- per matmul shape: GFLOP/s of autopar (one MatMul with a weight, compiled at
  --grid 1, run with 1 thread: pack of the activation, mmt4d, unpack) against
  OpenBLAS and oneDNN (bench/gemm_ref.c, 1 thread), measured in this run, and
  the same matmul compiled with `--precision bf16` (bf16 weight and
  activation, f32 accumulation): on a CPU with AVX512-BF16 as the dot
  products of bf16 pairs (vdpbf16ps, `AUTOPAR_CPU_ISA=avx512bf16`), on one
  with AMX also on AMX tiles (tdpbf16ps, `AUTOPAR_CPU_ISA=amx`, the host's
  own choice there), and with `AUTOPAR_CPU_ISA=avx512` (bf16 extended to
  f32, f32 FMAs), elsewhere the extension only;
- per model at one thread: step time of the f32 and the bf16 programs
  (`compile --precision bf16`, extension, dot products and AMX as above);
- per model (the MLP 4 x (1024 -> 4096 -> 1024) at batch 64, GPT-2 small at
  128 tokens, resnet18, mobilenet_v2 and a ViT-S/16 at 224x224, exported by
  the model zoo): step time of autopar (1 rank with the default threads, 1
  rank with 1 thread, 2 ranks with the tensor plan) against ONNX Runtime
  (onnxruntime-node) with 1 and 2 intra-op threads.

    /usr/bin/python3 bench/kernels.py [--autopar build/bin/autopar]
        [--ort-modules DIR] [--quick] [--only-precision]
        [--models mlp,resnet18_224,...] [--skip-matmul] [--skip-precision]
        [--one-thread] [--rounds N]

--models, --skip-matmul, --skip-precision and --one-thread run a part of the
tables (on a shared machine, one model row at a time). --rounds N (default 5)
runs every column of the model table once per round, side by side, and
reports medians: the speed of a VM changes within minutes.

--ort-modules: a folder whose node_modules holds onnxruntime-node@1.30.0
(`ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0`); without
it the ONNX Runtime columns are skipped (and said so). Exit code 1 when any
measurement fails. Not part of CI: it takes minutes and needs a quiet machine.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MATMUL_SHAPES = [  # (M, N, K)
    (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
    (128, 3072, 768), (128, 768, 3072), (128, 2304, 768), (128, 768, 768),
]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                return " ".join(f for f in flags
                                if f.startswith(("avx", "fma", "amx")))
    return ""


def run(cmd, env=None, timeout=1800):
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (
            " ".join(cmd[:3]), proc.returncode, (proc.stderr or proc.stdout)[-800:]))
    return proc.stdout


def matmul_model(path, m, n, k):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def write_input(path, shape):
    tensor = numpy_helper.from_array(
        np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32), "x")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "input_0.pb"), "wb") as f:
        f.write(tensor.SerializeToString())


def has_bf16_dot():
    """Whether this CPU has AVX512-BF16 (autopar's `auto` ISA then computes
    bf16 contractions as dot products of bf16 pairs)."""
    return "avx512_bf16" in cpu_flags().split()


def has_amx():
    """Whether this CPU has AMX tiles for bf16 (autopar's `auto` ISA then
    computes bf16 contractions on them)."""
    flags = cpu_flags().split()
    return has_bf16_dot() and "amx_tile" in flags and "amx_bf16" in flags


# The ways a bf16 program is compiled: (label, AUTOPAR_CPU_ISA).
# "ext": bf16 extended to f32 in registers, f32 FMAs (AVX-512F without
# BF16); "dot": vdpbf16ps (AVX512-BF16); "amx": tdpbf16ps on AMX tiles.
BF16_PATHS = [("ext", "avx512"), ("dot", "avx512bf16"), ("amx", "amx")]


def bf16_paths():
    """The bf16 paths this CPU can run."""
    if has_amx():
        return BF16_PATHS
    return BF16_PATHS[:2] if has_bf16_dot() else BF16_PATHS[:1]


def autopar_compile(autopar, model, work, name, grid, plan, precision="f32",
                    isa=None):
    """Compiles `model` into work/name; returns the folder."""
    out = os.path.join(work, name)
    run([autopar, "compile", model, "--grid", str(grid), "--plan", plan,
         "--precision", precision, "-o", out],
        env={"AUTOPAR_CPU_ISA": isa} if isa else None)
    return out


def autopar_step(autopar, model, work, name, grid, plan, threads, input_dir,
                 precision="f32", isa=None):
    out = autopar_compile(autopar, model, work, name, grid, plan, precision, isa)
    return autopar_run(autopar, out, threads, input_dir)


def autopar_run(autopar, out, threads, input_dir):
    """(step_time_s, cpu_time_s) of `autopar run --profile` on a compiled
    folder."""
    cmd = [autopar, "run", out, "--inputs", input_dir, "--outputs",
           out + "-out", "--profile"]
    if threads:
        cmd += ["--threads", str(threads)]
    text = run(cmd)
    figures = []
    for key in ("step_time_s", "cpu_time_s"):
        match = re.search(key + r"=([0-9.eE+-]+)", text)
        if not match:
            raise RuntimeError("no %s in the output of %s" % (key, out))
        if float(match.group(1)) <= 0:
            raise RuntimeError("non-positive %s for %s" % (key, out))
        figures.append(float(match.group(1)))
    return tuple(figures)


def ort_step(ort_modules, model, threads, repeats):
    text = run(["node", os.path.join(HERE, "ort_step.js"), model, str(threads),
                str(repeats)],
               env={"NODE_PATH": os.path.join(ort_modules, "node_modules")})
    figures = []
    for key in ("ort_step_s", "ort_cpu_s"):
        match = re.search(key + r"=([0-9.eE+-]+)", text)
        if not match or float(match.group(1)) <= 0:
            raise RuntimeError("no ONNX Runtime %s for %s" % (key, model))
        figures.append(float(match.group(1)))
    return tuple(figures)


# Published-size models (python/autopar/models/model_zoo.py LARGE_MODELS):
# (zoo name, label).
BENCH_MODELS = [
    ("gpt2_124m", "GPT-2 small (124M), 128 tokens"),
    ("resnet18_224", "resnet18, 1x3x224x224"),
    ("mobilenet_v2_224", "mobilenet_v2, 1x3x224x224"),
    ("vit_s16_224", "ViT-S/16, 1x3x224x224"),
]


def count_flops(model_path):
    """2 x the multiply-adds of the model's MatMul, Gemm and Conv nodes,
    from ONNX's inferred shapes."""
    model = onnx.shape_inference.infer_shapes(onnx.load(model_path, load_external_data=False))
    shapes = {}
    for value in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        shapes[value.name] = dims
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    flops = 0
    for node in model.graph.node:
        out = shapes.get(node.output[0])
        if not out:
            continue
        if node.op_type == "MatMul":
            flops += 2 * int(np.prod(out)) * shapes[node.input[0]][-1]
        elif node.op_type == "Gemm":
            trans_a = any(a.name == "transA" and a.i for a in node.attribute)
            a = shapes[node.input[0]]
            flops += 2 * int(np.prod(out)) * (a[0] if trans_a else a[1])
        elif node.op_type == "Conv":
            w = shapes[node.input[1]]
            flops += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
    return flops


def mlp_case(work, quick):
    """The MLP of the issue: 4 x (1024 -> 4096 -> 1024), batch 64."""
    batch, hidden, ffn, layers = (16, 256, 1024, 2) if quick else (64, 1024, 4096, 4)
    model = os.path.join(work, "mlp", "model.onnx")
    os.makedirs(os.path.dirname(model), exist_ok=True)
    run([sys.executable, os.path.join(ROOT, "test", "Driver", "Inputs", "make_mlp.py"),
         model, str(batch), str(hidden), str(ffn), str(layers)])
    inputs = os.path.join(work, "mlp-in")
    write_input(inputs, (batch, hidden))
    # The input is named "input" in make_mlp.py.
    tensor = onnx.TensorProto()
    with open(os.path.join(inputs, "input_0.pb"), "rb") as f:
        tensor.ParseFromString(f.read())
    tensor.name = "input"
    with open(os.path.join(inputs, "input_0.pb"), "wb") as f:
        f.write(tensor.SerializeToString())
    label = "MLP %d x (%d -> %d -> %d), batch %d" % (layers, hidden, ffn, hidden, batch)
    return label, model, inputs, 2.0 * batch * hidden * ffn * 2 * layers, "tensor"


def zoo_case(cache, name, label):
    """A model exported by the model zoo, with its PyTorch test inputs."""
    run([sys.executable, os.path.join(ROOT, "python", "autopar", "models", "model_zoo.py"),
         "--cache", cache, "--models", name], timeout=3600)
    folder = os.path.join(cache, name)
    model = os.path.join(folder, "model.onnx")
    return label, model, os.path.join(folder, "test_data_set_0"), count_flops(model), "tensor"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--autopar", default=os.path.join(ROOT, "build", "bin", "autopar"))
    parser.add_argument("--ort-modules", default="")
    parser.add_argument("--quick", action="store_true",
                        help="fewer shapes, a smaller MLP and no zoo models")
    parser.add_argument("--model-cache", default=os.path.join(ROOT, "build", "models"),
                        help="where the model zoo exports the benchmark models")
    parser.add_argument("--only-precision", action="store_true",
                        help="only the matmul table and the f32/bf16 model table")
    parser.add_argument("--models", default="",
                        help="comma-separated model rows to run (mlp and the"
                        " zoo names %s; default: all)" % ", ".join(
                            name for name, _ in BENCH_MODELS))
    parser.add_argument("--skip-matmul", action="store_true",
                        help="no matmul table")
    parser.add_argument("--skip-precision", action="store_true",
                        help="no f32/bf16 model table")
    parser.add_argument("--one-thread", action="store_true",
                        help="in the model table, only autopar 1 rank with 1"
                        " thread and ONNX Runtime with 1 thread (the CPU-time"
                        " columns; the other cells read 'not run')")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of the model table: each runs every"
                        " autopar and ONNX Runtime column once, side by side"
                        " (default 5)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1 (got %d)" % args.rounds)
    selected = set(filter(None, args.models.split(",")))
    known = {"mlp"} | {name for name, _ in BENCH_MODELS}
    if selected - known:
        parser.error("unknown model(s) %s (expected %s)" % (
            ", ".join(sorted(selected - known)), ", ".join(sorted(known))))
    failures = []
    print("cpu: %s" % cpu_model())
    print("cpu flags: %s" % cpu_flags())
    print("cores: %d" % os.cpu_count())
    work = tempfile.mkdtemp(prefix="autopar-bench-")
    try:
        ref = os.path.join(work, "gemm_ref")
        run(["cc", "-O2", "-o", ref, os.path.join(HERE, "gemm_ref.c"),
             "-lopenblas", "-ldnnl"])
        one = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        shapes = MATMUL_SHAPES[:2] + MATMUL_SHAPES[4:5] if args.quick else MATMUL_SHAPES
        if args.skip_matmul:
            shapes = []
        paths = bf16_paths()
        labels = [path for path, _ in paths]
        if shapes:
            print()
            print("GFLOP/s at one thread. bf16: `compile --precision bf16` (bf16 weight"
                  " and activation, f32 accumulation), ext: extended to f32, f32 FMAs"
                  " (AUTOPAR_CPU_ISA=avx512), dot: AVX512-BF16 dot products of bf16"
                  " pairs (AUTOPAR_CPU_ISA=avx512bf16; %s), amx: AMX tiles"
                  " (AUTOPAR_CPU_ISA=amx; %s); ratios by CPU time, which other jobs on"
                  " the machine do not inflate as they do wall time." % (
                      "measured" if "dot" in labels else "not measured: no avx512_bf16",
                      "measured" if "amx" in labels else
                      "not measured: no amx_tile/amx_bf16"))
            print("| matmul M x N x K | autopar 1 thread | autopar 1 thread, by CPU time |"
                  " OpenBLAS 1 thread | oneDNN 1 thread | autopar / OpenBLAS |"
                  " bf16 ext | bf16 ext, CPU | bf16 dot | bf16 dot, CPU |"
                  " bf16 amx | bf16 amx, CPU |"
                  " ext / f32, CPU | dot / f32, CPU | amx / f32, CPU | amx / dot, CPU |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for m, n, k in shapes:
            name = "mm_%d_%d_%d" % (m, n, k)
            try:
                model = os.path.join(work, name + ".onnx")
                matmul_model(model, m, n, k)
                inputs = os.path.join(work, name + "-in")
                write_input(inputs, (m, k))
                seconds, cpu = autopar_step(args.autopar, model, work, name, 1,
                                            "replicated", 1, inputs)
                gflops = 2.0 * m * n * k / seconds / 1e9
                cpu_gflops = 2.0 * m * n * k / cpu / 1e9
                bf16 = {}
                for path, isa in paths:
                    bf16_seconds, bf16_cpu = autopar_step(
                        args.autopar, model, work, name + "-bf16-" + path, 1,
                        "replicated", 1, inputs, precision="bf16", isa=isa)
                    bf16[path] = (2.0 * m * n * k / bf16_seconds / 1e9,
                                  2.0 * m * n * k / bf16_cpu / 1e9)
                text = run([ref, str(m), str(n), str(k), "7"], env=one)
                lib = dict(line.split() for line in text.strip().splitlines())
                blas, dnnl = float(lib["openblas"]), float(lib["onednn"])

                def cell(path, which):
                    return "%.1f" % bf16[path][which] if path in bf16 else "-"

                def ratio(path, base=None):
                    if path not in bf16 or (base and base not in bf16):
                        return "-"
                    return "%.2f" % (bf16[path][1] /
                                     (bf16[base][1] if base else cpu_gflops))
                print("| %dx%dx%d | %.1f | %.1f | %.1f | %.1f | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                      % (m, n, k, gflops, cpu_gflops, blas, dnnl, gflops / blas,
                         cell("ext", 0), cell("ext", 1), cell("dot", 0),
                         cell("dot", 1), cell("amx", 0), cell("amx", 1),
                         ratio("ext"), ratio("dot"), ratio("amx"),
                         ratio("amx", "dot")))
            except Exception as error:  # noqa: BLE001 - reported, exit 1
                failures.append("%s: %s" % (name, error))
                print("| %dx%dx%d | FAILED | | | | | | | | | | | | | | |" % (m, n, k))
            sys.stdout.flush()

        print()
        models = [mlp_case(work, args.quick)] if not selected or "mlp" in selected else []
        if args.only_precision and not args.quick:
            # The model zoo's test-size models (cached by the lit tests).
            for name, label in [("gpt2_block", "GPT-2 block (zoo test size)"),
                                ("resnet18", "resnet18 (zoo test size)")]:
                try:
                    models.append(zoo_case(args.model_cache, name, label))
                except Exception as error:  # noqa: BLE001 - reported, exit 1
                    failures.append("export %s: %s" % (name, error))
        if not args.quick and not args.only_precision:
            for name, label in BENCH_MODELS:
                if selected and name not in selected:
                    continue
                try:
                    models.append(zoo_case(args.model_cache, name, label))
                except Exception as error:  # noqa: BLE001 - reported, exit 1
                    failures.append("export %s: %s" % (name, error))
        if not args.skip_precision:
            print("Step time in ms at one thread, 1 rank (median of warm repeats):"
                  " the f32 program against `compile --precision bf16` (ext: extended"
                  " to f32; dot: AVX512-BF16 dot products; amx: AMX tiles; each where"
                  " the CPU has them); CPU: process CPU time per step.")
            print("| model | GFLOP | autopar f32 | autopar bf16 ext | autopar bf16 dot |"
                  " autopar bf16 amx |"
                  " autopar f32, CPU | autopar bf16 ext, CPU | autopar bf16 dot, CPU |"
                  " autopar bf16 amx, CPU |"
                  " f32 / bf16 ext, CPU | f32 / bf16 dot, CPU | f32 / bf16 amx, CPU |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        variants = [("f32", "f32", None)] + [
            ("bf16-" + path, "bf16", isa) for path, isa in paths]
        for label, model, inputs, flops, _ in (models if not args.skip_precision else []):
            cells = {}
            for key, precision, isa in variants:
                try:
                    cells[key] = autopar_step(
                        args.autopar, model, work,
                        "%s-precision-%s" % (os.path.basename(os.path.dirname(model))
                                             or "m", key),
                        1, "replicated", 1, inputs, precision=precision, isa=isa)
                except Exception as error:  # noqa: BLE001
                    failures.append("%s, %s: %s" % (label, key, error))

            def ms(key, which):
                if key not in cells:
                    measured = any(key == "bf16-" + path for path in labels)
                    return "FAILED" if measured or key == "f32" else "-"
                return "%.2f" % (cells[key][which] * 1e3)

            def speedup(key):
                if "f32" in cells and key in cells:
                    return "%.2f" % (cells["f32"][1] / cells[key][1])
                return "-"
            print("| %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                label, flops / 1e9,
                *(ms(key, which) for which in (0, 1)
                  for key in ("f32", "bf16-ext", "bf16-dot", "bf16-amx")),
                speedup("bf16-ext"), speedup("bf16-dot"), speedup("bf16-amx")))
            sys.stdout.flush()
        if not args.only_precision:
            print()
            print("Step time in ms (median of warm repeats; autopar: `run --profile`'s"
                  " step_time_s, ONNX Runtime: ort_step.js), the median of %d rounds that"
                  " run every column once, side by side. Ratios > 1: autopar faster; each"
                  " ratio is the median of the rounds' ratios (their range in brackets)."
                  " The CPU columns are process CPU time per step at one thread (autopar:"
                  " cpu_time_s; ORT: process.cpuUsage()), which other jobs on the machine"
                  " do not inflate as they do wall time." % args.rounds)
            print("| model | GFLOP | autopar 1 rank | autopar 1 rank, 1 thread | "
                  "autopar 2 ranks (tensor), 1 thread each | ORT 1 thread | ORT 2 threads | "
                  "ORT 2 threads / autopar 1 rank | ORT 1 thread / autopar 1 thread | "
                  "autopar 1 thread, CPU | ORT 1 thread, CPU | ORT / autopar, CPU |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for label, model, inputs, flops, two_rank_plan in models:
                cells = {}
                configs = [("default", 1, "replicated", 0), ("one", 1, "replicated", 1)]
                if two_rank_plan:
                    configs.append(("two", 2, two_rank_plan, 1))
                if args.one_thread:
                    configs = [("one", 1, "replicated", 1)]
                compiled = {}
                for key, grid, plan, threads in configs:
                    try:
                        compiled[key] = autopar_compile(
                            args.autopar, model, work,
                            "%s-%d-%s" % (os.path.basename(os.path.dirname(model)) or "m",
                                          grid, plan), grid, plan)
                    except Exception as error:  # noqa: BLE001
                        failures.append("%s, %s: %s" % (label, key, error))
                ort_threads = ((1,) if args.one_thread else (1, 2)) if args.ort_modules else ()
                # Every measurement once per round, side by side: this VM's
                # speed changes within minutes, so a cell is the median of
                # its rounds and a ratio the median of the rounds' ratios.
                rounds = {}
                for _ in range(args.rounds):
                    for key, grid, plan, threads in configs:
                        if key not in compiled:
                            continue
                        try:
                            rounds.setdefault(key, []).append(
                                autopar_run(args.autopar, compiled[key], threads, inputs))
                        except Exception as error:  # noqa: BLE001
                            failures.append("%s, %s: %s" % (label, key, error))
                            compiled.pop(key)
                    for threads in ort_threads:
                        key = "ort%d" % threads
                        try:
                            rounds.setdefault(key, []).append(
                                ort_step(args.ort_modules, model, threads, 10))
                        except Exception as error:  # noqa: BLE001
                            failures.append("%s, ORT %d: %s" % (label, threads, error))
                            ort_threads = tuple(t for t in ort_threads if t != threads)
                complete = {key: values for key, values in rounds.items()
                            if len(values) == args.rounds}
                cells = {key: tuple(statistics.median(v[which] for v in values)
                                    for which in (0, 1))
                         for key, values in complete.items()}

                def ms(key, which=0):
                    if key == "two" and not two_rank_plan:
                        return "not run"
                    if args.one_thread and key in ("default", "two", "ort2"):
                        return "not run"
                    if key.startswith("ort") and not args.ort_modules:
                        return "not measured"
                    return "%.2f" % (cells[key][which] * 1e3) if key in cells else "FAILED"

                def ratio(num, den, which=0):
                    if num not in complete or den not in complete:
                        return "-"
                    per_round = [a[which] / b[which]
                                 for a, b in zip(complete[num], complete[den])]
                    text = "%.2f" % statistics.median(per_round)
                    if len(per_round) > 1:
                        text += " (%.2f-%.2f)" % (min(per_round), max(per_round))
                    return text
                print("| %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    label, flops / 1e9, ms("default"), ms("one"), ms("two"), ms("ort1"),
                    ms("ort2"), ratio("ort2", "default"), ratio("ort1", "one"),
                    ms("one", 1), ms("ort1", 1), ratio("ort1", "one", 1)))
                sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print()
        for failure in failures:
            print("FAILED: " + failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
