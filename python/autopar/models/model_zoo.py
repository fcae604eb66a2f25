#!/usr/bin/env python3
# ===- model_zoo.py - real architectures exported from PyTorch ------------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Exports the real architectures autopar is tested on, with PyTorch outputs.

Each model is built with a fixed seed, randomized, a convolutional network
without normalization layers calibrated layer by layer (so that its outputs
depend on its input), conditioned (the last batch norm of every residual
branch scaled by RESIDUAL_BRANCH_SCALE, so that float32 rounding is not
amplified beyond the comparison's tolerance), its batch norms calibrated,
an instance that is still ill conditioned conditioned further (condition(),
measured against float64: its batch norms shifted and its output scaled)
(instance()), put in eval mode, exported with
torch.onnx.export at opset 17, and written with one test case in the ONNX
test-data layout:

    <cache>/<name>/model.onnx
    <cache>/<name>/test_data_set_0/input_<i>.pb, output_<i>.pb

where the outputs are PyTorch's own. Batch sizes divide 1, 2 and 4 devices.
A model is only re-exported when what it depends on changes (its stamp file
holds model_hash()), so test runs reuse the cache.

Models (`gpt2_124m`, GPT-2 small's size, only on request): mlp, gpt2_block (a GPT-2 decoder block: pre-LayerNorm causal
self-attention and a GELU MLP), tiny_gpt (token and position embeddings, two
blocks, final LayerNorm, LM head; tiny_gpt_tied with the head tied to the token
embedding), resnet18 and mobilenet_v2 (torchvision, at
64x64 with 10 classes), depthwise_net (mobilenet_v2's blocks at 16x16), vit (a small torchvision VisionTransformer), lstm
and gru (two-layer bidirectional recurrent sequence models with a linear
head per step).

The zoo (ZOO; python/autopar/testing/zoo_check.py checks it, docs/models.md
has the table): every torchvision 0.14 classification model with at most
about 100M parameters (TORCHVISION, with its input size and batch; the
others are in TORCHVISION_EXCLUDED with the reason), a UNet, the LSTM and
GRU models, a BERT-like encoder (nn.TransformerEncoder) and a detection
head (FPN, class and box heads, no NMS). `--zoo` exports all of it. Each
model's stamp is a digest of its builder, the module's classes and the
export code, so editing one model re-exports only that one.

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
import torch.fx

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
                 layers: int, tied: bool = False):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(seq, dim)
        self.blocks = torch.nn.ModuleList(
            [Block(dim, heads, seq) for _ in range(layers)])
        self.ln = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        if tied:
            # GPT-2's tied embeddings: the LM head is the token embedding.
            self.head.weight = self.tok.weight

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


def build_tiny_gpt_tied():
    model = TinyGPT(vocab=128, dim=64, heads=4, seq=16, layers=2, tied=True)
    return model, (torch.randint(0, 128, (4, 16), dtype=torch.long),)


def build_resnet18():
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    return model, (torch.randn(4, 3, 64, 64),)


def build_mobilenet_v2():
    import torchvision
    model = torchvision.models.mobilenet_v2(num_classes=10)
    return model, (torch.randn(4, 3, 64, 64),)


class DepthwiseNet(torch.nn.Module):
    """mobilenet_v2's building blocks at a size whose training step float32
    reproduces: a stride-2 stem, an inverted residual (1x1 expansion,
    depthwise 3x3, 1x1 projection, residual add), a stride-2 depthwise
    convolution with channel multiplier 2, batch norms, ReLU6 (Clip), global
    average pooling and a linear head."""

    def __init__(self):
        super().__init__()
        nn = torch.nn

        def block(cin, cout, kernel, stride=1, groups=1, act=True):
            layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2,
                                groups=groups, bias=False),
                      nn.BatchNorm2d(cout)]
            return nn.Sequential(*layers, *([nn.ReLU6()] if act else []))

        self.stem = block(3, 16, 3, stride=2)
        self.expand = block(16, 32, 1)
        self.depthwise = block(32, 32, 3, groups=32)
        self.project = block(32, 16, 1, act=False)
        self.down = block(16, 32, 3, stride=2, groups=16)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.project(self.depthwise(self.expand(x)))
        x = self.down(x).mean((2, 3))
        return self.head(x)


