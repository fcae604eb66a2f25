//===- Run.cpp - autopar run: launching a compiled program ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements running a compiled directory: checking the inputs
// against the manifest, converting them into the runtime's raw files in a
// temporary run directory, launching `mpirun ... autopar-runner` with a
// timeout (`autopar-runner` alone, as an MPI singleton, on a one-device
// grid), and reading the outputs back; and the `run` subcommand.
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstdint>
#include <thread>

extern char **environ;

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

static std::string joinPath(StringRef dir, const Twine &name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

/// True when `actual` matches `expected` (dynamic expected sizes match any).
static bool shapeMatches(ArrayRef<int64_t> actual, ArrayRef<int64_t> expected) {
  if (actual.size() != expected.size())
    return false;
  for (auto [a, e] : llvm::zip_equal(actual, expected))
    if (!ShapedType::isDynamic(e) && a != e)
      return false;
  return true;
}

/// Checks that `dir` holds exactly the runtime inputs of `manifest`; returns
/// the path of each `input_<i>.pb`.
static FailureOr<std::vector<std::string>>
findInputFiles(MLIRContext &ctx, const Manifest &manifest, StringRef dir) {
  if (!llvm::sys::fs::is_directory(dir)) {
    emitDriverError(ctx) << "input directory '" << dir << "' does not exist";
    return failure();
  }
  size_t count = manifest.inputs.size();
  std::vector<std::string> paths;
  for (auto [index, sig] : llvm::enumerate(manifest.inputs)) {
    std::string path = joinPath(dir, "input_" + std::to_string(index) + ".pb");
    if (!llvm::sys::fs::exists(path)) {
      emitDriverError(ctx) << "missing input '" << sig.name << "': '" << path
                           << "' does not exist (the model has " << count
                           << " runtime input" << (count == 1 ? "" : "s")
                           << ")";
      return failure();
    }
    paths.push_back(path);
  }
  std::string extra = joinPath(dir, "input_" + std::to_string(count) + ".pb");
  if (llvm::sys::fs::exists(extra)) {
    emitDriverError(ctx) << "'" << dir << "' holds more inputs than the "
                         << count << " runtime input" << (count == 1 ? "" : "s")
                         << " of the model (found '" << extra << "')";
    return failure();
  }
  return paths;
}

/// Checks the dtype and shape of input `index` against `manifest`.
static LogicalResult checkInput(MLIRContext &ctx, const Manifest &manifest,
                                size_t index, DType dtype,
                                ArrayRef<int64_t> shape) {
  const TensorSignature &sig = manifest.inputs[index];
  std::string file = "input_" + std::to_string(index) + ".pb";
  if (dtype != sig.dtype) {
    emitDriverError(ctx) << "input '" << sig.name << "' (" << file
                         << ") has dtype " << getDTypeName(dtype)
                         << ", expected " << getDTypeName(sig.dtype);
    return failure();
  }
  if (!shapeMatches(shape, sig.shape)) {
    emitDriverError(ctx) << "input '" << sig.name << "' (" << file
                         << ") has shape " << formatShape(shape)
                         << ", expected " << formatShape(sig.shape);
    return failure();
  }
  return success();
}

FailureOr<std::vector<HostTensor>>
mlir::autopar::readInputTensors(MLIRContext &ctx, const Manifest &manifest,
                                StringRef dir) {
  FailureOr<std::vector<std::string>> paths =
      findInputFiles(ctx, manifest, dir);
  if (failed(paths))
    return failure();
  std::vector<HostTensor> tensors;
  for (auto [index, path] : llvm::enumerate(*paths)) {
    std::string error;
    FailureOr<HostTensor> tensor = readTensorProtoFile(path, error);
    if (failed(tensor)) {
      emitDriverError(ctx) << "cannot read input '"
                           << manifest.inputs[index].name << "' (" << path
                           << "): " << error;
      return failure();
    }
    if (failed(checkInput(ctx, manifest, index, tensor->dtype, tensor->shape)))
      return failure();
    tensors.push_back(std::move(*tensor));
  }
  return tensors;
}

FailureOr<std::vector<TensorFileSlot>>
mlir::autopar::locateInputFiles(MLIRContext &ctx, const Manifest &manifest,
                                StringRef dir, StringRef stagingDir) {
  FailureOr<std::vector<std::string>> paths =
      findInputFiles(ctx, manifest, dir);
  if (failed(paths))
    return failure();
  std::vector<TensorFileSlot> slots;
  for (auto [index, path] : llvm::enumerate(*paths)) {
    const TensorSignature &sig = manifest.inputs[index];
    std::string error;
    FailureOr<TensorFileInfo> info = scanTensorProtoFile(path, error);
    if (failed(info)) {
      emitDriverError(ctx) << "cannot read input '" << sig.name << "' (" << path
                           << "): " << error;
      return failure();
    }
    if (failed(checkInput(ctx, manifest, index, info->dtype, info->shape)))
      return failure();
    SmallString<256> absolute(path);
    llvm::sys::fs::make_absolute(absolute);
    if (info->rawDataOffset) {
      slots.push_back({absolute.str().str(), *info->rawDataOffset});
      continue;
    }
    // Typed fields (float_data, ...): decoded once here into a raw file, of
    // which each rank then reads its block.
    FailureOr<HostTensor> tensor = readTensorProtoFile(path, error);
    if (failed(tensor)) {
      emitDriverError(ctx) << "cannot read input '" << sig.name << "' (" << path
                           << "): " << error;
      return failure();
    }
    std::string staged =
        joinPath(stagingDir, "input_" + std::to_string(index) + ".bin");
    if (failed(writeFileBytes(ctx, staged, tensor->data)))
      return failure();
    slots.push_back({staged, 0});
  }
  return slots;
}

//===----------------------------------------------------------------------===//
// Launching the job
//===----------------------------------------------------------------------===//

/// Finds mpirun: `$AUTOPAR_MPIRUN` when set, else `mpirun` on the PATH.
static FailureOr<std::string> findMpirun(MLIRContext &ctx) {
  std::optional<std::string> override =
      llvm::sys::Process::GetEnv("AUTOPAR_MPIRUN");
  StringRef name = override ? StringRef(*override) : StringRef("mpirun");
  if (llvm::sys::path::has_parent_path(name)) {
    if (llvm::sys::fs::can_execute(name))
      return name.str();
  } else if (llvm::ErrorOr<std::string> path =
                 llvm::sys::findProgramByName(name)) {
    return *path;
  }
  emitDriverError(ctx) << "cannot find '" << name << "'"
                       << (override ? " (from AUTOPAR_MPIRUN)"
                                    : " (install openmpi-bin, or set "
                                      "AUTOPAR_MPIRUN)");
  return failure();
}

FailureOr<std::string> driver::findAutoparExecutable(MLIRContext &ctx) {
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&mlir::autopar::runMain));
  // Empty when the file the process started from was removed or replaced
  // since (/proc/self/exe then names '<path> (deleted)'), as when a rebuild
  // relinks build/bin/autopar under a running verify. A directory derived
  // from it would be the current one.
  if (self.empty()) {
    emitDriverError(ctx) << "cannot locate the running autopar executable "
                            "(was its file removed or replaced while it ran, "
                            "as by a rebuild?)";
    return failure();
  }
  return self;
}

