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

#include "FbinBuilder.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

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
  collective(spec).dtype = DType::F16;
  collective(spec).outputShape = {4, 3};
  EXPECT_LOAD_ERROR(spec, "reductions over f16 tensors are not supported");

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
