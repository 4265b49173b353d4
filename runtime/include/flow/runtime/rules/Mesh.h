//===- Mesh.h - Devices and their coordinates on a mesh ---------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A rule the compiler and the runtime both apply, written once: device
// `rank` of a mesh sits at the row-major coordinates of `rank` (the last
// axis varies fastest). The compiler writes one program per device by it
// and the runtime binds device `rank` by it. Header-only and plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_RULES_MESH_H
#define FLOW_RUNTIME_RULES_MESH_H

#include <cstddef>
#include <cstdint>

namespace flow {
namespace rules {

/// Writes the coordinates of device `rank` on a mesh of shape `mesh` into
/// `coords`, which has as many entries as `mesh` has axes. `Shape` and
/// `Coords` are any containers of int64_t with size() and operator[]
/// (std::vector, llvm::ArrayRef, llvm::SmallVector).
template <typename Shape, typename Coords>
void meshCoordinates(const Shape &mesh, int64_t rank, Coords &coords) {
  for (size_t axis = mesh.size(); axis-- > 0;) {
    coords[axis] = rank % mesh[axis];
    rank /= mesh[axis];
  }
}

} // namespace rules
} // namespace flow

#endif // FLOW_RUNTIME_RULES_MESH_H
