//===- Session.cpp - Running an executable's functions --------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A call checks the caller's buffers against the signature and hands them to
// the device's executor (CpuExecutor.cpp, cuda/CudaDevice.cpp); mesh calls
// cut global inputs into this device's pieces and assemble the outputs.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Session.h"
#include "Collectives.h"
#include "Executor.h"
#include "flow/runtime/Device.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>


using namespace flow::runtime;
using detail::BufferRef;

namespace {

/// "conv 1x64x56x56 * 256x64x1x1 + residual, relu".
std::string describeConv(const detail::ConvCommand &c) {
  auto dims = [](std::initializer_list<int64_t> d) {
    std::string s;
    for (int64_t x : d)
      s += (s.empty() ? "" : "x") + std::to_string(x);
    return s;
  };
  std::string s = dims({c.n, c.c, c.h, c.w}) + " * " +
                  dims({c.o, c.c / c.groups, c.kh, c.kw});
  if (c.groups > 1)
    s += " in " + std::to_string(c.groups) + " groups";
  if (c.hasResidual)
    s += " + residual";
  if (c.relu)
    s += ", relu";
  return s;
}

/// "max_pool" or "avg_pool".
const char *poolKind(const detail::PoolCommand &c) {
  return c.average ? "avg_pool" : "max_pool";
}

/// "1x64x112x112, 3x3 / 2".
std::string describePool(const detail::PoolCommand &c) {
  std::string s = std::to_string(c.n) + "x" + std::to_string(c.c) + "x" +
                  std::to_string(c.h) + "x" + std::to_string(c.w) + ", " +
                  std::to_string(c.kh) + "x" + std::to_string(c.kw);
  if (c.strideH != 1 || c.strideW != 1)
    s += " / " + (c.strideH == c.strideW
                      ? std::to_string(c.strideH)
                      : std::to_string(c.strideH) + "x" +
                            std::to_string(c.strideW));
  return s;
}

} // namespace

void detail::describeCommand(const Executable::Impl &impl,
                             const detail::Command &command, std::string &kind,
                             std::string &what) {
  what.clear();
  if (const auto *d = std::get_if<detail::DispatchCommand>(&command)) {
    kind = "dispatch";
    what = impl.kernelNames[d->kernel];
  } else if (const auto *g = std::get_if<detail::GemmCommand>(&command)) {
    kind = "gemm";
    what = std::to_string(g->batchCount) + " x " + std::to_string(g->m) + "x" +
           std::to_string(g->n) + "x" + std::to_string(g->k);
  } else if (const auto *c = std::get_if<detail::ConvCommand>(&command)) {
    kind = "conv";
    what = describeConv(*c);
  } else if (const auto *m = std::get_if<detail::PoolCommand>(&command)) {
    kind = poolKind(*m);
    what = describePool(*m);
  } else if (const auto *a = std::get_if<detail::AttentionCommand>(&command)) {
    kind = "attention";
    what = std::to_string(a->batch) + " x " + std::to_string(a->lq) + "x" +
           std::to_string(a->lk) + ", d " + std::to_string(a->d);
    if (a->causal)
      what += ", causal";
    if (a->hasMask)
      what += ", masked";
  } else if (const auto *c = std::get_if<detail::CopyCommand>(&command)) {
    kind = "copy";
    what = std::to_string(c->src.size) + " bytes";
  } else if (const auto *w = std::get_if<detail::WaitCommand>(&command)) {
    kind = "wait";
    what = "for command " + std::to_string(w->collective);
  } else {
    const auto &c = std::get<detail::CollectiveCommand>(command);
    kind = c.async ? "collective (async)" : "collective";
    what = std::to_string(c.kind);
  }
}

Status detail::wrongTarget(const Executable &exe, const char *deviceKind) {
  std::string arch = exe.kernelArch();
  std::string target = exe.target() == ExecutableTarget::Cuda ? "CUDA" : "CPU";
  std::string other = exe.target() == ExecutableTarget::Cuda ? "cpu" : "cuda";
  return Status::error("executable is for target " + target +
                       (arch.empty() ? "" : " (compiled for " + arch + ")") +
                       "; the " + deviceKind + " device runs " + deviceKind +
                       " executables (recompile with flow-compile --target=" +
                       other + ")");
}

