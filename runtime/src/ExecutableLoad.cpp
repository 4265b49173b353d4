//===- ExecutableLoad.cpp - Reading and loading .fbin files ---------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Reading a file, the checks before its tables are read (the allow-list,
// the FlatBuffers verifier, the format version, the checksum), and, once
// every check has passed, loading its kernels (see ExecutableChecker.h for
// the order of it all).
//
//===----------------------------------------------------------------------===//

#include "ExecutableChecker.h"
#include "flow/runtime/Sha256.h"

#include "flow/runtime/Checksum.h"
#include "flow/runtime/CpuFeatures.h"
#include "flow/runtime/KernelAbi.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace flow::runtime;
using namespace flow::runtime::detail;

Status Checker::loadKernels() {
  // Constants the file did not align get an aligned copy.
  for (detail::Constant &constant : impl.constants) {
    if (reinterpret_cast<uintptr_t>(constant.data) %
            AlignedBuffer::kAlignment ==
        0)
      continue;
    AlignedBuffer copy;
    if (!copy.allocate(constant.size))
      return Status::error("out of memory copying a constant of " +
                           std::to_string(constant.size) + " bytes");
    std::memcpy(copy.data(), constant.data, constant.size);
    constant.data = copy.data();
    impl.constantCopies.push_back(std::move(copy));
  }

  const auto *kernels = file.kernels();
  if (!kernels || kernels->size() == 0)
    return Status::ok();
  if (impl.target == ExecutableTarget::Cuda)
    return loadKernelMeta();
  // Before any of the library's code can run: a CPU without the
  // instructions it was compiled for would die of an illegal instruction.
  const fbs::KernelLibrary *elf = file.kernel_libraries()->Get(0);
  std::vector<std::string> wanted;
  if (const auto *features = elf->features())
    for (const auto *name : *features)
      wanted.push_back(name ? name->str() : "");
  if (std::vector<std::string> missing = missingCpuFeatures(wanted);
      !missing.empty()) {
    std::string names;
    for (const std::string &name : missing)
      names += (names.empty() ? "" : ", ") + name;
    std::string cpu = elf->arch() ? elf->arch()->str() : "an unnamed CPU";
    return Status::error(
        "the kernels were compiled for CPU '" + cpu + "' and may use " +
        names + ", which this CPU lacks; recompile on this machine, or for "
        "a CPU both have (flow-compile --cpu=NAME, e.g. x86-64-v3)");
  }
  impl.cpuArch = elf->arch() ? printable(elf->arch()->str()) : "";
  const auto *library = elf->data();
  StatusOr<KernelLibrary> loaded =
      KernelLibrary::load(library->data(), library->size());
  if (!loaded)
    return loaded.status();
  impl.library = std::move(*loaded);
  void *tableAddress = impl.library.symbol(FLOW_KERNEL_ABI_SYMBOL);
  if (!tableAddress)
    return Status::error("the kernel library exports no '" FLOW_KERNEL_ABI_SYMBOL
                         "' table (it was not built by this Flow)");
  const auto *table = static_cast<const FlowKernelAbiTable *>(tableAddress);
  if (table->magic != FLOW_KERNEL_ABI_MAGIC)
    return Status::error("the kernel library's ABI table has a wrong magic "
                         "number (it was not built by this Flow)");
  std::set<void *> entries;
  for (size_t i = 0; i < kernels->size(); ++i) {
    const fbs::Kernel *kernel = kernels->Get(i);
    std::string symbol = kernel->symbol()->str();
    std::string ctx = "kernel " + std::to_string(i) + " ('" +
                      printable(symbol) + "')";
    void *address = impl.library.symbol(symbol);
    if (!address)
      return Status::error("kernel " + std::to_string(i) + ": symbol '" +
                           printable(symbol) +
                           "' is not defined by the kernel library");
    if (!entries.insert(address).second)
      return Status::error(ctx + " resolves to the same code as another "
                                 "kernel");
    const FlowKernelAbiEntry *abi = nullptr;
    for (uint64_t e = 0; e < table->count && !abi; ++e)
      if (table->entries[e].symbol &&
          std::strcmp(table->entries[e].symbol, symbol.c_str()) == 0)
        abi = &table->entries[e];
    if (!abi)
      return Status::error(ctx + " is not in the kernel library's ABI table");
    if (abi->entry != address)
      return Status::error(ctx + ": the ABI table's entry point is not the "
                                 "symbol's address");
    // The loader has held every dispatch to the metadata's sizes; the
    // metadata must now be what the code itself was compiled for.
    const auto *sizes = kernel->binding_sizes();
    bool same = abi->num_bindings == kernel->num_bindings() &&
                abi->num_outputs == kernel->num_outputs() && sizes &&
                sizes->size() == abi->num_bindings;
    for (uint64_t b = 0; same && b < abi->num_bindings; ++b)
      same = abi->binding_sizes[b] == sizes->Get(b);
    if (!same) {
      std::string want;
      for (uint64_t b = 0; b < abi->num_bindings; ++b)
        want += (b ? "," : "") + std::to_string(abi->binding_sizes[b]);
      return Status::error(
          ctx + ": the executable says it takes " +
          std::to_string(kernel->num_bindings()) + " buffers (" +
          std::to_string(kernel->num_outputs()) +
          " written) but its code was compiled for " +
          std::to_string(abi->num_bindings) + " buffers of [" + want +
          "] bytes (" + std::to_string(abi->num_outputs) + " written)");
    }
    if (Status s = readKernelMeta(*kernel, ctx); !s)
      return s;
    impl.kernels.push_back(reinterpret_cast<detail::KernelFn>(address));
  }
  return Status::ok();
}

