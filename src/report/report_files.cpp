#include "report/report_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "report/run_report.h"

namespace attncheck {
namespace fs = std::filesystem;
namespace {

std::string errno_text(int e) { return std::strerror(e); }

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Writes over the file in place: for what cannot be replaced by a rename (a
// device, a FIFO, a file in a folder we may not create files in).
void write_in_place(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write " + path + ": " + errno_text(errno));
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path + ": write failed");
}

// The file's identity when it exists (a hard link shares it).
std::optional<std::pair<dev_t, ino_t>> identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

}  // namespace

std::string report_target(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) p = path;
  // Follow the last component's symlinks by hand: a dangling one too (the
  // writer would create the file it names), which canonical() cannot.
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
    if (n <= 0) break;
    const fs::path link(std::string(buf, static_cast<std::size_t>(n)));
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  const fs::path dir = fs::weakly_canonical(p.parent_path(), ec);
  return ((ec ? p.parent_path().lexically_normal() : dir) / p.filename()).string();
}

std::string report_paths_clash(const ReportPaths& paths) {
  struct Seen {
    std::string flag, target;
    std::optional<std::pair<dev_t, ino_t>> id;
  };
  std::vector<Seen> seen;
  for (const ReportFormat& f : report_formats()) {
    const auto it = paths.find(f.key);
    if (it == paths.end() || it->second.empty()) continue;
    const std::string flag(f.flag);
    if (it->second == "-") return flag + " -: reports are written to files; give a file name";
    const std::string target = report_target(it->second);
    const auto id = identity(target);
    for (const Seen& s : seen)
      if (s.target == target || (id && s.id == id))
        return s.flag + " and " + flag + " name the same file (" + it->second +
               "): one would overwrite the other";
    seen.push_back({flag, target, id});
  }
  return "";
}

std::string remove_stale_reports(const ReportPaths& paths) {
  for (const auto& [key, path] : paths) {
    if (path.empty()) continue;
    const std::string target = report_target(path);
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // none, or a device: nothing stale
    if (::unlink(target.c_str()) == 0) continue;
    const int e = errno;
    // A folder we may not remove files from: an empty file is no verdict either.
    const int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd >= 0) {
      ::close(fd);
      continue;
    }
    return "cannot remove the earlier report " + path + " (" + errno_text(e) +
           "): it could be read as this run's";
  }
  return "";
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string target = report_target(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw std::runtime_error("cannot write " + path + ": it is a folder");
    if (!S_ISREG(st.st_mode)) return write_in_place(target, text);  // a device or a FIFO
  }
  const fs::path t(target);
  static std::atomic<unsigned> counter{0};
  // (append, not "." + ...: GCC 12 -Wrestrict bug 105329)
  const std::string name = std::string(".").append(t.filename().string()).append(".tmp.");
  const std::string tmp =
      (t.parent_path() / (name + std::to_string(::getpid()) + "." + std::to_string(counter++))).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int e = errno;
    // A folder that takes no new file but holds a writable report: as before, in place.
    if ((e == EACCES || e == EPERM || e == EROFS) && ::access(target.c_str(), W_OK) == 0)
      return write_in_place(target, text);
    throw std::runtime_error("cannot write " + path + ": " + errno_text(e));
  }
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + errno_text(written ? errno : write_errno));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + errno_text(e));
  }
}

}  // namespace attncheck
