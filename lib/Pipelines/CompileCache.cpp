//===- CompileCache.cpp - Compiled executables kept between runs ----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Pipelines/CompileCache.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/runtime/Checksum.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/executable_generated.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <sys/stat.h>
#include <utime.h>

using namespace mlir;
using namespace mlir::flow;
namespace fbs = ::flow::fbs;
namespace rt = ::flow::runtime;

namespace {

constexpr int64_t kDefaultLimit = int64_t(2) << 30;

/// This process' lookups that found an entry, lookups that did not, and
/// entries written.
std::atomic<int64_t> hits{0}, misses{0}, stores{0};
constexpr llvm::StringLiteral kExecutableSuffix = ".fbin";
constexpr llvm::StringLiteral kWarningsSuffix = ".warnings";

std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// Adds `text` to `hasher` with its length first, so that consecutive
/// fields cannot run into each other.
void addField(llvm::BLAKE3 &hasher, StringRef text) {
  uint64_t size = text.size();
  hasher.update(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(&size), sizeof(size)));
  hasher.update(text);
}

int addLoadedLibrary(struct dl_phdr_info *info, size_t, void *data) {
  StringRef name = info->dlpi_name ? info->dlpi_name : "";
  StringRef file = llvm::sys::path::filename(name);
  if (!file.starts_with("libMLIR") && !file.starts_with("libLLVM"))
    return 0;
  struct stat st;
  if (::stat(info->dlpi_name, &st) != 0)
    return 0;
  auto &out = *static_cast<std::string *>(data);
  out += (name + " " + llvm::Twine(static_cast<int64_t>(st.st_size)) + " " +
          llvm::Twine(static_cast<int64_t>(st.st_mtime)) + "\n")
             .str();
  return 0;
}

/// What identifies this compiler: the content of the program or library
/// this code is linked into, the MLIR and LLVM libraries it loaded (by
/// size and time) and the format version. Computed once per process.
const std::string &compilerIdentity() {
  static std::once_flag once;
  static std::string identity;
  std::call_once(once, [] {
    llvm::BLAKE3 hasher;
    addField(hasher, LLVM_VERSION_STRING);
    addField(hasher, std::to_string(rt::kExecutableVersion));
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&compilerIdentity), &info) &&
        info.dli_fname) {
      addField(hasher, info.dli_fname);
      if (auto file = llvm::MemoryBuffer::getFile(info.dli_fname,
                                                  /*IsText=*/false,
                                                  /*RequiresNullTerminator=*/
                                                  false))
        hasher.update((*file)->getBuffer());
    }
    std::string libraries;
    dl_iterate_phdr(addLoadedLibrary, &libraries);
    addField(hasher, libraries);
    identity = llvm::toHex(hasher.final(), /*LowerCase=*/true);
  });
  return identity;
}

/// The host CPU that `--cpu=host` compiles for, with its features.
std::string hostCpu() {
  std::string text = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> names;
  for (const auto &feature : features)
    names.push_back((feature.second ? "+" : "-") + feature.first().str());
  llvm::sort(names);
  for (const std::string &name : names)
    text += " " + name;
  return text;
}

/// The escaped MLIR string literal of `path`, quotes included, as the
/// printer and the importers write it.
std::string quoted(StringRef path) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '"';
  llvm::printEscapedString(path, os);
  os << '"';
  return text;
}

/// The parameter archive the module in `source` names, read from its text
/// without parsing: the string after the module's `flow.parameters =`.
/// Nothing when there is none, or it holds escapes (such a program is then
/// keyed with its path).
std::optional<std::string> findArchive(StringRef source) {
  std::string attr = (FlowDialect::getParametersAttrName() + " = \"").str();
  size_t at = source.find(attr);
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = source.drop_front(at + attr.size());
  size_t end = rest.find('"');
  if (end == StringRef::npos)
    return std::nullopt;
  StringRef path = rest.take_front(end);
  if (path.contains('\\') || path.contains('\n'))
    return std::nullopt;
  return path.str();
}

std::string entryPath(StringRef key, StringRef suffix) {
  llvm::SmallString<256> path(getCompileCacheDirectory());
  llvm::sys::path::append(path, key.take_front(2), key + suffix);
  return std::string(path);
}

/// Whether `bytes` is an executable this runtime reads: the verifier, the
/// version and the whole-file checksum.
std::optional<std::string> checkExecutable(ArrayRef<uint8_t> bytes) {
  if (bytes.size() < 8 || !flatbuffers::BufferHasIdentifier(
                              bytes.data(), fbs::ExecutableIdentifier()))
    return std::string("not a Flow executable");
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), /*max_depth=*/64,
                                 /*max_tables=*/10000000);
  if (!fbs::VerifyExecutableBuffer(verifier))
    return std::string("malformed (FlatBuffers verification failed)");
  if (fbs::GetExecutable(bytes.data())->version() != rt::kExecutableVersion)
    return std::string("another format version");
  std::optional<size_t> field = rt::checksumFieldOffset(bytes.data());
  if (!field || *field + 8 > bytes.size())
    return std::string("no checksum");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + *field, sizeof(stored));
  if (rt::fileChecksum(bytes.data(), bytes.size(), *field) != stored)
    return std::string("checksum mismatch");
  return std::nullopt;
}