namespace {

/// Checks caller buffer \p i of \p specs (inputs or outputs), of the size
/// of its shape for the call's size symbols \p symbols where given.
Status checkBuffer(const char *kind, const FunctionSignature &sig,
                   const std::vector<TensorSpec> &specs, size_t i,
                   const void *data, size_t size,
                   const std::vector<int64_t> *symbols) {
  TensorSpec spec{specs[i].dtype, specs[i].shape};
  if (symbols)
    spec.shape = callShape(sig, specs[i], *symbols);
  size_t expected = spec.byteSize();
  if (size != expected)
    return Status::error(std::string(kind) + " " + std::to_string(i) + ": " +
                         spec.str() + " needs " + std::to_string(expected) +
                         " bytes, got " + std::to_string(size));
  if (size > 0 && !data)
    return Status::error(std::string(kind) + " " + std::to_string(i) +
                         ": data pointer is null");
  return Status::ok();
}

/// Checks that each input and output of the device program \p sig is the
/// piece of its global placement that the device at \p coords holds.
Status checkPieces(const FunctionSignature &sig,
                   const std::vector<int64_t> &mesh,
                   const std::vector<int64_t> &coords, int64_t rank) {
  auto check = [&](const char *kind, const std::vector<TensorSpec> &local,
                   const std::vector<Placement> &global) -> Status {
    if (local.size() != global.size())
      return Status::error("function '" + sig.name + "' has " +
                           std::to_string(local.size()) + " " + kind +
                           "s but its global signature " +
                           std::to_string(global.size()));
    for (size_t i = 0; i < local.size(); ++i) {
      TensorSpec piece{global[i].spec.dtype, {}};
      std::vector<int64_t> offset;
      localPiece(global[i].spec.shape, global[i].sbp, mesh, coords,
                 piece.shape, offset);
      if (piece.dtype != local[i].dtype || piece.shape != local[i].shape)
        return Status::error(
            "function '" + sig.name + "': " + kind + " " + std::to_string(i) +
            " is " + local[i].str() + " but device " + std::to_string(rank) +
            "'s piece of the global " + global[i].spec.str() + " is " +
            piece.str() + " (the executable is corrupt)");
    }
    return Status::ok();
  };
  if (Status s = check("input", sig.inputs, sig.globalInputs); !s)
    return s;
  return check("output", sig.outputs, sig.globalOutputs);
}

/// A 64-bit digest of \p t's type and bytes, to compare between ranks:
/// one multiply per 8 bytes (several GB/s), never a cryptographic hash.
uint64_t digest(const HostTensor &t) {
  auto mix = [](uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
  };
  uint64_t h = mix(0x243F6A8885A308D3ull, static_cast<uint64_t>(t.dtype));
  for (int64_t d : t.shape)
    h = mix(h, static_cast<uint64_t>(d));
  const uint8_t *p = t.data.data();
  size_t n = t.data.size(), words = n / 8;
  uint64_t lanes[4] = {h, h ^ 1, h ^ 2, h ^ 3};
  size_t i = 0;
  // Four independent lanes keep the multiplier busy.
  for (; i + 4 <= words; i += 4)
    for (int k = 0; k < 4; ++k) {
      uint64_t v;
      std::memcpy(&v, p + 8 * (i + k), 8);
      lanes[k] = (lanes[k] ^ v) * 0x9FB21C651E98DF25ull;
      lanes[k] ^= lanes[k] >> 29;
    }
  for (; i < words; ++i) {
    uint64_t v;
    std::memcpy(&v, p + 8 * i, 8);
    lanes[0] = (lanes[0] ^ v) * 0x9FB21C651E98DF25ull;
    lanes[0] ^= lanes[0] >> 29;
  }
  uint64_t tail = 0;
  if (n % 8)
    std::memcpy(&tail, p + 8 * words, n % 8);
  for (uint64_t lane : lanes)
    h = mix(h, lane);
  return mix(mix(h, tail), n);
}

} // namespace

Status Session::checkSameOnEveryRank(
    const std::vector<std::string> &names,
    const std::vector<const HostTensor *> &values) {
  auto all = groups.find(allAxes());
  if (!comm || all == groups.end())
    return Status::ok();
  Group &g = *all->second;
  size_t n = values.size();
  std::vector<uint64_t> mine(n), every(n * g.size());
  for (size_t i = 0; i < n; ++i)
    mine[i] = digest(*values[i]);
  if (Status s = g.allGather(mine.data(), every.data(),
                             std::vector<size_t>(g.size(), n * 8));
      !s)
    return Status::error("comparing " + names.front() +
                         " between the processes: " + s.message());
  // Every rank compares the same table, so all fail or none does.
  for (int r = 1; r < g.size(); ++r)
    for (size_t i = 0; i < n; ++i)
      if (every[r * n + i] != every[i])
        return Status::error(
            names[i] + " differs between processes (rank " +
            std::to_string(r) +
            "'s is not rank 0's): every process of a mesh passes the same "
            "whole (global) tensor");
  return Status::ok();
}

Status Session::checkSameInputs(const std::vector<HostTensor> &inputs) {
  std::vector<std::string> names;
  std::vector<const HostTensor *> values;
  for (const HostTensor &t : inputs) {
    names.push_back("input " + std::to_string(values.size()));
    values.push_back(&t);
  }
  return checkSameOnEveryRank(names, values);
}

std::vector<int64_t> Session::allAxes() const {
  std::vector<int64_t> axes(exe->mesh().size());
  for (size_t a = 0; a < axes.size(); ++a)
    axes[a] = static_cast<int64_t>(a);
  return axes;
}

Session::Session(std::shared_ptr<const Executable> executable,
                 std::shared_ptr<Device> device,
                 std::unique_ptr<detail::Executor> executor)
    : exe(std::move(executable)), dev(std::move(device)),
      executor(std::move(executor)) {}

Session::~Session() = default;

