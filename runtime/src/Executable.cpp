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

#include "flow/runtime/rules/Extent.h"
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
    out += (i ? "," : "") +
           (i < extents.size() ? extents[i] : std::to_string(shape[i]));
  return out + "]";
}

//===----------------------------------------------------------------------===//
// Size symbols
//===----------------------------------------------------------------------===//

namespace {
/// An extent of a loaded signature (checked at load: it parses).
::flow::rules::Extent parsed(const std::string &text) {
  ::flow::rules::Extent e;
  std::string error;
  ::flow::rules::Extent::parse(text, e, error);
  return e;
}

/// The position of symbol \p name in \p sig, or -1.
int64_t symbolIndex(const FunctionSignature &sig, const std::string &name) {
  for (size_t i = 0; i < sig.symbols.size(); ++i)
    if (sig.symbols[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}
} // namespace

StatusOr<std::vector<int64_t>>
flow::runtime::bindSymbols(const FunctionSignature &sig,
                           const std::vector<std::vector<int64_t>> &shapes) {
  if (shapes.size() != sig.inputs.size())
    return Status::error("function '" + sig.name + "' takes " +
                         std::to_string(sig.inputs.size()) + " inputs, got " +
                         std::to_string(shapes.size()));
  size_t n = sig.symbols.size();
  std::vector<int64_t> values(n, 0);
  // Where each symbol was bound: "input 0 dimension 1".
  std::vector<std::string> from(n);
  auto where = [](size_t i, size_t d) {
    return "input " + std::to_string(i) + " dimension " + std::to_string(d);
  };
  auto given = [&](size_t i) {
    std::string out = "[";
    for (size_t d = 0; d < shapes[i].size(); ++d)
      out += (d ? "," : "") + std::to_string(shapes[i][d]);
    return out + "]";
  };
  auto bounds = [](const SizeSymbol &s) {
    return "[" + std::to_string(s.min) + ", " + std::to_string(s.max) + "]";
  };
  // Ranks and static dimensions first, then the dimensions that are one
  // symbol (they bind it), then the others (they are checked).
  for (size_t i = 0; i < shapes.size(); ++i) {
    const TensorSpec &spec = sig.inputs[i];
    if (shapes[i].size() != spec.shape.size())
      return Status::error("input " + std::to_string(i) + ": expected " +
                           spec.str() + ", got shape " + given(i));
    for (size_t d = 0; d < spec.shape.size(); ++d) {
      bool symbolic =
          d < spec.extents.size() && !parsed(spec.extents[d]).isConstant();
      if (!symbolic && shapes[i][d] != spec.shape[d])
        return Status::error("input " + std::to_string(i) + ": expected " +
                             spec.str() + ", got shape " + given(i));
    }
  }
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < shapes.size(); ++i) {
      const TensorSpec &spec = sig.inputs[i];
      for (size_t d = 0; d < spec.extents.size(); ++d) {
        ::flow::rules::Extent e = parsed(spec.extents[d]);
        if (e.isConstant())
          continue;
        int64_t size = shapes[i][d];
        std::vector<std::string> names = e.symbols();
        bool single =
            names.size() == 1 && e == ::flow::rules::Extent::symbol(names[0]);
        if (pass == 0 && single) {
          int64_t s = symbolIndex(sig, names[0]);
          const SizeSymbol &sym = sig.symbols[s];
          if (size < sym.min || size > sym.max)
            return Status::error(where(i, d) + " is size symbol '" + sym.name +
                                 "', which takes sizes in " + bounds(sym) +
                                 ": got " + std::to_string(size) +
                                 " (input shape " + given(i) + ")");
          if (!from[s].empty() && values[s] != size)
            return Status::error(
                where(i, d) + " is size symbol '" + sym.name + "', which " +
                from[s] + " gave as " + std::to_string(values[s]) + ": got " +
                std::to_string(size) + " (input shape " + given(i) + ")");
          values[s] = size;
          from[s] = where(i, d);
        } else if (pass == 1 && !single) {
          std::string unbound;
          for (const std::string &name : names)
            if (from[symbolIndex(sig, name)].empty())
              unbound = name;
          if (!unbound.empty())
            return Status::error(where(i, d) + " is " + e.str() +
                                 ": no input dimension is '" + unbound +
                                 "' alone, so its size cannot be bound");
          int64_t expected = 0;
          bool ok = e.evaluate(
              [&](const std::string &name, int64_t &v) {
                v = values[symbolIndex(sig, name)];
                return true;
              },
              expected);
          if (!ok || expected != size)
            return Status::error(where(i, d) + " is " + e.str() +
                                 ", which is " + std::to_string(expected) +
                                 " in this call: got " + std::to_string(size) +
                                 " (input shape " + given(i) + ")");
        }
      }
    }
  for (size_t s = 0; s < n; ++s)
    if (from[s].empty())
      return Status::error("function '" + sig.name + "': size symbol '" +
                           sig.symbols[s].name +
                           "' is no input's dimension, so a call cannot "
                           "bind it");
  return values;
}

std::vector<int64_t>
flow::runtime::callShape(const FunctionSignature &sig, const TensorSpec &spec,
                         const std::vector<int64_t> &values) {
  std::vector<int64_t> shape = spec.shape;
  for (size_t d = 0; d < spec.extents.size() && d < shape.size(); ++d) {
    ::flow::rules::Extent e = parsed(spec.extents[d]);
    int64_t v = shape[d];
    if (e.evaluate(
            [&](const std::string &name, int64_t &out) {
              int64_t s = symbolIndex(sig, name);
              if (s < 0 || (size_t)s >= values.size())
                return false;
              out = values[s];
              return true;
            },
            v))
      shape[d] = v;
  }
  return shape;
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
