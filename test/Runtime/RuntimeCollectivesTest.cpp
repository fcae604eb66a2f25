//===- RuntimeCollectivesTest.cpp - MPI test of the runtime collectives ---===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Run under mpirun with `--grid G`: calls every autopar_rt_* collective with
// hand-built unranked-memref descriptors, for several element types, ranks,
// dims and grid-axes lists, and compares each result with values computed
// locally from the known data of every rank. The group arithmetic here is a
// separate implementation of RuntimeABI.h's rules, not the runtime's.
// Rank 0 prints one PASS/FAIL line per check and `N passed, N failed`; the
// exit code is non-zero when any check failed.
//
//===----------------------------------------------------------------------===//

#include "autopar/Runtime/Runner.h"
#include "autopar/Runtime/RuntimeABI.h"

#include <mpi.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace autopar::runtime;

namespace {

//===----------------------------------------------------------------------===//
// Grid arithmetic (independent of the runtime)
//===----------------------------------------------------------------------===//

struct Grid {
  std::vector<int64_t> sizes;
  int rank = 0;

  std::vector<int64_t> coordsOf(int64_t r) const {
    std::vector<int64_t> coords(sizes.size());
    for (size_t i = sizes.size(); i-- > 0;) {
      coords[i] = r % sizes[i];
      r /= sizes[i];
    }
    return coords;
  }

  int64_t rankOf(const std::vector<int64_t> &coords) const {
    int64_t r = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      r = r * sizes[i] + coords[i];
    return r;
  }

  int64_t groupSize(const std::vector<int64_t> &axes) const {
    int64_t size = 1;
    for (int64_t axis : axes)
      size *= sizes[axis];
    return size;
  }

  /// World ranks of this device's group, by group index.
  std::vector<int> members(const std::vector<int64_t> &axes) const {
    std::vector<int> result;
    for (int64_t g = 0; g < groupSize(axes); ++g) {
      std::vector<int64_t> coords = coordsOf(rank);
      int64_t rest = g;
      for (size_t i = axes.size(); i-- > 0;) {
        coords[axes[i]] = rest % sizes[axes[i]];
        rest /= sizes[axes[i]];
      }
      result.push_back(static_cast<int>(rankOf(coords)));
    }
    return result;
  }

  /// The device whose coordinates on `axisA` and `axisB` are this device's
  /// swapped.
  int swapPartner(int64_t axisA, int64_t axisB) const {
    std::vector<int64_t> coords = coordsOf(rank);
    std::swap(coords[axisA], coords[axisB]);
    return static_cast<int>(rankOf(coords));
  }

  int64_t groupIndex(const std::vector<int64_t> &axes) const {
    std::vector<int> all = members(axes);
    for (size_t g = 0; g < all.size(); ++g)
      if (all[g] == rank)
        return static_cast<int64_t>(g);
    return -1;
  }
};

int64_t encodeAxes(const std::vector<int64_t> &axes) {
  int64_t code = 0;
  for (int64_t axis : axes)
    code = code * 16 + axis + 1;
  return code;
}

std::string axesString(const std::vector<int64_t> &axes) {
  std::string result = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    result += (i ? "," : "") + std::to_string(axes[i]);
  return result + "]";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string result;
  for (size_t i = 0; i < shape.size(); ++i)
    result += (i ? "x" : "") + std::to_string(shape[i]);
  return result;
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

std::vector<int64_t> unflatten(int64_t flat,
                               const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}

int64_t flatten(const std::vector<int64_t> &index,
                const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    flat = flat * shape[i] + index[i];
  return flat;
}

//===----------------------------------------------------------------------===//
// Memrefs
//===----------------------------------------------------------------------===//

/// A row-major buffer with its ranked memref descriptor {allocated, aligned,
/// offset, sizes, strides}; elements start `offset` elements into `storage`.
template <typename T> struct Tensor {
  std::vector<int64_t> shape;
  int64_t offset;
  std::vector<T> storage;
  std::vector<int64_t> desc;

  Tensor(std::vector<int64_t> shape, int64_t offset, T fill)
      : shape(std::move(shape)), offset(offset),
        storage(offset + numElements(this->shape), fill) {
    int64_t rank = static_cast<int64_t>(this->shape.size());
    desc.assign(3 + 2 * rank, 0);
    T *base = storage.data();
    std::memcpy(&desc[0], &base, sizeof(base));
    std::memcpy(&desc[1], &base, sizeof(base));
    desc[2] = offset;
    for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
      desc[3 + d] = this->shape[d];
      desc[3 + rank + d] = stride;
      stride *= this->shape[d];
    }
  }

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  void *descriptor() { return desc.data(); }
  T &at(int64_t i) { return storage[offset + i]; }
};

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

// Known data: value(r, i) is element i of rank r's input. Values are small
// integers (or quarters) so that float sums are exact in any order.
#define DEFINE_DTYPE(SUFFIX, TYPE, VALUE, COMBINE)                             \
  struct DType_##SUFFIX {                                                      \
    using T = TYPE;                                                            \
    static constexpr const char *name = #SUFFIX;                               \
    static T value(int64_t r, int64_t i) { return static_cast<T>(VALUE); }     \
    static T combine(T a, T b) { return static_cast<T>(COMBINE); }             \
    static constexpr auto allReduce = &autopar_rt_all_reduce_##SUFFIX;         \
    static constexpr auto allGather = &autopar_rt_all_gather_##SUFFIX;         \
    static constexpr auto reduceScatter = &autopar_rt_reduce_scatter_##SUFFIX; \
    static constexpr auto allToAll = &autopar_rt_all_to_all_##SUFFIX;          \
    static constexpr auto swapGridAxes = &autopar_rt_swap_grid_axes_##SUFFIX;  \
  };