StatusOr<std::unique_ptr<Session>>
Session::create(std::shared_ptr<const Executable> executable,
                RuntimeOptions options) {
  if (!executable)
    return Status::error("cannot create a session without an executable");
  if (options.threads < 0)
    return Status::error("thread count must be >= 0 (0 means one per "
                         "hardware thread), got " +
                         std::to_string(options.threads));
  std::shared_ptr<Device> device = options.device;
  if (!device) {
    StatusOr<std::shared_ptr<Device>> opened =
        openDevice(defaultDeviceName(*executable));
    if (!opened) {
      if (executable->target() == ExecutableTarget::Cpu)
        return opened.status();
      std::string arch = executable->kernelArch();
      return Status::error(
          "cannot run this CUDA executable" +
          (arch.empty() ? std::string() : " (compiled for " + arch + ")") +
          ": " + opened.status().message());
    }
    device = std::move(*opened);
  }
  // A mesh executable: this process' device binds its own parameters
  // (its pieces of split weights) before the executor reads them.
  std::shared_ptr<Communicator> comm;
  if (!executable->mesh().empty()) {
    comm = options.communicator ? options.communicator
                                : std::shared_ptr<Communicator>(
                                      createSingleProcessCommunicator());
    if (Status s = executable->bindRank(comm->rank()); !s)
      return s;
  }
  StatusOr<std::unique_ptr<detail::Executor>> executor =
      device->createExecutor(executable, options.threads);
  if (!executor)
    return executor.status();
  std::unique_ptr<Session> session(new Session(
      std::move(executable), std::move(device), std::move(*executor)));
  const std::vector<int64_t> &mesh = session->exe->mesh();
  if (!mesh.empty()) {
    int64_t devices = 1;
    for (int64_t d : mesh)
      devices *= d;
    session->comm = std::move(comm);
    if (session->comm->size() != devices)
      return Status::error(
          "the executable runs on a mesh of " + std::to_string(devices) +
          " devices but " + std::to_string(session->comm->size()) +
          (session->comm->size() == 1 ? " process is" : " processes are") +
          " running it (start it with mpirun -np " + std::to_string(devices) +
          ")");
    session->deviceRank = session->comm->rank();
    session->coords = meshCoordinates(mesh, session->deviceRank);
    if (Status s = session->makeGroups(); !s)
      return s;
  }
  return session;
}

Status Session::makeGroups() {
  // Every process splits the world the same way in the same order: one
  // group per single mesh axis (for assembling outputs) and per axis set
  // a collective uses.
  const std::vector<int64_t> &mesh = exe->mesh();
  std::set<std::vector<int64_t>> sets, collectiveSets;
  for (size_t a = 0; a < mesh.size(); ++a)
    sets.insert({static_cast<int64_t>(a)});
  // And all of them (checking that the processes pass the same inputs).
  sets.insert(allAxes());
  for (const detail::Function &f : exe->implementation().functions)
    for (const detail::Command &c : f.commands)
      if (const auto *col = std::get_if<detail::CollectiveCommand>(&c)) {
        sets.insert(col->meshAxes);
        collectiveSets.insert(col->meshAxes);
      }
  for (const std::vector<int64_t> &axes : sets) {
    // Devices agreeing on every other axis share a group, ordered by
    // their coordinates on the group's axes (in the collective's order).
    int64_t color = 0, key = 0;
    for (size_t a = 0; a < mesh.size(); ++a)
      if (std::find(axes.begin(), axes.end(), (int64_t)a) == axes.end())
        color = color * mesh[a] + coords[a];
    for (int64_t a : axes)
      key = key * mesh[a] + coords[a];
    StatusOr<std::unique_ptr<Group>> g = comm->split(static_cast<int>(color),
                                                     static_cast<int>(key));
    if (!g)
      return g.status();
    if (collectiveSets.count(axes)) {
      StatusOr<std::unique_ptr<Group>> own = dev->createGroup(**g);
      if (!own)
        return own.status();
      if (*own)
        deviceGroups[axes] = std::move(*own);
    }
    groups[axes] = std::move(*g);
  }
  return Status::ok();
}

StatusOr<Group *> Session::group(const std::vector<int64_t> &axes) {
  auto it = groups.find(axes);
  if (it == groups.end())
    return Status::error("no group for these mesh axes");
  return it->second.get();
}

int Session::threads() const { return executor->threads(); }

void Session::setProfiling(bool on) {
  std::lock_guard<std::mutex> lock(runMutex);
  profiling = on;
  if (on)
    commandTimes.clear();
}

std::vector<Session::CommandProfile> Session::profile() const {
  const Executable::Impl &impl = exe->implementation();
  std::vector<CommandProfile> out;
  for (size_t f = 0; f < commandTimes.size(); ++f)
    for (size_t i = 0; i < commandTimes[f].size(); ++i) {
      const detail::Command &command = impl.functions[f].commands[i];
      CommandProfile p;
      p.function = impl.signatures[f].name;
      p.seconds = commandTimes[f][i].first;
      p.calls = commandTimes[f][i].second;
      detail::describeCommand(impl, command, p.kind, p.what);
      if (std::string kernel = executor->libraryKernel(command);
          !kernel.empty())
        p.what += " [" + kernel + "]";
      if (p.calls)
        out.push_back(std::move(p));
    }
  return out;
}

