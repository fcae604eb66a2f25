//===- Runner.cpp - The autopar-runner main -------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements runnerMain: command line, MPI start-up, loading of the
// device program (dlopen) and the optional step-time profile.
//
//===----------------------------------------------------------------------===//

#include "autopar/Runtime/Runner.h"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

using namespace autopar::runtime;

namespace {

constexpr const char *usage =
    "usage: mpirun -np N autopar-runner --program PROGRAM.so --grid GRID\n"
    "                 [--weights DIR] [--inputs DIR] [--outputs DIR]\n"
    "                 [--profile [--repeats N]] [--threads N]\n"
    "                 [--steps N [--save-state DIR]]\n"
    "       mpirun -np N autopar-runner --bench-collectives --grid GRID\n"
    "                 [--sizes BYTES,...] [--repeats N] --out FILE.json\n"
    "\n"
    "Runs an autopar device program on every rank of a device grid, or\n"
    "times the runtime's collectives over every grid axis.\n"
    "\n"
    "  --program PATH  device program exporting `void autopar_main(void)`\n"
    "  --grid GRID     grid sizes, major axis first (4, 2x2); the number of\n"
    "                  MPI ranks must be their product\n"
    "  --weights DIR   weights, DIR/rank<R>/w<id>.bin\n"
    "  --inputs DIR    runtime inputs, DIR/input_<i>.bin\n"
    "  --outputs DIR   outputs, DIR/output_<i>.bin\n"
    "  --input OFFSET:PATH\n"
    "                  input i (the i-th --input; replaces --inputs): its raw\n"
    "                  bytes start at byte OFFSET of PATH (e.g. the raw_data\n"
    "                  of a TensorProto); each rank reads only its block\n"
    "  --output OFFSET:PATH\n"
    "                  output i (the i-th --output; replaces --outputs): an\n"
    "                  existing file, large enough; each block is written at\n"
    "                  its place, by one rank\n"
    "  --input whole:OFFSET:PATH\n"
    "                  in a pipeline: an input every microbatch reads whole\n"
    "                  (the other file inputs and outputs hold one slice\n"
    "                  per microbatch along dimension 0)\n"
    "  --input recv:S:TAG\n"
    "                  in a pipeline: boundary tensor TAG, received from\n"
    "                  the same rank of stage S\n"
    "  --output send:S[,S...]:TAG\n"
    "                  in a pipeline: boundary tensor TAG, sent to the same\n"
    "                  rank of each stage S\n"
    "  --stage S --stages P\n"
    "                  run pipeline stage S of P (MPMD: mpirun starts each\n"
    "                  stage's runner with its own program, in stage order;\n"
    "                  every stage has GRID's device count of ranks)\n"
    "  --microbatches M\n"
    "                  each run calls the program M times, microbatch k\n"
    "                  reading and writing slice k of its files\n"
    "  --steps N       run N training steps in one process: weights the\n"
    "                  program stores stay in memory from step to step;\n"
    "                  rank 0 prints `step K loss=V` (output 0) per step\n"
    "  --save-state DIR\n"
    "                  after the last step, each rank writes the weights\n"
    "                  the program stored as DIR/rank<R>/w<id>.bin\n"
    "  --profile       rank 0 prints `autopar-runtime: step_time_s=<s>`, the\n"
    "                  slowest rank's autopar_main time without its file\n"
    "                  I/O (median over --repeats runs, default 1; also\n"
    "                  `io_time_s`, `wall_time_s` and `cpu_time_s`, the\n"
    "                  process CPU seconds of a step, all threads, on\n"
    "                  the rank with the most: a figure that a busy\n"
    "                  machine does not inflate), and\n"
    "                  `autopar-runtime: peak_memory_bytes=<n>`, the largest\n"
    "                  peak of live buffer bytes over the ranks\n"
    "  --bench-collectives\n"
    "                  time all_reduce, all_gather, reduce_scatter,\n"
    "                  all_to_all and a point-to-point sendrecv over every\n"
    "                  grid axis of more than one device; rank 0 writes the\n"
    "                  median over the repeats of the slowest rank's time\n"
    "  --sizes LIST    message bytes per device, comma-separated\n"
    "                  (default: 1024,16384,262144,4194304)\n"
    "  --repeats N     samples per measurement (default: 5)\n"
    "  --threads N     threads of each rank's parallel loops (default:\n"
    "                  floor(usable cores / ranks on the host), at least 1)\n"
    "  --out PATH      JSON file of the measurements (--bench-collectives)\n"
    "  --help          print this help\n"
    "\n"
    "Files hold raw little-endian row-major tensor bytes. Any failure prints\n"
    "`autopar-runtime: rank R: <message>` and aborts the job.\n";

struct Options {
  std::string program;
  std::string grid;
  RuntimeConfig config;
  bool profile = false;
  bool benchCollectives = false;
  std::string sizes = "1024,16384,262144,4194304";
  /// Empty: 5 for --bench-collectives, 1 for a program.
  std::string repeats;
  std::string out;
  /// Empty: floor(usable cores / ranks on this host), at least 1.
  std::string threads;
  /// Empty: one run (or --repeats); otherwise training steps.
  std::string steps;
  std::string saveState;
  std::string stage, stages, microbatches;
  bool help = false;
  /// The first command-line error, reported once MPI is up.
  std::string error;
};

/// Parses `OFFSET:PATH` (a decimal byte offset, then a non-empty path).
std::optional<TensorFile> parseTensorFile(const std::string &text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 18 ||
      colon + 1 == text.size() || text.find_first_not_of("0123456789") < colon)
    return std::nullopt;
  return TensorFile{text.substr(colon + 1), std::stoll(text.substr(0, colon))};
}

