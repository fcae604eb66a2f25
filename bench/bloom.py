#!/usr/bin/env python3
# ===- bloom.py - BLOOM-176B's production run priced with --fixed ---------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Prices BLOOM-176B's production configuration with `autopar plan --fixed`.

BigScience trained BLOOM-176B (70 layers, hidden 14336, 112 heads, sequence
2048, vocabulary 250880, bf16) on 384 A100-80GB (48 nodes x 8) with tensor
parallelism 4, pipeline parallelism 12, data parallelism 8, ZeRO-1, full
recomputation, micro-batch 2 and global batch 2048, the stages split
unevenly as [embedding + 5 | 6 x 10 | 5 + embedding]; its logs show
104.70 s per iteration, 149.77 TFLOP/s per GPU (Megatron's count). This
script prices that configuration on the same cluster description as
Megatron-LM's Table 1 (bench/clusters/megatron-a100.json, not refitted):

    autopar plan bloom.onnx --grid 48x8 --mode training
        --loss cross_entropy --precision bf16 --distributed-optimizer
        --cluster megatron-a100.json
        --fixed tp=4,pp=12,dp=8,micro_batch=2,recompute=full

on a shape-only decoder from python/autopar/models/gpt_decoder.py with
token embeddings (--embedding), Megatron's fused QKV layout and the full
logits with a cross-entropy loss. It prints the predicted step and TFLOP/s
per GPU, F / (n * step) with F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)),
against 149.77, each stage's blocks, peak and limit, and autopar's own
plan of the same step (the same 12 stages and 1F1B, each stage's plan and
recomputation searched).

