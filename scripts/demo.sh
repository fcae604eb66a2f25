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

printf '\ndemo: OK\n'
