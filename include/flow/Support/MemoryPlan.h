//===- MemoryPlan.h - Packing transient buffers into an arena ---*- C++ -*-===//
//
// Part of the Flow project.
//
// The arena planner: given each transient buffer's size and live range
// (positions in the schedule, both ends inclusive), assigns byte offsets in
// one arena so that no two buffers alive at the same time overlap. A buffer
// may reuse another in place (an element-wise kernel writing over an input
// that dies at it); the pair then shares one offset. Several packing orders
// are tried and the smallest arena is kept; the plan reports its size next
// to the lower bound (the most bytes alive at any one position) and the
// unplanned total (every buffer its own memory).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_SUPPORT_MEMORYPLAN_H
#define FLOW_SUPPORT_MEMORYPLAN_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Operation;
namespace flow {

/// A buffer's name in plans, plots and messages: the kernel it comes from
/// (`@f_k3`) or the op, and its file:line:col when it has one.
std::string bufferName(Operation *definingOp);

struct PlannedBuffer {
  /// Bytes; the plan aligns each buffer's slice.
  int64_t size = 0;
  /// First and last schedule positions at which the buffer is alive.
  int64_t begin = 0, end = 0;
  /// If not -1: the index of an earlier buffer whose last position is this
  /// one's first, and whose slice this one takes over (in place).
  int64_t reuses = -1;
  /// What the buffer holds, for plots and messages.
  std::string name;
  /// Set by planMemory.
  int64_t offset = 0;
};

struct MemoryPlanResult {
  int64_t arenaBytes = 0;
  /// The most (aligned) bytes alive at one position: no plan is smaller.
  int64_t lowerBound = 0;
  /// The sum of all (aligned) buffers: the arena without any reuse.
  int64_t unplannedBytes = 0;
  /// The packing order that gave the smallest arena.
  std::string heuristic;
};

/// Plans `buffers` (setting their offsets) with slices aligned to
/// `alignment` bytes; tries every heuristic and keeps the smallest arena.
MemoryPlanResult planMemory(std::vector<PlannedBuffer> &buffers,
                            int64_t alignment);

/// A message naming two buffers alive at once whose slices overlap, or an
/// in-place pair that does not share its slice; nullopt if the plan is
/// sound.
std::optional<std::string>
verifyMemoryPlan(const std::vector<PlannedBuffer> &buffers, int64_t alignment,
                 int64_t arenaBytes);

/// Draws the plan as SVG: one rectangle per buffer (schedule position
/// across, arena offset up), with the arena size and the lower bound
/// marked.
void writeMemoryPlot(llvm::raw_ostream &os,
                     const std::vector<PlannedBuffer> &buffers,
                     const MemoryPlanResult &plan, llvm::StringRef title,
                     int64_t alignment);

} // namespace flow
} // namespace mlir

#endif // FLOW_SUPPORT_MEMORYPLAN_H
