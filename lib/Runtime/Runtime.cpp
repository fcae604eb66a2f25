//===- Runtime.cpp - Collectives, I/O and errors of device programs -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the `autopar_rt_*` entry points of RuntimeABI.h:
// unranked-memref decoding, grid groups over cached MPI sub-communicators,
// the collectives, weight/input/output files and the one-line job abort.
//
//===----------------------------------------------------------------------===//

#include "autopar/Runtime/CollectiveScratch.h"
#include "autopar/Runtime/Runner.h"
#include "autopar/Runtime/RuntimeABI.h"

#include <mpi.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace autopar::runtime;

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// printf into a std::string.
__attribute__((format(printf, 1, 2))) std::string format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string result(length > 0 ? static_cast<size_t>(length) : 0, '\0');
  if (length > 0)
    std::vsnprintf(result.data(), result.size() + 1, fmt, args);
  va_end(args);
  return result;
}

bool mpiActive() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

/// This process's world rank, also before MPI_Init (from the launcher).
int currentRank() {
  if (mpiActive()) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
  }
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return 0;
}

/// Fails the job when an MPI call did not return MPI_SUCCESS.
void checkMpi(int code, const char *op, const char *call) {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    length = std::snprintf(text, sizeof(text), "error code %d", code);
  fail(format("%s: %s failed: %.*s", op, call, length, text));
}

//===----------------------------------------------------------------------===//
// Memory accounting
//===----------------------------------------------------------------------===//

/// Bytes of the buffers live on this rank now and at most so far: the
/// device program's (allocated through _mlir_memref_to_llvm_alloc, which
/// also holds its weights, inputs and outputs) and the runtime's scratch
/// buffers. Atomic: the program's parallel loops run on several threads.
struct MemoryCounter {
  std::atomic<int64_t> live{0};
  std::atomic<int64_t> peak{0};
};

MemoryCounter &memoryCounter() {
  static MemoryCounter counter;
  return counter;
}

/// `AUTOPAR_RT_TRACE_MEMORY=1` prints every allocation and free (stderr).
bool traceMemory() {
  static bool trace = [] {
    const char *v = std::getenv("AUTOPAR_RT_TRACE_MEMORY");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return trace;
}

void noteAllocated(size_t bytes) {
  MemoryCounter &counter = memoryCounter();
  int64_t live = counter.live += static_cast<int64_t>(bytes);
  int64_t peak = counter.peak.load();
  while (live > peak && !counter.peak.compare_exchange_weak(peak, live)) {
  }
  if (traceMemory())
    std::fprintf(stderr,
                 "autopar-runtime: pid %d alloc %zu live %" PRId64 "\n",
                 static_cast<int>(getpid()), bytes, live);
}

void noteFreed(size_t bytes) {
  int64_t live = memoryCounter().live -= static_cast<int64_t>(bytes);
  if (traceMemory())
    std::fprintf(stderr,
                 "autopar-runtime: pid %d free %zu live %" PRId64 "\n",
                 static_cast<int>(getpid()), bytes, live);
}

/// Keeps the memory of freed buffers in the process. A step allocates and
/// frees the same big temporaries every time; with glibc's defaults, blocks
/// above the mmap threshold are mapped and unmapped on every step, and the
/// top of the heap is trimmed, so each step pays the page faults again (20-45%
/// of a matmul's time). Raising the mmap threshold to its maximum (32 MiB on
/// 64-bit glibc) and never trimming keeps those pages mapped: the next step's
/// buffers reuse them. The live-byte count is unaffected (it counts what the
/// program holds, not what malloc keeps). Other C libraries: nothing to do.
void keepFreedMemoryMapped() {
#if defined(__GLIBC__)
  for (int threshold = 32 << 20; threshold >= (1 << 20); threshold /= 2)
    if (mallopt(M_MMAP_THRESHOLD, threshold) == 1)
      break;
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

/// A std::allocator that counts its bytes in memoryCounter().
template <typename T> struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <typename U> CountingAllocator(const CountingAllocator<U> &) {}
  T *allocate(size_t n) {
    T *ptr = std::allocator<T>().allocate(n);
    noteAllocated(n * sizeof(T));
    return ptr;
  }
  void deallocate(T *ptr, size_t n) {
    noteFreed(n * sizeof(T));
    std::allocator<T>().deallocate(ptr, n);
  }
  template <typename U> bool operator==(const CountingAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const CountingAllocator<U> &) const {
    return false;
  }
};

/// A temporary buffer of a collective, counted as live memory.
using ScratchBuffer = std::vector<char, CountingAllocator<char>>;

/// What precedes every block handed out by _mlir_memref_to_llvm_alloc and
/// _mlir_memref_to_llvm_aligned_alloc: the malloc'ed base and the size asked
/// for. 16 bytes, so that a block after it keeps malloc's alignment.
struct BlockHeader {
  void *base;
  size_t size;
};
static_assert(sizeof(BlockHeader) == 16, "the header must keep alignment");

/// Allocates `size` bytes aligned to `alignment` (a power of two, at least
/// 16) behind a header.
void *allocateCounted(size_t size, size_t alignment) {
  size_t extra = sizeof(BlockHeader) + alignment - 16;
  void *base = std::malloc(size + extra);
  if (!base)
    fail(format("out of memory allocating %zu bytes (%" PRId64
                " bytes already live)",
                size, memoryCounter().live.load()));
  uintptr_t first = reinterpret_cast<uintptr_t>(base) + sizeof(BlockHeader);
  uintptr_t aligned = (first + alignment - 1) & ~(uintptr_t(alignment) - 1);
  auto *header = reinterpret_cast<BlockHeader *>(aligned) - 1;
  header->base = base;
  header->size = size;
  noteAllocated(size);
  return reinterpret_cast<void *>(aligned);
}

//===----------------------------------------------------------------------===//
// Element types and memrefs
//===----------------------------------------------------------------------===//

enum class ElemKind { F32, F64, BF16, F16, I64, I32, I8, U8, I1 };

//===----------------------------------------------------------------------===//
// bf16 and f16: 2-byte floats stored by programs compiled with --precision
//===----------------------------------------------------------------------===//

float bf16ToFloat(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

/// Rounds to nearest even (NaNs stay quiet NaNs).
uint16_t floatToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  if ((word & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((word >> 16) | 0x40);
  word += 0x7fffu + ((word >> 16) & 1);
  return static_cast<uint16_t>(word >> 16);
}

float f16ToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t word;
  if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    word = sign;
  } else {
    // Subnormal: normalize.
    exponent = 113;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      --exponent;
    }
    word = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
  }
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

/// Rounds to nearest even; overflow gives infinity.
uint16_t floatToF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000);
  uint32_t absolute = word & 0x7fffffffu;
  if (absolute > 0x7f800000u)
    return sign | 0x7e00;
  if (absolute >= 0x47800000u) // >= 65536: beyond the largest half
    return sign | 0x7c00;
  if (absolute < 0x38800000u) { // below the smallest normal half (2^-14)
    if (absolute < 0x33000000u) // below half the smallest subnormal
      return sign;
    uint32_t exponent = absolute >> 23;
    uint32_t mantissa = (absolute & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exponent; // 14..24
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1)))
      ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t rounded = absolute + 0xfffu + ((absolute >> 13) & 1);
  if (rounded >= 0x47800000u)
    return sign | 0x7c00;
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

/// MPI_User_function summing 2-byte floats: each pairwise sum is computed in
/// f32 and rounded once.
template <float (*toFloat)(uint16_t), uint16_t (*fromFloat)(float)>
void sumHalfFloats(void *in, void *inout, int *len, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = fromFloat(toFloat(a[i]) + toFloat(b[i]));
}

/// The MPI sum of `kind` (BF16 or F16), created on first use (after
/// MPI_Init).
MPI_Op getHalfSum(ElemKind kind) {
  static MPI_Op bf16Sum = MPI_OP_NULL, f16Sum = MPI_OP_NULL;
  MPI_Op &op = kind == ElemKind::BF16 ? bf16Sum : f16Sum;
  if (op == MPI_OP_NULL) {
    MPI_User_function *fn = kind == ElemKind::BF16
                                ? &sumHalfFloats<bf16ToFloat, floatToBf16>
                                : &sumHalfFloats<f16ToFloat, floatToF16>;
    checkMpi(MPI_Op_create(fn, /*commute=*/1, &op), "sum", "MPI_Op_create");
  }
  return op;
}

