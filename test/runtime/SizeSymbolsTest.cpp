//===- SizeSymbolsTest.cpp - Functions whose rows vary between calls ------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"

#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace flow::runtime;
using namespace flow::test;

namespace {

/// "rows" takes x : f32[batch, 4] (batch in [1, 4]) and returns x @ w (a
/// library GEMM over this call's rows) and a copy of x (this call's rows),
/// compiled for the upper bound.
ExecutableSpec rowsSpec() {
  ExecutableSpec spec;
  spec.kernels = testKernelSpecs();
  spec.library = testKernels();
  spec.constants = {floatBytes(sampleWeights())};
  FunctionSpec f;
  f.name = "rows";
  f.symbols = {{"batch", 1, 4}};
  f.inputs = {{DType::F32, {4, 4}, {"batch", "4"}}};
  f.outputs = {{DType::F32, {4, 4}, {"batch", "4"}},
               {DType::F32, {4, 4}, {"batch", "4"}}};
  GemmSpec gemm;
  gemm.m = gemm.n = gemm.k = 4;
  gemm.a = inputRef(0, 64);
  gemm.b = constantRef(0, 64);
  gemm.c = outputRef(0, 64);
  gemm.rows = "batch";
  f.commands.push_back(gemm);
  f.commands.push_back(CopySpec{inputRef(0, 64), outputRef(1, 64), "batch"});
  spec.functions.push_back(f);
  return spec;
}

std::unique_ptr<Session> session(const ExecutableSpec &spec) {
  StatusOr<std::unique_ptr<Executable>> exe =
      Executable::loadBytes(build(spec));
  EXPECT_TRUE(exe) << exe.status().message();
  if (!exe)
    return nullptr;
  RuntimeOptions options;
  options.threads = 2;
  StatusOr<std::unique_ptr<Session>> s = Session::create(
      std::shared_ptr<const Executable>(std::move(*exe)), options);
  EXPECT_TRUE(s) << s.status().message();
  return s ? std::move(*s) : nullptr;
}

HostTensor rowsOf(int64_t batch) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {batch, 4};
  std::vector<float> v(batch * 4);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.5f * static_cast<float>(i) - 1.0f;
  t.data.resize(v.size() * 4);
  if (!v.empty())
    std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> floatsOf(const HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

TEST(SizeSymbolsTest, EachCallRunsItsOwnRows) {
  std::unique_ptr<Session> s = session(rowsSpec());
  ASSERT_TRUE(s);
  const FunctionSignature &sig = s->executable().functions()[0];
  ASSERT_EQ(sig.symbols.size(), 1u);
  EXPECT_EQ(sig.inputs[0].str(), "f32[batch,4]");
  std::vector<float> w = sampleWeights();
  for (int64_t batch : {1, 3, 4, 2}) {
    HostTensor x = rowsOf(batch);
    StatusOr<std::vector<HostTensor>> out = s->run("rows", {x});
    ASSERT_TRUE(out) << out.status().message();
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{batch, 4}));
    EXPECT_EQ((*out)[1].shape, (std::vector<int64_t>{batch, 4}));
    std::vector<float> in = floatsOf(x), got = floatsOf((*out)[0]);
    for (int64_t i = 0; i < batch; ++i)
      for (int j = 0; j < 4; ++j) {
        float want = 0;
        for (int k = 0; k < 4; ++k)
          want += in[i * 4 + k] * w[k * 4 + j];
        EXPECT_NEAR(got[i * 4 + j], want, 1e-5f) << "row " << i;
      }
    EXPECT_EQ(floatsOf((*out)[1]), in);
  }
}

TEST(SizeSymbolsTest, CallsOutsideTheBoundsAreNamed) {
  std::unique_ptr<Session> s = session(rowsSpec());
  ASSERT_TRUE(s);
  auto error = [&](HostTensor x) {
    StatusOr<std::vector<HostTensor>> out = s->run("rows", {x});
    return out ? std::string() : out.status().message();
  };
  EXPECT_EQ(error(rowsOf(5)),
            "function 'rows': input 0 dimension 0 is size symbol 'batch', "
            "which takes sizes in [1, 4]: got 5 (input shape [5,4])");
  EXPECT_EQ(error(rowsOf(0)),
            "function 'rows': input 0 dimension 0 is size symbol 'batch', "
            "which takes sizes in [1, 4]: got 0 (input shape [0,4])");
  HostTensor wide = rowsOf(2);
  wide.shape = {1, 8};
  EXPECT_EQ(error(wide), "function 'rows': input 0: expected f32[batch,4], "
                         "got shape [1,8]");
  // Caller buffers need the symbols' values, in bounds.
  std::vector<float> in(8), out0(8), out1(8);
  Status st =
      s->run(0, {{in.data(), 32}}, {{out0.data(), 32}, {out1.data(), 32}});
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("has size symbols"), std::string::npos)
      << st.message();
  std::vector<int64_t> two = {2}, nine = {9};
  EXPECT_TRUE(s->run(0, {{in.data(), 32}},
                     {{out0.data(), 32}, {out1.data(), 32}}, &two));
  st = s->run(0, {{in.data(), 32}}, {{out0.data(), 32}, {out1.data(), 32}},
              &nine);
  EXPECT_NE(st.message().find("'batch' = 9 is outside its bounds [1, 4]"),
            std::string::npos)
      << st.message();
}

