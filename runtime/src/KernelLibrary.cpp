//===- KernelLibrary.cpp - A kernel shared object loaded from memory ------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "KernelLibrary.h"

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace flow::runtime;

namespace {
std::string fdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

/// Closes every descriptor it holds when it goes away.
struct FdList {
  std::vector<int> fds;
  ~FdList() {
    for (int fd : fds)
      ::close(fd);
  }
};
} // namespace

KernelLibrary::~KernelLibrary() { reset(); }

KernelLibrary::KernelLibrary(KernelLibrary &&other) noexcept
    : fd(std::exchange(other.fd, -1)),
      handle(std::exchange(other.handle, nullptr)) {}

KernelLibrary &KernelLibrary::operator=(KernelLibrary &&other) noexcept {
  if (this != &other) {
    reset();
    fd = std::exchange(other.fd, -1);
    handle = std::exchange(other.handle, nullptr);
  }
  return *this;
}

void KernelLibrary::reset() {
  if (handle)
    dlclose(handle);
  if (fd >= 0)
    ::close(fd);
  handle = nullptr;
  fd = -1;
}

StatusOr<KernelLibrary> KernelLibrary::load(const uint8_t *data, size_t size) {
  KernelLibrary lib;
  lib.fd = memfd_create("flow-kernels", MFD_CLOEXEC);
  if (lib.fd < 0)
    return Status::error(std::string("cannot create a memory file for the "
                                     "kernel library: ") +
                         strerror(errno));
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(lib.fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Status::error(std::string("cannot write the kernel library to "
                                       "a memory file: ") +
                           strerror(n == 0 ? EIO : errno));
    done += static_cast<size_t>(n);
  }

  // dlopen finds libraries by name first: if an earlier library loaded under
  // the same /proc/self/fd path was never unloaded, dlopen would return it.
  // Move to another descriptor number until the path is fresh.
  FdList spare;
  while (true) {
    dlerror();
    void *stale =
        dlopen(fdPath(lib.fd).c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!stale)
      break;
    dlclose(stale);
    if (spare.fds.size() >= 64)
      return Status::error("cannot find a fresh name to load the kernel "
                           "library under");
    int next = fcntl(lib.fd, F_DUPFD_CLOEXEC, 0);
    if (next < 0)
      return Status::error(std::string("cannot duplicate a descriptor: ") +
                           strerror(errno));
    spare.fds.push_back(std::exchange(lib.fd, next));
  }

  dlerror();
  lib.handle = dlopen(fdPath(lib.fd).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    const char *why = dlerror();
    return Status::error(std::string("cannot load the kernel library: ") +
                         (why ? why : "unknown dlopen error"));
  }
  return lib;
}

void *KernelLibrary::symbol(const std::string &name) const {
  if (!handle)
    return nullptr;
  void *address = dlsym(handle, name.c_str());
  // dlsym also searches the library's dependencies (libc, libm): only a
  // symbol the kernel library defines itself is a kernel.
  Dl_info info;
  if (!address || !dladdr(address, &info) || !info.dli_fname ||
      fdPath(fd) != info.dli_fname)
    return nullptr;
  return address;
}
