//===- DeviceTest.cpp - Opening devices and their memory ------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"
#include "flow/runtime/Device.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

using namespace flow::runtime;
using namespace flow::test;

namespace {

TEST(DeviceTest, TheCpuDeviceHoldsHostMemory) {
  StatusOr<std::shared_ptr<Device>> device = openDevice("cpu");
  ASSERT_TRUE(device) << device.status().message();
  EXPECT_EQ((*device)->info().kind, DeviceKind::Cpu);
  EXPECT_EQ((*device)->info().str(), "cpu");
  StatusOr<DeviceMemory> memory = (*device)->allocate(1000, "a test buffer");
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->size(), 1000u);
  EXPECT_EQ(memory->address() % 256, 0u);
  std::vector<uint8_t> in(1000), out(1000, 0);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE((*device)->copyToDevice(memory->address(), in.data(), 1000));
  ASSERT_TRUE((*device)->copyToHost(out.data(), memory->address(), 1000));
  EXPECT_EQ(in, out);
  // Moving keeps one owner; reset frees.
  DeviceMemory moved = std::move(*memory);
  EXPECT_EQ(memory->address(), 0u);
  EXPECT_NE(moved.address(), 0u);
  moved.reset();
  EXPECT_EQ(moved.address(), 0u);
  StatusOr<DeviceMemory> empty = (*device)->allocate(0, "nothing");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->address(), 0u);
  // A size that overflows when rounded up is refused without asking the
  // allocator (under ASan an impossible request aborts instead of failing).
  StatusOr<DeviceMemory> huge =
      (*device)->allocate(~uint64_t(0) - 10, "the impossible buffer");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.status().message().find(
                "out of memory allocating the impossible buffer"),
            std::string::npos);
}

TEST(DeviceTest, BadNamesAreRefused) {
  StatusOr<std::shared_ptr<Device>> device = openDevice("tpu");
  ASSERT_FALSE(device);
  EXPECT_EQ(device.status().message(),
            "unknown device 'tpu' (devices: cpu, cuda, cuda:N)");
  for (const char *name : {"cuda:", "cuda:-1", "cuda:1x", "cuda:99999"}) {
    device = openDevice(name);
    ASSERT_FALSE(device) << name;
    EXPECT_EQ(device.status().message(),
              "invalid device '" + std::string(name) +
                  "' (cuda:N names GPU N, from 0)");
  }
}

/// sampleSpec() as a CUDA executable: a PTX library for sm_90, each kernel
/// one launch.
ExecutableSpec cudaSpec() {
  ExecutableSpec spec = sampleSpec();
  spec.target = fbs::Target::CUDA;
  spec.libraryFormat = fbs::KernelFormat::PTX;
  std::string ptx = ".version 8.0\n.target sm_90\n";
  spec.library = std::vector<uint8_t>(ptx.begin(), ptx.end());
  spec.library->push_back(0);
  spec.cpu = "sm_90";
  for (KernelSpec &kernel : spec.kernels)
    kernel.launches.push_back({kernel.symbol, {4, 1, 1}, {128, 1, 1}, 0});
  return spec;
}

TEST(DeviceTest, EachDeviceRunsItsOwnTarget) {
  StatusOr<std::unique_ptr<Executable>> cuda =
      Executable::loadBytes(build(cudaSpec()));
  ASSERT_TRUE(cuda) << cuda.status().message();
  EXPECT_EQ((*cuda)->target(), ExecutableTarget::Cuda);
  EXPECT_EQ((*cuda)->kernelArch(), "sm_90");
  EXPECT_EQ(defaultDeviceName(**cuda), "cuda");
  RuntimeOptions options;
  options.device = *openDevice("cpu");
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(std::move(*cuda), options);
  ASSERT_FALSE(session);
  EXPECT_EQ(session.status().message(),
            "executable is for target CUDA (compiled for sm_90); the CPU "
            "device runs CPU executables (recompile with flow-compile "
            "--target=cpu)");

  StatusOr<std::unique_ptr<Executable>> cpu =
      Executable::loadBytes(build(sampleSpec()));
  ASSERT_TRUE(cpu);
  EXPECT_EQ((*cpu)->target(), ExecutableTarget::Cpu);
  EXPECT_EQ(defaultDeviceName(**cpu), "cpu");
  session = Session::create(std::move(*cpu), options);
  ASSERT_TRUE(session) << session.status().message();
  EXPECT_EQ((*session)->device().info().kind, DeviceKind::Cpu);
}

TEST(DeviceTest, CudaExecutablesAreCheckedAtLoad) {
  ExecutableSpec spec = cudaSpec();
  spec.libraryFormat = fbs::KernelFormat::ELF;
  EXPECT_LOAD_ERROR(spec, "kernel library 0 is ELF code, which a CUDA "
                          "executable cannot hold");
  spec = cudaSpec();
  spec.cpu = "x86-64";
  EXPECT_LOAD_ERROR(spec, "kernel library 0 names no compute capability as "
                          "sm_XY (its arch is 'x86-64')");
  spec = cudaSpec();
  spec.library->pop_back();
  EXPECT_LOAD_ERROR(spec, "kernel library 0: PTX text must end in a NUL byte");
  spec = cudaSpec();
  spec.library.reset();
  EXPECT_LOAD_ERROR(spec, "kernels but no kernel library");
  spec = cudaSpec();
  spec.kernels[1].launches.clear();
  EXPECT_LOAD_ERROR(spec, "kernel 1 ('scale2_f32_entry') has no launches");
  spec = cudaSpec();
  spec.kernels[0].launches[0].block = {64, 32, 1};
  EXPECT_LOAD_ERROR(spec, "launch 0: a block of 64x32x1 threads is larger "
                          "than CUDA allows (1024)");
  spec = cudaSpec();
  spec.kernels[0].launches[0].grid = {0, 1, 1};
  EXPECT_LOAD_ERROR(spec, "has an empty grid or block");
  spec = cudaSpec();
  spec.kernels[0].launches[0].sharedBytes = 64 * 1024;
  EXPECT_LOAD_ERROR(spec, "65536 bytes of static shared memory is more than "
                          "a block may hold (49152)");
  spec = cudaSpec();
  spec.kernels[0].scratchBytes = 256;
  spec.kernels[0].scratchOffsets = {0, 512};
  EXPECT_LOAD_ERROR(spec, "scratch offset 512 is outside its 256 scratch "
                          "bytes");
  spec.kernels[0].scratchOffsets = {0, 8};
  EXPECT_LOAD_ERROR(spec, "scratch offset 8 is outside its 256 scratch bytes "
                          "or not 16-byte aligned");
}

} // namespace