struct ElemInfo {
  const char *name;
  size_t size;
  MPI_Datatype type;
  MPI_Op sum;
};

ElemInfo elemInfo(ElemKind kind) {
  switch (kind) {
  case ElemKind::F32:
    return {"f32", 4, MPI_FLOAT, MPI_SUM};
  case ElemKind::F64:
    return {"f64", 8, MPI_DOUBLE, MPI_SUM};
  case ElemKind::BF16:
    return {"bf16", 2, MPI_UINT16_T, getHalfSum(kind)};
  case ElemKind::F16:
    return {"f16", 2, MPI_UINT16_T, getHalfSum(kind)};
  case ElemKind::I64:
    return {"i64", 8, MPI_INT64_T, MPI_SUM};
  case ElemKind::I32:
    return {"i32", 4, MPI_INT32_T, MPI_SUM};
  case ElemKind::I8:
    return {"i8", 1, MPI_INT8_T, MPI_SUM};
  case ElemKind::U8:
    return {"u8", 1, MPI_UINT8_T, MPI_SUM};
  case ElemKind::I1:
    // One byte per element, 0 or 1: a sum of booleans is their logical or.
    return {"i1", 1, MPI_UINT8_T, MPI_LOR};
  }
  fail("unknown element kind");
}

std::string shapeString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string result;
  for (size_t i = 0; i < shape.size(); ++i)
    result += (i ? "x" : "") + std::to_string(shape[i]);
  return result;
}

int64_t product(const std::vector<int64_t> &values, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i)
    result *= values[i];
  return result;
}

/// A contiguous row-major buffer decoded from an unranked memref.
struct MemRefView {
  char *data = nullptr;
  std::vector<int64_t> shape;
  int64_t numElements = 0;
  size_t elemSize = 0;

  size_t bytes() const { return static_cast<size_t>(numElements) * elemSize; }
};

/// Decodes the ranked descriptor `{allocated, aligned, offset, sizes[rank],
/// strides[rank]}` behind `desc`; fails unless the layout is row-major
/// contiguous.
MemRefView viewOf(const std::string &op, const char *what, int64_t rank,
                  void *desc, ElemKind kind) {
  if (!desc)
    fail(format("%s: %s descriptor is null", op.c_str(), what));
  if (rank < 0 || rank > 64)
    fail(format("%s: %s memref has an invalid rank %" PRId64, op.c_str(), what,
                rank));
  const auto *fields = static_cast<const int64_t *>(desc);
  char *aligned = nullptr;
  std::memcpy(&aligned, &fields[1], sizeof(aligned));
  int64_t offset = fields[2];
  const int64_t *sizes = fields + 3;
  const int64_t *strides = fields + 3 + rank;

  MemRefView view;
  view.elemSize = elemInfo(kind).size;
  view.shape.assign(sizes, sizes + rank);
  view.numElements = 1;
  for (int64_t size : view.shape) {
    if (size < 0)
      fail(format("%s: %s memref has a negative size: %s", op.c_str(), what,
                  shapeString(view.shape).c_str()));
    if (__builtin_mul_overflow(view.numElements, size, &view.numElements) ||
        view.numElements > (int64_t(1) << 56))
      fail(format("%s: %s memref is too large: %s", op.c_str(), what,
                  shapeString(view.shape).c_str()));
  }
  if (view.numElements == 0)
    return view;

  std::vector<int64_t> expected(rank);
  for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
    expected[d] = stride;
    stride *= view.shape[d];
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (view.shape[d] == 1 || strides[d] == expected[d])
      continue;
    fail(format(
        "%s: %s memref of shape %s has a non-identity layout: "
        "strides %s, expected %s",
        op.c_str(), what, shapeString(view.shape).c_str(),
        shapeString(std::vector<int64_t>(strides, strides + rank)).c_str(),
        shapeString(expected).c_str()));
  }
  if (!aligned)
    fail(format("%s: %s memref of shape %s has a null data pointer", op.c_str(),
                what, shapeString(view.shape).c_str()));
  if (offset < 0)
    fail(format("%s: %s memref has a negative offset %" PRId64, op.c_str(),
                what, offset));
  view.data = aligned + offset * static_cast<int64_t>(view.elemSize);
  return view;
}

bool overlaps(const MemRefView &a, const MemRefView &b) {
  return a.data < b.data + b.bytes() && b.data < a.data + a.bytes();
}

/// Views `src` as a [rows][cols] array of `chunkBytes` chunks and writes its
/// transpose [cols][rows] into `dst`.
void transposeBlocks(const char *src, char *dst, int64_t rows, int64_t cols,
                     size_t chunkBytes) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(dst + (c * rows + r) * chunkBytes,
                  src + (r * cols + c) * chunkBytes, chunkBytes);
}

int mpiCount(const std::string &op, int64_t count) {
  if (count > INT32_MAX)
    fail(format("%s: %" PRId64 " elements exceed the MPI count limit %d",
                op.c_str(), count, INT32_MAX));
  return static_cast<int>(count);
}

//===----------------------------------------------------------------------===//
// Grid state and groups
//===----------------------------------------------------------------------===//

struct RuntimeState {
  bool initialized = false;
  RuntimeConfig config;
  int worldRank = 0;
  /// The ranks of this rank's program (its pipeline stage, else the world),
  /// and this rank's place in them.
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int64_t stageSize = 1;
  int64_t microbatch = 0;
  /// Boundary tensors sent and not yet known to be received. Their copies
  /// are live memory until the sends complete.
  struct PendingSend {
    ScratchBuffer data;
    std::vector<MPI_Request> requests;
  };
  std::vector<PendingSend> pendingSends;
  /// This device's grid coordinates (row-major rank order).
  std::vector<int64_t> coords;
  /// Sub-communicators by encoded axes list.
  std::map<int64_t, MPI_Comm> comms;
  /// Weights the program stored (training state), by id: this rank's shard.
  std::map<int64_t, std::vector<char>> weightState;
  /// One-element float outputs written by this rank, by index.
  std::map<int64_t, double> writtenScalars;
  /// Resident weights (autopar_rt_resident_weight_*): the program's buffer
  /// each id was read into, by id. A weight is read from its file once per
  /// process; later steps find it in place.
  std::map<int64_t, const void *> residentWeights;
};

RuntimeState &state() {
  static RuntimeState instance;
  return instance;
}

RuntimeState &initializedState(const std::string &op) {
  RuntimeState &s = state();
  if (!s.initialized)
    fail(format("%s: the runtime is not initialized (run the program "
                "through autopar-runner)",
                op.c_str()));
  return s;
}

/// The group of this device for one axes list.
struct Group {
  int64_t size = 1;
  int64_t index = 0;
  MPI_Comm comm = MPI_COMM_NULL;
};

/// Decodes the hexadecimal axes list (digit = axis + 1, major first).
std::vector<int64_t> decodeAxes(const std::string &op, int64_t code) {
  const RuntimeState &s = initializedState(op);
  auto numAxes = static_cast<int64_t>(s.config.grid.size());
  std::vector<int64_t> axes;
  for (int64_t rest = code; rest > 0; rest >>= 4)
    axes.insert(axes.begin(), (rest & 0xF) - 1);
  std::vector<bool> seen(numAxes, false);
  bool valid = code >= 0;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= numAxes || seen[axis]) {
      valid = false;
      break;
    }
    seen[axis] = true;
  }
  if (!valid)
    fail(format("%s: invalid grid axes 0x%" PRIx64 " for grid %s", op.c_str(),
                static_cast<uint64_t>(code),
                shapeString(s.config.grid).c_str()));
  return axes;
}