// bf16 and f16 are stored as their bits; their values are quarters of
// magnitude at most 1, so that sums over up to 8 devices are exact.
uint16_t toBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  return static_cast<uint16_t>(word >> 16); // exact for these values
}
float fromBf16(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}
uint16_t toF16(float value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (value == 0)
    return sign;
  int exponent;
  float mantissa = std::frexp(std::fabs(value), &exponent); // [0.5, 1)
  auto fraction = static_cast<uint16_t>((2 * mantissa - 1) * 1024);
  return sign | static_cast<uint16_t>((exponent + 14) << 10) | fraction;
}
float fromF16(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  int fraction = bits & 0x3ff;
  float magnitude = exponent == 0 && fraction == 0
                        ? 0.0f
                        : std::ldexp(1.0f + static_cast<float>(fraction) / 1024,
                                     exponent - 15);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

DEFINE_DTYPE(f32, float, (r * 37 + i * 5) % 101 - 50, a + b)
DEFINE_DTYPE(bf16, uint16_t, toBf16(((r * 3 + i) % 9 - 4) * 0.25f),
             toBf16(fromBf16(a) + fromBf16(b)))
DEFINE_DTYPE(f16, uint16_t, toF16(((r * 5 + i) % 9 - 4) * 0.25f),
             toF16(fromF16(a) + fromF16(b)))
DEFINE_DTYPE(f64, double, (r * 1000 + i) * 0.25, a + b)
DEFINE_DTYPE(i64, int64_t, ((r + 1) << 40) + i * 3 - 7, a + b)
DEFINE_DTYPE(i32, int32_t, r * 100000 + i * 7 - 1000, a + b)
DEFINE_DTYPE(i8, int8_t, (r * 5 + i * 3) % 31 - 15, a + b)
DEFINE_DTYPE(i1, uint8_t, (r + 2 * i) % 3 == 0, a | b)

#undef DEFINE_DTYPE

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

struct Checker {
  Grid grid;
  int passed = 0;
  int failed = 0;

  /// Agrees on the result over all ranks and prints it on rank 0.
  void report(const std::string &name, bool ok) {
    int local = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all)
      ++passed;
    else
      ++failed;
    if (grid.rank == 0)
      std::printf("%s %s\n", all ? "PASS" : "FAIL", name.c_str());
  }

  /// Compares `out` with `expected(flat index)` on this rank.
  template <typename D>
  bool compare(const std::string &name, Tensor<typename D::T> &out,
               const std::function<typename D::T(int64_t)> &expected) {
    for (int64_t i = 0; i < numElements(out.shape); ++i) {
      typename D::T want = expected(i);
      if (out.at(i) != want) {
        std::fprintf(stderr,
                     "rank %d: %s: element %" PRId64 " is %g, expected %g\n",
                     grid.rank, name.c_str(), i, static_cast<double>(out.at(i)),
                     static_cast<double>(want));
        return false;
      }
    }
    return true;
  }

  template <typename D>
  Tensor<typename D::T> input(const std::vector<int64_t> &shape) {
    Tensor<typename D::T> in(shape, 1, 0);
    for (int64_t i = 0; i < numElements(shape); ++i)
      in.at(i) = D::value(grid.rank, i);
    return in;
  }

  template <typename D>
  void allReduce(const std::vector<int64_t> &axes,
                 const std::vector<int64_t> &shape, bool inPlace) {
    using T = typename D::T;
    std::string name =
        std::string("all_reduce_") + D::name + " axes=" + axesString(axes) +
        " shape=" + shapeString(shape) + (inPlace ? " in-place" : "");
    Tensor<T> in = input<D>(shape);
    Tensor<T> out(shape, 0, 0x5A);
    Tensor<T> &result = inPlace ? in : out;
    D::allReduce(in.rank(), in.descriptor(), result.rank(), result.descriptor(),
                 encodeAxes(axes));
    std::vector<int> members = grid.members(axes);
    report(name, compare<D>(name, result, [&](int64_t i) {
             T sum = D::value(members[0], i);
             for (size_t g = 1; g < members.size(); ++g)
               sum = D::combine(sum, D::value(members[g], i));
             return sum;
           }));
  }

  template <typename D>
  void allGather(const std::vector<int64_t> &axes,
                 const std::vector<int64_t> &shape, int64_t dim) {
    using T = typename D::T;
    std::string name =
        std::string("all_gather_") + D::name + " axes=" + axesString(axes) +
        " shape=" + shapeString(shape) + " dim=" + std::to_string(dim);
    std::vector<int> members = grid.members(axes);
    std::vector<int64_t> outShape = shape;
    outShape[dim] *= static_cast<int64_t>(members.size());
    Tensor<T> in = input<D>(shape);
    Tensor<T> out(outShape, 0, 0x5A);
    D::allGather(in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                 encodeAxes(axes), dim);
    report(name, compare<D>(name, out, [&](int64_t i) {
             std::vector<int64_t> index = unflatten(i, outShape);
             int64_t sender = index[dim] / shape[dim];
             index[dim] %= shape[dim];
             return D::value(members[sender], flatten(index, shape));
           }));
  }

  template <typename D>
  void reduceScatter(const std::vector<int64_t> &axes,
                     const std::vector<int64_t> &shape, int64_t dim) {
    using T = typename D::T;
    std::string name =
        std::string("reduce_scatter_") + D::name + " axes=" + axesString(axes) +
        " shape=" + shapeString(shape) + " dim=" + std::to_string(dim);
    std::vector<int> members = grid.members(axes);
    int64_t me = grid.groupIndex(axes);
    std::vector<int64_t> outShape = shape;
    outShape[dim] /= static_cast<int64_t>(members.size());
    Tensor<T> in = input<D>(shape);
    Tensor<T> out(outShape, 0, 0x5A);
    D::reduceScatter(in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                     encodeAxes(axes), dim);
    report(name, compare<D>(name, out, [&](int64_t i) {
             std::vector<int64_t> index = unflatten(i, outShape);
             index[dim] += me * outShape[dim];
             int64_t source = flatten(index, shape);
             T sum = D::value(members[0], source);
             for (size_t g = 1; g < members.size(); ++g)
               sum = D::combine(sum, D::value(members[g], source));
             return sum;
           }));
  }

  template <typename D>
  void allToAll(const std::vector<int64_t> &axes,
                const std::vector<int64_t> &shape, int64_t splitDim,
                int64_t concatDim) {
    using T = typename D::T;
    std::string name =
        std::string("all_to_all_") + D::name + " axes=" + axesString(axes) +
        " shape=" + shapeString(shape) + " split=" + std::to_string(splitDim) +
        " concat=" + std::to_string(concatDim);
    std::vector<int> members = grid.members(axes);
    auto groupSize = static_cast<int64_t>(members.size());
    int64_t me = grid.groupIndex(axes);
    std::vector<int64_t> block = shape;
    block[splitDim] /= groupSize;
    std::vector<int64_t> outShape = block;
    outShape[concatDim] *= groupSize;
    Tensor<T> in = input<D>(shape);
    Tensor<T> out(outShape, 0, 0x5A);
    D::allToAll(in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                encodeAxes(axes), splitDim, concatDim);
    report(name, compare<D>(name, out, [&](int64_t i) {
             std::vector<int64_t> index = unflatten(i, outShape);
             int64_t sender = index[concatDim] / block[concatDim];
             index[concatDim] %= block[concatDim];
             index[splitDim] += me * block[splitDim];
             return D::value(members[sender], flatten(index, shape));
           }));
  }

  /// Every device ends with the input of its swap partner; a device whose
  /// coordinates on the two axes are equal (on the diagonal) keeps its own.
  template <typename D>
  void swapGridAxes(int64_t axisA, int64_t axisB,
                    const std::vector<int64_t> &shape, bool inPlace) {
    using T = typename D::T;
    std::string name = std::string("swap_grid_axes_") + D::name +
                       " axes=" + std::to_string(axisA) + "/" +
                       std::to_string(axisB) + " shape=" + shapeString(shape) +
                       (inPlace ? " in-place" : "");
    int partner = grid.swapPartner(axisA, axisB);
    Tensor<T> in = input<D>(shape);
    Tensor<T> out(shape, 0, 0x5A);
    Tensor<T> &result = inPlace ? in : out;
    D::swapGridAxes(in.rank(), in.descriptor(), result.rank(),
                    result.descriptor(), axisA, axisB);
    report(name, compare<D>(name, result,
                            [&](int64_t i) { return D::value(partner, i); }));
  }

  /// swap_grid_axes on every ordered pair of distinct, equally sized axes.
  template <typename D> void swapAllAxes(const std::vector<int64_t> &shape) {
    auto numAxes = static_cast<int64_t>(grid.sizes.size());
    for (int64_t a = 0; a < numAxes; ++a)
      for (int64_t b = 0; b < numAxes; ++b)
        if (a != b && grid.sizes[a] == grid.sizes[b]) {
          swapGridAxes<D>(a, b, shape, /*inPlace=*/false);
          if (shape.size() == 2)
            swapGridAxes<D>(a, b, shape, /*inPlace=*/true);
        }
  }

  /// Checks that the diagonal devices of `axisA`/`axisB` (equal coordinates)
  /// are exactly the ones that keep their value, and that the others do not.
  void swapDiagonal(int64_t axisA, int64_t axisB) {
    std::string name = "swap_grid_axes_f32 axes=" + std::to_string(axisA) +
                       "/" + std::to_string(axisB) + " diagonal";
    std::vector<int64_t> coords = grid.coordsOf(grid.rank);
    bool diagonal = coords[axisA] == coords[axisB];
    Tensor<float> in(std::vector<int64_t>{1}, 0, 0);
    Tensor<float> out(std::vector<int64_t>{1}, 0, 0);
    in.at(0) = static_cast<float>(grid.rank);
    autopar_rt_swap_grid_axes_f32(in.rank(), in.descriptor(), out.rank(),
                                  out.descriptor(), axisA, axisB);
    bool kept = out.at(0) == in.at(0);
    if (kept != diagonal)
      std::fprintf(stderr, "rank %d: %s: got %g, diagonal %d\n", grid.rank,
                   name.c_str(), static_cast<double>(out.at(0)),
                   static_cast<int>(diagonal));
    report(name, kept == diagonal);
  }

  /// Every collective on every dim of `shape` that the group size allows.
  template <typename D>
  void allOps(const std::vector<int64_t> &axes,
              const std::vector<int64_t> &shape) {
    int64_t groupSize = grid.groupSize(axes);
    auto rank = static_cast<int64_t>(shape.size());
    allReduce<D>(axes, shape, /*inPlace=*/false);
    if (rank == 2)
      allReduce<D>(axes, shape, /*inPlace=*/true);
    for (int64_t d = 0; d < rank; ++d) {
      allGather<D>(axes, shape, d);
      if (shape[d] % groupSize == 0)
        reduceScatter<D>(axes, shape, d);
    }
    for (int64_t s = 0; s < rank; ++s)
      for (int64_t c = 0; c < rank; ++c)
        if (shape[s] % groupSize == 0)
          allToAll<D>(axes, shape, s, c);
  }

  template <typename D> void allShapes(const std::vector<int64_t> &axes) {
    allOps<D>(axes, {8});
    allOps<D>(axes, {4, 8});
    allOps<D>(axes, {2, 4, 4});
    allOps<D>(axes, {3, 2, 5});
  }

  /// A freed big buffer is handed out again for the next allocation of its
  /// size (the runtime keeps freed memory mapped: no mmap/munmap and page
  /// faults per step), and the live-byte count stays exact.
  void bigBufferReuse() {
    const size_t bytes = 8u << 20;
    int64_t live = getLiveMemoryBytes();
    void *first = _mlir_memref_to_llvm_alloc(bytes);
    std::memset(first, 1, bytes);
    bool counted = getLiveMemoryBytes() == live + static_cast<int64_t>(bytes);
    _mlir_memref_to_llvm_free(first);
    counted = counted && getLiveMemoryBytes() == live;
    void *second = _mlir_memref_to_llvm_alloc(bytes);
    bool reused = second == first;
    _mlir_memref_to_llvm_free(second);
    counted = counted && getLiveMemoryBytes() == live;
#if defined(__GLIBC__)
    report("big buffer reused after free", reused);
#else
    (void)reused;
#endif
    report("live bytes exact around a big buffer", counted);
  }

  void groupIndex(const std::vector<int64_t> &axes) {
    int64_t got = autopar_rt_group_index(encodeAxes(axes));
    int64_t want = grid.groupIndex(axes);
    if (got != want)
      std::fprintf(stderr,
                   "rank %d: group_index %s is %" PRId64 ", expected %" PRId64
                   "\n",
                   grid.rank, axesString(axes).c_str(), got, want);
    report("group_index axes=" + axesString(axes), got == want);
  }
};

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  std::string gridText = "1";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--grid")
      gridText = argv[i + 1];
  std::optional<std::vector<int64_t>> sizes = parseGrid(gridText);
  if (!sizes)
    fail("invalid --grid '" + gridText + "'");

  RuntimeConfig config;
  config.grid = *sizes;
  initializeRuntime(config);

  Checker checker;
  checker.grid.sizes = *sizes;
  MPI_Comm_rank(MPI_COMM_WORLD, &checker.grid.rank);

  checker.bigBufferReuse();

  // Every single axis, every ordered pair of axes, and the empty list.
  std::vector<std::vector<int64_t>> axesLists = {{}};
  auto numAxes = static_cast<int64_t>(sizes->size());
  for (int64_t a = 0; a < numAxes; ++a) {
    axesLists.push_back({a});
    for (int64_t b = 0; b < numAxes; ++b)
      if (a != b)
        axesLists.push_back({a, b});
  }

  for (const std::vector<int64_t> &axes : axesLists) {
    checker.groupIndex(axes);
    checker.allShapes<DType_f32>(axes);
    checker.allShapes<DType_i64>(axes);
    checker.allShapes<DType_i1>(axes);
    checker.allOps<DType_f64>(axes, {4, 8});
    checker.allOps<DType_i32>(axes, {4, 8});
    checker.allOps<DType_i8>(axes, {4, 8});
    checker.allOps<DType_bf16>(axes, {4, 8});
    checker.allOps<DType_f16>(axes, {4, 8});
  }

  // Point to point: every ordered pair of equally sized axes (2x2: 0/1;
  // 2x2x2: 0/1, 0/2, 1/2 both ways).
  for (int64_t a = 0; a < numAxes; ++a)
    for (int64_t b = 0; b < numAxes; ++b)
      if (a != b && (*sizes)[a] == (*sizes)[b])
        checker.swapDiagonal(a, b);
  checker.swapAllAxes<DType_f32>({8});
  checker.swapAllAxes<DType_f32>({4, 8});
  checker.swapAllAxes<DType_f32>({3, 2, 5});
  checker.swapAllAxes<DType_f32>({2, 0});
  checker.swapAllAxes<DType_f64>({4, 8});
  checker.swapAllAxes<DType_i64>({4, 8});
  checker.swapAllAxes<DType_i32>({4, 8});
  checker.swapAllAxes<DType_i8>({4, 8});
  checker.swapAllAxes<DType_i1>({4, 8});

  if (checker.grid.rank == 0)
    std::printf("%d passed, %d failed\n", checker.passed, checker.failed);
  finalizeRuntime();
  MPI_Finalize();
  return checker.failed ? 1 : 0;
}