StatusOr<std::vector<HostTensor>>
Session::run(const std::string &function,
             const std::vector<HostTensor> &inputs) {
  // On a mesh, a global function's name runs this device's program.
  StatusOr<size_t> index = exe->mesh().empty()
                               ? exe->findFunction(function)
                               : exe->findFunction(function, deviceRank);
  if (!index)
    return index.status();
  const FunctionSignature &sig = exe->functions()[*index];
  if (inputs.size() != sig.inputs.size())
    return Status::error("function '" + sig.name + "' takes " +
                         std::to_string(sig.inputs.size()) + " inputs, got " +
                         std::to_string(inputs.size()));
  // A function with size symbols binds them from the inputs' shapes.
  std::vector<int64_t> symbols;
  if (!sig.symbols.empty()) {
    std::vector<std::vector<int64_t>> shapes;
    for (const HostTensor &tensor : inputs)
      shapes.push_back(tensor.shape);
    StatusOr<std::vector<int64_t>> bound = bindSymbols(sig, shapes);
    if (!bound)
      return Status::error("function '" + sig.name +
                           "': " + bound.status().message());
    symbols = std::move(*bound);
  }
  const std::vector<int64_t> *values = sig.symbols.empty() ? nullptr : &symbols;
  std::vector<ConstBuffer> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &tensor = inputs[i];
    TensorSpec spec{sig.inputs[i].dtype, sig.inputs[i].shape};
    if (values)
      spec.shape = callShape(sig, sig.inputs[i], symbols);
    TensorSpec given{tensor.dtype, tensor.shape};
    if (tensor.dtype != spec.dtype || tensor.shape != spec.shape)
      return Status::error("input " + std::to_string(i) + ": expected " +
                           sig.inputs[i].str() + ", got " + given.str());
    if (tensor.data.size() != spec.byteSize())
      return Status::error("input " + std::to_string(i) + ": " + spec.str() +
                           " needs " + std::to_string(spec.byteSize()) +
                           " data bytes, the tensor has " +
                           std::to_string(tensor.data.size()));
    in.push_back({tensor.data.data(), tensor.data.size()});
  }
  std::vector<HostTensor> outputs(sig.outputs.size());
  std::vector<MutableBuffer> out;
  try {
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].dtype = sig.outputs[i].dtype;
      outputs[i].shape = values ? callShape(sig, sig.outputs[i], symbols)
                                : sig.outputs[i].shape;
      outputs[i].data.resize(
          TensorSpec{outputs[i].dtype, outputs[i].shape}.byteSize());
      out.push_back({outputs[i].data.data(), outputs[i].data.size()});
    }
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory allocating the outputs of '" +
                         sig.name + "'");
  }
  if (Status s = run(*index, in, out, values); !s)
    return s;
  return outputs;
}

Status Session::run(size_t function, const std::vector<ConstBuffer> &inputs,
                    const std::vector<MutableBuffer> &outputs,
                    const std::vector<int64_t> *symbols) {
  const Executable::Impl &impl = exe->implementation();
  if (function >= impl.functions.size())
    return Status::error("no function number " + std::to_string(function) +
                         " (the executable has " +
                         std::to_string(impl.functions.size()) + ")");
  const FunctionSignature &sig = impl.signatures[function];
  if (inputs.size() != sig.inputs.size() ||
      outputs.size() != sig.outputs.size())
    return Status::error("function '" + sig.name + "' takes " +
                         std::to_string(sig.inputs.size()) + " inputs and " +
                         std::to_string(sig.outputs.size()) + " outputs, got " +
                         std::to_string(inputs.size()) + " and " +
                         std::to_string(outputs.size()));
  if (!sig.symbols.empty() &&
      (!symbols || symbols->size() != sig.symbols.size()))
    return Status::error("function '" + sig.name +
                         "' has size symbols: a call gives their values "
                         "(bindSymbols of its inputs' shapes)");
  if (sig.symbols.empty())
    symbols = nullptr;
  if (symbols)
    for (size_t s = 0; s < symbols->size(); ++s)
      if ((*symbols)[s] < sig.symbols[s].min ||
          (*symbols)[s] > sig.symbols[s].max)
        return Status::error(
            "function '" + sig.name + "': size symbol '" + sig.symbols[s].name +
            "' = " + std::to_string((*symbols)[s]) +
            " is outside its bounds [" + std::to_string(sig.symbols[s].min) +
            ", " + std::to_string(sig.symbols[s].max) + "]");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (Status s = checkBuffer("input", sig, sig.inputs, i, inputs[i].data,
                               inputs[i].size, symbols);
        !s)
      return s;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (Status s = checkBuffer("output", sig, sig.outputs, i, outputs[i].data,
                               outputs[i].size, symbols);
        !s)
      return s;

  // A state updated in place is updated in a copy: its output.
  std::vector<ConstBuffer> in = inputs;
  for (const StateSpec &state : sig.state)
    if (state.output >= 0) {
      const MutableBuffer &out = outputs[state.output];
      if (out.size)
        std::memcpy(out.data, inputs[state.input].data, out.size);
      in[state.input] = {out.data, out.size};
    }
  std::lock_guard<std::mutex> lock(runMutex);
  if (Status s = releaseState(function); !s)
    return s;
  return runInPlace(function, in, outputs, nullptr, symbols);
}

