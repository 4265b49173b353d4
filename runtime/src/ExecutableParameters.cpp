//===- ExecutableParameters.cpp - Binding parameters and pieces -----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Parameters come from a safetensors archive: loading finds each in it and
// binds those every device reads; Executable::bindRank binds a device's own
// pieces and the offsets its programs read.
//
//===----------------------------------------------------------------------===//

#include "Bf16.h"
#include "ExecutableChecker.h"

#include <algorithm>
#include <cstring>
#include <mutex>

using namespace flow::runtime;
using namespace flow::runtime::detail;

Status detail::bindParameter(Executable::Impl &impl, Constant &constant) {
  const SafeTensor &tensor = *constant.source;
  const std::vector<int64_t> &shape = constant.spec.shape;
  bool narrow = tensor.dtype == DType::F32 && constant.spec.dtype == DType::BF16;
  bool whole = constant.pieceOf.empty();
  if (whole && !narrow &&
      reinterpret_cast<uintptr_t>(tensor.data) % AlignedBuffer::kAlignment ==
          0) {
    constant.data = tensor.data; // read in place
    constant.source = nullptr;
    return Status::ok();
  }
  // A piece, a conversion or a misaligned tensor: copied once, here.
  AlignedBuffer copy;
  if (!copy.allocate(constant.size))
    return Status::error("out of memory reading parameter '" +
                         printable(constant.parameter) + "' (" +
                         std::to_string(constant.size) + " bytes)");
  size_t from = narrow ? sizeof(float) : dtypeSize(constant.spec.dtype);
  size_t to = dtypeSize(constant.spec.dtype);
  std::vector<int64_t> offsets = constant.pieceOffsets, of = constant.pieceOf;
  if (whole) {
    offsets.assign(shape.size(), 0);
    of = shape;
  }
  // Row by row of the last dimension: the odometer runs over the others.
  size_t rank = shape.size();
  int64_t rowLength = rank ? shape[rank - 1] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= shape[d];
  std::vector<int64_t> index(rank, 0);
  uint8_t *out = copy.data();
  for (int64_t row = 0; row < rows && rowLength > 0; ++row) {
    int64_t start = 0;
    for (size_t d = 0; d < rank; ++d)
      start = start * of[d] + offsets[d] + index[d];
    const uint8_t *in = tensor.data + static_cast<size_t>(start) * from;
    if (!narrow) {
      std::memcpy(out, in, static_cast<size_t>(rowLength) * to);
    } else {
      for (int64_t i = 0; i < rowLength; ++i) {
        float value;
        std::memcpy(&value, in + i * sizeof(float), sizeof value);
        uint16_t half = roundToBf16(value);
        std::memcpy(out + i * 2, &half, sizeof half);
      }
    }
    out += static_cast<size_t>(rowLength) * to;
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  constant.data = copy.data();
  constant.source = nullptr;
  impl.constantCopies.push_back(std::move(copy));
  return Status::ok();
}

Status detail::assembleParameterConcats(Executable::Impl &impl, int64_t rank) {
  for (detail::Constant &joined : impl.constants) {
    if (joined.concatParts.empty() || joined.data)
      continue;
    bool mine = rank < 0
                    ? joined.ranks.empty()
                    : joined.ranks.empty() ||
                          std::find(joined.ranks.begin(), joined.ranks.end(),
                                    rank) != joined.ranks.end();
    if (!mine)
      continue;
    bool ready = true;
    for (uint32_t p : joined.concatParts)
      ready &= impl.constants[p].data != nullptr;
    if (!ready) {
      // A part that is a device's piece is bound by bindRank.
      if (rank < 0)
        continue;
      return Status::error("joined parameters: a part of device " +
                           std::to_string(rank) + "'s is not bound");
    }
    AlignedBuffer copy;
    if (!copy.allocate(joined.size))
      return Status::error("out of memory joining parameters (" +
                           std::to_string(joined.size) + " bytes)");
    // Each row of the dimensions before the axis holds every part's block
    // in turn.
    const std::vector<int64_t> &shape = joined.spec.shape;
    size_t axis = static_cast<size_t>(joined.concatAxis);
    size_t outer = 1, inner = dtypeSize(joined.spec.dtype);
    for (size_t d = 0; d < axis; ++d)
      outer *= static_cast<size_t>(shape[d]);
    for (size_t d = axis + 1; d < shape.size(); ++d)
      inner *= static_cast<size_t>(shape[d]);
    uint8_t *out = copy.data();
    for (size_t row = 0; row < outer; ++row)
      for (uint32_t p : joined.concatParts) {
        const detail::Constant &part = impl.constants[p];
        size_t bytes = static_cast<size_t>(part.spec.shape[axis]) * inner;
        std::memcpy(out, part.data + row * bytes, bytes);
        out += bytes;
      }
    joined.data = copy.data();
    impl.constantCopies.push_back(std::move(copy));
  }
  // A part no command reads is dropped once every join of it is
  // assembled: its pages in the archive released, its copy (a piece, a
  // bf16 conversion) freed, and a device never uploads it.
  std::vector<bool> pending(impl.constants.size(), false);
  for (const detail::Constant &joined : impl.constants)
    if (!joined.data)
      for (uint32_t p : joined.concatParts)
        pending[p] = true;
  for (size_t i = 0; i < impl.constants.size(); ++i) {
    detail::Constant &part = impl.constants[i];
    if (!part.joinedOnly || !part.data || pending[i])
      continue;
    if (impl.parameters)
      impl.parameters->release(part.data, part.size);
    auto copy = std::find_if(
        impl.constantCopies.begin(), impl.constantCopies.end(),
        [&](const AlignedBuffer &b) { return b.data() == part.data; });
    if (copy != impl.constantCopies.end())
      impl.constantCopies.erase(copy);
    part.data = nullptr;
  }
  return Status::ok();
}

/// Writes the offsets of device `rank`'s piece into a device-offsets
/// constant (once: an executable binds one device).
static Status bindDeviceOffsets(Executable::Impl &impl,
                                detail::Constant &constant, int64_t rank) {
  if (constant.boundRank >= 0)
    return constant.boundRank == rank
               ? Status::ok()
               : Status::error("the executable is bound for device " +
                               std::to_string(constant.boundRank) +
                               ", not " + std::to_string(rank));
  std::vector<int64_t> coords = meshCoordinates(impl.mesh, rank);
  std::vector<int64_t> shape, offset, withinShape, within;
  localPiece(constant.pieceOf, constant.pieceSbp, impl.mesh, coords, shape,
             offset);
  if (!constant.pieceWithin.empty()) {
    localPiece(constant.pieceOf, constant.pieceWithin, impl.mesh, coords,
               withinShape, within);
    for (size_t d = 0; d < offset.size(); ++d) {
      offset[d] -= within[d];
      if (offset[d] < 0 || offset[d] + shape[d] > withinShape[d])
        return Status::error("device " + std::to_string(rank) +
                             "'s piece of a tensor lies outside the piece it "
                             "is taken from");
    }
  }
  AlignedBuffer copy;
  if (!copy.allocate(constant.size))
    return Status::error("out of memory binding a device's offsets");
  if (!offset.empty())
    std::memcpy(copy.data(), offset.data(), offset.size() * sizeof(int64_t));
  constant.data = copy.data();
  constant.boundRank = rank;
  impl.constantCopies.push_back(std::move(copy));
  return Status::ok();
}

Status Executable::bindRank(int64_t rank) const {
  std::lock_guard<std::mutex> lock(impl->bindMutex);
  for (detail::Constant &constant : impl->constants) {
    bool mine = constant.ranks.empty() ||
                std::find(constant.ranks.begin(), constant.ranks.end(),
                          rank) != constant.ranks.end();
    if (mine && constant.deviceOffsets) {
      if (Status st = bindDeviceOffsets(*impl, constant, rank); !st)
        return st;
      continue;
    }
    if (!mine || constant.parameter.empty())
      continue;
    if (!constant.pieceSbp.empty()) {
      // This device's piece: its offsets from its coordinates.
      if (constant.boundRank >= 0 && constant.boundRank != rank)
        return Status::error("parameter '" + printable(constant.parameter) +
                             "' is bound for device " +
                             std::to_string(constant.boundRank) +
                             ", not " + std::to_string(rank));
      if (constant.boundRank == rank)
        continue;
      std::vector<int64_t> coords = meshCoordinates(impl->mesh, rank);
      std::vector<int64_t> shape, offset;
      localPiece(constant.sbpOf, constant.pieceSbp, impl->mesh, coords, shape,
                 offset);
      for (size_t d = 0; d < offset.size(); ++d)
        offset[d] += constant.blockOffsets[d];
      if (shape != constant.spec.shape)
        return Status::error(
            "parameter '" + printable(constant.parameter) + "': device " +
            std::to_string(rank) + "'s piece is " +
            TensorSpec{constant.spec.dtype, shape}.str() +
            " but its program reads " + constant.spec.str());
      constant.pieceOffsets = offset;
      constant.boundRank = rank;
    } else if (constant.ranks.empty()) {
      continue; // bound at load
    }
    if (constant.source)
      if (Status s = detail::bindParameter(*impl, constant); !s)
        return s;
  }
  return detail::assembleParameterConcats(*impl, rank);
}

size_t Executable::boundParameterBytes() const {
  std::lock_guard<std::mutex> lock(impl->bindMutex);
  size_t bytes = 0;
  for (const detail::Constant &constant : impl->constants)
    if ((!constant.parameter.empty() || !constant.concatParts.empty()) &&
        constant.data)
      bytes += constant.size;
  return bytes;
}

Status Checker::bindParameters() {
  std::vector<detail::Constant *> wanted;
  for (detail::Constant &constant : impl.constants)
    if (!constant.parameter.empty())
      wanted.push_back(&constant);
  if (wanted.empty())
    return Status::ok();
  std::string path = options.parameterArchive;
  if (path.empty()) {
    const flatbuffers::String *named = file.parameter_archive();
    if (!named || named->size() == 0)
      return Status::error("the executable has " +
                           std::to_string(wanted.size()) +
                           " parameters but names no parameter archive");
    path = named->str();
    if (path.find('\0') != std::string::npos)
      return Status::error("invalid parameter archive path");
    if (path[0] != '/' && !options.baseDirectory.empty())
      path = options.baseDirectory + "/" + path;
  }
  StatusOr<std::unique_ptr<SafeTensorsFile>> archive =
      SafeTensorsFile::open(path);
  if (!archive)
    return archive.status();
  std::string missing;
  size_t numMissing = 0;
  for (detail::Constant *constant : wanted) {
    const SafeTensor *tensor = (*archive)->find(constant->parameter);
    if (!tensor) {
      if (numMissing++ < 8)
        missing += (missing.empty() ? "'" : ", '") +
                   printable(constant->parameter) + "'";
      continue;
    }
    // The archive holds the whole tensor a piece is cut from. An f32
    // weight the executable reads as bf16 (mixed precision) is converted
    // when bound, rounding to nearest even.
    const std::vector<int64_t> &whole = constant->pieceOf.empty()
                                            ? constant->spec.shape
                                            : constant->pieceOf;
    bool narrow = tensor->dtype == DType::F32 &&
                  constant->spec.dtype == DType::BF16;
    if (!tensor->supported ||
        (!narrow && tensor->dtype != constant->spec.dtype) ||
        tensor->shape != whole)
      return Status::error(
          path + ": parameter '" + printable(constant->parameter) + "' is " +
          tensor->str() + " but the executable needs " +
          TensorSpec{narrow ? DType::F32 : constant->spec.dtype, whole}.str());
    constant->source = tensor;
    // Parameters of some devices only are bound by the Session of one of
    // them (bindRank): a process holds its own pieces, not every device's.
    if (constant->ranks.empty() && constant->pieceSbp.empty())
      if (Status s = detail::bindParameter(impl, *constant); !s)
        return s;
  }
  if (numMissing)
    return Status::error(path + ": " + std::to_string(numMissing) +
                         " parameters the executable needs are missing: " +
                         missing + (numMissing > 8 ? ", ..." : ""));
  impl.parameters = std::move(*archive);
  return detail::assembleParameterConcats(impl, -1);
}