def build_depthwise_net():
    return DepthwiseNet(), (torch.randn(4, 3, 16, 16),)


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


# ===--------------------------------------------------------------------=== #
# The zoo (python/autopar/testing/zoo_check.py, docs/models.md)
# ===--------------------------------------------------------------------=== #

class UNet(torch.nn.Module):
    """A two-level UNet: conv blocks, max-pool downsampling, one upsampling
    by ConvTranspose and one by bilinear Resize, skip connections by Concat,
    a 1x1 convolution to per-pixel class scores."""

    @staticmethod
    def block(cin: int, cout: int) -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Conv2d(cin, cout, 3, padding=1),
            torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
            torch.nn.Conv2d(cout, cout, 3, padding=1),
            torch.nn.BatchNorm2d(cout), torch.nn.ReLU())

    def __init__(self, channels: int = 3, classes: int = 4, width: int = 16):
        super().__init__()
        w = width
        self.enc1 = self.block(channels, w)
        self.enc2 = self.block(w, 2 * w)
        self.mid = self.block(2 * w, 4 * w)
        self.pool = torch.nn.MaxPool2d(2)
        self.up2 = torch.nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.dec2 = self.block(4 * w, 2 * w)
        self.up1 = torch.nn.Upsample(scale_factor=2, mode="bilinear",
                                     align_corners=False)
        self.dec1 = self.block(3 * w, w)
        self.head = torch.nn.Conv2d(w, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


class BertEncoder(torch.nn.Module):
    """A BERT-like encoder: token, position and segment-free embeddings,
    LayerNorm, nn.TransformerEncoder (post-LN, GELU), a tanh pooler over the
    first token and a classifier."""

    def __init__(self, vocab: int, dim: int, heads: int, seq: int,
                 layers: int, classes: int):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(seq, dim)
        self.ln = torch.nn.LayerNorm(dim)
        layer = torch.nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=4 * dim, dropout=0.1,
            activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers,
                                                   enable_nested_tensor=False)
        self.pooler = torch.nn.Linear(dim, dim)
        self.classifier = torch.nn.Linear(dim, classes)

    def forward(self, idx):
        t = idx.shape[1]
        positions = torch.arange(t, dtype=torch.long).unsqueeze(0)
        x = self.ln(self.tok(idx) + self.pos(positions))
        x = self.encoder(x)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(pooled)


class DetectionHead(torch.nn.Module):
    """A single-stage detector without NMS: a three-stage strided conv
    backbone, an FPN (1x1 laterals, nearest 2x upsampling and Add top-down,
    3x3 smoothing), and shared class and box conv heads on every level whose
    outputs are flattened to [batch, anchors, classes] and [batch, anchors,
    4] and concatenated over the levels."""

    def __init__(self, classes: int = 5, anchors: int = 3, width: int = 32):
        super().__init__()

        def stage(cin, cout):
            return torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 3, stride=2, padding=1),
                torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
                torch.nn.Conv2d(cout, cout, 3, padding=1),
                torch.nn.BatchNorm2d(cout), torch.nn.ReLU())

        self.stem = stage(3, 16)
        self.c3 = stage(16, 32)
        self.c4 = stage(32, 64)
        self.c5 = stage(64, 128)
        self.lat = torch.nn.ModuleList(
            [torch.nn.Conv2d(c, width, 1) for c in (32, 64, 128)])
        self.smooth = torch.nn.ModuleList(
            [torch.nn.Conv2d(width, width, 3, padding=1) for _ in range(3)])
        self.tower = torch.nn.Sequential(
            torch.nn.Conv2d(width, width, 3, padding=1), torch.nn.ReLU())
        self.cls = torch.nn.Conv2d(width, anchors * classes, 3, padding=1)
        self.box = torch.nn.Conv2d(width, anchors * 4, 3, padding=1)
        self.classes = classes

    def forward(self, x):
        c3 = self.c3(self.stem(x))
        c4 = self.c4(c3)
        c5 = self.c5(c4)
        p5 = self.lat[2](c5)
        p4 = self.lat[1](c4) + torch.nn.functional.interpolate(
            p5, scale_factor=2.0, mode="nearest")
        p3 = self.lat[0](c3) + torch.nn.functional.interpolate(
            p4, scale_factor=2.0, mode="nearest")
        scores, boxes = [], []
        for level, p in enumerate((p3, p4, p5)):
            f = self.tower(self.smooth[level](p))
            b = f.shape[0]
            scores.append(self.cls(f).permute(0, 2, 3, 1).reshape(
                b, -1, self.classes))
            boxes.append(self.box(f).permute(0, 2, 3, 1).reshape(b, -1, 4))
        return torch.cat(scores, dim=1), torch.cat(boxes, dim=1)