Status Session::syncState(const std::string &name) {
  auto home = stateHomes.find(name);
  if (home == stateHomes.end() || home->second.onHost)
    return Status::ok();
  // A function whose last call left the state's current value in its
  // buffer of the state's input.
  const std::vector<FunctionSignature> &sigs = exe->functions();
  HostTensor &value = stateValues.at(name);
  for (size_t f : home->second.functions)
    for (const StateSpec &state : sigs[f].state)
      if (state.name == name) {
        if (Status s = executor->readInput(
                f, state.input, {value.data.data(), value.data.size()});
            !s)
          return Status::error("reading state '" + name +
                               "' from the device: " + s.message());
        home->second.onHost = true;
        return Status::ok();
      }
  return Status::error("state '" + name + "' is on the device but no "
                       "function holds it");
}

Status Session::releaseState(size_t function) {
  for (auto &[name, home] : stateHomes) {
    auto it = std::find(home.functions.begin(), home.functions.end(),
                        function);
    if (it == home.functions.end())
      continue;
    if (Status s = syncState(name); !s)
      return s;
    home.functions.erase(it);
  }
  return Status::ok();
}

Status Session::runInPlace(size_t function,
                           const std::vector<ConstBuffer> &inputs,
                           const std::vector<MutableBuffer> &outputs,
                           const std::vector<bool> *resident,
                           const std::vector<int64_t> *symbols) {
  const Executable::Impl &impl = exe->implementation();
  const FunctionSignature &sig = impl.signatures[function];
  if (!sig.symbols.empty() &&
      (!symbols || symbols->size() != sig.symbols.size()))
    return Status::error("function '" + sig.name +
                         "' has size symbols: run it with its inputs' "
                         "shapes (Session::run), not as a training step");
  detail::CallHooks hooks;
  if (profiling) {
    if (commandTimes.size() < impl.functions.size())
      commandTimes.resize(impl.functions.size());
    hooks.times = &commandTimes[function];
    hooks.times->resize(impl.functions[function].commands.size());
  }
  hooks.checkNumerics = checkNumerics;
  hooks.resident = resident;
  hooks.symbols = symbols;
  hooks.keepState = resident != nullptr;
  // A NaN or infinity in a caller's buffer, as an error naming it.
  auto finite = [&](const char *kind, size_t i, const void *data, uint64_t size,
                    const TensorSpec &spec) {
    if (auto bad = detail::firstNonFinite(static_cast<const uint8_t *>(data),
                                          size, spec.dtype))
      return Status::error("check-numerics: function '" + sig.name +
                           "': " + kind + " " + std::to_string(i) + " (" +
                           spec.str() + ") holds " + bad->second +
                           " at element " + std::to_string(bad->first));
    return Status::ok();
  };
  if (checkNumerics)
    for (size_t i = 0; i < inputs.size(); ++i) {
      // (A resident state's bytes are on the device, not in inputs[i].)
      if (resident && (*resident)[i])
        continue;
      if (Status s =
              finite("input", i, inputs[i].data, inputs[i].size, sig.inputs[i]);
          !s)
        return s;
    }
  for (const IndexCheck &check : sig.indexChecks) {
    // (A resident state is never indices.)
    if (resident && (*resident)[check.input])
      continue;
    if (Status s = checkIndices(check, sig.inputs[check.input].dtype,
                                inputs[check.input]);
        !s)
      return Status::error("function '" + sig.name + "': " + s.message());
  }
  lastCollectiveBytes.clear();
  hooks.collectiveBytes = &lastCollectiveBytes;
  if (comm)
    hooks.group = [this](const std::vector<int64_t> &axes) -> StatusOr<Group *> {
      auto own = deviceGroups.find(axes);
      if (own != deviceGroups.end())
        return own->second.get();
      return group(axes);
    };
  if (Status s = executor->run(function, inputs, outputs, hooks); !s)
    return s;
  // With size symbols the commands are not checked one by one (their
  // buffers are sized for the upper bound): the outputs are.
  if (checkNumerics && symbols)
    for (size_t i = 0; i < outputs.size(); ++i)
      if (Status s = finite("output", i, outputs[i].data, outputs[i].size,
                            sig.outputs[i]);
          !s)
        return s;
  return Status::ok();
}

Status flow::runtime::checkIndices(const IndexCheck &check, DType dtype,
                                   const ConstBuffer &buffer) {
  size_t width = dtype == DType::I32 ? 4 : 8;
  uint64_t n = buffer.size / width;
  const uint8_t *p = static_cast<const uint8_t *>(buffer.data);
  for (uint64_t i = 0; i < n; ++i) {
    int64_t v;
    if (width == 4) {
      int32_t narrow;
      std::memcpy(&narrow, p + 4 * i, 4);
      v = narrow;
    } else {
      std::memcpy(&v, p + 8 * i, 8);
    }
    if ((v >= check.lower && v < check.bound) ||
        (check.ignore && v == *check.ignore))
      continue;
    return Status::error(
        "input " + std::to_string(check.input) + " holds " + std::to_string(v) +
        " at element " + std::to_string(i) + ", an index out of range for " +
        (check.what.empty() ? std::string("a gather") : check.what) +
        " (indices are " + std::to_string(check.lower) + " to " +
        std::to_string(check.bound - 1) +
        (check.ignore ? ", or " + std::to_string(*check.ignore) + " (ignored)"
                      : std::string()) +
        ")");
  }
  return Status::ok();
}

