#include "host/shared_region.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace attncheck {

namespace {
constexpr std::size_t kFirstSize = 64 * 1024;
}  // namespace

SharedRegion::~SharedRegion() {
  if (base_) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
}

bool SharedRegion::create(std::string& why) { return fd_ >= 0 || replace(kFirstSize, why); }

bool SharedRegion::ensure(std::size_t bytes, std::string& why) {
  if (bytes <= size_) return true;
  // Doubling keeps the number of replacements (and fds handed to the child)
  // logarithmic in the largest call; a page multiple keeps mmap happy.
  std::size_t want = size_ ? size_ : kFirstSize;
  while (want < bytes) want *= 2;
  return replace(want, why);
}

bool SharedRegion::replace(std::size_t bytes, std::string& why) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  // Not MFD_CLOEXEC on purpose: harmless without exec, and a host child
  // started later inherits the current fd across fork.
  const int fd = memfd_create("attncheck-call", MFD_ALLOW_SEALING);
  if (fd < 0) {
    why = std::string("memfd_create failed: ") + std::strerror(errno);
    return false;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    why = "cannot size the shared call region to " + std::to_string(bytes) + " bytes: " + std::strerror(errno);
    close(fd);
    return false;
  }
  // F_SEAL_SEAL last, so the child cannot add seals of its own either.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    why = std::string("cannot seal the shared call region: ") + std::strerror(errno);
    close(fd);
    return false;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    why = "cannot map the shared call region (" + std::to_string(bytes) + " bytes): " + std::strerror(errno);
    close(fd);
    return false;
  }
  // Not inherited by any process forked from here: the host of another
  // plugin (a fork of attncheck) must not find this region in its memory and
  // write into it while this plugin's call runs. This plugin's host maps it
  // from the fd it is handed.
  if (madvise(p, bytes, MADV_DONTFORK) != 0) {
    why = std::string("cannot keep the shared call region out of other processes (madvise): ") + std::strerror(errno);
    munmap(p, bytes);
    close(fd);
    return false;
  }
  if (base_) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  base_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  ++generation_;
  return true;
}

}  // namespace attncheck