FailureOr<std::string> driver::findRunner(MLIRContext &ctx) {
  if (std::optional<std::string> override =
          llvm::sys::Process::GetEnv("AUTOPAR_RUNNER")) {
    if (llvm::sys::fs::can_execute(*override))
      return *override;
    emitDriverError(ctx) << "cannot run the runner '" << *override
                         << "' (from AUTOPAR_RUNNER)";
    return failure();
  }
  FailureOr<std::string> self = findAutoparExecutable(ctx);
  if (failed(self))
    return failure();
  std::string runner =
      joinPath(llvm::sys::path::parent_path(*self), "autopar-runner");
  if (!llvm::sys::fs::can_execute(runner)) {
    emitDriverError(ctx) << "cannot find the runner '" << runner
                         << "' (build the autopar-runner target)";
    return failure();
  }
  return runner;
}

/// The current environment plus what OpenMPI needs to run as root, in a
/// container, and next to other jobs; for a `singleton` job (the runner
/// started without mpirun), what keeps its MPI_Init fast.
static std::vector<std::string> buildChildEnvironment(StringRef runDir,
                                                      bool singleton) {
  std::vector<std::string> env;
  bool hasSingleCopy = false, hasTmpdirBase = false, hasIsolated = false,
       hasPml = false;
  for (char **entry = environ; entry && *entry; ++entry) {
    StringRef var(*entry);
    if (var.starts_with("OMPI_ALLOW_RUN_AS_ROOT"))
      continue;
    hasSingleCopy |=
        var.starts_with("OMPI_MCA_btl_vader_single_copy_mechanism=");
    hasTmpdirBase |= var.starts_with("OMPI_MCA_orte_tmpdir_base=");
    hasIsolated |= var.starts_with("OMPI_MCA_ess_singleton_isolated=");
    hasPml |= var.starts_with("OMPI_MCA_pml=");
    env.push_back(var.str());
  }
  env.push_back("OMPI_ALLOW_RUN_AS_ROOT=1");
  env.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  // Containers often forbid the cross-memory-attach single copy.
  if (!hasSingleCopy)
    env.push_back("OMPI_MCA_btl_vader_single_copy_mechanism=none");
  // mpirun jobs started at the same moment race to create the shared session
  // directory /tmp/ompi.<host>.<uid> ("File exists"): give each job its own.
  if (!hasTmpdirBase)
    env.push_back(("OMPI_MCA_orte_tmpdir_base=" + runDir).str());
  // A singleton's MPI_Init forks an orted (for MPI_Comm_spawn, which the
  // runtime never calls) unless it is isolated, and probes UCX for ~0.2 s
  // unless the pml is chosen; one rank needs only ob1 (over btl self).
  if (singleton && !hasIsolated)
    env.push_back("OMPI_MCA_ess_singleton_isolated=1");
  if (singleton && !hasPml)
    env.push_back("OMPI_MCA_pml=ob1");
  return env;
}

