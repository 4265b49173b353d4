//===- flow-run.cpp - Runs a function of a .fbin executable ---------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
//   flow-run OUT.fbin --input=a.npy --input=b.npy [--output-dir=DIR]
//            [--function=NAME] [--iterations=N] [--warmup=M] [--threads=T]
//            [--parameters=FILE.safetensors] [--timeout=SECONDS]
//            [--trusted=LIST] [--print]
//
// Exit status: 0 on success, 1 when loading or running fails (an unreadable
// or invalid file, a wrong input), 2 for a bad command line.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Blas.h"
#include "flow/runtime/Communicator.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Npy.h"
#include "flow/runtime/SafeTensors.h"
#include "flow/runtime/Session.h"
#include "flow/runtime/TrainingState.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <sys/stat.h>

using namespace flow::runtime;

namespace {

constexpr const char *kUsage =
    "usage: flow-run FILE.fbin [--input=X.npy]... [--output-dir=DIR]\n"
    "                [--function=NAME] [--iterations=N] [--warmup=M]\n"
    "                [--threads=T] [--parameters=FILE] [--timeout=S]\n"
    "                [--trusted=LIST] [--device=NAME] [--print]\n"
    "                [--steps=N] [--state=FILE] [--save-state=FILE]\n"
    "\n"
    "Runs a function of a Flow executable on .npy inputs (one --input per\n"
    "function input, in order).\n"
    "\n"
    "  --output-dir=DIR  write result i to DIR/result_i.npy (DIR is created)\n"
    "  --function=NAME   the function to run (default: the only one)\n"
    "  --iterations=N    time N calls; print min/median/max ms per call\n"
    "  --warmup=M        untimed calls before timing (default 1)\n"
    "  --threads=T       CPU worker threads (default: one per hardware\n"
    "                    thread)\n"
    "  --device=NAME     cpu, cuda (the GPU of this MPI rank's local rank)\n"
    "                    or cuda:N (default: the executable's target)\n"
    "  --parameters=FILE read parameters from this safetensors archive\n"
    "                    (default: the archive the executable names, taken\n"
    "                    from the executable's directory when relative)\n"
    "  --timeout=S       under mpirun: end the job with an error naming the\n"
    "                    rank(s) at fault when a collective, or the start or\n"
    "                    end of the job, waits more than S seconds for a peer\n"
    "                    (default: $FLOW_COLLECTIVE_TIMEOUT, else 300; 0:\n"
    "                    wait forever)\n"
    "  --trusted=LIST    run only executables whose SHA-256 is in LIST (one\n"
    "                    digest per line, as sha256sum prints them; default:\n"
    "                    $FLOW_TRUSTED_EXECUTABLES, else no allow-list)\n"
    "  --profile         with --iterations: print where the time of the timed\n"
    "                    calls went, by kind of command and the costliest\n"
    "                    commands; with --steps, of the steps after the\n"
    "                    first (of the one step when --steps=1)\n"
    "  --check-numerics  stop at the first NaN or infinity: in an input, or\n"
    "                    written by a command (named with its kernel's ops\n"
    "                    and their source lines)\n"
    "  --stats           print the GEMM libraries and the kernels they run,\n"
    "                    and the bytes each collective exchanged on each\n"
    "                    rank (mesh executables)\n"
    "  --steps=N         training: run the function N times on the\n"
    "                    session's state (parameters, optimizer moments),\n"
    "                    updated in place; --input gives the other inputs,\n"
    "                    and '{step}' in its path is replaced by the step\n"
    "                    number (0 to N-1) to read one batch per step\n"
    "  --state=FILE      the state's first values, from a safetensors file\n"
    "                    (every state that does not start as zeros)\n"
    "  --save-state=FILE write the state after the last step (safetensors)\n"
    "  --print           print each result's dtype, shape and first values\n"
    "                    (the default when there is no --output-dir)\n"
    "\n"
    "Exit status: 0 ok, 1 load or run error, 2 bad command line.\n";

struct Options {
  std::string executable;
  std::vector<std::string> inputs;
  std::string outputDir;
  std::string function;
  std::string parameters;
  std::string trusted;
  std::string device;
  int64_t iterations = 0;
  int64_t warmup = 1;
  int threads = 0;
  /// Seconds; negative: FLOW_COLLECTIVE_TIMEOUT or the default.
  double timeout = -1;
  bool print = false;
  bool stats = false;
  bool profile = false;
  bool checkNumerics = false;
  /// Training: steps on the session's state (0: a plain call).
  int64_t steps = 0;
  std::string state, saveState;
};

int fail(const std::string &message) {
  fprintf(stderr, "flow-run: error: %s\n", message.c_str());
  return 1;
}

int usageError(const std::string &message) {
  fprintf(stderr, "flow-run: error: %s\n(run 'flow-run --help' for usage)\n",
          message.c_str());
  return 2;
}

/// Parses a non-negative integer flag value.
bool parseCount(const std::string &text, int64_t max, int64_t &out) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoll(text);
  return out <= max;
}

