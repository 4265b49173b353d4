//===- FakeCudaDriver.cpp - A CUDA driver for tests without a GPU ---------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A shared library with the driver-API entry points Flow's runtime opens by
// dlopen ($FLOW_CUDA_DRIVER), so that the CUDA device's host logic runs end
// to end on machines without a GPU. It models what matters to that logic
// and checks the rules a real driver leaves to chance:
//
//   - Device memory is host memory; copies and memsets really move bytes,
//     but only when their stream runs them: every asynchronous operation is
//     queued on its stream and runs at cuStreamSynchronize, cuStreamQuery or
//     cuEventSynchronize. A result read before its stream finished, or a
//     staging buffer overwritten before the stream consumed it, gives wrong
//     bytes, as it would on a GPU (the destination of a device-to-host copy
//     is poisoned until the copy runs).
//   - Rules, each a violation in the report when broken: work only on
//     streams the caller created (never the legacy stream); copies and
//     memsets inside live allocations; no synchronous copies; the host side
//     of an asynchronous copy pinned (cuMemHostAlloc); nothing freed while a
//     queued operation uses it; kernel launches with the entry's parameter
//     count, pointers inside live allocations, block and grid within the
//     device's limits, and shared memory (static, from the PTX, plus
//     dynamic) within 48 KiB unless the function opted in with
//     cuFuncSetAttribute, and never beyond the device's opt-in limit.
//   - Module loading: a cubin is refused on demand (as a driver too old for
//     it refuses it); PTX is refused when its .version is newer than the
//     driver's CUDA version compiles or its .target newer than the device.
//   - Errors on demand: the n-th call of any entry point fails with a given
//     code; cuStreamQuery answers "not ready" a given number of times (or
//     forever, as a stream waiting on a stopped peer).
//
// Kernels do not run: a launch is checked and queued, and leaves its
// outputs as they were. Tests configure the fake and read its report
// through flow_fake_cuda_configure / flow_fake_cuda_report (C functions of
// this library), or through the environment: FLOW_FAKE_CUDA holds a
// configuration ("key=value;..." as below) read at cuInit, and
// FLOW_FAKE_CUDA_REPORT names a file the report is written to at exit.
//
// Configuration keys: devices=N, cc=90, driver=13000 (cuDriverGetVersion's
// value), memory=BYTES, reject-cubin=1, not-ready=N (or "forever"),
// fail=ENTRY:NTH:CODE (repeatable), no-pinned=1 (cuMemHostAlloc fails),
// no-capture=1 (cuStreamBeginCapture fails),
// reset=1 (clears the report and counters).
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr size_t kAlignment = 256;
constexpr unsigned char kPoison = 0xFF;
/// Shared memory a block may opt in to on the fake's device.
int optInShared(int cc) {
  return cc >= 90 ? 232448 : cc >= 80 ? 166912 : 65536;
}

/// Shared memory a block may use without opting in, and sm_90's opt-in
/// limit (227 KiB); sm_80's is 163 KiB.
constexpr int kDefaultShared = 48 * 1024;

struct Range {
  uintptr_t begin = 0, end = 0;
};

struct Allocation {
  size_t size = 0;
  bool pinned = false; // host memory from cuMemHostAlloc
};

struct Op {
  uint64_t seq = 0;
  std::string what;
  std::vector<Range> uses;
  std::function<void()> run;
};

struct Stream {
  unsigned flags = 0;
  std::deque<Op> pending;
  /// Between cuStreamBeginCapture and cuStreamEndCapture: operations are
  /// recorded into `captured` instead of queued.
  bool capturing = false, invalidated = false;
  std::vector<Op> captured;
};

/// A captured graph, and its instantiation: the operations in order.
struct Graph {
  std::vector<Op> ops;
};

struct Entry {
  std::string name;
  /// Each parameter's size in bytes; unknown (cubin) when not `checked`.
  std::vector<int> params;
  bool checked = false;
  int staticShared = 0;
  /// The dynamic shared memory a launch may request: what the static part
  /// leaves of 48 KiB, until cuFuncSetAttribute raises it.
  int maxDynamicShared = -1;
};

struct Module {
  bool ptx = false;
  std::map<std::string, std::unique_ptr<Entry>> entries;
};

struct Event {
  CUstream stream = nullptr;
  uint64_t seq = 0;
  bool recorded = false;
};

struct Failure {
  std::string entry;
  int nth = 0;
  CUresult code = CUDA_SUCCESS;
};

struct State {
  std::recursive_mutex mutex;
  // Configuration.
  int devices = 1, cc = 90, driver = 13000;
  size_t memory = size_t(80) << 30;
  bool rejectCubin = false, noPinned = false, noCapture = false;
  long notReady = 0; // -1: forever
  std::vector<Failure> failures;
  // What happened.
  std::map<std::string, int> calls;
  std::vector<std::string> violations;
  std::vector<std::string> log;
  // Objects.
  bool initialized = false;
  std::map<uintptr_t, Allocation> allocations;
  std::set<Stream *> streams;
  std::set<Module *> modules;
  std::set<Event *> events;
  std::set<Graph *> graphs, execs;
  int retained = 0;
  uint64_t nextSeq = 1;
  size_t allocated = 0;
};

