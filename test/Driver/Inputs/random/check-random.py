"""Checks the outputs of Inputs/random/random.onnxtxt run by autopar.

- Philox4x32-10 of a pure-Python reference (Random123's round and key
  schedule) reproduces Random123's known-answer vectors, and autopar's
  RandomUniform output equals it bit for bit (seed attribute 5.0: key =
  float bits of 5.0, stream 0, counter 0).
- 1e5 uniform samples: mean 1/2 and variance 1/12 within 5 sigma; normal
  samples (mean 1, scale 2): mean and variance within 5 sigma; Bernoulli(p)
  frequency within 5 sigma; dropout (ratio 0.25) zero fraction within 5
  sigma and the kept elements exactly x / 0.75.
- Two nodes without a seed attribute draw different values.
Prints one line per check and exits 1 on the first failure.
"""
import struct
import sys

import numpy
import onnx
from onnx import numpy_helper

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(ctr, key):
    """Philox4x32-10 on numpy uint64 arrays holding 32-bit words."""
    c = [numpy.asarray(x, dtype=numpy.uint64) for x in ctr]
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0 = c[0] * numpy.uint64(M0)
        p1 = c[2] * numpy.uint64(M1)
        c = [((p1 >> numpy.uint64(32)) ^ c[1] ^ numpy.uint64(k0)) & numpy.uint64(MASK),
             p1 & numpy.uint64(MASK),
             ((p0 >> numpy.uint64(32)) ^ c[3] ^ numpy.uint64(k1)) & numpy.uint64(MASK),
             p0 & numpy.uint64(MASK)]
    return [int(x) if x.ndim == 0 else x for x in c]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


# Random123 kat_vectors: philox4x32 10 rounds.
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((MASK, MASK, MASK, MASK), (MASK, MASK),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]
for ctr, key, want in KAT:
    got = tuple(philox(ctr, key))
    if got != want:
        fail(f"philox reference {ctr} {key}: {got} != {want}")
print("philox known-answer vectors: ok")


def load(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


out = sys.argv[1]
x = load(sys.argv[2])
uniform, normal, bern, drop, mask, other = (
    load(f"{out}/output_{i}.pb") for i in range(6))

# Bit-exact against the reference.
n = uniform.size
index = numpy.arange(n, dtype=numpy.uint64)
key = struct.unpack("<I", struct.pack("<f", 5.0))[0]
words = philox([index & numpy.uint64(MASK), index >> numpy.uint64(32),
                numpy.zeros(n, numpy.uint64), numpy.zeros(n, numpy.uint64)],
               (key, 0))
expected = ((words[0] >> numpy.uint64(8)).astype(numpy.float64) *
            2.0**-24).astype(numpy.float32).reshape(uniform.shape)
if not numpy.array_equal(uniform, expected):
    bad = int(numpy.sum(uniform != expected))
    fail(f"uniform differs from the Philox reference in {bad} of {n}")
print(f"uniform equals the Philox reference: {n} elements")


def within(name, value, exact, sigma):
    z = abs(value - exact) / sigma
    print(f"{name}: {value:.6f} (exact {exact:.6f}, {z:.2f} sigma)")
    if z > 5:
        fail(f"{name} is {z:.2f} sigma from {exact}")


u = uniform.astype(numpy.float64).ravel()
within("uniform mean", u.mean(), 0.5, (1 / 12 / n) ** 0.5)
# Var of (u - 1/2)^2 for U(0,1): 1/80 - 1/144.
within("uniform variance", u.var(), 1 / 12, ((1 / 80 - 1 / 144) / n) ** 0.5)
z = normal.astype(numpy.float64).ravel()
within("normal mean", z.mean(), 1.0, (4.0 / z.size) ** 0.5)
# Var of the sample variance of N(., s^2): 2 s^4 / n.
within("normal variance", z.var(), 4.0, (2 * 16.0 / z.size) ** 0.5)
b = bern.astype(numpy.float64).ravel()
if not numpy.all((b == 0) | (b == 1)):
    fail("bernoulli values other than 0 and 1")
within("bernoulli frequency", b.mean(), 0.3, (0.3 * 0.7 / b.size) ** 0.5)
dropped = (drop == 0).mean()
within("dropout zero fraction", dropped, 0.25, (0.25 * 0.75 / drop.size) ** 0.5)
kept = mask.astype(bool)
if not numpy.array_equal(drop[~kept], numpy.zeros_like(drop[~kept])):
    fail("dropout keeps a value where the mask is false")
scaled = (x * numpy.float32(1 / 0.75)).astype(numpy.float32)
if not numpy.array_equal(drop[kept], scaled[kept]):
    fail("dropout's kept values are not x / (1 - ratio)")
print("dropout: masked values 0, kept values x / 0.75")
same = (other == uniform).mean()
print(f"unseeded node vs seeded node: {same:.6f} equal")
if same > 0.001:
    fail("two nodes drew the same values")
print("ok")
