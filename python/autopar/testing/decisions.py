# ===- decisions.py - ReLU and MaxPool decisions of a PyTorch step -------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""The discrete decisions of a PyTorch training step, recorded and overridden.

A ReLU passes its input and its gradient where the input is > 0; a MaxPool
routes each window's gradient to its first maximum. Both are discontinuous:
where an input lies within float32 rounding of zero (or two window values
within rounding of each other), a float32 step may take the decision the
other way from float64, and the gradients of every weight before it change by
that element's contribution -- far beyond the float32 tolerance, with no rule
wrong. train_vs_torch.py --float64-steps uses this module to check such a
step against float64 with the decision taken the float32 program's way, and
to name every decision so taken.

`instrument(model)` replaces every torch.nn.ReLU and torch.nn.MaxPool2d of a
model (in place) by modules that record their inputs per call (a module
called twice, as torchvision's BasicBlock calls its `relu`, is two sites) and
apply `Recorder.flips`. Functional relus (torch.nn.functional.relu) are not
seen.
"""

import torch
import torch.nn.functional as F


class Site:
    """One call of a ReLU or MaxPool module in a forward pass."""

    def __init__(self, kind, name, value, pool=None, out_shape=None):
        self.kind = kind    # "relu" or "maxpool"
        self.name = name    # module name and call number: "layer1.1.relu#0"
        self.value = value  # the input, detached
        self.pool = pool    # (kernel, stride, padding, dilation) of a maxpool
        self.out_shape = out_shape  # a maxpool's output shape


class Recorder:
    """The sites of the last forward pass and the decisions to flip.

    `flips` maps a site name to {position: value}: for a ReLU the flat
    element index whose mask is inverted (value None); for a MaxPool the
    flat index of an output element and the flat index, within its
    (image, channel) plane, of the input element its window takes instead."""

    def __init__(self):
        self.sites = []
        self.flips = {}
        self._calls = {}

    def reset(self):
        self.sites = []
        self._calls = {}

    def _site_name(self, module_name):
        count = self._calls.get(module_name, 0)
        self._calls[module_name] = count + 1
        return f"{module_name}#{count}"


class _ReLU(torch.nn.Module):
    def __init__(self, recorder, name):
        super().__init__()
        self.recorder, self.name = recorder, name

    def forward(self, x):
        site = self.recorder._site_name(self.name)
        self.recorder.sites.append(Site("relu", site, x.detach().clone()))
        mask = x > 0
        flips = self.recorder.flips.get(site)
        if flips:
            mask = mask.clone().reshape(-1)
            index = torch.tensor(sorted(flips), dtype=torch.long)
            mask[index] = ~mask[index]
            mask = mask.reshape(x.shape)
        # x * mask is relu(x) with the mask as its gradient (where a flip
        # passes a negative input, the value passes too: rounding-sized).
        return x * mask.to(x.dtype)


class _MaxPool2d(torch.nn.Module):
    def __init__(self, recorder, name, pool):
        super().__init__()
        self.recorder, self.name = recorder, name
        self.kernel, self.stride = pool.kernel_size, pool.stride
        self.padding, self.dilation = pool.padding, pool.dilation
        if pool.ceil_mode:
            raise ValueError(f"{name}: ceil_mode MaxPool2d is not supported")

    def forward(self, x):
        site = self.recorder._site_name(self.name)
        pool = (self.kernel, self.stride, self.padding, self.dilation)
        out, index = F.max_pool2d(x, self.kernel, self.stride, self.padding,
                                  self.dilation, return_indices=True)
        self.recorder.sites.append(Site("maxpool", site, x.detach().clone(),
                                        pool, tuple(out.shape)))
        flips = self.recorder.flips.get(site)
        if flips:
            index = index.clone().reshape(-1)
            for position, taken in flips.items():
                index[position] = taken
            index = index.reshape(out.shape)
        # Gathering by the indices routes each window's gradient to the
        # element it takes, as MaxPool's backward does.
        n, c = x.shape[:2]
        return x.reshape(n, c, -1).gather(
            2, index.reshape(n, c, -1)).reshape(out.shape)


def instrument(model):
    """Replaces the ReLU and MaxPool2d modules of `model` in place; returns
    the Recorder they report to."""
    recorder = Recorder()
    for parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            name = f"{parent_name}.{child_name}" if parent_name else child_name
            if type(child) is torch.nn.ReLU:
                setattr(parent, child_name, _ReLU(recorder, name))
            elif type(child) is torch.nn.MaxPool2d:
                setattr(parent, child_name, _MaxPool2d(recorder, name, child))
    return recorder


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _windows(x, pool):
    """The windows of a MaxPool2d input: [N, C, k*k, L] values (padding is
    -inf) and, for each (offset, window), the flat input index within the
    plane (-1 in the padding), and the output's spatial shape."""
    kernel, stride, padding, dilation = map(_pair, pool)
    n, c, h, w = x.shape
    padded = F.pad(x, (padding[1], padding[1], padding[0], padding[0]),
                   value=float("-inf"))
    cols = F.unfold(padded.reshape(n * c, 1, *padded.shape[2:]), kernel,
                    dilation=dilation, stride=stride)
    oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    kh = torch.arange(kernel[0]).repeat_interleave(kernel[1]) * dilation[0]
    kw = torch.arange(kernel[1]).repeat(kernel[0]) * dilation[1]
    rows = (torch.arange(oh) * stride[0]).repeat_interleave(ow)
    columns = (torch.arange(ow) * stride[1]).repeat(oh)
    ih = kh[:, None] + rows[None, :] - padding[0]
    iw = kw[:, None] + columns[None, :] - padding[1]
    inside = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
    flat = torch.where(inside, ih * w + iw, torch.full_like(ih, -1))
    return cols.reshape(n, c, kernel[0] * kernel[1], oh * ow), flat


def candidates(sites, reference, factor):
    """The decisions of a float64 forward pass (`sites`) that a float32
    forward may take the other way: a ReLU input whose magnitude, or a
    MaxPool window whose two largest values' gap (when it is not an exact
    tie, which every precision breaks alike), is at most `factor` times the
    largest difference at that site between the float32 forward
    (`reference`, the same sites from the same weights) and float64.
    Returns (site name, position, value, float64 margin, float32 error)
    tuples, the flips Recorder.flips takes."""
    found = []
    for site, ref in zip(sites, reference):
        if site.name != ref.name or site.value.shape != ref.value.shape:
            raise ValueError(f"site {site.name} has no float32 counterpart")
        error = float((site.value - ref.value.to(site.value.dtype))
                      .abs().max())
        bound = factor * error
        if site.kind == "relu":
            margin = site.value.reshape(-1).abs()
            for i in torch.nonzero(margin <= bound).reshape(-1).tolist():
                found.append((site.name, i, None, float(margin[i]), error))
            continue
        values, flat = _windows(site.value, site.pool)
        top, where = values.topk(2, dim=2)
        gap = top[:, :, 0] - top[:, :, 1]
        n, c, _, windows = values.shape
        close = (gap > 0) & (gap <= bound)
        for pos in torch.nonzero(close.reshape(-1)).reshape(-1).tolist():
            image_channel, window = divmod(pos, windows)
            i, j = divmod(image_channel, c)
            second = int(where[i, j, 1, window])
            found.append((site.name, pos, int(flat[second, window]),
                          float(gap[i, j, window]), error))
    return found