static std::string readWholeFile(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

/// Reports a failed job: the runtime's own lines when there are any, else
/// the tail of the output of `launcher` (mpirun, or the runner itself).
static void reportJobFailure(MLIRContext &ctx, StringRef launcher,
                             int returnCode, StringRef errorMessage,
                             StringRef log) {
  SmallVector<StringRef> lines;
  log.split(lines, '\n', -1, /*KeepEmpty=*/false);
  SmallVector<StringRef> runtimeLines;
  llvm::StringSet<> seen;
  for (StringRef line : lines) {
    size_t pos = line.find("autopar-runtime:");
    if (pos == StringRef::npos)
      continue;
    StringRef message = line.drop_front(pos).trim();
    if (seen.insert(message).second)
      runtimeLines.push_back(message);
  }
  if (!runtimeLines.empty()) {
    InFlightDiagnostic diag = emitDriverError(ctx)
                              << "job failed: " << runtimeLines.front();
    for (StringRef line : ArrayRef(runtimeLines).drop_front())
      diag.attachNote() << line;
    return;
  }
  // A rank that died without a message (killed, crashed): mpirun names it.
  for (StringRef line : lines) {
    StringRef text = line.trim();
    if (text.starts_with("mpirun noticed that process rank")) {
      InFlightDiagnostic diag = emitDriverError(ctx)
                                << "job failed: " << text.rtrim('.')
                                << "; the job was aborted";
      return;
    }
  }
  InFlightDiagnostic diag = emitDriverError(ctx)
                            << "job failed: " << launcher << " ";
  if (returnCode == -2)
    diag << "was killed (" << errorMessage << ")";
  else
    diag << "exited with code " << returnCode;
  constexpr size_t kTailLines = 20;
  SmallVector<StringRef> tail;
  for (StringRef line : lines) {
    StringRef text = line.trim();
    if (!text.empty() && text.find_first_not_of("-=*") != StringRef::npos)
      tail.push_back(text);
  }
  for (StringRef line :
       ArrayRef(tail).take_back(std::min(kTailLines, tail.size())))
    diag.attachNote() << line;
}

/// Polls `process` until it exits or `timeoutSeconds` pass; on timeout stops
/// it (SIGTERM, so that mpirun takes its ranks down, then SIGKILL).
/// `poll`, when given, runs between the checks.
static llvm::sys::ProcessInfo
waitWithTimeout(llvm::sys::ProcessInfo process, unsigned timeoutSeconds,
                bool &timedOut, std::string &errorMessage,
                llvm::function_ref<void()> poll = nullptr) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::seconds(timeoutSeconds);
  timedOut = false;
  while (true) {
    llvm::sys::ProcessInfo status =
        llvm::sys::Wait(process, /*SecondsToWait=*/0, &errorMessage);
    if (status.Pid != 0)
      return status;
    if (Clock::now() >= deadline)
      break;
    if (poll)
      poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  timedOut = true;
  ::kill(process.Pid, SIGTERM);
  auto killDeadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < killDeadline) {
    llvm::sys::ProcessInfo status =
        llvm::sys::Wait(process, /*SecondsToWait=*/0, &errorMessage);
    if (status.Pid != 0)
      return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(process.Pid, SIGKILL);
  return llvm::sys::Wait(process, std::nullopt, &errorMessage);
}

LogicalResult TempDirectory::create(MLIRContext &ctx, StringRef prefix) {
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(prefix, path)) {
    emitDriverError(ctx) << "cannot create a temporary directory: "
                         << ec.message();
    return failure();
  }
  return success();
}

TempDirectory::~TempDirectory() {
  if (path.empty())
    return;
  if (llvm::sys::Process::GetEnv("AUTOPAR_KEEP_RUN_DIR")) {
    printNote("kept the temporary directory '" + path + "'");
    return;
  }
  (void)llvm::sys::fs::remove_directories(path);
}

LogicalResult LauncherOptions::apply(RunOptions &options) const {
  if (hostfile.empty())
    return success();
  if (!llvm::sys::fs::is_regular_file(hostfile)) {
    printError("hostfile '" + hostfile + "' does not exist");
    return failure();
  }
  SmallString<256> path(hostfile);
  llvm::sys::fs::make_absolute(path);
  options.hostfile = path.str().str();
  return success();
}

FailureOr<std::string> driver::launchRunner(
    MLIRContext &ctx, ArrayRef<std::string> runnerArgs, int64_t numRanks,
    StringRef runDir, unsigned timeoutSeconds, std::string *stderrText,
    StringRef hostfile, llvm::function_ref<void(StringRef)> onLine) {
  RunnerApp app;
  app.ranks = numRanks;
  app.args.assign(runnerArgs.begin(), runnerArgs.end());
  return launchRunnerApps(ctx, app, runDir, timeoutSeconds, stderrText,
                          hostfile, onLine);
}

