//===- SafeTensorsTest.cpp - Parameter archives ---------------------------===//
//
// Part of the Flow project.
//
// The safetensors reader (valid archives, every malformed header it must
// refuse, random corruption) and executables whose constants are
// parameters read from an archive.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"
#include "flow/runtime/SafeTensors.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <unistd.h>

using namespace flow::runtime;
using namespace flow::test;

namespace {

/// An archive with header \p json and data section \p data.
std::vector<uint8_t> archive(const std::string &json,
                             const std::vector<uint8_t> &data) {
  std::vector<uint8_t> out(8);
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), json.begin(), json.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> floats(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  auto file = SafeTensorsFile::parse(bytes.data(), bytes.size());
  return file ? "" : file.status().message();
}

#define EXPECT_PARSE_ERROR(json, data, text)                                   \
  do {                                                                         \
    std::string message = parseError(archive(json, data));                     \
    EXPECT_NE(message.find(text), std::string::npos)                           \
        << "expected an error containing \"" << (text) << "\", got \""         \
        << message << "\"";                                                    \
  } while (0)

/// A file in a fresh directory, removed on destruction.
struct TempFile {
  TempFile(const std::string &name, const std::vector<uint8_t> &bytes) {
    std::string tmpl = ::testing::TempDir() + "flow-st-XXXXXX";
    dir = mkdtemp(tmpl.data()) ? tmpl : "";
    path = dir + "/" + name;
    FILE *f = fopen(path.c_str(), "wb");
    if (f) {
      fwrite(bytes.data(), 1, bytes.size(), f);
      fclose(f);
    }
  }
  ~TempFile() {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
  std::string dir, path;
};

const char *kTwoTensors =
    R"({"__metadata__":{"format":"pt"},)"
    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},)"
    R"("w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";

} // namespace

TEST(SafeTensorsTest, ParsesTensors) {
  std::vector<uint8_t> bytes =
      archive(kTwoTensors, floats({1, 2, 3, 4, 5, 6}));
  auto file = SafeTensorsFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(file) << file.status().message();
  ASSERT_EQ((*file)->tensors().size(), 2u);
  const SafeTensor *b = (*file)->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->supported);
  EXPECT_EQ(b->dtype, DType::F32);
  EXPECT_EQ(b->shape, std::vector<int64_t>{2});
  EXPECT_EQ(b->str(), "F32[2]");
  float values[2];
  std::memcpy(values, b->data, 8);
  EXPECT_EQ(values[0], 5.0f);
  EXPECT_EQ(values[1], 6.0f);
  EXPECT_EQ((*file)->find("missing"), nullptr);
}

TEST(SafeTensorsTest, KeepsTypesFlowDoesNotRun) {
  std::vector<uint8_t> bytes = archive(
      R"({"d":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}, "e":{"dtype":"U8","shape":[],"data_offsets":[1,2]}})",
      std::vector<uint8_t>(2, 0));
  auto file = SafeTensorsFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(file) << file.status().message();
  EXPECT_FALSE((*file)->find("d")->supported);
  EXPECT_TRUE((*file)->find("e")->supported);
  EXPECT_EQ((*file)->find("e")->dtype, DType::U8);
  EXPECT_EQ((*file)->find("e")->shape.size(), 0u);
}