State &state() {
  static State *s = new State; // outlives static destructors
  return *s;
}

thread_local CUcontext current = nullptr;
CUcontext primary() { return reinterpret_cast<CUcontext>(uintptr_t(0x1000)); }

void violation(const std::string &what) {
  State &s = state();
  s.violations.push_back(what);
  s.log.push_back("VIOLATION " + what);
}

/// Counts the call and returns the configured failure of this call, if
/// any.
CUresult enter(const char *entry) {
  State &s = state();
  int n = ++s.calls[entry];
  s.log.push_back(entry);
  for (const Failure &f : s.failures)
    if (f.entry == entry && f.nth == n)
      return f.code;
  return CUDA_SUCCESS;
}

/// The live allocation holding [p, p + n), or null.
const Allocation *findAllocation(uintptr_t p, size_t n, uintptr_t *base) {
  State &s = state();
  auto it = s.allocations.upper_bound(p);
  if (it == s.allocations.begin())
    return nullptr;
  --it;
  if (p + n > it->first + it->second.size)
    return nullptr;
  if (base)
    *base = it->first;
  return &it->second;
}

std::string hex(uintptr_t v) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%zx", size_t(v));
  return text;
}

bool checkDevice(const char *entry, CUdeviceptr p, size_t n) {
  const Allocation *a = findAllocation(uintptr_t(p), n, nullptr);
  if (!a || a->pinned) {
    violation(std::string(entry) + ": device range [" + hex(p) + ", +" +
              std::to_string(n) + ") is not inside a live device allocation");
    return false;
  }
  return true;
}

bool checkHost(const char *entry, const void *p, size_t n) {
  // Where the driver gives no pinned memory, pageable is all there is.
  if (state().noPinned)
    return true;
  const Allocation *a = findAllocation(uintptr_t(p), n, nullptr);
  if (!a || !a->pinned) {
    violation(std::string(entry) + ": host range [" + hex(uintptr_t(p)) +
              ", +" + std::to_string(n) +
              ") is pageable memory (an asynchronous copy's host side must "
              "be pinned, from cuMemHostAlloc)");
    return false;
  }
  return true;
}

bool checkContext(const char *entry) {
  if (current != primary() || state().retained == 0) {
    violation(std::string(entry) + ": no current context");
    return false;
  }
  return true;
}

Stream *checkStream(const char *entry, CUstream stream) {
  State &s = state();
  auto *st = reinterpret_cast<Stream *>(stream);
  if (!stream || !s.streams.count(st)) {
    violation(std::string(entry) + ": work on " +
              (stream ? "an unknown stream" : "the legacy (null) stream") +
              "; every operation goes on the device's own stream");
    return nullptr;
  }
  return st;
}

void enqueue(Stream *st, const std::string &what, std::vector<Range> uses,
             std::function<void()> run) {
  Op op;
  op.seq = state().nextSeq++;
  op.what = what;
  op.uses = std::move(uses);
  op.run = std::move(run);
  if (st->capturing)
    st->captured.push_back(std::move(op));
  else
    st->pending.push_back(std::move(op));
}

/// A call that would wait for a stream being captured: refused, and the
/// capture invalidated (as CUDA does).
bool refuseWhileCapturing(const char *entry, Stream *st) {
  if (!st->capturing)
    return false;
  st->invalidated = true;
  violation(std::string(entry) + " on a stream being captured");
  return true;
}

/// Runs the stream's operations up to and including sequence \p upTo.
void drain(Stream *st, uint64_t upTo = UINT64_MAX) {
  while (!st->pending.empty() && st->pending.front().seq <= upTo) {
    Op op = std::move(st->pending.front());
    st->pending.pop_front();
    if (op.run)
      op.run();
  }
}

/// Whether a queued operation still uses [p, p + n).
const Op *pendingUse(uintptr_t p, size_t n) {
  for (Stream *st : state().streams)
    for (const Op &op : st->pending)
      for (const Range &r : op.uses)
        if (r.begin < p + n && p < r.end)
          return &op;
  return nullptr;
}

void freeing(const char *entry, uintptr_t p) {
  State &s = state();
  auto it = s.allocations.find(p);
  if (it == s.allocations.end()) {
    violation(std::string(entry) + ": " + hex(p) + " is not an allocation");
    return;
  }
  if (const Op *op = pendingUse(p, it->second.size))
    violation(std::string(entry) + ": " + hex(p) +
              " is still used by a queued " + op->what);
  if (!it->second.pinned)
    s.allocated -= it->second.size;
  std::free(reinterpret_cast<void *>(p));
  s.allocations.erase(it);
}

void *allocate(size_t bytes) {
  size_t rounded =
      (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded);
}

//===----------------------------------------------------------------------===//
// Modules: what the fake reads of PTX and cubins
//===----------------------------------------------------------------------===//

