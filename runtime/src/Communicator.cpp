//===- Communicator.cpp - Single-process and MPI communicators ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Communicator.h"
#include "flow/runtime/Npy.h"

#include "Bf16.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>

#include <sched.h>
#include <unistd.h>

#ifdef FLOW_HAVE_MPI
// The C API only (Open MPI's mpi.h pulls in C++ bindings otherwise).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

using namespace flow::runtime;

Group::~Group() = default;
Communicator::~Communicator() = default;

namespace {

/// A group of one: every collective is a copy.
class SelfGroup : public Group {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool callableFromAnyThread() const override { return true; }
  Status allReduce(void *, size_t count, DType dtype, Reduction) override {
    countBytes(count * dtypeSize(dtype));
    return Status::ok();
  }
  Status allGather(const void *send, void *recv,
                   const std::vector<size_t> &counts) override {
    countBytes(counts[0]);
    if (counts[0] && send != recv)
      std::memmove(recv, send, counts[0]);
    return Status::ok();
  }
  Status reduceScatter(const void *send, void *recv,
                       const std::vector<size_t> &counts, DType dtype,
                       Reduction) override {
    size_t bytes = counts[0] * dtypeSize(dtype);
    countBytes(bytes);
    if (bytes && send != recv)
      std::memmove(recv, send, bytes);
    return Status::ok();
  }
  Status allToAll(const void *send, const std::vector<size_t> &sendCounts,
                  void *recv, const std::vector<size_t> &) override {
    countBytes(sendCounts[0]);
    if (sendCounts[0] && send != recv)
      std::memmove(recv, send, sendCounts[0]);
    return Status::ok();
  }
};

class SingleProcess : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  StatusOr<std::unique_ptr<Group>> split(int, int) override {
    return std::unique_ptr<Group>(new SelfGroup());
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

} // namespace

std::unique_ptr<Communicator> flow::runtime::createSingleProcessCommunicator() {
  return std::make_unique<SingleProcess>();
}

StatusOr<double>
flow::runtime::parseCollectiveTimeout(const std::string &text) {
  const char *begin = text.c_str();
  char *end = nullptr;
  errno = 0;
  double seconds = std::strtod(begin, &end);
  // Plain decimal seconds: no hex, infinities, NaN or trailing junk.
  if (text.empty() || end != begin + text.size() || errno != 0 ||
      !std::isfinite(seconds) || seconds < 0 ||
      text.find_first_not_of("0123456789.eE+-") != std::string::npos)
    return Status::error("a timeout is a number of seconds >= 0 (0: wait "
                         "forever), got '" +
                         text + "'");
  return seconds;
}

StatusOr<double> flow::runtime::collectiveTimeoutFromEnvironment() {
  const char *value = std::getenv(kCollectiveTimeoutVariable);
  if (!value)
    return kDefaultCollectiveTimeout;
  StatusOr<double> seconds = parseCollectiveTimeout(value);
  if (!seconds)
    return Status::error(std::string(kCollectiveTimeoutVariable) + ": " +
                         seconds.status().message());
  return seconds;
}

bool flow::runtime::launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

#ifndef FLOW_HAVE_MPI

bool flow::runtime::haveMpi() { return false; }

StatusOr<std::shared_ptr<Communicator>>
flow::runtime::mpiWorld(const MpiOptions &) {
  return Status::error("this Flow runtime was built without MPI (install "
                       "libopenmpi-dev and rebuild)");
}

#else

namespace {

using Clock = std::chrono::steady_clock;

Status mpiError(const char *what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::error(std::string("MPI ") + what +
                       " failed: " + std::string(text, length));
}

//===----------------------------------------------------------------------===//
// Waiting with a deadline
//===----------------------------------------------------------------------===//
//
// Every collective is a non-blocking MPI request that the calling rank
// polls until it completes or the timeout passes. While it waits, a rank
// answers probes: messages on a duplicate of MPI_COMM_WORLD (so they never
// meet a program's own traffic) asking what it is waiting in. When the
// timeout passes, the rank probes the other members of the collective; a
// live peer answers from its own wait loop within a millisecond or so, a
// stopped one (or one stuck outside any collective) does not. The lowest
// rank that timed out prints one line naming the silent ranks and calls
// MPI_Abort, which makes mpirun kill every process of the job, a stopped
// one included.

/// What a rank is waiting in (a probe's answer).
enum class Activity : int64_t {
  Nothing = 0,
  Startup,
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Split,
  Shutdown,
};

const char *activityName(Activity activity) {
  switch (activity) {
  case Activity::Nothing:
    return "nothing";
  case Activity::Startup:
    return "the startup barrier";
  case Activity::AllReduce:
    return "all-reduce";
  case Activity::AllGather:
    return "all-gather";
  case Activity::ReduceScatter:
    return "reduce-scatter";
  case Activity::AllToAll:
    return "all-to-all";
  case Activity::Split:
    return "the barrier before a communicator split";
  case Activity::Shutdown:
    return "the shutdown barrier";
  }
  return "?";
}

/// "all-gather #3" for a numbered collective, the barrier's name otherwise.
std::string describe(Activity activity, uint64_t number) {
  std::string text = activityName(activity);
  if (number)
    text += " #" + std::to_string(number);
  return text;
}

constexpr int kProbeTag = 1;
constexpr int kAnswerTag = 2;

/// This process' part of the MPI job. Only the thread calling MPI touches
/// it: one at a time (MPI_THREAD_SERIALIZED: the main thread, or the
/// runtime's communication thread while collectives are in flight).
struct WorldState {
  /// Seconds a wait may last; 0: forever.
  double timeout = kDefaultCollectiveTimeout;
  std::string program = "flow";
  /// The side channel for probes.
  MPI_Comm probes = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  /// The thread support MPI provides (MPI_THREAD_*).
  int threadLevel = 0;
  /// Collectives started so far; numbers them in messages.
  uint64_t collectives = 0;
  /// What this rank waits in now.
  Activity activity = Activity::Nothing;
  uint64_t number = 0;
};

WorldState &state() {
  static WorldState s;
  return s;
}

/// This process' rank from the launcher's environment (before MPI_Init),
/// or -1.
int rankFromEnvironment() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return -1;
}

std::string rankText(int rank) {
  return rank < 0 ? std::string("a rank") : "rank " + std::to_string(rank);
}

/// "rank 2" or "ranks 1, 3".
std::string ranksText(const std::vector<int> &ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::string secondsText(double seconds) {
  char text[32];
  snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}

Clock::duration toDuration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(seconds));
}