TEST(SafeTensorsTest, RefusesMalformedHeaders) {
  std::vector<uint8_t> four = floats({1});
  EXPECT_EQ(parseError({1, 2, 3}), "not a safetensors file: 3 bytes is too short");
  std::vector<uint8_t> huge(16, 0);
  huge[0] = 0xff;
  EXPECT_NE(parseError(huge).find("does not fit"), std::string::npos);
  EXPECT_PARSE_ERROR("[1]", four, "not a JSON object");
  EXPECT_PARSE_ERROR("{", four, "expected a string key");
  EXPECT_PARSE_ERROR(R"({"a":)", four, "unexpected end");
  EXPECT_PARSE_ERROR(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x)",
                     four, "trailing characters");
  EXPECT_PARSE_ERROR(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})",
                     four, "outside the 4-byte data section");
  EXPECT_PARSE_ERROR(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
                     four, "holds 4 bytes but its dtype and shape need 8");
  EXPECT_PARSE_ERROR(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})",
                     four, "unknown dtype 'Q7'");
  EXPECT_PARSE_ERROR(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                     four, "integers >= 0");
  EXPECT_PARSE_ERROR(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})",
                     four, "expected an integer");
  EXPECT_PARSE_ERROR(R"({"a":{"dtype":"F32","shape":[1]}})", four,
                     "'data_offsets' must be [begin, end]");
  EXPECT_PARSE_ERROR(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", four,
                     "missing string 'dtype'");
  EXPECT_PARSE_ERROR(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      four, "appears twice");
  EXPECT_PARSE_ERROR(R"({"a":[[[[[[1]]]]]]})", four, "nesting deeper");
  EXPECT_PARSE_ERROR(R"({"a\q":1})", four, "bad escape");
  EXPECT_PARSE_ERROR(
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})",
      four, "too large");
}

TEST(SafeTensorsTest, RefusesIntegersOutOfRange) {
  std::vector<uint8_t> four = floats({1});
  // 2^64 + 4 used to wrap around to 4 and be accepted as [0, 4].
  EXPECT_PARSE_ERROR(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551620]}})",
      four, "integer out of range");
  // -2^63 used to negate INT64_MIN (undefined behaviour).
  EXPECT_PARSE_ERROR(
      R"({"a":{"dtype":"F32","shape":[-9223372036854775808],"data_offsets":[0,4]}})",
      four, "integer out of range");
  // 2^62 is the largest magnitude read.
  EXPECT_PARSE_ERROR(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4611686018427387904]}})",
      four, "outside the 4-byte data section");
  EXPECT_PARSE_ERROR(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4611686018427387905]}})",
      four, "integer out of range");
}

TEST(SafeTensorsTest, RandomCorruptionNeverCrashes) {
  std::vector<uint8_t> original =
      archive(kTwoTensors, floats({1, 2, 3, 4, 5, 6}));
  std::mt19937_64 rng(7);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = original;
    int edits = 1 + int(rng() % 3);
    for (int e = 0; e < edits; ++e)
      bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0)
      bytes.resize(rng() % bytes.size());
    auto file = SafeTensorsFile::parse(bytes.data(), bytes.size());
    if (!file) {
      EXPECT_FALSE(file.status().message().empty());
      continue;
    }
    ++parsed;
    // Whatever parses lies inside the buffer.
    for (const auto &[name, t] : (*file)->tensors()) {
      EXPECT_GE(t.data, bytes.data());
      EXPECT_LE(t.data + t.size, bytes.data() + bytes.size());
    }
  }
  EXPECT_GT(parsed, 0);
}

TEST(SafeTensorsTest, OpenReportsThePath) {
  auto missing = SafeTensorsFile::open("/nonexistent/w.safetensors");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("/nonexistent/w.safetensors"),
            std::string::npos);
  TempFile bad("bad.safetensors", {1, 2, 3});
  auto file = SafeTensorsFile::open(bad.path);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.status().message(),
            bad.path + ": not a safetensors file: 3 bytes is too short");
}

//===----------------------------------------------------------------------===//
// Executables with parameters
//===----------------------------------------------------------------------===//

