//===- Executable.cpp - A loaded .fbin executable -------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The public Executable API and the specs it hands out. Loading, the checks
// and binding parameters are in the files ExecutableChecker.h names.
//
//===----------------------------------------------------------------------===//

#include "ExecutableChecker.h"

#include "flow/runtime/rules/Mesh.h"
#include "flow/runtime/rules/Pieces.h"

#include <algorithm>
#include <cstring>

using namespace flow::runtime;

//===----------------------------------------------------------------------===//
// TensorSpec
//===----------------------------------------------------------------------===//

int64_t TensorSpec::numElements() const {
  // A loaded spec's element count fits (the loader checks it), but its
  // partial products need not: [2^62, 4, 0] holds nothing. Any empty
  // dimension makes it 0; otherwise the product is in range.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return 0;
  uint64_t n = 1;
  for (int64_t dim : shape)
    n *= static_cast<uint64_t>(dim);
  return static_cast<int64_t>(n);
}

size_t TensorSpec::byteSize() const {
  return static_cast<size_t>(numElements()) * dtypeSize(dtype);
}

int64_t FunctionSignature::tiedInput(size_t output) const {
  for (const StateSpec &s : state)
    if (s.output == static_cast<int64_t>(output))
      return static_cast<int64_t>(s.input);
  return -1;
}

std::string TensorSpec::str() const {
  std::string out = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

//===----------------------------------------------------------------------===//
// Executable
//===----------------------------------------------------------------------===//

Executable::Executable(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

Executable::~Executable() = default;

StatusOr<std::unique_ptr<Executable>>
Executable::loadFile(const std::string &path, const LoadOptions &options) {
  AlignedBuffer file;
  if (Status s = detail::readFile(path, file); !s)
    return s;
  LoadOptions resolved = options;
  if (resolved.baseDirectory.empty()) {
    size_t slash = path.rfind('/');
    resolved.baseDirectory =
        slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  }
  StatusOr<std::unique_ptr<Impl>> impl =
      detail::load(std::move(file), resolved);
  if (!impl)
    return Status::error(path + ": " + impl.status().message());
  return std::unique_ptr<Executable>(new Executable(std::move(*impl)));
}

StatusOr<std::unique_ptr<Executable>>
Executable::loadBytes(const void *data, size_t size,
                      const LoadOptions &options) {
  AlignedBuffer file;
  if (!file.allocate(size))
    return Status::error("out of memory copying a " + std::to_string(size) +
                         "-byte executable");
  if (size)
    std::memcpy(file.data(), data, size);
  StatusOr<std::unique_ptr<Impl>> impl = detail::load(std::move(file), options);
  if (!impl)
    return impl.status();
  return std::unique_ptr<Executable>(new Executable(std::move(*impl)));
}

StatusOr<std::unique_ptr<Executable>>
Executable::loadBytes(std::vector<uint8_t> bytes, const LoadOptions &options) {
  return loadBytes(bytes.data(), bytes.size(), options);
}

const std::vector<FunctionSignature> &Executable::functions() const {
  return impl->signatures;
}

std::vector<std::string> Executable::functionNames() const {
  std::vector<std::string> names;
  for (const FunctionSignature &sig : impl->signatures)
    names.push_back(sig.name);
  return names;
}

StatusOr<size_t> Executable::findFunction(const std::string &name) const {
  std::string available;
  for (size_t i = 0; i < impl->signatures.size(); ++i) {
    if (impl->signatures[i].name == name)
      return i;
    available += (i ? ", " : "") + impl->signatures[i].name;
  }
  return Status::error("no function named '" + name +
                       "' (the executable has: " + available + ")");
}

size_t Executable::numKernels() const { return impl->kernelNames.size(); }

ExecutableTarget Executable::target() const { return impl->target; }

std::string Executable::kernelArch() const {
  if (impl->target == ExecutableTarget::Cpu)
    return impl->cpuArch;
  const detail::GpuLibrary *newest = nullptr;
  for (const detail::GpuLibrary &library : impl->gpuLibraries)
    if (!newest || library.computeCapability > newest->computeCapability)
      newest = &library;
  return newest ? newest->arch : "";
}

const char *flow::runtime::targetName(ExecutableTarget target) {
  return target == ExecutableTarget::Cuda ? "cuda" : "cpu";
}

size_t Executable::numConstants() const { return impl->constants.size(); }

const std::vector<int64_t> &Executable::mesh() const { return impl->mesh; }

StatusOr<size_t> Executable::findFunction(const std::string &name,
                                          int64_t rank) const {
  for (size_t i = 0; i < impl->signatures.size(); ++i) {
    const FunctionSignature &sig = impl->signatures[i];
    if (sig.ranks.empty())
      continue;
    if (sig.globalName == name &&
        std::find(sig.ranks.begin(), sig.ranks.end(), rank) != sig.ranks.end())
      return i;
  }
  return findFunction(name);
}

std::vector<int64_t>
flow::runtime::meshCoordinates(const std::vector<int64_t> &mesh,
                               int64_t rank) {
  std::vector<int64_t> coords(mesh.size());
  flow::rules::meshCoordinates(mesh, rank, coords);
  return coords;
}

void flow::runtime::localPiece(const std::vector<int64_t> &global,
                               const std::vector<SbpEntry> &sbp,
                               const std::vector<int64_t> &mesh,
                               const std::vector<int64_t> &coords,
                               std::vector<int64_t> &shape,
                               std::vector<int64_t> &offset) {
  shape = global;
  offset.assign(global.size(), 0);
  for (size_t axis = 0; axis < sbp.size() && axis < mesh.size(); ++axis) {
    if (sbp[axis].kind != SbpEntry::Split)
      continue;
    int64_t d = sbp[axis].dim;
    int64_t n = shape[d], p = mesh[axis], r = coords[axis];
    offset[d] += flow::rules::pieceOffset(n, p, r);
    shape[d] = flow::rules::pieceSize(n, p, r);
  }
}

size_t Executable::numParameters() const {
  size_t n = 0;
  for (const detail::Constant &constant : impl->constants)
    n += !constant.parameter.empty();
  return n;
}

std::string Executable::parameterArchive() const {
  return impl->parameters ? impl->parameters->path() : "";
}
