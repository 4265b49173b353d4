//===- AlignedBuffer.h - 64-byte aligned heap memory ------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_ALIGNEDBUFFER_H
#define FLOW_RUNTIME_SRC_ALIGNEDBUFFER_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>

namespace flow {
namespace runtime {

/// An owned, uninitialized, 64-byte aligned block of memory.
class AlignedBuffer {
public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  ~AlignedBuffer() { std::free(ptr); }
  AlignedBuffer(AlignedBuffer &&other) noexcept
      : ptr(std::exchange(other.ptr, nullptr)),
        len(std::exchange(other.len, 0)) {}
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept {
    std::swap(ptr, other.ptr);
    std::swap(len, other.len);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;

  /// Replaces the contents with \p size new bytes; false if out of memory.
  /// A size of 0 holds no memory (data() is null).
  bool allocate(size_t size) {
    std::free(ptr);
    ptr = nullptr;
    len = 0;
    if (size == 0)
      return true;
    void *p = nullptr;
    if (posix_memalign(&p, kAlignment, size) != 0)
      return false;
    ptr = static_cast<uint8_t *>(p);
    len = size;
    return true;
  }

  /// Shrinks the size to \p size bytes (keeping the memory).
  void truncate(size_t size) {
    if (size < len)
      len = size;
  }

  uint8_t *data() const { return ptr; }
  size_t size() const { return len; }

private:
  uint8_t *ptr = nullptr;
  size_t len = 0;
};

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_ALIGNEDBUFFER_H