def build_unet():
    return UNet(), (torch.randn(4, 3, 32, 32),)


def build_bert():
    model = BertEncoder(vocab=256, dim=64, heads=4, seq=16, layers=2,
                        classes=3)
    return model, (torch.randint(0, 256, (4, 16), dtype=torch.long),)


def build_detection():
    return DetectionHead(), (torch.randn(4, 3, 64, 64),)


def torchvision_builder(name: str, size: int, batch: int):
    """A builder of torchvision model `name` (1000 classes, random weights)
    on a batch of `batch` RGB images of `size` x `size`."""

    def build():
        import torchvision
        model = torchvision.models.get_model(name, weights=None)
        return model, (torch.randn(batch, 3, size, size),)

    build.__name__ = f"build_tv_{name}"
    return build


# Every torchvision 0.14 classification model with at most about 100M
# parameters (1000 classes, as published): name -> (input size, batch).
# 64x64 where the architecture accepts it; inception_v3 needs at least 75;
# the ViTs (a fixed position-embedding grid) and MaxViT (windows of 7 on a
# 1/32 feature map) need 224, and so does AlexNet (its adaptive average
# pooling to 6x6 exports only when the 6x6 divides its input: 195 to 226).
TORCHVISION = {
    "alexnet": (224, 4),
    "convnext_tiny": (64, 4),
    "convnext_small": (64, 4),
    "convnext_base": (64, 4),
    "densenet121": (64, 4),
    "densenet161": (64, 4),
    "densenet169": (64, 4),
    "densenet201": (64, 4),
    "efficientnet_b0": (64, 4),
    "efficientnet_b1": (64, 4),
    "efficientnet_b2": (64, 4),
    "efficientnet_b3": (64, 4),
    "efficientnet_b4": (64, 4),
    "efficientnet_b5": (64, 4),
    "efficientnet_b6": (64, 4),
    "efficientnet_b7": (64, 4),
    "efficientnet_v2_s": (64, 4),
    "efficientnet_v2_m": (64, 4),
    "googlenet": (64, 4),
    "inception_v3": (75, 4),
    "maxvit_t": (224, 4),
    "mnasnet0_5": (64, 4),
    "mnasnet0_75": (64, 4),
    "mnasnet1_0": (64, 4),
    "mnasnet1_3": (64, 4),
    "mobilenet_v2": (64, 4),
    "mobilenet_v3_large": (64, 4),
    "mobilenet_v3_small": (64, 4),
    "regnet_x_400mf": (64, 4),
    "regnet_x_800mf": (64, 4),
    "regnet_x_1_6gf": (64, 4),
    "regnet_x_3_2gf": (64, 4),
    "regnet_x_8gf": (64, 4),
    "regnet_x_16gf": (64, 4),
    "regnet_y_400mf": (64, 4),
    "regnet_y_800mf": (64, 4),
    "regnet_y_1_6gf": (64, 4),
    "regnet_y_3_2gf": (64, 4),
    "regnet_y_8gf": (64, 4),
    "regnet_y_16gf": (64, 4),
    "resnet18": (64, 4),
    "resnet34": (64, 4),
    "resnet50": (64, 4),
    "resnet101": (64, 4),
    "resnet152": (64, 4),
    "resnext50_32x4d": (64, 4),
    "resnext101_32x8d": (64, 4),
    "resnext101_64x4d": (64, 4),
    "shufflenet_v2_x0_5": (64, 4),
    "shufflenet_v2_x1_0": (64, 4),
    "shufflenet_v2_x1_5": (64, 4),
    "shufflenet_v2_x2_0": (64, 4),
    "squeezenet1_0": (64, 4),
    "squeezenet1_1": (64, 4),
    "swin_t": (64, 4),
    "swin_s": (64, 4),
    "swin_b": (64, 4),
    "vit_b_16": (224, 4),
    "vit_b_32": (224, 4),
    "wide_resnet50_2": (64, 4),
}

