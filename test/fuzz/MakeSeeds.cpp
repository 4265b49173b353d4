//===- MakeSeeds.cpp - Writes the seed corpora of the fuzz targets --------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// flow-fuzz-seeds <corpus dir> writes small valid inputs under
// <dir>/{npy,safetensors,fbin-load,fbin-run}: .npy files of every dtype and
// header version, safetensors archives, and executables built with
// test/runtime/FbinBuilder.h over the test kernel library (one per command
// kind, several functions, a one-device mesh). Each executable is loaded
// first: a seed that does not load is a bug here.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"

#include "flow/runtime/Executable.h"
#include "flow/runtime/Npy.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace flow;
using namespace flow::test;
using runtime::HostTensor;

namespace {

bool writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return fclose(f) == 0 && ok;
}

std::vector<uint8_t> bytesOf(const std::string &s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

/// Seeds of fuzz-npy.
std::vector<std::pair<std::string, std::vector<uint8_t>>> npySeeds() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds;
  const std::pair<DType, std::vector<int64_t>> tensors[] = {
      {DType::F32, {2, 3}}, {DType::F16, {4}},    {DType::BF16, {2, 2}},
      {DType::I64, {}},     {DType::I32, {1, 0}}, {DType::I1, {3, 1, 2}}};
  for (const auto &[dtype, shape] : tensors) {
    HostTensor t;
    t.dtype = dtype;
    t.shape = shape;
    t.data.resize(size_t(t.numElements()) * runtime::dtypeSize(dtype));
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = dtype == DType::I1 ? i % 2 : uint8_t(i * 37);
    seeds.push_back({std::string(runtime::dtypeName(dtype)) + ".npy",
                     runtime::serializeNpy(t)});
  }
  // Versions 2.0 and 3.0, and header spellings numpy has used.
  auto withHeader = [](uint8_t major, const std::string &dict,
                       size_t dataBytes) {
    size_t lenBytes = major == 1 ? 2 : 4;
    std::string header = dict + "\n";
    std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
    for (size_t i = 0; i < lenBytes; ++i)
      out.push_back(uint8_t(header.size() >> (8 * i)));
    out.insert(out.end(), header.begin(), header.end());
    out.resize(out.size() + dataBytes, 1);
    return out;
  };
  seeds.push_back({"v2.npy", withHeader(2, "{'descr': '<i4', 'fortran_order': "
                                           "False, 'shape': (2,), }",
                                        8)});
  seeds.push_back({"v3.npy", withHeader(3, "{\"descr\": \"=f4\", \"shape\": "
                                           "(1L, 2L), \"fortran_order\": "
                                           "False}",
                                        8)});
  seeds.push_back(
      {"void.npy",
       withHeader(1, "{'descr': '|V2', 'fortran_order': False, 'shape': ()}",
                  2)});
  return seeds;
}

/// Seeds of fuzz-safetensors.
std::vector<std::pair<std::string, std::vector<uint8_t>>> safetensorsSeeds() {
  auto archive = [](const std::string &json, size_t dataBytes) {
    std::vector<uint8_t> out(8);
    for (int i = 0; i < 8; ++i)
      out[i] = uint8_t(uint64_t(json.size()) >> (8 * i));
    out.insert(out.end(), json.begin(), json.end());
    out.resize(out.size() + dataBytes, 7);
    return out;
  };
  return {
      {"two.safetensors",
       archive(R"({"__metadata__":{"format":"pt"},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},)"
               R"("w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})",
               24)},
      {"types.safetensors",
       archive(R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},)"
               R"( "b" : {"dtype":"I64","shape":[],"data_offsets":[6,14]},)"
               R"("c\u00e9\n":{"dtype":"U8","shape":[0,4],"data_offsets":)"
               R"([14,14]},"d":{"dtype":"BOOL","shape":[1,2],)"
               R"("data_offsets":[14,16]}})",
               16)},
      {"empty.safetensors", archive("{}", 0)},
  };
}

