//===- ExecutableTest.cpp - Tests for loading and verifying executables ---===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Each test breaks one thing in the sample program and checks that loading
// fails with a message naming it.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"

#include "flow/runtime/CpuFeatures.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <cstdio>
#include <unistd.h>

using namespace flow::runtime;
using namespace flow::test;

namespace {

FunctionSpec &forward(ExecutableSpec &spec) { return spec.functions[0]; }

template <typename T> T &command(ExecutableSpec &spec, size_t i) {
  return std::get<T>(forward(spec).commands[i]);
}

TEST(ExecutableTest, LoadsSample) {
  StatusOr<std::unique_ptr<Executable>> exe =
      Executable::loadBytes(build(sampleSpec()));
  ASSERT_TRUE(exe) << exe.status().message();
  const Executable &e = **exe;
  ASSERT_EQ(e.functions().size(), 1u);
  const FunctionSignature &sig = e.functions()[0];
  EXPECT_EQ(sig.name, "forward");
  ASSERT_EQ(sig.inputs.size(), 2u);
  ASSERT_EQ(sig.outputs.size(), 2u);
  EXPECT_EQ(sig.inputs[1].str(), "f32[4,4]");
  EXPECT_EQ(sig.outputs[0].byteSize(), 64u);
  EXPECT_EQ(sig.arenaSize, 128u);
  EXPECT_EQ(e.functionNames(), std::vector<std::string>{"forward"});
  EXPECT_EQ(e.numKernels(), 4u);
  EXPECT_EQ(e.numConstants(), 1u);
  StatusOr<size_t> index = e.findFunction("forward");
  ASSERT_TRUE(index);
  EXPECT_EQ(*index, 0u);
  StatusOr<size_t> missing = e.findFunction("backward");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().message(),
            "no function named 'backward' (the executable has: forward)");
}

TEST(ExecutableTest, TensorSpecText) {
  EXPECT_EQ((TensorSpec{DType::I64, {}}).str(), "i64[]");
  EXPECT_EQ((TensorSpec{DType::BF16, {8, 0, 3}}).str(), "bf16[8,0,3]");
  EXPECT_EQ((TensorSpec{DType::BF16, {8, 0, 3}}).byteSize(), 0u);
  EXPECT_EQ((TensorSpec{DType::I1, {}}).numElements(), 1);
  // An empty dimension after huge ones: no element, and no overflow on the
  // way (the fuzzer found the partial product overflowing).
  EXPECT_EQ((TensorSpec{DType::F32, {int64_t(1) << 62, 8, 0}}).numElements(),
            0);
  EXPECT_EQ((TensorSpec{DType::F32, {int64_t(1) << 62, 8, 0}}).byteSize(),
            0u);
}

// A damaged vtable that puts the checksum field inside the kernel library:
// restamped, the file's checksum holds, but the library now contains the
// hash. Found by CorruptionTest as a crash inside dlopen.
TEST(ExecutableTest, RefusesAChecksumFieldInsideTheLibrary) {
  std::vector<uint8_t> bytes = build(sampleSpec());
  const auto *exe = fbs::GetExecutable(bytes.data());
  const auto *library = firstLibrary(exe);
  ASSERT_TRUE(library && library->size() >= 16);
  const uint8_t *table = reinterpret_cast<const uint8_t *>(exe);
  size_t tableAt = static_cast<size_t>(table - bytes.data());
  int32_t toVtable;
  std::memcpy(&toVtable, table, sizeof(toVtable));
  size_t vtableAt = tableAt - toVtable;
  // An 8-byte aligned field in the library (the verifier checks alignment).
  size_t fieldAt = (static_cast<size_t>(library->data() - bytes.data()) + 7) /
                   8 * 8;
  if (fieldAt <= tableAt || fieldAt - tableAt > 0xffff)
    GTEST_SKIP() << "the library is out of a vtable entry's reach";
  uint16_t entry = static_cast<uint16_t>(fieldAt - tableAt);
  std::memcpy(&bytes[vtableAt + fbs::Executable::VT_CHECKSUM], &entry,
              sizeof(entry));
  ASSERT_TRUE(stampChecksum(bytes.data(), bytes.size()));
  EXPECT_NE(loadError(bytes).find("the checksum field overlaps a kernel "
                                  "library"),
            std::string::npos)
      << loadError(bytes);
}