/// Parses argv into \p options; returns an exit status, or -1 to go on.
int parseArgs(int argc, char **argv, Options &options) {
  bool sawWarmup = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--print") {
      options.print = true;
      continue;
    }
    if (arg == "--stats") {
      options.stats = true;
      continue;
    }
    if (arg == "--profile") {
      options.profile = true;
      continue;
    }
    if (arg == "--check-numerics") {
      options.checkNumerics = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (arg.rfind("-", 0) == 0 && arg != "-")
        return usageError("unknown option '" + arg + "'");
      if (!options.executable.empty())
        return usageError("more than one executable given ('" +
                          options.executable + "' and '" + arg + "')");
      options.executable = arg;
      continue;
    }
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    static const char *const kValued[] = {
        "--input",  "--output-dir", "--function",   "--iterations",
        "--warmup", "--threads",    "--parameters", "--timeout",
        "--trusted", "--device",    "--steps",      "--state",
        "--save-state"};
    if (std::find_if(std::begin(kValued), std::end(kValued),
                     [&](auto *f) { return name == f; }) == std::end(kValued))
      return usageError("unknown option '" + name + "'");
    if (eq == std::string::npos)
      return usageError("option '" + name + "' needs a value (" + name +
                        "=...)");
    std::string value = arg.substr(eq + 1);
    int64_t count;
    if (name == "--input") {
      options.inputs.push_back(value);
    } else if (name == "--output-dir") {
      options.outputDir = value;
    } else if (name == "--function") {
      options.function = value;
    } else if (name == "--parameters") {
      options.parameters = value;
    } else if (name == "--device") {
      options.device = value;
    } else if (name == "--state") {
      options.state = value;
    } else if (name == "--save-state") {
      options.saveState = value;
    } else if (name == "--steps") {
      if (!parseCount(value, 1000000000, count) || count == 0)
        return usageError("--steps needs a positive integer, got '" + value +
                          "'");
      options.steps = count;
    } else if (name == "--trusted") {
      options.trusted = value;
    } else if (name == "--timeout") {
      StatusOr<double> seconds = parseCollectiveTimeout(value);
      if (!seconds)
        return usageError("--timeout: " + seconds.status().message());
      options.timeout = *seconds;
    } else if (name == "--iterations" || name == "--warmup") {
      if (!parseCount(value, 1000000000, count))
        return usageError(name + " needs a non-negative integer, got '" +
                          value + "'");
      (name == "--iterations" ? options.iterations : options.warmup) = count;
      sawWarmup |= name == "--warmup";
    } else {
      if (!parseCount(value, 4096, count))
        return usageError("--threads needs an integer in [0, 4096], got '" +
                          value + "'");
      options.threads = static_cast<int>(count);
    }
  }
  if (options.executable.empty())
    return usageError("no executable given");
  if (sawWarmup && options.iterations == 0)
    return usageError("--warmup needs --iterations");
  if ((!options.state.empty() || !options.saveState.empty()) &&
      options.steps == 0)
    options.steps = 1;
  if (options.profile && options.iterations == 0 && options.steps == 0)
    return usageError("--profile needs --iterations or --steps");
  if (options.steps > 0 && options.iterations > 0)
    return usageError("--steps and --iterations do not go together (each "
                      "step prints its time)");
  if (options.outputDir.empty())
    options.print = true;
  return -1;
}