/// A tensor of zeros of \p spec's type (a state's first value).
static HostTensor zerosOf(const TensorSpec &spec) {
  HostTensor t;
  t.dtype = spec.dtype;
  t.shape = spec.shape;
  t.data.assign(spec.byteSize(), 0);
  return t;
}

bool Session::runsHere(const FunctionSignature &sig) const {
  return sig.ranks.empty() ||
         std::find(sig.ranks.begin(), sig.ranks.end(), deviceRank) !=
             sig.ranks.end();
}

StatusOr<Session::StateSlot> Session::stateSlot(const std::string &name) const {
  for (const FunctionSignature &sig : exe->functions()) {
    if (!runsHere(sig))
      continue;
    for (const StateSpec &state : sig.state)
      if (state.name == name) {
        StateSlot slot;
        slot.local = sig.inputs[state.input];
        slot.zeros = state.zeros;
        if (sig.ranks.empty()) {
          slot.global.spec = slot.local;
        } else {
          if (Status s = checkPieces(sig, exe->mesh(), coords, deviceRank);
              !s)
            return s;
          slot.global = sig.globalInputs[state.input];
          slot.onMesh = true;
        }
        return slot;
      }
  }
  return Status::error("the executable has no state '" + name + "'");
}

std::vector<std::string> Session::stateNames() const {
  std::vector<std::string> names;
  for (const FunctionSignature &sig : exe->functions())
    if (runsHere(sig))
      for (const StateSpec &state : sig.state)
        if (std::find(names.begin(), names.end(), state.name) == names.end())
          names.push_back(state.name);
  return names;
}

HostTensor Session::pieceOf(const Placement &p, const HostTensor &whole) const {
  std::vector<int64_t> shape, offset;
  localPiece(p.spec.shape, p.sbp, exe->mesh(), coords, shape, offset);
  HostTensor t;
  t.dtype = p.spec.dtype;
  t.shape = shape;
  t.data.assign(TensorSpec{t.dtype, shape}.byteSize(), 0);
  // A partial value is the value on each axis' first device, zeros on the
  // others (their sum is the value).
  for (size_t a = 0; a < p.sbp.size(); ++a)
    if (p.sbp[a].kind == SbpEntry::PartialSum && coords[a] != 0)
      return t;
  detail::copyBox(whole.data.data(), p.spec.shape, offset, t.data.data(),
                  shape, std::vector<int64_t>(shape.size(), 0), shape,
                  dtypeSize(t.dtype));
  return t;
}

StatusOr<HostTensor> Session::assemble(const Placement &p, HostTensor piece) {
  // Undo each axis' layout, innermost first.
  HostTensor current = std::move(piece);
  std::vector<SbpEntry> sbp = p.sbp;
  for (size_t a = sbp.size(); a-- > 0;) {
    if (sbp[a].kind == SbpEntry::Broadcast)
      continue;
    detail::CollectiveCommand cmd;
    cmd.dtype = current.dtype;
    cmd.inputShape = current.shape;
    cmd.meshAxes = {static_cast<int64_t>(a)};
    std::vector<SbpEntry> next = sbp;
    next[a].kind = SbpEntry::Broadcast;
    std::vector<int64_t> shape, offset;
    localPiece(p.spec.shape, next, exe->mesh(), coords, shape, offset);
    cmd.outputShape = shape;
    if (sbp[a].kind == SbpEntry::Split) {
      cmd.kind = detail::CollectiveCommand::AllGather;
      cmd.dim = sbp[a].dim;
    } else {
      cmd.kind = detail::CollectiveCommand::AllReduce;
      cmd.reduction = sbp[a].kind == SbpEntry::PartialMax ? Reduction::Max
                                                          : Reduction::Sum;
    }
    HostTensor whole;
    whole.dtype = current.dtype;
    whole.shape = shape;
    whole.data.assign(TensorSpec{whole.dtype, shape}.byteSize(), 0);
    StatusOr<Group *> g = group(cmd.meshAxes);
    if (!g)
      return g.status();
    if (Status s = detail::runCollective(cmd, **g, current.data.data(),
                                         whole.data.data());
        !s)
      return s;
    current = std::move(whole);
    sbp = next;
  }
  return current;
}

StatusOr<TensorSpec> Session::stateType(const std::string &name) const {
  StatusOr<StateSlot> slot = stateSlot(name);
  if (!slot)
    return slot.status();
  return slot->global.spec;
}