TEST(ExecutableTest, LoadsFromAFile) {
  char dir[] = "/tmp/flow-exe-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/sample.fbin";
  std::vector<uint8_t> bytes = build(sampleSpec());
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  StatusOr<std::unique_ptr<Executable>> exe = Executable::loadFile(path);
  EXPECT_TRUE(exe) << exe.status().message();

  // Errors name the file.
  bytes[bytes.size() / 2] ^= 0xff;
  f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size() / 2, f);
  fclose(f);
  exe = Executable::loadFile(path);
  ASSERT_FALSE(exe);
  EXPECT_EQ(exe.status().message().rfind(path + ": ", 0), 0u)
      << exe.status().message();

  exe = Executable::loadFile(dir);
  ASSERT_FALSE(exe);
  EXPECT_NE(exe.status().message().find("is a directory"), std::string::npos);
  unlink(path.c_str());
  rmdir(dir);
  exe = Executable::loadFile(path);
  ASSERT_FALSE(exe);
  EXPECT_NE(exe.status().message().find("cannot open '" + path + "'"),
            std::string::npos)
      << exe.status().message();
}

TEST(ExecutableTest, RejectsNonExecutables) {
  EXPECT_LOAD_ERROR(std::vector<uint8_t>(), "0 bytes is too short");
  EXPECT_LOAD_ERROR(std::vector<uint8_t>(7, 0), "7 bytes is too short");
  EXPECT_LOAD_ERROR(std::vector<uint8_t>(64, 0), "no 'FLOW' file identifier");
  std::vector<uint8_t> garbage(64, 0xff);
  std::memcpy(garbage.data() + 4, "FLOW", 4);
  EXPECT_LOAD_ERROR(garbage, "FlatBuffers verification failed");
  std::vector<uint8_t> truncated = build(sampleSpec());
  truncated.resize(truncated.size() - 100);
  EXPECT_LOAD_ERROR(truncated, "FlatBuffers verification failed");
}

TEST(ExecutableTest, RejectsVersionAndTarget) {
  ExecutableSpec spec = sampleSpec();
  spec.version = kExecutableVersion + 1;
  EXPECT_LOAD_ERROR(spec, "unsupported format version " +
                              std::to_string(kExecutableVersion + 1) +
                              " (this runtime reads version " +
                              std::to_string(kExecutableVersion));
  spec.version = 0;
  EXPECT_LOAD_ERROR(spec, "unsupported format version 0");
  // CUDA executables load (DeviceTest); their devices are checked when a
  // session is made.
  spec = sampleSpec();
  spec.target = static_cast<fbs::Target>(9);
  EXPECT_LOAD_ERROR(spec, "invalid target 9");
}

TEST(ExecutableTest, CpuExecutablesHoldOneElfLibrary) {
  // GPU code in a CPU executable is refused by name, before anything loads.
  ExecutableSpec spec = sampleSpec();
  spec.libraryFormat = fbs::KernelFormat::PTX;
  EXPECT_LOAD_ERROR(spec, "kernel library 0 is PTX code, which a CPU "
                          "executable cannot hold");
  spec = sampleSpec();
  spec.extraLibraries.push_back({fbs::KernelFormat::CUBIN, {1, 2, 3}});
  EXPECT_LOAD_ERROR(spec, "kernel library 1 is CUBIN code, which a CPU "
                          "executable cannot hold");
  spec = sampleSpec();
  spec.extraLibraries.push_back({fbs::KernelFormat::ELF, *spec.library});
  EXPECT_LOAD_ERROR(spec, "a CPU executable holds one kernel library, this "
                          "one 2");
}

TEST(ExecutableTest, RejectsBadFunctions) {
  ExecutableSpec spec = sampleSpec();
  spec.functions.clear();
  EXPECT_LOAD_ERROR(spec, "executable has no functions");
  spec = sampleSpec();
  forward(spec).name.reset();
  EXPECT_LOAD_ERROR(spec, "function 0 has no name");
  spec = sampleSpec();
  spec.functions.push_back(spec.functions[0]);
  EXPECT_LOAD_ERROR(spec, "two functions are named 'forward'");
  spec = sampleSpec();
  forward(spec).commands[2] = RawCommandSpec{0};
  EXPECT_LOAD_ERROR(spec, "function 'forward' command 2 is empty");
  forward(spec).commands[2] = RawCommandSpec{10};
  EXPECT_LOAD_ERROR(spec,
                    "function 'forward' command 2 has unknown command type 10");
}

