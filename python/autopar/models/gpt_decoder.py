#!/usr/bin/env python3
# ===- gpt_decoder.py - GPT-style decoder models built with onnx.helper ---=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Builds GPT-style decoder models directly with onnx.helper (opset 17).

Each of the L blocks is a pre-LayerNorm GPT block, written with the operators
autopar imports and in the form torch.onnx.export gives:

    a = LayerNormalization(x)
    qkv = MatMul(a, W_qkv[H, 3H]) + b_qkv          one fused projection
    q, k, v = Split(qkv, axis=-1)                  three equal parts
    q = Transpose(Reshape(q, [0, 0, A, D]), [0, 2, 1, 3])   (D = H / A)
    k = Transpose(Reshape(k, [0, 0, A, D]), [0, 2, 3, 1])   (k transposed)
    v = Transpose(Reshape(v, [0, 0, A, D]), [0, 2, 1, 3])
    s = Softmax(MatMul(q, k) * (1 / sqrt(D)) + mask[S, S])  causal mask
    y = Reshape(Transpose(MatMul(s, v), [0, 2, 1, 3]), [0, 0, H])
    x = x + MatMul(y, W_o[H, H]) + b_o
    m = LayerNormalization(x)
    f = MatMul(m, W_1[H, F]) + b_1
    g = 0.5 * f * (1 + Erf(f / sqrt(2)))           GELU, the exported form
    x = x + MatMul(g, W_2[F, H]) + b_2

With --qkv-layout heads, the fused projection's columns are Megatron-LM's
(per head: its q, k and v), and the heads are cut out before the split:

    qkv = Reshape(MatMul(a, W_qkv[H, 3H]) + b_qkv, [0, 0, A, 3D])
    q, k, v = Split(qkv, axis=-1)                  [B, S, A, D] each
    q = Transpose(q, [0, 2, 1, 3]), and so on

so splitting the projection's columns over devices gives each device whole
heads, as Megatron's tensor parallelism does. The default, --qkv-layout
split, is the layout of Hugging Face's GPT-2 ([q | k | v]).

The input is `hidden` float32 [B, S, H] (or, with --embedding, `ids` int64
[B, S] through a token Gather plus a learned position table), the output the
final LayerNorm (`hidden_out`), or with --vocab the LM head's `logits`
[B, S, V]. The mask is an initializer [S, S] (0 on and below the diagonal,
-1e9 above); shape operands (Reshape targets) and scalars are Constant nodes,
so they stay known without weight data. Reshape targets copy the batch and
sequence sizes (0 in ONNX), so `autopar ... --batch N` re-batches a model.

With --shape-only every initializer is stored as ONNX external data pointing
to `weights.bin`, a file that is never written: the model is a few hundred
KB even at GPT-3 175B's size and is meant for `autopar plan`/`autopar import`
(which do not need weight data). Without it, initializers hold seeded random
weights (small sizes only), and --test-data DIR also writes random inputs
and numpy reference outputs in the ONNX test-data layout
(DIR/input_0.pb, DIR/output_0.pb) for `autopar verify --inputs DIR`.

    /usr/bin/python3 python/autopar/models/gpt_decoder.py --layers 2 \\
        --hidden 64 --heads 4 --seq 16 --batch 2 -o gpt.onnx
    /usr/bin/python3 python/autopar/models/gpt_decoder.py --layers 96 \\
        --hidden 12288 --heads 96 --seq 2048 --batch 1536 --shape-only \\
        -o gpt3.onnx
