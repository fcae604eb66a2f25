# Inputs, per-rank weights and reference outputs of the hand-written device
# programs of the execution tests; checks the outputs a run wrote.
#
#   device_data.py gen CASE DIR    writes DIR/{inputs,weights/rank<R>}
#   device_data.py check CASE DIR  compares DIR/outputs with the reference
import math
import os
import sys

import numpy as np


def grid1():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8), dtype=np.float32)
    v = rng.standard_normal(8, dtype=np.float32)
    w1 = rng.standard_normal((8, 16), dtype=np.float32)
    b1 = rng.standard_normal(16, dtype=np.float32)
    w2 = rng.standard_normal((16, 16), dtype=np.float32)
    bmm = rng.standard_normal((2, 8, 5), dtype=np.float32)
    h = np.maximum(x @ w1 + b1, 0)
    y = 2.0 * (h @ w2.T) + 3.0 * np.full((1, 16), 0.5, np.float32)
    return {
        "grid": 1,
        "inputs": [x, v],
        # Weight ids follow first appearance in @main.
        "weights": [[w1, b1, w2, bmm]],
        "outputs": [y, x @ v, x @ bmm],
    }


def grid2():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 8), dtype=np.float32)
    w1 = rng.standard_normal((8, 16), dtype=np.float32)
    w2 = rng.standard_normal((16, 8), dtype=np.float32)
    b = rng.standard_normal(8, dtype=np.float32)
    y = np.maximum(x @ w1, 0) @ w2 + b
    # Rank r holds columns 8r.. of w1 and rows 8r.. of w2; b is replicated.
    weights = [[w1[:, 8 * r:8 * r + 8], w2[8 * r:8 * r + 8, :], b]
               for r in range(2)]
    # Rank 0 of the last all_to_all receives the first half of each rank's
    # column block: columns 0:2 (its own) and 4:6 (from rank 1).
    mixed = np.concatenate([x[:, 0:2], x[:, 4:6]], axis=1)
    return {"grid": 2, "inputs": [x], "weights": weights,
            "outputs": [y, y, y, y, mixed]}


def grid2x2_swap():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 8), dtype=np.float32)
    # Rank r = 2 * i + j sits at (i, j); its swap partner sits at (j, i):
    # ranks 1 and 2 trade, the diagonal ranks 0 and 3 keep their value.
    partner = [0, 2, 1, 3]
    w = [np.arange(6, dtype=np.int64).reshape(2, 3) + 100 * r
         for r in range(4)]
    # After the swap, device (i, j) holds row block j of x.
    blocks = np.concatenate([x[2 * (r % 2):2 * (r % 2) + 2]
                             for r in range(4)])
    return {"grid": "2x2", "inputs": [x], "weights": [[wr] for wr in w],
            "outputs": [x, blocks,
                        np.concatenate([w[partner[r]] for r in range(4)])],
            "rtol": 0, "atol": 0}


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def _trunc_div(a, b):
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))


def elementwise():
    rng = np.random.default_rng(3)
    x = (2 * rng.standard_normal((3, 4))).astype(np.float32)
    p = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    r = rng.standard_normal(4).astype(np.float32)
    c = rng.standard_normal((3, 1)).astype(np.float32)
    i = rng.integers(-5, 6, (3, 4)).astype(np.int64)
    j = rng.integers(1, 5, 4).astype(np.int64)
    m = rng.integers(0, 2, (3, 4)).astype(np.bool_)
    x[0, 0] = 0.0  # cast to bool of an exact zero
    x[1, 2] = r[2]  # equal on floats
    i[0, :] = j  # equal on integers
    f32 = np.float32
    x64 = x.astype(np.float64)
    gelu = 0.5 * x64 * (1 + _erf(x64 / np.sqrt(2)))
    gelu_tanh = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                         (x64 + 0.044715 * x64 ** 3)))
    outputs = [
        np.abs(x), -x, np.sqrt(p), 1 / p, np.exp(x), np.log(p),
        1 / (1 + np.exp(-x)), np.tanh(x), _erf(x).astype(f32), ~m,
        np.where(x < 0, f32(0.1) * x, x), gelu.astype(f32),
        gelu_tanh.astype(f32), np.minimum(np.maximum(x, -1), 1.5),
        np.minimum(x, 0.5), np.trunc(x).astype(np.int64), x != 0,
        m.astype(f32), i.astype(np.int32), i.astype(f32), x - r, x * c, x / p,
        np.power(p, x), np.power(x, j.astype(f32)), np.power(i, j),
        m & (x < r), i == j, i > j, i < j, np.where(m, x, r), i - j,
        _trunc_div(i, j), i * j, x == r, np.abs(i), -i, np.maximum(x, 0),
        np.clip(i, -2, 3), p.astype(np.float64), x > c, m.astype(np.int64),
    ]
    return {"grid": 1, "inputs": [x, p, r, c, i, j, m], "weights": [[]],
            "outputs": [np.asarray(o) for o in outputs],
            "rtol": 1e-5, "atol": 1e-6}


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _layer_norm(x, axis, scale, bias, epsilon):
    axes = tuple(range(axis, x.ndim))
    d = x - x.mean(axis=axes, keepdims=True)
    var = (d * d).mean(axis=axes, keepdims=True)
    y = d / np.sqrt(var + epsilon) * scale
    return y + bias if bias is not None else y