FailureOr<std::string>
driver::launchRunnerApps(MLIRContext &ctx, ArrayRef<RunnerApp> apps,
                         StringRef runDir, unsigned timeoutSeconds,
                         std::string *stderrText, StringRef hostfile,
                         llvm::function_ref<void(StringRef)> onLine) {
  int64_t numRanks = 0;
  for (const RunnerApp &app : apps)
    numRanks += app.ranks;
  bool singleton = apps.size() == 1 && numRanks == 1 && hostfile.empty();
  FailureOr<std::string> runner = findRunner(ctx);
  FailureOr<std::string> mpirun =
      singleton ? FailureOr<std::string>(std::string()) : findMpirun(ctx);
  if (failed(mpirun) || failed(runner))
    return failure();
  StringRef launcher = singleton ? StringRef(*runner) : StringRef(*mpirun);
  StringRef launcherName =
      singleton ? StringRef("autopar-runner") : StringRef("mpirun");
  std::vector<std::string> ranks;
  for (const RunnerApp &app : apps)
    ranks.push_back(std::to_string(app.ranks));
  SmallVector<StringRef> args;
  if (!singleton)
    args.append({*mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to",
                 "none"});
  if (!hostfile.empty())
    args.append({"--hostfile", hostfile});
  for (auto [i, app] : llvm::enumerate(apps)) {
    if (i)
      args.push_back(":");
    if (!singleton)
      args.append({"-np", ranks[i]});
    args.push_back(*runner);
    for (const std::string &arg : app.args)
      args.push_back(arg);
  }
  std::vector<std::string> envStrings =
      buildChildEnvironment(runDir, singleton);
  SmallVector<StringRef> env(envStrings.begin(), envStrings.end());
  std::string stdoutPath = joinPath(runDir, launcherName + ".stdout");
  std::string stderrPath = joinPath(runDir, launcherName + ".stderr");
  std::optional<StringRef> redirects[] = {StringRef(""), StringRef(stdoutPath),
                                          StringRef(stderrPath)};
  std::string errorMessage;
  bool executionFailed = false;
  llvm::sys::ProcessInfo process = llvm::sys::ExecuteNoWait(
      launcher, args, ArrayRef<StringRef>(env), redirects, /*MemoryLimit=*/0,
      &errorMessage, &executionFailed);
  if (executionFailed || process.Pid == llvm::sys::ProcessInfo::InvalidPid) {
    emitDriverError(ctx) << "cannot start '" << launcher
                         << "': " << errorMessage;
    return failure();
  }
  // The complete lines of the standard output not passed to `onLine` yet,
  // read from the file the launcher writes (checked every 0.2 s).
  size_t delivered = 0;
  auto deliverLines = [&](StringRef text, bool final) {
    while (delivered < text.size()) {
      size_t end = text.find('\n', delivered);
      if (end == StringRef::npos && !final)
        return;
      if (end == StringRef::npos)
        end = text.size();
      onLine(text.slice(delivered, end));
      delivered = end + 1;
    }
  };
  auto lastPoll = std::chrono::steady_clock::now();
  auto poll = [&] {
    auto now = std::chrono::steady_clock::now();
    if (now - lastPoll < std::chrono::milliseconds(200))
      return;
    lastPoll = now;
    deliverLines(readWholeFile(stdoutPath), /*final=*/false);
  };
  bool timedOut = false;
  llvm::sys::ProcessInfo status =
      onLine ? waitWithTimeout(process, timeoutSeconds, timedOut, errorMessage,
                               poll)
             : waitWithTimeout(process, timeoutSeconds, timedOut, errorMessage);
  std::string out = readWholeFile(stdoutPath);
  std::string err = readWholeFile(stderrPath);
  if (onLine)
    deliverLines(out, /*final=*/true);
  if (timedOut) {
    emitDriverError(ctx) << "job timed out after " << timeoutSeconds << " s";
    return failure();
  }
  if (status.ReturnCode != 0) {
    reportJobFailure(ctx, launcherName, status.ReturnCode, errorMessage,
                     err + "\n" + out);
    return failure();
  }
  if (stderrText)
    *stderrText = std::move(err);
  return out;
}

std::vector<std::string>
driver::getStageRunnerArgs(StringRef outDir, const PipelineManifest &pipeline,
                           size_t stage) {
  assert(stage < pipeline.stages.size() && "stage out of range");
  std::string dir = joinPath(outDir, "stage" + Twine(stage));
  return {"--program", joinPath(dir, "program.so"),
          "--grid",    formatGridShape(pipeline.stages[stage].grid),
          "--weights", joinPath(dir, "weights"),
          "--stage",   std::to_string(stage),
          "--stages",  std::to_string(pipeline.stages.size())};
}