Status Session::setState(const std::string &name, const HostTensor &value) {
  StatusOr<StateSlot> slot = stateSlot(name);
  if (!slot)
    return slot.status();
  const TensorSpec &spec = slot->global.spec;
  TensorSpec given{value.dtype, value.shape};
  if (value.dtype != spec.dtype || value.shape != spec.shape ||
      value.data.size() != spec.byteSize())
    return Status::error("state '" + name + "' is " + spec.str() + ", got " +
                         given.str() + " (" +
                         std::to_string(value.data.size()) + " bytes)");
  if (Status s = checkStateValue(name, value); !s)
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  if (slot->onMesh)
    if (Status s = checkSameOnEveryRank({"state '" + name + "'"}, {&value});
        !s)
      return s;
  try {
    stateValues[name] = slot->onMesh ? pieceOf(slot->global, value) : value;
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory setting state '" + name + "'");
  }
  stateHomes.erase(name);
  return Status::ok();
}

StatusOr<HostTensor> Session::getState(const std::string &name) {
  StatusOr<StateSlot> slot = stateSlot(name);
  if (!slot)
    return slot.status();
  std::lock_guard<std::mutex> lock(runMutex);
  auto it = stateValues.find(name);
  if (it == stateValues.end() && !slot->zeros)
    return Status::error("state '" + name + "' has no value yet: set it "
                         "first");
  if (Status s = syncState(name); !s)
    return s;
  try {
    HostTensor piece = it != stateValues.end() ? it->second
                                               : zerosOf(slot->local);
    if (!slot->onMesh)
      return piece;
    StatusOr<HostTensor> whole = assemble(slot->global, std::move(piece));
    if (!whole)
      return Status::error("assembling state '" + name +
                           "': " + whole.status().message());
    return whole;
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory reading state '" + name + "'");
  }
}

uint64_t Session::stateBytes() const {
  std::lock_guard<std::mutex> lock(runMutex);
  uint64_t bytes = 0;
  for (const auto &[name, value] : stateValues)
    bytes += value.data.size();
  return bytes;
}

StatusOr<std::vector<HostTensor>>
Session::step(const std::string &function,
              const std::vector<HostTensor> &inputs) {
  // Pieces and assembled outputs are allocated here: a failed allocation
  // is an error, not an exception.
  try {
    return stepUnchecked(function, inputs);
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory running '" + function + "'");
  }
}

StatusOr<std::vector<HostTensor>>
Session::stepUnchecked(const std::string &function,
                       const std::vector<HostTensor> &inputs) {
  StatusOr<size_t> index = exe->findFunction(function, deviceRank);
  if (!index)
    return index.status();
  const FunctionSignature &sig = exe->functions()[*index];
  // On a mesh the caller passes and gets global tensors; the state is this
  // device's pieces.
  bool onMesh = !sig.ranks.empty();
  if (onMesh)
    if (Status s = checkPieces(sig, exe->mesh(), coords, deviceRank); !s)
      return s;
  std::vector<int64_t> stateOf(sig.inputs.size(), -1);
  std::vector<bool> tied(sig.outputs.size(), false);
  for (size_t k = 0; k < sig.state.size(); ++k) {
    stateOf[sig.state[k].input] = static_cast<int64_t>(k);
    if (sig.state[k].output >= 0)
      tied[sig.state[k].output] = true;
  }
  size_t given = 0;
  for (int64_t k : stateOf)
    given += k < 0;
  if (inputs.size() != given)
    return Status::error("function '" + function + "' takes " +
                         std::to_string(given) +
                         " inputs besides its state, got " +
                         std::to_string(inputs.size()));
  std::lock_guard<std::mutex> lock(runMutex);
  if (onMesh) {
    if (Status s = checkSameInputs(inputs); !s)
      return s;
  }
  // A device with memory of its own keeps the state there between steps.
  bool staged = executor->ownsMemory();
  std::vector<bool> resident(sig.inputs.size(), false);
  std::vector<ConstBuffer> in(sig.inputs.size());
  std::vector<HostTensor *> slots(sig.inputs.size(), nullptr);
  std::vector<HostTensor> pieces(sig.inputs.size());
  size_t next = 0;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSpec &spec = sig.inputs[i];
    if (stateOf[i] < 0) {
      const HostTensor &t = inputs[next];
      const TensorSpec &want = onMesh ? sig.globalInputs[i].spec : spec;
      if (t.dtype != want.dtype || t.shape != want.shape ||
          t.data.size() != want.byteSize())
        return Status::error("input " + std::to_string(next) +
                             ": expected " + want.str() + ", got " +
                             TensorSpec{t.dtype, t.shape}.str());
      if (onMesh) {
        pieces[i] = pieceOf(sig.globalInputs[i], t);
        in[i] = {pieces[i].data.data(), pieces[i].data.size()};
      } else {
        in[i] = {t.data.data(), t.data.size()};
      }
      ++next;
      continue;
    }
    const StateSpec &state = sig.state[stateOf[i]];
    auto it = stateValues.find(state.name);
    if (it == stateValues.end()) {
      if (!state.zeros)
        return Status::error("state '" + state.name +
                             "' has no value: set it before the first "
                             "step");
      it = stateValues.emplace(state.name, zerosOf(spec)).first;
    }
    HostTensor &value = it->second;
    if (value.dtype != spec.dtype || value.shape != spec.shape)
      return Status::error("state '" + state.name + "' is " +
                           TensorSpec{value.dtype, value.shape}.str() +
                           " but function '" + sig.name + "' takes " +
                           spec.str());
    slots[i] = &value;
    in[i] = {value.data.data(), value.data.size()};
    if (staged) {
      const std::vector<size_t> &holders = stateHomes[state.name].functions;
      resident[i] = std::find(holders.begin(), holders.end(), *index) !=
                    holders.end();
      if (!resident[i])
        if (Status s = syncState(state.name); !s)
          return s;
    }
  }
  std::vector<HostTensor> results(sig.outputs.size());
  std::vector<MutableBuffer> out(sig.outputs.size());
  for (size_t j = 0; j < sig.outputs.size(); ++j) {
    if (tied[j]) {
      // Nothing writes it; a device that computes elsewhere copies the
      // state's new value back here (into the session's buffer).
      HostTensor *slot = slots[sig.tiedInput(j)];
      out[j] = {slot->data.data(), slot->data.size()};
      continue;
    }
    results[j].dtype = sig.outputs[j].dtype;
    results[j].shape = sig.outputs[j].shape;
    results[j].data.resize(sig.outputs[j].byteSize());
    out[j] = {results[j].data.data(), results[j].data.size()};
  }
  if (Status s = runInPlace(*index, in, out, staged ? &resident : nullptr);
      !s)
    return s;
  if (staged)
    for (const StateSpec &state : sig.state) {
      // The call's buffer holds the state now; if the call wrote it, only
      // that buffer does.
      StateHome &home = stateHomes[state.name];
      if (state.output >= 0) {
        home.onHost = false;
        home.functions = {*index};
      } else if (!resident[state.input]) {
        home.functions.push_back(*index);
      }
    }
  std::vector<HostTensor> untied;
  for (size_t j = 0; j < results.size(); ++j) {
    if (tied[j])
      continue;
    if (!onMesh) {
      untied.push_back(std::move(results[j]));
      continue;
    }
    StatusOr<HostTensor> whole =
        assemble(sig.globalOutputs[j], std::move(results[j]));
    if (!whole)
      return Status::error("assembling output " + std::to_string(j) + ": " +
                           whole.status().message());
    untied.push_back(std::move(*whole));
  }
  return untied;
}

