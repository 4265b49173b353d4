//===- Location.h - Locations as users read them ----------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_SUPPORT_LOCATION_H
#define FLOW_SUPPORT_LOCATION_H

#include "mlir/IR/Location.h"

#include <string>

namespace mlir {
namespace flow {

/// `file:line:col` where the location has one (inside fused or named
/// locations too), else MLIR's own spelling of it; for reports and messages.
std::string locationText(Location loc);

} // namespace flow
} // namespace mlir

#endif // FLOW_SUPPORT_LOCATION_H