"""

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MASK_VALUE = -1e9
LN_EPSILON = 1e-5
# Elements above which real (random) weights are refused: 256 Mi floats.
MAX_REAL_ELEMENTS = 1 << 28


class GptConfig:
    """The shape of a GPT decoder."""

    def __init__(self, layers, hidden, heads, seq, batch, vocab=None,
                 ffn=None, embedding=False, last_token=False,
                 qkv_layout="split"):
        self.layers = layers
        self.hidden = hidden
        self.heads = heads
        self.seq = seq
        self.batch = batch
        self.vocab = vocab
        self.ffn = ffn if ffn is not None else 4 * hidden
        self.embedding = embedding
        self.last_token = last_token
        self.qkv_layout = qkv_layout
        self.check()

    def check(self):
        for name in ("layers", "hidden", "heads", "seq", "batch", "ffn"):
            if getattr(self, name) <= 0:
                raise ValueError(f"--{name} must be positive, got "
                                 f"{getattr(self, name)}")
        if self.vocab is not None and self.vocab <= 0:
            raise ValueError(f"--vocab must be positive, got {self.vocab}")
        if self.qkv_layout not in ("split", "heads"):
            raise ValueError(f"--qkv-layout must be split or heads, got "
                             f"'{self.qkv_layout}'")
        if self.hidden % self.heads:
            raise ValueError(f"--hidden {self.hidden} is not divisible by "
                             f"--heads {self.heads}")
        if self.embedding and self.vocab is None:
            raise ValueError("--embedding needs --vocab (the size of the "
                             "token table)")

    @property
    def head_dim(self):
        return self.hidden // self.heads

    def num_parameters(self):
        h, f = self.hidden, self.ffn
        per_layer = 2 * 2 * h + h * 3 * h + 3 * h + h * h + h + h * f + f \
            + f * h + h
        total = self.layers * per_layer + 2 * h
        if self.embedding:
            total += self.vocab * h + self.seq * h
        if self.vocab is not None:
            total += h * self.vocab
        return total


class _Builder:
    """Collects nodes and initializers of one graph."""

    def __init__(self, shape_only, rng):
        self.shape_only = shape_only
        self.rng = rng
        self.nodes = []
        self.initializers = []
        self.arrays = {}  # initializer name -> numpy array (real weights)
        self.external_offset = 0
        self.counter = 0

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def node(self, op, inputs, outputs=None, name=None, **attrs):
        if outputs is None:
            outputs = [self.fresh(op.lower())]
        self.nodes.append(helper.make_node(op, inputs, outputs,
                                           name=name or outputs[0], **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def constant(self, name, array):
        """A Constant node: known at import without weight data."""
        self.nodes.append(helper.make_node(
            "Constant", [], [name], name=name,
            value=numpy_helper.from_array(array, name)))
        return name

    def initializer(self, name, shape, kind, scale=0.02):
        """A float32 weight: random (`kind` normal, ones, zeros) or, with
        shape_only, external data in a file that does not exist."""
        shape = list(shape)
        if self.shape_only:
            tensor = TensorProto()
            tensor.name = name
            tensor.data_type = TensorProto.FLOAT
            tensor.dims.extend(shape)
            size = 4 * int(np.prod(shape, dtype=np.int64))
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "weights.bin"),
                               ("offset", str(self.external_offset)),
                               ("length", str(size))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            self.external_offset += size
        else:
            if kind == "ones":
                array = np.ones(shape, np.float32)
            elif kind == "zeros":
                array = np.zeros(shape, np.float32)
            elif kind == "mask":
                seq = shape[0]
                array = np.triu(np.full((seq, seq), MASK_VALUE, np.float32),
                                k=1)
            else:
                array = (self.rng.standard_normal(shape) * scale).astype(
                    np.float32)
            self.arrays[name] = array
            tensor = numpy_helper.from_array(array, name)
        self.initializers.append(tensor)
        return name

    def layer_norm(self, x, prefix, hidden):
        scale = self.initializer(f"{prefix}.weight", [hidden], "ones")
        bias = self.initializer(f"{prefix}.bias", [hidden], "zeros")
        return self.node("LayerNormalization", [x, scale, bias],
                         [f"{prefix}.out"], axis=-1, epsilon=LN_EPSILON)

    def linear(self, x, prefix, fan_in, fan_out, scale=0.02):
        weight = self.initializer(f"{prefix}.weight", [fan_in, fan_out],
                                  "normal", scale)
        bias = self.initializer(f"{prefix}.bias", [fan_out], "normal", scale)
        y = self.node("MatMul", [x, weight], [f"{prefix}.matmul"])
        return self.node("Add", [y, bias], [f"{prefix}.out"])


def _block(b, cfg, x, index, consts):
    p = f"h{index}"
    hid = cfg.hidden
    a = b.layer_norm(x, f"{p}.ln_1", hid)
    qkv = b.linear(a, f"{p}.attn.qkv", hid, 3 * hid)
    heads_of = {}
    perms = {"q": [0, 2, 1, 3], "k": [0, 2, 3, 1], "v": [0, 2, 1, 3]}
    if cfg.qkv_layout == "heads":
        # Megatron-LM's layout: per head, its q, k and v columns.
        per_head = b.node("Reshape", [qkv, consts["qkv_heads_shape"]],
                          [f"{p}.attn.qkv_heads"])
        parts = b.node("Split", [per_head], [f"{p}.attn.q_heads",
                                             f"{p}.attn.k_heads",
                                             f"{p}.attn.v_heads"], axis=-1)
        for name, r in zip("qkv", parts):
            heads_of[name] = b.node("Transpose", [r], [f"{p}.attn.{name}_t"],
                                    perm=perms[name])
    else:
        q, k, v = b.node("Split", [qkv], [f"{p}.attn.q", f"{p}.attn.k",
                                          f"{p}.attn.v"], axis=-1)
        for name, value in (("q", q), ("k", k), ("v", v)):
            r = b.node("Reshape", [value, consts["heads_shape"]],
                       [f"{p}.attn.{name}_heads"])
            heads_of[name] = b.node("Transpose", [r],
                                    [f"{p}.attn.{name}_t"],
                                    perm=perms[name])
    scores = b.node("MatMul", [heads_of["q"], heads_of["k"]],
                    [f"{p}.attn.scores"])
    scaled = b.node("Mul", [scores, consts["inv_sqrt_d"]],
                    [f"{p}.attn.scaled"])
    masked = b.node("Add", [scaled, consts["mask"]], [f"{p}.attn.masked"])
    probs = b.node("Softmax", [masked], [f"{p}.attn.probs"], axis=-1)
    context = b.node("MatMul", [probs, heads_of["v"]], [f"{p}.attn.context"])
    merged = b.node("Transpose", [context], [f"{p}.attn.context_t"],
                    perm=[0, 2, 1, 3])
    y = b.node("Reshape", [merged, consts["hidden_shape"]],
               [f"{p}.attn.merged"])
    proj = b.linear(y, f"{p}.attn.proj", hid, hid)
    x = b.node("Add", [x, proj], [f"{p}.residual_1"])
    m = b.layer_norm(x, f"{p}.ln_2", hid)
    f = b.linear(m, f"{p}.mlp.fc", hid, cfg.ffn)
    # GELU as torch.onnx.export writes it: 0.5 * f * (1 + erf(f / sqrt(2))).
    e = b.node("Erf", [b.node("Div", [f, consts["sqrt2"]],
                              [f"{p}.mlp.gelu_div"])], [f"{p}.mlp.gelu_erf"])
    e1 = b.node("Add", [e, consts["one"]], [f"{p}.mlp.gelu_add"])
    g = b.node("Mul", [b.node("Mul", [f, e1], [f"{p}.mlp.gelu_mul"]),
                       consts["half"]], [f"{p}.mlp.gelu"])
    out = b.linear(g, f"{p}.mlp.proj", cfg.ffn, hid)
    return b.node("Add", [x, out], [f"{p}.residual_2"])


def build_model(cfg, shape_only=False, seed=0):
    """Returns the ONNX ModelProto of `cfg` (and the builder's arrays)."""
    if not shape_only and cfg.num_parameters() > MAX_REAL_ELEMENTS:
        raise ValueError(
            f"{cfg.num_parameters()} parameters are too many for random "
            f"weights (at most {MAX_REAL_ELEMENTS}); use --shape-only")
    b = _Builder(shape_only, np.random.default_rng(seed))
    bsz, seq, hid = cfg.batch, cfg.seq, cfg.hidden
    # Reshape targets copy the batch and sequence sizes (0), so --batch can
    # re-batch the model.
    heads_shape = ("qkv_heads_shape", [0, 0, cfg.heads, 3 * cfg.head_dim]) \
        if cfg.qkv_layout == "heads" else \
        ("heads_shape", [0, 0, cfg.heads, cfg.head_dim])
    consts = {
        heads_shape[0]: b.constant(heads_shape[0], np.array(heads_shape[1],
                                                            np.int64)),
        "hidden_shape": b.constant("hidden_shape",
                                   np.array([0, 0, hid], np.int64)),
        "inv_sqrt_d": b.constant("inv_sqrt_d", np.array(
            1.0 / math.sqrt(cfg.head_dim), np.float32)),
        "sqrt2": b.constant("sqrt2", np.array(math.sqrt(2.0), np.float32)),
        "one": b.constant("one", np.array(1.0, np.float32)),
        "half": b.constant("half", np.array(0.5, np.float32)),
        "mask": b.initializer("causal_mask", [seq, seq], "mask"),
    }
    if cfg.embedding:
        inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64,
                                                [bsz, seq])]
        wte = b.initializer("wte", [cfg.vocab, hid], "normal")
        wpe = b.initializer("wpe", [seq, hid], "normal")
        tokens = b.node("Gather", [wte, "ids"], ["tokens"], axis=0)
        x = b.node("Add", [tokens, wpe], ["embedded"])
    else:
        inputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT,
                                                [bsz, seq, hid])]
        x = "hidden"
    for index in range(cfg.layers):
        x = _block(b, cfg, x, index, consts)
    out_shape = [bsz, seq]
    if cfg.last_token:
        # Next-token inference: only the last position's state leaves the
        # model ([B, H] instead of [B, S, H]).
        last = b.constant("last_position", np.array(seq - 1, np.int64))
        x = b.node("Gather", [x, last], ["last_hidden"], axis=1)
        out_shape = [bsz]
    if cfg.vocab is not None:
        x = b.layer_norm(x, "ln_f", hid)
        head = b.initializer("lm_head.weight", [hid, cfg.vocab], "normal")
        b.node("MatMul", [x, head], ["logits"])
        outputs = [helper.make_tensor_value_info(
            "logits", TensorProto.FLOAT, out_shape + [cfg.vocab])]
    else:
        scale = b.initializer("ln_f.weight", [hid], "ones")
        bias = b.initializer("ln_f.bias", [hid], "zeros")
        b.node("LayerNormalization", [x, scale, bias], ["hidden_out"],
               axis=-1, epsilon=LN_EPSILON)
        outputs = [helper.make_tensor_value_info(
            "hidden_out", TensorProto.FLOAT, out_shape + [hid])]
    graph = helper.make_graph(b.nodes, "gpt_decoder", inputs, outputs,
                              b.initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="autopar gpt_decoder.py")
    model.ir_version = 8
    return model, b.arrays