/// Returns the group of `code`, splitting the program's communicator (the
/// world, or the pipeline stage) the first time a list is used (collective
/// over it: SPMD programs use lists in the same order on every rank).
Group groupOf(const std::string &op, int64_t code) {
  RuntimeState &s = initializedState(op);
  std::vector<int64_t> axes = decodeAxes(op, code);
  std::vector<bool> inGroup(s.config.grid.size(), false);
  Group group;
  for (int64_t axis : axes) {
    inGroup[axis] = true;
    group.size *= s.config.grid[axis];
    group.index = group.index * s.config.grid[axis] + s.coords[axis];
  }
  if (group.size == 1)
    return group;
  auto cached = s.comms.find(code);
  if (cached != s.comms.end()) {
    group.comm = cached->second;
    return group;
  }
  int64_t color = 0;
  for (size_t axis = 0; axis < s.config.grid.size(); ++axis)
    if (!inGroup[axis])
      color = color * s.config.grid[axis] + s.coords[axis];
  MPI_Comm comm = MPI_COMM_NULL;
  checkMpi(MPI_Comm_split(s.comm, static_cast<int>(color),
                          static_cast<int>(group.index), &comm),
           op.c_str(), "MPI_Comm_split");
  int commSize = 0;
  MPI_Comm_size(comm, &commSize);
  if (commSize != group.size)
    fail(format("%s: sub-communicator for axes 0x%" PRIx64
                " has %d ranks, expected %" PRId64,
                op.c_str(), static_cast<uint64_t>(code), commSize, group.size));
  s.comms.emplace(code, comm);
  group.comm = comm;
  return group;
}

std::string opName(const char *base, ElemKind kind) {
  return std::string(base) + "_" + elemInfo(kind).name;
}

void copyInto(const MemRefView &in, const MemRefView &out) {
  if (in.data != out.data && in.bytes())
    std::memmove(out.data, in.data, in.bytes());
}

void checkSameRank(const std::string &op, const MemRefView &in,
                   const MemRefView &out) {
  if (in.shape.size() != out.shape.size())
    fail(format("%s: output rank %zu differs from input rank %zu (input %s, "
                "output %s)",
                op.c_str(), out.shape.size(), in.shape.size(),
                shapeString(in.shape).c_str(), shapeString(out.shape).c_str()));
}

void checkDim(const std::string &op, const char *what, int64_t dim,
              size_t rank) {
  if (dim < 0 || dim >= static_cast<int64_t>(rank))
    fail(format("%s: %s %" PRId64 " is out of range for rank %zu", op.c_str(),
                what, dim, rank));
}

