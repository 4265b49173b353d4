//===- FileWriterTest.cpp - Files replaced whole or not at all ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/FileWriter.h"
#include "TempDir.h"
#include "flow/runtime/TrainingState.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace flow::runtime;

namespace {

using flow::test::TempDir;

std::string contents(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Status write(const std::string &path, const std::string &text) {
  return replaceFile(path, {{text.data(), text.size()}});
}

TEST(FileWriterTest, ReplacesWholeAndLeavesNothingBeside) {
  TempDir dir;
  ASSERT_TRUE(write(dir / "a", "first").isOk());
  ASSERT_TRUE(write(dir / "a", "second, longer").isOk());
  EXPECT_EQ(contents(dir / "a"), "second, longer");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"a"});
}

TEST(FileWriterTest, KeepsTheReplacedFilesPermissions) {
  TempDir dir;
  ASSERT_TRUE(write(dir / "a", "x").isOk());
  ASSERT_EQ(chmod((dir / "a").c_str(), 0640), 0);
  ASSERT_TRUE(write(dir / "a", "y").isOk());
  struct stat st;
  ASSERT_EQ(stat((dir / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(FileWriterTest, FollowsLinksAndKeepsThem) {
  TempDir dir;
  ASSERT_TRUE(write(dir / "real", "old").isOk());
  ASSERT_EQ(symlink("real", (dir / "link").c_str()), 0);
  ASSERT_EQ(symlink("link", (dir / "link2").c_str()), 0);
  ASSERT_TRUE(write(dir / "link2", "new").isOk());
  EXPECT_EQ(contents(dir / "real"), "new");
  struct stat st;
  ASSERT_EQ(lstat((dir / "link2").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  // A dangling link creates its target.
  ASSERT_EQ(symlink("later", (dir / "dangling").c_str()), 0);
  ASSERT_TRUE(write(dir / "dangling", "made").isOk());
  EXPECT_EQ(contents(dir / "later"), "made");
  // A loop is an error, not a hang.
  ASSERT_EQ(symlink("loop2", (dir / "loop1").c_str()), 0);
  ASSERT_EQ(symlink("loop1", (dir / "loop2").c_str()), 0);
  Status s = write(dir / "loop1", "x");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("too many levels of symbolic links"),
            std::string::npos)
      << s.message();
}

TEST(FileWriterTest, RefusesWhatIsNotARegularFile) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  Status s = write(dir / "fifo", "x");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("it is a FIFO"), std::string::npos) << s.message();
  ASSERT_EQ(mkdir((dir / "sub").c_str(), 0700), 0);
  s = write(dir / "sub", "x");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("it is a directory"), std::string::npos)
      << s.message();
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"fifo", "sub"}));
}

TEST(FileWriterTest, AMissingDirectoryIsAnErrorNamingThePath) {
  TempDir dir;
  Status s = write(dir / "none/a", "x");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(dir / "none/a"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos)
      << s.message();
}

HostTensor scalarI64(int64_t v) {
  HostTensor t;
  t.dtype = DType::I64;
  t.data.resize(8);
  std::memcpy(t.data.data(), &v, 8);
  return t;
}

HostTensor floats(std::vector<float> values) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {static_cast<int64_t>(values.size())};
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

TEST(TrainingStateTest, RefusesWhatTheOptimizerCannotStartFrom) {
  EXPECT_TRUE(checkStateValue("optimizer.step", scalarI64(0)).isOk());
  EXPECT_FALSE(checkStateValue("optimizer.step", scalarI64(-3)).isOk());
  EXPECT_TRUE(checkStateValue("w.exp_avg_sq", floats({0, 1})).isOk());
  EXPECT_FALSE(checkStateValue("w.exp_avg_sq", floats({0, -1})).isOk());
  // A first moment may be negative; nothing may be NaN.
  EXPECT_TRUE(checkStateValue("w.exp_avg", floats({-1, 1})).isOk());
  Status s = checkStateValue("w", floats({1, NAN}));
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(),
            "state 'w' holds nan at element 1: a training state must be "
            "finite");
}

} // namespace
