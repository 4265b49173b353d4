//===- KernelLibrary.h - A kernel shared object loaded from memory -*- C++ -*-//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_KERNELLIBRARY_H
#define FLOW_RUNTIME_SRC_KERNELLIBRARY_H

#include "flow/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace flow {
namespace runtime {

/// An ELF shared object loaded from memory: its bytes go to an anonymous
/// memory file (memfd) that is dlopen'ed through /proc/self/fd. The file and
/// the handle live as long as this object.
class KernelLibrary {
public:
  KernelLibrary() = default;
  ~KernelLibrary();
  KernelLibrary(KernelLibrary &&other) noexcept;
  KernelLibrary &operator=(KernelLibrary &&other) noexcept;
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;

  /// Loads the shared object held in \p size bytes at \p data.
  static StatusOr<KernelLibrary> load(const uint8_t *data, size_t size);

  /// The address of \p name in the library, or null if it has none.
  void *symbol(const std::string &name) const;

  bool isLoaded() const { return handle != nullptr; }

private:
  void reset();

  int fd = -1;
  void *handle = nullptr;
};

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_KERNELLIBRARY_H
