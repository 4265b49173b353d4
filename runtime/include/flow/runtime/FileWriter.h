//===- FileWriter.h - Files replaced whole or not at all -------*- C++ -*-===//
//
// The one way the runtime writes a file a user keeps (checkpoints, .npy
// results): the bytes go to a new temporary file beside the target,
// created exclusively, flushed to disk, then renamed over the target, and
// the directory flushed too. A crash or a full disk leaves the old file
// whole; a symlinked target is updated where the link points; a target
// that is not a regular file (a device, a FIFO, a directory) is refused.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_FILEWRITER_H
#define FLOW_RUNTIME_FILEWRITER_H

#include "flow/runtime/Status.h"

#include <cstddef>
#include <string>
#include <vector>

namespace flow::runtime {

/// A piece of the file's contents.
struct ByteSpan {
  const void *data = nullptr;
  size_t size = 0;
};

/// Replaces the file at \p path with the concatenation of \p pieces, whole
/// or not at all (see the file comment). Errors name \p path and the
/// system's reason (e.g. "No space left on device").
Status replaceFile(const std::string &path,
                   const std::vector<ByteSpan> &pieces);

/// The file \p path finally names: symbolic links followed, also a dangling
/// one (whose target does not exist yet). Errors on a loop of links.
StatusOr<std::string> resolveTarget(const std::string &path);

} // namespace flow::runtime

#endif // FLOW_RUNTIME_FILEWRITER_H