TEST(ExecutableTest, RejectsBadTensorTypes) {
  ExecutableSpec spec = sampleSpec();
  forward(spec).inputs[0].dtype = static_cast<DType>(13);
  EXPECT_LOAD_ERROR(spec, "function 'forward' input 0: invalid dtype 13");
  spec = sampleSpec();
  forward(spec).outputs[1].shape = {4, -1};
  EXPECT_LOAD_ERROR(spec, "function 'forward' output 1: negative dimension -1");
  spec = sampleSpec();
  forward(spec).inputs[1].shape = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_LOAD_ERROR(spec, "function 'forward' input 1: f32[1099511627776,"
                          "1099511627776] is too large");
  forward(spec).inputs[1].shape = {INT64_MAX};
  forward(spec).inputs[1].dtype = DType::I1;
  EXPECT_LOAD_ERROR(spec, "is too large (the limit is 64 GiB)");
  forward(spec).inputs[1].shape = {(int64_t(1) << 35) + 1};
  forward(spec).inputs[1].dtype = DType::F16;
  EXPECT_LOAD_ERROR(spec, "is too large (the limit is 64 GiB)");
  forward(spec).inputs[1].shape = {int64_t(1) << 35};
  EXPECT_EQ(loadError(spec), "") << "64 GiB exactly is allowed";
}

TEST(ExecutableTest, RejectsAbsurdArena) {
  ExecutableSpec spec = sampleSpec();
  forward(spec).arenaSize = (uint64_t(64) << 30) + 1;
  EXPECT_LOAD_ERROR(spec, "function 'forward': arena size 68719476737 bytes "
                          "is too large");
  forward(spec).arenaSize = UINT64_MAX;
  EXPECT_LOAD_ERROR(spec, "is too large");
}

TEST(ExecutableTest, RejectsBadBufferRefs) {
  const std::string ctx = "function 'forward' command 0 (dispatch): ";
  auto withBinding = [](size_t i, RefSpec ref) {
    ExecutableSpec spec = sampleSpec();
    command<DispatchSpec>(spec, 0).bindings[i] = ref;
    return spec;
  };
  EXPECT_LOAD_ERROR(withBinding(2, {static_cast<Space>(5), 0, 0, 64}),
                    ctx + "binding 2 has invalid space 5");
  // The size symbols: read-only, and a function without them has none.
  EXPECT_LOAD_ERROR(withBinding(2, {Space::Symbols, 0, 0, 8}),
                    ctx + "binding 2 writes to the size symbols, which are "
                          "read-only");
  EXPECT_LOAD_ERROR(withBinding(0, {Space::Symbols, 0, 0, 8}),
                    ctx + "binding 0 (8 bytes at offset 0) does not fit in the "
                          "size symbols (0 bytes)");
  EXPECT_LOAD_ERROR(withBinding(0, inputRef(2, 64)),
                    ctx + "binding 0 refers to input 2, but there are 2");
  EXPECT_LOAD_ERROR(withBinding(0, outputRef(7, 64)),
                    ctx + "binding 0 refers to output 7, but there are 2");
  EXPECT_LOAD_ERROR(withBinding(0, constantRef(1, 64)),
                    ctx + "binding 0 refers to constant 1, but there are 1");
  EXPECT_LOAD_ERROR(withBinding(2, {Space::Arena, 1, 0, 64}),
                    ctx + "binding 2 refers to arena 1; the arena index must "
                          "be 0");
  EXPECT_LOAD_ERROR(withBinding(0, inputRef(0, 65)),
                    ctx + "binding 0 (65 bytes at offset 0) does not fit in "
                          "input 0 (64 bytes)");
  EXPECT_LOAD_ERROR(withBinding(1, inputRef(1, 4, 61)),
                    "does not fit in input 1 (64 bytes)");
  EXPECT_LOAD_ERROR(withBinding(2, outputRef(1, 64, 1)),
                    "does not fit in output 1 (64 bytes)");
  EXPECT_LOAD_ERROR(withBinding(2, arenaRef(100, 64)),
                    ctx + "binding 2 (64 bytes at offset 100) does not fit in "
                          "the arena (128 bytes)");
  EXPECT_LOAD_ERROR(withBinding(0, constantRef(0, 8, 60)),
                    "does not fit in constant 0 (64 bytes)");
  // offset + size wraps around.
  EXPECT_LOAD_ERROR(withBinding(2, arenaRef(UINT64_MAX, 2)),
                    "binding 2 (2 bytes at offset 18446744073709551615) does "
                    "not fit in the arena");
  EXPECT_LOAD_ERROR(withBinding(2, arenaRef(2, UINT64_MAX)), "does not fit");
  // A binding must be exactly as large as the kernel's view of it: a kernel
  // reads and writes its whole static shape.
  EXPECT_LOAD_ERROR(withBinding(2, arenaRef(64, 32)),
                    ctx + "binding 2 has 32 bytes but kernel 0 uses 64");
  // The kernel writes its last binding: it cannot be an input or constant.
  EXPECT_LOAD_ERROR(withBinding(2, inputRef(0, 64)),
                    ctx + "binding 2 writes to input 0, which is read-only");
  EXPECT_LOAD_ERROR(withBinding(2, constantRef(0, 64)),
                    ctx + "binding 2 writes to constant 0, which is read-only");
}