/// How long a rank whose deadline passed waits for its peers' answers
/// (and then for a lower rank to end the job): long enough for a live
/// rank on an oversubscribed core to be scheduled, short beside the
/// timeout.
double graceSeconds(double timeout) {
  return std::min(std::max(timeout * 0.1, 1.0), 10.0);
}

/// A thread that ends the process when a blocking MPI call (MPI_Init, a
/// communicator split, MPI_Finalize) outlives the timeout. It cannot use
/// MPI (MPI is not initialized before MPI_Init returns, and the call it
/// watches holds this process' MPI): it prints its line and exits with
/// status 1, and mpirun ends the job (Open MPI aborts a job when one of
/// its processes exits with a non-zero status).
class Watchdog {
public:
  static Watchdog &get() {
    // Never destroyed: its detached thread may outlive static destructors.
    static Watchdog *watchdog = new Watchdog();
    return *watchdog;
  }

  /// Prints `line` and exits unless disarm() comes within `seconds`
  /// (never when `seconds` is 0).
  void arm(double seconds, std::string line) {
    if (seconds <= 0)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    if (!started) {
      std::thread([this] { watch(); }).detach();
      started = true;
    }
    message = std::move(line);
    deadline = Clock::now() + toDuration(seconds);
    armed = true;
    wake.notify_all();
  }

  void disarm() {
    std::lock_guard<std::mutex> lock(mutex);
    armed = false;
    wake.notify_all();
  }

private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      if (!armed) {
        wake.wait(lock);
        continue;
      }
      if (Clock::now() < deadline) {
        wake.wait_until(lock, deadline);
        continue;
      }
      fputs(message.c_str(), stderr);
      fflush(stderr);
      _exit(1);
    }
  }

  std::mutex mutex;
  std::condition_variable wake;
  bool started = false;
  bool armed = false;
  Clock::time_point deadline;
  std::string message;
};