What the decoder approximates: BLOOM adds ALiBi biases to the attention
scores instead of learned position embeddings, and layer-normalizes the
embeddings; the decoder has a learned position table [2048, 14336] (29M
parameters, 0.02% of BLOOM's 176B) and no embedding layer norm, and its
LM head is a weight of its own instead of the tied token table (the first
and last stages each hold a [250880, 14336] table either way). ALiBi's bias
add and the layer norm are elementwise ops over [b, a, s, s] and [b, s, h]:
no matmul FLOPs, and Megatron's count above has none for them.

    /usr/bin/python3 bench/bloom.py [--work DIR] [--json F]

Exit code: 0 when the configuration was priced, 1 when autopar failed, 2
when autopar is missing.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "autopar", "models"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import gpt_decoder  # noqa: E402
from table1 import find_autopar  # noqa: E402

LAYERS, HIDDEN, HEADS, SEQ, VOCAB = 70, 14336, 112, 2048, 250880
TP, PP, DP, MICRO_BATCH, BATCH = 4, 12, 8, 2, 2048
GPUS = TP * PP * DP
LOGGED_STEP_S, LOGGED_TFLOPS = 104.70, 149.77
LOGGED_SPLIT = [5] + [6] * 10 + [5]


def megatron_flops():
    """Megatron's FLOPs per iteration with full recomputation."""
    return 96 * BATCH * SEQ * LAYERS * HIDDEN ** 2 * (
        1 + SEQ / (6 * HIDDEN) + VOCAB / (16 * LAYERS * HIDDEN))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--autopar")
    parser.add_argument("--cluster",
                        default=os.path.join(ROOT, "bench", "clusters",
                                             "megatron-a100.json"))
    parser.add_argument("--work")
    parser.add_argument("--json")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)
    autopar = find_autopar(args.autopar)
    if not autopar:
        print("bloom.py: error: autopar not found (build it, or pass "
              "--autopar PATH)", file=sys.stderr)
        return 2
    work = args.work or tempfile.mkdtemp(prefix="autopar-bloom-")
    os.makedirs(work, exist_ok=True)
    try:
        model_path = os.path.join(work, "bloom.onnx")
        if not os.path.exists(model_path):
            cfg = gpt_decoder.GptConfig(LAYERS, HIDDEN, HEADS, SEQ, BATCH,
                                        vocab=VOCAB, embedding=True,
                                        qkv_layout="heads")
            model, _ = gpt_decoder.build_model(cfg, shape_only=True)
            with open(model_path, "wb") as f:
                f.write(model.SerializeToString())
        out = os.path.join(work, "bloom.plan.json")
        fixed = (f"tp={TP},pp={PP},dp={DP},micro_batch={MICRO_BATCH},"
                 "recompute=full")
        command = [autopar, "plan", model_path, "--grid", f"{GPUS // 8}x8",
                   "--mode", "training", "--loss", "cross_entropy",
                   "--precision", "bf16", "--distributed-optimizer",
                   "--cluster", args.cluster, "--fixed", fixed, "-o", out,
                   "--quiet"]
        print(f"cpu: {cpu_model()}")
        print(f"cluster: {args.cluster}")
        print("command: " + " ".join(command))
        start = time.perf_counter()
        try:
            run = subprocess.run(command, capture_output=True, text=True,
                                 timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print("bloom.py: error: autopar timed out", file=sys.stderr)
            return 1
        wall = time.perf_counter() - start
        if run.returncode != 0:
            print(f"bloom.py: error: autopar failed (exit "
                  f"{run.returncode}):\n{run.stderr.strip()}",
                  file=sys.stderr)
            return 1
        with open(out) as f:
            plan = json.load(f)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    flops = megatron_flops()
    step = plan["predicted"]["step_time_s"]
    tflops = flops / (GPUS * step) / 1e12
    pipe = plan["pipeline"]
    own = plan["fixed"].get("own_plan", {})
    own_step = own.get("step_time_s")
    result = dict(
        step_time_s=step, tflops_per_gpu=tflops, logged_step_s=LOGGED_STEP_S,
        logged_tflops_per_gpu=LOGGED_TFLOPS, ratio=tflops / LOGGED_TFLOPS,
        fits=plan["fixed"]["fits"],
        peak_memory_bytes=plan["predicted"]["peak_memory_bytes"],
        layout=pipe["layout"], bubble_fraction=pipe["bubble_fraction"],
        blocks=[s["blocks"][1] - s["blocks"][0] for s in pipe["stage_list"]],
        logged_blocks=LOGGED_SPLIT,
        stage_peaks_gib=[s["peak_memory_bytes"] / 2**30
                         for s in pipe["stage_list"]],
        stage_limit_bytes=[s.get("memory_limit_bytes")
                           for s in pipe["stage_list"]],
        own_plan=own,
        own_tflops_per_gpu=(flops / (GPUS * own_step) / 1e12
                            if own_step else None),
        wall_s=wall)
    print(f"BLOOM-176B, tp {TP} pp {PP} dp {DP}, micro-batch {MICRO_BATCH}, "
          f"batch {BATCH}, full recomputation, bf16, ZeRO-1, grid "
          f"{GPUS // 8}x8")
    print(f"  predicted step {step:.2f} s (logged {LOGGED_STEP_S} s), "
          f"{tflops:.1f} TFLOP/s per GPU (logged {LOGGED_TFLOPS}): ratio "
          f"{tflops / LOGGED_TFLOPS:.3f}; "
          f"{'fits' if result['fits'] else 'DOES NOT FIT'}, peak "
          f"{result['peak_memory_bytes'] / 2**30:.1f} GiB; bubble "
          f"{pipe['bubble_fraction']:.1%}")
    print(f"  stage blocks {result['blocks']} (logged {LOGGED_SPLIT}); "
          f"layout {pipe['layout']}")
    print("  stage peaks GiB " +
          " ".join(f"{g:.1f}" for g in result["stage_peaks_gib"]) +
          f" (limit {plan['pipeline']['stage_list'][0].get('memory_limit_bytes', 0) / 1e9:.0f} GB each)")
    if own_step:
        print(f"  autopar's own plan (same stages and schedule): step "
              f"{own_step:.2f} s, {result['own_tflops_per_gpu']:.1f} TFLOP/s "
              f"per GPU, recompute {own.get('recompute', '?')}, layout "
              f"{own.get('pipeline', {}).get('layout', '?')}")
    else:
        print(f"  autopar's own plan: {own.get('error', 'none')}")
    print(f"  wall {wall:.1f} s (the --fixed pricing and the own-plan "
          f"search)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
