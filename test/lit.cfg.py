# -*- Python -*-
# lit configuration of autopar's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "AUTOPAR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "CMakeLists.txt", "Unit", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.autopar_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%autopar_src", config.autopar_src_root))
# What a hand-linked device program needs besides its object: LLVM's OpenMP
# runtime (the parallel loops), found at run time through an rpath.
config.substitutions.append(
    ("%omp_libs", "-Wl,--no-as-needed %s -Wl,-rpath,%s" % (config.libomp,
                                        os.path.dirname(config.libomp))))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.autopar_tools_dir, append_path=True)
# OpenMPI as root (CI runs as root) and with more ranks than cores.
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"

tool_dirs = [config.autopar_tools_dir, config.llvm_tools_dir]
tools = ["autopar-opt", "autopar", "autopar-translate", "autopar-runner"]
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore") for t in tools], tool_dirs)

for t in tools:
    if os.path.exists(os.path.join(config.autopar_tools_dir, t)):
        config.available_features.add(t)
# Multi-host tests on network-namespace "hosts" (test/Driver/multi-host.test)
# need root and iproute2's `ip`.
import shutil as _shutil
if os.geteuid() == 0 and _shutil.which("ip"):
    config.available_features.add("netns-hosts")
else:
    lit_config.note("multi-host tests unsupported: they need root and "
                    "iproute2's `ip` (network namespaces)")
# The ONNX backend node tests of Debian's libonnx-testdata.
if os.path.isdir("/usr/share/libonnx-testdata/data/node"):
    config.available_features.add("onnx-testdata")
if os.path.exists("/usr/bin/python3"):
    config.substitutions.append(("%python", "/usr/bin/python3"))
# Debian's PyTorch, for the real-model tests (python/autopar/models).
import subprocess
if os.path.exists("/usr/bin/python3") and subprocess.call(
        ["/usr/bin/python3", "-c", "import torch, torchvision"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("torch")
# clang 14 and its libFuzzer runtime (libclang-rt-14-dev), for the importer
# fuzzer (fuzz/run.sh, test/Import/fuzz.test).
import glob
import shutil
if shutil.which("clang++-14") and shutil.which("cmake") and \
        shutil.which("ninja") and glob.glob(
            "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a"):
    config.available_features.add("libfuzzer")
# AMX tiles for bf16 (test/Driver/amx.test runs programs compiled with
# isa=amx): the CPU flags as Linux reports them.
try:
    with open("/proc/cpuinfo") as _cpuinfo:
        _flags = next((line.split(":", 1)[1].split() for line in _cpuinfo
                       if line.startswith("flags")), [])
except OSError:
    _flags = []
if {"amx_tile", "amx_bf16", "avx512_bf16"} <= set(_flags):
    config.available_features.add("amx")
# Exported models are cached in the build tree between runs.
config.substitutions.append(
    ("%models", os.path.join(config.autopar_obj_root, "models")))
# `scripts/test.sh --all` runs lit with `--param check_all=1`: the heavier
# sweeps of the check-all tier.
if lit_config.params.get("check_all"):
    config.available_features.add("check-all")
