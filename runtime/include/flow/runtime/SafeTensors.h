//===- SafeTensors.h - Read-only safetensors archives -----------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A safetensors file is an 8-byte little-endian header length, a JSON header
// mapping tensor names to {"dtype", "shape", "data_offsets"}, and the tensor
// bytes. Flow keeps weights in such archives; an executable names its archive
// and the tensors it needs. Opening maps the file read-only and checks the
// whole header (every offset inside the file, every size equal to the
// shape's); a tensor whose element type Flow does not run is kept with its
// type name so that using it can say so.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SAFETENSORS_H
#define FLOW_RUNTIME_SAFETENSORS_H

#include "flow/runtime/Npy.h"
#include "flow/runtime/Status.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace flow {
namespace runtime {

/// One tensor of an archive.
struct SafeTensor {
  /// The archive's element type name ("F32", "BF16", ...).
  std::string dtypeName;
  /// Set when Flow runs that element type.
  bool supported = false;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  size_t size = 0;

  /// "F32[768,768]".
  std::string str() const;
};

/// A mapped, verified safetensors file.
class SafeTensorsFile {
public:
  /// Maps and verifies the file at \p path; errors start with the path.
  static StatusOr<std::unique_ptr<SafeTensorsFile>>
  open(const std::string &path);

  /// Verifies an archive held in memory (the caller keeps it alive).
  static StatusOr<std::unique_ptr<SafeTensorsFile>> parse(const uint8_t *data,
                                                          size_t size);

  ~SafeTensorsFile();
  SafeTensorsFile(const SafeTensorsFile &) = delete;
  SafeTensorsFile &operator=(const SafeTensorsFile &) = delete;

  /// The tensor called \p name, or null.
  const SafeTensor *find(const std::string &name) const;
  const std::map<std::string, SafeTensor> &tensors() const { return table; }
  const std::string &path() const { return filePath; }
  /// Lets the kernel drop the whole pages of [data, data + size) that lie
  /// in the file's mapping (read back from the file if touched again):
  /// once a tensor's bytes have been copied elsewhere, the process stops
  /// holding them twice. Bytes outside the mapping are left alone.
  void release(const uint8_t *data, size_t size) const;

private:
  SafeTensorsFile() = default;
  std::string filePath;
  void *mapping = nullptr;
  size_t mappingSize = 0;
  std::map<std::string, SafeTensor> table;
};

/// Writes \p tensors (by name; names in byte order) and \p metadata as a
/// safetensors file at \p path, whole or not at all (replaceFile: a failed
/// or interrupted write leaves the archive that was there whole).
Status writeSafeTensors(const std::string &path,
                        const std::map<std::string, HostTensor> &tensors,
                        const std::map<std::string, std::string> &metadata = {});

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SAFETENSORS_H
