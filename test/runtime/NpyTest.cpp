//===- NpyTest.cpp - Tests for the .npy reader/writer ---------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Npy.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <random>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace flow::runtime;

namespace {

constexpr DType kAllDTypes[] = {
    DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
    DType::I1,  DType::F64, DType::I16,  DType::I8,  DType::U8,
    DType::U16, DType::U32, DType::U64};

/// Bytes of np.save(f, (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5
/// - 1)), identical under numpy 1.23+ and 2.x (checked with numpy 2.4.6).
constexpr char kNumpyF32Header[] =
    "\x93NUMPY\x01\x00"
    "v\x00"
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    "                                                          "
    "\n";
static_assert(sizeof(kNumpyF32Header) - 1 == 128, "numpy pads to 128 bytes");
constexpr uint8_t kNumpyF32Data[] = {
    0x00, 0x00, 0x80, 0xbf, 0x00, 0x00, 0x00, 0xbf, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0xc0, 0x3f};

std::vector<uint8_t> numpyF32File() {
  std::vector<uint8_t> file;
  file.reserve(sizeof(kNumpyF32Header) - 1 + sizeof(kNumpyF32Data));
  file.insert(file.end(), kNumpyF32Header,
              kNumpyF32Header + sizeof(kNumpyF32Header) - 1);
  file.insert(file.end(), std::begin(kNumpyF32Data), std::end(kNumpyF32Data));
  return file;
}

/// Builds a .npy file with the given header text (padded with spaces to a
/// 64-byte boundary and terminated by '\n'), version and data bytes.
std::vector<uint8_t> makeNpy(const std::string &dict,
                             const std::vector<uint8_t> &data,
                             uint8_t major = 1) {
  size_t lenBytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((8 + lenBytes + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  for (size_t i = 0; i < lenBytes; ++i)
    out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

StatusOr<HostTensor> parse(const std::vector<uint8_t> &bytes) {
  return parseNpy(bytes.data(), bytes.size(), "test.npy");
}

/// Parses \p bytes, expecting an error whose message names the file and
/// contains \p needle.
void expectError(const std::vector<uint8_t> &bytes, const std::string &needle) {
  StatusOr<HostTensor> result = parse(bytes);
  ASSERT_FALSE(result.isOk()) << "expected error containing: " << needle;
  const std::string &msg = result.status().message();
  EXPECT_NE(msg.find("test.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos)
      << "message: " << msg << "\nexpected to contain: " << needle;
}

std::vector<uint8_t> f32Data(size_t n) { return std::vector<uint8_t>(4 * n); }

HostTensor makeTensor(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(t.numElements() * dtypeSize(dtype));
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = dtype == DType::I1 ? (i * 7 % 3 == 0) : (i * 37 + 11) & 0xff;
  return t;
}

using flow::test::TempDir;

} // namespace

TEST(StatusTest, Basics) {
  Status ok = Status::ok();
  EXPECT_TRUE(ok.isOk());
  EXPECT_TRUE(static_cast<bool>(ok));
  Status err = Status::error("boom");
  EXPECT_FALSE(err.isOk());
  EXPECT_FALSE(static_cast<bool>(err));
  EXPECT_EQ(err.message(), "boom");

  StatusOr<std::string> value = std::string("abc");
  ASSERT_TRUE(value.isOk());
  EXPECT_EQ(*value, "abc");
  EXPECT_EQ(value->size(), 3u);
  EXPECT_TRUE(value.status().isOk());
  std::string moved = std::move(value).value();
  EXPECT_EQ(moved, "abc");

  StatusOr<std::string> error = Status::error("bad");
  EXPECT_FALSE(error.isOk());
  EXPECT_EQ(error.status().message(), "bad");
}

TEST(NpyTest, DTypeSizesAndNames) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_STREQ(dtypeName(DType::F32), "f32");
  EXPECT_STREQ(dtypeName(DType::F16), "f16");
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
  EXPECT_STREQ(dtypeName(DType::I64), "i64");
  EXPECT_STREQ(dtypeName(DType::I32), "i32");
  EXPECT_STREQ(dtypeName(DType::I1), "i1");
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::I16), 2u);
  EXPECT_EQ(dtypeSize(DType::I8), 1u);
  EXPECT_EQ(dtypeSize(DType::U8), 1u);
  EXPECT_EQ(dtypeSize(DType::U16), 2u);
  EXPECT_EQ(dtypeSize(DType::U32), 4u);
  EXPECT_EQ(dtypeSize(DType::U64), 8u);
  EXPECT_STREQ(dtypeName(DType::F64), "f64");
  EXPECT_STREQ(dtypeName(DType::I8), "i8");
  EXPECT_STREQ(dtypeName(DType::U64), "ui64");
}

TEST(NpyTest, NumElements) {
  EXPECT_EQ(makeTensor(DType::F32, {}).numElements(), 1);
  EXPECT_EQ(makeTensor(DType::F32, {0, 3}).numElements(), 0);
  EXPECT_EQ(makeTensor(DType::F32, {2, 3, 4}).numElements(), 24);
}

TEST(NpyTest, RoundTripAllDTypes) {
  std::vector<std::vector<int64_t>> shapes = {{},     {5},    {2, 3},
                                              {0, 3}, {3, 0}, {2, 1, 4}};
  for (DType dtype : kAllDTypes) {
    for (const auto &shape : shapes) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " rank " +
                   std::to_string(shape.size()));
      HostTensor t = makeTensor(dtype, shape);
      std::vector<uint8_t> bytes = serializeNpy(t);
      EXPECT_EQ((bytes.size() - t.data.size()) % 64, 0u);
      StatusOr<HostTensor> back = parse(bytes);
      ASSERT_TRUE(back.isOk()) << back.status().message();
      EXPECT_EQ(back->dtype, dtype);
      EXPECT_EQ(back->shape, shape);
      EXPECT_EQ(back->data, t.data);
    }
  }
}

