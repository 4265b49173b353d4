//===- FileWriter.cpp - Files replaced whole or not at all ---------------===//

#include "flow/runtime/FileWriter.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace flow::runtime;

namespace {
std::string systemError(const std::string &what, const std::string &path,
                        int error) {
  return "cannot " + what + " '" + path + "': " + std::strerror(error);
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Writes all of \p size bytes, through EINTR and short writes.
bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}
} // namespace

StatusOr<std::string> flow::runtime::resolveTarget(const std::string &path) {
  std::string target = path;
  // As the kernel does: at most 40 links.
  for (int hops = 0; hops <= 40; ++hops) {
    struct stat st;
    if (::lstat(target.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return target;
    std::string link(static_cast<size_t>(st.st_size > 0 ? st.st_size : 0) + 256,
                     '\0');
    ssize_t n = ::readlink(target.c_str(), link.data(), link.size());
    if (n < 0)
      return Status::error(systemError("read the link", target, errno));
    link.resize(static_cast<size_t>(n));
    target = !link.empty() && link[0] == '/' ? link
                                             : directoryOf(target) + "/" + link;
  }
  return Status::error("cannot write '" + path +
                       "': too many levels of symbolic links");
}

Status flow::runtime::replaceFile(const std::string &path,
                                  const std::vector<ByteSpan> &pieces) {
  StatusOr<std::string> resolved = resolveTarget(path);
  if (!resolved)
    return resolved.status();
  const std::string &target = *resolved;
  std::string shown =
      target == path ? "'" + path + "'" : "'" + path + "' (-> " + target + ")";
  struct stat existing;
  bool exists = ::stat(target.c_str(), &existing) == 0;
  if (exists && !S_ISREG(existing.st_mode))
    return Status::error("cannot write " + shown + ": it is " +
                         kindOf(existing.st_mode) +
                         "; Flow writes only regular files");

  // A temporary of a name nobody can guess or plant a link at, created
  // exclusively (O_EXCL never follows a link) in the target's directory,
  // so that the rename stays on one file system.
  std::string dir = directoryOf(target);
  size_t slash = target.find_last_of('/');
  std::string base =
      slash == std::string::npos ? target : target.substr(slash + 1);
  static std::atomic<unsigned> counter{0};
  std::random_device random;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    char suffix[32];
    snprintf(suffix, sizeof(suffix), "%d.%u.%08x", static_cast<int>(::getpid()),
             counter++, static_cast<unsigned>(random()));
    tmp = dir + "/." + base + ".tmp." + suffix;
    fd = ::open(tmp.c_str(),
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return Status::error(systemError("write", path, errno) +
                         " (creating a temporary file in " + dir + ")");
  int error = 0;
  for (const ByteSpan &piece : pieces)
    if (piece.size > 0 && !writeAll(fd, piece.data, piece.size)) {
      error = errno;
      break;
    }
  // The replaced file's permissions carry over (else the umask's).
  if (!error && exists && ::fchmod(fd, existing.st_mode & 07777) != 0)
    error = errno;
  if (!error && ::fsync(fd) != 0)
    error = errno;
  if (::close(fd) != 0 && !error)
    error = errno;
  if (!error && ::rename(tmp.c_str(), target.c_str()) != 0)
    error = errno;
  if (error) {
    ::unlink(tmp.c_str());
    return Status::error(systemError("write", path, error));
  }
  // The rename itself on disk. (Some file systems cannot sync a
  // directory: EINVAL there is not an error.)
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    if (::fsync(dirFd) != 0 && errno != EINVAL && errno != EROFS)
      error = errno;
    ::close(dirFd);
  }
  if (error)
    return Status::error(systemError("write", path, error) +
                         " (flushing the directory " + dir + ")");
  return Status::ok();
}