TEST(SizeSymbolsTest, CheckNumericsChecksTheOutputsRows) {
  std::unique_ptr<Session> s = session(rowsSpec());
  ASSERT_TRUE(s);
  s->setCheckNumerics(true);
  HostTensor x = rowsOf(2);
  EXPECT_TRUE(s->run("rows", {x}));
  float inf = INFINITY;
  std::memcpy(x.data.data() + 4 * 5, &inf, 4);
  StatusOr<std::vector<HostTensor>> out = s->run("rows", {x});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("input 0 (f32[batch,4]) holds inf"),
            std::string::npos)
      << out.status().message();
}

TEST(SizeSymbolsTest, BindsEachSymbolOnceAcrossInputs) {
  FunctionSignature sig;
  sig.name = "f";
  sig.symbols = {{"batch", 1, 8}, {"seq", 1, 16}};
  sig.inputs = {{DType::F32, {8, 16}, {"batch", "seq"}},
                {DType::F32, {8, 33}, {"batch", "2*seq + 1"}}};
  StatusOr<std::vector<int64_t>> ok = bindSymbols(sig, {{3, 5}, {3, 11}});
  ASSERT_TRUE(ok) << ok.status().message();
  EXPECT_EQ(*ok, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(callShape(sig, sig.inputs[1], *ok), (std::vector<int64_t>{3, 11}));
  StatusOr<std::vector<int64_t>> disagree = bindSymbols(sig, {{3, 5}, {4, 11}});
  ASSERT_FALSE(disagree);
  EXPECT_EQ(disagree.status().message(),
            "input 1 dimension 0 is size symbol 'batch', which input 0 "
            "dimension 0 gave as 3: got 4 (input shape [4,11])");
  StatusOr<std::vector<int64_t>> derived = bindSymbols(sig, {{3, 5}, {3, 12}});
  ASSERT_FALSE(derived);
  EXPECT_EQ(derived.status().message(),
            "input 1 dimension 1 is 2*seq + 1, which is 11 in this call: got "
            "12 (input shape [3,12])");
}

TEST(SizeSymbolsTest, LoadingChecksSymbolsAndExtents) {
  ExecutableSpec spec = rowsSpec();
  spec.functions[0].inputs[0].extents = {"batch", "5"};
  EXPECT_NE(loadError(spec).find("function 'rows' input 0 dimension 1: extent "
                                 "5 ranges over [5, 5], not up to its size 4"),
            std::string::npos)
      << loadError(spec);
  spec = rowsSpec();
  spec.functions[0].inputs[0].extents = {"rows", "4"};
  EXPECT_NE(loadError(spec).find("uses a size symbol the function does not "
                                 "declare"),
            std::string::npos)
      << loadError(spec);
  spec = rowsSpec();
  std::get<2>(spec.functions[0].symbols[0]) = 8; // the bound, not the size
  EXPECT_NE(loadError(spec).find("ranges over [1, 8], not up to its size 4"),
            std::string::npos)
      << loadError(spec);
  spec = rowsSpec();
  std::get<CopySpec>(spec.functions[0].commands[1]).rows = "3*batch";
  EXPECT_NE(loadError(spec).find("64 bytes are not rows of extent 3*batch"),
            std::string::npos)
      << loadError(spec);
  spec = rowsSpec();
  std::get<GemmSpec>(spec.functions[0].commands[0]).rows = "batch +";
  EXPECT_NE(loadError(spec).find("are not an extent over size symbols"),
            std::string::npos)
      << loadError(spec);
  // A library command on an input or output whose rows vary counts the
  // call's rows, or it would read or write past the caller's buffer.
  spec = rowsSpec();
  std::get<CopySpec>(spec.functions[0].commands[1]).rows = "";
  EXPECT_NE(loadError(spec).find("command 1 uses input 0 (f32[batch,4]), "
                                 "whose rows vary, without counting the "
                                 "call's rows"),
            std::string::npos)
      << loadError(spec);
  spec = rowsSpec();
  std::get<GemmSpec>(spec.functions[0].commands[0]).transposeA = true;
  EXPECT_NE(loadError(spec).find("command 0 uses input 0"), std::string::npos)
      << loadError(spec);
  // Only rows vary; symbols take sizes from 1.
  spec = rowsSpec();
  spec.functions[0].inputs[0] = {DType::F32, {4, 4}, {"4", "batch"}};
  EXPECT_NE(loadError(spec).find("extent batch is not the tensor's rows"),
            std::string::npos)
      << loadError(spec);
  spec = rowsSpec();
  std::get<1>(spec.functions[0].symbols[0]) = 0;
  EXPECT_NE(loadError(spec).find("has bounds [0, 4]"), std::string::npos)
      << loadError(spec);
  spec = rowsSpec();
  spec.functions[0].symbols.push_back({"batch", 1, 4});
  EXPECT_NE(loadError(spec).find("'batch' is declared twice"),
            std::string::npos)
      << loadError(spec);
}

} // namespace