# The torchvision classification models left out of the zoo, with the reason.
SWIN_V2_EXPORT = ("torch.onnx 1.13 cannot export aten::zero (opset 17): "
                  "shifted_window_attention_v2 zeroes the key bias in place "
                  "(qkv_bias[length:2 * length].zero_())")
TORCHVISION_EXCLUDED = {
    "swin_v2_t": SWIN_V2_EXPORT,
    "swin_v2_s": SWIN_V2_EXPORT,
    "swin_v2_b": SWIN_V2_EXPORT,
    "convnext_large": "198M parameters",
    "efficientnet_v2_l": "119M parameters",
    "regnet_x_32gf": "108M parameters",
    "regnet_y_32gf": "145M parameters",
    "regnet_y_128gf": "645M parameters",
    "vgg11": "133M parameters",
    "vgg11_bn": "133M parameters",
    "vgg13": "133M parameters",
    "vgg13_bn": "133M parameters",
    "vgg16": "138M parameters",
    "vgg16_bn": "138M parameters",
    "vgg19": "144M parameters",
    "vgg19_bn": "144M parameters",
    "vit_h_14": "632M parameters",
    "vit_l_16": "304M parameters",
    "vit_l_32": "307M parameters",
    "wide_resnet101_2": "127M parameters",
}

# The zoo: name -> builder. One representative per family runs in CI
# (CI_ZOO); `scripts/test.sh --all` runs all of them.
ZOO = {
    **{f"tv_{name}": torchvision_builder(name, size, batch)
       for name, (size, batch) in TORCHVISION.items()},
    "unet": build_unet,
    "lstm": build_lstm,
    "gru": build_gru,
    "bert": build_bert,
    "detection": build_detection,
}


