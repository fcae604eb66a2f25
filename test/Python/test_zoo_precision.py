"""python/autopar/testing/zoo_precision.py's float64 evaluation of ONNX
graphs: each op it supports gives ONNX's result (checked against values
worked out by hand or with numpy) on the cases the zoo's exports use."""

import os
import sys

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import pytest

from conftest import SOURCE_DIR

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "autopar", "testing"))
import zoo_precision  # noqa: E402


def run(nodes, feeds, initializers=None, dtype=torch.float64):
    """Evaluates a graph of `nodes` on `feeds` (name -> numpy array)."""
    graph = oh.make_graph(
        nodes, "g", [], [],
        [onnx.numpy_helper.from_array(np.asarray(v), k)
         for k, v in (initializers or {}).items()])
    env = zoo_precision.evaluate(oh.make_model(graph), feeds, dtype)
    return {k: v.numpy() for k, v in env.items()}


def i64(*values):
    return np.array(values, dtype=np.int64)


def test_slice_negative_step_and_clamped_bounds():
    x = np.arange(10, dtype=np.float32)
    env = run([oh.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"]),
               oh.make_node("Slice", ["x", "s2", "e2"], ["z"])],
              {"x": x},
              {"s": i64(-1), "e": i64(-2**63), "a": i64(0), "t": i64(-3),
               "s2": i64(-3), "e2": i64(2**62)})
    np.testing.assert_array_equal(env["y"], [9, 6, 3, 0])
    np.testing.assert_array_equal(env["z"], [7, 8, 9])


def test_gather_negative_indices_keeps_index_shape():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    env = run([oh.make_node("Gather", ["x", "i"], ["y"], axis=1)],
              {"x": x}, {"i": np.array([[-1, 0]], dtype=np.int64)})
    assert env["y"].shape == (3, 1, 2)
    np.testing.assert_array_equal(env["y"][:, 0, :], x[:, [3, 0]])


def test_scatter_nd_replaces_slices():
    data = np.zeros((3, 2), dtype=np.float32)
    env = run([oh.make_node("ScatterND", ["d", "i", "u"], ["y"])],
              {"d": data}, {"i": np.array([[2], [0]], dtype=np.int64),
                            "u": np.array([[1, 2], [3, 4]], np.float32)})
    np.testing.assert_array_equal(env["y"], [[3, 4], [0, 0], [1, 2]])


def test_reshape_zero_copies_the_dimension():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    env = run([oh.make_node("Reshape", ["x", "s"], ["y"])], {"x": x},
              {"s": i64(0, -1)})
    assert env["y"].shape == (2, 12)


def test_shape_computations_stay_integer():
    x = np.zeros((2, 7), dtype=np.float32)
    env = run([oh.make_node("Shape", ["x"], ["s"]),
               oh.make_node("Div", ["s", "two"], ["half"]),
               oh.make_node("Mod", ["s", "two"], ["odd"]),
               oh.make_node("Cast", ["odd"], ["f"], to=onnx.TensorProto.FLOAT),
               oh.make_node("Equal", ["odd", "one"], ["b"]),
               oh.make_node("Not", ["b"], ["nb"]),
               oh.make_node("ConstantOfShape", ["half"], ["c"],
                            value=onnx.numpy_helper.from_array(
                                np.array([1.5], np.float32))),
               oh.make_node("Range", ["zero", "seven", "three"], ["r"])],
              {"x": x}, {"two": i64(2), "one": i64(1), "zero": i64(0),
                         "seven": i64(7), "three": i64(3)})
    np.testing.assert_array_equal(env["half"], [1, 3])
    assert env["half"].dtype == np.int64
    np.testing.assert_array_equal(env["odd"], [0, 1])
    # A cast to float gives the evaluation's precision.
    assert env["f"].dtype == np.float64
    np.testing.assert_array_equal(env["nb"], [True, False])
    assert env["c"].shape == (1, 3) and env["c"].dtype == np.float64
    np.testing.assert_array_equal(env["r"], [0, 3, 6])