void checkShape(const std::string &op, const MemRefView &in,
                const MemRefView &out, const std::vector<int64_t> &expected,
                const std::string &why) {
  if (out.shape != expected)
    fail(format("%s: output shape %s is inconsistent with input shape %s %s "
                "(expected %s)",
                op.c_str(), shapeString(out.shape).c_str(),
                shapeString(in.shape).c_str(), why.c_str(),
                shapeString(expected).c_str()));
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Fault injection for the failure-handling tests:
/// `AUTOPAR_RT_FAULT=kill:R` makes world rank R kill itself (SIGKILL, no
/// message, as a crashed or OOM-killed process) when it enters its first
/// collective, in the middle of the step; the launcher must then take the
/// whole job down.
void injectFault() {
  static const int target = [] {
    const char *value = std::getenv("AUTOPAR_RT_FAULT");
    if (!value || std::strncmp(value, "kill:", 5) != 0)
      return -1;
    char *end = nullptr;
    long rank = std::strtol(value + 5, &end, 10);
    return end != value + 5 && *end == '\0' && rank >= 0 ? int(rank) : -1;
  }();
  if (target >= 0 && target == currentRank())
    raise(SIGKILL);
}

void allReduce(ElemKind kind, int64_t inRank, void *inDesc, int64_t outRank,
               void *outDesc, int64_t axes) {
  injectFault();
  std::string op = opName("all_reduce", kind);
  MemRefView in = viewOf(op, "input", inRank, inDesc, kind);
  MemRefView out = viewOf(op, "output", outRank, outDesc, kind);
  Group group = groupOf(op, axes);
  if (out.shape != in.shape)
    fail(format("%s: output shape %s differs from input shape %s", op.c_str(),
                shapeString(out.shape).c_str(), shapeString(in.shape).c_str()));
  copyInto(in, out);
  if (group.size == 1 || out.numElements == 0)
    return;
  ElemInfo info = elemInfo(kind);
  checkMpi(MPI_Allreduce(MPI_IN_PLACE, out.data, mpiCount(op, out.numElements),
                         info.type, info.sum, group.comm),
           op.c_str(), "MPI_Allreduce");
}

void allGather(ElemKind kind, int64_t inRank, void *inDesc, int64_t outRank,
               void *outDesc, int64_t axes, int64_t dim) {
  injectFault();
  std::string op = opName("all_gather", kind);
  MemRefView in = viewOf(op, "input", inRank, inDesc, kind);
  MemRefView out = viewOf(op, "output", outRank, outDesc, kind);
  Group group = groupOf(op, axes);
  checkSameRank(op, in, out);
  checkDim(op, "gather dim", dim, in.shape.size());
  std::vector<int64_t> expected = in.shape;
  expected[dim] *= group.size;
  checkShape(op, in, out, expected,
             format("gathered along dim %" PRId64 " over %" PRId64 " devices",
                    dim, group.size));
  if (group.size == 1) {
    copyInto(in, out);
    return;
  }
  if (in.numElements == 0)
    return;
  ElemInfo info = elemInfo(kind);
  int64_t outer = product(in.shape, 0, dim);
  size_t chunkBytes = in.bytes() / outer;
  int count = mpiCount(op, in.numElements);
  mpiCount(op, out.numElements);
  ScratchBuffer gathered;
  char *target = out.data;
  if (needsBlockTranspose(in.shape.data(), dim) || overlaps(in, out)) {
    gathered.resize(out.bytes());
    target = gathered.data();
  }
  checkMpi(MPI_Allgather(in.data, count, info.type, target, count, info.type,
                         group.comm),
           op.c_str(), "MPI_Allgather");
  // [group][outer][chunk] -> [outer][group][chunk].
  if (target != out.data)
    transposeBlocks(target, out.data, group.size, outer, chunkBytes);
}

void reduceScatter(ElemKind kind, int64_t inRank, void *inDesc, int64_t outRank,
                   void *outDesc, int64_t axes, int64_t dim) {
  injectFault();
  std::string op = opName("reduce_scatter", kind);
  MemRefView in = viewOf(op, "input", inRank, inDesc, kind);
  MemRefView out = viewOf(op, "output", outRank, outDesc, kind);
  Group group = groupOf(op, axes);
  checkSameRank(op, in, out);
  checkDim(op, "scatter dim", dim, in.shape.size());
  if (in.shape[dim] % group.size != 0)
    fail(format("%s: scatter dim %" PRId64 " of input shape %s is not "
                "divisible by the group size %" PRId64,
                op.c_str(), dim, shapeString(in.shape).c_str(), group.size));
  std::vector<int64_t> expected = in.shape;
  expected[dim] /= group.size;
  checkShape(op, in, out, expected,
             format("scattered along dim %" PRId64 " over %" PRId64 " devices",
                    dim, group.size));
  if (group.size == 1) {
    copyInto(in, out);
    return;
  }
  if (out.numElements == 0)
    return;
  ElemInfo info = elemInfo(kind);
  int64_t outer = product(in.shape, 0, dim);
  size_t chunkBytes = out.bytes() / outer;
  int count = mpiCount(op, out.numElements);
  mpiCount(op, in.numElements);
  // Block j (sent to member j) must be contiguous: [outer][group][chunk] ->
  // [group][outer][chunk].
  ScratchBuffer packed;
  const char *send = in.data;
  if (needsBlockTranspose(in.shape.data(), dim) || overlaps(in, out)) {
    packed.resize(in.bytes());
    transposeBlocks(in.data, packed.data(), outer, group.size, chunkBytes);
    send = packed.data();
  }
  checkMpi(MPI_Reduce_scatter_block(send, out.data, count, info.type, info.sum,
                                    group.comm),
           op.c_str(), "MPI_Reduce_scatter_block");
}

void allToAll(ElemKind kind, int64_t inRank, void *inDesc, int64_t outRank,
              void *outDesc, int64_t axes, int64_t splitDim,
              int64_t concatDim) {
  injectFault();
  std::string op = opName("all_to_all", kind);
  MemRefView in = viewOf(op, "input", inRank, inDesc, kind);
  MemRefView out = viewOf(op, "output", outRank, outDesc, kind);
  Group group = groupOf(op, axes);
  checkSameRank(op, in, out);
  checkDim(op, "split dim", splitDim, in.shape.size());
  checkDim(op, "concat dim", concatDim, in.shape.size());
  if (in.shape[splitDim] % group.size != 0)
    fail(format("%s: split dim %" PRId64 " of input shape %s is not "
                "divisible by the group size %" PRId64,
                op.c_str(), splitDim, shapeString(in.shape).c_str(),
                group.size));
  std::vector<int64_t> block = in.shape;
  block[splitDim] /= group.size;
  std::vector<int64_t> expected = block;
  expected[concatDim] *= group.size;
  checkShape(op, in, out, expected,
             format("split along dim %" PRId64 " and concatenated along dim "
                    "%" PRId64 " over %" PRId64 " devices",
                    splitDim, concatDim, group.size));
  if (group.size == 1) {
    copyInto(in, out);
    return;
  }
  if (in.numElements == 0)
    return;
  ElemInfo info = elemInfo(kind);
  int count = mpiCount(op, in.numElements / group.size);
  mpiCount(op, in.numElements);

  // Send blocks: [outerSplit][group][chunk] -> [group][outerSplit][chunk].
  int64_t outerSplit = product(in.shape, 0, splitDim);
  ScratchBuffer packed;
  const char *send = in.data;
  if (needsBlockTranspose(in.shape.data(), splitDim) || overlaps(in, out)) {
    packed.resize(in.bytes());
    transposeBlocks(in.data, packed.data(), outerSplit, group.size,
                    in.bytes() / outerSplit / group.size);
    send = packed.data();
  }
  // Received blocks: [group][outerConcat][chunk] ->
  // [outerConcat][group][chunk].
  int64_t outerConcat = product(block, 0, concatDim);
  ScratchBuffer received;
  char *recv = out.data;
  if (needsBlockTranspose(block.data(), concatDim)) {
    received.resize(out.bytes());
    recv = received.data();
  }
  checkMpi(
      MPI_Alltoall(send, count, info.type, recv, count, info.type, group.comm),
      op.c_str(), "MPI_Alltoall");
  if (recv != out.data)
    transposeBlocks(recv, out.data, group.size, outerConcat,
                    out.bytes() / outerConcat / group.size);
}

/// Exchanges `in` with the device whose coordinates on `axisA` and `axisB` are
/// swapped: one MPI_Sendrecv on the world communicator, or a copy on the
/// devices whose two coordinates are equal.
void swapGridAxes(ElemKind kind, int64_t inRank, void *inDesc, int64_t outRank,
                  void *outDesc, int64_t axisA, int64_t axisB) {
  injectFault();
  std::string op = opName("swap_grid_axes", kind);
  MemRefView in = viewOf(op, "input", inRank, inDesc, kind);
  MemRefView out = viewOf(op, "output", outRank, outDesc, kind);
  const RuntimeState &s = initializedState(op);
  auto numAxes = static_cast<int64_t>(s.config.grid.size());
  for (int64_t axis : {axisA, axisB})
    if (axis < 0 || axis >= numAxes)
      fail(format("%s: grid axis %" PRId64 " is out of range for grid %s",
                  op.c_str(), axis, shapeString(s.config.grid).c_str()));
  if (axisA == axisB)
    fail(format("%s: needs two different grid axes, got %" PRId64 " twice",
                op.c_str(), axisA));
  if (s.config.grid[axisA] != s.config.grid[axisB])
    fail(format("%s: grid axes %" PRId64 " and %" PRId64
                " of grid %s have different sizes %" PRId64 " and %" PRId64,
                op.c_str(), axisA, axisB, shapeString(s.config.grid).c_str(),
                s.config.grid[axisA], s.config.grid[axisB]));
  if (out.shape != in.shape)
    fail(format("%s: output shape %s differs from input shape %s", op.c_str(),
                shapeString(out.shape).c_str(), shapeString(in.shape).c_str()));

  std::vector<int64_t> coords = s.coords;
  std::swap(coords[axisA], coords[axisB]);
  int64_t partner = 0;
  for (int64_t axis = 0; axis < numAxes; ++axis)
    partner = partner * s.config.grid[axis] + coords[axis];
  if (partner == s.rank) {
    copyInto(in, out);
    return;
  }

  // Also for empty buffers: the partner's message must be matched, and its
  // size is checked against ours.
  ElemInfo info = elemInfo(kind);
  int count = mpiCount(op, in.numElements);
  ScratchBuffer copy;
  const char *send = in.data;
  if (overlaps(in, out)) {
    copy.assign(in.data, in.data + in.bytes());
    send = copy.data();
  }
  MPI_Status status;
  checkMpi(MPI_Sendrecv(send, count, info.type, static_cast<int>(partner),
                        /*sendtag=*/0, out.data, count, info.type,
                        static_cast<int>(partner), /*recvtag=*/0, s.comm,
                        &status),
           op.c_str(), "MPI_Sendrecv");
  int received = 0;
  checkMpi(MPI_Get_count(&status, info.type, &received), op.c_str(),
           "MPI_Get_count");
  if (received != count)
    fail(format("%s: received %d elements from rank %" PRId64
                ", expected %d (shape %s)",
                op.c_str(), received, partner, count,
                shapeString(in.shape).c_str()));
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

void readFile(const std::string &op, const char *what, const std::string &path,
              const MemRefView &view, ElemKind kind) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    fail(format("%s: cannot open %s file '%s': %s", op.c_str(), what,
                path.c_str(), std::strerror(errno)));
  struct stat info;
  if (fstat(fileno(file), &info) != 0)
    fail(format("%s: cannot stat %s file '%s': %s", op.c_str(), what,
                path.c_str(), std::strerror(errno)));
  auto actual = static_cast<int64_t>(info.st_size);
  auto expected = static_cast<int64_t>(view.bytes());
  if (actual != expected)
    fail(format("%s: %s file '%s' has %" PRId64 " bytes, expected %" PRId64
                " (%s tensor of shape %s)",
                op.c_str(), what, path.c_str(), actual, expected,
                elemInfo(kind).name, shapeString(view.shape).c_str()));
  if (view.bytes() &&
      std::fread(view.data, 1, view.bytes(), file) != view.bytes())
    fail(format("%s: cannot read %" PRId64 " bytes from %s file '%s'",
                op.c_str(), expected, what, path.c_str()));
  std::fclose(file);
}

const std::string &requireDir(const std::string &op, const std::string &dir,
                              const char *flag) {
  if (dir.empty())
    fail(format("%s: no %s directory was given to autopar-runner", op.c_str(),
                flag));
  return dir;
}

/// Seconds this rank spent reading weights and inputs and writing outputs
/// (file I/O the cost model does not price; the profile leaves it out).
double &ioSeconds() {
  static double seconds = 0;
  return seconds;
}

/// Adds the lifetime of the scope to ioSeconds().
struct IoTimer {
  double start = MPI_Wtime();
  ~IoTimer() { ioSeconds() += MPI_Wtime() - start; }
};

void loadWeight(ElemKind kind, int64_t id, int64_t rank, void *desc) {
  IoTimer timer;
  std::string op = opName("load_weight", kind);
  RuntimeState &s = initializedState(op);
  MemRefView view = viewOf(op, "weight", rank, desc, kind);
  if (id < 0)
    fail(format("%s: invalid weight id %" PRId64, op.c_str(), id));
  auto stored = s.weightState.find(id);
  if (stored != s.weightState.end()) {
    if (stored->second.size() != view.bytes())
      fail(format("%s: weight %" PRId64 " was stored with %zu bytes, loaded "
                  "with %zu",
                  op.c_str(), id, stored->second.size(), view.bytes()));
    std::memcpy(view.data, stored->second.data(), view.bytes());
    return;
  }
  std::string path = requireDir(op, s.config.weightsDir, "--weights") +
                     "/rank" + std::to_string(s.rank) + "/w" +
                     std::to_string(id) + ".bin";
  readFile(op, "weight", path, view, kind);
}

/// Fills the program's resident buffer of weight `id` (a global of the
/// device program, see autopar-lower-program-to-runtime) on the first call
/// of the process, and does nothing on later calls with the same buffer: an
/// inference step reads its weights from memory, not from files, and maps no
/// fresh pages for them. The buffer counts as live memory from its first fill
/// on (the cost model counts every weight as resident).
void residentWeight(ElemKind kind, int64_t id, int64_t rank, void *desc) {
  std::string op = opName("resident_weight", kind);
  RuntimeState &s = initializedState(op);
  MemRefView view = viewOf(op, "weight", rank, desc, kind);
  auto [it, first] = s.residentWeights.try_emplace(id, view.data);
  if (!first && it->second == view.data)
    return;
  if (!first)
    fail(format("%s: weight %" PRId64 " was made resident at another address",
                op.c_str(), id));
  loadWeight(kind, id, rank, desc);
  noteAllocated(view.bytes());
}

void storeWeight(ElemKind kind, int64_t id, int64_t rank, void *desc) {
  std::string op = opName("store_weight", kind);
  RuntimeState &s = initializedState(op);
  MemRefView view = viewOf(op, "weight", rank, desc, kind);
  if (id < 0)
    fail(format("%s: invalid weight id %" PRId64, op.c_str(), id));
  std::vector<char> &slot = s.weightState[id];
  slot.resize(view.bytes());
  if (view.bytes())
    std::memcpy(slot.data(), view.data, view.bytes());
}

/// The block of a tensor this device holds: global sizes, the block's
/// offsets and sizes per dimension, and whether this device writes it.
struct Block {
  std::vector<int64_t> global;
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
  bool writer = true;
};

/// Decodes the layout buffer of read_input/write_output (see RuntimeABI.h)
/// for `view`, this device's block.
Block blockOf(const std::string &op, const MemRefView &view, int64_t layoutRank,
              void *layoutDesc) {
  RuntimeState &s = initializedState(op);
  MemRefView layout =
      viewOf(op, "layout", layoutRank, layoutDesc, ElemKind::I64);
  size_t rank = view.shape.size();
  if (layout.shape.size() != 1 ||
      layout.numElements != static_cast<int64_t>(2 * rank))
    fail(format("%s: the layout of a rank-%zu tensor must hold %zu values, "
                "got shape %s",
                op.c_str(), rank, 2 * rank, shapeString(layout.shape).c_str()));
  std::vector<int64_t> values(2 * rank);
  if (!values.empty())
    std::memcpy(values.data(), layout.data, layout.bytes());
  Block block;
  block.global.assign(values.begin(), values.begin() + rank);
  block.sizes = view.shape;
  block.offsets.assign(rank, 0);
  std::vector<bool> used(s.config.grid.size(), false);
  for (size_t d = 0; d < rank; ++d) {
    Group group = groupOf(op, values[rank + d]);
    for (int64_t axis : decodeAxes(op, values[rank + d])) {
      if (used[axis])
        fail(format("%s: grid axis %" PRId64 " splits two dimensions",
                    op.c_str(), axis));
      used[axis] = true;
    }
    if (block.global[d] < 0 || view.shape[d] * group.size != block.global[d])
      fail(format("%s: block %s does not tile global shape %s over the "
                  "grid axes 0x%" PRIx64 " of dimension %zu",
                  op.c_str(), shapeString(view.shape).c_str(),
                  shapeString(block.global).c_str(),
                  static_cast<uint64_t>(values[rank + d]), d));
    block.offsets[d] = group.index * view.shape[d];
  }
  for (size_t axis = 0; axis < used.size(); ++axis)
    if (!used[axis] && s.coords[axis] != 0)
      block.writer = false;
  return block;
}

/// Calls `transfer(bufferOffset, fileOffset, bytes)` for each contiguous run
/// of `block` in a row-major file of the global tensor starting at
/// `fileBase`: the dimensions after the last split one are whole, so a run
/// is one block row of them.
template <typename Fn>
void forEachRun(const Block &block, size_t elemSize, int64_t fileBase,
                Fn transfer) {
  size_t rank = block.global.size();
  size_t last = 0;
  bool split = false;
  for (size_t d = 0; d < rank; ++d)
    if (block.sizes[d] != block.global[d]) {
      last = d;
      split = true;
    }
  int64_t total = product(block.sizes, 0, rank);
  if (total == 0)
    return;
  if (!split) {
    transfer(0, fileBase, static_cast<size_t>(total) * elemSize);
    return;
  }
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * block.global[d];
  int64_t runElems = block.sizes[last] * strides[last];
  int64_t runs = product(block.sizes, 0, last);
  std::vector<int64_t> index(last, 0);
  for (int64_t run = 0; run < runs; ++run) {
    int64_t element = block.offsets[last] * strides[last];
    for (size_t d = 0; d < last; ++d)
      element += (block.offsets[d] + index[d]) * strides[d];
    transfer(run * runElems * static_cast<int64_t>(elemSize),
             fileBase + element * static_cast<int64_t>(elemSize),
             static_cast<size_t>(runElems) * elemSize);
    for (size_t d = last; d-- > 0;) {
      if (++index[d] < block.sizes[d])
        break;
      index[d] = 0;
    }
  }
}

/// Input or output `index`: the file given to the runner, else
/// `<dir>/<stem><index>.bin`.
TensorFile tensorFile(const std::string &op,
                      const std::vector<TensorFile> &files,
                      const std::string &dir, const char *flag,
                      const char *stem, int64_t index) {
  if (index < static_cast<int64_t>(files.size()))
    return files[index];
  if (!files.empty())
    fail(format("%s: no file for index %" PRId64 " (the runner was given %zu)",
                op.c_str(), index, files.size()));
  return {requireDir(op, dir, flag) + "/" + stem + std::to_string(index) +
              ".bin",
          0};
}

/// The world rank of this rank's peer in pipeline stage `stage`.
int peerRank(const std::string &op, const RuntimeState &s, int64_t stage) {
  if (stage < 0 || stage >= s.config.stages || stage == s.config.stage)
    fail(format("%s: invalid peer stage %" PRId64 " (stage %" PRId64
                " of %" PRId64 ")",
                op.c_str(), stage, s.config.stage, s.config.stages));
  return static_cast<int>(stage * s.stageSize + s.rank);
}

bool isWhole(const Block &block) { return block.sizes == block.global; }

/// Frees the copies of the sends that have completed (MPI_Testall), so that
/// a boundary tensor's copy lives from its send until the runtime's next
/// point-to-point call after its receipt, not until the end of the step.
void reapCompletedSends(RuntimeState &s) {
  auto completed = [](RuntimeState::PendingSend &send) {
    int done = 0;
    checkMpi(MPI_Testall(static_cast<int>(send.requests.size()),
                         send.requests.data(), &done, MPI_STATUSES_IGNORE),
             "send_boundary", "MPI_Testall");
    return done != 0;
  };
  s.pendingSends.erase(
      std::remove_if(s.pendingSends.begin(), s.pendingSends.end(), completed),
      s.pendingSends.end());
}

/// Receives boundary tensor `file.tag` whole from this rank's peer in stage
/// `file.stages[0]` and keeps this device's block of it.
void receiveBoundary(const std::string &op, const MemRefView &view,
                     const Block &block, const TensorFile &file) {
  RuntimeState &s = initializedState(op);
  if (file.stages.size() != 1)
    fail(format("%s: a boundary tensor is received from one stage, got %zu",
                op.c_str(), file.stages.size()));
  int from = peerRank(op, s, file.stages[0]);
  int64_t globalBytes =
      product(block.global, 0, block.global.size()) * view.elemSize;
  int count = mpiCount(op, globalBytes);
  reapCompletedSends(s);
  ScratchBuffer whole;
  char *target = view.data;
  if (!isWhole(block)) {
    whole.resize(static_cast<size_t>(globalBytes));
    target = whole.data();
  }
  MPI_Status status;
  checkMpi(MPI_Recv(target, count, MPI_BYTE, from, static_cast<int>(file.tag),
                    MPI_COMM_WORLD, &status),
           op.c_str(), "MPI_Recv");
  int received = 0;
  checkMpi(MPI_Get_count(&status, MPI_BYTE, &received), op.c_str(),
           "MPI_Get_count");
  if (received != count)
    fail(format("%s: boundary tensor %" PRId64 " from stage %" PRId64
                " has %d bytes, expected %d (global shape %s)",
                op.c_str(), file.tag, file.stages[0], received, count,
                shapeString(block.global).c_str()));
  if (!whole.empty())
    forEachRun(block, view.elemSize, 0,
               [&](int64_t at, int64_t offset, size_t bytes) {
                 std::memcpy(view.data + at, whole.data() + offset, bytes);
               });
}

/// Sends boundary tensor `file.tag` whole to this rank's peer in each stage
/// of `file.stages`. A split tensor is first assembled on every device of
/// the stage: each block's writer places it in a zeroed buffer of the whole
/// tensor and a bitwise-or all-reduce over the stage merges them (every
/// byte comes from exactly one writer, so the bits are exact).
void sendBoundary(const std::string &op, const MemRefView &view,
                  const Block &block, const TensorFile &file) {
  RuntimeState &s = initializedState(op);
  int64_t globalBytes =
      product(block.global, 0, block.global.size()) * view.elemSize;
  int count = mpiCount(op, globalBytes);
  reapCompletedSends(s);
  RuntimeState::PendingSend send;
  send.data.assign(static_cast<size_t>(globalBytes), 0);
  if (isWhole(block)) {
    if (globalBytes)
      std::memcpy(send.data.data(), view.data, send.data.size());
  } else {
    if (block.writer)
      forEachRun(block, view.elemSize, 0,
                 [&](int64_t at, int64_t offset, size_t bytes) {
                   std::memcpy(send.data.data() + offset, view.data + at,
                               bytes);
                 });
    checkMpi(MPI_Allreduce(MPI_IN_PLACE, send.data.data(), count, MPI_BYTE,
                           MPI_BOR, s.comm),
             op.c_str(), "MPI_Allreduce");
  }
  for (int64_t stage : file.stages) {
    if (stage <= s.config.stage)
      fail(format("%s: stage %" PRId64 " sends to stage %" PRId64
                  ": boundary tensors go to later stages",
                  op.c_str(), s.config.stage, stage));
    MPI_Request request;
    checkMpi(MPI_Isend(send.data.data(), count, MPI_BYTE,
                       peerRank(op, s, stage), static_cast<int>(file.tag),
                       MPI_COMM_WORLD, &request),
             op.c_str(), "MPI_Isend");
    send.requests.push_back(request);
  }
  s.pendingSends.push_back(std::move(send));
}

/// Checks a program's message tag (MPI guarantees tags up to 32767).
void checkTag(const std::string &op, int64_t tag) {
  if (tag < 0 || tag > 32767)
    fail(format("%s: message tag %" PRId64 " is outside [0, 32767]", op.c_str(),
                tag));
}

/// autopar.send: the whole buffer to this rank's peer in `stage`, not
/// waiting (a copy is kept until completeSends).
void sendTensor(ElemKind kind, int64_t stage, int64_t tag, int64_t rank,
                void *desc) {
  std::string op = opName("send", kind);
  RuntimeState &s = initializedState(op);
  MemRefView view = viewOf(op, "input", rank, desc, kind);
  checkTag(op, tag);
  int to = peerRank(op, s, stage);
  int count = mpiCount(op, view.bytes());
  reapCompletedSends(s);
  RuntimeState::PendingSend send;
  send.data.assign(view.data, view.data + view.bytes());
  MPI_Request request;
  checkMpi(MPI_Isend(send.data.data(), count, MPI_BYTE, to,
                     static_cast<int>(tag), MPI_COMM_WORLD, &request),
           op.c_str(), "MPI_Isend");
  send.requests.push_back(request);
  s.pendingSends.push_back(std::move(send));
}

/// autopar.recv: the whole buffer from this rank's peer in `stage`.
void recvTensor(ElemKind kind, int64_t stage, int64_t tag, int64_t rank,
                void *desc) {
  std::string op = opName("recv", kind);
  RuntimeState &s = initializedState(op);
  MemRefView view = viewOf(op, "result", rank, desc, kind);
  checkTag(op, tag);
  int from = peerRank(op, s, stage);
  int count = mpiCount(op, view.bytes());
  reapCompletedSends(s);
  MPI_Status status;
  checkMpi(MPI_Recv(view.data, count, MPI_BYTE, from, static_cast<int>(tag),
                    MPI_COMM_WORLD, &status),
           op.c_str(), "MPI_Recv");
  int received = 0;
  checkMpi(MPI_Get_count(&status, MPI_BYTE, &received), op.c_str(),
           "MPI_Get_count");
  if (received != count)
    fail(format("%s: message %" PRId64 " from stage %" PRId64
                " has %d bytes, expected %d (shape %s)",
                op.c_str(), tag, stage, received, count,
                shapeString(view.shape).c_str()));
}

/// The byte offset of the current microbatch's slice of a file tensor.
int64_t microbatchOffset(const RuntimeState &s, const TensorFile &file,
                         const Block &block, size_t elemSize) {
  if (file.whole || s.microbatch == 0)
    return file.offset;
  return file.offset + s.microbatch *
                           product(block.global, 0, block.global.size()) *
                           static_cast<int64_t>(elemSize);
}

void readInput(ElemKind kind, int64_t index, int64_t rank, void *desc,
               int64_t layoutRank, void *layoutDesc) {
  IoTimer timer;
  std::string op = opName("read_input", kind);
  RuntimeState &s = initializedState(op);
  MemRefView view = viewOf(op, "input", rank, desc, kind);
  if (index < 0)
    fail(format("%s: invalid input index %" PRId64, op.c_str(), index));
  Block block = blockOf(op, view, layoutRank, layoutDesc);
  TensorFile file = tensorFile(op, s.config.inputFiles, s.config.inputsDir,
                               "--inputs", "input_", index);
  if (file.kind == TensorFile::Kind::Receive)
    return receiveBoundary(op, view, block, file);
  if (file.kind != TensorFile::Kind::File)
    fail(format("%s: input %" PRId64 " is sent, not read", op.c_str(), index));
  file.offset = microbatchOffset(s, file, block, view.elemSize);
  int fd = open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(format("%s: cannot open input file '%s': %s", op.c_str(),
                file.path.c_str(), std::strerror(errno)));
  struct stat info;
  if (fstat(fd, &info) != 0)
    fail(format("%s: cannot stat input file '%s': %s", op.c_str(),
                file.path.c_str(), std::strerror(errno)));
  int64_t globalBytes =
      product(block.global, 0, block.global.size()) * view.elemSize;
  auto actual = static_cast<int64_t>(info.st_size);
  // A raw file holds exactly the tensor; a TensorProto may go on after it.
  bool sizeOk = s.config.inputFiles.empty()
                    ? actual == globalBytes
                    : actual >= file.offset + globalBytes;
  if (!sizeOk)
    fail(format("%s: input file '%s' has %" PRId64 " bytes, expected %s%" PRId64
                " (%" PRId64 " bytes of a %s tensor of shape %s at offset "
                "%" PRId64 ")",
                op.c_str(), file.path.c_str(), actual,
                s.config.inputFiles.empty() ? "" : "at least ",
                file.offset + globalBytes, globalBytes, elemInfo(kind).name,
                shapeString(block.global).c_str(), file.offset));
  forEachRun(block, view.elemSize, file.offset,
             [&](int64_t at, int64_t fileOffset, size_t bytes) {
               char *dst = view.data + at;
               while (bytes > 0) {
                 ssize_t got = pread(fd, dst, bytes, fileOffset);
                 if (got < 0 && errno == EINTR)
                   continue;
                 if (got <= 0)
                   fail(format("%s: cannot read %zu bytes at offset %" PRId64
                               " of input file '%s': %s",
                               op.c_str(), bytes, fileOffset, file.path.c_str(),
                               got < 0 ? std::strerror(errno)
                                       : "unexpected end of file"));
                 dst += got;
                 fileOffset += got;
                 bytes -= static_cast<size_t>(got);
               }
             });
  close(fd);
}

void writeOutput(ElemKind kind, int64_t index, int64_t rank, void *desc,
                 int64_t layoutRank, void *layoutDesc) {
  IoTimer timer;
  std::string op = opName("write_output", kind);
  RuntimeState &s = initializedState(op);
  MemRefView view = viewOf(op, "output", rank, desc, kind);
  if (index < 0)
    fail(format("%s: invalid output index %" PRId64, op.c_str(), index));
  Block block = blockOf(op, view, layoutRank, layoutDesc);
  if (index < static_cast<int64_t>(s.config.outputFiles.size())) {
    const TensorFile &spec = s.config.outputFiles[index];
    if (spec.kind == TensorFile::Kind::Send)
      return sendBoundary(op, view, block, spec);
    if (spec.kind != TensorFile::Kind::File)
      fail(format("%s: output %" PRId64 " is received, not written", op.c_str(),
                  index));
  }
  if (!block.writer)
    return;
  if (view.bytes() == elemInfo(kind).size &&
      (kind == ElemKind::F32 || kind == ElemKind::F64)) {
    float f32 = 0;
    double f64 = 0;
    if (kind == ElemKind::F32)
      std::memcpy(&f32, view.data, sizeof(f32));
    else
      std::memcpy(&f64, view.data, sizeof(f64));
    s.writtenScalars[index] = kind == ElemKind::F32 ? double(f32) : f64;
  }
  bool given = !s.config.outputFiles.empty();
  if (!given) {
    const std::string &dir = requireDir(op, s.config.outputsDir, "--outputs");
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
      fail(format("%s: cannot create output directory '%s': %s", op.c_str(),
                  dir.c_str(), std::strerror(errno)));
  }
  TensorFile file = tensorFile(op, s.config.outputFiles, s.config.outputsDir,
                               "--outputs", "output_", index);
  file.offset = microbatchOffset(s, file, block, view.elemSize);
  int64_t globalBytes =
      product(block.global, 0, block.global.size()) * view.elemSize;
  // A preallocated file is only filled; a raw file in --outputs is created
  // (by every writer, without truncation) and sized to the tensor.
  int fd = open(file.path.c_str(), O_WRONLY | O_CLOEXEC | (given ? 0 : O_CREAT),
                0666);
  if (fd < 0)
    fail(format("%s: cannot open output file '%s': %s", op.c_str(),
                file.path.c_str(), std::strerror(errno)));
  struct stat info;
  if (fstat(fd, &info) != 0)
    fail(format("%s: cannot stat output file '%s': %s", op.c_str(),
                file.path.c_str(), std::strerror(errno)));
  if (!given) {
    if (ftruncate(fd, globalBytes) != 0)
      fail(format("%s: cannot size output file '%s' to %" PRId64 " bytes: %s",
                  op.c_str(), file.path.c_str(), globalBytes,
                  std::strerror(errno)));
  } else if (static_cast<int64_t>(info.st_size) < file.offset + globalBytes) {
    fail(format("%s: output file '%s' has %" PRId64
                " bytes, expected at least %" PRId64,
                op.c_str(), file.path.c_str(),
                static_cast<int64_t>(info.st_size), file.offset + globalBytes));
  }
  forEachRun(block, view.elemSize, file.offset,
             [&](int64_t at, int64_t fileOffset, size_t bytes) {
               const char *src = view.data + at;
               while (bytes > 0) {
                 ssize_t put = pwrite(fd, src, bytes, fileOffset);
                 if (put < 0 && errno == EINTR)
                   continue;
                 if (put <= 0)
                   fail(format("%s: cannot write %zu bytes at offset %" PRId64
                               " of output file '%s': %s",
                               op.c_str(), bytes, fileOffset, file.path.c_str(),
                               std::strerror(errno)));
                 src += put;
                 fileOffset += put;
                 bytes -= static_cast<size_t>(put);
               }
             });
  if (close(fd) != 0)
    fail(format("%s: cannot close output file '%s': %s", op.c_str(),
                file.path.c_str(), std::strerror(errno)));
}

} // namespace