MODELS = {
    "mlp": build_mlp,
    "gpt2_block": build_gpt2_block,
    "tiny_gpt": build_tiny_gpt,
    "tiny_gpt_tied": build_tiny_gpt_tied,
    "resnet18": build_resnet18,
    "mobilenet_v2": build_mobilenet_v2,
    "depthwise_net": build_depthwise_net,
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


def builder_of(name: str):
    """The builder of model `name` (core, large or zoo), or None."""
    return {**ZOO, **MODELS, **LARGE_MODELS}.get(name)


def model_hash(name: str) -> str:
    """A digest of what model `name`'s export depends on: its builder (with
    the arguments a torchvision builder closes over), the module classes,
    the export code and the PyTorch version. Editing one model or the zoo
    tables re-exports only the models that changed."""
    import inspect
    builder = builder_of(name)
    parts = [name, torch.__version__, repr(RESIDUAL_BRANCH_SCALE),
             repr((ATOL, RTOL, ILL_CONDITIONED, WELL_CONDITIONED,
                   BATCH_NORM_SHIFTS)),
             inspect.getsource(builder),
             repr([c.cell_contents for c in builder.__closure__ or ()])]
    module = sys.modules[__name__]
    for _, obj in sorted(vars(module).items()):
        if inspect.isclass(obj) and obj.__module__ == module.__name__:
            parts.append(inspect.getsource(obj))
    for fn in (randomize, _is_add, residual_branch_norms,
               scale_residual_branches, calibrate, has_normalization,
               calibrate_layers, conditioning_error, shift_batch_norms,
               scale_output, condition, instance, export, write_tensor):
        parts.append(inspect.getsource(fn))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


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


# The factor scale_residual_branches() gives the last batch norm of every
# residual branch (docs/models.md, "Conditioning").
RESIDUAL_BRANCH_SCALE = 0.1


def _is_add(node) -> bool:
    """Whether torch.fx `node` adds two tensors (`a + b`, `a += b`,
    torch.add, Tensor.add)."""
    import operator
    if node.op == "call_function":
        return node.target in (operator.add, operator.iadd, torch.add)
    return node.op == "call_method" and node.target in ("add", "add_")


def residual_branch_norms(model: torch.nn.Module) -> list:
    """The batch norms that end a residual branch of `model`, found on its
    torch.fx graph: a batch norm whose output reaches an addition only
    through ops that are the identity in eval mode (dropout, stochastic
    depth, torch.nn.Identity), where the other operand of the addition is
    shallower (fewer batch norms on its longest path from the input: the
    skip path, an identity or a projection). Returns the modules, in graph
    order, without duplicates; a model without batch norms, or one torch.fx
    cannot trace (Python control flow on tensor values), has none.
    """
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return []
    try:
        graph = torch.fx.Tracer().trace(model)
    except Exception:  # noqa: BLE001 - any tracing failure: no branches
        return []
    modules = dict(model.named_modules())

    def module_of(node):
        return modules.get(node.target) if node.op == "call_module" else None

    def is_transparent(node) -> bool:
        if isinstance(module_of(node), (torch.nn.Identity,
                                        torch.nn.modules.dropout._DropoutNd)):
            return True
        return node.op == "call_function" and getattr(
            node.target, "__name__", "") in ("stochastic_depth", "dropout")

    depth = {}
    found = []
    for node in graph.nodes:
        depth[node] = max((depth[a] for a in node.all_input_nodes),
                          default=0)
        if isinstance(module_of(node),
                      torch.nn.modules.batchnorm._BatchNorm):
            depth[node] += 1
        if not _is_add(node) or len(node.args) < 2 or not all(
                isinstance(a, torch.fx.Node) for a in node.args[:2]):
            continue
        operands = list(node.args[:2])
        for this, other in (operands, operands[::-1]):
            source = this
            while is_transparent(source) and source.all_input_nodes:
                source = source.all_input_nodes[0]
            norm = module_of(source)
            if (isinstance(norm, torch.nn.modules.batchnorm._BatchNorm)
                    and depth[source] > depth[other]
                    and all(norm is not m for m in found)):
                found.append(norm)
    return found


def scale_residual_branches(model: torch.nn.Module,
                            scale: float = RESIDUAL_BRANCH_SCALE) -> int:
    """Multiplies the affine weight and bias of the last batch norm of every
    residual branch (residual_branch_norms()) by `scale`; returns how many.

    A residual network at random initialization is chaotic: every block adds
    a branch as large as the stream it adds to, so a relative perturbation
    (float32 rounding) grows exponentially with the number of blocks, and
    two correct float32 implementations of a deep one (resnet152,
    efficientnet_b7) differ by more than the comparison's tolerance.
    Scaling the branches down (as SkipInit, Fixup and torchvision's
    zero_init_residual do, but small and non-zero, so that every branch
    still changes the output) keeps each block close to the identity.
    Called before calibrate(), so the batch norms downstream normalize the
    scaled stream.
    """
    norms = residual_branch_norms(model)
    with torch.no_grad():
        for norm in norms:
            if norm.affine:
                norm.weight.mul_(scale)
                norm.bias.mul_(scale)
    return len(norms)


def calibrate(model: torch.nn.Module, inputs, steps: int = 4) -> None:
    """Sets every batch norm's running statistics to those of its real input.

    randomize()'s statistics do not match what flows into a batch norm, so
    through the depth of a network activations grow (resnet50's outputs reach
    1e3, inception_v3's 9e9) and float32 rounding alone exceeds the
    comparison's tolerance. As in a trained model, each batch norm should
    normalize its input: with the rest of the model in eval mode, the batch
    norms run `steps` forward passes on random inputs shaped like
    `inputs` in train mode with cumulative averaging (momentum None), and
    then keep the average batch mean and variance.
    """
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    momenta = [m.momentum for m in norms]
    model.eval()
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        for _ in range(steps):
            model(*[torch.randn_like(x) if x.is_floating_point() else x
                    for x in inputs])
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum
    model.eval()


# Normalization layers: a model with none of them gets calibrate_layers().
NORMALIZATIONS = (torch.nn.modules.batchnorm._NormBase, torch.nn.LayerNorm,
                  torch.nn.GroupNorm, torch.nn.LocalResponseNorm)


def has_normalization(model: torch.nn.Module) -> bool:
    """Whether `model` holds a normalization layer (NORMALIZATIONS)."""
    return any(isinstance(m, NORMALIZATIONS) for m in model.modules())


def calibrate_layers(model: torch.nn.Module, inputs, steps: int = 4) -> int:
    """Gives a convolutional network without normalization layers what
    calibrate() and randomize() give a batch-normalized one; returns how
    many layers it changed (0 for a model with a normalization layer or
    without a convolution).

    Without normalization the signal of a random instance fades or grows
    with depth (each layer's initialization sets its gain), the biases take
    over, and every image gives nearly the same output (torchvision's
    AlexNet and SqueezeNet: a spread across the batch of 0.04, against 0.44
    to 0.70 for the normalized models). As in a data-dependent
    initialization (Kraehenbuehl et al. 2016; Mishkin and Matas's LSUV),
    every convolution and linear layer, in execution order, has its output
    channels set to zero mean and unit variance over `steps` random batches
    shaped like `inputs`, then to randomize()'s batch-norm affine (weight
    U(0.5, 1.5), bias N(0, 0.1)): its weight and bias are rewritten, so the
    model stays the same graph. Each layer is calibrated on the outputs of
    the layers before it, already rewritten (one forward pass: a hook
    rewrites the layer the first time it runs and returns what the
    rewritten layer computes).
    """
    convolutions = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
    layers = convolutions + (torch.nn.Linear,)
    if has_normalization(model) or not any(
            isinstance(m, convolutions) for m in model.modules()):
        return 0
    done = set()

    def rewrite(module, _, output):
        if id(module) in done or not isinstance(output, torch.Tensor):
            return None
        done.add(id(module))
        # Output channels: dimension 1 of a convolution, the last of a
        # linear layer; both are dimension 0 of the weight.
        axis = 1 if isinstance(module, convolutions) else output.dim() - 1
        dims = [d for d in range(output.dim()) if d != axis]
        mean = output.mean(dims)
        std = output.std(dims).clamp_min(1e-6)
        gain = torch.empty_like(std).uniform_(0.5, 1.5) / std
        shift = torch.empty_like(std).normal_(0.0, 0.1)
        # y' = (y - mean) * gain + shift, for y = W x + b.
        module.weight.mul_(gain.view([-1] + [1] * (module.weight.dim() - 1)))
        channel = [1] * output.dim()
        channel[axis] = -1
        if module.bias is None:
            return output * gain.view(channel)
        module.bias.copy_((module.bias - mean) * gain + shift)
        return (output - mean.view(channel)) * gain.view(channel) + \
            shift.view(channel)

    handles = [m.register_forward_hook(rewrite) for m in model.modules()
               if isinstance(m, layers)]
    model.eval()
    try:
        with torch.no_grad():
            model(*[torch.cat([torch.randn_like(x) for _ in range(steps)])
                    if x.is_floating_point() else x.repeat(
                        steps, *[1] * (x.dim() - 1)) for x in inputs])
    finally:
        for handle in handles:
            handle.remove()
    return len(done)


# The zoo's comparison tolerances (zoo_check.py). An instance is ill
# conditioned when PyTorch float32 misses float64 by more than
# ILL_CONDITIONED of an element's tolerance (atol + rtol * |float64|; the
# margin of zoo_precision.py --torch-only, room for another implementation's
# rounding); condition() then conditions it until that fraction is at most
# WELL_CONDITIONED (googlenet's, the largest of the models that need
# nothing), shifting its batch norms' biases by the smallest of
# BATCH_NORM_SHIFTS times their weights that does.
ATOL, RTOL = 1e-4, 1e-3
ILL_CONDITIONED = 1.0 / 3.0
WELL_CONDITIONED = 0.1
BATCH_NORM_SHIFTS = (0.5, 1.0, 1.5, 2.0)


def conditioning_error(model: torch.nn.Module, inputs) -> float:
    """How far PyTorch float32 is from float64 on `model` and `inputs`: the
    largest error of any output element over its tolerance, ATOL + RTOL *
    |float64| (a copy of `model` runs in float64)."""
    import copy
    model.eval()
    exact = copy.deepcopy(model).double()
    with torch.no_grad():
        ours = model(*inputs)
        ref = exact(*[x.double() if x.is_floating_point() else x
                      for x in inputs])
    if not isinstance(ours, (tuple, list)):
        ours, ref = (ours,), (ref,)
    worst = 0.0
    for y32, y64 in zip(ours, ref):
        tol = ATOL + RTOL * y64.abs()
        worst = max(worst, float(((y32.double() - y64).abs() / tol).max()))
    return worst


def shift_batch_norms(model: torch.nn.Module, shift: float) -> int:
    """Adds `shift` times its affine weight to every batch norm's bias;
    returns how many batch norms changed."""
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
             and m.affine]
    with torch.no_grad():
        for norm in norms:
            norm.bias.add_(shift * norm.weight)
    return len(norms)