/// The runner arguments of a single (SPMD) program compiled into `outDir`.
static std::vector<std::string> programArgs(StringRef outDir,
                                            const Manifest &manifest,
                                            ArrayRef<TensorFileSlot> inputs,
                                            ArrayRef<TensorFileSlot> outputs) {
  std::vector<std::string> args = {"--program", joinPath(outDir, "program.so"),
                                   "--grid",    formatGridShape(manifest.grid),
                                   "--weights", joinPath(outDir, "weights")};
  for (const TensorFileSlot &input : inputs)
    args.insert(args.end(),
                {"--input", std::to_string(input.offset) + ":" + input.path});
  for (const TensorFileSlot &output : outputs)
    args.insert(args.end(), {"--output", std::to_string(output.offset) + ":" +
                                             output.path});
  return args;
}

LogicalResult mlir::autopar::runCompiledFiles(MLIRContext &ctx,
                                              StringRef outDir,
                                              const Manifest &manifest,
                                              ArrayRef<TensorFileSlot> inputs,
                                              ArrayRef<TensorFileSlot> outputs,
                                              const RunOptions &options) {
  if (inputs.size() != manifest.inputs.size() ||
      outputs.size() != manifest.outputs.size()) {
    emitDriverError(ctx) << "got " << inputs.size() << " inputs and "
                         << outputs.size() << " outputs, the model has "
                         << manifest.inputs.size() << " and "
                         << manifest.outputs.size();
    return failure();
  }
  SmallString<256> absOutDir(outDir);
  llvm::sys::fs::make_absolute(absOutDir);
  TempDirectory runDir;
  if (failed(runDir.create(ctx, "autopar-run")))
    return failure();

  std::vector<std::string> common;
  if (options.profile)
    common.insert(common.end(), {"--profile", "--repeats", "7"});
  if (options.threads)
    common.insert(common.end(), {"--threads", std::to_string(options.threads)});
  std::vector<RunnerApp> apps;
  if (manifest.pipeline) {
    // One app per stage: its program, and where each of its inputs comes
    // from and outputs go.
    const PipelineManifest &pipeline = *manifest.pipeline;
    for (auto [s, stage] : llvm::enumerate(pipeline.stages)) {
      RunnerApp app;
      app.ranks = stage.numRanks;
      app.args = getStageRunnerArgs(absOutDir, pipeline, s);
      app.args.insert(app.args.end(), {"--microbatches",
                                       std::to_string(pipeline.microbatches)});
      auto stageList = [](ArrayRef<int64_t> stages) {
        std::string text;
        for (int64_t peer : stages)
          text += (text.empty() ? "" : ",") + std::to_string(peer);
        return text;
      };
      for (const PipelinePort &port : stage.inputs) {
        std::string spec;
        if (port.boundary >= 0)
          spec = "recv:" + stageList(port.stages) + ":" +
                 std::to_string(port.boundary);
        else
          spec = (port.whole ? "whole:" : "") +
                 std::to_string(inputs[port.index].offset) + ":" +
                 inputs[port.index].path;
        app.args.insert(app.args.end(), {"--input", spec});
      }
      for (const PipelinePort &port : stage.outputs) {
        std::string spec;
        if (port.boundary >= 0)
          spec = "send:" + stageList(port.stages) + ":" +
                 std::to_string(port.boundary);
        else
          spec = std::to_string(outputs[port.index].offset) + ":" +
                 outputs[port.index].path;
        app.args.insert(app.args.end(), {"--output", spec});
      }
      app.args.insert(app.args.end(), common.begin(), common.end());
      apps.push_back(std::move(app));
    }
  } else {
    RunnerApp app;
    app.ranks = manifest.numDevices;
    app.args = programArgs(absOutDir, manifest, inputs, outputs);
    app.args.insert(app.args.end(), common.begin(), common.end());
    apps.push_back(std::move(app));
  }
  std::string err;
  FailureOr<std::string> launched = launchRunnerApps(
      ctx, apps, runDir.get(), options.timeoutSeconds, &err, options.hostfile);
  if (failed(launched))
    return failure();
  const std::string &out = *launched;
  llvm::outs() << out;
  llvm::outs().flush();
  llvm::errs() << err;
  if (options.measured) {
    SmallVector<StringRef> lines;
    StringRef(out).split(lines, '\n');
    for (StringRef line : lines) {
      line = line.trim();
      double seconds;
      unsigned long long bytes;
      if (line.consume_front("autopar-runtime: step_time_s=") &&
          !line.getAsDouble(seconds))
        options.measured->stepTimeSeconds = seconds;
      else if (line.consume_front("autopar-runtime: peak_memory_bytes=") &&
               !line.getAsInteger(10, bytes))
        options.measured->peakMemoryBytes = static_cast<int64_t>(bytes);
    }
  }
  return success();
}

