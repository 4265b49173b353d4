//===- CollectiveTest.cpp - Collective commands ---------------------------===//
//
// Part of the Flow project.
//
// Loading checks every collective (mesh axes, shapes that are pieces of
// each other, buffer sizes, reduction types); a mesh executable needs as
// many processes as devices; on a mesh of one device the collectives run
// as copies. Multi-process runs are tested under mpirun by
// test/python/test_distributed.py.
//
//===----------------------------------------------------------------------===//

#include "../../runtime/src/Collectives.h"
#include "FbinBuilder.h"
#include "flow/runtime/SafeTensors.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include <sys/wait.h>

using namespace flow::runtime;
using namespace flow::test;

namespace {

/// forward(x: f32[4,3]) -> f32[8,3]: an all-gather over mesh axis 0.
ExecutableSpec gatherSpec(std::vector<int64_t> mesh) {
  ExecutableSpec spec;
  spec.mesh = std::move(mesh);
  FunctionSpec f;
  f.name = "forward";
  f.inputs = {{DType::F32, {4, 3}}};
  f.outputs = {{DType::F32, {8, 3}}};
  f.ranks = {0};
  CollectiveSpec c;
  c.inputShape = {4, 3};
  c.outputShape = {8, 3};
  c.input = inputRef(0, 48);
  c.output = outputRef(0, 96);
  f.commands = {c};
  spec.functions.push_back(f);
  return spec;
}

CollectiveSpec &collective(ExecutableSpec &spec) {
  return std::get<CollectiveSpec>(spec.functions[0].commands[0]);
}

} // namespace

TEST(CollectiveTest, LoadsAndRecordsTheMesh) {
  auto exe = Executable::loadBytes(build(gatherSpec({2})));
  ASSERT_TRUE(exe) << exe.status().message();
  EXPECT_EQ((*exe)->mesh(), std::vector<int64_t>{2});
  const FunctionSignature &sig = (*exe)->functions()[0];
  EXPECT_EQ(sig.ranks, std::vector<int64_t>{0});
  EXPECT_EQ(sig.globalName, "forward");
  ASSERT_EQ(sig.globalInputs.size(), 1u);
  EXPECT_EQ(sig.globalInputs[0].spec.shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(*(*exe)->findFunction("forward", 0), 0u);
}

TEST(CollectiveTest, RefusesBadCollectives) {
  ExecutableSpec spec = gatherSpec({2});
  collective(spec).meshAxes = {1};
  EXPECT_LOAD_ERROR(spec, "invalid mesh axis 1");

  spec = gatherSpec({2});
  collective(spec).outputShape = {10, 3};
  collective(spec).output = outputRef(0, 96);
  EXPECT_LOAD_ERROR(spec, "shapes do not fit the collective over 2 devices");

  spec = gatherSpec({2});
  collective(spec).dim = 2;
  EXPECT_LOAD_ERROR(spec, "dimension 2 is out of range");

  spec = gatherSpec({2});
  collective(spec).output = outputRef(0, 48);
  EXPECT_LOAD_ERROR(spec, "buffers hold 48 and 48 bytes but the shapes need "
                          "48 and 96");

  spec = gatherSpec({2});
  collective(spec).kind = fbs::CollectiveKind::AllReduce;
  collective(spec).dtype = DType::I1;
  collective(spec).outputShape = {4, 3};
  EXPECT_LOAD_ERROR(spec, "reductions over i1 tensors are not supported");

  spec = gatherSpec({2});
  collective(spec).kind = fbs::CollectiveKind::AllToAll;
  collective(spec).splitDim = collective(spec).concatDim = 0;
  EXPECT_LOAD_ERROR(spec, "must cut and join different dimensions");

  spec = gatherSpec({});
  spec.functions[0].ranks.clear();
  EXPECT_LOAD_ERROR(spec, "needs a mesh but the executable has none");

  spec = gatherSpec({2});
  spec.functions[0].ranks = {2};
  EXPECT_LOAD_ERROR(spec, "rank 2 is outside the mesh of 2 devices");

  spec = gatherSpec({0});
  EXPECT_LOAD_ERROR(spec, "invalid mesh dimension 0");
}

TEST(CollectiveTest, NeedsOneProcessPerDevice) {
  auto exe = Executable::loadBytes(build(gatherSpec({2})));
  ASSERT_TRUE(exe);
  auto session = Session::create(std::move(*exe), RuntimeOptions{1});
  ASSERT_FALSE(session);
  EXPECT_EQ(session.status().message(),
            "the executable runs on a mesh of 2 devices but 1 process is "
            "running it (start it with mpirun -np 2)");
}

TEST(CollectiveTest, RunsOnAMeshOfOne) {
  // A group of one gathers its own piece: the 4x3 input into a 4x3 output.
  ExecutableSpec spec = gatherSpec({1});
  collective(spec).outputShape = {4, 3};
  collective(spec).output = outputRef(0, 48);
  spec.functions[0].outputs = {{DType::F32, {4, 3}}};
  auto exe = Executable::loadBytes(build(spec));
  ASSERT_TRUE(exe) << exe.status().message();
  auto session = Session::create(std::move(*exe), RuntimeOptions{1});
  ASSERT_TRUE(session) << session.status().message();
  HostTensor x;
  x.dtype = DType::F32;
  x.shape = {4, 3};
  x.data.resize(48);
  for (size_t i = 0; i < 48; ++i)
    x.data[i] = static_cast<uint8_t>(i);
  auto out = (*session)->runGlobal("forward", {x});
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_EQ((*out)[0].data, x.data);
  EXPECT_EQ((*session)->collectiveBytes(), std::vector<uint64_t>{48});
  // Global inputs are checked against the global signature.
  x.shape = {3, 4};
  auto bad = (*session)->runGlobal("forward", {x});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().message(), "input 0: expected f32[4,3], got f32[3,4]");
}