//===----------------------------------------------------------------------===//
// C++ API
//===----------------------------------------------------------------------===//

void autopar::runtime::fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "autopar-runtime: rank %d: %s\n", currentRank(),
               message.c_str());
  std::fflush(stderr);
  if (mpiActive())
    MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

std::optional<std::vector<int64_t>>
autopar::runtime::parseGrid(const std::string &text) {
  std::vector<int64_t> grid;
  size_t pos = 0;
  while (true) {
    size_t end = text.find('x', pos);
    std::string part =
        text.substr(pos, end == std::string::npos ? end : end - pos);
    if (part.empty() || part.size() > 9 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    int64_t size = std::stoll(part);
    if (size <= 0)
      return std::nullopt;
    grid.push_back(size);
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  if (grid.size() > 15)
    return std::nullopt;
  return grid;
}

void autopar::runtime::initializeRuntime(const RuntimeConfig &config) {
  if (!mpiActive())
    fail("initializeRuntime: mpi is not initialized");
  RuntimeState &s = state();
  if (s.initialized)
    fail("initializeRuntime: the runtime is already initialized");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int worldSize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (config.grid.empty() || config.grid.size() > 15)
    fail(format("grid %s must have between 1 and 15 axes",
                shapeString(config.grid).c_str()));
  int64_t devices = 1;
  for (int64_t size : config.grid) {
    if (size <= 0 || size > INT32_MAX)
      fail(format("invalid grid %s", shapeString(config.grid).c_str()));
    devices *= size;
  }
  if (config.stages < 1 || config.stage < 0 || config.stage >= config.stages ||
      config.microbatches < 1)
    fail(format("invalid pipeline stage %" PRId64 " of %" PRId64
                " with %" PRId64 " microbatches",
                config.stage, config.stages, config.microbatches));
  if (devices * config.stages != worldSize)
    fail(format("expected %" PRId64 " ranks for %s%s, got %d",
                devices * config.stages,
                config.stages > 1 ? "stages of grid " : "grid ",
                shapeString(config.grid).c_str(), worldSize));
  s.rank = s.worldRank;
  s.stageSize = devices;
  if (config.stages > 1) {
    if (s.worldRank / devices != config.stage)
      fail(format("world rank %d belongs to stage %" PRId64
                  ", but was started as stage %" PRId64,
                  s.worldRank, s.worldRank / devices, config.stage));
    checkMpi(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(config.stage),
                            s.worldRank, &s.comm),
             "initializeRuntime", "MPI_Comm_split");
    MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(s.comm, &s.rank);
  }
  keepFreedMemoryMapped();
  s.config = config;
  s.coords.assign(config.grid.size(), 0);
  for (int64_t axis = static_cast<int64_t>(config.grid.size()) - 1,
               rest = s.rank;
       axis >= 0; --axis) {
    s.coords[axis] = rest % config.grid[axis];
    rest /= config.grid[axis];
  }
  s.initialized = true;
}

void autopar::runtime::setMicrobatch(int64_t index) {
  RuntimeState &s = initializedState("setMicrobatch");
  if (index < 0 || index >= s.config.microbatches)
    fail(format("microbatch %" PRId64 " is out of range [0, %" PRId64 ")",
                index, s.config.microbatches));
  s.microbatch = index;
}

void autopar::runtime::completeSends() {
  RuntimeState &s = initializedState("completeSends");
  for (RuntimeState::PendingSend &send : s.pendingSends)
    checkMpi(MPI_Waitall(static_cast<int>(send.requests.size()),
                         send.requests.data(), MPI_STATUSES_IGNORE),
             "send_boundary", "MPI_Waitall");
  s.pendingSends.clear();
}

int64_t autopar::runtime::getLiveMemoryBytes() { return memoryCounter().live; }

int64_t autopar::runtime::getPeakMemoryBytes() { return memoryCounter().peak; }

double autopar::runtime::getIoSeconds() { return ioSeconds(); }

void autopar::runtime::resetIoSeconds() { ioSeconds() = 0; }

std::optional<double> autopar::runtime::getWrittenScalar(int64_t index) {
  RuntimeState &s = state();
  auto it = s.writtenScalars.find(index);
  if (it == s.writtenScalars.end())
    return std::nullopt;
  return it->second;
}

void autopar::runtime::saveWeightState(const std::string &dir) {
  RuntimeState &s = initializedState("save_state");
  std::string rankDir = dir + "/rank" + std::to_string(s.rank);
  for (const std::string &path : {dir, rankDir})
    if (mkdir(path.c_str(), 0777) != 0 && errno != EEXIST)
      fail(format("save_state: cannot create directory '%s': %s",
                  path.c_str(), std::strerror(errno)));
  for (const auto &[id, bytes] : s.weightState) {
    std::string path = rankDir + "/w" + std::to_string(id) + ".bin";
    FILE *file = std::fopen(path.c_str(), "wb");
    if (!file)
      fail(format("save_state: cannot create '%s': %s", path.c_str(),
                  std::strerror(errno)));
    bool ok = bytes.empty() ||
              std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
    ok = (std::fclose(file) == 0) && ok;
    if (!ok)
      fail(format("save_state: cannot write '%s'", path.c_str()));
  }
}

void autopar::runtime::finalizeRuntime() {
  RuntimeState &s = state();
  if (s.initialized)
    completeSends();
  if (s.comm != MPI_COMM_WORLD)
    MPI_Comm_free(&s.comm);
  s.comm = MPI_COMM_WORLD;
  for (auto &entry : s.comms)
    MPI_Comm_free(&entry.second);
  s.comms.clear();
  s.initialized = false;
}

//===----------------------------------------------------------------------===//
// C entry points
//===----------------------------------------------------------------------===//

#define AUTOPAR_RT_EXPORT extern "C" __attribute__((visibility("default")))

#define AUTOPAR_RT_DEFINE(SUFFIX, KIND)                                        \
  AUTOPAR_RT_EXPORT void autopar_rt_load_weight_##SUFFIX(                      \
      int64_t id, int64_t rank, void *desc) {                                  \
    loadWeight(ElemKind::KIND, id, rank, desc);                                \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_resident_weight_##SUFFIX(                  \
      int64_t id, int64_t rank, void *desc) {                                  \
    residentWeight(ElemKind::KIND, id, rank, desc);                            \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_store_weight_##SUFFIX(                     \
      int64_t id, int64_t rank, void *desc) {                                  \
    storeWeight(ElemKind::KIND, id, rank, desc);                               \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_read_input_##SUFFIX(                       \
      int64_t index, int64_t rank, void *desc, int64_t layoutRank,             \
      void *layout) {                                                          \
    readInput(ElemKind::KIND, index, rank, desc, layoutRank, layout);          \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_write_output_##SUFFIX(                     \
      int64_t index, int64_t rank, void *desc, int64_t layoutRank,             \
      void *layout) {                                                          \
    writeOutput(ElemKind::KIND, index, rank, desc, layoutRank, layout);        \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_all_reduce_##SUFFIX(                       \
      int64_t inRank, void *in, int64_t outRank, void *out, int64_t axes) {    \
    allReduce(ElemKind::KIND, inRank, in, outRank, out, axes);                 \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_all_gather_##SUFFIX(                       \
      int64_t inRank, void *in, int64_t outRank, void *out, int64_t axes,      \
      int64_t dim) {                                                           \
    allGather(ElemKind::KIND, inRank, in, outRank, out, axes, dim);            \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_reduce_scatter_##SUFFIX(                   \
      int64_t inRank, void *in, int64_t outRank, void *out, int64_t axes,      \
      int64_t dim) {                                                           \
    reduceScatter(ElemKind::KIND, inRank, in, outRank, out, axes, dim);        \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_all_to_all_##SUFFIX(                       \
      int64_t inRank, void *in, int64_t outRank, void *out, int64_t axes,      \
      int64_t splitDim, int64_t concatDim) {                                   \
    allToAll(ElemKind::KIND, inRank, in, outRank, out, axes, splitDim,         \
             concatDim);                                                       \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_swap_grid_axes_##SUFFIX(                   \
      int64_t inRank, void *in, int64_t outRank, void *out, int64_t axisA,     \
      int64_t axisB) {                                                         \
    swapGridAxes(ElemKind::KIND, inRank, in, outRank, out, axisA, axisB);      \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_send_##SUFFIX(int64_t stage, int64_t tag,  \
                                                  int64_t rank, void *desc) {  \
    sendTensor(ElemKind::KIND, stage, tag, rank, desc);                        \
  }                                                                            \
  AUTOPAR_RT_EXPORT void autopar_rt_recv_##SUFFIX(int64_t stage, int64_t tag,  \
                                                  int64_t rank, void *desc) {  \
    recvTensor(ElemKind::KIND, stage, tag, rank, desc);                        \
  }