/// Element \p i of \p p read as a T.
template <typename T> T element(const uint8_t *p, int64_t i) {
  T v;
  std::memcpy(&v, p + sizeof(T) * i, sizeof(T));
  return v;
}

/// Prints a result's dtype, shape and first few values.
void printTensor(size_t index, const HostTensor &t) {
  printf("result %zu: %s[", index, dtypeName(t.dtype));
  for (size_t i = 0; i < t.shape.size(); ++i)
    printf("%s%" PRId64, i ? "," : "", t.shape[i]);
  printf("]");
  int64_t n = t.numElements();
  constexpr int64_t kShown = 8;
  const uint8_t *p = t.data.data();
  printf(" =");
  for (int64_t i = 0; i < std::min(n, kShown); ++i) {
    switch (t.dtype) {
    case DType::F32:
      printf(" %g", element<float>(p, i));
      break;
    case DType::F64:
      printf(" %g", element<double>(p, i));
      break;
    case DType::F16:
    case DType::BF16: // the bits: the host has no such type to print
      printf(" 0x%04x", element<uint16_t>(p, i));
      break;
    case DType::I1:
      printf(" %s", p[i] ? "true" : "false");
      break;
    case DType::I64:
      printf(" %" PRId64, element<int64_t>(p, i));
      break;
    case DType::I32:
      printf(" %" PRId64, int64_t(element<int32_t>(p, i)));
      break;
    case DType::I16:
      printf(" %" PRId64, int64_t(element<int16_t>(p, i)));
      break;
    case DType::I8:
      printf(" %" PRId64, int64_t(element<int8_t>(p, i)));
      break;
    case DType::U64:
      printf(" %" PRIu64, element<uint64_t>(p, i));
      break;
    case DType::U32:
      printf(" %" PRIu64, uint64_t(element<uint32_t>(p, i)));
      break;
    case DType::U16:
      printf(" %" PRIu64, uint64_t(element<uint16_t>(p, i)));
      break;
    case DType::U8:
      printf(" %" PRIu64, uint64_t(p[i]));
      break;
    }
  }
  printf("%s\n", n > kShown ? " ..." : "");
}

} // namespace

/// Where the time went: totals by kind of command, then the costliest
/// commands (per call, over \p iterations timed calls).
static void printProfile(const std::vector<Session::CommandProfile> &profile,
                  int64_t iterations) {
  std::map<std::string, std::pair<double, int>> kinds;
  double total = 0;
  for (const Session::CommandProfile &p : profile) {
    kinds[p.kind].first += p.seconds;
    ++kinds[p.kind].second;
    total += p.seconds;
  }
  double perCall = 1e3 / static_cast<double>(iterations);
  printf("profile: %.4g ms per call in commands\n", total * perCall);
  for (const auto &[kind, entry] : kinds)
    printf("  %-10s %4d commands %9.3f ms %5.1f%%\n", kind.c_str(),
           entry.second, entry.first * perCall,
           total > 0 ? 100 * entry.first / total : 0.0);
  std::vector<const Session::CommandProfile *> sorted;
  for (const Session::CommandProfile &p : profile)
    sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](auto *a, auto *b) {
    return a->seconds > b->seconds;
  });
  size_t shown = std::min<size_t>(sorted.size(), getenv("FLOW_PROFILE_ALL") ? sorted.size() : 15);
  printf("  costliest %zu:\n", shown);
  for (size_t i = 0; i < shown; ++i)
    printf("  %9.3f ms  %-10s %s\n", sorted[i]->seconds * perCall,
           sorted[i]->kind.c_str(), sorted[i]->what.c_str());
}

/// A session on the device the options name (default: the executable's).
StatusOr<std::unique_ptr<Session>>
openSession(const Options &options, std::shared_ptr<const Executable> exe,
            std::shared_ptr<Communicator> comm) {
  RuntimeOptions runtimeOptions;
  runtimeOptions.threads = options.threads;
  runtimeOptions.communicator = std::move(comm);
  if (!options.device.empty()) {
    StatusOr<std::shared_ptr<Device>> device = openDevice(options.device);
    if (!device)
      return device.status();
    runtimeOptions.device = std::move(*device);
  }
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(std::move(exe), runtimeOptions);
  if (session)
    (*session)->setCheckNumerics(options.checkNumerics);
  return session;
}

