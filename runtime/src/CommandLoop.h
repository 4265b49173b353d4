//===- CommandLoop.h - One loop over a function's commands ------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Every device runs a function's commands with runCommands: the loop visits
// each typed command in order and hands it to the device's CommandSink, one
// method per kind of command. A new kind of command is a new alternative of
// detail::Command and a new pure virtual method here: no device can skip it
// silently. test/runtime/ConformanceTest.cpp runs the same programs on every
// device.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_COMMANDLOOP_H
#define FLOW_RUNTIME_SRC_COMMANDLOOP_H

#include "ExecutableImpl.h"

#include <variant>

namespace flow {
namespace runtime {
namespace detail {

/// What a device does with each kind of command. Each method runs command
/// number `index` of the function.
class CommandSink {
public:
  virtual ~CommandSink() = default;
  virtual Status dispatch(const DispatchCommand &command, size_t index) = 0;
  virtual Status gemm(const GemmCommand &command, size_t index) = 0;
  virtual Status conv(const ConvCommand &command, size_t index) = 0;
  virtual Status pool(const PoolCommand &command, size_t index) = 0;
  virtual Status attention(const AttentionCommand &command, size_t index) = 0;
  virtual Status collective(const CollectiveCommand &command, size_t index) = 0;
  virtual Status wait(const WaitCommand &command, size_t index) = 0;
  virtual Status copy(const CopyCommand &command, size_t index) = 0;
  /// Before each command (profiling).
  virtual Status before(size_t index) {
    (void)index;
    return Status::ok();
  }
  /// After each command that succeeded (numerics checks).
  virtual Status after(const Command &command, size_t index) {
    (void)command;
    (void)index;
    return Status::ok();
  }
};

/// Runs `commands` in order on `sink`, stopping at the first error; the
/// failing command's index goes to `failedAt` when given.
inline Status runCommands(const std::vector<Command> &commands,
                          CommandSink &sink, size_t *failedAt = nullptr) {
  static_assert(std::variant_size_v<Command> == 8,
                "a new kind of command needs a CommandSink method");
  for (size_t index = 0; index < commands.size(); ++index) {
    const Command &command = commands[index];
    Status s = sink.before(index);
    if (s)
      s = std::visit(
          [&](const auto &c) -> Status {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, DispatchCommand>)
              return sink.dispatch(c, index);
            else if constexpr (std::is_same_v<T, GemmCommand>)
              return sink.gemm(c, index);
            else if constexpr (std::is_same_v<T, ConvCommand>)
              return sink.conv(c, index);
            else if constexpr (std::is_same_v<T, PoolCommand>)
              return sink.pool(c, index);
            else if constexpr (std::is_same_v<T, AttentionCommand>)
              return sink.attention(c, index);
            else if constexpr (std::is_same_v<T, CollectiveCommand>)
              return sink.collective(c, index);
            else if constexpr (std::is_same_v<T, WaitCommand>)
              return sink.wait(c, index);
            else {
              static_assert(std::is_same_v<T, CopyCommand>,
                            "every kind of command has its sink method");
              return sink.copy(c, index);
            }
          },
          command);
    if (s)
      s = sink.after(command, index);
    if (!s) {
      if (failedAt)
        *failedAt = index;
      return s;
    }
  }
  return Status::ok();
}

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_COMMANDLOOP_H
