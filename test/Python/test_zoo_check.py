"""python/autopar/testing/zoo_check.py's reading of `autopar verify`'s
output: the phases' wall seconds from the progress lines (each printed when
its step starts) and their arrival times, the plan's summary, and a run
stopped at its timeout, or with zoo_check, with its children."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import SOURCE_DIR

pytest.importorskip("torch")
sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "autopar", "testing"))
import zoo_check  # noqa: E402

# What a 2x2 verify prints, each line with the second it arrived (the
# seconds in the progress lines count from after the import).
VERIFY_2X2 = [
    (1.5, "autopar: verify: compiling the program for grid 2x2 (0.0 s)\n"),
    (41.0, "autopar plan (schema 1)\n"),
    (41.0, "  grid:     2x2\n"),
    (41.0, "  strategy: data\n"),
    (41.0, "  communication per device: 1.5 MB\n"),
    (41.0, "autopar: verify: compiling the single-device program (39.5 s)\n"),
    (97.5, "autopar: verify: running the single-device program (96.0 s)\n"),
    (99.0, "autopar: verify: running on 4 ranks (97.5 s)\n"),
    (104.0, "output 'output_0': max_abs_err=2.0e-06 max_rel_err=1.0e-05\n"),
    (104.0, "max_abs_err=2.0e-06 max_rel_err=1.0e-05\n"),
]

# A verify --reference-dir that reads the single-device outputs: no
# single-device compile or run.
VERIFY_REUSED = [
    (1.5, "autopar: verify: compiling the program for grid 2 (0.0 s)\n"),
    (20.0, "autopar plan (schema 1)\n"),
    (20.0, "autopar: verify: checking the reference directory /tmp/r/m "
     "(18.5 s)\n"),
    (20.5, "single-device outputs: read from '/tmp/r/m'\n"),
    (20.5, "autopar: verify: running on 2 ranks (19.0 s)\n"),
    (24.0, "output 'output_0': max_abs_err=0.0e+00 max_rel_err=0.0e+00\n"),
    (24.0, "max_abs_err=0.0e+00 max_rel_err=0.0e+00\n"),
]


def test_phases_of_a_complete_run():
    phases = zoo_check.phase_seconds(VERIFY_2X2, total=104.5)
    assert phases == {"import": 1.5, "compile_partitioned": 39.5,
                      "compile_single": 56.5, "run_single": 1.5,
                      "run_partitioned": 5.5}


def test_phases_of_a_run_stopped_while_compiling():
    # A failed partitioned compile: the phases that started, the last one
    # up to the end of the run.
    stamped = VERIFY_2X2[:1] + [(49.0, "error: something went wrong\n")]
    phases = zoo_check.phase_seconds(stamped, total=50.0)
    assert phases == {"import": 1.5, "compile_partitioned": 48.5}


def test_phases_of_a_run_reading_the_reference():
    phases = zoo_check.phase_seconds(VERIFY_REUSED, total=24.5)
    assert phases == {"import": 1.5, "compile_partitioned": 18.5,
                      "reference": 0.5, "run_partitioned": 4.0}


def test_reference_source():
    text = "".join(line for _, line in VERIFY_REUSED)
    assert zoo_check.reference_source(text) == "read"
    assert zoo_check.reference_source(
        "single-device outputs: written to '/tmp/r'\n") == "written"
    text = "".join(line for _, line in VERIFY_2X2)
    assert zoo_check.reference_source(text) is None


def test_no_progress_lines_no_phases():
    stamped = [(0.2, "error: cannot read model\n")]
    assert zoo_check.phase_seconds(stamped, 0.2) == {}


def test_plan_summary():
    text = "".join(line for _, line in VERIFY_2X2)
    assert zoo_check.plan_summary(text) == ("data", "1.5 MB")
    assert zoo_check.plan_summary("max_abs_err=0\n") == (None, None)


def test_run_command_stamps_lines_as_they_arrive():
    rc, stamped = zoo_check.run_command(
        ["sh", "-c", "echo a; sleep 0.5; echo b >&2; exit 3"], timeout=30)
    assert rc == 3
    assert [line for _, line in stamped] == ["a\n", "b\n"]
    assert stamped[1][0] - stamped[0][0] >= 0.4


def test_run_command_timeout_stops_the_children():
    # The child keeps the output pipe open: without stopping the whole
    # process group the read would wait for it.
    start = time.time()
    rc, stamped = zoo_check.run_command(
        ["sh", "-c", "echo started; sleep 30 & wait"], timeout=1)
    assert rc == 124
    assert time.time() - start < 10
    assert [line for _, line in stamped] == [
        "started\n", "zoo_check: error: timed out\n"]


def test_verify_errors():
    # Two outputs, both programs against the reference: the largest of each.
    text = ("output 'a': max_abs_err=3.0e-06 max_rel_err=1.0e-05 ok\n"
            "reference 'a': max_abs_err=2.0e-05 max_rel_err=1.0e-04 ok\n"
            "partitioned_reference 'a': max_abs_err=2.5e-05 "
            "max_rel_err=1.0e-04 ok\n"
            "output 'b': max_abs_err=1.0e-06 max_rel_err=1.0e-05 ok\n"
            "reference 'b': max_abs_err=4.0e-05 max_rel_err=1.0e-04 ok\n"
            "partitioned_reference 'b': max_abs_err=INF max_rel_err=INF "
            "MISMATCH\n"
            "max_abs_err=3.0e-06 max_rel_err=1.0e-05\n")
    ref, part_ref, part = zoo_check.verify_errors(text)
    assert (ref, part) == (4.0e-05, 3.0e-06)
    assert part_ref == float("inf")
    # Without reference outputs.
    assert zoo_check.verify_errors(
        "max_abs_err=0.000e+00 max_rel_err=0.000e+00\n") == (None, None, 0.0)


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie that nobody reaped yet
    counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_stopped_zoo_check_stops_its_command(tmp_path):
    # An outer `timeout` sends SIGTERM to zoo_check alone: the command it
    # runs is in a session of its own and must be stopped with it.
    pid_file = tmp_path / "pids"
    script = (
        "import zoo_check\n"
        "zoo_check.stop_on_signals()\n"
        "zoo_check.run_command(['sh', '-c', 'sleep 60 & echo $$ $! > " +
        str(pid_file) + "; wait'], timeout=120)\n")
    testing = os.path.join(SOURCE_DIR, "python", "autopar", "testing")
    proc = subprocess.Popen([sys.executable, "-c", script],
                            env=dict(os.environ, PYTHONPATH=testing))
    start = time.time()
    while len(pid_file.read_text().split() if pid_file.exists() else []) < 2:
        assert time.time() - start < 60, "the command did not start"
        time.sleep(0.1)
    pids = [int(p) for p in pid_file.read_text().split()]
    assert not any(gone(p) for p in pids)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    # The shell and its child: killed, not left running.
    deadline = time.time() + 10
    while not all(gone(p) for p in pids):
        assert time.time() < deadline, f"still running: {pids}"
        time.sleep(0.1)