/// Writes result i to DIR/result_i.npy (DIR is created).
Status writeResults(const std::string &dir,
                    const std::vector<HostTensor> &results) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::error("cannot create '" + dir + "': " + strerror(errno));
  for (size_t i = 0; i < results.size(); ++i)
    if (Status s = writeNpy(dir + "/result_" + std::to_string(i) + ".npy",
                            results[i]);
        !s)
      return s;
  return Status::ok();
}

/// \p path with every "{step}" replaced by \p step.
std::string stepPath(std::string path, int64_t step) {
  const std::string key = "{step}";
  for (size_t at = path.find(key); at != std::string::npos;
       at = path.find(key, at))
    path.replace(at, key.size(), std::to_string(step));
  return path;
}

/// --steps: runs \p function on the session's state. On a mesh every rank
/// runs this (\p comm); each keeps its pieces of the state, reads the whole
/// batches and the state file, and rank 0 (\p writer) prints and writes.
int runSteps(const Options &options, std::shared_ptr<const Executable> exe,
             const std::string &function, const FunctionSignature &sig,
             std::shared_ptr<Communicator> comm, bool writer,
             const std::function<int(const std::string &)> &fail) {
  if (sig.state.empty())
    return fail("function '" + function + "' has no state to train (--steps "
                "needs a function compiled with an optimizer)");
  size_t expected = sig.inputs.size() - sig.state.size();
  if (options.inputs.size() != expected)
    return fail("function '" + function + "' takes " +
                std::to_string(expected) + " inputs besides its state, got " +
                std::to_string(options.inputs.size()) + " --input flags");
  StatusOr<std::unique_ptr<Session>> session =
      openSession(options, exe, comm);
  if (!session)
    return fail(session.status().message());
  std::vector<std::string> names = (*session)->stateNames();
  if (!options.state.empty()) {
    StatusOr<std::unique_ptr<SafeTensorsFile>> file =
        SafeTensorsFile::open(options.state);
    if (!file)
      return fail(file.status().message());
    for (const auto &[name, tensor] : (*file)->tensors()) {
      if (std::find(names.begin(), names.end(), name) == names.end())
        return fail(options.state + ": '" + name + "' is not a state of " +
                    "the executable");
      if (!tensor.supported)
        return fail(options.state + ": '" + name + "' is " + tensor.str() +
                    ", an element type Flow does not run");
      HostTensor value;
      value.dtype = tensor.dtype;
      value.shape = tensor.shape;
      value.data.assign(tensor.data, tensor.data + tensor.size);
      if (Status s = (*session)->setState(name, value); !s)
        return fail(options.state + ": " + s.message());
    }
  }
  using Clock = std::chrono::steady_clock;
  StatusOr<std::vector<HostTensor>> results = std::vector<HostTensor>();
  std::vector<HostTensor> inputs(options.inputs.size());
  for (int64_t step = 0; step < options.steps; ++step) {
    for (size_t i = 0; i < options.inputs.size(); ++i) {
      std::string path = stepPath(options.inputs[i], step);
      if (step > 0 && path == options.inputs[i])
        continue; // the same file every step
      StatusOr<HostTensor> tensor = readNpy(path);
      if (!tensor)
        return fail(tensor.status().message());
      inputs[i] = std::move(*tensor);
    }
    // The first step (allocations, first touches) is not profiled when
    // others follow.
    if (options.profile && step == (options.steps > 1 ? 1 : 0))
      (*session)->setProfiling(true);
    Clock::time_point start = Clock::now();
    results = (*session)->step(function, inputs);
    std::chrono::duration<double, std::milli> elapsed = Clock::now() - start;
    if (!results)
      return fail("step " + std::to_string(step) + ": " +
                  results.status().message());
    // A non-finite loss ends the run before anything is saved: the state
    // it leaves is no checkpoint to keep (the last good one stays).
    for (size_t r = 0; r < results->size(); ++r) {
      const HostTensor &t = (*results)[r];
      if (auto bad = firstNonFinite(t.data.data(), t.data.size(), t.dtype))
        return fail(
            "step " + std::to_string(step) + ": result " + std::to_string(r) +
            (r == 0 ? " (the loss)" : "") + " is " + bad->second +
            (t.numElements() > 1 ? " at element " + std::to_string(bad->first)
                                 : std::string()) +
            "; stopping" +
            (options.saveState.empty()
                 ? std::string()
                 : " without writing '" + options.saveState + "'"));
    }
    if (!writer)
      continue;
    printf("step %" PRId64 ": %.4g ms", step, elapsed.count());
    if (!results->empty() && (*results)[0].dtype == DType::F32 &&
        (*results)[0].numElements() == 1)
      printf(", result 0 = %.8g", element<float>((*results)[0].data.data(), 0));
    printf("\n");
  }
  if (options.profile && writer)
    printProfile((*session)->profile(),
                 options.steps > 1 ? options.steps - 1 : 1);
  // The bytes each collective of the last step moved on this device.
  if (options.stats && comm)
    for (size_t i = 0; i < (*session)->collectiveBytes().size(); ++i)
      printf("rank %d collective %zu: %llu bytes\n", comm->rank(), i,
             static_cast<unsigned long long>(
                 (*session)->collectiveBytes()[i]));
  if (!options.saveState.empty()) {
    // Every rank gathers (a split state's pieces meet on each); rank 0
    // writes.
    std::map<std::string, HostTensor> state;
    for (const std::string &name : names) {
      StatusOr<HostTensor> value = (*session)->getState(name);
      if (!value)
        return fail(value.status().message());
      state[name] = std::move(*value);
    }
    if (!writer)
      return 0;
    if (Status s = writeSafeTensors(options.saveState, state,
                                    {{"flow.steps",
                                      std::to_string(options.steps)}});
        !s)
      return fail(s.message());
  }
  if (!options.outputDir.empty() && writer)
    if (Status s = writeResults(options.outputDir, *results); !s)
      return fail(s.message());
  return 0;
}

