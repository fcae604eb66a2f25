"""`cmake --install` gives a working package: installed into a fresh prefix,
it imports under /usr/bin/python3 without the build tree on PYTHONPATH,
finds the installed runner and runs a program on 2 ranks."""

import os
import subprocess
import sys

import autopar
from conftest import MLP


def test_install_into_a_prefix(tmp_path):
    build_dir = os.path.dirname(autopar._config.BIN_DIR)
    assert os.path.isfile(os.path.join(build_dir, "CMakeCache.txt"))
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", build_dir, "--prefix", str(prefix)],
                   check=True, capture_output=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = prefix / "lib" / version / "dist-packages"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "AUTOPAR_RUNNER")}
    env["PYTHONPATH"] = str(site)
    script = (
        "import numpy as np, autopar, os\n"
        "print(autopar.__file__)\n"
        "print(os.environ['AUTOPAR_RUNNER'])\n"
        f"p = autopar.compile(autopar.load({MLP!r}), 2, plan='data')\n"
        "y = p.run({'input': np.ones((8, 16), np.float32)})['output']\n"
        "print(y.shape)\n")
    result = subprocess.run([sys.executable, "-c", script], env=env,
                            capture_output=True, text=True, cwd=tmp_path,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == str(site / "autopar" / "__init__.py")
    assert lines[1] == str(prefix / "bin" / "autopar-runner")
    assert lines[2] == "(8, 8)"