def test_split_and_unsqueeze_squeeze():
    x = np.arange(6, dtype=np.float32)
    env = run([oh.make_node("Split", ["x", "sizes"], ["a", "b"]),
               oh.make_node("Unsqueeze", ["b", "axes"], ["u"]),
               oh.make_node("Squeeze", ["u", "axes"], ["s"])],
              {"x": x}, {"sizes": i64(2, 4), "axes": i64(0, -1)})
    np.testing.assert_array_equal(env["a"], [0, 1])
    assert env["u"].shape == (1, 4, 1)
    np.testing.assert_array_equal(env["s"], [2, 3, 4, 5])


def test_normalizations_and_softmax():
    # The epsilons are powers of two: ONNX float attributes are float32.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4))
    scale, bias = rng.standard_normal(4), rng.standard_normal(4)
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 1.5, 3)
    env = run([oh.make_node("LayerNormalization", ["x", "g", "b"], ["ln"],
                            axis=-1, epsilon=2.0 ** -16),
               oh.make_node("Softmax", ["x"], ["sm"], axis=1),
               oh.make_node("BatchNormalization",
                            ["x", "s3", "b3", "m3", "v3"], ["bn"],
                            epsilon=2.0 ** -10)],
              {"x": x}, {"g": scale, "b": bias, "s3": scale[:3],
                         "b3": bias[:3], "m3": mean, "v3": var})
    mu = x.mean(-1, keepdims=True)
    sd = np.sqrt(x.var(-1, keepdims=True) + 2.0 ** -16)
    np.testing.assert_allclose(env["ln"], (x - mu) / sd * scale + bias,
                               rtol=1e-12, atol=1e-12)
    e = np.exp(x)
    np.testing.assert_allclose(env["sm"], e / e.sum(1, keepdims=True),
                               rtol=1e-12, atol=1e-12)
    def c(v):
        return v.reshape(1, 3, 1)
    np.testing.assert_allclose(
        env["bn"], (x - c(mean)) / np.sqrt(c(var) + 2.0 ** -10)
        * c(scale[:3]) + c(bias[:3]), rtol=1e-12, atol=1e-12)


def test_unsupported_op_names_it():
    with pytest.raises(NotImplementedError, match="TopK"):
        run([oh.make_node("TopK", ["x", "k"], ["v", "i"])],
            {"x": np.zeros(3, np.float32)}, {"k": i64(1)})


def sigmoid_node():
    return oh.make_node("Sigmoid", ["x"], ["y"])


def test_local_error_of_a_correct_node_is_rounding():
    # A sigmoid in float32 on (slightly wrong) inputs: its own error is a
    # float32 rounding, whatever error its inputs carried in.
    x = torch.linspace(-8.0, 8.0, 101, dtype=torch.float64)
    upstream = x + 1e-3
    ours = torch.sigmoid(upstream.float()).numpy()
    global_error = np.abs(ours - torch.sigmoid(x).numpy()).max()
    assert zoo_precision.is_off(global_error, 1e-7)
    local, torch_local = zoo_precision.local_errors(
        sigmoid_node(), [upstream.float().double()], ours, 1.0)
    assert local < 64 * zoo_precision.EPS32
    assert not zoo_precision.is_off(local, torch_local)


def test_local_error_of_a_wrong_node_is_flagged():
    x = torch.linspace(-8.0, 8.0, 101, dtype=torch.float64)
    ours = (torch.sigmoid(x.float()) * 1.001).numpy()
    local, torch_local = zoo_precision.local_errors(sigmoid_node(), [x], ours,
                                                    1.0)
    assert local > 1e-4
    assert zoo_precision.is_off(local, torch_local)


def test_conditioning_compares_float32_with_float64():
    # depthwise_net (a residual block between strided depthwise convs, 10
    # classes, batch 4) as exported: float32 is within a few roundoffs of
    # float64, and its four images give four different outputs.
    c = zoo_precision.conditioning("depthwise_net", 1e-4, 1e-3)
    assert c["size"] == 40
    assert 0 < c["max_err"] < 1e-5 * c["max_y"]
    assert c["beyond"] == 0 and c["worst"] < 1 / 3
    assert 0.1 < c["spread"] <= 1.0