/// Checks that every output of `manifest` has a static shape; returns the
/// byte size of each.
static FailureOr<std::vector<int64_t>>
getOutputBytes(MLIRContext &ctx, const Manifest &manifest) {
  std::vector<int64_t> sizes;
  for (const TensorSignature &sig : manifest.outputs) {
    if (llvm::any_of(sig.shape, ShapedType::isDynamic)) {
      emitDriverError(ctx) << "output '" << sig.name
                           << "' has a dynamic shape, which the runtime "
                              "cannot report yet";
      return failure();
    }
    int64_t elements = 1;
    for (int64_t dim : sig.shape)
      elements *= dim;
    sizes.push_back(elements * getDTypeSize(sig.dtype));
  }
  return sizes;
}

/// Creates `path` holding `header` followed by `dataBytes` bytes (a sparse
/// file the ranks fill in).
static LogicalResult preallocateFile(MLIRContext &ctx, StringRef path,
                                     StringRef header, int64_t dataBytes) {
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(
          path, fd, llvm::sys::fs::CD_CreateAlways)) {
    emitDriverError(ctx) << "cannot create '" << path << "': " << ec.message();
    return failure();
  }
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << header;
  os.flush();
  std::error_code ec = llvm::sys::fs::resize_file(
      fd, static_cast<uint64_t>(header.size() + dataBytes));
  os.close();
  if (ec || os.has_error()) {
    emitDriverError(ctx) << "cannot write '" << path
                         << "': " << (ec ? ec.message() : os.error().message());
    os.clear_error();
    return failure();
  }
  return success();
}

FailureOr<std::vector<HostTensor>> mlir::autopar::runCompiledProgram(
    MLIRContext &ctx, StringRef outDir, const Manifest &manifest,
    ArrayRef<HostTensor> inputs, const RunOptions &options) {
  if (inputs.size() != manifest.inputs.size()) {
    emitDriverError(ctx) << "got " << inputs.size() << " inputs, the model has "
                         << manifest.inputs.size();
    return failure();
  }
  FailureOr<std::vector<int64_t>> outputBytes = getOutputBytes(ctx, manifest);
  if (failed(outputBytes))
    return failure();
  TempDirectory ioDir;
  if (failed(ioDir.create(ctx, "autopar-io")))
    return failure();
  std::vector<TensorFileSlot> inputFiles, outputFiles;
  for (auto [index, tensor] : llvm::enumerate(inputs)) {
    std::string path =
        joinPath(ioDir.get(), "input_" + std::to_string(index) + ".bin");
    if (failed(writeFileBytes(ctx, path, tensor.data)))
      return failure();
    inputFiles.push_back({path, 0});
  }
  for (auto [index, bytes] : llvm::enumerate(*outputBytes)) {
    std::string path =
        joinPath(ioDir.get(), "output_" + std::to_string(index) + ".bin");
    if (failed(preallocateFile(ctx, path, "", bytes)))
      return failure();
    outputFiles.push_back({path, 0});
  }
  if (failed(runCompiledFiles(ctx, outDir, manifest, inputFiles, outputFiles,
                              options)))
    return failure();

  std::vector<HostTensor> outputs;
  for (auto [index, sig] : llvm::enumerate(manifest.outputs)) {
    const std::string &path = outputFiles[index].path;
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      emitDriverError(ctx) << "cannot read output '" << sig.name << "' ("
                           << path << "): " << buffer.getError().message();
      return failure();
    }
    StringRef bytes = (*buffer)->getBuffer();
    if (static_cast<int64_t>(bytes.size()) != (*outputBytes)[index]) {
      emitDriverError(ctx) << "output '" << sig.name << "' holds "
                           << bytes.size() << " bytes, expected "
                           << (*outputBytes)[index];
      return failure();
    }
    HostTensor tensor;
    tensor.dtype = sig.dtype;
    tensor.shape = sig.shape;
    tensor.data.assign(bytes.begin(), bytes.end());
    outputs.push_back(std::move(tensor));
  }
  return outputs;
}

//===----------------------------------------------------------------------===//
// autopar run
//===----------------------------------------------------------------------===//

/// Prints the cost model's prediction (plan.json) next to the measurement.
/// The `predicted` object of `dir/plan.json` (nullopt: none, or no
/// `step_time_s` in it); sets `isPipeline` when the plan has stages.
static std::optional<llvm::json::Object>
readPrediction(StringRef dir, bool *isPipeline = nullptr) {
  auto buffer = llvm::MemoryBuffer::getFile(joinPath(dir, "plan.json"));
  if (!buffer)
    return std::nullopt;
  llvm::Expected<llvm::json::Value> plan =
      llvm::json::parse((*buffer)->getBuffer());
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *root = plan->getAsObject();
  if (!root)
    return std::nullopt;
  if (isPipeline)
    *isPipeline = root->getObject("pipeline") != nullptr;
  const llvm::json::Object *predicted = root->getObject("predicted");
  if (!predicted || !predicted->getNumber("step_time_s"))
    return std::nullopt;
  return *predicted;
}