/// Parses a decimal integer of 1 to 9 digits.
std::optional<int64_t> parseSmall(const std::string &text) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(text);
}

/// Parses `LIST:TAG` (stages separated by commas, then the tag) into `file`.
bool parseBoundary(const std::string &text, TensorFile &file) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return false;
  std::optional<int64_t> tag = parseSmall(text.substr(colon + 1));
  if (!tag || *tag > 32767)
    return false;
  file.tag = *tag;
  size_t pos = 0;
  std::string list = text.substr(0, colon);
  while (true) {
    size_t end = list.find(',', pos);
    std::optional<int64_t> stage = parseSmall(
        list.substr(pos, end == std::string::npos ? end : end - pos));
    if (!stage)
      return false;
    file.stages.push_back(*stage);
    if (end == std::string::npos)
      return true;
    pos = end + 1;
  }
}

/// `OFFSET:PATH`, `whole:OFFSET:PATH` or `recv:S:TAG`.
std::optional<TensorFile> parseInputSpec(const std::string &text) {
  if (text.compare(0, 5, "recv:") == 0) {
    TensorFile file;
    file.kind = TensorFile::Kind::Receive;
    if (!parseBoundary(text.substr(5), file) || file.stages.size() != 1)
      return std::nullopt;
    return file;
  }
  if (text.compare(0, 6, "whole:") == 0) {
    std::optional<TensorFile> file = parseTensorFile(text.substr(6));
    if (file)
      file->whole = true;
    return file;
  }
  return parseTensorFile(text);
}

/// `OFFSET:PATH` or `send:S[,S...]:TAG`.
std::optional<TensorFile> parseOutputSpec(const std::string &text) {
  if (text.compare(0, 5, "send:") == 0) {
    TensorFile file;
    file.kind = TensorFile::Kind::Send;
    if (!parseBoundary(text.substr(5), file))
      return std::nullopt;
    return file;
  }
  return parseTensorFile(text);
}