int main(int argc, char **argv) {
  Options options;
  if (int status = parseArgs(argc, argv, options); status >= 0)
    return status;

  StatusOr<std::unique_ptr<Executable>> loaded =
      Executable::loadFile(options.executable, [&] {
        LoadOptions load;
        load.parameterArchive = options.parameters;
        load.trustedList = options.trusted;
        return load;
      }());
  if (!loaded)
    return fail(loaded.status().message());
  std::shared_ptr<const Executable> exe = std::move(*loaded);

  // A mesh executable runs as one process per device (under mpirun).
  std::shared_ptr<Communicator> comm;
  if (!exe->mesh().empty()) {
    int64_t devices = 1;
    for (int64_t d : exe->mesh())
      devices *= d;
    if (launchedByMpi() || devices > 1) {
      MpiOptions mpi;
      mpi.timeout = options.timeout;
      mpi.programName = "flow-run";
      StatusOr<std::shared_ptr<Communicator>> world = mpiWorld(mpi);
      if (!world)
        return fail(world.status().message());
      comm = *world;
    }
  }
  // After this point a failing rank takes the others down with it.
  auto failAll = [&](const std::string &message) {
    if (!comm || comm->size() == 1)
      return fail(message);
    fprintf(stderr, "flow-run: error (rank %d): %s\n", comm->rank(),
            message.c_str());
    fflush(stderr);
    comm->abort(1);
    return 1; // abort does not return; this keeps the lambda's type whole
  };
  bool writer = !comm || comm->rank() == 0;

  std::string function = options.function;
  if (function.empty()) {
    std::vector<std::string> names;
    for (const FunctionSignature &sig : exe->functions()) {
      const std::string &name = sig.ranks.empty() ? sig.name : sig.globalName;
      if (std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
    }
    if (names.size() != 1) {
      std::string list;
      for (const std::string &name : names)
        list += (list.empty() ? "" : ", ") + name;
      return fail("the executable has " + std::to_string(names.size()) +
                  " functions (" + list + "); choose one with --function");
    }
    function = names[0];
  }
  StatusOr<size_t> index =
      exe->findFunction(function, comm ? comm->rank() : 0);
  if (!index)
    return failAll(index.status().message());
  const FunctionSignature &chosen = exe->functions()[*index];
  if (options.steps > 0)
    return runSteps(options, exe, function, chosen, comm, writer, failAll);
  size_t expected = chosen.ranks.empty() ? chosen.inputs.size()
                                         : chosen.globalInputs.size();
  if (options.inputs.size() != expected)
    return fail("function '" + function + "' takes " +
                std::to_string(expected) + " inputs, got " +
                std::to_string(options.inputs.size()) + " --input flags");

  std::vector<HostTensor> inputs;
  for (const std::string &path : options.inputs) {
    StatusOr<HostTensor> tensor = readNpy(path);
    if (!tensor)
      return fail(tensor.status().message());
    inputs.push_back(std::move(*tensor));
  }

  StatusOr<std::unique_ptr<Session>> session =
      openSession(options, exe, comm);
  if (!session)
    return failAll(session.status().message());

  using Clock = std::chrono::steady_clock;
  std::vector<double> times;
  StatusOr<std::vector<HostTensor>> results = std::vector<HostTensor>();
  int64_t calls =
      options.iterations > 0 ? options.warmup + options.iterations : 1;
  for (int64_t call = 0; call < calls; ++call) {
    if (options.profile && call == options.warmup)
      (*session)->setProfiling(true);
    Clock::time_point start = Clock::now();
    results = (*session)->runGlobal(function, inputs);
    std::chrono::duration<double, std::milli> elapsed = Clock::now() - start;
    if (!results)
      return failAll(results.status().message());
    if (options.iterations > 0 && call >= options.warmup)
      times.push_back(elapsed.count());
  }
  if (!times.empty() && writer) {
    std::sort(times.begin(), times.end());
    size_t n = times.size();
    double median =
        n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    int threads = (*session)->threads();
    const DeviceInfo &device = (*session)->device().info();
    std::string where = device.kind == DeviceKind::Cpu
                            ? std::to_string(threads) +
                                  (threads == 1 ? " thread" : " threads")
                            : "on " + device.str();
    printf("%s: %zu iterations, %s: min %.4g ms, median %.4g ms, "
           "max %.4g ms\n",
           function.c_str(), n, where.c_str(), times.front(), median,
           times.back());
  }

  if (options.profile && writer)
    printProfile((*session)->profile(), options.iterations);
  if (options.stats &&
      (*session)->device().info().kind == DeviceKind::Cuda) {
    printf("device: %s\n", (*session)->device().info().str().c_str());
    printf("gemm: cuBLASLt, f32 accumulation\n");
  } else if (options.stats) {
    if (StatusOr<BlasInfo> blas = loadBlas(); blas) {
      printf("gemm: %s, %s kernels\n", blas->gemmLibrary.c_str(),
             blas->gemmKernels.c_str());
      printf("bf16 gemm: %s\n", blas->bf16Gemm.c_str());
      printf("flow gemm: %s\n", blas->flowGemm.c_str());
      printf("conv: %s\n", blas->convLibrary.c_str());
      printf("openblas: %s, %s kernels (%s)\n", blas->library.c_str(),
             blas->kernels.c_str(), blas->chosenBy.c_str());
    } else {
      printf("gemm: %s\n", blas.status().message().c_str());
    }
  }
  if (options.stats && comm)
    for (size_t i = 0; i < (*session)->collectiveBytes().size(); ++i)
      printf("rank %d collective %zu: %llu bytes\n", comm->rank(), i,
             static_cast<unsigned long long>(
                 (*session)->collectiveBytes()[i]));
  if (!writer)
    return 0;
  if (!options.outputDir.empty())
    if (Status s = writeResults(options.outputDir, *results); !s)
      return fail(s.message());
  if (options.print)
    for (size_t i = 0; i < results->size(); ++i)
      printTensor(i, (*results)[i]);
  return 0;
}