def normalization():
    rng = np.random.default_rng(4)
    x = (3 * rng.standard_normal((2, 3, 4))).astype(np.float32)
    big = np.array([[1000, 999, -1000, 0, 998], [-500, -501, -499, -800, -500]],
                   np.float32)
    scale = rng.standard_normal(4).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    scale2 = rng.standard_normal((3, 4)).astype(np.float32)
    xb = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    bscale, bbias, bmean = (rng.standard_normal(3).astype(np.float32)
                            for _ in range(3))
    bvar = rng.uniform(0.1, 2.0, 3).astype(np.float32)
    i = rng.integers(-50, 50, (3, 4)).astype(np.int64)
    x64 = x.astype(np.float64)
    channel = (1, 3, 1, 1)
    outputs = [
        _softmax(x64, 2), _softmax(x64, 1), _log_softmax(x64, 2),
        _log_softmax(x64, 0), _softmax(big.astype(np.float64), 1),
        _log_softmax(big.astype(np.float64), 1),
        _layer_norm(x64, 2, scale, bias, 1e-5),
        _layer_norm(x64, 1, scale2, None, 1e-3),
        (xb - bmean.reshape(channel)) / np.sqrt(bvar.reshape(channel) + 1e-5)
        * bscale.reshape(channel) + bbias.reshape(channel),
        x64.sum(axis=1, keepdims=True), x64.sum(axis=(0, 2)),
        x64.mean(axis=2, keepdims=True), np.array(x64.mean()),
        x.max(axis=1), i.max(axis=1), i.sum(axis=0, keepdims=True),
        _trunc_div(i.sum(axis=1), 4),
    ]
    return {"grid": 1,
            "inputs": [x, big, scale, bias, scale2, xb, bscale, bbias, bmean,
                       bvar, i],
            "weights": [[]],
            "outputs": [o.astype(np.float32) if o.dtype == np.float64 else o
                        for o in outputs],
            "rtol": 1e-5, "atol": 1e-5}


def movement():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x2 = rng.standard_normal((2, 1, 4)).astype(np.float32)
    r = rng.standard_normal((3, 1)).astype(np.float32)
    idx = np.array([[0, -1], [2, -3]], np.int64)
    t = np.array([10, 20, 30, 40], np.int64)
    b = rng.integers(0, 2, (2, 3)).astype(np.bool_)
    idx32 = np.array([3, -4, 1], np.int32)
    xt = x.transpose(2, 0, 1)
    outputs = [
        xt, x.reshape(6, 4), x.reshape(4, 6), x.reshape(24),
        np.broadcast_to(r, (2, 3, 4)), np.concatenate([x, x2], axis=1),
        np.concatenate([t, t]), np.concatenate([b, b], axis=1), x[:, :, :1],
        x[:, :, 1:], x[1:2, 0:3:2, 3:0:-2], x[:, 1:3, 1:4:2],
        x[:, 1:3, 1:4:2].reshape(8), np.take(x, idx, axis=1),
        np.take(x, -1, axis=0), np.take(t, idx, axis=0), b.T,
        np.take(x, idx32, axis=2), x.reshape(1, 1, 2, 12),
        xt[::-1, ::-1, ::-1].transpose(0, 2, 1),
    ]
    return {"grid": 1, "inputs": [x, x2, r, idx, t, b, idx32],
            "weights": [[]], "outputs": [np.ascontiguousarray(o)
                                         for o in outputs],
            "rtol": 0, "atol": 0}


def gather_error():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    return {"grid": 1, "inputs": [x, np.array([1, 3], np.int64)],
            "weights": [[]], "outputs": []}