void driver::printPredictionComparison(StringRef outDir,
                                       const ProfileMeasurement &measured) {
  auto error = [](double predicted, double measured) {
    return measured > 0 ? llvm::formatv("{0:+0.0;-0.0}%",
                                        (predicted - measured) / measured * 100)
                              .str()
                        : std::string("n/a");
  };
  auto printPeak = [&](double peak) {
    llvm::outs() << llvm::formatv(
        "profile: peak memory predicted {0} bytes  measured {1} bytes  "
        "error {2}\n",
        (int64_t)peak, measured.peakMemoryBytes,
        error(peak, double(measured.peakMemoryBytes)));
  };
  bool isPipeline = false;
  std::optional<llvm::json::Object> predicted =
      readPrediction(outDir, &isPipeline);
  if (!predicted && isPipeline) {
    // A compiled pipeline: each stage's plan predicts its own program. The
    // measured peak is the largest over every rank of every stage; the
    // measured step includes the waits of the schedule, which the stages'
    // own predictions do not.
    std::optional<double> slowest, largest;
    for (int64_t s = 0;; ++s) {
      std::string stageDir = joinPath(outDir, "stage" + Twine(s));
      if (!llvm::sys::fs::is_directory(stageDir))
        break;
      std::optional<llvm::json::Object> stage = readPrediction(stageDir);
      if (!stage) {
        slowest.reset();
        break;
      }
      double step = *stage->getNumber("step_time_s");
      double peak = stage->getNumber("peak_memory_bytes").value_or(0);
      llvm::outs() << llvm::formatv(
          "profile: stage {0}: predicted program {1:e3} s, peak {2} bytes\n", s,
          step, (int64_t)peak);
      slowest = std::max(slowest.value_or(0), step);
      largest = std::max(largest.value_or(0), peak);
    }
    if (slowest) {
      llvm::outs() << llvm::formatv(
          "profile: step time   slowest stage's program {0:e3} s  measured "
          "{1:e3} s (the schedule's waits are not predicted for an executed "
          "pipeline)\n",
          *slowest, measured.stepTimeSeconds);
      printPeak(*largest);
      return;
    }
  }
  if (!predicted) {
    llvm::outs() << "profile: no prediction: the model was compiled without "
                    "a cluster description (compile with --cluster FILE, or "
                    "run 'autopar calibrate' first)\n";
    return;
  }
  double step = *predicted->getNumber("step_time_s");
  llvm::outs() << llvm::formatv(
      "profile: step time   predicted {0:e3} s  measured {1:e3} s  error "
      "{2}\n",
      step, measured.stepTimeSeconds, error(step, measured.stepTimeSeconds));
  if (std::optional<double> peak = predicted->getNumber("peak_memory_bytes"))
    printPeak(*peak);
}