namespace {

/// forward(x: f32[4], y: f32[4]) -> (f32[4], f32[4]) on a mesh of one: an
/// async all-reduce of x into output 0, a copy of y into output 1 while
/// it is in flight, then the wait.
ExecutableSpec asyncSpec() {
  ExecutableSpec spec;
  spec.mesh = {1};
  FunctionSpec f;
  f.name = "forward";
  f.inputs = {{DType::F32, {4}}, {DType::F32, {4}}};
  f.outputs = {{DType::F32, {4}}, {DType::F32, {4}}};
  f.ranks = {0};
  CollectiveSpec c;
  c.kind = fbs::CollectiveKind::AllReduce;
  c.inputShape = c.outputShape = {4};
  c.input = inputRef(0, 16);
  c.output = outputRef(0, 16);
  c.async = true;
  CopySpec copy;
  copy.src = inputRef(1, 16);
  copy.dst = outputRef(1, 16);
  f.commands = {c, copy, WaitSpec{0}};
  spec.functions.push_back(f);
  return spec;
}

/// A group of one whose all-reduce waits until the test releases it (or 30
/// seconds pass), adding 1 to every element so its work is seen.
class GatedGroup : public Group {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool callableFromAnyThread() const override { return anyThread; }
  Status allReduce(void *data, size_t count, DType, Reduction) override {
    std::unique_lock<std::mutex> lock(mutex);
    entered = true;
    changed.notify_all();
    changed.wait_for(lock, std::chrono::seconds(30), [&] { return open; });
    for (size_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] += 1;
    countBytes(count * 4);
    return Status::ok();
  }
  Status allGather(const void *send, void *recv,
                   const std::vector<size_t> &counts) override {
    std::memmove(recv, send, counts[0]);
    return Status::ok();
  }
  Status reduceScatter(const void *, void *, const std::vector<size_t> &,
                       DType, Reduction) override {
    return Status::error("unused");
  }
  Status allToAll(const void *, const std::vector<size_t> &, void *,
                  const std::vector<size_t> &) override {
    return Status::error("unused");
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    changed.notify_all();
  }
  /// Waits until the all-reduce has started.
  bool waitEntered() {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10),
                            [&] { return entered; });
  }

  bool anyThread = true;

private:
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false, entered = false;
};

class GatedCommunicator : public Communicator {
public:
  explicit GatedCommunicator(bool anyThread) : anyThread(anyThread) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  StatusOr<std::unique_ptr<Group>> split(int, int) override {
    auto g = std::make_unique<GatedGroup>();
    g->anyThread = anyThread;
    groups.push_back(g.get());
    return std::unique_ptr<Group>(std::move(g));
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }
  bool anyThread;
  std::vector<GatedGroup *> groups;
};

/// asyncSpec's function called on a thread of its own, over a
/// GatedCommunicator: inputs x = 1..4, y = 10..13, outputs r and z.
struct GatedRun {
  std::shared_ptr<GatedCommunicator> comm;
  std::unique_ptr<Session> session;
  std::vector<float> r = std::vector<float>(4, 0),
                     z = std::vector<float>(4, 0);
  Status status = Status::ok();
  std::thread call;

  /// Loads and starts the call; an error if the session cannot be made.
  Status start(bool anyThread) {
    auto exe = Executable::loadBytes(build(asyncSpec()));
    if (!exe)
      return exe.status();
    comm = std::make_shared<GatedCommunicator>(anyThread);
    RuntimeOptions options;
    options.threads = 1;
    options.communicator = comm;
    auto made = Session::create(std::move(*exe), options);
    if (!made)
      return made.status();
    session = std::move(*made);
    if (comm->groups.empty())
      return Status::error("the session made no group");
    call = std::thread([this] {
      static const float x[4] = {1, 2, 3, 4}, y[4] = {10, 11, 12, 13};
      status = session->run(0, {{x, 16}, {y, 16}},
                            {{r.data(), 16}, {z.data(), 16}});
    });
    return Status::ok();
  }
  /// Lets the all-reduce go and waits for the call to return.
  void finish() {
    for (GatedGroup *g : comm->groups)
      g->release();
    if (call.joinable())
      call.join();
  }
  ~GatedRun() {
    if (call.joinable())
      finish();
  }
};