TEST(NpyTest, SerializeMatchesNumpy) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {2, 3};
  t.data.assign(std::begin(kNumpyF32Data), std::end(kNumpyF32Data));
  EXPECT_EQ(serializeNpy(t), numpyF32File());
}

TEST(NpyTest, ParsesNumpyOutput) {
  StatusOr<HostTensor> t = parse(numpyF32File());
  ASSERT_TRUE(t.isOk()) << t.status().message();
  EXPECT_EQ(t->dtype, DType::F32);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  float values[6];
  memcpy(values, t->data.data(), sizeof(values));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(values[i], i * 0.5f - 1);
}

TEST(NpyTest, ParsesVersion2And3) {
  // np.lib.format.write_array(f, np.array([1, -2]), version=(2, 0)).
  std::string header = "{'descr': '<i8', 'fortran_order': False, "
                       "'shape': (2,), }";
  header += std::string(0x74 - 1 - header.size(), ' ') + "\n";
  std::vector<uint8_t> file = {0x93, 'N', 'U',  'M', 'P', 'Y',
                               2,    0,   0x74, 0,   0,   0};
  file.insert(file.end(), header.begin(), header.end());
  int64_t values[2] = {1, -2};
  file.insert(file.end(), reinterpret_cast<uint8_t *>(values),
              reinterpret_cast<uint8_t *>(values) + 16);
  ASSERT_EQ(file.size(), 144u);
  StatusOr<HostTensor> t = parse(file);
  ASSERT_TRUE(t.isOk()) << t.status().message();
  EXPECT_EQ(t->dtype, DType::I64);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(t->data.size(), 16u);

  file[6] = 3; // Version 3.0 differs only in header encoding (UTF-8).
  EXPECT_TRUE(parse(file).isOk());
}

TEST(NpyTest, WritesVersion2ForHugeHeaders) {
  HostTensor t = makeTensor(DType::I1, std::vector<int64_t>(30000, 1));
  std::vector<uint8_t> bytes = serializeNpy(t);
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ((bytes.size() - 1) % 64, 0u);
  StatusOr<HostTensor> back = parse(bytes);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->shape.size(), 30000u);
}