/// Writes `bytes` to `path` under a temporary name renamed into place.
std::error_code writeAtomically(StringRef path, StringRef bytes) {
  llvm::SmallString<256> temporary;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          path + ".tmp-%%%%%%%%", fd, temporary))
    return ec;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << bytes;
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      llvm::sys::fs::remove(temporary);
      return ec;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return ec;
  }
  return {};
}

struct StoredFile {
  std::string path;
  int64_t bytes;
  int64_t used;
};

/// Every entry file (executables and their warnings) under the directory.
std::vector<StoredFile> storedFiles() {
  std::vector<StoredFile> files;
  std::error_code ec;
  std::string root = getCompileCacheDirectory();
  for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end;
       it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (!name.ends_with(kExecutableSuffix) && !name.ends_with(kWarningsSuffix))
      continue;
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    files.push_back({it->path(), static_cast<int64_t>(status.getSize()),
                     static_cast<int64_t>(llvm::sys::toTimeT(
                         status.getLastModificationTime()))});
  }
  return files;
}

void evict(int64_t limit) {
  std::vector<StoredFile> files = storedFiles();
  int64_t total = 0;
  for (const StoredFile &f : files)
    total += f.bytes;
  if (total <= limit)
    return;
  llvm::sort(files, [](const StoredFile &a, const StoredFile &b) {
    return a.used < b.used;
  });
  for (const StoredFile &f : files) {
    if (total <= limit)
      break;
    if (!llvm::sys::fs::remove(f.path))
      total -= f.bytes;
  }
}

} // namespace

std::string mlir::flow::getCompileCacheDirectory() {
  std::string dir = environment("FLOW_CACHE_DIR");
  if (!dir.empty())
    return dir;
  llvm::SmallString<256> path;
  std::string xdg = environment("XDG_CACHE_HOME");
  if (!xdg.empty())
    path = xdg;
  else if (!llvm::sys::path::cache_directory(path))
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/false, path);
  llvm::sys::path::append(path, "flow", "compiled");
  return std::string(path);
}

std::optional<int64_t> mlir::flow::getCompileCacheLimit(std::string *why) {
  std::string text = environment("FLOW_CACHE_SIZE");
  if (text.empty())
    return kDefaultLimit;
  std::optional<int64_t> bytes = parseByteCount(text);
  if (!bytes && why)
    *why = "FLOW_CACHE_SIZE='" + text +
           "' is not a size (a byte count like 512MiB or 2GiB)";
  return bytes;
}

std::optional<CompileCacheEntry>
CompileCacheEntry::forCompile(StringRef source, const CompileOptions &options) {
  if (options.compileTo != "fbin" || options.sbpPlanGraph)
    return std::nullopt;
  CompileCacheEntry entry;
  llvm::BLAKE3 hasher;
  addField(hasher, "flow compile cache 1");
  addField(hasher, compilerIdentity());
  addField(hasher, hostCpu());
  for (const CompileOptionInfo &info : getCompileOptions()) {
    addField(hasher, info.keyword);
    addField(hasher, info.get(options));
  }
  if (llvm::sys::fs::is_regular_file(options.meshSpec)) {
    auto file = llvm::MemoryBuffer::getFile(options.meshSpec);
    if (!file)
      return std::nullopt;
    addField(hasher, (*file)->getBuffer());
  }
  if (options.target != "cpu")
    addField(hasher, environment("FLOW_CUDA_PATH"));
  // The archive's path out of the text: every occurrence of its literal.
  entry.archive = findArchive(source);
  if (entry.archive) {
    std::string literal = quoted(*entry.archive);
    StringRef rest = source;
    for (size_t at; (at = rest.find(literal)) != StringRef::npos;) {
      addField(hasher, rest.take_front(at));
      addField(hasher, "\x01archive\x01");
      rest = rest.drop_front(at + literal.size());
    }
    addField(hasher, rest);
  } else {
    addField(hasher, source);
  }
  entry.keyHex = llvm::toHex(hasher.final(), /*LowerCase=*/true);
  return entry;
}