TEST(ExecutableTest, RejectsKernelsWithoutBindingSizes) {
  ExecutableSpec spec = sampleSpec();
  spec.kernels[kAdd].bindingSizes = {64, 64};
  EXPECT_LOAD_ERROR(spec, "kernel 0 does not give the size of each of its 3 "
                          "bindings");
  spec = sampleSpec();
  spec.kernels[kAdd].numOutputs = 4;
  EXPECT_LOAD_ERROR(spec, "kernel 0 writes 4 bindings but has 3");
}

TEST(ExecutableTest, RejectsBadDispatches) {
  const std::string ctx = "function 'forward' command 2 (dispatch): ";
  ExecutableSpec spec = sampleSpec();
  command<DispatchSpec>(spec, 2).kernel = 4;
  EXPECT_LOAD_ERROR(spec, ctx + "kernel 4 does not exist (the executable has "
                                "4 kernels)");
  spec = sampleSpec();
  command<DispatchSpec>(spec, 2).kernel = kAdd;
  EXPECT_LOAD_ERROR(spec, ctx + "kernel 0 takes 3 bindings but the dispatch "
                                "has 2");
  spec = sampleSpec();
  command<DispatchSpec>(spec, 2).bindings.clear();
  EXPECT_LOAD_ERROR(spec, ctx + "kernel 1 takes 2 bindings but the dispatch "
                                "has 0");
  spec = sampleSpec();
  command<DispatchSpec>(spec, 2).maxWorkgroups = 0;
  EXPECT_LOAD_ERROR(spec, ctx + "max_workgroups must be at least 1");
}