Status Checker::readKernelMeta(const fbs::Kernel &kernel,
                               const std::string &ctx) {
  Executable::Impl::KernelMeta meta;
  meta.numOutputs = kernel.num_outputs();
  if (const auto *dtypes = kernel.binding_dtypes()) {
    if (dtypes->size() != kernel.num_bindings())
      return Status::error(ctx + ": " + std::to_string(dtypes->size()) +
                           " binding dtypes for " +
                           std::to_string(kernel.num_bindings()) +
                           " bindings");
    for (auto dtype : *dtypes) {
      if (static_cast<uint8_t>(dtype) >
          static_cast<uint8_t>(fbs::DType::MAX))
        return Status::error(ctx + ": invalid binding dtype " +
                             std::to_string(static_cast<int>(dtype)));
      meta.bindingDtypes.push_back(static_cast<DType>(dtype));
    }
  }
  if (const auto *description = kernel.description())
    meta.description = printable(description->str());
  impl.kernelNames.push_back(kernel.symbol()->str());
  impl.kernelMeta.push_back(std::move(meta));
  return Status::ok();
}

Status Checker::loadKernelMeta() {
  // The device checks each kernel's code when it loads the libraries.
  const auto *kernels = file.kernels();
  for (size_t i = 0; i < kernels->size(); ++i) {
    const fbs::Kernel *kernel = kernels->Get(i);
    if (Status s = readKernelMeta(
            *kernel, "kernel " + std::to_string(i) + " ('" +
                         printable(kernel->symbol()->str()) + "')");
        !s)
      return s;
  }
  return Status::ok();
}

namespace {

/// Checks the whole-file checksum (see flow/runtime/Checksum.h) of a file the
/// FlatBuffers verifier accepted.
Status verifyChecksum(const uint8_t *data, size_t size) {
  std::optional<size_t> offset = checksumFieldOffset(data);
  if (!offset || *offset + 8 > size)
    return Status::error("executable has no checksum (the file is corrupt)");
  // A damaged vtable can place the checksum field inside a kernel
  // library: the library's bytes would then be the stored hash, and a
  // file restamped that way would pass the check with a broken library.
  if (const auto *libraries = fbs::GetExecutable(data)->kernel_libraries())
    for (const fbs::KernelLibrary *entry : *libraries) {
      const auto *library = entry->data();
      if (!library)
        continue;
      size_t begin = static_cast<size_t>(library->data() - data);
      size_t end = begin + library->size();
      if (*offset < end && *offset + 8 > begin)
        return Status::error("the checksum field overlaps a kernel library "
                             "(the file is corrupt)");
    }
  uint64_t stored;
  std::memcpy(&stored, data + *offset, sizeof(stored));
  uint64_t hash = fileChecksum(data, size, *offset);
  if (hash != stored)
    return Status::error("checksum mismatch (file says " + hex(stored) +
                         ", its bytes hash to " + hex(hash) +
                         "): the file is corrupt");
  return Status::ok();
}

/// Refuses \p size bytes at \p data unless their SHA-256 is in the
/// allow-list the options or the environment name (if any).
Status checkTrusted(const uint8_t *data, size_t size,
                    const LoadOptions &options) {
  std::string path = options.trustedList;
  const char *variable = std::getenv(kTrustedListVariable);
  bool fromEnvironment = path.empty() && variable && *variable;
  if (fromEnvironment)
    path = variable;
  if (path.empty())
    return Status::ok();
  std::string where =
      "the allow-list '" + path + "'" +
      (fromEnvironment ? std::string(" (") + kTrustedListVariable + ")" : "");
  FILE *list = std::fopen(path.c_str(), "r");
  if (!list)
    return Status::error("cannot read " + where + ": " + strerror(errno));
  std::set<std::string> digests;
  char line[4096];
  int number = 0;
  Status status = Status::ok();
  while (status && std::fgets(line, sizeof(line), list)) {
    ++number;
    std::string text(line);
    size_t begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos || text[begin] == '#')
      continue;
    size_t end = text.find_first_of(" \t\r\n", begin);
    std::string digest = text.substr(begin, end - begin);
    std::transform(digest.begin(), digest.end(), digest.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    bool hex = digest.size() == 64 &&
               digest.find_first_not_of("0123456789abcdef") ==
                   std::string::npos;
    if (!hex)
      status = Status::error(where + " line " + std::to_string(number) +
                             " is not a SHA-256 digest (64 hex digits, as "
                             "sha256sum prints them)");
    digests.insert(digest);
  }
  std::fclose(list);
  if (!status)
    return status;
  std::string digest = sha256Hex(data, size);
  if (!digests.count(digest))
    return Status::error("the executable is not trusted: its SHA-256 " +
                         digest + " is not in " + where);
  return Status::ok();
}

} // namespace

