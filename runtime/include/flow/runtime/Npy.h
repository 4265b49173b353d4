//===- Npy.h - Reading and writing numpy .npy files -------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Host tensors and the numpy .npy file format
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
// Supported element types and their .npy descr strings:
//
//   F32  '<f4'    F16  '<f2'    I64  '<i8'    I32  '<i4'    I1  '|b1'
//   F64  '<f8'    I16  '<i2'    I8   '|i1'    U8   '|u1'    U16 '<u2'
//   U32  '<u4'    U64  '<u8'
//   BF16 '<V2'    numpy has no bfloat16; a BF16 tensor is written as a raw
//                 2-byte void type '<V2' (what np.save writes for an
//                 ml_dtypes.bfloat16 array), and '<V2' (or '|V2', what numpy
//                 writes for plain 'V2') is read back as BF16. np.load returns
//                 such a file as dtype 'V2': view it with ml_dtypes.bfloat16.
//
// The '=' (native) byte-order prefix is accepted as '<'. Big-endian data,
// Fortran-order arrays, and other dtypes are rejected with an error naming the
// file. Versions 1.0, 2.0 and 3.0 are read; 1.0 is written (2.0 when the
// header does not fit a 16-bit length), with the same padding as numpy.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_NPY_H
#define FLOW_RUNTIME_NPY_H

#include "flow/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace flow {
namespace runtime {

/// Element types of host tensors.
enum class DType : uint8_t {
  F32, F16, BF16, I64, I32, I1, F64, I16, I8, U8, U16, U32, U64
};

/// Size of one element in bytes (I1 is stored as one byte, 0 or 1).
size_t dtypeSize(DType dtype);

/// Short name of the type, as Flow's IR spells it: "f32", "f16", "bf16",
/// "f64", "i64", "i32", "i16", "i8", "ui64", "ui32", "ui16", "ui8" or "i1".
const char *dtypeName(DType dtype);

/// A dense tensor in host memory. Data is row-major and little-endian; a
/// rank-0 tensor (empty shape) is a scalar with one element.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// Product of the dimensions (1 for a scalar). The shape is assumed valid:
  /// non-negative dimensions whose product fits in int64_t.
  int64_t numElements() const;
};

/// Parses an in-memory .npy file of \p size bytes. \p name (e.g. the file
/// path) is used in error messages. Never reads outside [bytes, bytes + size).
StatusOr<HostTensor> parseNpy(const uint8_t *bytes, size_t size,
                              const std::string &name);

/// Reads and parses the .npy file at \p path, which may be a pipe: the
/// header first, then exactly the data bytes it declares. An input that goes
/// on past them (/dev/zero, an endless pipe), a header longer than 1 MiB, or
/// a declared size above kMaxBufferBytes (64 GiB) or the machine's memory is
/// refused with an error naming \p path.
StatusOr<HostTensor> readNpy(const std::string &path);

/// Serializes \p tensor into .npy bytes. The tensor's data must hold exactly
/// numElements() * dtypeSize(dtype) bytes.
std::vector<uint8_t> serializeNpy(const HostTensor &tensor);

/// Writes \p tensor to \p path as .npy, whole or not at all (replaceFile).
Status writeNpy(const std::string &path, const HostTensor &tensor);

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_NPY_H