TEST(ExecutableTest, RejectsBadGemms) {
  const std::string ctx = "function 'forward' command 1 (gemm): ";
  auto withGemm = [](auto edit) {
    ExecutableSpec spec = sampleSpec();
    edit(command<GemmSpec>(spec, 1));
    return spec;
  };
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.m = -1; }),
                    ctx + "m = -1 is out of range [0, 2147483647]");
  // The library epilogue: n biases of C's type, a known activation.
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.bias = constantRef(0, 12); }),
                    ctx + "the bias needs 16 bytes (n values of C's type) at "
                          "an offset that is a multiple of 4, its buffer ref "
                          "has 12 at 0");
  // Element types: one operand type of three, C f32 or that type, TF32
  // only for f32 operands.
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.abDtype = fbs::DType::I8; }),
                    ctx + "operands of type 8 are not supported (f32, bf16, "
                          "f16)");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.cDtype = fbs::DType::F16; }),
                    ctx + "result type 1 is neither f32 nor the operands' "
                          "type");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.abDtype = fbs::DType::BF16;
                      g.allowTf32 = true;
                    }),
                    ctx + "allow_tf32 needs f32 operands");
  // An f16 C is half the bytes: the f32-sized buffer ref is refused.
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.abDtype = g.cDtype = fbs::DType::F16;
                    }),
                    ctx + "result C needs");
  EXPECT_LOAD_ERROR(
      withGemm([](GemmSpec &g) { g.bias = constantRef(0, 16, 60); }),
      ctx + "bias");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.activation = static_cast<fbs::GemmActivation>(7);
                    }),
                    ctx + "invalid activation 7");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.k = int64_t(INT_MAX) + 1; }),
                    ctx + "k = 2147483648 is out of range");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {2};
                      g.aBatchStrides = {0};
                    }),
                    ctx + "batch_shape has 1 dimensions but a_batch_strides "
                          "has 1 and b_batch_strides has 0");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {-2};
                      g.aBatchStrides = g.bBatchStrides = {0};
                    }),
                    ctx + "negative batch dimension -2");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {2};
                      g.aBatchStrides = {-16};
                      g.bBatchStrides = {0};
                    }),
                    ctx + "negative batch stride in dimension 0");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {INT64_MAX, 4};
                      g.aBatchStrides = g.bBatchStrides = {0, 0};
                    }),
                    ctx + "batch size overflows");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.a.reset(); }),
                    ctx + "operand A is missing");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.a = arenaRef(0, 32); }),
                    ctx + "operand A needs 64 bytes but its buffer ref has 32");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.m = 2;
                      g.transposeA = true;
                      g.c = outputRef(0, 32);
                      g.a = arenaRef(0, 28);
                    }),
                    ctx + "operand A needs 32 bytes but its buffer ref has 28");
  // B = constant 0 holds one 4x4 matrix; a stride of 16 reads a second one.
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {2};
                      g.aBatchStrides = {0};
                      g.bBatchStrides = {16};
                      g.c = arenaRef(0, 128);
                    }),
                    ctx +
                        "operand B needs 128 bytes but its buffer ref has 64");
  // A broadcast batch (stride 0) only needs one matrix.
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {2};
                      g.aBatchStrides = {0};
                      g.bBatchStrides = {0};
                    }),
                    ctx + "result C needs 128 bytes but its buffer ref has 64");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {3, 1 << 30};
                      g.aBatchStrides = {1 << 30, 1};
                      g.bBatchStrides = {0, 0};
                    }),
                    ctx + "operand A needs 12884901948 bytes but its buffer "
                          "ref has 64");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) {
                      g.batchShape = {2, 2};
                      g.aBatchStrides = {INT64_MAX, 1};
                      g.bBatchStrides = {0, 0};
                    }),
                    ctx + "operand A extent overflows");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.c = outputRef(0, 60); }),
                    ctx + "result C needs 64 bytes but its buffer ref has 60");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.c = inputRef(0, 64); }),
                    ctx + "result C writes to input 0, which is read-only");
  EXPECT_LOAD_ERROR(withGemm([](GemmSpec &g) { g.a = arenaRef(2, 64); }),
                    ctx + "operand A offset 2 is not a multiple of 4");
  // Empty products need no operand bytes.
  EXPECT_EQ(loadError(withGemm([](GemmSpec &g) {
              g.k = 0;
              g.a = g.b = arenaRef(0, 0);
            })),
            "");
  EXPECT_EQ(loadError(withGemm([](GemmSpec &g) {
              g.batchShape = {0};
              g.aBatchStrides = g.bBatchStrides = {1000};
              g.a = g.b = arenaRef(0, 0);
              g.c = outputRef(0, 0);
            })),
            "");
}

TEST(ExecutableTest, RejectsBadCopies) {
  const std::string ctx = "function 'forward' command 3 (copy): ";
  ExecutableSpec spec = sampleSpec();
  command<CopySpec>(spec, 3).dst = outputRef(1, 32);
  EXPECT_LOAD_ERROR(spec, ctx + "source has 64 bytes but destination has 32");
  command<CopySpec>(spec, 3).dst = constantRef(0, 64);
  EXPECT_LOAD_ERROR(spec, ctx + "destination writes to constant 0, which is "
                                "read-only");
  command<CopySpec>(spec, 3).src.reset();
  EXPECT_LOAD_ERROR(spec, ctx + "source is missing");
}

TEST(ExecutableTest, RejectsBadKernels) {
  ExecutableSpec spec = sampleSpec();
  spec.kernels[1].symbol = "no_such_entry";
  EXPECT_LOAD_ERROR(spec, "kernel 1: symbol 'no_such_entry' is not defined by "
                          "the kernel library");
  // A symbol of a library the kernel library depends on is no kernel.
  spec.kernels[1].symbol = "malloc";
  EXPECT_LOAD_ERROR(spec, "kernel 1: symbol 'malloc' is not defined");
  spec.kernels[1].symbol = "";
  EXPECT_LOAD_ERROR(spec, "kernel 1 has no symbol");
  spec.kernels[1].symbol = std::string("scale2_f32_entry\0x", 18);
  EXPECT_LOAD_ERROR(spec, "kernel 1: symbol contains a NUL byte");
  spec = sampleSpec();
  spec.library.reset();
  EXPECT_LOAD_ERROR(spec, "executable has 4 kernels but no kernel library");
  spec.library = std::vector<uint8_t>();
  EXPECT_LOAD_ERROR(spec, "executable has 4 kernels but no kernel library");
  spec.library = std::vector<uint8_t>(1000, 0x42);
  EXPECT_LOAD_ERROR(spec, "cannot load the kernel library: ");
}

