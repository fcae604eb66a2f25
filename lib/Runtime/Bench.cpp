//===- Bench.cpp - Collective micro-benchmarks of the runtime -------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements `autopar-runner --bench-collectives`: for every grid
// axis of more than one device, every collective the cost model prices and
// every message size, the time of one call over the axis's groups. The
// collectives go through the runtime's own entry points (RuntimeABI.h), so
// what is measured is what device programs run; the point-to-point exchange
// is one MPI_Sendrecv with the next member of the group (a ring shift), as
// the runtime's swap_grid_axes does with its partner.
//
//===----------------------------------------------------------------------===//

#include "autopar/Runtime/Runner.h"
#include "autopar/Runtime/RuntimeABI.h"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

using namespace autopar::runtime;

namespace {

enum class BenchKind { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };

constexpr BenchKind kKinds[] = {BenchKind::AllReduce, BenchKind::AllGather,
                                BenchKind::ReduceScatter, BenchKind::AllToAll,
                                BenchKind::SendRecv};

const char *kindName(BenchKind kind) {
  switch (kind) {
  case BenchKind::AllReduce:
    return "all_reduce";
  case BenchKind::AllGather:
    return "all_gather";
  case BenchKind::ReduceScatter:
    return "reduce_scatter";
  case BenchKind::AllToAll:
    return "all_to_all";
  case BenchKind::SendRecv:
    return "sendrecv";
  }
  return "unknown";
}

/// The ranked descriptor of a 1-D f32 memref (RuntimeABI.h).
struct Descriptor1D {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

Descriptor1D describe(std::vector<float> &buffer, int64_t elements) {
  return {buffer.data(), buffer.data(), 0, elements, 1};
}

struct Measurement {
  int64_t axis;
  int64_t groupSize;
  BenchKind kind;
  int64_t bytes;
  double seconds;
};

/// One benchmark: `elements` f32 per device (the larger buffer of the
/// collective: all-gather's output, reduce-scatter's input) over one axis.
class AxisBench {
public:
  AxisBench(int64_t axis, int64_t groupSize, MPI_Comm comm, int64_t elements)
      : axisCode(axis + 1), groupSize(groupSize), comm(comm),
        elements(elements), in(elements, 1.0f), out(elements, 0.0f) {}