def _window_output(size, kernel, stride, pad_begin, pad_end, dilation, ceil):
    span = dilation * (kernel - 1) + 1
    numerator = size + pad_begin + pad_end - span
    out = (-(-numerator // stride) if ceil else numerator // stride) + 1
    if ceil and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def _conv(x, w, b, strides, pads, dilations, group=1):
    spatial = x.ndim - 2
    n, c = x.shape[:2]
    m, kernel = w.shape[0], w.shape[2:]
    out = [_window_output(x.shape[2 + i], kernel[i], strides[i], pads[i],
                          pads[spatial + i], dilations[i], False)
           for i in range(spatial)]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] +
                [(pads[i], pads[spatial + i]) for i in range(spatial)])
    y = np.zeros((n, m, *out))
    cg, mg = c // group, m // group
    for oc in range(m):
        g = oc // mg
        for o in np.ndindex(*out):
            window = tuple(slice(o[i] * strides[i], o[i] * strides[i] +
                                 dilations[i] * (kernel[i] - 1) + 1,
                                 dilations[i]) for i in range(spatial))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            y[(slice(None), oc) + o] = (patch * w[oc]).sum(
                axis=tuple(range(1, 2 + spatial)))
    if b is not None:
        y += b.reshape((1, m) + (1,) * spatial)
    return y


