// Case files on disk. Loading bounds what it reads; saving never exposes a
// half-written file and never replaces a different one: the text goes to a
// private temporary in the same folder, is fsync'ed, and is then hard-linked
// under its final name, which fails (EEXIST) instead of overwriting. That
// makes concurrent savers safe: whoever links first wins, the others find an
// identical case there and return it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "casefile/case_limits.h"
#include "casefile/untrusted_json.h"

namespace attncheck {

CaseRecord failure_record(const Problem& p, std::string law, std::string implementation, std::string source,
                          std::string found_by, uint64_t seed, std::string message, std::string diagnosis) {
  CaseRecord rec;
  rec.problem = p;
  rec.law = std::move(law);
  rec.implementation = std::move(implementation);
  rec.source = std::move(source);
  rec.found_by = std::move(found_by);
  rec.seed = seed;
  rec.message = std::move(message);
  rec.diagnosis = std::move(diagnosis);
  return rec;
}
namespace fs = std::filesystem;
namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);  // best effort: the link is made; durability of the entry is a bonus
    ::close(fd);
  }
}

// Links `tmp` as `target` without ever replacing an existing file. 0, or errno.
int link_no_replace(const std::string& tmp, const std::string& target) {
  if (::link(tmp.c_str(), target.c_str()) == 0) return 0;
  const int e = errno;
  if (e != EPERM && e != EOPNOTSUPP && e != ENOSYS) return e;
  // File systems without hard links: the same promise from rename.
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return 0;
  return errno;
}

// The existing file at `path` holds this very case (same law and problem).
bool holds_same_case(const std::string& path, uint64_t hash) {
  try {
    return case_content_hash(load_case(path)) == hash;
  } catch (const CaseFileError&) {
    return false;  // damaged: a different file, left alone
  }
}

}  // namespace

CaseRecord load_case(const std::string& path) {
  std::string text, error;
  if (!read_untrusted_file(path, text, error)) throw CaseFileError(path + ": " + error);
  return case_from_json(text, path);
}

std::string save_case(const CaseRecord& given, const std::string& dir) {
  CaseRecord rec = given;
  if (rec.date.empty()) rec.date = utc_now_iso8601();
  const std::string text = case_to_json(rec);
  const std::string name = case_file_name(rec);
  // Only what loads is saved: a record that would be refused on replay is
  // refused now, while its author is still there to see why.
  case_from_json(text, "case to save as " + (fs::path(dir) / name).string());
  const uint64_t hash = case_content_hash(rec);

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw CaseFileError(dir + ": cannot create the folder: " + ec.message());

  thread_local std::mt19937_64 rng{std::random_device{}() ^
                             static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  const std::string tmp = (fs::path(dir) / ("." + name + ".tmp." + std::to_string(::getpid()) + "." +
                                            std::to_string(rng())))
                              .string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw CaseFileError(tmp + ": cannot create: " + errno_text(errno));
  const bool written = write_all(fd, text) && ::fsync(fd) == 0;
  const int write_errno = errno;
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    throw CaseFileError(tmp + ": cannot write: " + errno_text(written ? errno : write_errno));
  }

  const std::string stem = name.substr(0, name.size() - 5);  // without ".json"
  for (int attempt = 1; attempt <= 1000; ++attempt) {
    const std::string target =
        (fs::path(dir) / (attempt == 1 ? name : stem + "-" + std::to_string(attempt) + ".json")).string();
    const int e = link_no_replace(tmp, target);
    if (e == 0) {
      ::unlink(tmp.c_str());  // gone already after a rename
      fsync_dir(dir);
      return target;
    }
    if (e != EEXIST) {
      ::unlink(tmp.c_str());
      throw CaseFileError(target + ": cannot save: " + errno_text(e));
    }
    if (holds_same_case(target, hash)) {
      ::unlink(tmp.c_str());
      return target;
    }
  }
  ::unlink(tmp.c_str());
  throw CaseFileError((fs::path(dir) / name).string() + ": 1000 different files already hold this name");
}

}  // namespace attncheck