Options parseOptions(int argc, char **argv) {
  Options options;
  struct ValueOption {
    const char *flag;
    std::string *target;
  };
  const ValueOption valueOptions[] = {
      {"--program", &options.program},
      {"--grid", &options.grid},
      {"--weights", &options.config.weightsDir},
      {"--inputs", &options.config.inputsDir},
      {"--outputs", &options.config.outputsDir},
      {"--sizes", &options.sizes},
      {"--repeats", &options.repeats},
      {"--out", &options.out},
      {"--threads", &options.threads},
      {"--steps", &options.steps},
      {"--save-state", &options.saveState},
      {"--stage", &options.stage},
      {"--stages", &options.stages},
      {"--microbatches", &options.microbatches},
  };
  for (int i = 1; i < argc && options.error.empty(); ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (arg == "--profile") {
      options.profile = true;
      continue;
    }
    if (arg == "--bench-collectives") {
      options.benchCollectives = true;
      continue;
    }
    if (arg == "--input" || arg == "--output") {
      if (i + 1 >= argc) {
        options.error = "missing value after " + arg;
        continue;
      }
      std::string value = argv[++i];
      std::optional<TensorFile> file =
          arg == "--input" ? parseInputSpec(value) : parseOutputSpec(value);
      if (!file)
        options.error =
            "invalid " + arg + " '" + value +
            "': expected OFFSET:PATH (a byte offset, then the file)" +
            (arg == "--input" ? ", whole:OFFSET:PATH or recv:S:TAG"
                              : " or send:S[,S...]:TAG");
      else
        (arg == "--input" ? options.config.inputFiles
                          : options.config.outputFiles)
            .push_back(*file);
      continue;
    }
    bool matched = false;
    for (const ValueOption &option : valueOptions) {
      std::string flag = option.flag;
      if (arg == flag) {
        if (i + 1 >= argc) {
          options.error = "missing value after " + flag;
        } else {
          *option.target = argv[++i];
        }
        matched = true;
        break;
      }
      if (arg.compare(0, flag.size() + 1, flag + "=") == 0) {
        *option.target = arg.substr(flag.size() + 1);
        matched = true;
        break;
      }
    }
    if (!matched)
      options.error = "unknown argument '" + arg + "'";
  }
  return options;
}

/// Parses a positive decimal integer of at most 12 digits.
std::optional<int64_t> parsePositive(const std::string &text);

/// The ranks of this host and the cores this process may run on.
struct HostShare {
  int ranksOnHost = 1;
  int cores = 1;
};

HostShare getHostShare() {
  HostShare share;
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                          MPI_INFO_NULL, &local) != MPI_SUCCESS)
    fail("cannot count the ranks of this host (MPI_Comm_split_type failed)");
  MPI_Comm_size(local, &share.ranksOnHost);
  MPI_Comm_free(&local);
  cpu_set_t set;
  CPU_ZERO(&set);
  share.cores = sched_getaffinity(0, sizeof(set), &set) == 0
                    ? CPU_COUNT(&set)
                    : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  share.ranksOnHost = std::max(1, share.ranksOnHost);
  share.cores = std::max(1, share.cores);
  return share;
}

/// Threads per rank: `--threads N`, or floor(usable cores / ranks on this
/// host), and exactly 1 when the ranks of the host are at least its cores.
int chooseThreads(const std::string &flag, const HostShare &share) {
  if (!flag.empty()) {
    std::optional<int64_t> threads = parsePositive(flag);
    if (!threads || *threads > 1024)
      fail("invalid --threads '" + flag +
           "': expected a count between 1 and 1024");
    return static_cast<int>(*threads);
  }
  return std::max(1, share.cores / share.ranksOnHost);
}

/// Milliseconds an idle OpenMP thread spins before it sleeps
/// (`kmp_set_blocktime`): 1 when the host's ranks and their threads fit its
/// cores, 0 when they oversubscribe them. A sleeping thread is woken for
/// each parallel loop, which in a VM costs tens of microseconds (an
/// inter-processor interrupt to a halted virtual CPU): measured on a quiet
/// 2-core AMD EPYC VM, resnet18 (64x64, batch 4) at 2 threads took 10.7 ms
/// a step sleeping at once, 5.2 ms spinning 1 ms (and 6.0 ms at 1 thread);
/// spinning longer (libomp's default, 200 ms) gave the same 5.2 ms. Threads
/// of a rank that has its cores to itself take nothing from anyone by
/// spinning; where ranks share cores, spinning threads take them from the
/// other ranks and from the MPI progress of collectives (measured on a busy
/// 2-core machine: the MLP step at 2 threads took 76 ms spinning, 60 ms
/// sleeping).
int chooseBlocktimeMs(int threads, const HostShare &share) {
  return int64_t(share.ranksOnHost) * threads <= share.cores ? 1 : 0;
}

