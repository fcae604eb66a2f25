#===- runner-test.py - End-to-end tests of autopar-runner ------------------===#
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===-----------------------------------------------------------------------===#
#
# Runs RunnerTestProgram.c's program.so through `mpirun autopar-runner` on a
# 2-device grid and checks one scenario (--case): the output bytes of a normal
# run, the step-time line of --profile, --help, and that every misuse ends with
# one `autopar-runtime: rank R: <message>` line and a non-zero exit, not a
# hang. Standard library only. Prints `N passed, N failed`.
#
#===-----------------------------------------------------------------------===#

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys

TIMEOUT_S = 60
RANKS = 2


def weight(rank):
    return [float(rank + 1 + i) for i in range(6)]


def input0():
    return [float(i - 2) for i in range(6)]


def write_floats(path, values):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<%df" % len(values), *values))


def prepare(workdir, weight_sizes=(6, 6)):
    """Creates weights/ and in/ for RANKS ranks; returns the directories."""
    shutil.rmtree(workdir, ignore_errors=True)
    weights = os.path.join(workdir, "weights")
    inputs = os.path.join(workdir, "in")
    outputs = os.path.join(workdir, "out")
    for rank in range(RANKS):
        write_floats(os.path.join(weights, "rank%d" % rank, "w0.bin"),
                     weight(rank)[:weight_sizes[rank]])
    write_floats(os.path.join(inputs, "input_0.bin"), input0())
    return weights, inputs, outputs