namespace {

/// `forward() -> (w, b)`: copies two parameters to the outputs.
ExecutableSpec parameterSpec(const std::string &archivePath) {
  ExecutableSpec spec;
  spec.parameters = {{"w", {DType::F32, {2, 2}}}, {"b", {DType::F32, {2}}}};
  spec.parameterArchive = archivePath;
  FunctionSpec f;
  f.name = "forward";
  f.outputs = {{DType::F32, {2, 2}}, {DType::F32, {2}}};
  f.commands = {CopySpec{constantRef(0, 16), outputRef(0, 16)},
                CopySpec{constantRef(1, 8), outputRef(1, 8)}};
  spec.functions.push_back(f);
  return spec;
}

std::string loadError(const ExecutableSpec &spec, const LoadOptions &options) {
  auto exe = Executable::loadBytes(build(spec), options);
  return exe ? "" : exe.status().message();
}

} // namespace

TEST(ParameterTest, RunsWithParametersFromTheArchive) {
  TempFile file("model.safetensors",
                archive(kTwoTensors, floats({1, 2, 3, 4, 5, 6})));
  // The archive is found relative to the base directory.
  LoadOptions options;
  options.baseDirectory = file.dir;
  auto exe = Executable::loadBytes(build(parameterSpec("model.safetensors")),
                                   options);
  ASSERT_TRUE(exe) << exe.status().message();
  EXPECT_EQ((*exe)->numParameters(), 2u);
  EXPECT_EQ((*exe)->parameterArchive(), file.path);
  auto session = Session::create(std::move(*exe), RuntimeOptions{1});
  ASSERT_TRUE(session);
  auto out = (*session)->run("forward", {});
  ASSERT_TRUE(out) << out.status().message();
  float w[4], b[2];
  std::memcpy(w, (*out)[0].data.data(), 16);
  std::memcpy(b, (*out)[1].data.data(), 8);
  EXPECT_EQ(w[3], 4.0f);
  EXPECT_EQ(b[0], 5.0f);

  // An explicit archive overrides the executable's.
  LoadOptions explicitPath;
  explicitPath.parameterArchive = file.path;
  EXPECT_EQ(loadError(parameterSpec("elsewhere.safetensors"), explicitPath), "");
}

TEST(ParameterTest, RefusesArchivesThatDoNotMatch) {
  LoadOptions none;
  EXPECT_NE(loadError(parameterSpec("/nonexistent/m.safetensors"), none)
                .find("cannot open parameter archive "
                      "'/nonexistent/m.safetensors'"),
            std::string::npos);
  ExecutableSpec unnamed = parameterSpec("");
  unnamed.parameterArchive.reset();
  EXPECT_NE(loadError(unnamed, none).find(
                "has 2 parameters but names no parameter archive"),
            std::string::npos);

  TempFile onlyW(
      "w.safetensors",
      archive(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})",
              floats({1, 2, 3, 4})));
  EXPECT_EQ(loadError(parameterSpec(onlyW.path), none),
            onlyW.path +
                ": 1 parameters the executable needs are missing: 'b'");

  TempFile wrongShape(
      "s.safetensors",
      archive(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})",
              floats({1, 2, 3, 4, 5, 6})));
  EXPECT_EQ(loadError(parameterSpec(wrongShape.path), none),
            wrongShape.path + ": parameter 'w' is F32[4] but the executable "
                              "needs f32[2,2]");

  TempFile wrongType(
      "t.safetensors",
      archive(R"({"w":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]},)"
              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})",
              floats({1, 2, 3, 4, 5, 6})));
  EXPECT_NE(loadError(parameterSpec(wrongType.path), none)
                .find("parameter 'w' is I32[2,2]"),
            std::string::npos);
}

TEST(ParameterTest, ParameterBytesAreNotInTheChecksum) {
  TempFile file("model.safetensors",
                archive(kTwoTensors, floats({1, 2, 3, 4, 5, 6})));
  ExecutableSpec spec = parameterSpec(file.path);
  spec.constants = {{1, 2, 3, 4}};
  // Parameter indices follow the inline constants.
  for (CommandSpec &c : spec.functions[0].commands)
    std::get<CopySpec>(c).src->index += 1;
  EXPECT_EQ(loadError(spec, {}), "");
  spec.checksum = 1;
  EXPECT_NE(loadError(spec, {}).find("checksum mismatch"), std::string::npos);
}