def scale_output(model: torch.nn.Module, inputs) -> float:
    """Scales the last convolution or linear layer that runs in `model` so
    that its first output has an RMS of 1 on `inputs`; returns the factor
    (1.0: unchanged, when the output is not proportional to that layer's,
    e.g. behind a softmax, which it checks)."""
    convolutions = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
    order = []
    hooks = [m.register_forward_hook(lambda m, *_: order.append(m))
             for m in model.modules()
             if isinstance(m, convolutions + (torch.nn.Linear,))]
    model.eval()
    try:
        with torch.no_grad():
            before = model(*inputs)
    finally:
        for hook in hooks:
            hook.remove()
    first = before[0] if isinstance(before, (tuple, list)) else before
    rms = float(first.double().pow(2).mean().sqrt())
    if not order or rms == 0.0:
        return 1.0
    last, factor = order[-1], 1.0 / rms
    params = [p for p in (last.weight, last.bias) if p is not None]
    with torch.no_grad():
        for p in params:
            p.mul_(factor)
        after = model(*inputs)
        after = after[0] if isinstance(after, (tuple, list)) else after
        if not torch.allclose(after, first * factor, rtol=1e-4,
                              atol=1e-6 * factor * rms):
            for p in params:
                p.div_(factor)
            return 1.0
    return factor


