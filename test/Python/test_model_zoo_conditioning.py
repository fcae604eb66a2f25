"""python/autopar/models/model_zoo.py's conditioning of the random
instances: residual_branch_norms() finds the last batch norm of each
residual branch on the torch.fx graph (through eval-mode identities, not
the skip path's projection), and scale_residual_branches() scales exactly
those before calibration."""

import os
import sys

import pytest

from conftest import SOURCE_DIR

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "autopar", "models"))
import model_zoo  # noqa: E402

nn = torch.nn


class Blocks(nn.Module):
    """Two residual blocks and what is not one: an identity skip whose
    branch ends in a batch norm behind a dropout, a projected skip (both
    operands end in a batch norm; the branch is the deeper one), a sum of
    two equally deep batch norms (no skip path), and an addition of a batch
    norm and a constant."""

    def __init__(self):
        super().__init__()
        self.a1, self.a2 = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.a3, self.a4 = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.1)
        self.b1, self.b2 = nn.Conv2d(4, 8, 1), nn.BatchNorm2d(8)
        self.b3, self.b4 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.proj, self.proj_bn = nn.Conv2d(4, 8, 1), nn.BatchNorm2d(8)
        self.c1, self.c1_bn = nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8)
        self.c2, self.c2_bn = nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8)
        self.d, self.d_bn = nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8)

    def forward(self, x):
        branch = self.a4(self.a3(torch.relu(self.a2(self.a1(x)))))
        x = torch.relu(x + self.drop(branch))
        branch = self.b4(self.b3(torch.relu(self.b2(self.b1(x)))))
        x = torch.relu(self.proj_bn(self.proj(x)) + branch)
        x = self.c1_bn(self.c1(x)) + self.c2_bn(self.c2(x))
        return self.d_bn(self.d(x)) + 1.0


def test_finds_the_branch_ends_only():
    model = Blocks()
    found = model_zoo.residual_branch_norms(model)
    assert [id(m) for m in found] == [id(model.a4), id(model.b4)]


def test_scales_affine_parameters_of_the_branch_ends():
    torch.manual_seed(0)
    model = Blocks()
    model_zoo.randomize(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert model_zoo.scale_residual_branches(model, 0.25) == 2
    after = model.state_dict()
    for key, value in before.items():
        scaled = key.split(".")[0] in ("a4", "b4") and key.endswith(
            ("weight", "bias"))
        torch.testing.assert_close(after[key],
                                   value * 0.25 if scaled else value)


def test_no_batch_norm_no_branches():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    assert model_zoo.residual_branch_norms(model) == []


def test_torchvision_blocks():
    torchvision = pytest.importorskip("torchvision")
    # resnet18: the second batch norm of each of its 8 BasicBlocks, not the
    # 3 downsample projections' batch norms.
    resnet = torchvision.models.resnet18()
    found = model_zoo.residual_branch_norms(resnet)
    names = {id(m): n for n, m in resnet.named_modules()}
    assert sorted(names[id(m)] for m in found) == sorted(
        f"layer{s}.{b}.bn2" for s in range(1, 5) for b in range(2))
    # efficientnet_b0: the projection of each MBConv with a residual
    # connection, through its stochastic depth (9 of its 16 blocks).
    effnet = torchvision.models.efficientnet_b0()
    found = model_zoo.residual_branch_norms(effnet)
    blocks = [m for m in effnet.modules()
              if type(m).__name__ == "MBConv" and m.use_res_connect]
    assert len(blocks) == 9
    assert sorted(id(m) for m in found) == sorted(
        id(b.block[-1][1]) for b in blocks)
    # inception_v3 concatenates its branches: nothing to scale.
    inception = torchvision.models.inception_v3(init_weights=False)
    torch.fx.Tracer().trace(inception)
    assert model_zoo.residual_branch_norms(inception) == []


class PlainConvNet(nn.Module):
    """A convolutional network without normalization layers (AlexNet's
    kind): two convolutions, a pooling, a linear head."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.c2(torch.relu(self.c1(x))))
        return self.fc(x.mean((2, 3)))


def test_calibrate_layers_normalizes_each_layer_on_its_batch():
    torch.manual_seed(0)
    model = PlainConvNet()
    x = torch.randn(4, 3, 8, 8)
    torch.manual_seed(1)
    assert model_zoo.calibrate_layers(model, (x,), steps=2) == 3
    # The calibration batch: the first numbers drawn after the seed.
    torch.manual_seed(1)
    batch = torch.cat([torch.randn_like(x) for _ in range(2)])
    outputs = {}
    hooks = [m.register_forward_hook(
        lambda m, _, y, name=name: outputs.setdefault(name, y))
        for name, m in model.named_children()]
    with torch.no_grad():
        model(batch)
    for hook in hooks:
        hook.remove()
    # Each layer's output channels now have randomize()'s batch-norm affine
    # on that batch: a standard deviation in [0.5, 1.5], a mean near 0.
    for name, axis in (("c1", 1), ("c2", 1), ("fc", 1)):
        y = outputs[name]
        dims = [d for d in range(y.dim()) if d != axis]
        std, mean = y.std(dims), y.mean(dims)
        assert bool(((std > 0.5 - 1e-4) & (std < 1.5 + 1e-4)).all()), name
        assert float(mean.abs().max()) < 0.5, name


def test_calibrate_layers_leaves_normalized_models_alone():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert model_zoo.calibrate_layers(model, (torch.randn(2, 3, 8, 8),)) == 0
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, before[key])
    mlp = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    assert model_zoo.calibrate_layers(mlp, (torch.randn(2, 4),)) == 0


def plain_batch_norm_chain(depth: int) -> nn.Module:
    """`depth` linear + batch norm + ReLU layers without skips: chaotic at
    random initialization when deep."""
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(64, 64, bias=False), nn.BatchNorm1d(64),
                   nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(64, 10))


def calibrated(model, inputs):
    model_zoo.randomize(model)
    model_zoo.calibrate(model, inputs)
    return model


def test_condition_leaves_well_conditioned_models_alone():
    torch.manual_seed(0)
    inputs = (torch.randn(16, 64),)
    model = calibrated(plain_batch_norm_chain(2), inputs)
    assert model_zoo.conditioning_error(model, inputs) <= \
        model_zoo.ILL_CONDITIONED
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert model_zoo.condition(model, inputs) == (0.0, 1.0)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, before[key])


def test_condition_shifts_a_chaotic_chain():
    torch.manual_seed(0)
    inputs = (torch.randn(16, 64),)
    model = calibrated(plain_batch_norm_chain(80), inputs)
    assert model_zoo.conditioning_error(model, inputs) > \
        model_zoo.ILL_CONDITIONED
    bias = model[1].bias.detach().clone()
    weight = model[1].weight.detach().clone()
    shift, _ = model_zoo.condition(model, inputs)
    assert shift in model_zoo.BATCH_NORM_SHIFTS
    torch.testing.assert_close(model[1].bias.detach(), bias + shift * weight)
    assert model_zoo.conditioning_error(model, inputs) <= \
        model_zoo.WELL_CONDITIONED