# ===--------------------------------------------------------------------=== #
# numpy reference
# ===--------------------------------------------------------------------=== #

def _layer_norm(x, scale, bias):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPSILON) * scale + bias


_erf = np.vectorize(math.erf, otypes=[np.float64])


def reference(cfg, arrays, inputs):
    """Evaluates the model of `cfg` with weights `arrays` in float64."""
    w = {k: v.astype(np.float64) for k, v in arrays.items()}
    bsz, seq, hid, heads, d = (cfg.batch, cfg.seq, cfg.hidden, cfg.heads,
                               cfg.head_dim)
    if cfg.embedding:
        x = w["wte"][inputs[0]] + w["wpe"]
    else:
        x = inputs[0].astype(np.float64)
    for i in range(cfg.layers):
        p = f"h{i}"
        a = _layer_norm(x, w[f"{p}.ln_1.weight"], w[f"{p}.ln_1.bias"])
        qkv = a @ w[f"{p}.attn.qkv.weight"] + w[f"{p}.attn.qkv.bias"]
        if cfg.qkv_layout == "heads":
            q, k, v = (t.transpose(0, 2, 1, 3) for t in np.split(
                qkv.reshape(bsz, seq, heads, 3 * d), 3, axis=-1))
        else:
            q, k, v = (t.reshape(bsz, seq, heads, d).transpose(0, 2, 1, 3)
                       for t in np.split(qkv, 3, axis=-1))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + w["causal_mask"]
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        y = (s @ v).transpose(0, 2, 1, 3).reshape(bsz, seq, hid)
        x = x + y @ w[f"{p}.attn.proj.weight"] + w[f"{p}.attn.proj.bias"]
        m = _layer_norm(x, w[f"{p}.ln_2.weight"], w[f"{p}.ln_2.bias"])
        f = m @ w[f"{p}.mlp.fc.weight"] + w[f"{p}.mlp.fc.bias"]
        g = 0.5 * f * (1.0 + _erf(f / math.sqrt(2.0)))
        x = x + g @ w[f"{p}.mlp.proj.weight"] + w[f"{p}.mlp.proj.bias"]
    if cfg.last_token:
        x = x[:, -1, :]
    x = _layer_norm(x, w["ln_f.weight"], w["ln_f.bias"])
    if cfg.vocab is not None:
        x = x @ w["lm_head.weight"]
    return x.astype(np.float32)


