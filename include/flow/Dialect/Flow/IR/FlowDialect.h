//===- FlowDialect.h - Flow dialect -----------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWDIALECT_H
#define FLOW_DIALECT_FLOW_IR_FLOWDIALECT_H

#include "mlir/IR/Dialect.h"

#include "flow/Dialect/Flow/IR/FlowDialect.h.inc"

#endif // FLOW_DIALECT_FLOW_IR_FLOWDIALECT_H
