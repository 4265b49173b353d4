//===- TempDir.h - A scratch directory for runtime tests -------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TEST_RUNTIME_TEMPDIR_H
#define FLOW_TEST_RUNTIME_TEMPDIR_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <stdlib.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace flow::test {

/// A fresh empty directory under gtest's temporary directory, removed with
/// its entries (files, links, empty directories; not recursively) at the
/// end. `path` is empty if it could not be made.
class TempDir {
public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "flow-test-XXXXXX";
    path = mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    for (const std::string &f : files()) {
      std::string p = path + "/" + f;
      if (unlink(p.c_str()) != 0)
        rmdir(p.c_str());
    }
    rmdir(path.c_str());
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  /// The names in the directory, sorted.
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR *d = opendir(path.c_str())) {
      while (dirent *e = readdir(d))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
          out.push_back(e->d_name);
      closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  /// The path of \p name in the directory.
  std::string operator/(const std::string &name) const {
    return path + "/" + name;
  }
  std::string path;
};

} // namespace flow::test

#endif // FLOW_TEST_RUNTIME_TEMPDIR_H