TEST(ExecutableTest, RejectsBadChecksums) {
  ExecutableSpec spec = sampleSpec();
  spec.checksum = 1;
  EXPECT_LOAD_ERROR(spec, "checksum mismatch (file says 0x0000000000000001");
}

/// The offset of the first occurrence of \p text in \p bytes.
static size_t find(const std::vector<uint8_t> &bytes, const std::string &text) {
  auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
  EXPECT_NE(it, bytes.end()) << "'" << text << "' is not in the file";
  return it - bytes.begin();
}

TEST(ExecutableTest, ChecksumCoversEveryByte) {
  std::vector<uint8_t> good = build(sampleSpec());
  ASSERT_EQ(loadError(good), "");
  size_t field = *flow::runtime::checksumFieldOffset(good.data());
  // Every single-bit change outside the checksum field itself that the
  // FlatBuffers verifier lets through is a checksum mismatch: metadata,
  // padding, the kernel library and the constants alike.
  size_t caught = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    if (i >= field && i < field + 8)
      continue;
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x10;
    std::string error = loadError(bad);
    ASSERT_NE(error, "") << "byte " << i << " changed and the file loaded";
    caught += error.find("checksum mismatch") != std::string::npos;
  }
  EXPECT_GT(caught, good.size() / 2);
}

TEST(ExecutableTest, KernelSymbolPointingAtAnotherKernel) {
  // The attack: one kernel's symbol renamed to another's (same length), so
  // the dispatch would run other code on its buffers.
  std::vector<uint8_t> bytes = build(sampleSpec());
  // The metadata's string (a FlatBuffers string: its length, then its
  // bytes), not the library's.
  size_t at = find(bytes, std::string("\x10\0\0\0scale2_f32_entry", 20)) + 4;
  std::memcpy(&bytes[at], "address_of_entry", 16);
  // Without a new checksum, the file is corrupt.
  EXPECT_NE(loadError(bytes).find("checksum mismatch"), std::string::npos);
  // With one, the symbols are no longer unique.
  flow::runtime::stampChecksum(bytes.data(), bytes.size());
  EXPECT_NE(loadError(bytes).find("kernel 2: symbol 'address_of_entry' names "
                                  "another kernel too"),
            std::string::npos)
      << loadError(bytes);

  // A symbol renamed to another kernel the file does not list: the library's
  // ABI table says that code takes other buffers.
  ExecutableSpec spec = sampleSpec();
  spec.kernels[kScale2].symbol = "address_of_entry";
  spec.kernels[kAddressOf].symbol = "workgroups_entry";
  spec.kernels[kWorkgroups].symbol = "add_f32_entry";
  spec.kernels[kAdd].symbol = "scale2_f32_entry";
  EXPECT_LOAD_ERROR(spec, "kernel 0 ('scale2_f32_entry'): the executable says "
                          "it takes 3 buffers (1 written) but its code was "
                          "compiled for 2 buffers of [64,64] bytes");
}

TEST(ExecutableTest, MetadataMustMatchTheLibrarysAbiTable) {
  // Metadata and a dispatch made consistent with each other (the loader's
  // bounds checks pass), but not with what the code was compiled for.
  ExecutableSpec spec = sampleSpec();
  spec.kernels[kScale2].bindingSizes = {32, 32};
  std::get<DispatchSpec>(spec.functions[0].commands[2]).bindings = {
      outputRef(0, 32), arenaRef(64, 32)};
  EXPECT_LOAD_ERROR(spec, "kernel 1 ('scale2_f32_entry'): the executable says "
                          "it takes 2 buffers (1 written) but its code was "
                          "compiled for 2 buffers of [64,64] bytes");
  spec = sampleSpec();
  spec.kernels[kScale2].numOutputs = 2;
  EXPECT_LOAD_ERROR(spec, "(2 written) but its code was compiled for 2 "
                          "buffers of [64,64] bytes (1 written)");
  // A symbol the library defines but the table does not list.
  spec = sampleSpec();
  spec.kernels[kWorkgroups].symbol = "unlisted_entry";
  EXPECT_LOAD_ERROR(spec, "is not in the kernel library's ABI table");
}