/// `forward() -> f32[2,3]`: parameters "w" (f32[2,2]) and "b" (f32[2], read
/// as f32[2,1]) joined along columns once at bind, copied to the output.
static ExecutableSpec joinedSpec(const std::string &archivePath) {
  ExecutableSpec spec;
  spec.parameters = {{"w", {DType::F32, {2, 2}}}, {"b", {DType::F32, {2}}}};
  spec.parameterArchive = archivePath;
  FunctionSpec f;
  f.name = "forward";
  f.outputs = {{DType::F32, {2, 3}}};
  f.commands = {CopySpec{constantRef(2, 24), outputRef(0, 24)}};
  spec.functions.push_back(f);
  return spec;
}

TEST(ParameterTest, JoinsParametersOnceAtBind) {
  TempFile file(
      "joined.safetensors",
      archive(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
              R"("b":{"dtype":"F32","shape":[2,1],"data_offsets":[16,24]}})",
              floats({1, 2, 3, 4, 5, 6})));
  ExecutableSpec spec = joinedSpec(file.path);
  spec.parameters[1].type = {DType::F32, {2, 1}};
  spec.concats = {{{DType::F32, {2, 3}}, {0, 1}, 1}};
  auto exe = Executable::loadBytes(build(spec));
  ASSERT_TRUE(exe) << exe.status().message();
  auto session = Session::create(std::move(*exe), RuntimeOptions{1});
  ASSERT_TRUE(session);
  auto out = (*session)->run("forward", {});
  ASSERT_TRUE(out) << out.status().message();
  float y[6];
  std::memcpy(y, (*out)[0].data.data(), 24);
  EXPECT_EQ(std::vector<float>(y, y + 6),
            (std::vector<float>{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ((*session)->executable().boundParameterBytes(), 24u + 24u);

  // Parts only joins read are dropped once joined: the executable holds
  // the joined copy alone, and still runs.
  ExecutableSpec only = spec;
  only.parameters[0].joinedOnly = only.parameters[1].joinedOnly = true;
  auto dropped = Executable::loadBytes(build(only));
  ASSERT_TRUE(dropped) << dropped.status().message();
  EXPECT_EQ((*dropped)->boundParameterBytes(), 24u);
  auto again = Session::create(std::move(*dropped), RuntimeOptions{1});
  ASSERT_TRUE(again);
  auto out2 = (*again)->run("forward", {});
  ASSERT_TRUE(out2) << out2.status().message();
  EXPECT_EQ(std::memcmp((*out2)[0].data.data(), y, 24), 0);

  // Joins that do not add up are refused by name.
  LoadOptions none;
  ExecutableSpec wide = spec;
  wide.concats[0].type = {DType::F32, {2, 4}};
  EXPECT_EQ(loadError(wide, none),
            "constant 2 (joined parameters): parts add up to 3 along axis 1, "
            "not 4");
  ExecutableSpec rows = spec;
  rows.concats[0].axis = 0;
  EXPECT_EQ(loadError(rows, none),
            "constant 2 (joined parameters): part f32[2,2] does not fit "
            "f32[2,3] along axis 0");
  ExecutableSpec axis = spec;
  axis.concats[0].axis = 2;
  EXPECT_EQ(loadError(axis, none),
            "constant 2 (joined parameters): axis 2 is outside f32[2,3]");
  ExecutableSpec later = spec;
  later.concats[0].parts = {0, 2};
  EXPECT_EQ(loadError(later, none),
            "constant 2 (joined parameters): part 2 is not an earlier "
            "parameter");
  ExecutableSpec typed = spec;
  typed.concats[0].type = {DType::I32, {2, 3}};
  EXPECT_EQ(loadError(typed, none),
            "constant 2 (joined parameters): part f32[2,2] does not fit "
            "i32[2,3] along axis 1");
}
