#!/usr/bin/env bash
#===- setup.sh - install autopar's dependencies and build it ---------------===#
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Installs the Debian 12 packages autopar needs (only those missing, so a
# rerun does not touch apt), configures the build into build/ once, and builds
# every target. Shared by scripts/demo.sh and scripts/test.sh.
#
# Environment: AUTOPAR_BUILD_DIR (default: build/ in the checkout),
# AUTOPAR_JOBS (parallel build jobs, default: 2).
#
#===------------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${AUTOPAR_BUILD_DIR:-$ROOT/build}"
JOBS="${AUTOPAR_JOBS:-2}"

PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libprotobuf-dev protobuf-compiler libonnx-dev catch2
  libopenmpi-dev openmpi-bin python3-onnx python3-numpy
  ninja-build lld cmake g++ libonnx-testdata
  python3-torch python3-torchvision
  clang-14 libclang-rt-14-dev
  coinor-libcbc-dev pkg-config
  libomp-22-dev
  pybind11-dev python3-dev python3-pytest python3-pil chromium
)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y "${missing[@]}"
fi

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$BUILD_DIR" -j "$JOBS"