/// How the ranks' watchdog deadlines are spread: rank r waits
/// min(r, kStaggerRanks) * kStaggerSeconds past the timeout.
constexpr int kStaggerRanks = 4;
constexpr double kStaggerSeconds = 3.0;

/// Arms the watchdog over a blocking MPI call named `what` (MPI_Init, a
/// communicator split, MPI_Finalize). Inside such a call the ranks cannot
/// agree on who reports a missing peer, and Open MPI 4.1's mpirun crashes
/// or hangs now and then when several processes of a job exit inside
/// MPI_Init at once (4 of 67 jobs of 4 ranks with one stopped, on a loaded
/// 2-core machine; none of 120 staggered): each rank waits 3 s more per rank
/// before it, so the lowest live rank ends the job alone and mpirun, whose
/// teardown takes 1-2 s, ends the others first.
void watch(const char *what, int rank) {
  WorldState &w = state();
  double stagger = std::clamp(rank, 0, kStaggerRanks) * kStaggerSeconds;
  Watchdog::get().arm(w.timeout > 0 ? w.timeout + stagger : 0,
                      w.program + ": error: " + rankText(rank) + ": " + what +
                          " did not finish within " + secondsText(w.timeout) +
                          "; a peer process stopped, hung or never started; "
                          "ending the job\n");
}

/// Pauses between two polls of a request that has waited `waited`: a
/// short spin (a collective whose peers are there completes within
/// microseconds), then yielding the core (ranks may share cores), then
/// sleeps of a twentieth of the wait so far, 20 us to 1 ms: a rank that
/// waits long uses next to no CPU, and notices completion at most ~5%
/// late.
void pause(Clock::duration waited) {
  using namespace std::chrono;
  if (waited < microseconds(50))
    return;
  if (waited < milliseconds(1)) {
    sched_yield();
    return;
  }
  microseconds sleep = duration_cast<microseconds>(waited) / 20;
  std::this_thread::sleep_for(
      std::min(std::max(sleep, microseconds(20)), microseconds(1000)));
}

/// Answers the probes that have arrived: what this rank waits in.
void answerProbes() {
  WorldState &w = state();
  if (w.probes == MPI_COMM_NULL)
    return;
  while (true) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kProbeTag, w.probes, &flag, &status) !=
            MPI_SUCCESS ||
        !flag)
      return;
    int64_t token;
    MPI_Recv(&token, 1, MPI_INT64_T, status.MPI_SOURCE, kProbeTag, w.probes,
             MPI_STATUS_IGNORE);
    int64_t answer[2] = {static_cast<int64_t>(w.activity),
                         static_cast<int64_t>(w.number)};
    // Small enough to go eagerly: returns at once.
    MPI_Send(answer, 2, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, w.probes);
  }
}