AUTOPAR_RT_DEFINE(f32, F32)
AUTOPAR_RT_DEFINE(f64, F64)
AUTOPAR_RT_DEFINE(bf16, BF16)
AUTOPAR_RT_DEFINE(f16, F16)
AUTOPAR_RT_DEFINE(i64, I64)
AUTOPAR_RT_DEFINE(i32, I32)
AUTOPAR_RT_DEFINE(i8, I8)
AUTOPAR_RT_DEFINE(u8, U8)
AUTOPAR_RT_DEFINE(i1, I1)

#undef AUTOPAR_RT_DEFINE

AUTOPAR_RT_EXPORT int64_t autopar_rt_group_index(int64_t axes) {
  std::string op = "group_index";
  const RuntimeState &s = initializedState(op);
  int64_t index = 0;
  for (int64_t axis : decodeAxes(op, axes))
    index = index * s.config.grid[axis] + s.coords[axis];
  return index;
}

AUTOPAR_RT_EXPORT int64_t autopar_rt_microbatch_index(void) {
  return initializedState("microbatch_index").microbatch;
}

// Buffer allocation of device programs (finalize-memref-to-llvm with
// use-generic-functions): counted, so that --profile reports the peak.
AUTOPAR_RT_EXPORT void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocateCounted(size, 16);
}