/// The highest PTX ISA version (as 10 * major + minor) a driver of CUDA
/// version \p driver (cuDriverGetVersion's 1000 * major + 10 * minor)
/// compiles, from NVIDIA's PTX ISA release notes.
int maxPtxVersion(int driver) {
  static const std::pair<int, int> table[] = {
      {11080, 78}, {12000, 80}, {12010, 81}, {12020, 82},
      {12030, 83}, {12040, 84}, {12050, 85}, {12060, 85},
      {12080, 87}, {12090, 88}, {13000, 90}, {13010, 91}};
  int best = 0;
  for (auto [version, ptx] : table)
    if (driver >= version)
      best = ptx;
  return best;
}

/// Parses "A.B" at \p text as 10 * A + B.
int parseVersion(const std::string &text, size_t at) {
  int major = std::atoi(text.c_str() + at);
  size_t dot = text.find('.', at);
  int minor = dot == std::string::npos ? 0 : std::atoi(text.c_str() + dot + 1);
  return major * 10 + minor;
}

/// The size of the `.shared ... NAME[SIZE];` declarations in \p text, by
/// name (instructions such as ld.shared are not declarations).
std::map<std::string, int> sharedDeclarations(const std::string &text) {
  std::map<std::string, int> found;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos)
      continue;
    std::string decl = line.substr(start);
    // `.extern .shared` is the dynamic shared memory: no static bytes.
    bool external = decl.rfind(".extern", 0) == 0;
    for (const char *prefix : {".extern ", ".visible ", ".global "})
      if (decl.rfind(prefix, 0) == 0)
        decl = decl.substr(std::strlen(prefix));
    if (decl.rfind(".shared", 0) != 0)
      continue;
    size_t semi = decl.find(';');
    decl = decl.substr(0, semi);
    size_t open = decl.rfind('['), close = decl.rfind(']');
    size_t nameEnd = open == std::string::npos ? decl.size() : open;
    size_t nameBegin = decl.find_last_of(" \t", nameEnd - 1);
    if (nameBegin == std::string::npos)
      continue;
    std::string name = decl.substr(nameBegin + 1, nameEnd - nameBegin - 1);
    int elements = open != std::string::npos && close > open + 1
                       ? std::atoi(decl.c_str() + open + 1)
                   : open != std::string::npos ? 0
                                               : 1;
    int bytes = 1;
    for (int bits : {16, 32, 64})
      for (const char *kind : {".b", ".u", ".s", ".f"})
        if (decl.find(kind + std::to_string(bits)) != std::string::npos)
          bytes = bits / 8;
    found[name] = external ? 0 : elements * bytes;
  }
  return found;
}