  void run(BenchKind kind) {
    int64_t part = elements / groupSize;
    switch (kind) {
    case BenchKind::AllReduce: {
      Descriptor1D a = describe(in, elements), b = describe(out, elements);
      autopar_rt_all_reduce_f32(1, &a, 1, &b, axisCode);
      return;
    }
    case BenchKind::AllGather: {
      Descriptor1D a = describe(in, part), b = describe(out, elements);
      autopar_rt_all_gather_f32(1, &a, 1, &b, axisCode, 0);
      return;
    }
    case BenchKind::ReduceScatter: {
      Descriptor1D a = describe(in, elements), b = describe(out, part);
      autopar_rt_reduce_scatter_f32(1, &a, 1, &b, axisCode, 0);
      return;
    }
    case BenchKind::AllToAll: {
      Descriptor1D a = describe(in, elements), b = describe(out, elements);
      autopar_rt_all_to_all_f32(1, &a, 1, &b, axisCode, 0, 0);
      return;
    }
    case BenchKind::SendRecv: {
      int index = 0;
      MPI_Comm_rank(comm, &index);
      int next = static_cast<int>((index + 1) % groupSize);
      int prev = static_cast<int>((index + groupSize - 1) % groupSize);
      if (MPI_Sendrecv(in.data(), static_cast<int>(elements), MPI_FLOAT, next,
                       0, out.data(), static_cast<int>(elements), MPI_FLOAT,
                       prev, 0, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        fail("bench-collectives: MPI_Sendrecv failed");
      return;
    }
    }
  }

private:
  int64_t axisCode;
  int64_t groupSize;
  MPI_Comm comm;
  int64_t elements;
  std::vector<float> in, out;
};

/// The communicator of this rank's group along `axis` (members ordered by
/// their coordinate on the axis, as the runtime orders them).
MPI_Comm splitAxis(const std::vector<int64_t> &grid, int64_t axis, int rank) {
  std::vector<int64_t> coords(grid.size());
  for (int64_t a = static_cast<int64_t>(grid.size()) - 1, rest = rank; a >= 0;
       --a) {
    coords[a] = rest % grid[a];
    rest /= grid[a];
  }
  int64_t color = 0;
  for (size_t a = 0; a < grid.size(); ++a)
    if (static_cast<int64_t>(a) != axis)
      color = color * grid[a] + coords[a];
  MPI_Comm comm = MPI_COMM_NULL;
  if (MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                     static_cast<int>(coords[axis]), &comm) != MPI_SUCCESS)
    fail("bench-collectives: MPI_Comm_split failed");
  return comm;
}

void writeJson(const std::string &path, const std::vector<int64_t> &grid,
               int repeats, const std::vector<Measurement> &results) {
  FILE *file = std::fopen(path.c_str(), "w");
  if (!file)
    fail("bench-collectives: cannot create '" + path + "'");
  std::fprintf(file, "{\n  \"grid\": [");
  for (size_t a = 0; a < grid.size(); ++a)
    std::fprintf(file, "%s%" PRId64, a ? ", " : "", grid[a]);
  std::fprintf(file, "],\n  \"repeats\": %d,\n  \"axes\": {", repeats);
  bool firstAxis = true;
  for (size_t a = 0; a < grid.size(); ++a) {
    if (grid[a] <= 1)
      continue;
    std::fprintf(file, "%s\n    \"%zu\": [", firstAxis ? "" : ",", a);
    firstAxis = false;
    bool first = true;
    for (const Measurement &m : results) {
      if (m.axis != static_cast<int64_t>(a))
        continue;
      std::fprintf(file,
                   "%s\n      {\"kind\": \"%s\", \"group_size\": %" PRId64
                   ", \"bytes\": %" PRId64 ", \"seconds\": %.17g}",
                   first ? "" : ",", kindName(m.kind), m.groupSize, m.bytes,
                   m.seconds);
      first = false;
    }
    std::fprintf(file, "\n    ]");
  }
  std::fprintf(file, "%s}\n}\n", firstAxis ? "" : "\n  ");
  if (std::fclose(file) != 0)
    fail("bench-collectives: cannot write '" + path + "'");
}

} // namespace

void autopar::runtime::runCollectiveBench(const std::vector<int64_t> &grid,
                                          const CollectiveBenchOptions &options) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (options.repeats <= 0)
    fail("bench-collectives: --repeats must be positive");
  std::vector<Measurement> results;
  for (size_t axis = 0; axis < grid.size(); ++axis) {
    int64_t n = grid[axis];
    if (n <= 1)
      continue;
    MPI_Comm comm = splitAxis(grid, static_cast<int64_t>(axis), rank);
    for (int64_t requested : options.sizes) {
      // Whole f32 elements, a multiple of the group size.
      int64_t elements = std::max<int64_t>(requested / 4, 1);
      elements = (elements + n - 1) / n * n;
      AxisBench bench(static_cast<int64_t>(axis), n, comm, elements);
      // Small messages are timed over several calls per sample.
      int64_t inner = std::clamp<int64_t>((int64_t(1) << 20) / (elements * 4),
                                          1, 64);
      for (BenchKind kind : kKinds) {
        bench.run(kind); // warm-up (and the runtime's communicator)
        std::vector<double> samples;
        for (int r = 0; r < options.repeats; ++r) {
          MPI_Barrier(MPI_COMM_WORLD);
          double start = MPI_Wtime();
          for (int64_t i = 0; i < inner; ++i)
            bench.run(kind);
          double mine = (MPI_Wtime() - start) / static_cast<double>(inner);
          double slowest = 0;
          MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX,
                        MPI_COMM_WORLD);
          samples.push_back(slowest);
        }
        std::sort(samples.begin(), samples.end());
        size_t mid = samples.size() / 2;
        double median = samples.size() % 2
                            ? samples[mid]
                            : 0.5 * (samples[mid - 1] + samples[mid]);
        results.push_back({static_cast<int64_t>(axis), n, kind, elements * 4,
                           median});
      }
    }
    MPI_Comm_free(&comm);
  }
  if (rank == 0) {
    writeJson(options.outPath, grid, options.repeats, results);
    for (const Measurement &m : results)
      std::printf("autopar-runtime: bench axis=%" PRId64 " kind=%s bytes=%" PRId64
                  " seconds=%.9g\n",
                  m.axis, kindName(m.kind), m.bytes, m.seconds);
  }
}
