"""pytest configuration of the Python package tests (scripts/test.sh's
python tier): `autopar` must import from the build tree, whose
python_packages folder is on PYTHONPATH (scripts/test.sh sets it)."""

import os

import pytest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MLP = os.path.join(SOURCE_DIR, "examples", "mlp", "model.onnx")
MLP_DATA = os.path.join(SOURCE_DIR, "examples", "mlp", "test_data_set_0")
CLUSTER_2AXES = os.path.join(SOURCE_DIR, "test", "Driver", "Inputs",
                             "cluster-2axes.json")
A100 = os.path.join(SOURCE_DIR, "bench", "clusters", "a100.json")


@pytest.fixture(scope="session")
def autopar_bin():
    """The `autopar` command of the build tree the package comes from."""
    import autopar
    path = os.path.join(autopar._config.BIN_DIR, "autopar")
    assert os.access(path, os.X_OK), f"no autopar executable at {path}"
    return path
