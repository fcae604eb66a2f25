"""python/autopar/testing/decisions.py: the ReLU and MaxPool decisions of a
PyTorch forward pass, recorded per call and taken the other way on request,
with the gradients following the decision taken; and the decisions a float32
forward may take the other way."""

import os
import sys

import pytest

from conftest import SOURCE_DIR

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "autopar", "testing"))
import decisions  # noqa: E402


class Net(torch.nn.Module):
    """A ReLU called twice (as torchvision's BasicBlock calls its `relu`)
    and a padded 3x3 stride-2 MaxPool."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1, bias=False)
        self.relu = torch.nn.ReLU(inplace=True)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)

    def forward(self, x):
        y = self.pool(self.relu(self.conv(x)))
        return self.relu(y - 0.1).sum()


def make(dtype=torch.float64):
    torch.manual_seed(0)
    net = Net().to(dtype)
    x = torch.randn(2, 1, 6, 6, dtype=dtype)
    return net, x


def conv_grad(net, x):
    net.zero_grad()
    net(x).backward()
    return net.conv.weight.grad.clone()


def test_sites_per_call_and_unchanged_results():
    net, x = make()
    plain = conv_grad(net, x)
    recorder = decisions.instrument(net)
    assert conv_grad(net, x).equal(plain)
    assert [(s.kind, s.name) for s in recorder.sites] == [
        ("relu", "relu#0"), ("maxpool", "pool#0"), ("relu", "relu#1")]
    assert recorder.sites[1].out_shape == (2, 2, 3, 3)


def test_relu_flip_inverts_the_mask_of_that_element():
    net, _ = make()
    recorder = decisions.instrument(net)
    pre = torch.tensor([[-2.0, -1e-7, 3.0, 1e-7]], dtype=torch.float64,
                       requires_grad=True)
    recorder.flips = {"relu#0": {1: None, 3: None}}
    out = net.relu(pre)
    (out * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)).sum() \
        .backward()
    # Flipped, the element and its gradient pass (-1e-7), or neither does.
    assert out.tolist() == [[0.0, -1e-7, 3.0, 0.0]]
    assert pre.grad.tolist() == [[0.0, 2.0, 3.0, 0.0]]
    assert recorder.sites[0].name == "relu#0"
    recorder.reset()
    recorder.flips = {}
    assert net.relu(pre).tolist() == [[0.0, 0.0, 3.0, 1e-7]]


def test_maxpool_flip_routes_the_gradient_to_the_element_taken():
    net, x = make()
    recorder = decisions.instrument(net)
    y = torch.randn(1, 1, 4, 4, dtype=torch.float64, requires_grad=True)
    # Output (0, 0, 1, 1) covers rows and columns 1..3; its first maximum is
    # at the largest of those nine values. Take input (3, 3) instead.
    recorder.flips = {"pool#0": {3: 15}}
    out = net.pool(y)
    out[0, 0, 1, 1].backward()
    grad = torch.zeros(16, dtype=torch.float64)
    grad[15] = 1.0
    assert y.grad.reshape(-1).equal(grad)
    assert float(out[0, 0, 1, 1]) == float(y[0, 0, 3, 3])


def test_candidates_are_within_the_float32_error_of_the_threshold():
    net, x = make()
    recorder64 = decisions.instrument(net)
    net(x)
    sites64 = recorder64.sites
    # A float32 forward that differs from float64 by 1e-3 at every site.
    reference = [decisions.Site(s.kind, s.name, s.value + 1e-3, s.pool,
                                s.out_shape) for s in sites64]
    found = decisions.candidates(sites64, reference, 4.0)
    for name, position, value, margin, error in found:
        assert error == pytest.approx(1e-3)
        assert margin <= 4e-3
        site = next(s for s in sites64 if s.name == name)
        if site.kind == "relu":
            assert value is None
            assert abs(float(site.value.reshape(-1)[position])) == margin
    relu_values = sites64[0].value.reshape(-1).abs()
    expected = int((relu_values <= 4e-3).sum())
    assert sum(1 for f in found if f[0] == "relu#0") == expected
    # A window whose two largest values are 1e-4 apart is a candidate, and
    # its flip takes the second.
    value = torch.zeros(1, 1, 4, 4, dtype=torch.float64)
    value[0, 0, 1, 1], value[0, 0, 2, 2] = 1.0, 1.0 - 1e-4
    site = decisions.Site("maxpool", "p#0", value, (3, 2, 1, 1), (1, 1, 2, 2))
    ref = decisions.Site("maxpool", "p#0", value + 1e-4, (3, 2, 1, 1),
                         (1, 1, 2, 2))
    found = decisions.candidates([site], [ref], 4.0)
    # Only window 3 (rows and columns 1..3) holds both; the others hold
    # (1, 1) and zeros.
    assert [(p, v) for _, p, v, _, _ in found] == [(3, 2 * 4 + 2)]
    assert found[0][3] == pytest.approx(1e-4)
