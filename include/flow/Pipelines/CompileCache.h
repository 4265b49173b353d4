//===- CompileCache.h - Compiled executables kept between runs --*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The persistent compile cache: an executable compiled once is kept under
// the user's cache directory and returned, without compiling, the next time
// the same program is compiled with the same options by the same compiler on
// the same kind of machine (docs/compile-and-run.md, "The compile cache").
//
// The key is a BLAKE3 digest of
//   - the compiler: the content of the program that compiles (flow-compile
//     or Flow's Python module) and the size and time of the MLIR and LLVM
//     libraries it loaded, plus the executable format version;
//   - the host CPU's name and features (code is compiled for them);
//   - every compile option's value (the option table's `get`), the content
//     of a mesh description file, FLOW_CUDA_PATH for the CUDA target;
//   - the program's text, with the path of its parameter archive taken
//     out: weights are not compiled into an executable (it maps the archive
//     when it loads), so the same program over another archive, or over
//     changed weights, is the same executable, renamed to that archive.
//
// Entries are whole .fbin files written under a temporary name and renamed
// into place (concurrent compiles of one program are safe); one that fails
// the FlatBuffers verifier, the format version or the whole-file checksum is
// dropped and recompiled. Hits refresh an entry's time; past the size limit
// the least recently used entries go. Warnings a compile printed are kept
// beside its entry and printed again on a hit.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_PIPELINES_COMPILECACHE_H
#define FLOW_PIPELINES_COMPILECACHE_H

#include "flow/Pipelines/Options.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace flow {

/// The directory entries live in: $FLOW_CACHE_DIR, else
/// $XDG_CACHE_HOME/flow/compiled, else ~/.cache/flow/compiled.
std::string getCompileCacheDirectory();

/// The cache's size limit in bytes: $FLOW_CACHE_SIZE ("2GiB", "500MB", a
/// byte count), else 2 GiB. Nothing when the variable is not a size (`why`
/// says so).
std::optional<int64_t> getCompileCacheLimit(std::string *why = nullptr);

/// One compile of a program, as the cache sees it.
class CompileCacheEntry {
public:
  /// The entry of compiling `source` with `options`; nothing when such a
  /// compile is not cached: it stops before the executable (compileTo) or
  /// draws an SBP plan.
  static std::optional<CompileCacheEntry> forCompile(StringRef source,
                                                     const CompileOptions &);

  /// The cached executable, named to this program's archive, and the
  /// warnings its compile printed; nothing on a miss. A damaged entry is
  /// removed (and `warning` says so).
  std::optional<std::vector<uint8_t>> lookup(std::string &diagnostics,
                                             std::string &warning) const;

  /// Stores `executable` (and the compile's warnings) for later compiles;
  /// then evicts the least recently used entries past the size limit.
  /// Errors (a read-only directory, a full disk) only cost the entry:
  /// `warning` says why.
  void store(ArrayRef<uint8_t> executable, StringRef diagnostics,
             std::string &warning) const;

  /// The key, as 64 hex digits.
  const std::string &key() const { return keyHex; }

private:
  std::string keyHex;
  /// The parameter archive the program names (as the executable records
  /// it), when it was taken out of the key; a hit is renamed to it.
  std::optional<std::string> archive;
};

struct CompileCacheInfo {
  std::string directory;
  int64_t entries = 0;
  int64_t bytes = 0;
  int64_t limit = 0;
  /// This process' lookups that found an entry, that did not, and the
  /// entries it wrote.
  int64_t hits = 0, misses = 0, stores = 0;
};

/// What the cache holds.
CompileCacheInfo getCompileCacheInfo();

/// Removes every entry; returns how many.
int64_t clearCompileCache();

/// `executable` with its parameter archive renamed to `archive` and its
/// checksum stamped again; the reason when it is not an executable this
/// compiler writes, or names no archive.
std::optional<std::string> renameParameterArchive(std::vector<uint8_t> &bytes,
                                                  StringRef archive);

} // namespace flow
} // namespace mlir

#endif // FLOW_PIPELINES_COMPILECACHE_H