def condition(model: torch.nn.Module, inputs):
    """Makes a calibrated batch-normalized instance whose float32 rounding
    is amplified beyond the comparison's tolerance well conditioned;
    returns the batch-norm shift and the output scale it applied ((0.0,
    1.0): none, the instance was well conditioned or has no batch norm).

    A deep batch-normalized ReLU network without residual connections
    (inception_v3: 47 conv layers on its longest path) is chaotic at random
    initialization: a batch norm removes each channel's mean, a third of
    the second moment of a ReLU's output for z ~ N(0, 1), so relative to
    the signal a perturbation grows by sqrt(E[relu'(z)^2] / Var(relu(z))) =
    sqrt(0.5 / 0.34) = 1.21 per layer (Yang et al. 2019). Shifting each
    batch norm's bias by s times its weight (z ~ N(s, 1)) keeps the ReLUs
    mostly linear: the factor is 1.12 for s = 0.5, 1.06 for s = 1. It also
    makes the outputs depend less on the input (a smaller spread across the
    batch), so it is applied only where it is needed, and as little as
    needed. And the comparison's absolute tolerance (1e-4) assumes outputs
    of order 1, as the other models' are; a classifier initialized with
    large weights (inception_v3's: a standard deviation of 0.1 over 2048
    inputs, logits up to 31) asks its small outputs for a relative accuracy
    float32 rounding through the depth does not give, so the output layer
    is scaled to outputs of RMS 1 (scale_output()).

    When conditioning_error() (on the export's inputs) is above
    ILL_CONDITIONED of the tolerance, each shift of (0,) +
    BATCH_NORM_SHIFTS is tried from the calibrated instance (shifted,
    recalibrated with calibrate(), its output scaled), and the first that
    brings it to WELL_CONDITIONED is kept, or else the one with the smallest
    error.
    """
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
             and m.affine]
    if not norms or conditioning_error(model, inputs) <= ILL_CONDITIONED:
        return 0.0, 1.0
    import copy
    calibrated = copy.deepcopy(model.state_dict())
    best = None
    for shift in (0.0,) + BATCH_NORM_SHIFTS:
        model.load_state_dict(calibrated)
        if shift:
            shift_batch_norms(model, shift)
            calibrate(model, inputs)
        scale = scale_output(model, inputs)
        error = conditioning_error(model, inputs)
        if best is None or error < best[2]:
            best = (shift, scale, error, copy.deepcopy(model.state_dict()))
        if error <= WELL_CONDITIONED:
            return shift, scale
    model.load_state_dict(best[3])
    return best[0], best[1]