TEST(NpyTest, HeaderVariants) {
  struct Case {
    const char *dict;
    DType dtype;
    std::vector<int64_t> shape;
  };
  Case cases[] = {
      {"{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
       DType::F32,
       {2, 3}},
      {"{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(6,)}",
       DType::F32,
       {6}},
      {"  {\n 'descr' :\t'=f4' ,\n 'fortran_order' : False ,"
       " 'shape' : ( 2 , 3 , ) , }  ",
       DType::F32,
       {2, 3}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
       DType::F32,
       {2, 3}},
      {"{'descr': '<f2', 'fortran_order': False, 'shape': (12,), }",
       DType::F16,
       {12}},
      {"{'descr': '<V2', 'fortran_order': False, 'shape': (3, 4), }",
       DType::BF16,
       {3, 4}},
      {"{'descr': '|V2', 'fortran_order': False, 'shape': (12,), }",
       DType::BF16,
       {12}},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }",
       DType::I32,
       {6}},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
       DType::I64,
       {3}},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': (24,), }",
       DType::I1,
       {24}},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
       DType::F64,
       {2}},
      {"{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }",
       DType::I8,
       {5}},
      // A one-byte type with a byte order, as some writers spell it.
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (5,), }",
       DType::U8,
       {5}},
      {"{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }",
       DType::U16,
       {3}},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }",
       DType::U64,
       {1}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
       DType::F32,
       {}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.dict);
    int64_t n = 1;
    for (int64_t d : c.shape)
      n *= d;
    StatusOr<HostTensor> t =
        parse(makeNpy(c.dict, std::vector<uint8_t>(n * dtypeSize(c.dtype))));
    ASSERT_TRUE(t.isOk()) << t.status().message();
    EXPECT_EQ(t->dtype, c.dtype);
    EXPECT_EQ(t->shape, c.shape);
  }
}

TEST(NpyTest, RejectsBadPreamble) {
  std::vector<uint8_t> good = numpyF32File();
  std::vector<uint8_t> bad = good;
  bad[1] = 'X';
  expectError(bad, "magic");
  expectError({}, "magic");
  bad = good;
  bad[6] = 4;
  expectError(bad, "version 4.0");
  bad = good;
  bad[7] = 1;
  expectError(bad, "version 1.1");
  bad = good;
  bad[8] = 0xff;
  bad[9] = 0x7f;
  expectError(bad, "past end of file");
  expectError(std::vector<uint8_t>(good.begin(), good.begin() + 9),
              "truncated");
}

TEST(NpyTest, RejectsBadHeaders) {
  const std::string tail = "'fortran_order': False, 'shape': (6,)}";
  expectError(makeNpy("[1, 2]", f32Data(6)), "not a dict");
  expectError(makeNpy("", f32Data(6)), "not a dict");
  expectError(makeNpy("{'descr': '<f4', 'fortran_order': False}", f32Data(6)),
              "missing key 'shape'");
  expectError(makeNpy("{'shape': (6,), 'fortran_order': False}", f32Data(6)),
              "missing key 'descr'");
  expectError(makeNpy("{'descr': '<f4', 'shape': (6,)}", f32Data(6)),
              "missing key 'fortran_order'");
  expectError(makeNpy("{'descr': '<f4', 'descr': '<f4', " + tail, f32Data(6)),
              "duplicate key");
  expectError(makeNpy("{'descr': '<f4', 'extra': 1, " + tail, f32Data(6)),
              "unexpected key 'extra'");
  expectError(makeNpy("{'descr': [('a', '<f4')], " + tail, f32Data(6)),
              "structured");
  expectError(makeNpy("{'descr': '<f4' " + tail, f32Data(6)),
              "expected ',' or '}'");
  expectError(makeNpy("{'descr': '<f4", f32Data(6)), "unterminated string");
  expectError(makeNpy("{'descr': '<f4', " + tail + " x", f32Data(6)),
              "after header dict");
  expectError(makeNpy("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}",
                      f32Data(6)),
              "True or False");
  expectError(
      makeNpy("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (6,)}",
              f32Data(6)),
      "True or False");
  expectError(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6",
                      f32Data(6)),
              "in shape");
  expectError(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': 6}",
                      f32Data(6)),
              "must be a tuple");
  expectError(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}",
                      f32Data(6)),
              "must be a tuple");
}