/// Seeds of the .fbin targets.
std::vector<std::pair<std::string, ExecutableSpec>> fbinSeeds() {
  std::vector<std::pair<std::string, ExecutableSpec>> seeds;
  seeds.push_back({"sample", sampleSpec()});

  ExecutableSpec unaligned = sampleSpec();
  unaligned.align = false;
  seeds.push_back({"sample-unaligned", unaligned});

  // Kernels that name the CPU they were compiled for and features of it
  // (x86-64-v2's, which every CPU the fuzzers run on has).
  ExecutableSpec features = sampleSpec();
  features.cpu = "x86-64-v2";
  features.cpuFeatures = {"sse4.2", "popcnt"};
  seeds.push_back({"cpu-features", features});

  // Copies only: no kernels, so no library is loaded.
  ExecutableSpec copies;
  copies.constants = {{1, 2, 3, 4, 5, 6, 7, 8}};
  FunctionSpec copy;
  copy.name = "copy";
  copy.inputs = {{DType::I32, {3}}};
  copy.outputs = {{DType::I32, {3}}, {DType::I1, {8}}, {DType::I32, {0}}};
  copy.arenaSize = 12;
  copy.commands = {CopySpec{inputRef(0, 12), arenaRef(0, 12)},
                   CopySpec{arenaRef(4, 8), outputRef(0, 8)},
                   CopySpec{arenaRef(0, 4), outputRef(0, 4, 8)},
                   CopySpec{constantRef(0, 8), outputRef(1, 8)},
                   CopySpec{inputRef(0, 0), outputRef(2, 0)}};
  copies.functions = {copy};
  seeds.push_back({"copies", copies});

  // A batched gemm with broadcast and transposed operands.
  ExecutableSpec gemm;
  FunctionSpec g;
  g.name = "bmm";
  g.inputs = {{DType::F32, {2, 3, 5, 4}}, {DType::F32, {2, 6, 5}}};
  g.outputs = {{DType::F32, {2, 3, 4, 6}}};
  GemmSpec mm;
  mm.m = 4;
  mm.n = 6;
  mm.k = 5;
  mm.transposeA = mm.transposeB = true;
  mm.batchShape = {2, 3};
  mm.aBatchStrides = {60, 20};
  mm.bBatchStrides = {30, 0};
  mm.a = inputRef(0, 2 * 3 * 5 * 4 * 4);
  mm.b = inputRef(1, 2 * 6 * 5 * 4);
  mm.c = outputRef(0, 2 * 3 * 4 * 6 * 4);
  g.commands = {mm};
  gemm.functions = {g};
  seeds.push_back({"gemm-batched", gemm});

  // The same with the library epilogue: a bias per column, then GELU.
  g.inputs.push_back({DType::F32, {6}});
  mm.bias = inputRef(2, 6 * 4);
  mm.activation = fbs::GemmActivation::GeluTanh;
  g.commands = {mm};
  gemm.functions = {g};
  seeds.push_back({"gemm-epilogue", gemm});

  // f16 operands and result (its bias f16 too), summed in f32.
  g.inputs = {{DType::F16, {2, 3, 5, 4}},
              {DType::F16, {2, 6, 5}},
              {DType::F16, {6}}};
  g.outputs = {{DType::F16, {2, 3, 4, 6}}};
  mm.a = inputRef(0, 2 * 3 * 5 * 4 * 2);
  mm.b = inputRef(1, 2 * 6 * 5 * 2);
  mm.c = outputRef(0, 2 * 3 * 4 * 6 * 2);
  mm.bias = inputRef(2, 6 * 2);
  mm.activation = fbs::GemmActivation::Relu;
  mm.abDtype = mm.cDtype = fbs::DType::F16;
  g.commands = {mm};
  gemm.functions = {g};
  seeds.push_back({"gemm-f16", gemm});

  // f32 with TF32 multiplies allowed.
  ExecutableSpec tf32;
  GemmSpec t = mm;
  FunctionSpec tg;
  tg.name = "tf32";
  tg.inputs = {{DType::F32, {4, 5}}, {DType::F32, {5, 6}}};
  tg.outputs = {{DType::F32, {4, 6}}};
  t.batchShape.clear();
  t.aBatchStrides.clear();
  t.bBatchStrides.clear();
  t.transposeA = t.transposeB = false;
  t.a = inputRef(0, 4 * 5 * 4);
  t.b = inputRef(1, 5 * 6 * 4);
  t.c = outputRef(0, 4 * 6 * 4);
  t.bias.reset();
  t.activation = fbs::GemmActivation::None;
  t.abDtype = t.cDtype = fbs::DType::F32;
  t.allowTf32 = true;
  tg.commands = {t};
  tf32.functions = {tg};
  seeds.push_back({"gemm-tf32", tf32});

  // Two convolutions through a blocked arena buffer (grouped, strided,
  // padded; bias, residual and relu).
  ExecutableSpec convs;
  convs.constants = {floatBytes(std::vector<float>(16 * 2 * 9, 0.5f)),
                     floatBytes(std::vector<float>(16, 0.25f))};
  FunctionSpec cv;
  cv.name = "convs";
  cv.inputs = {{DType::F32, {1, 4, 6, 5}}};
  cv.outputs = {{DType::F32, {1, 16, 3, 3}}};
  cv.arenaSize = 16 * 9 * 4;
  ConvSpec c1;
  c1.inputShape = {1, 4, 6, 5};
  c1.filterShape = {16, 2, 3, 3};
  c1.outputShape = {1, 16, 3, 3};
  c1.strides = {2, 2};
  c1.padding = {1, 1, 1, 1};
  c1.groups = 2;
  c1.relu = true;
  c1.input = inputRef(0, 4 * 30 * 4);
  c1.filter = constantRef(0, 16 * 18 * 4);
  c1.bias = constantRef(1, 16 * 4);
  c1.output = arenaRef(0, 16 * 9 * 4);
  c1.blockedOutput = true;
  ConvSpec c2;
  c2.inputShape = {1, 16, 3, 3};
  c2.filterShape = {16, 2, 3, 3};
  c2.outputShape = {1, 16, 3, 3};
  c2.padding = {1, 1, 1, 1};
  c2.groups = 8;
  c2.input = arenaRef(0, 16 * 9 * 4);
  c2.filter = constantRef(0, 16 * 18 * 4);
  c2.residual = arenaRef(0, 16 * 9 * 4);
  c2.blockedInput = c2.blockedResidual = true;
  c2.output = outputRef(0, 16 * 9 * 4);
  cv.commands = {c1, c2};
  convs.functions = {cv};
  seeds.push_back({"convs", convs});
  // The same in bf16 (--precision=bf16): the blocked buffer holds bf16.
  ExecutableSpec bf16Convs = convs;
  FunctionSpec &bf = bf16Convs.functions[0];
  bf.arenaSize = 16 * 9 * 2;
  for (CommandSpec &command : bf.commands) {
    auto &c = std::get<ConvSpec>(command);
    c.bf16 = true;
  }
  auto &b1 = std::get<ConvSpec>(bf.commands[0]);
  auto &b2 = std::get<ConvSpec>(bf.commands[1]);
  b1.output = b2.input = b2.residual = arenaRef(0, 16 * 9 * 2);
  b1.outputDtype = b2.inputDtype = b2.residualDtype = DType::BF16;
  seeds.push_back({"convs-bf16", bf16Convs});
  // A max pool between the two (ceil mode, padding, dilation), its buffers
  // blocked; and the pool's output in bf16.
  ExecutableSpec pools = convs;
  FunctionSpec &pf = pools.functions[0];
  pf.name = "pools";
  pf.arenaSize = 2 * 16 * 9 * 4;
  PoolSpec pool;
  pool.inputShape = {1, 16, 3, 3};
  pool.outputShape = {1, 16, 3, 3};
  pool.kernel = {3, 2};
  pool.strides = {1, 1};
  pool.padding = {1, 1, 1, 1};
  pool.dilations = {1, 2};
  pool.input = arenaRef(0, 16 * 9 * 4);
  pool.output = arenaRef(16 * 9 * 4, 16 * 9 * 4);
  pool.blockedInput = pool.blockedOutput = true;
  auto &p2 = std::get<ConvSpec>(pf.commands[1]);
  p2.input = pool.output;
  pf.commands.insert(pf.commands.begin() + 1, pool);
  seeds.push_back({"pools", pools});
  ExecutableSpec bf16Pools = pools;
  FunctionSpec &bp = bf16Pools.functions[0];
  auto &q = std::get<PoolSpec>(bp.commands[1]);
  auto &q2 = std::get<ConvSpec>(bp.commands[2]);
  q.output = q2.input = arenaRef(16 * 9 * 4, 16 * 9 * 2);
  q.outputDtype = q2.inputDtype = DType::BF16;
  q2.bf16 = true;
  seeds.push_back({"pools-bf16", bf16Pools});
  // An average pool there instead, its padding counted.
  ExecutableSpec avgPools = pools;
  auto &avg = std::get<PoolSpec>(avgPools.functions[0].commands[1]);
  avg.average = avg.countIncludePad = true;
  avg.kernel = {3, 3};
  avg.dilations = {1, 1};
  seeds.push_back({"pools-avg", avgPools});

  // Several functions and a parallel dispatch.
  ExecutableSpec several = sampleSpec();
  FunctionSpec scale;
  scale.name = "scale";
  scale.inputs = {{DType::F32, {16}}};
  scale.outputs = {{DType::F32, {16}}};
  scale.commands = {
      DispatchSpec{kScale2, 4, 1 << 20, {inputRef(0, 64), outputRef(0, 64)}}};
  FunctionSpec workgroups;
  workgroups.name = "workgroups";
  workgroups.outputs = {{DType::I64, {64}}};
  workgroups.commands = {
      DispatchSpec{kWorkgroups, 64, 1 << 20, {outputRef(0, 512)}}};
  FunctionSpec address;
  address.name = "address";
  address.inputs = {{DType::I64, {}}};
  address.outputs = {{DType::I64, {}}};
  address.commands = {
      DispatchSpec{kAddressOf, 1, 1, {inputRef(0, 8), outputRef(0, 8)}}};
  several.functions.push_back(scale);
  several.functions.push_back(workgroups);
  several.functions.push_back(address);
  seeds.push_back({"several-functions", several});

  // A state updated in place (a running sum).
  seeds.push_back({"state", accumulatorSpec()});

  // A one-device mesh: a device program with an all-reduce.
  ExecutableSpec mesh;
  mesh.mesh = {1};
  FunctionSpec device;
  device.name = "sum";
  device.ranks = {0};
  device.inputs = {{DType::F32, {4}}};
  device.outputs = {{DType::F32, {4}}};
  CollectiveSpec allReduce;
  allReduce.kind = fbs::CollectiveKind::AllReduce;
  allReduce.inputShape = allReduce.outputShape = {4};
  allReduce.input = inputRef(0, 16);
  allReduce.output = outputRef(0, 16);
  device.commands = {allReduce};
  mesh.functions = {device};
  seeds.push_back({"mesh", mesh});
  return seeds;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  std::string root = argv[1];
  int failures = 0;
  auto put = [&](const std::string &dir, const std::string &name,
                 const std::vector<uint8_t> &bytes) {
    mkdir((root + "/" + dir).c_str(), 0777);
    std::string path = root + "/" + dir + "/" + name;
    if (!writeFile(path, bytes)) {
      fprintf(stderr, "cannot write %s\n", path.c_str());
      ++failures;
    }
  };
  mkdir(root.c_str(), 0777);
  for (const auto &[name, bytes] : npySeeds())
    put("npy", name, bytes);
  for (const auto &[name, bytes] : safetensorsSeeds())
    put("safetensors", name, bytes);
  for (const auto &[name, spec] : fbinSeeds()) {
    std::vector<uint8_t> bytes = build(spec);
    std::string error = loadError(bytes);
    if (!error.empty()) {
      fprintf(stderr, "seed '%s' does not load: %s\n", name.c_str(),
              error.c_str());
      ++failures;
      continue;
    }
    put("fbin-load", name, bytes);
    put("fbin-run", name, bytes);
  }
  return failures ? 1 : 0;
}