AUTOPAR_RT_EXPORT void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                          size_t size) {
  if (alignment < 16)
    alignment = 16;
  if (alignment & (alignment - 1))
    fail(format("aligned allocation with alignment %zu, which is not a power "
                "of two",
                alignment));
  return allocateCounted(size, alignment);
}

AUTOPAR_RT_EXPORT void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  auto *header = static_cast<BlockHeader *>(ptr) - 1;
  noteFreed(header->size);
  std::free(header->base);
}

// Programs compiled for AMX tiles (autopar-amx-contractions) call this at
// the entry of each function with tile instructions: Linux grants the AMX
// tile state (XTILEDATA) to a process only on request, and raises SIGILL at
// the first tile instruction otherwise. The permission is per process, so
// it is requested once, before the OpenMP threads run tiles.
AUTOPAR_RT_EXPORT void autopar_rt_require_amx() {
  static const bool granted = [] {
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
      fail(format("the program was compiled for AMX tiles (isa=amx) but Linux "
                  "refused the AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM, "
                  "XFEATURE_XTILEDATA): %s); recompile with isa=avx512bf16",
                  std::strerror(errno)));
#else
    fail("the program was compiled for AMX tiles (isa=amx), which need "
         "x86-64 Linux; recompile with isa=avx512bf16");
#endif
    return true;
  }();
  (void)granted;
}

AUTOPAR_RT_EXPORT void autopar_rt_fail(const char *message) {
  fail(message ? message : "autopar_rt_fail called with a null message");
}