TEST(NpyTest, RejectsUnsupportedDTypes) {
  auto withDescr = [](const std::string &descr) {
    return makeNpy("{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': (2,)}",
                   std::vector<uint8_t>(16));
  };
  expectError(withDescr("<f16"),
              "'<f16' (float128) is not supported; supported: '<f4' (f32)");
  expectError(withDescr("<c8"), "(complex64)");
  expectError(withDescr("<c16"), "(complex128)");
  expectError(withDescr("|O"), "(object)");
  expectError(withDescr("<b2"), "'<b2' (bool) is not supported");
  expectError(withDescr(""), "is not supported");
  expectError(withDescr(">f4"), "big-endian");
  expectError(withDescr(">i8"), "astype('<i8')");
}

TEST(NpyTest, RejectsFortranOrder) {
  expectError(makeNpy("{'descr': '<f4', 'fortran_order': True, "
                      "'shape': (2, 3)}",
                      f32Data(6)),
              "numpy.ascontiguousarray");
}

TEST(NpyTest, RejectsBadDimensions) {
  auto withShape = [](const std::string &shape) {
    return makeNpy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "}",
        f32Data(6));
  };
  expectError(withShape("(-1, 3)"), "negative dimension -1");
  expectError(withShape("(2.5, 3)"), "non-integer");
  expectError(withShape("(2e1,)"), "non-integer");
  expectError(withShape("('2', 3)"), "non-integer");
  expectError(withShape("(,)"), "non-integer");
  expectError(withShape("(None,)"), "non-integer");
  expectError(withShape("(99999999999999999999,)"), "too large");
  expectError(withShape("(4611686018427387904, 4)"), "overflow");
  expectError(withShape("(1152921504606846976, 4)"), "overflow");
}

TEST(NpyTest, RejectsWrongDataSize) {
  const char *dict = "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (2, 3)}";
  expectError(makeNpy(dict, f32Data(5)),
              "truncated: expected 24 data bytes, found 20");
  expectError(makeNpy(dict, std::vector<uint8_t>(25)),
              "expected 24 data bytes, found 25 (1 trailing bytes)");
  expectError(makeNpy("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (0, 3)}",
                      {1}),
              "trailing");
}

TEST(NpyTest, RejectsInvalidBools) {
  const char *dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}";
  EXPECT_TRUE(parse(makeNpy(dict, {0, 1, 1})).isOk());
  expectError(makeNpy(dict, {0, 2, 1}), "invalid bool value 2 at element 1");
}

TEST(NpyTest, FuzzNeverCrashes) {
  HostTensor t = makeTensor(DType::I1, {3, 5});
  std::vector<uint8_t> valid = serializeNpy(t);
  // (a) Every truncation is an error.
  for (size_t len = 0; len < valid.size(); ++len)
    EXPECT_FALSE(parseNpy(valid.data(), len, "t.npy").isOk()) << len;
  // (b) Random corruptions: any result is fine, as long as it is one. The
  // bytes go into an exactly-sized heap buffer so ASan sees overreads.
  std::mt19937 rng(12345);
  int accepted = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    std::vector<uint8_t> bytes = valid;
    int edits = 1 + rng() % 4;
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % bytes.size();
      // Bias corruptions towards the preamble and header.
      if (rng() % 2)
        pos = rng() % 128;
      uint8_t pick[] = {0,   1,   0xff, '(', ')', ',', '\'', '-',
                        '9', ' ', '}',  '{', ':', 'L', '\n'};
      bytes[pos] =
          rng() % 2 ? static_cast<uint8_t>(rng()) : pick[rng() % sizeof(pick)];
    }
    if (rng() % 8 == 0)
      bytes.resize(rng() % bytes.size());
    std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes.size() + 1]);
    memcpy(buf.get(), bytes.data(), bytes.size());
    StatusOr<HostTensor> result = parseNpy(buf.get(), bytes.size(), "f.npy");
    if (result.isOk()) {
      ++accepted;
      EXPECT_EQ(result->data.size(),
                result->numElements() * dtypeSize(result->dtype));
    } else {
      EXPECT_FALSE(result.status().message().empty());
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 5000);
}

