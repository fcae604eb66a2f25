#!/usr/bin/env bash
#===- demo.sh - build autopar and run the bundled MLP on 2 MPI ranks -------===#
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Builds autopar (scripts/setup.sh), compiles examples/mlp/model.onnx for a
# grid of 2 devices with the tensor-parallel plan, runs it on 2 MPI ranks,
# then `autopar verify` prints the plan (plan.txt), compares the partitioned
# run with the single-device run, and compares the single-device output with
# the reference output stored with the model (test_data_set_0/output_0.pb).
# Then it plans GPT-3 175B (96 layers, shapes only) on 1024 A100-like devices
# with `autopar plan` and prints the plan's summary.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${AUTOPAR_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh"

AUTOPAR="$BUILD_DIR/bin/autopar"
MODEL="$ROOT/examples/mlp/model.onnx"
DATA="$ROOT/examples/mlp/test_data_set_0"
WORK="$BUILD_DIR/demo"
rm -rf "$WORK"
mkdir -p "$WORK"

step() { printf '\n== %s\n' "$*"; }

step "autopar compile examples/mlp/model.onnx --grid 2 --plan tensor"
"$AUTOPAR" compile "$MODEL" --grid 2 --plan tensor -o "$WORK/mlp-tensor-2"
ls "$WORK/mlp-tensor-2" "$WORK/mlp-tensor-2/weights"

step "autopar run on 2 MPI ranks (inputs: examples/mlp/test_data_set_0)"
"$AUTOPAR" run "$WORK/mlp-tensor-2" --inputs "$DATA" --outputs "$WORK/out-2"

step "autopar verify: the plan, 2 ranks vs 1 device, 1 device vs output_0.pb"
"$AUTOPAR" verify "$MODEL" --grid 2 --plan tensor --inputs "$DATA"

step "autopar plan: GPT-3 175B (shapes only) on a 128x8 grid of A100-like devices"
/usr/bin/python3 "$ROOT/python/autopar/models/gpt_decoder.py" --layers 96 \
  --hidden 12288 --heads 96 --seq 2048 --batch 1536 --vocab 50257 \
  --last-token --shape-only -o "$WORK/gpt3.onnx"
"$AUTOPAR" plan "$WORK/gpt3.onnx" --grid 128x8 \
  --cluster "$ROOT/bench/clusters/a100.json" -o "$WORK/gpt3-plan.json"
sed -n '/^predicted per device/,/^sharding notation/p' "$WORK/gpt3-plan.txt" |
  grep -v '^sharding notation'

printf '\ndemo: OK\n'
