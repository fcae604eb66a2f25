#!/usr/bin/env python3
# ===- model_zoo.py - real architectures exported from PyTorch ------------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Exports the real architectures autopar is tested on, with PyTorch outputs.

Each model is built with a fixed seed, put in eval mode, exported with
torch.onnx.export at opset 17, and written with one test case in the ONNX
test-data layout:

    <cache>/<name>/model.onnx
    <cache>/<name>/test_data_set_0/input_<i>.pb, output_<i>.pb

where the outputs are PyTorch's own. Batch sizes divide 1, 2 and 4 devices.
A model is only re-exported when this script changes (a stamp file holds the
script's hash), so test runs reuse the cache.

Models (`gpt2_124m`, GPT-2 small's size, only on request): mlp, gpt2_block (a GPT-2 decoder block: pre-LayerNorm causal
self-attention and a GELU MLP), tiny_gpt (token and position embeddings, two
blocks, final LayerNorm, LM head), resnet18 and mobilenet_v2 (torchvision, at
64x64 with 10 classes), vit (a small torchvision VisionTransformer), lstm
and gru (two-layer bidirectional recurrent sequence models with a linear
head per step).

Uses Debian's python3-torch and python3-torchvision: run it with
/usr/bin/python3, which sees Debian's packages.

    /usr/bin/python3 python/autopar/models/model_zoo.py --cache build/models
    /usr/bin/python3 python/autopar/models/model_zoo.py --list
"""

import argparse
import hashlib
import math
import os
import shutil
import sys
import tempfile

import onnx
import onnx.numpy_helper
import torch

OPSET = 17


# ===--------------------------------------------------------------------=== #
# Models
# ===--------------------------------------------------------------------=== #

class CausalSelfAttention(torch.nn.Module):
    """GPT-2 attention: fused QKV projection, causal mask, output projection."""

    def __init__(self, dim: int, heads: int, seq: int):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        mask = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, seq, seq))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        d = c // self.heads
        q = q.view(b, t, self.heads, d).transpose(1, 2)
        k = k.view(b, t, self.heads, d).transpose(1, 2)
        v = v.view(b, t, self.heads, d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        att = att.masked_fill(~self.mask[:, :, :t, :t],
                              torch.finfo(torch.float32).min)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class Block(torch.nn.Module):
    """A GPT-2 decoder block (pre-LayerNorm, residuals, GELU MLP)."""

    def __init__(self, dim: int, heads: int, seq: int):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, seq)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.fc = torch.nn.Linear(dim, 4 * dim)
        self.out = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class TinyGPT(torch.nn.Module):
    """Token and position embeddings, decoder blocks, LM head."""

    def __init__(self, vocab: int, dim: int, heads: int, seq: int,
                 layers: int):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(seq, dim)
        self.blocks = torch.nn.ModuleList(
            [Block(dim, heads, seq) for _ in range(layers)])
        self.ln = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        positions = torch.arange(t, dtype=torch.long).unsqueeze(0)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def build_mlp():
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.Tanh(),
        torch.nn.Linear(64, 16))
    return model, (torch.randn(8, 32),)


def build_gpt2_block():
    return Block(dim=64, heads=4, seq=16), (torch.randn(4, 16, 64),)


def build_tiny_gpt():
    model = TinyGPT(vocab=128, dim=64, heads=4, seq=16, layers=2)
    return model, (torch.randint(0, 128, (4, 16), dtype=torch.long),)


def build_resnet18():
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    return model, (torch.randn(4, 3, 64, 64),)


def build_mobilenet_v2():
    import torchvision
    model = torchvision.models.mobilenet_v2(num_classes=10)
    return model, (torch.randn(4, 3, 64, 64),)


def build_vit():
    import torchvision
    model = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4,
        hidden_dim=64, mlp_dim=128, num_classes=10)
    return model, (torch.randn(4, 3, 32, 32),)


class SequenceModel(torch.nn.Module):
    """A recurrent sequence classifier: a two-layer bidirectional LSTM (or
    GRU) over batch-first sequences, then a linear head per time step."""

    def __init__(self, cell: str, features: int, hidden: int, classes: int):
        super().__init__()
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.rnn = rnn(features, hidden, num_layers=2, batch_first=True,
                       bidirectional=True)
        self.head = torch.nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


def build_lstm():
    return SequenceModel("lstm", 16, 32, 10), (torch.randn(4, 12, 16),)


def build_gru():
    return SequenceModel("gru", 16, 32, 10), (torch.randn(4, 12, 16),)


def build_gpt2_124m():
    """GPT-2 small's size (124M parameters, ~500 MB of float32 weights)."""
    model = TinyGPT(vocab=50257, dim=768, heads=12, seq=128, layers=12)
    return model, (torch.randint(0, 50257, (1, 128), dtype=torch.long),)


def build_resnet18_224():
    """torchvision resnet18 as published: 1000 classes, one 224x224 image."""
    import torchvision
    model = torchvision.models.resnet18()
    return model, (torch.randn(1, 3, 224, 224),)


def build_mobilenet_v2_224():
    """torchvision mobilenet_v2 as published: 1000 classes, one 224x224 image."""
    import torchvision
    model = torchvision.models.mobilenet_v2()
    return model, (torch.randn(1, 3, 224, 224),)


def build_vit_s16_224():
    """A ViT-S/16 (22M parameters: 12 layers, hidden 384, 6 heads), one image."""
    import torchvision
    model = torchvision.models.VisionTransformer(
        image_size=224, patch_size=16, num_layers=12, num_heads=6,
        hidden_dim=384, mlp_dim=1536, num_classes=1000)
    return model, (torch.randn(1, 3, 224, 224),)


MODELS = {
    "mlp": build_mlp,
    "gpt2_block": build_gpt2_block,
    "tiny_gpt": build_tiny_gpt,
    "resnet18": build_resnet18,
    "mobilenet_v2": build_mobilenet_v2,
    "vit": build_vit,
    "lstm": build_lstm,
    "gru": build_gru,
}

# Exported only on request (--models NAME): the benchmark's published-size
# models (bench/kernels.py), not run by the test suite.
LARGE_MODELS = {
    "gpt2_124m": build_gpt2_124m,
    "resnet18_224": build_resnet18_224,
    "mobilenet_v2_224": build_mobilenet_v2_224,
    "vit_s16_224": build_vit_s16_224,
}


# ===--------------------------------------------------------------------=== #
# Export
# ===--------------------------------------------------------------------=== #

def write_tensor(path: str, array, name: str) -> None:
    tensor = onnx.numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def script_hash() -> str:
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def randomize(model: torch.nn.Module) -> None:
    """Gives every parameter and normalization statistic a random value.

    Fresh torchvision models have zero-initialized heads (ViT) and batch
    norms with identity statistics, so their outputs are exactly 0 or tiny
    (1e-9 for mobilenet_v2), which would make the comparison vacuous.
    """
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.running_mean.normal_(0.0, 0.1)
            module.running_var.uniform_(0.5, 1.5)
            if module.affine:
                module.weight.data.uniform_(0.5, 1.5)
                module.bias.data.normal_(0.0, 0.1)
    for parameter in model.parameters():
        if float(parameter.detach().abs().max()) == 0.0:
            parameter.data.normal_(0.0, 0.05)


def export(name: str, cache: str) -> str:
    """Exports model `name` into `cache` unless it is up to date there."""
    out = os.path.join(cache, name)
    stamp = os.path.join(out, "stamp")
    os.makedirs(cache, exist_ok=True)
    digest = script_hash()
    if os.path.exists(stamp) and open(stamp).read().strip() == digest:
        return out
    torch.manual_seed(0)
    model, inputs = {**MODELS, **LARGE_MODELS}[name]()
    randomize(model)
    model.eval()
    with torch.no_grad():
        outputs = model(*inputs)
    if not isinstance(outputs, (tuple, list)):
        outputs = (outputs,)
    # Export into a private directory, then move it into place, so that
    # concurrent test runs never see a half-written model.
    final = out
    out = tempfile.mkdtemp(prefix=f".{name}-", dir=cache)
    data = os.path.join(out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    input_names = [f"input_{i}" for i in range(len(inputs))]
    output_names = [f"output_{i}" for i in range(len(outputs))]
    model_path = os.path.join(out, "model.onnx")
    # nn.MultiheadAttention (ViT) only exports with gradients enabled.
    with torch.enable_grad():
        torch.onnx.export(model, inputs, model_path, opset_version=OPSET,
                          input_names=input_names, output_names=output_names,
                          do_constant_folding=True)
    onnx.checker.check_model(onnx.load(model_path))
    for i, (x, n) in enumerate(zip(inputs, input_names)):
        write_tensor(os.path.join(data, f"input_{i}.pb"), x.numpy(), n)
    for i, (y, n) in enumerate(zip(outputs, output_names)):
        write_tensor(os.path.join(data, f"output_{i}.pb"),
                     y.detach().numpy(), n)
    with open(os.path.join(out, "stamp"), "w") as f:
        f.write(digest + "\n")
    if os.path.isdir(final):
        shutil.rmtree(final, ignore_errors=True)
    try:
        os.rename(out, final)
    except OSError:
        # Another run installed the same export first.
        shutil.rmtree(out, ignore_errors=True)
    return final


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="build/models",
                        help="directory of the exported models "
                             "(default: build/models)")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated model names (default: all)")
    parser.add_argument("--list", action="store_true",
                        help="print the model names and exit")
    args = parser.parse_args()
    if args.list:
        print("\n".join(list(MODELS) + list(LARGE_MODELS)))
        return 0
    for name in args.models.split(","):
        if name not in MODELS and name not in LARGE_MODELS:
            print(f"model_zoo: error: unknown model '{name}' (known: "
                  f"{', '.join(MODELS)})", file=sys.stderr)
            return 2
        print(export(name, args.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