TEST(NpyTest, ReadWriteFiles) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  std::string path = dir.path + "/t.npy";
  for (DType dtype : kAllDTypes) {
    HostTensor t = makeTensor(dtype, {4, 2});
    Status s = writeNpy(path, t);
    ASSERT_TRUE(s.isOk()) << s.message();
    StatusOr<HostTensor> back = readNpy(path);
    ASSERT_TRUE(back.isOk()) << back.status().message();
    EXPECT_EQ(back->dtype, dtype);
    EXPECT_EQ(back->data, t.data);
  }
  // No temporary files are left behind.
  EXPECT_EQ(dir.files(), std::vector<std::string>{"t.npy"});

  // A tensor whose data does not match its shape is not written.
  HostTensor bad = makeTensor(DType::F32, {2, 2});
  bad.data.pop_back();
  Status s = writeNpy(dir.path + "/bad.npy", bad);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("bad.npy"), std::string::npos) << s.message();
  EXPECT_EQ(dir.files(), std::vector<std::string>{"t.npy"});
}

TEST(NpyTest, ReadMissingFileNamesPath) {
  std::string path = "/nonexistent-flow-dir/missing.npy";
  StatusOr<HostTensor> t = readNpy(path);
  ASSERT_FALSE(t.isOk());
  EXPECT_NE(t.status().message().find(path), std::string::npos)
      << t.status().message();
  EXPECT_NE(t.status().message().find("No such file"), std::string::npos)
      << t.status().message();
}

TEST(NpyTest, ReadDirectoryFails) {
  TempDir dir;
  StatusOr<HostTensor> t = readNpy(dir.path);
  ASSERT_FALSE(t.isOk());
  EXPECT_NE(t.status().message().find(dir.path), std::string::npos);
}

TEST(NpyTest, WriteToMissingDirectoryFails) {
  std::string path = "/nonexistent-flow-dir/out.npy";
  Status s = writeNpy(path, makeTensor(DType::F32, {2}));
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s.message();
}

//===----------------------------------------------------------------------===//
// Inputs that are not regular files
//===----------------------------------------------------------------------===//

namespace {

/// The most bytes a FIFO writer offers: a reader that stops where the header
/// says takes a few kilobytes at most.
constexpr size_t kWriterCap = size_t(64) << 20;

/// Reads a FIFO with readNpy while a thread writes \p prefix into it and
/// then, when \p endless, zeros until the reader goes away (or kWriterCap
/// bytes are written). \p written receives the bytes the writer got out.
StatusOr<HostTensor> readFromFifo(const std::vector<uint8_t> &prefix,
                                  bool endless, size_t &written,
                                  std::string *path = nullptr) {
  TempDir dir;
  std::string fifo = dir.path + "/pipe.npy";
  if (path)
    *path = fifo;
  if (dir.path.empty() || mkfifo(fifo.c_str(), 0600) != 0)
    return Status::error("cannot make a FIFO");
  // A reader that goes away makes write() fail with EPIPE, not kill us.
  struct sigaction ignore = {}, saved = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &saved);
  std::atomic<size_t> total{0};
  std::thread writer([&] {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return;
    auto put = [&](const uint8_t *p, size_t n) {
      while (n > 0) {
        ssize_t k = ::write(fd, p, n);
        if (k < 0 && errno == EINTR)
          continue;
        if (k <= 0)
          return false;
        p += k;
        n -= size_t(k);
        total += size_t(k);
      }
      return true;
    };
    bool open = put(prefix.data(), prefix.size());
    std::vector<uint8_t> zeros(1 << 16, 0);
    while (open && endless && total < kWriterCap)
      open = put(zeros.data(), zeros.size());
    ::close(fd);
  });
  StatusOr<HostTensor> result = readNpy(fifo);
  // If readNpy failed before opening the FIFO, open it so the writer ends.
  int unblock = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (unblock >= 0)
    ::close(unblock);
  writer.join();
  sigaction(SIGPIPE, &saved, nullptr);
  written = total;
  unlink(fifo.c_str());
  return result;
}