/// Reads the entries of a PTX module: names, parameter sizes and the static
/// shared memory each uses (declared in its body, or module-level
/// declarations its body names).
CUresult parsePtx(const std::string &ptx, Module &m, std::string &error) {
  State &s = state();
  size_t version = ptx.find(".version");
  size_t target = ptx.find(".target");
  if (version == std::string::npos || target == std::string::npos) {
    error = "ptxas fatal : the PTX has no .version or .target";
    return CUDA_ERROR_INVALID_PTX;
  }
  int v = parseVersion(ptx, version + 8);
  int maxV = maxPtxVersion(s.driver);
  if (v > maxV) {
    error = "ptxas application ptx input, line 1; fatal   : Unsupported "
            ".version " +
            std::to_string(v / 10) + "." + std::to_string(v % 10) +
            "; current version is '" + std::to_string(maxV / 10) + "." +
            std::to_string(maxV % 10) + "'";
    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  }
  size_t sm = ptx.find("sm_", target);
  int targetCC = sm == std::string::npos ? 0 : std::atoi(ptx.c_str() + sm + 3);
  if (targetCC > s.cc) {
    error = "ptxas fatal : the PTX targets sm_" + std::to_string(targetCC) +
            ", newer than the device (sm_" + std::to_string(s.cc) + ")";
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  // Module-level shared declarations: those before the first entry.
  size_t firstEntry = ptx.find(".entry");
  std::map<std::string, int> global =
      sharedDeclarations(ptx.substr(0, firstEntry));
  size_t at = firstEntry;
  while (at != std::string::npos) {
    auto e = std::make_unique<Entry>();
    size_t nameBegin = ptx.find_first_not_of(" \t", at + 6);
    size_t nameEnd = ptx.find_first_of("( \t\n", nameBegin);
    e->name = ptx.substr(nameBegin, nameEnd - nameBegin);
    size_t open = ptx.find('(', nameEnd), close = ptx.find(')', open);
    size_t body = ptx.find('{', close);
    if (open == std::string::npos || close == std::string::npos ||
        body == std::string::npos) {
      error = "ptxas fatal : cannot read entry " + e->name;
      return CUDA_ERROR_INVALID_PTX;
    }
    std::string params = ptx.substr(open + 1, close - open - 1);
    size_t p = 0;
    while ((p = params.find(".param", p)) != std::string::npos) {
      size_t end = params.find(',', p);
      std::string param = params.substr(
          p, end == std::string::npos ? std::string::npos : end - p);
      // ".param .u64 NAME", ".param .u32 NAME" or ".param .align A .b8
      // NAME[BYTES]".
      std::istringstream words(param);
      std::string word, type;
      words >> word >> type;
      int bytes = 8;
      if (type == ".align")
        words >> word >> type;
      if (type.size() > 2)
        bytes = std::atoi(type.c_str() + 2) / 8;
      if (size_t b = param.find('['); b != std::string::npos)
        bytes = std::atoi(param.c_str() + b + 1);
      e->params.push_back(bytes);
      p += 6;
    }
    e->checked = true;
    // The body, to its matching brace.
    int depth = 0;
    size_t end = body;
    for (; end < ptx.size(); ++end) {
      if (ptx[end] == '{')
        ++depth;
      else if (ptx[end] == '}' && --depth == 0)
        break;
    }
    std::string text = ptx.substr(body, end - body);
    for (auto &[name, bytes] : sharedDeclarations(text))
      e->staticShared += bytes;
    for (auto &[name, bytes] : global)
      if (text.find(name) != std::string::npos)
        e->staticShared += bytes;
    std::string name = e->name;
    m.entries[name] = std::move(e);
    at = ptx.find(".entry", end);
  }
  return CUDA_SUCCESS;
}

/// A cubin's entries: the names in its string table (parameters and shared
/// memory are not read).
void parseCubin(const unsigned char *image, Module &m) {
  // The ELF header's section table bounds the image.
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  std::memcpy(&shoff, image + 0x28, 8);
  std::memcpy(&shentsize, image + 0x3A, 2);
  std::memcpy(&shnum, image + 0x3C, 2);
  size_t size = shoff + size_t(shentsize) * shnum;
  std::string bytes(reinterpret_cast<const char *>(image), size);
  // Kernel entry sections are named ".text.<name>".
  size_t at = 0;
  while ((at = bytes.find(std::string(".text.", 6), at)) != std::string::npos) {
    size_t begin = at + 6, end = bytes.find('\0', begin);
    if (end == std::string::npos)
      break;
    std::string name = bytes.substr(begin, end - begin);
    if (!name.empty() && !m.entries.count(name)) {
      auto e = std::make_unique<Entry>();
      e->name = name;
      m.entries[name] = std::move(e);
    }
    at = end;
  }
}

std::string errorName(CUresult r) {
  switch (r) {
#define FAKE_NAME(x)                                                           \
  case x:                                                                      \
    return #x;
    FAKE_NAME(CUDA_SUCCESS)
    FAKE_NAME(CUDA_ERROR_INVALID_VALUE)
    FAKE_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    FAKE_NAME(CUDA_ERROR_NOT_INITIALIZED)
    FAKE_NAME(CUDA_ERROR_NO_DEVICE)
    FAKE_NAME(CUDA_ERROR_INVALID_DEVICE)
    FAKE_NAME(CUDA_ERROR_INVALID_IMAGE)
    FAKE_NAME(CUDA_ERROR_INVALID_CONTEXT)
    FAKE_NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
    FAKE_NAME(CUDA_ERROR_INVALID_PTX)
    FAKE_NAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    FAKE_NAME(CUDA_ERROR_INVALID_HANDLE)
    FAKE_NAME(CUDA_ERROR_NOT_FOUND)
    FAKE_NAME(CUDA_ERROR_NOT_READY)
    FAKE_NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    FAKE_NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    FAKE_NAME(CUDA_ERROR_LAUNCH_FAILED)
    FAKE_NAME(CUDA_ERROR_UNKNOWN)
#undef FAKE_NAME
  default:
    return "";
  }
}

void configure(const std::string &spec) {
  State &s = state();
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ';')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      continue;
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "devices")
      s.devices = std::atoi(value.c_str());
    else if (key == "cc")
      s.cc = std::atoi(value.c_str());
    else if (key == "driver")
      s.driver = std::atoi(value.c_str());
    else if (key == "memory")
      s.memory = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "reject-cubin")
      s.rejectCubin = value == "1";
    else if (key == "no-pinned")
      s.noPinned = value == "1";
    else if (key == "no-capture")
      s.noCapture = value == "1";
    else if (key == "not-ready")
      s.notReady = value == "forever" ? -1 : std::atol(value.c_str());
    else if (key == "fail") {
      Failure f;
      size_t a = value.find(':'), b = value.rfind(':');
      f.entry = value.substr(0, a);
      f.nth = std::atoi(value.c_str() + a + 1);
      f.code = static_cast<CUresult>(std::atoi(value.c_str() + b + 1));
      s.failures.push_back(f);
    } else if (key == "reset") {
      s.calls.clear();
      s.violations.clear();
      s.log.clear();
      s.failures.clear();
      s.rejectCubin = s.noPinned = s.noCapture = false;
      s.notReady = 0;
      s.driver = 13000;
      s.cc = 90;
    } else {
      violation("unknown fake configuration key '" + key + "'");
    }
  }
}