TEST(ExecutableTest, Sha256MatchesFips180) {
  // FIPS 180-4 examples.
  EXPECT_EQ(sha256Hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c"
                              "a495991b7852b855");
  EXPECT_EQ(sha256Hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a"
                                 "9cb410ff61f20015ad");
  const char *twoBlocks =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256Hex(twoBlocks, std::strlen(twoBlocks)),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256Hex(million.data(), million.size()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(ExecutableTest, AllowListOfTrustedExecutables) {
  std::vector<uint8_t> bytes = build(sampleSpec());
  std::string digest = sha256Hex(bytes.data(), bytes.size());
  char path[] = "/tmp/flow-trusted-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  auto write = [&](const std::string &text) {
    FILE *f = std::fopen(path, "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  LoadOptions options;
  options.trustedList = path;
  auto loadWith = [&](const std::vector<uint8_t> &file) {
    auto exe = Executable::loadBytes(file, options);
    return exe ? std::string() : exe.status().message();
  };
  // Listed (sha256sum's format, upper case too): it loads.
  write("# models we built\n\n" + digest + "  model.fbin\n");
  EXPECT_EQ(loadWith(bytes), "");
  std::string upper = digest;
  for (char &c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  write(upper + "\n");
  EXPECT_EQ(loadWith(bytes), "");
  // Not listed: refused, even though it is a valid executable.
  write(std::string(64, '0') + "\n");
  EXPECT_EQ(loadWith(bytes), "the executable is not trusted: its SHA-256 " +
                                 digest + " is not in the allow-list '" +
                                 path + "'");
  // A malformed list is an error, not an empty list.
  write(digest + "\nnot-a-digest\n");
  EXPECT_NE(loadWith(bytes).find("line 2 is not a SHA-256 digest"),
            std::string::npos);
  // The environment names the list when the options do not.
  write(std::string(64, 'f') + "\n");
  options.trustedList.clear();
  setenv(kTrustedListVariable, path, 1);
  EXPECT_NE(loadWith(bytes).find("(FLOW_TRUSTED_EXECUTABLES)"),
            std::string::npos);
  unsetenv(kTrustedListVariable);
  EXPECT_EQ(loadWith(bytes), "");
  std::remove(path);
}

TEST(ExecutableTest, RefusesMisalignedVectors) {
  // Found by fuzz-fbin-load (minimized): a mesh vector of 8-byte values at an
  // address FlatBuffers accepts (4-byte aligned) but that cannot be read as
  // int64 (UBSan). Every [long] vector the loader reads is checked. (Its
  // format version, bytes 36-39, is set to kExecutableVersion.)
  std::vector<uint8_t> bytes = {
      0x20, 0x00, 0x00, 0x00, 0x46, 0x4c, 0x4f, 0x57, 0x00, 0x00, 0x16, 0x00,
      0x24, 0x00, 0x04, 0x00, 0x00, 0x00, 0x08, 0x00, 0x0c, 0x00, 0x00, 0x00,
      0x10, 0x00, 0x18, 0x00, 0x00, 0x00, 0x14, 0x00, 0x16, 0x00, 0x00, 0x00,
      0x08, 0x00, 0x00, 0x00, 0x34, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00,
      0x28, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
      0x04, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x73, 0x75, 0x6d, 0x00, 0x01, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  bytes[36] = static_cast<uint8_t>(flow::runtime::kExecutableVersion);
  ASSERT_TRUE(flow::runtime::stampChecksum(bytes.data(), bytes.size()));
  EXPECT_NE(loadError(bytes).find("mesh is misaligned"), std::string::npos)
      << loadError(bytes);
}

TEST(ExecutableTest, RefusesOlderFormatVersions) {
  ExecutableSpec spec = sampleSpec();
  spec.version = 5;
  EXPECT_LOAD_ERROR(spec, "unsupported format version 5 (this runtime reads "
                          "version " +
                              std::to_string(kExecutableVersion) +
                              "; recompile the model with this Flow)");
}

TEST(ExecutableTest, RefusesKernelsForAnotherCpu) {
  // Kernels that may use an instruction this CPU lacks are refused before
  // the library is loaded, naming the CPU and what is missing.
  ExecutableSpec spec = sampleSpec();
  spec.cpu = "future";
  spec.cpuFeatures = {"flow-test-feature"};
  EXPECT_LOAD_ERROR(spec, "the kernels were compiled for CPU 'future' and "
                          "may use flow-test-feature, which this CPU lacks");
  // Every checked feature this CPU has: the executable loads and runs.
  std::vector<std::string> all(std::begin(flow::runtime::kCheckedCpuFeatures),
                               std::end(flow::runtime::kCheckedCpuFeatures));
  std::vector<std::string> missing = flow::runtime::missingCpuFeatures(all);
  spec.cpuFeatures.clear();
  for (const std::string &name : all)
    if (std::find(missing.begin(), missing.end(), name) == missing.end())
      spec.cpuFeatures.push_back(name);
  EXPECT_EQ(loadError(spec), "");
  // One it lacks, if any, by name.
  if (!missing.empty()) {
    spec.cpuFeatures.push_back(missing.front());
    EXPECT_LOAD_ERROR(spec, "may use " + missing.front() +
                                ", which this CPU lacks");
  }
}

TEST(ExecutableTest, ChecksumIsFnv1a64) {
  // Reference values of FNV-1a 64.
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
  // Chaining hashes one stream.
  EXPECT_EQ(fnv1a64("bar", 3, fnv1a64("foo", 3)), fnv1a64("foobar", 6));
}

TEST(ExecutableTest, LoadsWithoutKernels) {
  ExecutableSpec spec;
  FunctionSpec f;
  f.name = "copy";
  f.inputs = {{DType::I32, {3}}};
  f.outputs = {{DType::I32, {3}}};
  f.commands = {CopySpec{inputRef(0, 12), outputRef(0, 12)}};
  spec.functions = {f};
  EXPECT_EQ(loadError(spec), "");
}

TEST(ExecutableTest, SeveralExecutablesAtOnce) {
  std::vector<std::unique_ptr<Executable>> loaded;
  for (int i = 0; i < 8; ++i) {
    StatusOr<std::unique_ptr<Executable>> exe =
        Executable::loadBytes(build(sampleSpec()));
    ASSERT_TRUE(exe) << exe.status().message();
    loaded.push_back(std::move(*exe));
  }
  loaded.clear();
  // Reloading after unloading finds a fresh library each time.
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(loadError(sampleSpec()), "");
}

} // namespace

TEST(ExecutableTest, ReadsTheStateTable) {
  StatusOr<std::unique_ptr<Executable>> exe =
      Executable::loadBytes(build(accumulatorSpec()));
  ASSERT_TRUE(exe) << exe.status().message();
  const FunctionSignature &sig = (*exe)->functions()[0];
  ASSERT_EQ(sig.state.size(), 1u);
  EXPECT_EQ(sig.state[0].name, "acc");
  EXPECT_EQ(sig.state[0].input, 0u);
  EXPECT_EQ(sig.state[0].output, 0);
  EXPECT_TRUE(sig.state[0].zeros);
  EXPECT_EQ(sig.tiedInput(0), 0);
  EXPECT_EQ(sig.tiedInput(1), -1);
}

TEST(ExecutableTest, RefusesBadStateTables) {
  auto with = [](auto change) {
    ExecutableSpec spec = accumulatorSpec();
    change(spec.functions[0]);
    return spec;
  };
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) { f.state[0].input = 2; }),
                    "function 'accumulate' state 0 ('acc'): input 2 does not "
                    "exist (the function takes 2)");
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) { f.state[0].output = 7; }),
                    "state 0 ('acc'): output 7 does not exist");
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) { f.state[0].name = ""; }),
                    "function 'accumulate' state 0 has no name");
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) {
                      f.state.push_back({"acc", 1, -1, false});
                    }),
                    "state 1 ('acc'): the name is given twice");
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) {
                      f.state.push_back({"x", 0, -1, false});
                    }),
                    "state 1 ('x'): input 0 is another state's");
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) {
                      f.outputs[0] = {DType::F32, {16}};
                    }),
                    "state 0 ('acc'): input 0 is f32[4,4] but output 0 is "
                    "f32[16]");
  // A tied output is written by no command; an input no state owns stays
  // read-only.
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) {
                      f.commands.push_back(
                          CopySpec{inputRef(1, 64), outputRef(0, 64)});
                    }),
                    "uses output 0, whose value is written into its state's "
                    "input in place: no command may use it");
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) {
                      f.commands.push_back(
                          CopySpec{inputRef(0, 64), inputRef(1, 64)});
                    }),
                    "writes to input 1, which is read-only");
  // Without a tied output the state input is read-only too.
  EXPECT_LOAD_ERROR(with([](FunctionSpec &f) { f.state[0].output = -1; }),
                    "writes to input 0, which is read-only");
}
