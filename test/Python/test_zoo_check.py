"""python/autopar/testing/zoo_check.py's reading of `autopar verify`'s
output: the phases' wall seconds from the progress lines (each printed when
its step starts), and the errors of the comparisons."""

import os
import sys

import pytest

from conftest import SOURCE_DIR

pytest.importorskip("torch")
sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "autopar", "testing"))
import zoo_check  # noqa: E402

VERIFY_2X2 = """\
autopar: verify: compiling the single-device program (1.5 s)
autopar: verify: compiling the program for grid 2x2 (41.0 s)
data plan
autopar: verify: running the single-device program (97.5 s)
autopar: verify: running on 4 ranks (99.0 s)
output 'output_0': max_abs_err=2.0e-06 max_rel_err=1.0e-05
reference output 'output_0': max_abs_err=3.0e-06 max_rel_err=1.0e-05
max_abs_err=2.0e-06 max_rel_err=1.0e-05
"""


def test_phases_of_a_complete_run():
    phases = zoo_check.phase_seconds(VERIFY_2X2, total=104.0)
    assert phases == {"import": 1.5, "compile_single": 39.5,
                      "compile_partitioned": 56.5, "run_single": 1.5,
                      "run_partitioned": 5.0}


def test_phases_of_a_run_stopped_while_compiling():
    # A failed partitioned compile: the phases that started, the last one
    # up to the end of the run.
    text = "\n".join(VERIFY_2X2.splitlines()[:2]) + \
        "\nerror: something went wrong\n"
    phases = zoo_check.phase_seconds(text, total=50.0)
    assert phases == {"import": 1.5, "compile_single": 39.5,
                      "compile_partitioned": 9.0}


def test_no_progress_lines_no_phases():
    assert zoo_check.phase_seconds("error: cannot read model\n", 0.2) == {}


def test_plan_summary():
    text = VERIFY_2X2.replace(
        "data plan\n",
        "autopar plan (schema 1)\n  grid:     2x2\n  strategy: data\n"
        "  mode:     inference\n  communication per device: 1.5 MB\n")
    assert zoo_check.plan_summary(text) == ("data", "1.5 MB")
    assert zoo_check.plan_summary(VERIFY_2X2) == (None, None)