def write_test_data(cfg, arrays, directory, seed=0):
    """Writes random inputs and numpy reference outputs in the ONNX
    test-data layout (input_0.pb, output_0.pb)."""
    rng = np.random.default_rng(seed + 1)
    if cfg.embedding:
        x = rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq), dtype=np.int64)
        name, out = "ids", "logits"
    else:
        x = rng.uniform(-1, 1, (cfg.batch, cfg.seq, cfg.hidden)).astype(
            np.float32)
        name = "hidden"
        out = "logits" if cfg.vocab is not None else "hidden_out"
    y = reference(cfg, arrays, [x])
    os.makedirs(directory, exist_ok=True)
    for file_name, tensor_name, array in (("input_0.pb", name, x),
                                          ("output_0.pb", out, y)):
        with open(os.path.join(directory, file_name), "wb") as f:
            f.write(numpy_helper.from_array(array, tensor_name)
                    .SerializeToString())


# ===--------------------------------------------------------------------=== #
# Command line
# ===--------------------------------------------------------------------=== #

def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build a GPT-style decoder ONNX model (opset 17).")
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--hidden", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--seq", type=int, required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--vocab", type=int,
                        help="add an LM head with this vocabulary")
    parser.add_argument("--ffn", type=int, help="MLP width (default 4H)")
    parser.add_argument("--embedding", action="store_true",
                        help="int64 token ids through a Gather of a token "
                             "table plus position embeddings (needs --vocab)")
    parser.add_argument("--last-token", action="store_true",
                        help="output only the last position ([B, H] or "
                             "[B, V] logits): next-token inference")
    parser.add_argument("--qkv-layout", choices=("split", "heads"),
                        default="split",
                        help="columns of the fused QKV projection: split "
                             "([q | k | v], Hugging Face's GPT-2) or heads "
                             "(per head q, k, v: Megatron-LM's, whose "
                             "column split gives each device whole heads)")
    parser.add_argument("--shape-only", action="store_true",
                        help="store every initializer as external data in "
                             "'weights.bin', which is not written")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-data", metavar="DIR",
                        help="also write input_0.pb and the numpy reference "
                             "output_0.pb into DIR (not with --shape-only)")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    try:
        cfg = GptConfig(args.layers, args.hidden, args.heads, args.seq,
                        args.batch, args.vocab, args.ffn, args.embedding,
                        args.last_token, args.qkv_layout)
        if args.shape_only and args.test_data:
            raise ValueError("--test-data needs real weights (no "
                             "--shape-only)")
        model, arrays = build_model(cfg, args.shape_only, args.seed)
    except ValueError as e:
        print(f"gpt_decoder.py: error: {e}", file=sys.stderr)
        return 1
    if not args.shape_only:
        onnx.checker.check_model(model)
    directory = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(directory, exist_ok=True)
    with open(args.output, "wb") as f:
        f.write(model.SerializeToString())
    if args.test_data:
        write_test_data(cfg, arrays, args.test_data, args.seed)
    print(f"wrote {args.output}: {cfg.layers} layers, hidden {cfg.hidden}, "
          f"{cfg.heads} heads, seq {cfg.seq}, batch {cfg.batch}, "
          f"{cfg.num_parameters()} parameters"
          + (" (shape only)" if args.shape_only else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