def run_runner(args, workdir, ranks=RANKS, grid="2", mode=None, extra=(),
               program=None, weight_sizes=(6, 6), files=None):
    """`files(workdir)`, when given, returns the --input/--output arguments
    that replace --inputs/--outputs."""
    weights, inputs, outputs = prepare(workdir, weight_sizes)
    io = files(workdir) if files else ["--inputs", inputs, "--outputs",
                                       outputs]
    env = dict(os.environ)
    env.pop("AUTOPAR_TEST_MODE", None)
    if mode:
        env["AUTOPAR_TEST_MODE"] = mode
    command = [args.mpiexec, "-np", str(ranks), "--oversubscribe",
               "--allow-run-as-root", "-x", "AUTOPAR_TEST_MODE",
               args.runner, "--program", program or args.program,
               "--grid", grid, "--weights", weights] + io + list(extra)
    if not mode:
        command.remove("-x")
        command.remove("AUTOPAR_TEST_MODE")
    try:
        result = subprocess.run(command, env=env, capture_output=True,
                                text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, outputs
    return result, outputs


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        print("%s %s%s" % ("PASS" if ok else "FAIL", name,
                           "" if ok else ": " + detail))
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def case_run(args, checks):
    result, outputs = run_runner(args, os.path.join(args.workdir, "run"))
    checks.check("run finishes", result is not None, "timed out")
    if result is None:
        return
    checks.check("run exit code 0", result.returncode == 0,
                 "exit code %d, stderr:\n%s" % (result.returncode,
                                                result.stderr))
    expected = [sum(weight(r)[i] for r in range(RANKS)) * input0()[i]
                for i in range(6)]
    path0 = os.path.join(outputs, "output_0.bin")
    data0 = open(path0, "rb").read() if os.path.exists(path0) else b""
    checks.check("output_0 is all_reduce(w * x)",
                 data0 == struct.pack("<6f", *expected),
                 "got %r, expected %r" % (data0, expected))
    path1 = os.path.join(outputs, "output_1.bin")
    data1 = open(path1, "rb").read() if os.path.exists(path1) else b""
    checks.check("output_1 is the gathered group indices",
                 data1 == struct.pack("<2q", 0, 1), "got %r" % data1)
    checks.check("no runtime message", "autopar-runtime" not in result.stderr,
                 result.stderr)


# The sharded mode's files: input 0 behind a 7-byte prefix and before a
# trailer (as raw_data inside a TensorProto), output 0 preallocated behind a
# 5-byte header.
IN_PREFIX, IN_SUFFIX = b"prefix!", b"end"
OUT_HEADER, OUT_TRAILER = b"HEAD!", b"TL"


def sharded_files(workdir, input_bytes=None):
    os.makedirs(workdir, exist_ok=True)
    data = struct.pack("<6f", *input0()) if input_bytes is None else input_bytes
    inp = os.path.join(workdir, "input.pb")
    with open(inp, "wb") as f:
        f.write(IN_PREFIX + data + IN_SUFFIX)
    out = os.path.join(workdir, "output.pb")
    with open(out, "wb") as f:
        f.write(OUT_HEADER + bytes(24) + OUT_TRAILER)
    return ["--input", "%d:%s" % (len(IN_PREFIX), inp),
            "--output", "%d:%s" % (len(OUT_HEADER), out)]


def case_sharded(args, checks):
    workdir = os.path.join(args.workdir, "sharded")
    result, _ = run_runner(args, workdir, mode="sharded", files=sharded_files)
    checks.check("sharded run finishes", result is not None, "timed out")
    if result is None:
        return
    checks.check("sharded run exit code 0", result.returncode == 0,
                 "exit code %d, stderr:\n%s" % (result.returncode,
                                                result.stderr))
    x = input0()
    expected = (OUT_HEADER + struct.pack("<6f", *(x[:3] + [2 * v for v in x[3:]]))
                + OUT_TRAILER)
    path = os.path.join(workdir, "output.pb")
    data = open(path, "rb").read() if os.path.exists(path) else b""
    checks.check("each rank wrote its row at its offset, header and trailer "
                 "kept", data == expected,
                 "got %r, expected %r" % (data, expected))
    expect_error(args, checks, "sharded-short-input",
                 "read_input_f32: input file '.*input.pb' has 30 bytes, "
                 r"expected at least 31 \(24 bytes of a f32 tensor of shape "
                 r"2x3 at offset 7\)", mode="sharded",
                 files=lambda w: sharded_files(w, bytes(20)))
    expect_error(args, checks, "bad-input-flag",
                 "invalid --input 'x:y': expected OFFSET:PATH .*",
                 files=lambda w: ["--input", "x:y"])


def case_profile(args, checks):
    result, _ = run_runner(args, os.path.join(args.workdir, "profile"),
                           extra=["--profile"])
    checks.check("profile finishes", result is not None, "timed out")
    if result is None:
        return
    lines = re.findall(r"^autopar-runtime: step_time_s=([0-9.eE+-]+)$",
                       result.stdout, re.M)
    checks.check("profile prints one step_time_s line",
                 result.returncode == 0 and len(lines) == 1
                 and float(lines[0]) >= 0.0,
                 "exit code %d, stdout:\n%s" % (result.returncode,
                                                result.stdout))
    cpus = re.findall(r"^autopar-runtime: cpu_time_s=([0-9.eE+-]+)$",
                      result.stdout, re.M)
    checks.check("profile prints one cpu_time_s line",
                 len(cpus) == 1 and float(cpus[0]) >= 0.0,
                 "stdout:\n%s" % result.stdout)
    peaks = re.findall(r"^autopar-runtime: peak_memory_bytes=([0-9]+)$",
                       result.stdout, re.M)
    # The program's two scratch buffers (1000 + 4096 bytes) are live at once.
    checks.check("profile prints one peak_memory_bytes line >= 5096",
                 len(peaks) == 1 and int(peaks[0]) >= 5096,
                 "stdout:\n%s" % result.stdout)


def case_bench(args, checks):
    workdir = os.path.join(args.workdir, "bench")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    out = os.path.join(workdir, "bench.json")
    command = [args.mpiexec, "-np", str(RANKS), "--oversubscribe",
               "--allow-run-as-root", args.runner, "--bench-collectives",
               "--grid", str(RANKS), "--sizes", "1000,65536",
               "--repeats", "3", "--out", out]
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        result = None
    checks.check("bench finishes", result is not None and
                 result.returncode == 0,
                 "timed out" if result is None else result.stderr)
    if result is None or not os.path.exists(out):
        checks.check("bench writes its json", False, "no %s" % out)
        return
    with open(out) as f:
        data = json.load(f)
    entries = data.get("axes", {}).get("0", [])
    kinds = sorted({e["kind"] for e in entries})
    checks.check("bench measures every kind on axis 0",
                 kinds == ["all_gather", "all_reduce", "all_to_all",
                           "reduce_scatter", "sendrecv"], "got %r" % kinds)
    # Sizes are rounded up to whole f32 elements, a multiple of the group.
    sizes = sorted({e["bytes"] for e in entries})
    checks.check("bench sizes", sizes == [1000, 65536], "got %r" % sizes)
    checks.check("bench times are positive",
                 len(entries) == 10 and
                 all(e["seconds"] > 0 and e["group_size"] == RANKS
                     for e in entries), "got %r" % entries)
    checks.check("bench json has the grid", data.get("grid") == [RANKS],
                 "got %r" % data.get("grid"))


def case_help(args, checks):
    result = subprocess.run([args.runner, "--help"], capture_output=True,
                            text=True, timeout=TIMEOUT_S)
    checks.check("--help exits 0 with usage",
                 result.returncode == 0 and "usage:" in result.stdout
                 and "--program" in result.stdout,
                 "exit code %d, stdout:\n%s" % (result.returncode,
                                                result.stdout))


def expect_error(args, checks, name, pattern, **kwargs):
    """Runs a misuse; checks exit code, no hang and the one-line message."""
    result, _ = run_runner(args, os.path.join(args.workdir, name), **kwargs)
    checks.check("%s does not hang" % name, result is not None,
                 "timed out after %d s" % TIMEOUT_S)
    if result is None:
        return
    checks.check("%s exits non-zero" % name, result.returncode != 0,
                 "exit code 0")
    lines = [l for l in result.stderr.splitlines()
             if l.startswith("autopar-runtime:")]
    good = [l for l in lines
            if re.fullmatch(r"autopar-runtime: rank \d+: " + pattern, l)]
    checks.check("%s prints one `autopar-runtime: rank R:` line" % name,
                 len(good) >= 1 and len(good) == len(lines),
                 "expected lines matching %r, stderr:\n%s"
                 % (pattern, result.stderr))


def case_errors(args, checks):
    weights_rank1 = re.escape(os.path.join(args.workdir, "size-mismatch",
                                           "weights", "rank1", "w0.bin"))
    expect_error(args, checks, "size-mismatch",
                 "load_weight_f32: weight file '%s' has 20 bytes, expected 24 "
                 r"\(f32 tensor of shape 2x3\)" % weights_rank1,
                 weight_sizes=(6, 5))
    expect_error(args, checks, "wrong-ranks",
                 "expected 4 ranks for grid 2x2, got 2", grid="2x2")
    expect_error(args, checks, "bad-grid",
                 "invalid --grid '2xa': .*", grid="2xa")
    expect_error(args, checks, "missing-program",
                 "cannot load program '.*/no-such-program.so': .*",
                 program=os.path.join(args.workdir, "no-such-program.so"))
    expect_error(args, checks, "fail", "custom failure 42", mode="fail")
    expect_error(args, checks, "noncontiguous",
                 "load_weight_f32: weight memref of shape 2x3 has a "
                 "non-identity layout: strides 1x2, expected 3x1",
                 mode="noncontiguous")
    expect_error(args, checks, "bad-axes",
                 "all_reduce_f32: invalid grid axes 0x3 for grid 2",
                 mode="badaxes")
    expect_error(args, checks, "bad-swap-axes",
                 "swap_grid_axes_f32: grid axis 1 is out of range for grid 2",
                 mode="badswap")
    # Pipeline stages.
    expect_error(args, checks, "stage-ranks",
                 "expected 4 ranks for stages of grid 2, got 2",
                 extra=("--stage", "0", "--stages", "2"))
    expect_error(args, checks, "bad-stage",
                 "invalid --stage '2' of --stages '2': expected 0 <= S < P",
                 extra=("--stage", "2", "--stages", "2"))
    expect_error(args, checks, "bad-recv-flag",
                 "invalid --input 'recv:a:1': expected OFFSET:PATH .*",
                 files=lambda w: ["--input", "recv:a:1"])
    expect_error(args, checks, "bad-send-flag",
                 "invalid --output 'send:1': expected OFFSET:PATH .*",
                 files=lambda w: ["--output", "send:1"])
    expect_error(args, checks, "bad-shape",
                 "all_gather_i64: output shape 3 is inconsistent with input "
                 "shape 1 gathered along dim 0 over 2 devices "
                 r"\(expected 2\)", mode="badshape")


CASES = {"run": case_run, "profile": case_profile, "help": case_help,
         "errors": case_errors, "bench": case_bench, "sharded": case_sharded}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--case", choices=sorted(CASES), required=True)
    args = parser.parse_args()
    args.workdir = os.path.abspath(os.path.join(args.workdir, args.case))
    checks = Checks()
    CASES[args.case](args, checks)
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