std::string report() {
  State &s = state();
  std::ostringstream out;
  out << "violations " << s.violations.size() << "\n";
  for (const std::string &v : s.violations)
    out << "violation: " << v << "\n";
  size_t device = 0, pinned = 0;
  for (auto &[p, a] : s.allocations)
    (a.pinned ? pinned : device) += 1;
  out << "live device allocations " << device << "\n";
  out << "live pinned allocations " << pinned << "\n";
  out << "live streams " << s.streams.size() << "\n";
  out << "live modules " << s.modules.size() << "\n";
  out << "live graphs " << s.graphs.size() + s.execs.size() << "\n";
  for (auto &[name, n] : s.calls)
    out << "calls " << name << " " << n << "\n";
  return out.str();
}

struct ReportAtExit {
  ~ReportAtExit() {
    if (const char *path = std::getenv("FLOW_FAKE_CUDA_REPORT"))
      if (FILE *f = std::fopen(path, "w")) {
        std::string text = report();
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
      }
  }
} reportAtExit;

#define FAKE_ENTER(name)                                                       \
  std::lock_guard<std::recursive_mutex> lock(state().mutex);                   \
  if (CUresult injected = enter(name); injected != CUDA_SUCCESS)               \
  return injected

} // namespace

//===----------------------------------------------------------------------===//
// The control interface
//===----------------------------------------------------------------------===//

extern "C" {

/// Applies a configuration ("key=value;..."; see the file comment).
__attribute__((visibility("default"))) void
flow_fake_cuda_configure(const char *spec) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  configure(spec ? spec : "");
}

/// The report: the violations, what is still alive and the calls made. The
/// text stays valid until the next call.
__attribute__((visibility("default"))) const char *flow_fake_cuda_report() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  static std::string text;
  text = report();
  return text.c_str();
}

//===----------------------------------------------------------------------===//
// The driver API
//===----------------------------------------------------------------------===//