/// Expects \p result to be an error naming \p path and containing \p needle.
void expectReadError(const StatusOr<HostTensor> &result,
                     const std::string &path, const std::string &needle) {
  ASSERT_FALSE(result.isOk()) << "expected an error containing: " << needle;
  const std::string &msg = result.status().message();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos)
      << "message: " << msg << "\nexpected to contain: " << needle;
}

} // namespace

TEST(NpyTest, ReadRefusesDevZero) {
  // Used to read until memory ran out (std::bad_alloc aborted flow-run).
  expectReadError(readNpy("/dev/zero"), "/dev/zero", "bad magic");
}

TEST(NpyTest, ReadsFromAPipe) {
  HostTensor t = makeTensor(DType::F32, {3, 2});
  size_t written = 0;
  StatusOr<HostTensor> back =
      readFromFifo(serializeNpy(t), /*endless=*/false, written);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->shape, t.shape);
  EXPECT_EQ(back->data, t.data);
}

TEST(NpyTest, ReadRefusesAPipeLongerThanItsHeaderSays) {
  // A valid f32[3,2] file followed by zeros that never end.
  size_t written = 0;
  std::string path;
  StatusOr<HostTensor> result =
      readFromFifo(serializeNpy(makeTensor(DType::F32, {3, 2})),
                   /*endless=*/true, written, &path);
  expectReadError(result, path, "continues past the 24 data bytes");
  // The reader stopped at the declared size instead of draining the pipe.
  EXPECT_LT(written, kWriterCap);
}

TEST(NpyTest, ReadRefusesATruncatedPipe) {
  std::vector<uint8_t> bytes = serializeNpy(makeTensor(DType::I32, {8}));
  bytes.resize(bytes.size() - 5);
  size_t written = 0;
  std::string path;
  StatusOr<HostTensor> result =
      readFromFifo(bytes, /*endless=*/false, written, &path);
  expectReadError(result, path, "truncated: expected 32 data bytes, found 27");
}

TEST(NpyTest, ReadRefusesHugeDeclaredSizes) {
  // 2^40 f32 values (4 TiB): refused from the header, before any data is
  // read or memory allocated.
  size_t written = 0;
  std::string path;
  StatusOr<HostTensor> result = readFromFifo(
      makeNpy("{'descr': '<f4', 'fortran_order': False, "
              "'shape': (1099511627776,)}",
              {}),
      /*endless=*/true, written, &path);
  expectReadError(result, path, "more than the limit");
  EXPECT_LT(written, kWriterCap);
}

TEST(NpyTest, ReadRefusesHeadersThatNeverEnd) {
  // A version 2.0 preamble whose header length is 4 GiB - 1, then an
  // endless header.
  std::vector<uint8_t> preamble = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0,
                                   0xff, 0xff, 0xff, 0xff, '{'};
  size_t written = 0;
  std::string path;
  StatusOr<HostTensor> result =
      readFromFifo(preamble, /*endless=*/true, written, &path);
  expectReadError(result, path, "header length 4294967295 is larger than");
  EXPECT_LT(written, kWriterCap);
  // parseNpy holds the same limit.
  std::vector<uint8_t> bytes = preamble;
  bytes.resize(bytes.size() + 100);
  expectError(bytes, "header length 4294967295 is larger than");
}

TEST(NpyTest, ReadRefusesTrailingBytesInAFile) {
  TempDir dir;
  std::string path = dir.path + "/t.npy";
  std::vector<uint8_t> bytes = serializeNpy(makeTensor(DType::I64, {2}));
  bytes.push_back(0);
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  expectReadError(readNpy(path), path, "(1 trailing bytes)");
}
