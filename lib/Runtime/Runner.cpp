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

#include <cstdio>
#include <cstring>
#include <dlfcn.h>

using namespace autopar::runtime;

namespace {

constexpr const char *usage =
    "usage: mpirun -np N autopar-runner --program PROGRAM.so --grid GRID\n"
    "                 [--weights DIR] [--inputs DIR] [--outputs DIR]\n"
    "                 [--profile]\n"
    "\n"
    "Runs an autopar device program on every rank of a device grid.\n"
    "\n"
    "  --program PATH  device program exporting `void autopar_main(void)`\n"
    "  --grid GRID     grid sizes, major axis first (4, 2x2); the number of\n"
    "                  MPI ranks must be their product\n"
    "  --weights DIR   weights, DIR/rank<R>/w<id>.bin\n"
    "  --inputs DIR    runtime inputs, DIR/input_<i>.bin\n"
    "  --outputs DIR   outputs, DIR/output_<i>.bin (written by rank 0)\n"
    "  --profile       rank 0 prints `autopar-runtime: step_time_s=<s>`, the\n"
    "                  slowest rank's autopar_main wall time\n"
    "  --help          print this help\n"
    "\n"
    "Files hold raw little-endian row-major tensor bytes. Any failure prints\n"
    "`autopar-runtime: rank R: <message>` and aborts the job.\n";

struct Options {
  std::string program;
  std::string grid;
  RuntimeConfig config;
  bool profile = false;
  bool help = false;
  /// The first command-line error, reported once MPI is up.
  std::string error;
};

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
  if (options.program.empty())
    fail("missing --program (see --help)");
  if (options.grid.empty())
    fail("missing --grid (see --help)");
  std::optional<std::vector<int64_t>> grid = parseGrid(options.grid);
  if (!grid)
    fail("invalid --grid '" + options.grid +
         "': expected 1 to 15 positive sizes separated by 'x', such as 2x2");
  options.config.grid = *grid;
  initializeRuntime(options.config);

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

  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  entry();
  double elapsed = MPI_Wtime() - start;

  if (options.profile) {
    double slowest = 0.0;
    if (MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
                   MPI_COMM_WORLD) != MPI_SUCCESS)
      fail("profile: MPI_Reduce of the step time failed");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      std::printf("autopar-runtime: step_time_s=%.9f\n", slowest);
  }
  std::fflush(stdout);
  finalizeRuntime();
  MPI_Finalize();
  return 0;
}