def _pool(x, kind, kernel, strides, pads, dilations, ceil=False,
          count_include_pad=False):
    spatial = x.ndim - 2
    size = x.shape[2:]
    out = [_window_output(size[i], kernel[i], strides[i], pads[i],
                          pads[spatial + i], dilations[i], ceil)
           for i in range(spatial)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in np.ndindex(*out):
        values, count = [], 0
        for k in np.ndindex(*kernel):
            pos = [o[i] * strides[i] - pads[i] + k[i] * dilations[i]
                   for i in range(spatial)]
            inside = all(0 <= pos[i] < size[i] for i in range(spatial))
            in_pads = all(-pads[i] <= pos[i] < size[i] + pads[spatial + i]
                          for i in range(spatial))
            if inside:
                values.append(x[(slice(None), slice(None)) + tuple(pos)])
            count += in_pads if count_include_pad else inside
        stacked = np.stack(values).astype(np.float64)
        y[(slice(None), slice(None)) + o] = (
            stacked.max(axis=0) if kind == "max" else
            stacked.sum(axis=0) / count)
    return y


def conv_pool():
    rng = np.random.default_rng(6)
    f32 = np.float32
    img = rng.standard_normal((1, 4, 7, 6)).astype(f32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(f32)
    bias = rng.standard_normal(4).astype(f32)
    w1 = rng.standard_normal((3, 4, 1, 1)).astype(f32)
    wd = rng.standard_normal((4, 1, 3, 3)).astype(f32)
    seq = rng.standard_normal((2, 3, 9)).astype(f32)
    ws = rng.standard_normal((2, 3, 3)).astype(f32)
    a = rng.standard_normal((2, 3, 4)).astype(f32)
    b = rng.standard_normal((2, 4, 5)).astype(f32)
    sq = rng.standard_normal((3, 3)).astype(f32)
    v = rng.standard_normal(3).astype(f32)
    q = rng.standard_normal((1, 2, 3, 4)).astype(f32)
    k = rng.standard_normal((1, 2, 5, 4)).astype(f32)
    outputs = [
        _conv(img, w, bias, [2, 1], [1, 0, 1, 1], [1, 2], group=2),
        _conv(img, w1, None, [1, 1], [0, 0, 0, 0], [1, 1]),
        _conv(img, wd, bias, [1, 1], [1, 1, 1, 1], [1, 1], group=4),
        _conv(seq, ws, None, [2], [1, 2], [2]),
        _pool(img, "max", [3, 3], [2, 2], [1, 1, 1, 1], [1, 1]),
        _pool(img, "max", [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], ceil=True),
        _pool(img, "max", [2, 2], [1, 1], [0, 0, 0, 0], [2, 2]),
        _pool(img, "avg", [3, 3], [2, 2], [1, 1, 1, 1], [1, 1]),
        _pool(img, "avg", [3, 3], [2, 2], [1, 1, 1, 1], [1, 1],
              count_include_pad=True),
        _pool(img, "avg", [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], ceil=True),
        img.astype(np.float64).mean(axis=(2, 3), keepdims=True),
        np.einsum("bij,bjk->bik", a, b), np.einsum("bij->jib", a),
        np.einsum("ii->i", sq), np.einsum("ij,j->i", sq, v),
        np.einsum("bhqd,bhkd->bhqk", q, k), np.einsum("i,j->ij", v, bias),
        np.array(np.einsum("bij->", a.astype(np.float64))),
        _pool(a, "max", [3], [1], [1, 1], [1]),
        _pool(a, "avg", [2], [2], [1, 0], [1], ceil=True),
        _conv(img, wd, None, [1, 1], [2, 1, 1, 2], [2, 2], group=4),
    ]
    return {"grid": 1,
            "inputs": [img, w, bias, w1, wd, seq, ws, a, b, sq, v, q, k],
            "weights": [[]],
            "outputs": [np.array(o, dtype=f32) for o in outputs],
            "rtol": 1e-5, "atol": 1e-5}


def _top_k(x, k, axis, largest):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    order = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int64)


def _scatter_elements(data, indices, updates, axis, combine):
    out = data.copy()
    for pos in np.ndindex(indices.shape):
        target = list(pos)
        target[axis] = indices[pos] % data.shape[axis]
        target = tuple(target)
        out[target] = combine(out[target], updates[pos])
    return out


def _scatter_nd(data, indices, updates, combine):
    out = data.copy()
    for pos in np.ndindex(indices.shape[:-1]):
        target = tuple(int(i) % s for i, s in zip(indices[pos], data.shape))
        out[target] = combine(out[target], updates[pos])
    return out


def indexing():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    x[0] = [1, 5, 5, 2, 0, 5]
    x[2] = -1
    xi = rng.integers(-5, 5, (4, 3)).astype(np.int64)
    d = rng.standard_normal((3, 4)).astype(np.float32)
    i0 = np.array([[0, 1, 2, -1], [1, 1, -3, 2]], np.int64)
    u0 = rng.standard_normal((2, 4)).astype(np.float32)
    i1 = np.array([[3, 3], [0, -1], [1, 2]], np.int64)
    u1 = rng.standard_normal((3, 2)).astype(np.float32)
    n = rng.standard_normal((4, 3)).astype(np.float32)
    ni = np.array([[2], [-1]], np.int64)
    nu = rng.standard_normal((2, 3)).astype(np.float32)
    ei = np.array([[0, 0], [3, -1], [1, 2]], np.int32)
    eu = rng.standard_normal(3).astype(np.float32)
    put = lambda old, new: new
    outputs = [
        *_top_k(x, 3, 1, True), *_top_k(x, 2, 0, False),
        *_top_k(xi, 4, 0, True), *_top_k(x, 1, 1, False),
        _scatter_elements(d, i0, u0, 0, put),
        _scatter_elements(d, i1, u1, 1, lambda a, b: a + b),
        _scatter_elements(d, i1, u1, 1, max),
        _scatter_nd(n, ni, nu, lambda a, b: a * b),
        _scatter_nd(n, ei, eu, put),
    ]
    return {"grid": 1,
            "inputs": [x, xi, d, i0, u0, i1, u1, n, ni, nu, ei, eu],
            "weights": [[]], "outputs": [np.ascontiguousarray(o)
                                         for o in outputs],
            "rtol": 1e-6, "atol": 1e-6}


CASES = {"conv_pool": conv_pool, "elementwise": elementwise,
         "gather_error": gather_error, "indexing": indexing,
         "movement": movement, "normalization": normalization, "grid1": grid1, "grid2": grid2,
         "grid2x2_swap": grid2x2_swap}


def main():
    mode, case, root = sys.argv[1:4]
    data = CASES[case]()
    if mode == "gen":
        os.makedirs(os.path.join(root, "inputs"), exist_ok=True)
        os.makedirs(os.path.join(root, "outputs"), exist_ok=True)
        for i, value in enumerate(data["inputs"]):
            np.ascontiguousarray(value).tofile(
                os.path.join(root, "inputs", f"input_{i}.bin"))
        for rank, weights in enumerate(data["weights"]):
            directory = os.path.join(root, "weights", f"rank{rank}")
            os.makedirs(directory, exist_ok=True)
            for i, value in enumerate(weights):
                np.ascontiguousarray(value).tofile(
                    os.path.join(directory, f"w{i}.bin"))
        return 0
    failures = 0
    for i, expected in enumerate(data["outputs"]):
        path = os.path.join(root, "outputs", f"output_{i}.bin")
        got = np.fromfile(path, dtype=expected.dtype)
        if expected.dtype.kind == "f":
            same = got.size == expected.size and np.allclose(
                got.reshape(expected.shape), expected,
                rtol=data.get("rtol", 1e-4), atol=data.get("atol", 1e-4))
        else:
            same = got.size == expected.size and np.array_equal(
                got.reshape(expected.shape), expected)
        if not same:
            print(f"{case}: output {i} differs:\n{got}\nexpected:\n{expected}")
            failures += 1
    if failures == 0:
        print(f"{case}: {len(data['outputs'])} outputs match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
