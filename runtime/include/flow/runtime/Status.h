//===- Status.h - Error values for the Flow runtime -------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The runtime API never throws: fallible functions return a Status, or a
// StatusOr<T> that holds either a value or an error.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_STATUS_H
#define FLOW_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace flow {
namespace runtime {

/// The outcome of an operation: ok, or an error with a human-readable message.
class [[nodiscard]] Status {
public:
  /// Constructs an ok status.
  Status() = default;

  /// Returns an ok status.
  static Status ok() { return Status(); }

  /// Returns an error status carrying \p message. An empty message is replaced
  /// by "unknown error" so that an error is never mistaken for ok.
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.msg = message.empty() ? "unknown error" : std::move(message);
    return s;
  }

  /// Returns true if this status is ok.
  bool isOk() const { return !failed; }

  /// True if this status is ok.
  explicit operator bool() const { return isOk(); }

  /// The error message; empty for an ok status.
  const std::string &message() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

/// Either a value of type T or an error Status.
template <typename T> class [[nodiscard]] StatusOr {
public:
  /// Holds \p value.
  StatusOr(const T &value) : val(value) {}
  StatusOr(T &&value) : val(std::move(value)) {}

  /// Holds the error \p status. Passing an ok status is a programming error;
  /// it is turned into an error so that value() is never reached by mistake.
  StatusOr(Status status)
      : st(status.isOk()
               ? Status::error("StatusOr constructed from an ok Status")
               : std::move(status)) {}

  /// Returns true if a value is held.
  bool isOk() const { return val.has_value(); }

  /// True if a value is held.
  explicit operator bool() const { return isOk(); }

  /// The error, or an ok status if a value is held.
  const Status &status() const { return st; }

  /// The held value. Must only be called when isOk().
  T &value() & {
    assert(isOk() && "value() on an error StatusOr");
    return *val;
  }
  const T &value() const & {
    assert(isOk() && "value() on an error StatusOr");
    return *val;
  }
  T &&value() && {
    assert(isOk() && "value() on an error StatusOr");
    return std::move(*val);
  }

  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  Status st;
  std::optional<T> val;
};

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_STATUS_H