/// Reads `f` while another thread may write it.
float readRacy(const float &f) {
  int32_t bits = __atomic_load_n(reinterpret_cast<const int32_t *>(&f),
                                 __ATOMIC_ACQUIRE);
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

} // namespace

TEST(CollectiveTest, AsyncCollectiveRunsWhileTheNextCommandsDo) {
  GatedRun run;
  Status started = run.start(/*anyThread=*/true);
  ASSERT_TRUE(started) << started.message();
  // The all-reduce is held; the copy after it still runs (within 5 s, far
  // less than the hold).
  bool copied = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!copied && std::chrono::steady_clock::now() < deadline) {
    copied = readRacy(run.z[3]) == 13.0f;
    if (!copied)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  run.finish();
  EXPECT_TRUE(copied) << "the copy waited for the all-reduce before it";
  ASSERT_TRUE(run.status) << run.status.message();
  EXPECT_EQ(run.r, (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(run.z, (std::vector<float>{10, 11, 12, 13}));
  EXPECT_EQ(run.session->collectiveBytes(), std::vector<uint64_t>{16});
}

TEST(CollectiveTest, AsyncCollectiveRunsInPlaceWhereTheGroupAsks) {
  // A group that must be called from its own thread: the collective runs
  // where it starts, so the copy after it waits for it.
  GatedRun run;
  Status started = run.start(/*anyThread=*/false);
  ASSERT_TRUE(started) << started.message();
  bool entered = false;
  for (GatedGroup *g : run.comm->groups)
    entered |= g->waitEntered();
  ASSERT_TRUE(entered);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(readRacy(run.z[3]), 0.0f) << "the copy ran before the collective";
  run.finish();
  ASSERT_TRUE(run.status) << run.status.message();
  EXPECT_EQ(run.r, (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(run.z, (std::vector<float>{10, 11, 12, 13}));
}

TEST(CollectiveTest, RefusesBadWaits) {
  ExecutableSpec spec = asyncSpec();
  auto &commands = spec.functions[0].commands;
  // A wait for a collective that is not async.
  std::get<CollectiveSpec>(commands[0]).async = false;
  EXPECT_LOAD_ERROR(spec, "function 'forward' command 2 (wait) waits for command 0, "
                          "which is not an earlier asynchronous collective");
  spec = asyncSpec();
  spec.functions[0].commands[2] = WaitSpec{1};
  EXPECT_LOAD_ERROR(spec, "function 'forward' command 2 (wait) waits for command 1, "
                          "which is not an earlier asynchronous collective");
  spec = asyncSpec();
  spec.functions[0].commands[2] = WaitSpec{7};
  EXPECT_LOAD_ERROR(spec, "waits for command 7, which is not an earlier");
  // Waited twice, or never.
  spec = asyncSpec();
  spec.functions[0].commands.push_back(WaitSpec{0});
  EXPECT_LOAD_ERROR(spec, "function 'forward' command 3 (wait) waits for command 0 "
                          "a second time");
  spec = asyncSpec();
  spec.functions[0].commands.pop_back();
  EXPECT_LOAD_ERROR(spec, "function 'forward' command 0 is an asynchronous "
                          "collective that no command waits for");
  // A command in flight writing the collective's input or reading its
  // output.
  spec = asyncSpec();
  {
    // x copied into the arena, reduced from there, and the arena
    // overwritten while the reduction is in flight.
    FunctionSpec &f = spec.functions[0];
    f.arenaSize = 16;
    CopySpec stage;
    stage.src = inputRef(0, 16);
    stage.dst = arenaRef(0, 16);
    std::get<CollectiveSpec>(f.commands[0]).input = arenaRef(0, 16);
    std::get<CopySpec>(f.commands[1]).dst = arenaRef(0, 16);
    f.commands.insert(f.commands.begin(), stage);
    f.commands.back() = WaitSpec{1};
  }
  EXPECT_LOAD_ERROR(spec, "function 'forward' command 2 uses the buffers of "
                          "collective 1 while it is in flight (before its "
                          "wait, command 3)");
  spec = asyncSpec();
  std::get<CopySpec>(spec.functions[0].commands[1]).src = outputRef(0, 16);
  EXPECT_LOAD_ERROR(spec, "command 1 uses the buffers of collective 0");
  // Reading the input in flight is fine.
  spec = asyncSpec();
  std::get<CopySpec>(spec.functions[0].commands[1]).src = inputRef(0, 16);
  EXPECT_TRUE(Executable::loadBytes(build(spec)));
}

namespace {

/// Rank `r` of `n` processes whose groups are groups of one (for programs
/// without collectives).
class LoneCommunicator : public Communicator {
public:
  LoneCommunicator(int r, int n) : r(r), n(n) {}
  int rank() const override { return r; }
  int size() const override { return n; }
  StatusOr<std::unique_ptr<Group>> split(int, int) override {
    return std::unique_ptr<Group>(new GatedGroup());
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }
  int r, n;
};

/// forward() -> f32[2,3] on a mesh of 2, run by both devices: copies the
/// device's piece (rows split) of parameter "w" of the archive, f32[rows,
/// 3], to the output.
ExecutableSpec splitParameterSpec(const std::string &archive, int64_t rows) {
  ExecutableSpec spec;
  spec.mesh = {2};
  spec.parameterArchive = archive;
  spec.parameters = {{"w", {DType::F32, {2, 3}}, {rows, 3},
                      {fbs::SbpEntry(fbs::SbpKind::Split, 0)}}};
  FunctionSpec f;
  f.name = "forward";
  f.outputs = {{DType::F32, {2, 3}}};
  f.ranks = {0, 1};
  f.commands = {CopySpec{constantRef(0, 24), outputRef(0, 24)}};
  spec.functions.push_back(f);
  return spec;
}

} // namespace

TEST(CollectiveTest, EachDeviceBindsItsPieceOfASplitParameter) {
  std::string path = ::testing::TempDir() + "/split-parameter.safetensors";
  HostTensor w;
  w.dtype = DType::F32;
  w.shape = {4, 3};
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i)
    values[i] = static_cast<float>(i);
  w.data.resize(48);
  std::memcpy(w.data.data(), values.data(), 48);
  ASSERT_TRUE(writeSafeTensors(path, {{"w", w}}));
  // One program for both devices; each reads its own rows.
  for (int rank : {0, 1}) {
    auto exe = Executable::loadBytes(build(splitParameterSpec(path, 4)));
    ASSERT_TRUE(exe) << exe.status().message();
    RuntimeOptions options;
    options.threads = 1;
    options.communicator = std::make_shared<LoneCommunicator>(rank, 2);
    auto session = Session::create(std::move(*exe), options);
    ASSERT_TRUE(session) << session.status().message();
    std::vector<float> out(6, -1);
    Status s = (*session)->run(0, {}, {{out.data(), 24}});
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(out, std::vector<float>(values.begin() + 6 * rank,
                                      values.begin() + 6 * rank + 6))
        << "rank " << rank;
  }
  // Rows 5 split in 2 give device 0 three rows, not the program's two.
  HostTensor five = w;
  five.shape = {5, 3};
  five.data.resize(60, 0);
  ASSERT_TRUE(writeSafeTensors(path, {{"w", five}}));
  auto exe = Executable::loadBytes(build(splitParameterSpec(path, 5)));
  ASSERT_TRUE(exe) << exe.status().message();
  RuntimeOptions options;
  options.threads = 1;
  options.communicator = std::make_shared<LoneCommunicator>(0, 2);
  auto session = Session::create(std::move(*exe), options);
  ASSERT_FALSE(session);
  EXPECT_EQ(session.status().message(),
            "parameter 'w': device 0's piece is f32[3,3] but its program "
            "reads f32[2,3]");
  // A piece by SBP of a block of the tensor (columns [1, 3) of the 5x3
  // archive above, rows split): rows [0, 3) or [3, 5) of those columns.
  // The program reads 2 rows: device 1's piece.
  HostTensor grid = five;
  std::vector<float> g(15);
  for (int i = 0; i < 15; ++i)
    g[i] = static_cast<float>(i);
  std::memcpy(grid.data.data(), g.data(), 60);
  ASSERT_TRUE(writeSafeTensors(path, {{"w", grid}}));
  ExecutableSpec block = splitParameterSpec(path, 5);
  block.parameters[0].type = {DType::F32, {2, 2}};
  block.parameters[0].pieceOffsets = {0, 1};
  block.parameters[0].pieceSbpOf = {5, 2};
  block.functions[0].outputs = {{DType::F32, {2, 2}}};
  block.functions[0].commands = {CopySpec{constantRef(0, 16), outputRef(0, 16)}};
  {
    auto exe = Executable::loadBytes(build(block));
    ASSERT_TRUE(exe) << exe.status().message();
    RuntimeOptions options;
    options.threads = 1;
    options.communicator = std::make_shared<LoneCommunicator>(1, 2);
    auto session = Session::create(std::move(*exe), options);
    ASSERT_TRUE(session) << session.status().message();
    std::vector<float> out(4, -1);
    Status s = (*session)->run(0, {}, {{out.data(), 16}});
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(out, (std::vector<float>{10, 11, 13, 14}));
  }
  // A block that does not lie in the tensor is refused at load.
  block.parameters[0].pieceOffsets = {0, 2};
  EXPECT_LOAD_ERROR(block, "parameter 'w' has an invalid piece by SBP");
  // A piece by SBP that is not a split or broadcast is refused at load.
  ExecutableSpec bad = splitParameterSpec(path, 4);
  bad.parameters[0].pieceSbp = {fbs::SbpEntry(fbs::SbpKind::PartialSum, 0)};
  EXPECT_LOAD_ERROR(bad, "parameter 'w' has an invalid piece by SBP");
  std::remove(path.c_str());
}

namespace {

/// forward() -> i64[2] on a 2x2 mesh, run by every device: copies the
/// device offsets constant (the only constant) to the output.
ExecutableSpec deviceOffsetsSpec(std::vector<fbs::SbpEntry> within) {
  ExecutableSpec spec;
  spec.mesh = {2, 2};
  spec.deviceOffsets = {{{5, 6},
                         {fbs::SbpEntry(fbs::SbpKind::Split, 0),
                          fbs::SbpEntry(fbs::SbpKind::Split, 1)},
                         std::move(within),
                         {0, 1, 2, 3},
                         std::nullopt}};
  FunctionSpec f;
  f.name = "forward";
  f.outputs = {{DType::I64, {2}}};
  f.ranks = {0, 1, 2, 3};
  f.commands = {CopySpec{constantRef(0, 16), outputRef(0, 16)}};
  spec.functions.push_back(f);
  return spec;
}

std::vector<int64_t> boundOffsets(const ExecutableSpec &spec, int rank) {
  auto exe = Executable::loadBytes(build(spec));
  EXPECT_TRUE(exe) << exe.status().message();
  if (!exe)
    return {};
  RuntimeOptions options;
  options.threads = 1;
  options.communicator = std::make_shared<LoneCommunicator>(rank, 4);
  auto session = Session::create(std::move(*exe), options);
  EXPECT_TRUE(session) << session.status().message();
  if (!session)
    return {};
  std::vector<int64_t> out(2, -1);
  Status s = (*session)->run(0, {}, {{out.data(), 16}});
  EXPECT_TRUE(s) << s.message();
  return out;
}

} // namespace

TEST(CollectiveTest, EachDeviceBindsItsPieceOffsets) {
  // A 5x6 tensor split [S(0), S(1)] on 2x2: rows 3 + 2, columns 3 + 3.
  // Device (a, b) is rank 2a + b.
  for (int rank = 0; rank < 4; ++rank) {
    int64_t a = rank / 2, b = rank % 2;
    EXPECT_EQ(boundOffsets(deviceOffsetsSpec({}), rank),
              (std::vector<int64_t>{3 * a, 3 * b}))
        << "rank " << rank;
    // Within its piece under [S(0), B]: the rows are its own already.
    EXPECT_EQ(boundOffsets(deviceOffsetsSpec(
                               {fbs::SbpEntry(fbs::SbpKind::Split, 0),
                                fbs::SbpEntry(fbs::SbpKind::Broadcast, 0)}),
                           rank),
              (std::vector<int64_t>{0, 3 * b}))
        << "rank " << rank;
  }
  // What the loader refuses.
  ExecutableSpec bad = deviceOffsetsSpec({});
  bad.deviceOffsets[0].type = TypeSpec{DType::F32, {2}};
  EXPECT_LOAD_ERROR(bad, "constant 0 (device offsets): is f32[2], not i64[2]");
  bad = deviceOffsetsSpec({});
  bad.deviceOffsets[0].sbp.pop_back();
  EXPECT_LOAD_ERROR(bad, "constant 0 (device offsets): an SBP that is not "
                         "one entry per mesh axis");
  bad = deviceOffsetsSpec({});
  bad.deviceOffsets[0].sbp[1] = fbs::SbpEntry(fbs::SbpKind::Split, 2);
  EXPECT_LOAD_ERROR(bad, "an SBP that is not one entry per mesh axis "
                         "splitting the tensor's dimensions");
  bad = deviceOffsetsSpec({});
  bad.deviceOffsets[0].ranks = {0, 4};
  EXPECT_LOAD_ERROR(bad, "constant 0 (device offsets): invalid rank 4");
  bad = deviceOffsetsSpec({});
  bad.deviceOffsets[0].ranks = {};
  EXPECT_LOAD_ERROR(bad, "constant 0 (device offsets): names no device "
                         "reading it");
  // A piece that does not lie in the one it is taken from (a split the
  // compiler never writes: rows split on the second axis too).
  bad = deviceOffsetsSpec({fbs::SbpEntry(fbs::SbpKind::Broadcast, 0),
                           fbs::SbpEntry(fbs::SbpKind::Split, 0)});
  auto exe = Executable::loadBytes(build(bad));
  ASSERT_TRUE(exe) << exe.status().message();
  RuntimeOptions options;
  options.threads = 1;
  options.communicator = std::make_shared<LoneCommunicator>(2, 4);
  auto session = Session::create(std::move(*exe), options);
  ASSERT_FALSE(session);
  EXPECT_EQ(session.status().message(),
            "device 2's piece of a tensor lies outside the piece it is taken "
            "from");
}

TEST(CollectiveTest, CorruptMeshExecutablesNeverCrash) {
  ExecutableSpec spec = gatherSpec({1});
  collective(spec).outputShape = {4, 3};
  collective(spec).output = outputRef(0, 48);
  spec.functions[0].outputs = {{DType::F32, {4, 3}}};
  const std::vector<uint8_t> original = build(spec);
  std::mt19937_64 rng(11);
  int loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = original;
    for (int e = 0; e < 1 + int(rng() % 3); ++e)
      bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    restampUnlessLibraryChanged(bytes, original);
    auto exe = Executable::loadBytes(bytes);
    if (!exe) {
      EXPECT_FALSE(exe.status().message().empty());
      continue;
    }
    ++loaded;
    auto session = Session::create(std::move(*exe), RuntimeOptions{1});
    if (!session)
      continue;
    const FunctionSignature &sig = (*session)->executable().functions()[0];
    std::vector<HostTensor> inputs;
    const auto &specs = sig.ranks.empty() ? sig.inputs : [&] {
      static thread_local std::vector<TensorSpec> global;
      global.clear();
      for (const Placement &p : sig.globalInputs)
        global.push_back(p.spec);
      return global;
    }();
    bool small = true;
    for (const TensorSpec &t : specs) {
      small &= t.byteSize() < (1u << 20);
      if (!small)
        break;
      HostTensor h;
      h.dtype = t.dtype;
      h.shape = t.shape;
      h.data.assign(t.byteSize(), 1);
      inputs.push_back(std::move(h));
    }
    for (const TensorSpec &t : sig.outputs)
      small &= t.byteSize() < (1u << 20);
    for (const Placement &p : sig.globalOutputs)
      small &= p.spec.byteSize() < (1u << 20);
    small &= sig.arenaSize < (1u << 20);
    if (small)
      (void)(*session)->runGlobal(sig.globalName.empty() ? sig.name
                                                         : sig.globalName,
                                  inputs);
  }
  EXPECT_GT(loaded, 0);
}

TEST(CollectiveTest, ParsesTimeouts) {
  EXPECT_EQ(*parseCollectiveTimeout("5"), 5.0);
  EXPECT_EQ(*parseCollectiveTimeout("0.25"), 0.25);
  EXPECT_EQ(*parseCollectiveTimeout("0"), 0.0); // wait forever
  EXPECT_EQ(*parseCollectiveTimeout("1e3"), 1000.0);
  for (const char *bad : {"", "-1", "soon", "5s", "inf", "nan", "0x10", " 5"}) {
    StatusOr<double> seconds = parseCollectiveTimeout(bad);
    ASSERT_FALSE(seconds) << bad;
    EXPECT_EQ(seconds.status().message(),
              std::string("a timeout is a number of seconds >= 0 (0: wait "
                          "forever), got '") +
                  bad + "'");
  }
}

TEST(CollectiveTest, TakesTheTimeoutFromTheEnvironment) {
  const char *saved = std::getenv(kCollectiveTimeoutVariable);
  std::string restore = saved ? saved : "";
  unsetenv(kCollectiveTimeoutVariable);
  EXPECT_EQ(*collectiveTimeoutFromEnvironment(), kDefaultCollectiveTimeout);
  setenv(kCollectiveTimeoutVariable, "7.5", 1);
  EXPECT_EQ(*collectiveTimeoutFromEnvironment(), 7.5);
  setenv(kCollectiveTimeoutVariable, "later", 1);
  StatusOr<double> bad = collectiveTimeoutFromEnvironment();
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().message(),
            "FLOW_COLLECTIVE_TIMEOUT: a timeout is a number of seconds >= 0 "
            "(0: wait forever), got 'later'");
  if (saved)
    setenv(kCollectiveTimeoutVariable, restore.c_str(), 1);
  else
    unsetenv(kCollectiveTimeoutVariable);
}

TEST(CollectiveTest, FlowRunRefusesABadTimeout) {
  std::string command =
      "'" + std::string(FLOW_RUN) + "' x.fbin --timeout=-3 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  ASSERT_TRUE(pipe);
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
    output.append(buf, n);
  int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << output;
  EXPECT_NE(output.find("flow-run: error: --timeout: a timeout is a number "
                        "of seconds >= 0 (0: wait forever), got '-3'"),
            std::string::npos)
      << output;
}

namespace {

using detail::CollectiveCommand;
using detail::CollectivePlan;
using detail::StridedCopy;

/// One member's buffers while a plan runs on the host.
struct Member {
  std::vector<float> input, output;
  std::vector<uint8_t> send, recv;
  uint8_t *at(StridedCopy::Buffer b) {
    switch (b) {
    case StridedCopy::Input:
      return reinterpret_cast<uint8_t *>(input.data());
    case StridedCopy::Output:
      return reinterpret_cast<uint8_t *>(output.data());
    case StridedCopy::SendStage:
      return send.data();
    case StridedCopy::RecvStage:
      return recv.data();
    }
    return nullptr;
  }
  void copy(const StridedCopy &c) {
    for (uint64_t r = 0; r < c.rows; ++r)
      std::memmove(at(c.dst) + c.dstOffset + r * c.dstPitch,
                   at(c.src) + c.srcOffset + r * c.srcPitch, c.rowBytes);
  }
};

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The piece of `global` (shape `shape`) member `i` of `g` holds when it is
/// split along `d`.
std::vector<float> piece(const std::vector<float> &global,
                         const std::vector<int64_t> &shape, int64_t d,
                         int64_t g, int64_t i) {
  std::vector<int64_t> box = shape;
  box[d] = detail::pieceSize(shape[d], g, i);
  std::vector<int64_t> offset(shape.size(), 0), zero(shape.size(), 0);
  offset[d] = detail::pieceOffset(shape[d], g, i);
  std::vector<float> out(product(box));
  detail::copyBox(reinterpret_cast<const uint8_t *>(global.data()), shape,
                  offset, reinterpret_cast<uint8_t *>(out.data()), box, zero,
                  box, sizeof(float));
  return out;
}

/// Runs the plans of a group of `g` in this process: member i's command is
/// `commandOf(i)` and its input `inputOf(i)`; the group's primitive is done
/// here (sums for reductions). Returns each member's output.
template <typename CommandOf, typename InputOf>
std::vector<std::vector<float>> runPlans(int64_t g, CommandOf commandOf,
                                         InputOf inputOf) {
  std::vector<CollectiveCommand> cmds;
  std::vector<CollectivePlan> plans;
  std::vector<Member> members(g);
  for (int64_t i = 0; i < g; ++i) {
    cmds.push_back(commandOf(i));
    plans.push_back(detail::planCollective(cmds[i], g));
    Member &m = members[i];
    m.input = inputOf(i);
    EXPECT_EQ(int64_t(m.input.size()), product(cmds[i].inputShape));
    m.output.assign(product(cmds[i].outputShape), NAN);
    m.send.assign(plans[i].sendStageBytes, 0);
    m.recv.assign(plans[i].recvStageBytes, 0);
    for (const StridedCopy &c : plans[i].pack)
      m.copy(c);
  }
  auto floats = [](uint8_t *p) { return reinterpret_cast<float *>(p); };
  auto offsetOf = [](const std::vector<size_t> &counts, int64_t i) {
    size_t at = 0;
    for (int64_t j = 0; j < i; ++j)
      at += counts[j];
    return at;
  };
  // Every member reads what the others sent before any receives.
  std::vector<Member> sent = members;
  for (int64_t i = 0; i < g; ++i) {
    const CollectivePlan &p = plans[i];
    uint8_t *recv = members[i].at(p.recv);
    switch (cmds[i].kind) {
    case CollectiveCommand::AllReduce:
      for (uint64_t e = 0; e < p.count; ++e) {
        float sum = 0;
        for (int64_t j = 0; j < g; ++j)
          sum += floats(sent[j].at(plans[j].send))[e];
        floats(recv)[e] = sum;
      }
      break;
    case CollectiveCommand::AllGather:
      for (int64_t j = 0; j < g; ++j) {
        EXPECT_EQ(p.recvCounts[j], sent[j].input.size() * sizeof(float));
        std::memcpy(recv + offsetOf(p.recvCounts, j),
                    sent[j].at(plans[j].send), p.recvCounts[j]);
      }
      break;
    case CollectiveCommand::ReduceScatter:
      for (size_t e = 0; e < p.sendCounts[i]; ++e) {
        float sum = 0;
        for (int64_t j = 0; j < g; ++j)
          sum += floats(sent[j].at(plans[j].send))
              [offsetOf(plans[j].sendCounts, i) + e];
        floats(recv)[e] = sum;
      }
      break;
    case CollectiveCommand::AllToAll:
      // Member j's piece i lands at j's place in member i's receive.
      for (int64_t j = 0; j < g; ++j) {
        EXPECT_EQ(p.recvCounts[j], plans[j].sendCounts[i]);
        std::memcpy(recv + offsetOf(p.recvCounts, j),
                    sent[j].at(plans[j].send) +
                        offsetOf(plans[j].sendCounts, i),
                    p.recvCounts[j]);
      }
      break;
    }
  }
  std::vector<std::vector<float>> outputs;
  for (int64_t i = 0; i < g; ++i) {
    for (const StridedCopy &c : plans[i].unpack)
      members[i].copy(c);
    outputs.push_back(members[i].output);
  }
  return outputs;
}

} // namespace

TEST(CollectiveTest, PlansMoveEveryPieceToItsPlace) {
  // Every kind over 3 members, along every dimension of a [5, 7, 4]
  // tensor (uneven pieces), against the pieces of one global tensor.
  const std::vector<int64_t> shape = {5, 7, 4};
  std::vector<float> global(product(shape));
  for (size_t i = 0; i < global.size(); ++i)
    global[i] = float(i);
  const int64_t g = 3;
  auto pieceShape = [&](int64_t d, int64_t m) {
    std::vector<int64_t> s = shape;
    s[d] = detail::pieceSize(shape[d], g, m);
    return s;
  };
  // Member m's input for the reductions: (m + 1) * global (their sum is
  // 6 * global).
  auto timesRank = [&](int64_t m) {
    std::vector<float> in = global;
    for (float &v : in)
      v *= float(m + 1);
    return in;
  };
  for (int64_t d = 0; d < 3; ++d) {
    SCOPED_TRACE("dimension " + std::to_string(d));
    // All-gather: pieces along d -> the whole tensor on every member.
    auto gathered = runPlans(
        g,
        [&](int64_t m) {
          CollectiveCommand c;
          c.kind = CollectiveCommand::AllGather;
          c.dim = d;
          c.inputShape = pieceShape(d, m);
          c.outputShape = shape;
          return c;
        },
        [&](int64_t m) { return piece(global, shape, d, g, m); });
    for (const std::vector<float> &out : gathered)
      EXPECT_EQ(out, global);

    // Reduce-scatter: each member ends with its piece along d of the sum.
    auto scattered = runPlans(
        g,
        [&](int64_t m) {
          CollectiveCommand c;
          c.kind = CollectiveCommand::ReduceScatter;
          c.dim = d;
          c.inputShape = shape;
          c.outputShape = pieceShape(d, m);
          return c;
        },
        timesRank);
    for (int64_t m = 0; m < g; ++m) {
      std::vector<float> want = piece(global, shape, d, g, m);
      for (float &v : want)
        v *= 6;
      EXPECT_EQ(scattered[m], want) << "member " << m;
    }

    // All-reduce: the sum on every member.
    auto reduced = runPlans(
        g,
        [&](int64_t) {
          CollectiveCommand c;
          c.kind = CollectiveCommand::AllReduce;
          c.inputShape = c.outputShape = shape;
          return c;
        },
        timesRank);
    std::vector<float> six = global;
    for (float &v : six)
      v *= 6;
    for (const std::vector<float> &out : reduced)
      EXPECT_EQ(out, six);

    // All-to-all: pieces along c -> pieces along d.
    for (int64_t c = 0; c < 3; ++c) {
      if (c == d)
        continue;
      SCOPED_TRACE("all-to-all from a split of " + std::to_string(c));
      auto moved = runPlans(
          g,
          [&](int64_t m) {
            CollectiveCommand cmd;
            cmd.kind = CollectiveCommand::AllToAll;
            cmd.splitDim = d;
            cmd.concatDim = c;
            cmd.inputShape = pieceShape(c, m);
            cmd.outputShape = pieceShape(d, m);
            cmd.outputShape[c] = shape[c];
            return cmd;
          },
          [&](int64_t m) { return piece(global, shape, c, g, m); });
      for (int64_t m = 0; m < g; ++m)
        EXPECT_EQ(moved[m], piece(global, shape, d, g, m)) << "member " << m;
    }
  }
}

TEST(CollectiveTest, PlansSkipStagesForContiguousPieces) {
  // Along the first dimension pieces are consecutive in member order: an
  // all-gather receives straight into the output, a reduce-scatter sends
  // straight from the input. Inner dimensions stage and copy.
  CollectiveCommand cmd;
  cmd.kind = CollectiveCommand::AllGather;
  cmd.inputShape = {3, 8};
  cmd.outputShape = {6, 8};
  cmd.dim = 0;
  CollectivePlan plan = detail::planCollective(cmd, 2);
  EXPECT_EQ(plan.recv, StridedCopy::Output);
  EXPECT_TRUE(plan.unpack.empty());
  EXPECT_EQ(plan.recvStageBytes, 0u);
  EXPECT_EQ(plan.recvCounts, (std::vector<size_t>{96, 96}));
  cmd.inputShape = {8, 3};
  cmd.outputShape = {8, 6};
  cmd.dim = 1;
  plan = detail::planCollective(cmd, 2);
  EXPECT_EQ(plan.recv, StridedCopy::RecvStage);
  ASSERT_EQ(plan.unpack.size(), 2u);
  EXPECT_EQ(plan.unpack[1].rows, 8u);
  EXPECT_EQ(plan.unpack[1].rowBytes, 12u);
  EXPECT_EQ(plan.unpack[1].dstPitch, 24u);
  EXPECT_EQ(plan.unpack[1].dstOffset, 12u);
  EXPECT_EQ(plan.recvStageBytes, 192u);

  cmd.kind = CollectiveCommand::ReduceScatter;
  cmd.inputShape = {7, 2};
  cmd.outputShape = {4, 2};
  cmd.dim = 0;
  plan = detail::planCollective(cmd, 2);
  EXPECT_EQ(plan.send, StridedCopy::Input);
  EXPECT_TRUE(plan.pack.empty());
  EXPECT_EQ(plan.sendCounts, (std::vector<size_t>{8, 6}));
}