/// Sleeps about `seconds` while answering probes.
void answerProbesFor(double seconds) {
  Clock::time_point until = Clock::now() + toDuration(seconds);
  while (Clock::now() < until) {
    answerProbes();
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

/// The deadline of the wait in progress passed: asks `peers` (world
/// ranks) what they are doing, names those that do not answer, and ends
/// the job.
[[noreturn]] void endJob(const std::vector<int> &peers) {
  WorldState &w = state();
  size_t n = peers.size();
  std::vector<int64_t> answers(2 * n, 0);
  std::vector<MPI_Request> sends(n, MPI_REQUEST_NULL),
      receives(n, MPI_REQUEST_NULL);
  int64_t token = 0;
  for (size_t i = 0; i < n; ++i) {
    MPI_Irecv(&answers[2 * i], 2, MPI_INT64_T, peers[i], kAnswerTag, w.probes,
              &receives[i]);
    MPI_Isend(&token, 1, MPI_INT64_T, peers[i], kProbeTag, w.probes, &sends[i]);
  }
  std::vector<bool> answered(n, false);
  size_t pending = n;
  double grace = graceSeconds(w.timeout);
  Clock::time_point until = Clock::now() + toDuration(grace);
  while (pending && Clock::now() < until) {
    for (size_t i = 0; i < n; ++i) {
      int done = 0;
      if (!answered[i] &&
          MPI_Test(&receives[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
          done) {
        answered[i] = true;
        --pending;
      }
    }
    answerProbes();
    if (pending)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

  std::vector<int> silent, same;
  std::string elsewhere;
  bool lowerIsAlive = false;
  for (size_t i = 0; i < n; ++i) {
    if (!answered[i]) {
      silent.push_back(peers[i]);
      continue;
    }
    auto activity = static_cast<Activity>(answers[2 * i]);
    auto number = static_cast<uint64_t>(answers[2 * i + 1]);
    lowerIsAlive |= peers[i] < w.rank;
    if (activity == w.activity && number == w.number)
      same.push_back(peers[i]);
    else
      elsewhere += "; rank " + std::to_string(peers[i]) + " is waiting in " +
                   describe(activity, number);
  }
  // One line for the job: a live lower rank timed out too, or soon will,
  // and reports; its MPI_Abort ends this process. Should it not, this rank
  // reports after a while (long enough for mpirun's teardown).
  if (lowerIsAlive)
    answerProbesFor(grace + 5);

  std::string line = w.program + ": error: rank " + std::to_string(w.rank) +
                     ": " + describe(w.activity, w.number) +
                     " timed out after " + secondsText(w.timeout);
  if (!silent.empty())
    line += "; " + ranksText(silent) +
            " did not respond (stopped, or stuck outside any collective)";
  if (!same.empty())
    line += "; " + ranksText(same) + (same.size() == 1 ? " is" : " are") +
            " waiting in the same collective";
  line += elsewhere;
  if (silent.empty())
    line += "; every peer answered: do the ranks run the same collectives?";
  line += "\n";
  fputs(line.c_str(), stderr);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

/// A gap between two polls of a wait longer than this: the process was not
/// running in between.
constexpr std::chrono::milliseconds kStoppedGap(250);

/// Waits for `request`, answering probes, until the timeout passes; then
/// ends the job naming the `peers` (world ranks) that do not answer.
Status waitFor(MPI_Request &request, Activity activity, uint64_t number,
               const std::vector<int> &peers, const char *what) {
  WorldState &w = state();
  w.activity = activity;
  w.number = number;
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + toDuration(w.timeout);
  Clock::time_point last = start;
  Status status = Status::ok();
  while (true) {
    int done = 0;
    int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      status = mpiError(what, rc);
      break;
    }
    if (done)
      break;
    Clock::time_point now = Clock::now();
    // A poll sleeps at most a millisecond. A far longer gap means this
    // process did not run (it was stopped, then continued: Open MPI sends
    // SIGCONT before it kills a job): that time was not spent waiting for
    // the peers, so it does not count towards the timeout. Without this a
    // stopped rank, continued while the job ends, would report a timeout of
    // its own beside the live rank's.
    if (now - last > kStoppedGap)
      deadline += now - last;
    last = now;
    Clock::duration waited = now - start;
    if (waited >= std::chrono::microseconds(50))
      answerProbes();
    if (w.timeout > 0 && now >= deadline)
      endJob(peers);
    pause(waited);
  }
  w.activity = Activity::Nothing;
  w.number = 0;
  return status;
}

/// Every world rank but this one.
std::vector<int> otherRanks() {
  WorldState &w = state();
  std::vector<int> ranks;
  for (int r = 0; r < w.size; ++r)
    if (r != w.rank)
      ranks.push_back(r);
  return ranks;
}

/// A barrier of all ranks with the timeout.
Status timedBarrier(Activity activity) {
  MPI_Request request;
  int rc = MPI_Ibarrier(MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS)
    return mpiError("barrier", rc);
  return waitFor(request, activity, 0, otherRanks(), "barrier");
}

//===----------------------------------------------------------------------===//
// Groups and the world
//===----------------------------------------------------------------------===//

bool mpiType(DType dtype, MPI_Datatype &out) {
  switch (dtype) {
  case DType::F32:
    out = MPI_FLOAT;
    return true;
  case DType::I64:
    out = MPI_INT64_T;
    return true;
  case DType::I32:
    out = MPI_INT32_T;
    return true;
  case DType::F64:
    out = MPI_DOUBLE;
    return true;
  case DType::I16:
    out = MPI_INT16_T;
    return true;
  case DType::I8:
    out = MPI_INT8_T;
    return true;
  case DType::U8:
    out = MPI_UINT8_T;
    return true;
  case DType::U16:
    out = MPI_UINT16_T;
    return true;
  case DType::U32:
    out = MPI_UINT32_T;
    return true;
  case DType::U64:
    out = MPI_UINT64_T;
    return true;
  default:
    return false;
  }
}

/// MPI has no 16-bit floats: f16 and bf16 elements travel as 16-bit
/// words and reduce with user operations that widen each pair to f32,
/// combine them and round back to nearest even (as NCCL reduces them). A
/// maximum with a NaN is NaN, as flow.maximum.
template <float (*Widen)(uint16_t), uint16_t (*Round)(float), bool Max>
void reduceHalves(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i) {
    float x = Widen(a[i]), y = Widen(b[i]);
    float r = Max ? (std::isnan(x) || std::isnan(y) ? x + y : std::max(x, y))
                  : x + y;
    b[i] = Round(r);
  }
}

/// The user operation reducing `dtype` (f16 or bf16), made once.
MPI_Op halfOp(DType dtype, Reduction op) {
  static MPI_Op ops[2][2] = {};
  static std::once_flag made;
  std::call_once(made, [] {
    using namespace detail;
    MPI_Op_create(&reduceHalves<widenF16, roundToF16, false>, 1, &ops[0][0]);
    MPI_Op_create(&reduceHalves<widenF16, roundToF16, true>, 1, &ops[0][1]);
    MPI_Op_create(&reduceHalves<widenBf16, roundToBf16, false>, 1, &ops[1][0]);
    MPI_Op_create(&reduceHalves<widenBf16, roundToBf16, true>, 1, &ops[1][1]);
  });
  return ops[dtype == DType::BF16][op == Reduction::Max];
}

Status reductionArgs(DType dtype, Reduction op, MPI_Datatype &type,
                     MPI_Op &mpiOp) {
  if (dtype == DType::F16 || dtype == DType::BF16) {
    type = MPI_UINT16_T;
    mpiOp = halfOp(dtype, op);
    return Status::ok();
  }
  if (!mpiType(dtype, type))
    return Status::error(std::string("reductions over ") + dtypeName(dtype) +
                         " tensors are not supported (numbers are; booleans "
                         "are not)");
  mpiOp = op == Reduction::Max ? MPI_MAX : MPI_SUM;
  return Status::ok();
}

/// The most elements (or bytes) one MPI call is given, counts and
/// displacements alike: MPI's `int`. FLOW_TEST_MPI_MAX_COUNT lowers it, so
/// that tests run the chunked paths on small tensors.
size_t maxCount() {
  static const size_t limit = [] {
    size_t most = static_cast<size_t>(std::numeric_limits<int>::max());
    if (const char *value = std::getenv("FLOW_TEST_MPI_MAX_COUNT")) {
      char *end = nullptr;
      unsigned long long v = std::strtoull(value, &end, 10);
      if (end != value && *end == 0 && v >= 4 && v < most)
        most = static_cast<size_t>(v);
    }
    return most;
  }();
  return limit;
}

/// Whether \p counts, and their running sums, fit one MPI call.
bool fitsOneCall(const std::vector<size_t> &counts) {
  size_t total = 0;
  for (size_t c : counts) {
    if (c > maxCount())
      return false;
    total += c;
  }
  return total <= maxCount();
}

std::vector<int> toInts(const std::vector<size_t> &counts,
                        std::vector<int> &displs) {
  std::vector<int> out(counts.size());
  displs.assign(counts.size(), 0);
  long long offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    out[i] = static_cast<int>(counts[i]);
    displs[i] = static_cast<int>(offset);
    offset += static_cast<long long>(counts[i]);
  }
  return out;
}

class MpiGroup : public Group {
public:
  explicit MpiGroup(MPI_Comm comm) : comm(comm) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &mySize);
    // The other members' world ranks, to name them when one stops.
    MPI_Group group, world;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> members(mySize), worldRanks(mySize);
    std::iota(members.begin(), members.end(), 0);
    MPI_Group_translate_ranks(group, mySize, members.data(), world,
                              worldRanks.data());
    for (int i = 0; i < mySize; ++i)
      if (i != myRank)
        peers.push_back(worldRanks[i]);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
  }
  ~MpiGroup() override {
    if (comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  bool callableFromAnyThread() const override {
    return state().threadLevel >= MPI_THREAD_SERIALIZED;
  }

  Status allReduce(void *data, size_t count, DType dtype,
                   Reduction op) override {
    MPI_Datatype type = MPI_BYTE;
    MPI_Op mpiOp = MPI_SUM;
    if (Status s = reductionArgs(dtype, op, type, mpiOp); !s)
      return s;
    // Past MPI's int, one call per chunk.
    // (An empty one is still one call: every member makes the same calls.)
    size_t bytes = dtypeSize(dtype), done = 0;
    do {
      size_t n = std::min(count - done, maxCount());
      MPI_Request request;
      countBytes(n * bytes);
      int rc = MPI_Iallreduce(MPI_IN_PLACE,
                              static_cast<uint8_t *>(data) + done * bytes,
                              static_cast<int>(n), type, mpiOp, comm,
                              &request);
      if (Status s = finish(rc, request, Activity::AllReduce, "all-reduce");
          !s)
        return s;
      done += n;
    } while (done < count);
    return Status::ok();
  }
  Status allGather(const void *send, void *recv,
                   const std::vector<size_t> &counts) override {
    if (!fitsOneCall(counts))
      return allGatherInChunks(send, recv, counts);
    std::vector<int> displs;
    std::vector<int> c = toInts(counts, displs);
    countBytes(std::accumulate(counts.begin(), counts.end(), size_t(0)));
    MPI_Request request;
    int rc = MPI_Iallgatherv(send, c[myRank], MPI_BYTE, recv, c.data(),
                             displs.data(), MPI_BYTE, comm, &request);
    return finish(rc, request, Activity::AllGather, "all-gather");
  }
  Status reduceScatter(const void *send, void *recv,
                       const std::vector<size_t> &counts, DType dtype,
                       Reduction op) override {
    MPI_Datatype type = MPI_BYTE;
    MPI_Op mpiOp = MPI_SUM;
    if (Status s = reductionArgs(dtype, op, type, mpiOp); !s)
      return s;
    if (!fitsOneCall(counts))
      return reduceScatterInChunks(send, recv, counts, dtype, type, mpiOp);
    std::vector<int> displs;
    std::vector<int> c = toInts(counts, displs);
    countBytes(std::accumulate(counts.begin(), counts.end(), size_t(0)) *
               dtypeSize(dtype));
    MPI_Request request;
    int rc =
        MPI_Ireduce_scatter(send, recv, c.data(), type, mpiOp, comm, &request);
    return finish(rc, request, Activity::ReduceScatter, "reduce-scatter");
  }
  Status allToAll(const void *send, const std::vector<size_t> &sendCounts,
                  void *recv, const std::vector<size_t> &recvCounts) override {
    // The members' counts differ: they agree on whether one call takes
    // them all (and on the longest block) first.
    uint64_t need[2] = {0, 0};
    for (const std::vector<size_t> *counts : {&sendCounts, &recvCounts}) {
      for (size_t c : *counts)
        need[0] = std::max<uint64_t>(need[0], c);
      need[1] |= !fitsOneCall(*counts);
    }
    MPI_Request agree;
    if (Status s = finish(MPI_Iallreduce(MPI_IN_PLACE, need, 2, MPI_UINT64_T,
                                         MPI_MAX, comm, &agree),
                          agree, Activity::AllToAll, "all-to-all");
        !s)
      return s;
    if (need[1])
      return allToAllInChunks(send, sendCounts, recv, recvCounts, need[0]);
    std::vector<int> sd, rd;
    std::vector<int> sc = toInts(sendCounts, sd), rc_ = toInts(recvCounts, rd);
    countBytes(std::accumulate(sendCounts.begin(), sendCounts.end(), size_t(0)));
    MPI_Request request;
    int rc = MPI_Ialltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv,
                            rc_.data(), rd.data(), MPI_BYTE, comm, &request);
    return finish(rc, request, Activity::AllToAll, "all-to-all");
  }

private:
  // Collectives past MPI's int counts, in rounds of calls that fit it.

  /// Each member's block broadcast from it, a chunk at a time.
  Status allGatherInChunks(const void *send, void *recv,
                           const std::vector<size_t> &counts) {
    auto *out = static_cast<uint8_t *>(recv);
    std::vector<size_t> at(counts.size(), 0);
    for (size_t i = 1; i < counts.size(); ++i)
      at[i] = at[i - 1] + counts[i - 1];
    if (counts[myRank] && out + at[myRank] != send)
      std::memmove(out + at[myRank], send, counts[myRank]);
    for (int r = 0; r < mySize; ++r)
      for (size_t done = 0; done < counts[r]; done += maxCount()) {
        size_t n = std::min(counts[r] - done, maxCount());
        countBytes(n);
        MPI_Request request;
        int rc = MPI_Ibcast(out + at[r] + done, static_cast<int>(n), MPI_BYTE,
                            r, comm, &request);
        if (Status s = finish(rc, request, Activity::AllGather, "all-gather");
            !s)
          return s;
      }
    return Status::ok();
  }

  /// Round j reduces elements [j*C, (j+1)*C) of every member's block (C so
  /// that a round's blocks fit one call), through a staged send buffer.
  Status reduceScatterInChunks(const void *send, void *recv,
                               const std::vector<size_t> &counts, DType dtype,
                               MPI_Datatype type, MPI_Op op) {
    size_t bytes = dtypeSize(dtype),
           chunk = std::max<size_t>(1, maxCount() / counts.size());
    size_t longest = *std::max_element(counts.begin(), counts.end());
    std::vector<uint8_t> stage;
    for (size_t start = 0; start < longest; start += chunk) {
      std::vector<int> c(counts.size());
      size_t staged = 0, from = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        size_t n = counts[i] > start ? std::min(counts[i] - start, chunk) : 0;
        c[i] = static_cast<int>(n);
        staged += n;
      }
      stage.resize(staged * bytes);
      staged = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        if (c[i])
          std::memcpy(stage.data() + staged * bytes,
                      static_cast<const uint8_t *>(send) +
                          (from + start) * bytes,
                      c[i] * bytes);
        staged += c[i];
        from += counts[i];
      }
      countBytes(staged * bytes);
      MPI_Request request;
      int rc = MPI_Ireduce_scatter(
          stage.data(), static_cast<uint8_t *>(recv) + start * bytes, c.data(),
          type, op, comm, &request);
      if (Status s =
              finish(rc, request, Activity::ReduceScatter, "reduce-scatter");
          !s)
        return s;
    }
    return Status::ok();
  }

  /// Round j exchanges bytes [j*C, (j+1)*C) of every block, staged.
  /// \p longest: the longest block of any member (they agree on it).
  Status allToAllInChunks(const void *send,
                          const std::vector<size_t> &sendCounts, void *recv,
                          const std::vector<size_t> &recvCounts,
                          size_t longest) {
    size_t p = sendCounts.size(), chunk = std::max<size_t>(1, maxCount() / p);
    std::vector<size_t> sendAt(p, 0), recvAt(p, 0);
    for (size_t i = 1; i < p; ++i) {
      sendAt[i] = sendAt[i - 1] + sendCounts[i - 1];
      recvAt[i] = recvAt[i - 1] + recvCounts[i - 1];
    }
    auto window = [&](size_t count, size_t start) {
      return count > start ? std::min(count - start, chunk) : size_t(0);
    };
    std::vector<uint8_t> out, in;
    for (size_t start = 0; start < longest; start += chunk) {
      std::vector<size_t> sc(p), rc(p);
      for (size_t i = 0; i < p; ++i) {
        sc[i] = window(sendCounts[i], start);
        rc[i] = window(recvCounts[i], start);
      }
      std::vector<int> sd, rd;
      std::vector<int> sci = toInts(sc, sd), rci = toInts(rc, rd);
      out.resize(std::accumulate(sc.begin(), sc.end(), size_t(0)));
      in.resize(std::accumulate(rc.begin(), rc.end(), size_t(0)));
      for (size_t i = 0; i < p; ++i)
        if (sc[i])
          std::memcpy(out.data() + sd[i],
                      static_cast<const uint8_t *>(send) + sendAt[i] + start,
                      sc[i]);
      countBytes(out.size());
      MPI_Request request;
      int code = MPI_Ialltoallv(out.data(), sci.data(), sd.data(), MPI_BYTE,
                                in.data(), rci.data(), rd.data(), MPI_BYTE,
                                comm, &request);
      if (Status s = finish(code, request, Activity::AllToAll, "all-to-all");
          !s)
        return s;
      for (size_t i = 0; i < p; ++i)
        if (rc[i])
          std::memcpy(static_cast<uint8_t *>(recv) + recvAt[i] + start,
                      in.data() + rd[i], rc[i]);
    }
    return Status::ok();
  }

  /// Waits for a started collective (the arguments it reads live in the
  /// caller's frame until then).
  Status finish(int rc, MPI_Request &request, Activity activity,
                const char *what) {
    if (rc != MPI_SUCCESS)
      return mpiError(what, rc);
    return waitFor(request, activity, ++state().collectives, peers, what);
  }

  MPI_Comm comm;
  int myRank = 0, mySize = 1;
  std::vector<int> peers;
};

