//===- ReferenceOutputs.h - kept single-device outputs ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `autopar verify --reference-dir DIR` compares each partitioned program with
// the single-device program run on the same inputs. Compiling and running
// that program is the same work for every partitioned configuration of a
// model, so the first verify writes its outputs into DIR and later ones reuse
// them. The outputs are reused only when everything they depend on is the
// same: the directory records a key (the autopar and runner executables, the
// model file, the weights' data, the import and compile options, the run's
// threads, every input's data) and a reference whose key differs from the
// run's is an error naming the first field that differs, never reused.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DRIVER_REFERENCEOUTPUTS_H
#define AUTOPAR_DRIVER_REFERENCEOUTPUTS_H

#include "autopar/Driver/Driver.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::autopar {

/// What the outputs of a single-device run depend on, as (field, value)
/// pairs in a fixed order: digests of files and data, and the options as
/// text. Two runs with equal keys compute the same outputs.
struct ReferenceKey {
  std::vector<std::pair<std::string, std::string>> fields;
  void add(StringRef field, StringRef value) {
    fields.emplace_back(field.str(), value.str());
  }
};

/// The parts of a single-device run that are not files: how the model was
/// imported and compiled, how the program runs, and its inputs.
struct ReferenceRunDescription {
  /// The single-device program's compile options (grid, plan, precision,
  /// input shapes, code generation choices). Training steps are not
  /// supported (computeReferenceKey fails).
  const CompileOptions *compile = nullptr;
  /// The import's `--seed` (random ops without a seed attribute) and
  /// whether it kept merged batch and heads apart (autopar-unmerge-heads).
  uint64_t seed = 0;
  bool unmergeHeads = false;
  /// How the single-device program runs (threads, hostfile).
  const RunOptions *run = nullptr;
  /// The runtime inputs' signatures and data, in order.
  ArrayRef<TensorSignature> inputSignatures;
  ArrayRef<HostTensor> inputs;
};

/// Lowercase hex XXH3-128 digest of `bytes`.
std::string computeDataDigest(ArrayRef<char> bytes);

/// The key of the single-device run of the imported `model` described by
/// `run`: the running autopar executable and the runner (`runnerPath`) by
/// digest, the model file by SHA-256, the weights' data (external data
/// included) by digest, the options and each input's signature and digest.
/// Fails (with an error on `ctx`) when a weight or an executable cannot be
/// read, or for a training step.
FailureOr<ReferenceKey> computeReferenceKey(MLIRContext &ctx,
                                            ImportedModel &model,
                                            const ReferenceRunDescription &run,
                                            StringRef runnerPath);

/// The single-device outputs kept in `dir` for the run of `key`, whose
/// outputs have the signatures `outputs`. Returns std::nullopt when `dir`
/// holds no reference (no `reference.json`). Fails with an error naming the
/// first differing field when the reference was written for another key,
/// and when its files are malformed, do not have the signatures `outputs`
/// or changed after they were written.
FailureOr<std::optional<std::vector<HostTensor>>>
readReferenceOutputs(MLIRContext &ctx, StringRef dir, const ReferenceKey &key,
                     ArrayRef<TensorSignature> outputs);

/// Writes `tensors` (the outputs `outputs` of the run of `key`) into `dir`
/// (created when missing): `output_<i>.pb` and `reference.json` with the key
/// and each output's digest, each file written under a temporary name and
/// renamed, `reference.json` last.
LogicalResult writeReferenceOutputs(MLIRContext &ctx, StringRef dir,
                                    const ReferenceKey &key,
                                    ArrayRef<TensorSignature> outputs,
                                    ArrayRef<HostTensor> tensors);

} // namespace mlir::autopar

#endif // AUTOPAR_DRIVER_REFERENCEOUTPUTS_H
