//===- Runner.h - C++ entry points of autopar's runtime ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The C++ side of libAutoparRuntime: the `autopar-runner` main and the
// set-up that the `autopar_rt_*` entry points of RuntimeABI.h rely on. This
// header depends on the C++ standard library only (no MPI, no LLVM/MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_RUNTIME_RUNNER_H
#define AUTOPAR_RUNTIME_RUNNER_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autopar::runtime {

/// A tensor's raw row-major bytes inside a file, from `offset` on (the
/// raw_data of a serialized ONNX TensorProto, or a whole raw file).
///
/// In a pipeline (RuntimeConfig::stages > 1) a stage program's input or
/// output may instead be a boundary tensor that moves point to point
/// between stages: `Receive` from stage `stages[0]`, `Send` to each stage in
/// `stages`, matched by `tag` (the boundary's id). The sender holds the whole
/// tensor (its slab assembles it when its layout splits it) and rank r of
/// its stage sends it to rank r of each receiving stage, which keeps its own
/// block: the two sides may use different layouts.
struct TensorFile {
  std::string path;
  int64_t offset = 0;
  enum class Kind { File, Receive, Send };
  Kind kind = Kind::File;
  /// A file tensor that every microbatch reads whole; the others hold one
  /// slice per microbatch along dimension 0, microbatch k at offset + k *
  /// (bytes of the program's tensor).
  bool whole = false;
  std::vector<int64_t> stages;
  int64_t tag = 0;
};

/// Where the `autopar_rt_*` calls find the grid and their files.
struct RuntimeConfig {
  /// Device grid sizes, major axis first (`2x2` -> {2, 2}).
  std::vector<int64_t> grid;
  /// `<weights>/rank<R>/w<id>.bin`; empty when the run has no weights.
  std::string weightsDir;
  /// `<inputs>/input_<i>.bin`; empty when the run has no inputs.
  std::string inputsDir;
  /// `<outputs>/output_<i>.bin`; empty when the run writes no outputs.
  std::string outputsDir;
  /// Input i, when given, instead of `<inputs>/input_<i>.bin`.
  std::vector<TensorFile> inputFiles;
  /// Output i, when given, instead of `<outputs>/output_<i>.bin`: the file
  /// exists and is large enough (the driver preallocates it); the writers
  /// only fill their blocks.
  std::vector<TensorFile> outputFiles;
  /// Pipeline stages (MPMD): this rank runs stage `stage` of `stages`, each
  /// stage on `grid`'s device count of consecutive world ranks (stage s on
  /// ranks [s n, (s+1) n)); collectives stay inside the stage.
  int64_t stage = 0;
  int64_t stages = 1;
  /// Microbatches each run streams through the program (setMicrobatch).
  int64_t microbatches = 1;
};

/// Parses a grid such as `4` or `2x2` (positive sizes separated by `x`, at
/// most 15 axes); returns std::nullopt on a malformed string.
std::optional<std::vector<int64_t>> parseGrid(const std::string &text);

/// Installs `config` for the `autopar_rt_*` calls. MPI must be initialized;
/// fails the job when the world size is not the product of the grid sizes.
/// Switches MPI_COMM_WORLD to MPI_ERRORS_RETURN so that MPI errors are
/// reported through fail().
void initializeRuntime(const RuntimeConfig &config);

/// The microbatch the next autopar_main call reads and writes (0-based,
/// below RuntimeConfig::microbatches).
void setMicrobatch(int64_t index);

/// Waits until every boundary tensor this rank sent has been received (the
/// sends do not block, so that no stage waits for a later one).
void completeSends();

/// Bytes of buffers live on this rank now, and at most so far: every buffer
/// of the device program (weights, inputs, outputs, intermediates; allocated
/// through `_mlir_memref_to_llvm_alloc`, see RuntimeABI.h) and the runtime's
/// own scratch buffers.
int64_t getLiveMemoryBytes();
int64_t getPeakMemoryBytes();

/// Seconds this rank spent in file I/O (weights, inputs, outputs) since the
/// last reset.
double getIoSeconds();
void resetIoSeconds();

/// The value of the last one-element float output `index` that this rank
/// wrote (rank 0 writes outputs), or std::nullopt: a training step's loss.
std::optional<double> getWrittenScalar(int64_t index);
/// Writes every weight the program stored (autopar_rt_store_weight) as
/// `<dir>/rank<R>/w<id>.bin` of this rank, in the layout of the weight files;
/// fails the job on an I/O error.
void saveWeightState(const std::string &dir);
/// Frees the cached sub-communicators; call before MPI_Finalize.
void finalizeRuntime();

/// What `autopar-runner --bench-collectives` measures.
struct CollectiveBenchOptions {
  /// Message sizes in bytes per device (rounded up to whole f32 elements, a
  /// multiple of the group size): the local buffer of an all-reduce, an
  /// all-to-all and a point-to-point exchange, the output of an all-gather,
  /// the input of a reduce-scatter.
  std::vector<int64_t> sizes;
  /// Samples per measurement; the median is reported.
  int repeats = 5;
  /// The JSON file rank 0 writes.
  std::string outPath;
};

/// Times every collective kind (all_reduce, all_gather, reduce_scatter,
/// all_to_all, sendrecv) and size over every axis of `grid` with more than
/// one device: each sample is the slowest rank's time of one call, and rank
/// 0 writes the median of `repeats` samples to `options.outPath`:
///   {"grid": [...], "repeats": R, "axes": {"<axis>": [{"kind": K,
///    "group_size": N, "bytes": B, "seconds": S}, ...]}}
/// The runtime must be initialized with `grid`.
void runCollectiveBench(const std::vector<int64_t> &grid,
                        const CollectiveBenchOptions &options);

/// Prints `autopar-runtime: rank R: <message>` on stderr and aborts the
/// whole job (MPI_Abort, exit code 1; plain exit(1) without MPI).
[[noreturn]] void fail(const std::string &message);

/// The `autopar-runner` main: parses the command line, initializes MPI and
/// the runtime, loads the device program and runs its `autopar_main`.
int runnerMain(int argc, char **argv);

} // namespace autopar::runtime

#endif // AUTOPAR_RUNTIME_RUNNER_H