class MpiWorld : public Communicator {
public:
  int rank() const override { return state().rank; }
  int size() const override { return state().size; }
  StatusOr<std::unique_ptr<Group>> split(int color, int key) override {
    // MPI has no non-blocking split: meet first, with the timeout, so a
    // rank that stopped is named; the watchdog covers the split itself.
    if (Status s = timedBarrier(Activity::Split); !s)
      return s;
    MPI_Comm comm;
    watch("a communicator split", state().rank);
    int rc = MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm);
    Watchdog::get().disarm();
    if (rc != MPI_SUCCESS)
      return mpiError("communicator split", rc);
    return std::unique_ptr<Group>(new MpiGroup(comm));
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }
};

void finalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  // MPI_Finalize waits for every rank: meet first with the timeout, so a
  // stopped peer is named instead of holding this rank forever.
  (void)timedBarrier(Activity::Shutdown);
  watch("MPI_Finalize", state().rank);
  MPI_Finalize();
  Watchdog::get().disarm();
}

/// FLOW_TEST_STOP_AT_STARTUP=R stops rank R (SIGSTOP) before MPI_Init:
/// how the tests hang the start of a job.
void stopForTesting() {
  const char *value = std::getenv("FLOW_TEST_STOP_AT_STARTUP");
  if (value && *value && std::atoi(value) == rankFromEnvironment())
    raise(SIGSTOP);
}

} // namespace