/// Parses a positive decimal integer of at most 12 digits.
std::optional<int64_t> parsePositive(const std::string &text) {
  if (text.empty() || text.size() > 12 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  int64_t value = std::stoll(text);
  if (value <= 0)
    return std::nullopt;
  return value;
}

/// `--bench-collectives`: checks its options and runs the benchmarks.
void runBench(const Options &options, const std::vector<int64_t> &grid) {
  CollectiveBenchOptions bench;
  if (options.out.empty())
    fail("missing --out FILE.json for --bench-collectives (see --help)");
  bench.outPath = options.out;
  std::optional<int64_t> repeats =
      parsePositive(options.repeats.empty() ? "5" : options.repeats);
  if (!repeats || *repeats > 1000)
    fail("invalid --repeats '" + options.repeats +
         "': expected an integer between 1 and 1000");
  bench.repeats = static_cast<int>(*repeats);
  size_t pos = 0;
  while (true) {
    size_t end = options.sizes.find(',', pos);
    std::string part = options.sizes.substr(
        pos, end == std::string::npos ? end : end - pos);
    std::optional<int64_t> size = parsePositive(part);
    if (!size || *size > (int64_t(1) << 32))
      fail("invalid --sizes '" + options.sizes +
           "': expected byte counts between 1 and 4294967296 separated by "
           "commas");
    bench.sizes.push_back(*size);
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  runCollectiveBench(grid, bench);
}

} // namespace

int autopar::runtime::runnerMain(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  if (options.help) {
    std::fputs(usage, stdout);
    return 0;
  }

  MPI_Init(&argc, &argv);
  if (!options.error.empty())
    fail(options.error + " (see --help)");
  if (options.program.empty() && !options.benchCollectives)
    fail("missing --program (see --help)");
  if (options.grid.empty())
    fail("missing --grid (see --help)");
  std::optional<std::vector<int64_t>> grid = parseGrid(options.grid);
  if (!grid)
    fail("invalid --grid '" + options.grid +
         "': expected 1 to 15 positive sizes separated by 'x', such as 2x2");
  options.config.grid = *grid;
  if (!options.stages.empty() || !options.stage.empty()) {
    std::optional<int64_t> stages = parsePositive(options.stages);
    std::optional<int64_t> stage = parseSmall(options.stage);
    if (!stages || !stage || *stage >= *stages)
      fail("invalid --stage '" + options.stage + "' of --stages '" +
           options.stages + "': expected 0 <= S < P");
    options.config.stage = *stage;
    options.config.stages = *stages;
  }
  if (!options.microbatches.empty()) {
    std::optional<int64_t> microbatches = parsePositive(options.microbatches);
    if (!microbatches)
      fail("invalid --microbatches '" + options.microbatches +
           "': expected a positive count");
    options.config.microbatches = *microbatches;
  }
  initializeRuntime(options.config);

  if (options.benchCollectives) {
    runBench(options, *grid);
    std::fflush(stdout);
    finalizeRuntime();
    MPI_Finalize();
    return 0;
  }

  void *handle = dlopen(options.program.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *reason = dlerror();
    fail("cannot load program '" + options.program +
         "': " + (reason ? reason : "unknown error"));
  }
  dlerror();
  auto *entry = reinterpret_cast<void (*)()>(dlsym(handle, "autopar_main"));
  if (!entry)
    fail("program '" + options.program + "' does not export autopar_main");

  HostShare share = getHostShare();
  int threads = chooseThreads(options.threads, share);
  // The program's parallel loops run on LLVM's OpenMP runtime, which
  // autopar's program.so links. A program without it (built by hand, without
  // parallel loops) runs on one thread.
  using SetThreadsFn = void (*)(int);
  auto *setThreads =
      reinterpret_cast<SetThreadsFn>(dlsym(handle, "omp_set_num_threads"));
  if (setThreads)
    setThreads(threads);
  else
    threads = 1;
  // Idle OpenMP threads spin briefly where the rank has its cores to itself
  // and sleep at once where ranks share them (chooseBlocktimeMs);
  // `KMP_BLOCKTIME` in the environment overrides this.
  using SetBlocktimeFn = void (*)(int);
  if (setThreads && !std::getenv("KMP_BLOCKTIME"))
    if (auto *setBlocktime = reinterpret_cast<SetBlocktimeFn>(
            dlsym(handle, "kmp_set_blocktime")))
      setBlocktime(chooseBlocktimeMs(threads, share));

  int64_t runs = 1;
  if (options.profile && !options.repeats.empty()) {
    std::optional<int64_t> repeats = parsePositive(options.repeats);
    if (!repeats || *repeats > 1000)
      fail("invalid --repeats '" + options.repeats +
           "': expected a count between 1 and 1000");
    runs = *repeats;
  }
  bool training = !options.steps.empty();
  if (training) {
    std::optional<int64_t> steps = parsePositive(options.steps);
    if (!steps)
      fail("invalid --steps '" + options.steps +
           "': expected a positive count");
    if (options.profile && !options.repeats.empty())
      fail("--repeats and --steps cannot be combined: the profile of a "
           "training run is the median over its steps");
    runs = *steps;
  } else if (!options.saveState.empty()) {
    fail("--save-state needs --steps");
  }
  int worldRank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  // Per run: the slowest rank's time without file I/O, and with it.
  std::vector<double> steps, walls, cpus;
  auto processCpuSeconds = [] {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec;
  };
  double firstIo = 0;
  for (int64_t run = 0; run < runs; ++run) {
    MPI_Barrier(MPI_COMM_WORLD);
    resetIoSeconds();
    double start = MPI_Wtime();
    double cpuStart = processCpuSeconds();
    for (int64_t k = 0; k < options.config.microbatches; ++k) {
      setMicrobatch(k);
      entry();
    }
    completeSends();
    double elapsed = MPI_Wtime() - start;
    double cpu = processCpuSeconds() - cpuStart;
    double local[3] = {elapsed - getIoSeconds(), elapsed, cpu};
    double slowest[3] = {0, 0, 0};
    if (MPI_Allreduce(local, slowest, 3, MPI_DOUBLE, MPI_MAX,
                      MPI_COMM_WORLD) != MPI_SUCCESS)
      fail("profile: MPI_Allreduce of the step time failed");
    if (run == 0)
      firstIo = getIoSeconds();
    steps.push_back(slowest[0]);
    walls.push_back(slowest[1]);
    cpus.push_back(slowest[2]);
    // The loss is output 0 of the (last) stage that holds it: its first
    // rank prints it.
    int64_t stageSize = 1;
    for (int64_t size : options.config.grid)
      stageSize *= size;
    bool printsLoss = options.config.stages > 1
                          ? options.config.stage == options.config.stages - 1 &&
                                worldRank % stageSize == 0
                          : worldRank == 0;
    if (training && printsLoss) {
      std::optional<double> loss = getWrittenScalar(0);
      if (!loss)
        fail("--steps: the program wrote no scalar loss as output 0");
      std::printf("step %" PRId64 " loss=%.10g\n", run + 1, *loss);
      std::fflush(stdout);
    }
  }
  if (!options.saveState.empty())
    saveWeightState(options.saveState);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };

  if (options.profile) {
    double slowest = median(steps);
    int64_t peak = getPeakMemoryBytes();
    int64_t largestPeak = 0;
    if (MPI_Reduce(&peak, &largestPeak, 1, MPI_INT64_T, MPI_MAX, 0,
                   MPI_COMM_WORLD) != MPI_SUCCESS)
      fail("profile: MPI_Reduce of the peak memory failed");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      std::printf("autopar-runtime: step_time_s=%.9f\n", slowest);
      std::printf("autopar-runtime: wall_time_s=%.9f\n", median(walls));
      std::printf("autopar-runtime: cpu_time_s=%.9f\n", median(cpus));
      std::printf("autopar-runtime: io_time_s=%.9f\n", firstIo);
      std::printf("autopar-runtime: peak_memory_bytes=%" PRId64 "\n",
                  largestPeak);
      std::printf("autopar-runtime: threads=%d\n", threads);
    }
  }
  std::fflush(stdout);
  finalizeRuntime();
  MPI_Finalize();
  return 0;
}
