//===- CudaFakeTest.cpp - The CUDA device against a fake driver -----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA device's host logic, end to end, on a machine without a GPU: the
// runtime opens Flow's fake driver (test/runtime/fake/FakeCudaDriver.cpp)
// in place of libcuda, runs the conformance programs compiled for the CUDA
// target, and the fake reports every broken rule (work off the device's
// stream, synchronous or pageable copies, launches outside their limits,
// memory freed while queued work uses it). The fake runs copies only when
// their stream gets to them, so data that comes back right went through the
// stream in order.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Communicator.h"
#include "flow/runtime/Device.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

using namespace flow::runtime;

namespace {

using ConfigureFn = void (*)(const char *);
using ReportFn = const char *(*)();

ConfigureFn configureFake = nullptr;
ReportFn fakeReport = nullptr;

void configure(const std::string &spec) { configureFake(spec.c_str()); }

std::string report() { return fakeReport(); }

/// The report's value for `key` ("violations", "live device allocations",
/// "calls cuLaunchKernel"), or -1.
long reported(const std::string &key) {
  std::string text = report();
  size_t at = text.find(key + " ");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n'))
    return -1;
  return std::atol(text.c_str() + at + key.size() + 1);
}

HostTensor tensor(const std::vector<float> &v, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.data.resize(v.size() * sizeof(float));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> values(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(seed + 0.37f * static_cast<float>(i));
  return v;
}

class FakeCuda : public ::testing::Test {
protected:
  void SetUp() override {
    if (!FLOW_CONFORMANCE_CUDA)
      GTEST_SKIP() << "the programs were not compiled for CUDA: no CUDA "
                      "toolkit (libdevice) at configure time";
    configure("reset=1");
  }

  void TearDown() override {
    if (!FLOW_CONFORMANCE_CUDA)
      return;
    // Whatever a test did, nothing it opened is left behind.
    EXPECT_EQ(reported("live device allocations"), 0) << report();
    EXPECT_EQ(reported("live pinned allocations"), 0) << report();
    EXPECT_EQ(reported("live streams"), 0) << report();
    EXPECT_EQ(reported("live modules"), 0) << report();
    EXPECT_EQ(reported("live graphs"), 0) << report();
  }

  /// Runs conformance program `name` (compiled for CUDA) `times` times on
  /// a fresh CUDA device; the last call's outputs.
  StatusOr<std::vector<HostTensor>> run(const std::string &name,
                                        const std::vector<HostTensor> &inputs,
                                        int times = 2) {
    StatusOr<std::shared_ptr<Device>> device = openDevice("cuda");
    if (!device)
      return device.status();
    StatusOr<std::unique_ptr<Executable>> exe = Executable::loadFile(
        std::string(FLOW_CONFORMANCE_DIR) + "/" + name + "-cuda.fbin");
    if (!exe)
      return exe.status();
    RuntimeOptions options;
    options.device = *device;
    StatusOr<std::unique_ptr<Session>> session =
        Session::create(std::move(*exe), options);
    if (!session)
      return session.status();
    StatusOr<std::vector<HostTensor>> out = (*session)->run("main", inputs);
    for (int i = 1; i < times && out; ++i)
      out = (*session)->run("main", inputs);
    return out;
  }
};

TEST_F(FakeCuda, CopiesComeBackThroughTheStream) {
  std::vector<float> a = values(60, 0.5f);
  StatusOr<std::vector<HostTensor>> out = run("copy", {tensor(a, {6, 10})});
  ASSERT_TRUE(out) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  for (const HostTensor &t : *out) {
    ASSERT_EQ(t.data.size(), a.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(t.data.data(), a.data(), t.data.size()), 0);
  }
  EXPECT_EQ(reported("violations"), 0) << report();
  EXPECT_GT(reported("calls cuMemcpyHtoDAsync"), 0) << report();
}

TEST_F(FakeCuda, LargeCopiesRoundTripThroughPinnedStaging) {
  StatusOr<std::shared_ptr<Device>> device = openDevice("cuda");
  ASSERT_TRUE(device) << device.status().message();
  // More than the staging buffers hold, and not a multiple of them: the
  // buffers are refilled while the stream still reads them.
  const size_t n = (uint64_t(21) << 20) / sizeof(float) + 7;
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i)
    data[i] = static_cast<float>(i % 100003);
  StatusOr<DeviceMemory> memory =
      (*device)->allocate(n * sizeof(float), "a test buffer");
  ASSERT_TRUE(memory) << memory.status().message();
  ASSERT_TRUE((*device)->copyToDevice(memory->address(), data.data(),
                                      n * sizeof(float)));
  // The caller's buffer is its own again once copyToDevice returns.
  std::vector<float> expected = data;
  std::fill(data.begin(), data.end(), -1.0f);
  std::vector<float> back(n);
  ASSERT_TRUE(
      (*device)->copyToHost(back.data(), memory->address(), n * sizeof(float)));
  EXPECT_TRUE(back == expected);
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, WithoutPinnedMemoryCopiesStillArrive) {
  configure("no-pinned=1");
  std::vector<float> a = values(60, 1.5f);
  StatusOr<std::vector<HostTensor>> out = run("copy", {tensor(a, {6, 10})});
  ASSERT_TRUE(out) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ(std::memcmp((*out)[1].data.data(), a.data(), a.size() * 4), 0);
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, KernelLaunchesKeepTheRules) {
  std::vector<float> a = values(64 * 33, 0.1f), b = values(33, 1.3f);
  StatusOr<std::vector<HostTensor>> out =
      run("elementwise", {tensor(a, {64, 33}), tensor(b, {33})});
  ASSERT_TRUE(out) << out.status().message();
  StatusOr<std::vector<HostTensor>> reduced =
      run("softmax", {tensor(values(1600, 0.9f), {16, 100})});
  ASSERT_TRUE(reduced) << reduced.status().message();
  EXPECT_GT(reported("calls cuLaunchKernel"), 0) << report();
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, CallsReplayACapturedGraph) {
  std::vector<HostTensor> in = {tensor(values(1600, 0.9f), {16, 100})};
  ASSERT_TRUE(run("softmax", in, 1));
  long perCall = reported("calls cuLaunchKernel");
  ASSERT_GT(perCall, 0) << report();
  configure("reset=1");
  // The first call runs directly, the second is captured and launched as
  // a graph, the others replay it: the kernels are launched twice.
  ASSERT_TRUE(run("softmax", in, 5));
  EXPECT_EQ(reported("calls cuGraphLaunch"), 4) << report();
  EXPECT_EQ(reported("calls cuStreamBeginCapture"), 1) << report();
  EXPECT_EQ(reported("calls cuLaunchKernel"), 2 * perCall) << report();
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, ReplayedGraphsSeeEachCallsInputs) {
  StatusOr<std::shared_ptr<Device>> device = openDevice("cuda");
  ASSERT_TRUE(device) << device.status().message();
  StatusOr<std::unique_ptr<Executable>> exe = Executable::loadFile(
      std::string(FLOW_CONFORMANCE_DIR) + "/copy-cuda.fbin");
  ASSERT_TRUE(exe) << exe.status().message();
  RuntimeOptions options;
  options.device = *device;
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(std::move(*exe), options);
  ASSERT_TRUE(session) << session.status().message();
  for (int call = 0; call < 4; ++call) {
    std::vector<float> a = values(60, 0.7f * float(call));
    StatusOr<std::vector<HostTensor>> out =
        (*session)->run("main", {tensor(a, {6, 10})});
    ASSERT_TRUE(out) << out.status().message();
    ASSERT_EQ(out->size(), 2u);
    for (const HostTensor &t : *out)
      EXPECT_EQ(std::memcmp(t.data.data(), a.data(), a.size() * 4), 0)
          << "call " << call;
  }
  EXPECT_GT(reported("calls cuGraphLaunch"), 0) << report();
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, WithoutCaptureCallsRunDirectly) {
  configure("no-capture=1");
  std::vector<float> a = values(60, 2.5f);
  StatusOr<std::vector<HostTensor>> out = run("copy", {tensor(a, {6, 10})}, 4);
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_EQ(std::memcmp((*out)[0].data.data(), a.data(), a.size() * 4), 0);
  EXPECT_EQ(reported("calls cuGraphLaunch"), -1) << report();
  EXPECT_EQ(reported("calls cuStreamBeginCapture"), 1) << report();
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, GraphsCanBeTurnedOff) {
  setenv("FLOW_CUDA_GRAPHS", "0", 1);
  StatusOr<std::vector<HostTensor>> out =
      run("softmax", {tensor(values(1600, 0.9f), {16, 100})}, 4);
  unsetenv("FLOW_CUDA_GRAPHS");
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_EQ(reported("calls cuGraphLaunch"), -1) << report();
  EXPECT_EQ(reported("calls cuStreamBeginCapture"), -1) << report();
}

TEST_F(FakeCuda, WideRowsOptInToDynamicSharedMemory) {
  // The PTX, so that the fake reads each entry's static shared memory and
  // checks the dynamic bytes against the function's opt-in.
  configure("reject-cubin=1");
  StatusOr<std::vector<HostTensor>> out =
      run("wide-rows", {tensor(values(80000, 0.3f), {4, 20000})});
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_GE(reported("calls cuFuncSetAttribute"), 1) << report();
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, RefusedCubinFallsBackToPtx) {
  configure("reject-cubin=1");
  StatusOr<std::vector<HostTensor>> out =
      run("softmax", {tensor(values(1600, 0.9f), {16, 100})});
  ASSERT_TRUE(out) << out.status().message();
  // The cubin, refused, then the PTX (once per run's load).
  EXPECT_EQ(reported("calls cuModuleLoadDataEx"), 2) << report();
  EXPECT_GT(reported("calls cuLaunchKernel"), 0) << report();
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeCuda, PtxTooNewForTheDriverNamesBothVersions) {
  configure("reject-cubin=1;driver=11070");
  StatusOr<std::vector<HostTensor>> out =
      run("softmax", {tensor(values(1600, 0.9f), {16, 100})});
  ASSERT_FALSE(out);
  std::string message = out.status().message();
  EXPECT_NE(message.find("refused the cubin"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("needs a driver for CUDA 11.8 or newer"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("this driver is for CUDA 11.7"), std::string::npos)
      << message;
  EXPECT_NE(message.find("Unsupported .version"), std::string::npos) << message;
}

TEST_F(FakeCuda, OutOfDeviceMemorySaysWhatAndHowMuch) {
  configure("fail=cuMemAlloc:1:2");
  StatusOr<std::vector<HostTensor>> out =
      run("softmax", {tensor(values(1600, 0.9f), {16, 100})});
  ASSERT_FALSE(out);
  std::string message = out.status().message();
  EXPECT_NE(message.find("out of device memory allocating"), std::string::npos)
      << message;
  EXPECT_NE(message.find("bytes free of"), std::string::npos) << message;
}

TEST_F(FakeCuda, AFailedLaunchNamesItsCommand) {
  // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES on the first launch.
  configure("fail=cuLaunchKernel:1:701");
  StatusOr<std::vector<HostTensor>> out =
      run("softmax", {tensor(values(1600, 0.9f), {16, 100})});
  ASSERT_FALSE(out);
  std::string message = out.status().message();
  EXPECT_NE(message.find("function 'main' command"), std::string::npos)
      << message;
  EXPECT_NE(message.find("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
            std::string::npos)
      << message;
}

TEST_F(FakeCuda, AFailedCopyIsAnError) {
  // CUDA_ERROR_ILLEGAL_ADDRESS on the first host-to-device copy.
  configure("fail=cuMemcpyHtoDAsync:1:700");
  StatusOr<std::vector<HostTensor>> out =
      run("copy", {tensor(values(60, 0.5f), {6, 10})});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("CUDA_ERROR_ILLEGAL_ADDRESS"),
            std::string::npos)
      << out.status().message();
}

TEST_F(FakeCuda, NoDeviceIsAClearError) {
  StatusOr<std::shared_ptr<Device>> device = openDevice("cuda:3");
  ASSERT_FALSE(device);
  EXPECT_NE(device.status().message().find("no CUDA GPU 3"), std::string::npos)
      << device.status().message();
}

#ifdef FLOW_FAKE_NCCL
ConfigureFn configureNccl = nullptr;
ReportFn ncclReport = nullptr;

/// The fake NCCL's report value for `key`, or -1.
long ncclReported(const std::string &key) {
  std::string text = ncclReport();
  size_t at = text.find(key + " ");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n'))
    return -1;
  return std::atol(text.c_str() + at + key.size() + 1);
}

class FakeNccl : public ::testing::Test {
protected:
  void SetUp() override {
    configure("reset=1");
    configureNccl("reset=1");
    setenv("FLOW_COLLECTIVE_TIMEOUT", "1", 1);
    StatusOr<std::shared_ptr<Device>> opened = openDevice("cuda");
    ASSERT_TRUE(opened) << opened.status().message();
    device = *opened;
    StatusOr<std::unique_ptr<Group>> self =
        createSingleProcessCommunicator()->split(0, 0);
    ASSERT_TRUE(self) << self.status().message();
    host = std::move(*self);
  }
  void TearDown() override {
    unsetenv("FLOW_COLLECTIVE_TIMEOUT");
    host.reset();
    device.reset();
    EXPECT_EQ(ncclReported("live communicators"), 0) << ncclReport();
    EXPECT_EQ(reported("live device allocations"), 0) << report();
  }

  std::shared_ptr<Device> device;
  std::unique_ptr<Group> host;
};

TEST_F(FakeNccl, CollectivesRunOnTheDeviceStream) {
  StatusOr<std::unique_ptr<Group>> group = device->createGroup(*host);
  ASSERT_TRUE(group) << group.status().message();
  std::vector<float> data = values(1000, 0.3f), back(1000);
  StatusOr<DeviceMemory> send = device->allocate(4000, "send");
  StatusOr<DeviceMemory> recv = device->allocate(4000, "receive");
  ASSERT_TRUE(send && recv);
  ASSERT_TRUE(device->copyToDevice(send->address(), data.data(), 4000));
  ASSERT_TRUE(
      (*group)->allGather(reinterpret_cast<const void *>(send->address()),
                          reinterpret_cast<void *>(recv->address()), {4000}));
  EXPECT_TRUE((*group)->asyncError());
  ASSERT_TRUE(device->copyToHost(back.data(), recv->address(), 4000));
  EXPECT_TRUE(back == data);
  group->reset();
  EXPECT_EQ(ncclReported("destroys"), 1) << ncclReport();
  EXPECT_EQ(ncclReported("aborts"), 0) << ncclReport();
  EXPECT_EQ(ncclReported("violations"), 0) << ncclReport();
  EXPECT_EQ(reported("violations"), 0) << report();
}

TEST_F(FakeNccl, AJoinThatNeverFinishesTimesOutAndAborts) {
  configureNccl("init=hang");
  auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<Group>> group = device->createGroup(*host);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_FALSE(group);
  std::string message = group.status().message();
  EXPECT_NE(message.find("cannot join an NCCL group"), std::string::npos)
      << message;
  EXPECT_NE(message.find("FLOW_COLLECTIVE_TIMEOUT"), std::string::npos)
      << message;
  EXPECT_NE(message.find("aborted"), std::string::npos) << message;
  // The timeout is one second.
  EXPECT_LT(seconds, 10.0);
  EXPECT_EQ(ncclReported("aborts"), 1) << ncclReport();
  EXPECT_EQ(ncclReported("violations"), 0) << ncclReport();
}

TEST_F(FakeNccl, AnAsynchronousErrorIsReportedAndAborts) {
  StatusOr<std::unique_ptr<Group>> group = device->createGroup(*host);
  ASSERT_TRUE(group) << group.status().message();
  configureNccl("async-error=1");
  Status s = (*group)->asyncError();
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("remote process exited"), std::string::npos)
      << s.message();
  (*group)->abort();
  // After the abort, calls fail without touching the communicator.
  StatusOr<DeviceMemory> buffer = device->allocate(64, "a buffer");
  ASSERT_TRUE(buffer);
  Status after =
      (*group)->allReduce(reinterpret_cast<void *>(buffer->address()), 16,
                          DType::F32, Reduction::Sum);
  EXPECT_FALSE(after);
  group->reset();
  EXPECT_EQ(ncclReported("aborts"), 1) << ncclReport();
  EXPECT_EQ(ncclReported("destroys"), 0) << ncclReport();
  EXPECT_EQ(ncclReported("violations"), 0) << ncclReport();
}
#endif

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // The runtime opens the fake in place of libcuda; the same handle gives
  // the fake's control functions.
  setenv("FLOW_CUDA_DRIVER", FLOW_FAKE_CUDA_DRIVER, 1);
  void *fake = dlopen(FLOW_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  if (!fake) {
    std::fprintf(stderr, "cannot open the fake CUDA driver %s: %s\n",
                 FLOW_FAKE_CUDA_DRIVER, dlerror());
    return 1;
  }
  configureFake =
      reinterpret_cast<ConfigureFn>(dlsym(fake, "flow_fake_cuda_configure"));
  fakeReport = reinterpret_cast<ReportFn>(dlsym(fake, "flow_fake_cuda_report"));
  if (!configureFake || !fakeReport) {
    std::fprintf(stderr, "the fake CUDA driver has no control functions\n");
    return 1;
  }
#ifdef FLOW_FAKE_NCCL
  setenv("FLOW_NCCL", FLOW_FAKE_NCCL, 1);
  void *nccl = dlopen(FLOW_FAKE_NCCL, RTLD_NOW | RTLD_LOCAL);
  if (!nccl) {
    std::fprintf(stderr, "cannot open the fake NCCL %s: %s\n", FLOW_FAKE_NCCL,
                 dlerror());
    return 1;
  }
  configureNccl =
      reinterpret_cast<ConfigureFn>(dlsym(nccl, "flow_fake_nccl_configure"));
  ncclReport = reinterpret_cast<ReportFn>(dlsym(nccl, "flow_fake_nccl_report"));
  if (!configureNccl || !ncclReport) {
    std::fprintf(stderr, "the fake NCCL has no control functions\n");
    return 1;
  }
#endif
  return RUN_ALL_TESTS();
}