bool flow::runtime::haveMpi() { return true; }

StatusOr<std::shared_ptr<Communicator>>
flow::runtime::mpiWorld(const MpiOptions &options) {
  static std::shared_ptr<Communicator> world;
  WorldState &w = state();
  double timeout = options.timeout;
  if (timeout < 0) {
    StatusOr<double> fromEnvironment = collectiveTimeoutFromEnvironment();
    if (!fromEnvironment)
      return fromEnvironment.status();
    timeout = *fromEnvironment;
  }
  // Three years is forever, and keeps deadlines far from overflowing.
  w.timeout = std::min(timeout, 1e8);
  w.program = options.programName;
  if (world)
    return world;

  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    stopForTesting();
    // MPI_Init waits for every process of the job to start.
    watch("MPI startup (MPI_Init)", rankFromEnvironment());
    int provided = 0;
    // Serialized: the communication thread runs collectives in flight
    // while the main thread makes no MPI call.
    int rc =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      Watchdog::get().disarm();
      return mpiError("initialization", rc);
    }
    // Errors come back as codes (reported as Flow errors), not aborts.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    std::atexit(finalizeMpi);
  } else {
    watch("duplicating MPI_COMM_WORLD", rankFromEnvironment());
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  // Whoever initialized MPI chose the level (a Python MPI package may have).
  MPI_Query_thread(&w.threadLevel);
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &w.probes);
  Watchdog::get().disarm();
  if (rc != MPI_SUCCESS)
    return mpiError("communicator duplication", rc);
  // Every rank is here, or the job ends naming the one that is not.
  if (Status s = timedBarrier(Activity::Startup); !s)
    return s;
  world = std::make_shared<MpiWorld>();
  return world;
}

#endif