/// Reads the file at \p path into aligned memory.
Status detail::readFile(const std::string &path, AlignedBuffer &out) {
  auto fail = [&](const char *verb) {
    return Status::error(std::string("cannot ") + verb + " '" + path +
                         "': " + strerror(errno));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("open");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return fail("stat");
  if (S_ISDIR(st.st_mode))
    return Status::error("cannot read '" + path + "': it is a directory");
  // Regular files are read into a buffer of their size; anything else (a
  // pipe) grows it as needed.
  size_t capacity = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  AlignedBuffer buffer;
  if (!buffer.allocate(capacity > 0 ? capacity : 4096))
    return Status::error("cannot read '" + path + "': out of memory");
  size_t size = 0;
  while (true) {
    if (size == buffer.size()) {
      // Full: check for more before growing, so a regular file is read with
      // no copy.
      uint8_t probe;
      ssize_t n = ::read(fd, &probe, 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return fail("read");
      if (n == 0)
        break;
      AlignedBuffer bigger;
      if (!bigger.allocate(buffer.size() * 2))
        return Status::error("cannot read '" + path + "': out of memory");
      std::memcpy(bigger.data(), buffer.data(), size);
      bigger.data()[size++] = probe;
      buffer = std::move(bigger);
      continue;
    }
    ssize_t n = ::read(fd, buffer.data() + size, buffer.size() - size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fail("read");
    if (n == 0)
      break;
    size += static_cast<size_t>(n);
  }
  // The verifier must see the real length.
  buffer.truncate(size);
  out = std::move(buffer);
  return Status::ok();
}

/// Verifies the file held in \p file and builds the executable.
StatusOr<std::unique_ptr<Executable::Impl>>
detail::load(AlignedBuffer file, const LoadOptions &options) {
  auto impl = std::make_unique<Executable::Impl>();
  impl->file = std::move(file);
  const uint8_t *data = impl->file.data();
  size_t size = impl->file.size();
  if (Status s = checkTrusted(data, size, options); !s)
    return s;
  if (size < 8)
    return Status::error("not a Flow executable: " + std::to_string(size) +
                         " bytes is too short");
  if (!flatbuffers::BufferHasIdentifier(data, fbs::ExecutableIdentifier()))
    return Status::error("not a Flow executable (no 'FLOW' file identifier)");
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::error("executable of " + std::to_string(size) +
                         " bytes is larger than FlatBuffers allows");
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64,
                                 /*max_tables=*/10000000);
  if (!fbs::VerifyExecutableBuffer(verifier))
    return Status::error("malformed executable: FlatBuffers verification "
                         "failed (the file is corrupt or truncated)");
  // The version first: an older file is refused by name, not by checksum.
  uint32_t version = fbs::GetExecutable(data)->version();
  if (version != kExecutableVersion)
    return Status::error("unsupported format version " +
                         std::to_string(version) +
                         " (this runtime reads version " +
                         std::to_string(kExecutableVersion) +
                         "; recompile the model with this Flow)");
  if (Status s = verifyChecksum(data, size); !s)
    return s;
  Checker checker(*fbs::GetExecutable(data), *impl, options);
  if (Status s = checker.verify(); !s)
    return s;
  return impl;
}
