"""examples/python/plan_and_run.py runs and checks its own results."""

import os
import subprocess
import sys

from conftest import SOURCE_DIR


def test_example_runs(tmp_path):
    script = os.path.join(SOURCE_DIR, "examples", "python", "plan_and_run.py")
    result = subprocess.run([sys.executable, script, "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "max |error| against PyTorch" in result.stdout
    assert "ok=True" in result.stdout
    for name in ("plan.json", "plan.txt", "plan.html"):
        assert (tmp_path / name).stat().st_size > 0