CUresult CUDAAPI cuInit(unsigned int) {
  FAKE_ENTER("cuInit");
  State &s = state();
  if (!s.initialized)
    if (const char *spec = std::getenv("FLOW_FAKE_CUDA"))
      configure(spec);
  s.initialized = true;
  return s.devices > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  FAKE_ENTER("cuDriverGetVersion");
  *version = state().driver;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **out) {
  static std::map<int, std::string> names;
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  std::string name = errorName(error);
  if (name.empty())
    return CUDA_ERROR_INVALID_VALUE;
  *out = (names[int(error)] = name).c_str();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **out) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  if (errorName(error).empty())
    return CUDA_ERROR_INVALID_VALUE;
  *out = "reported by Flow's fake CUDA driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = state().devices;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= state().devices)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int length, CUdevice) {
  FAKE_ENTER("cuDeviceGetName");
  std::snprintf(name, size_t(length), "Fake GPU sm_%d", state().cc);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                                      CUdevice) {
  FAKE_ENTER("cuDeviceGetAttribute");
  State &s = state();
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = s.cc / 10;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = s.cc % 10;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *value = kDefaultShared;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = optInShared(s.cc);
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice) {
  FAKE_ENTER("cuDeviceTotalMem");
  *bytes = state().memory;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  ++state().retained;
  *context = primary();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  if (state().retained == 0)
    violation("cuDevicePrimaryCtxRelease: the context was not retained");
  else
    --state().retained;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  FAKE_ENTER("cuCtxSetCurrent");
  if (context && context != primary())
    return CUDA_ERROR_INVALID_CONTEXT;
  current = context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total) {
  FAKE_ENTER("cuMemGetInfo");
  State &s = state();
  *total = s.memory;
  *free = s.memory - std::min(s.memory, s.allocated);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *out, size_t bytes) {
  FAKE_ENTER("cuMemAlloc");
  State &s = state();
  if (!checkContext("cuMemAlloc"))
    return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (s.allocated + bytes > s.memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = allocate(bytes);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  // Fresh device memory holds leftovers, not zeros.
  std::memset(p, 0xA5, bytes);
  s.allocations[uintptr_t(p)] = Allocation{bytes, false};
  s.allocated += bytes;
  *out = CUdeviceptr(uintptr_t(p));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  FAKE_ENTER("cuMemFree");
  freeing("cuMemFree", uintptr_t(p));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **out, size_t bytes, unsigned int) {
  FAKE_ENTER("cuMemHostAlloc");
  State &s = state();
  if (!checkContext("cuMemHostAlloc"))
    return CUDA_ERROR_INVALID_CONTEXT;
  if (s.noPinned)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = allocate(bytes);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  s.allocations[uintptr_t(p)] = Allocation{bytes, true};
  *out = p;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void *p) {
  FAKE_ENTER("cuMemFreeHost");
  freeing("cuMemFreeHost", uintptr_t(p));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr, const void *, size_t) {
  FAKE_ENTER("cuMemcpyHtoD");
  violation("cuMemcpyHtoD: a synchronous copy (on the legacy stream, not "
            "ordered with the device's non-blocking stream)");
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemcpyDtoH(void *, CUdeviceptr, size_t) {
  FAKE_ENTER("cuMemcpyDtoH");
  violation("cuMemcpyDtoH: a synchronous copy (on the legacy stream, not "
            "ordered with the device's non-blocking stream)");
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                   size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyHtoDAsync");
  Stream *st = checkStream("cuMemcpyHtoDAsync", stream);
  if (!checkContext("cuMemcpyHtoDAsync") || !st ||
      !checkDevice("cuMemcpyHtoDAsync", dst, bytes) ||
      !checkHost("cuMemcpyHtoDAsync", src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  // The source is read when the stream gets to the copy.
  enqueue(st, "host-to-device copy",
          {{uintptr_t(src), uintptr_t(src) + bytes},
           {uintptr_t(dst), uintptr_t(dst) + bytes}},
          [=] { std::memcpy(reinterpret_cast<void *>(dst), src, bytes); });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                                   CUstream stream) {
  FAKE_ENTER("cuMemcpyDtoHAsync");
  Stream *st = checkStream("cuMemcpyDtoHAsync", stream);
  if (!checkContext("cuMemcpyDtoHAsync") || !st ||
      !checkDevice("cuMemcpyDtoHAsync", src, bytes) ||
      !checkHost("cuMemcpyDtoHAsync", dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  // Until the stream runs the copy, the destination holds nothing useful
  // (unless work queued before the copy still reads it).
  if (!pendingUse(uintptr_t(dst), bytes))
    std::memset(dst, kPoison, bytes);
  enqueue(st, "device-to-host copy",
          {{uintptr_t(src), uintptr_t(src) + bytes},
           {uintptr_t(dst), uintptr_t(dst) + bytes}},
          [=] { std::memcpy(dst, reinterpret_cast<void *>(src), bytes); });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src,
                                   size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyDtoDAsync");
  Stream *st = checkStream("cuMemcpyDtoDAsync", stream);
  if (!checkContext("cuMemcpyDtoDAsync") || !st ||
      !checkDevice("cuMemcpyDtoDAsync", dst, bytes) ||
      !checkDevice("cuMemcpyDtoDAsync", src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  enqueue(st, "device-to-device copy",
          {{uintptr_t(src), uintptr_t(src) + bytes},
           {uintptr_t(dst), uintptr_t(dst) + bytes}},
          [=] {
            std::memmove(reinterpret_cast<void *>(dst),
                         reinterpret_cast<void *>(src), bytes);
          });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D *copy, CUstream stream) {
  FAKE_ENTER("cuMemcpy2DAsync");
  Stream *st = checkStream("cuMemcpy2DAsync", stream);
  CUDA_MEMCPY2D m = *copy;
  if (!checkContext("cuMemcpy2DAsync") || !st ||
      m.srcMemoryType != CU_MEMORYTYPE_DEVICE ||
      m.dstMemoryType != CU_MEMORYTYPE_DEVICE || m.Height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (m.WidthInBytes > m.srcPitch || m.WidthInBytes > m.dstPitch) {
    violation("cuMemcpy2DAsync: a row is wider than its pitch");
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t srcSpan = m.srcPitch * (m.Height - 1) + m.WidthInBytes;
  size_t dstSpan = m.dstPitch * (m.Height - 1) + m.WidthInBytes;
  CUdeviceptr src = m.srcDevice + m.srcXInBytes + m.srcY * m.srcPitch;
  CUdeviceptr dst = m.dstDevice + m.dstXInBytes + m.dstY * m.dstPitch;
  if (!checkDevice("cuMemcpy2DAsync", src, srcSpan) ||
      !checkDevice("cuMemcpy2DAsync", dst, dstSpan))
    return CUDA_ERROR_INVALID_VALUE;
  enqueue(st, "2-D copy",
          {{uintptr_t(src), uintptr_t(src) + srcSpan},
           {uintptr_t(dst), uintptr_t(dst) + dstSpan}},
          [=] {
            for (size_t r = 0; r < m.Height; ++r)
              std::memmove(reinterpret_cast<void *>(dst + r * m.dstPitch),
                           reinterpret_cast<void *>(src + r * m.srcPitch),
                           m.WidthInBytes);
          });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value,
                                 size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemsetD8Async");
  Stream *st = checkStream("cuMemsetD8Async", stream);
  if (!checkContext("cuMemsetD8Async") || !st ||
      !checkDevice("cuMemsetD8Async", dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  enqueue(st, "memset", {{uintptr_t(dst), uintptr_t(dst) + bytes}},
          [=] { std::memset(reinterpret_cast<void *>(dst), value, bytes); });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  FAKE_ENTER("cuStreamCreate");
  if (!checkContext("cuStreamCreate"))
    return CUDA_ERROR_INVALID_CONTEXT;
  auto *st = new Stream;
  st->flags = flags;
  state().streams.insert(st);
  *stream = reinterpret_cast<CUstream>(st);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  FAKE_ENTER("cuStreamDestroy");
  Stream *st = checkStream("cuStreamDestroy", stream);
  if (!st)
    return CUDA_ERROR_INVALID_HANDLE;
  drain(st);
  state().streams.erase(st);
  delete st;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  FAKE_ENTER("cuStreamSynchronize");
  Stream *st = checkStream("cuStreamSynchronize", stream);
  if (!st)
    return CUDA_ERROR_INVALID_HANDLE;
  if (refuseWhileCapturing("cuStreamSynchronize", st))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (state().notReady < 0)
    violation("cuStreamSynchronize on a stream that never finishes (a "
              "stopped peer): the caller waits forever");
  drain(st);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream stream) {
  FAKE_ENTER("cuStreamQuery");
  Stream *st = checkStream("cuStreamQuery", stream);
  if (!st)
    return CUDA_ERROR_INVALID_HANDLE;
  if (refuseWhileCapturing("cuStreamQuery", st))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  State &s = state();
  if (s.notReady < 0)
    return CUDA_ERROR_NOT_READY;
  if (s.notReady > 0) {
    --s.notReady;
    return CUDA_ERROR_NOT_READY;
  }
  drain(st);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int) {
  FAKE_ENTER("cuEventCreate");
  auto *e = new Event;
  state().events.insert(e);
  *event = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  FAKE_ENTER("cuEventDestroy");
  auto *e = reinterpret_cast<Event *>(event);
  if (!state().events.erase(e))
    return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER("cuEventRecord");
  auto *e = reinterpret_cast<Event *>(event);
  Stream *st = checkStream("cuEventRecord", stream);
  if (!state().events.count(e) || !st)
    return CUDA_ERROR_INVALID_HANDLE;
  e->stream = stream;
  e->recorded = true;
  e->seq = state().nextSeq;
  enqueue(st, "event record", {}, nullptr);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  FAKE_ENTER("cuEventSynchronize");
  auto *e = reinterpret_cast<Event *>(event);
  if (!state().events.count(e))
    return CUDA_ERROR_INVALID_HANDLE;
  if (e->recorded)
    if (Stream *st = checkStream("cuEventSynchronize", e->stream))
      drain(st, e->seq);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  FAKE_ENTER("cuEventElapsedTime");
  auto *a = reinterpret_cast<Event *>(start),
       *b = reinterpret_cast<Event *>(end);
  if (!state().events.count(a) || !state().events.count(b))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = 0.001f * float(b->seq - a->seq);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                    unsigned int count, CUjit_option *options,
                                    void **values) {
  FAKE_ENTER("cuModuleLoadDataEx");
  State &s = state();
  if (!checkContext("cuModuleLoadDataEx"))
    return CUDA_ERROR_INVALID_CONTEXT;
  const auto *bytes = static_cast<const unsigned char *>(image);
  auto m = std::make_unique<Module>();
  std::string error;
  CUresult result = CUDA_SUCCESS;
  if (std::memcmp(bytes,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    if (s.rejectCubin)
      result = CUDA_ERROR_NO_BINARY_FOR_GPU;
    else
      parseCubin(bytes, *m);
  } else {
    m->ptx = true;
    result = parsePtx(reinterpret_cast<const char *>(image), *m, error);
  }
  // The JIT's error log, where the caller gave one.
  char *logBuffer = nullptr;
  size_t logSize = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      logBuffer = static_cast<char *>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      logSize = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (result != CUDA_SUCCESS) {
    if (logBuffer && logSize && !error.empty())
      std::snprintf(logBuffer, logSize, "%s", error.c_str());
    return result;
  }
  Module *raw = m.release();
  s.modules.insert(raw);
  *module = reinterpret_cast<CUmodule>(raw);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  FAKE_ENTER("cuModuleUnload");
  auto *m = reinterpret_cast<Module *>(module);
  if (!state().modules.erase(m))
    return CUDA_ERROR_INVALID_HANDLE;
  for (Stream *st : state().streams)
    if (!st->pending.empty())
      violation("cuModuleUnload while a stream has queued work");
  delete m;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module,
                                     const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  auto *m = reinterpret_cast<Module *>(module);
  if (!state().modules.count(m))
    return CUDA_ERROR_INVALID_HANDLE;
  auto it = m->entries.find(name);
  if (it == m->entries.end())
    return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(it->second.get());
  return CUDA_SUCCESS;
}

/// The module holding \p function, or null once unloaded.
static const Module *owner(CUfunction function) {
  for (Module *m : state().modules)
    for (auto &[name, e] : m->entries)
      if (reinterpret_cast<CUfunction>(e.get()) == function)
        return m;
  return nullptr;
}

CUresult CUDAAPI cuFuncGetAttribute(int *value, CUfunction_attribute attribute,
                                    CUfunction function) {
  FAKE_ENTER("cuFuncGetAttribute");
  if (!owner(function))
    return CUDA_ERROR_INVALID_HANDLE;
  auto *e = reinterpret_cast<Entry *>(function);
  switch (attribute) {
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    *value = e->staticShared;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *value = e->maxDynamicShared >= 0 ? e->maxDynamicShared
                                      : kDefaultShared - e->staticShared;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function,
                                    CUfunction_attribute attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  if (!owner(function))
    return CUDA_ERROR_INVALID_HANDLE;
  auto *e = reinterpret_cast<Entry *>(function);
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return CUDA_ERROR_INVALID_VALUE;
  int optIn = optInShared(state().cc);
  if (value < 0 || value + e->staticShared > optIn)
    return CUDA_ERROR_INVALID_VALUE;
  e->maxDynamicShared = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy,
                                unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream stream,
                                void **params, void **extra) {
  FAKE_ENTER("cuLaunchKernel");
  State &s = state();
  Stream *st = checkStream("cuLaunchKernel", stream);
  if (!checkContext("cuLaunchKernel") || !st)
    return CUDA_ERROR_INVALID_VALUE;
  if (!owner(function)) {
    violation("cuLaunchKernel: the function's module is not loaded");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  auto *e = reinterpret_cast<Entry *>(function);
  std::string what = "cuLaunchKernel " + e->name;
  if (extra)
    violation(what + ": parameters passed through `extra`");
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      gx > 0x7fffffffu || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 ||
      bz > 64 || uint64_t(bx) * by * bz > 1024) {
    violation(what + ": grid (" + std::to_string(gx) + ", " +
              std::to_string(gy) + ", " + std::to_string(gz) + ") or block (" +
              std::to_string(bx) + ", " + std::to_string(by) + ", " +
              std::to_string(bz) + ") outside the device's limits");
    return CUDA_ERROR_INVALID_VALUE;
  }
  int optIn = optInShared(s.cc);
  int allowed = e->maxDynamicShared >= 0 ? e->maxDynamicShared
                                         : kDefaultShared - e->staticShared;
  if (int(shared) > allowed || e->staticShared + int(shared) > optIn) {
    violation(what + ": " + std::to_string(e->staticShared) +
              " bytes of static and " + std::to_string(shared) +
              " of dynamic shared memory; the function allows " +
              std::to_string(allowed) +
              " dynamic bytes (cuFuncSetAttribute raises it up to the "
              "device's opt-in limit, " +
              std::to_string(optIn) + ")");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (e->staticShared > kDefaultShared)
    violation(what + ": " + std::to_string(e->staticShared) +
              " bytes of static shared memory (more than 48 KiB must be "
              "dynamic)");
  std::vector<Range> uses;
  if (e->checked) {
    if (!params && !e->params.empty()) {
      violation(what + ": no parameters");
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < e->params.size(); ++i) {
      if (e->params[i] != 8)
        continue;
      uint64_t value = 0;
      std::memcpy(&value, params[i], 8);
      uintptr_t base = 0;
      if (value == 0)
        continue; // an empty buffer
      const Allocation *a = findAllocation(uintptr_t(value), 1, &base);
      if (!a || a->pinned)
        violation(what + ": parameter " + std::to_string(i) + " (" +
                  hex(uintptr_t(value)) +
                  ") is not inside a live device allocation");
      else
        uses.push_back({base, base + a->size});
    }
  }
  enqueue(st, "launch of " + e->name, std::move(uses), nullptr);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  FAKE_ENTER("cuStreamBeginCapture");
  Stream *st = checkStream("cuStreamBeginCapture", stream);
  if (!st)
    return CUDA_ERROR_INVALID_HANDLE;
  if (st->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  if (state().noCapture)
    return CUDA_ERROR_NOT_SUPPORTED;
  st->capturing = true;
  st->invalidated = false;
  st->captured.clear();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  FAKE_ENTER("cuStreamEndCapture");
  Stream *st = checkStream("cuStreamEndCapture", stream);
  if (!st)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!st->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  st->capturing = false;
  *graph = nullptr;
  if (st->invalidated) {
    st->captured.clear();
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  auto *g = new Graph;
  g->ops = std::move(st->captured);
  st->captured.clear();
  state().graphs.insert(g);
  *graph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *exec, CUgraph graph,
                                    unsigned long long) {
  FAKE_ENTER("cuGraphInstantiate");
  auto *g = reinterpret_cast<Graph *>(graph);
  if (!state().graphs.count(g))
    return CUDA_ERROR_INVALID_HANDLE;
  auto *e = new Graph(*g);
  state().execs.insert(e);
  *exec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  FAKE_ENTER("cuGraphDestroy");
  auto *g = reinterpret_cast<Graph *>(graph);
  if (!state().graphs.erase(g))
    return CUDA_ERROR_INVALID_HANDLE;
  delete g;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  FAKE_ENTER("cuGraphExecDestroy");
  auto *e = reinterpret_cast<Graph *>(exec);
  if (!state().execs.erase(e))
    return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  FAKE_ENTER("cuGraphLaunch");
  auto *e = reinterpret_cast<Graph *>(exec);
  Stream *st = checkStream("cuGraphLaunch", stream);
  if (!state().execs.count(e) || !st)
    return CUDA_ERROR_INVALID_HANDLE;
  // The graph's operations, queued again with the addresses they were
  // captured with: those must still be live.
  for (const Op &op : e->ops) {
    for (const Range &r : op.uses)
      if (!findAllocation(r.begin, r.end - r.begin, nullptr))
        violation("cuGraphLaunch: the graph's " + op.what + " uses [" +
                  hex(r.begin) + ", " + hex(r.end) +
                  "), which is no longer allocated");
    enqueue(st, op.what + " (graph)", op.uses, op.run);
  }
  return CUDA_SUCCESS;
}

} // extern "C"