int driver::runCommand(int argc, char **argv) {
  static llvm::cl::OptionCategory category("autopar run options");
  static llvm::cl::opt<std::string> outDir(llvm::cl::Positional,
                                           llvm::cl::desc("<compiled dir>"),
                                           llvm::cl::cat(category));
  static llvm::cl::opt<std::string> inputs(
      "inputs",
      llvm::cl::desc("directory with input_<i>.pb (serialized TensorProto)"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> outputs(
      "outputs", llvm::cl::desc("directory that receives output_<i>.pb"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> timeout(
      "timeout",
      llvm::cl::desc("seconds before the job is killed (default: 300)"),
      llvm::cl::value_desc("s"), llvm::cl::init("300"),
      llvm::cl::cat(category));
  static LauncherOptions launcher(category);
  static llvm::cl::opt<bool> profile(
      "profile",
      llvm::cl::desc("time the job (median of 7 runs, without file I/O) and "
                     "its peak memory, next to the cost model's prediction"),
      llvm::cl::cat(category));
  // LLVM registers a hidden integer `-threads` of its own; autopar run's
  // --threads takes its place in this process.
  static bool replaced = [] {
    auto registered = llvm::cl::getRegisteredOptions();
    if (auto it = registered.find("threads"); it != registered.end())
      it->second->removeArgument();
    return true;
  }();
  (void)replaced;
  static llvm::cl::opt<std::string> threads(
      "threads",
      llvm::cl::desc("threads per rank for the parallel loops (default: "
                     "floor(usable cores / ranks on the host), at least 1)"),
      llvm::cl::value_desc("n"), llvm::cl::init(""), llvm::cl::cat(category));

  if (std::optional<int> exit = parseCommandLine(
          argc, argv, "run",
          "run a compiled model on its device grid with mpirun (a one-device "
          "grid runs autopar-runner directly)\n\n"
          "  autopar run OUTDIR --inputs DIR --outputs DIR [--timeout S] "
          "[--profile] [--threads N] [--hostfile FILE]\n\n"
          "DIR uses the ONNX test-data layout: input_0.pb, ... (serialized "
          "TensorProto, matched by position to the runtime inputs); outputs "
          "are written as output_0.pb, ...\n",
          category, kErrorExitCode))
    return *exit;
  if (outDir.empty()) {
    printError("no compiled directory given (autopar run OUTDIR --inputs DIR "
               "--outputs DIR)");
    return kErrorExitCode;
  }
  if (inputs.empty() || outputs.empty()) {
    printError(inputs.empty() ? "missing --inputs DIR"
                              : "missing --outputs DIR");
    return kErrorExitCode;
  }
  FailureOr<uint64_t> timeoutSeconds = parseUnsignedOption("timeout", timeout);
  if (failed(timeoutSeconds))
    return kErrorExitCode;
  if (*timeoutSeconds == 0 || *timeoutSeconds > UINT32_MAX) {
    printError("--timeout must be between 1 and " + Twine(UINT32_MAX) + " s");
    return kErrorExitCode;
  }

  if (llvm::sys::fs::exists(outputs) && !llvm::sys::fs::is_directory(outputs)) {
    printError("output path '" + outputs + "' exists and is not a directory");
    return kErrorExitCode;
  }

  DriverContext context;
  MLIRContext &ctx = context.get();
  FailureOr<Manifest> manifest = readManifest(ctx, outDir);
  if (failed(manifest))
    return kErrorExitCode;
  FailureOr<std::vector<int64_t>> outputBytes = getOutputBytes(ctx, *manifest);
  if (failed(outputBytes))
    return kErrorExitCode;
  TempDirectory stagingDir;
  if (failed(stagingDir.create(ctx, "autopar-inputs")))
    return kErrorExitCode;
  FailureOr<std::vector<TensorFileSlot>> inputFiles =
      locateInputFiles(ctx, *manifest, inputs, stagingDir.get());
  if (failed(inputFiles))
    return kErrorExitCode;
  RunOptions options;
  options.timeoutSeconds = *timeoutSeconds;
  options.profile = profile;
  if (failed(launcher.apply(options)))
    return kErrorExitCode;
  if (!threads.empty()) {
    FailureOr<uint64_t> count = parseUnsignedOption("threads", threads);
    if (failed(count))
      return kErrorExitCode;
    if (*count == 0 || *count > 1024) {
      printError("--threads must be between 1 and 1024");
      return kErrorExitCode;
    }
    options.threads = static_cast<unsigned>(*count);
  }
  ProfileMeasurement measured;
  options.measured = &measured;

  // The ranks write their blocks into preallocated TensorProto files in a
  // hidden directory inside the output directory; the files move into place
  // only when the whole job succeeded, so a failed job leaves no outputs.
  bool createdOutputs = !llvm::sys::fs::exists(outputs);
  if (std::error_code ec = llvm::sys::fs::create_directories(outputs)) {
    printError("cannot create output directory '" + outputs +
               "': " + ec.message());
    return kErrorExitCode;
  }
  SmallString<256> partialPrefix(outputs), partialDir;
  llvm::sys::fs::make_absolute(partialPrefix);
  llvm::sys::path::append(partialPrefix, ".autopar-partial");
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory(partialPrefix, partialDir)) {
    printError("cannot create a directory in '" + outputs +
               "': " + ec.message());
    return kErrorExitCode;
  }
  StringRef absPartial = partialDir;
  auto cleanUp = [&] {
    (void)llvm::sys::fs::remove_directories(partialDir);
    if (createdOutputs)
      (void)llvm::sys::fs::remove(outputs);
  };
  std::vector<TensorFileSlot> outputFiles;
  for (auto [index, sig] : llvm::enumerate(manifest->outputs)) {
    std::string path =
        joinPath(absPartial, "output_" + std::to_string(index) + ".pb");
    std::string header =
        serializeTensorProtoHeader(sig.dtype, sig.shape, sig.name);
    if (failed(preallocateFile(ctx, path, header, (*outputBytes)[index]))) {
      cleanUp();
      return kErrorExitCode;
    }
    outputFiles.push_back({path, static_cast<int64_t>(header.size())});
  }
  if (failed(runCompiledFiles(ctx, outDir, *manifest, *inputFiles, outputFiles,
                              options))) {
    cleanUp();
    return kErrorExitCode;
  }
  if (profile)
    printPredictionComparison(outDir, measured);
  for (auto [index, file] : llvm::enumerate(outputFiles)) {
    std::string path =
        joinPath(outputs, "output_" + std::to_string(index) + ".pb");
    if (std::error_code ec = llvm::sys::fs::rename(file.path, path)) {
      printError("cannot write '" + path + "': " + ec.message());
      cleanUp();
      return kErrorExitCode;
    }
  }
  (void)llvm::sys::fs::remove_directories(partialDir);
  size_t count = manifest->outputs.size();
  llvm::outs() << "ran '" << outDir << "' on " << manifest->numDevices
               << " rank" << (manifest->numDevices == 1 ? "" : "s")
               << "; wrote " << count << " output" << (count == 1 ? "" : "s")
               << " to '" << outputs << "'\n";
  return 0;
}