StatusOr<std::vector<HostTensor>>
Session::runGlobal(const std::string &function,
                   const std::vector<HostTensor> &inputs) {
  // Pieces and assembled outputs are allocated here: a failed allocation
  // is an error, not an exception.
  try {
    return runGlobalUnchecked(function, inputs);
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory running '" + function + "'");
  }
}

StatusOr<std::vector<HostTensor>>
Session::runGlobalUnchecked(const std::string &function,
                            const std::vector<HostTensor> &inputs) {
  const std::vector<int64_t> &mesh = exe->mesh();
  if (mesh.empty())
    return run(function, inputs);
  StatusOr<size_t> index = exe->findFunction(function, deviceRank);
  if (!index)
    return index.status();
  const FunctionSignature &sig = exe->functions()[*index];
  if (sig.ranks.empty())
    return run(function, inputs);
  // Splitting the inputs and assembling the outputs trust that this
  // device's signature holds the pieces its global placements give it.
  if (Status s = checkPieces(sig, mesh, coords, deviceRank); !s)
    return s;
  if (inputs.size() != sig.globalInputs.size())
    return Status::error("function '" + function + "' takes " +
                         std::to_string(sig.globalInputs.size()) +
                         " inputs, got " + std::to_string(inputs.size()));
  // This device's piece of every input.
  std::vector<HostTensor> local(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Placement &p = sig.globalInputs[i];
    if (inputs[i].dtype != p.spec.dtype || inputs[i].shape != p.spec.shape)
      return Status::error("input " + std::to_string(i) + ": expected " +
                           p.spec.str() + ", got " +
                           TensorSpec{inputs[i].dtype, inputs[i].shape}.str());
  }
  if (Status s = checkSameInputs(inputs); !s)
    return s;
  for (size_t i = 0; i < inputs.size(); ++i)
    local[i] = pieceOf(sig.globalInputs[i], inputs[i]);
  std::vector<ConstBuffer> in;
  for (const HostTensor &t : local)
    in.push_back({t.data.data(), t.data.size()});
  std::vector<HostTensor> pieces(sig.outputs.size());
  std::vector<MutableBuffer> out;
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    pieces[i].dtype = sig.outputs[i].dtype;
    pieces[i].shape = sig.outputs[i].shape;
    pieces[i].data.assign(sig.outputs[i].byteSize(), 0);
    out.push_back({pieces[i].data.data(), pieces[i].data.size()});
  }
  if (Status s = run(*index, in, out); !s)
    return s;
  std::vector<HostTensor> results;
  for (size_t i = 0; i < pieces.size(); ++i) {
    StatusOr<HostTensor> whole =
        assemble(sig.globalOutputs[i], std::move(pieces[i]));
    if (!whole)
      return Status::error("assembling output " + std::to_string(i) + ": " +
                           whole.status().message());
    results.push_back(std::move(*whole));
  }
  return results;
}