def instance(name: str):
    """Model `name` as export() writes it, and its inputs: built with seed
    0, randomized (randomize()), a convolutional network without
    normalization layers calibrated layer by layer (calibrate_layers()),
    its residual branches scaled (scale_residual_branches()), its batch
    norms calibrated (calibrate()), an ill-conditioned instance conditioned
    (condition()), in eval mode."""
    torch.manual_seed(0)
    model, inputs = builder_of(name)()
    randomize(model)
    calibrate_layers(model, inputs)
    scale_residual_branches(model, RESIDUAL_BRANCH_SCALE)
    calibrate(model, inputs)
    condition(model, inputs)
    model.eval()
    return model, inputs


def export(name: str, cache: str) -> str:
    """Exports model `name` into `cache` unless it is up to date there."""
    out = os.path.join(cache, name)
    stamp = os.path.join(out, "stamp")
    os.makedirs(cache, exist_ok=True)
    digest = model_hash(name)
    if os.path.exists(stamp) and open(stamp).read().strip() == digest:
        return out
    model, inputs = instance(name)
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
    parser.add_argument("--zoo", action="store_true",
                        help="export every model of the zoo (ZOO) instead")
    parser.add_argument("--list", action="store_true",
                        help="print the model names and exit")
    args = parser.parse_args()
    if args.list:
        print("\n".join(dict.fromkeys(
            list(MODELS) + list(LARGE_MODELS) + list(ZOO))))
        return 0
    names = list(ZOO) if args.zoo else args.models.split(",")
    for name in names:
        if builder_of(name) is None:
            print(f"model_zoo: error: unknown model '{name}' (see --list)",
                  file=sys.stderr)
            return 2
        print(export(name, args.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
