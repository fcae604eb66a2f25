"""The autopar Python API against the bundled MLP (examples/mlp) and the
`autopar` command: same plans, same errors, same outputs."""

import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import autopar
from conftest import CLUSTER_2AXES, MLP, MLP_DATA


def read_pb(name):
    tensor = onnx.TensorProto()
    with open(os.path.join(MLP_DATA, name), "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


@pytest.fixture(scope="module")
def mlp():
    return autopar.load(MLP)


def test_error_type():
    assert issubclass(autopar.AutoparError, RuntimeError)
    assert autopar.__version__


def test_load_signature(mlp):
    assert mlp.inputs == [{"name": "input", "dtype": "f32", "shape": (8, 16)}]
    assert [o["name"] for o in mlp.outputs] == ["output"]
    assert len(mlp.sha256) == 64


def test_load_errors(tmp_path):
    with pytest.raises(autopar.AutoparError,
                       match="model file '.*nothere.onnx' does not exist"):
        autopar.load(tmp_path / "nothere.onnx")
    with pytest.raises(autopar.AutoparError, match="'nosuch'"):
        autopar.load(MLP, input_shapes={"nosuch": (8, 16)})


def test_plan_matches_cli(mlp, autopar_bin, tmp_path):
    with open(CLUSTER_2AXES) as f:
        cluster = json.load(f)
    plan = autopar.plan(mlp, (2, 2), cluster=cluster)
    subprocess.run([autopar_bin, "plan", MLP, "--grid", "2x2", "--cluster",
                    CLUSTER_2AXES, "-o", str(tmp_path / "cli.json"),
                    "--quiet"], check=True)
    with open(tmp_path / "cli.json") as f:
        cli = json.load(f)
    ours = json.loads(plan.to_json())
    for p in (cli, ours):
        p.pop("search_time_s")
        p["cluster"].pop("source")
    assert ours == cli
    assert plan.grid == (2, 2)
    assert plan.strategy == "auto"
    assert plan.predicted["step_time_s"] > 0
    assert set(plan.baselines) == {"replicated", "data", "tensor"}
    # The search gathers every output (its space has replicated outputs, as
    # do the replicated and tensor baselines); the data baseline keeps its
    # outputs split since sharded I/O, outside that space until the planner
    # chooses output layouts (issue 10), so it is not comparable here.
    assert plan.predicted["step_time_s"] <= min(
        b["step_time_s"] for name, b in plan.baselines.items()
        if b["valid"] and name != "data")
    assert set(plan.strategies) >= {"/0/Gemm", "/2/Gemm", "/4/Gemm"}
    assert plan.stages == 1
    assert plan.memory_profile and max(
        b for _, b in plan.memory_profile) == plan.predicted[
            "peak_memory_bytes"]
    plan.save(tmp_path / "plan.json", html=tmp_path / "plan.html")
    assert (tmp_path / "plan.txt").read_text().startswith(
        "autopar plan (schema 1)")
    assert "<svg" in (tmp_path / "plan.html").read_text()


def test_plan_errors_carry_cli_messages(mlp, autopar_bin):
    cases = [
        (dict(grid="0x2", cluster=CLUSTER_2AXES), ["--grid", "0x2"]),
        (dict(grid="2", cluster=CLUSTER_2AXES, loss="mse"),
         ["--grid", "2", "--loss", "mse"]),
        (dict(grid="2", cluster=CLUSTER_2AXES, plan="nosuch.json"),
         ["--grid", "2", "--plan", "nosuch.json"]),
    ]
    for kwargs, flags in cases:
        cli = subprocess.run(
            [autopar_bin, "plan", MLP, "--cluster", CLUSTER_2AXES, "-o",
             os.devnull, "--quiet"] + flags, capture_output=True, text=True)
        assert cli.returncode != 0
        first = cli.stderr.splitlines()[0]
        assert first.startswith("autopar: error: ")
        with pytest.raises(autopar.AutoparError) as error:
            autopar.plan(mlp, **kwargs)
        assert str(error.value).splitlines()[0] == first[len(
            "autopar: error: "):]
    with pytest.raises(TypeError, match="unknown option 'bogus'"):
        autopar.plan(mlp, 2, cluster=CLUSTER_2AXES, bogus=1)
    with pytest.raises(TypeError, match="grid must be"):
        autopar.plan(mlp, 2.5, cluster=CLUSTER_2AXES)


def test_compile_and_run_matches_reference(mlp):
    program = autopar.compile(mlp, "2x2", plan="tensor")
    assert program.manifest["num_devices"] == 4
    assert program.plan.strategy == "tensor"
    outputs = program.run({"input": read_pb("input_0.pb")})
    assert list(outputs) == ["output"]
    expected = read_pb("output_0.pb")
    assert outputs["output"].dtype == np.float32
    assert outputs["output"].shape == expected.shape
    np.testing.assert_allclose(outputs["output"], expected, rtol=1e-4,
                               atol=1e-5)
    directory = program.directory
    assert os.path.isfile(os.path.join(directory, "program.so"))
    del program
    assert not os.path.exists(directory)


def test_compile_with_plan_object(mlp, tmp_path):
    with open(CLUSTER_2AXES) as f:
        cluster = json.load(f)
    cluster["axes"] = cluster["axes"][1:]
    plan = autopar.plan(mlp, 2, cluster=cluster, plan="data")
    assert plan.strategy == "data" and "baselines" not in plan.json
    program = autopar.compile(mlp, 2, plan=plan, output_dir=tmp_path / "out")
    assert (tmp_path / "out" / "manifest.json").exists()
    assert program.plan.json["values"] == plan.json["values"]
    x = read_pb("input_0.pb")
    np.testing.assert_allclose(program.run({"input": x})["output"],
                               read_pb("output_0.pb"), rtol=1e-4, atol=1e-5)


def test_run_input_errors(mlp):
    program = autopar.compile(mlp, 1)
    x = read_pb("input_0.pb")
    with pytest.raises(TypeError, match="astype"):
        program.run({"input": x.astype(np.float64)})
    with pytest.raises(ValueError, match="has shape 4x16, the program "
                       "takes 8x16"):
        program.run({"input": x[:4]})
    with pytest.raises(KeyError, match="missing input 'input'"):
        program.run({})
    with pytest.raises(KeyError, match="no input 'other'"):
        program.run({"input": x, "other": x})


def test_compile_error(mlp):
    with pytest.raises(autopar.AutoparError, match="does not divide over "
                       "grid axes \\[0\\] \\(3 devices\\)"):
        autopar.compile(mlp, 3, plan="data")


def test_verify(mlp):
    result = autopar.verify(mlp, (2, 2), plan="tensor", seed=3)
    assert result.ok and bool(result)
    assert set(result.outputs) == {"output"}
    assert result.max_abs_err < 1e-4
    # Checked against PyTorch's output, and against a wrong one.
    inputs = {"input": read_pb("input_0.pb")}
    expected = read_pb("output_0.pb")
    assert autopar.verify(mlp, 2, plan="data", inputs=inputs,
                          references={"output": expected}).ok
    wrong = autopar.verify(mlp, 2, plan="data", inputs=inputs,
                           references={"output": expected + 1e-2})
    assert not wrong.ok
    assert wrong.references["output"][0] == pytest.approx(1e-2, rel=1e-3)
    # The partitioned program is held to the reference too.
    assert not wrong.partitioned_references["output"][2]
    assert wrong.partitioned_references["output"][0] == pytest.approx(
        1e-2, rel=1e-3)
    # A hand configuration, as `verify --fixed`.
    fixed = autopar.verify(mlp, 2, fixed="tp=2,pp=1,dp=1,micro_batch=8",
                           seed=1)
    assert fixed.ok and fixed.plan.strategy == "fixed"


def test_verify_pipeline(tmp_path):
    """`verify(..., fixed=...)` with pp=2: one program per stage, the
    microbatches streamed through them, against one device."""
    from autopar.models import gpt_decoder
    path = tmp_path / "gpt.onnx"
    assert gpt_decoder.main([
        "--layers", "2", "--hidden", "32", "--heads", "2", "--seq", "8",
        "--batch", "4", "--vocab", "40", "--embedding", "-o",
        str(path)]) == 0
    result = autopar.verify(path, 2, fixed="tp=1,pp=2,dp=1,micro_batch=2",
                            atol=1e-4)
    assert result.ok, result
    assert result.plan.stages == 2 and len(result.plan.stage_plans) == 2


def test_subpackages(tmp_path):
    from autopar.models import gpt_decoder
    from autopar.testing import random_partition  # noqa: F401
    path = tmp_path / "gpt.onnx"
    assert gpt_decoder.main(["--layers", "1", "--hidden", "32", "--heads",
                             "2", "--seq", "8", "--batch", "2", "-o",
                             str(path)]) == 0
    model = autopar.load(path)
    assert model.inputs[0]["shape"] == (2, 8, 32)