std::optional<std::vector<uint8_t>>
CompileCacheEntry::lookup(std::string &diagnostics,
                          std::string &warning) const {
  std::string path = entryPath(keyHex, kExecutableSuffix);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file) {
    ++misses;
    return std::nullopt;
  }
  StringRef data = (*file)->getBuffer();
  std::vector<uint8_t> bytes(data.begin(), data.end());
  std::optional<std::string> why = checkExecutable(bytes);
  // Renamed only where it names another archive: a hit on the same
  // program is the same bytes as its compile (an allow-list of digests
  // holds for both).
  if (!why && archive) {
    const flatbuffers::String *named =
        fbs::GetExecutable(bytes.data())->parameter_archive();
    if (!named || named->string_view() != *archive)
      why = renameParameterArchive(bytes, *archive);
  }
  if (why) {
    warning = "the compile cache's entry " + path + " is damaged (" + *why +
              "); it was removed and the program compiled again";
    llvm::sys::fs::remove(path);
    llvm::sys::fs::remove(entryPath(keyHex, kWarningsSuffix));
    ++misses;
    return std::nullopt;
  }
  ++hits;
  diagnostics.clear();
  if (auto text =
          llvm::MemoryBuffer::getFile(entryPath(keyHex, kWarningsSuffix)))
    diagnostics = (*text)->getBuffer().str();
  // Least recently used goes first: a hit is a use.
  ::utime(path.c_str(), nullptr);
  return bytes;
}

void CompileCacheEntry::store(ArrayRef<uint8_t> executable,
                              StringRef diagnostics,
                              std::string &warning) const {
  std::string why;
  std::optional<int64_t> limit = getCompileCacheLimit(&why);
  if (!limit) {
    warning = why + "; the executable was not cached";
    return;
  }
  if (static_cast<int64_t>(executable.size()) > *limit)
    return;
  // The archive found in the text must be the one the compile recorded
  // (a hit is renamed to the archive found the same way).
  if (archive) {
    const flatbuffers::String *named =
        fbs::GetExecutable(executable.data())->parameter_archive();
    if (!named || named->str() != *archive)
      return;
  }
  std::string path = entryPath(keyHex, kExecutableSuffix);
  std::error_code ec =
      llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
  // The warnings first: the executable's arrival completes the entry.
  if (!ec && !diagnostics.empty())
    ec = writeAtomically(entryPath(keyHex, kWarningsSuffix), diagnostics);
  if (!ec)
    ec = writeAtomically(
        path, StringRef(reinterpret_cast<const char *>(executable.data()),
                        executable.size()));
  if (ec) {
    warning = "cannot write to the compile cache " +
              getCompileCacheDirectory() + " (" + ec.message() +
              "); the executable was not cached";
    return;
  }
  ++stores;
  evict(*limit);
}

CompileCacheInfo mlir::flow::getCompileCacheInfo() {
  CompileCacheInfo info;
  info.directory = getCompileCacheDirectory();
  info.limit = getCompileCacheLimit().value_or(kDefaultLimit);
  info.hits = hits;
  info.misses = misses;
  info.stores = stores;
  for (const StoredFile &f : storedFiles()) {
    info.bytes += f.bytes;
    if (StringRef(f.path).ends_with(kExecutableSuffix))
      ++info.entries;
  }
  return info;
}

int64_t mlir::flow::clearCompileCache() {
  int64_t removed = 0;
  for (const StoredFile &f : storedFiles())
    if (!llvm::sys::fs::remove(f.path) &&
        StringRef(f.path).ends_with(kExecutableSuffix))
      ++removed;
  return removed;
}

std::optional<std::string>
mlir::flow::renameParameterArchive(std::vector<uint8_t> &bytes,
                                   StringRef archive) {
  if (std::optional<std::string> why = checkExecutable(bytes))
    return why;
  const auto *table = reinterpret_cast<const flatbuffers::Table *>(
      fbs::GetExecutable(bytes.data()));
  const uint8_t *field =
      table->GetAddressOf(fbs::Executable::VT_PARAMETER_ARCHIVE);
  if (!field)
    return std::string("the executable names no parameter archive");
  size_t fieldOffset = field - bytes.data();
  // A new string at the end of the buffer (FlatBuffers offsets point
  // forward, so the field can point at it): its length, bytes and NUL,
  // four-byte aligned.
  size_t at = llvm::alignTo(bytes.size(), 4);
  bytes.resize(llvm::alignTo(at + 4 + archive.size() + 1, 4), 0);
  uint32_t length = archive.size();
  std::memcpy(bytes.data() + at, &length, sizeof(length));
  std::memcpy(bytes.data() + at + 4, archive.data(), archive.size());
  uint32_t offset = at - fieldOffset;
  std::memcpy(bytes.data() + fieldOffset, &offset, sizeof(offset));
  if (!rt::stampChecksum(bytes.data(), bytes.size()))
    return std::string("no checksum");
  return std::nullopt;
}
