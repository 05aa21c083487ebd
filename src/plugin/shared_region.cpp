#include "plugin/shared_region.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace attncheck {

SharedRegion::~SharedRegion() {
  if (base_) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
}

bool SharedRegion::create(std::string& why) {
  // Not MFD_CLOEXEC on purpose: harmless without exec, and the host child
  // relies on inheriting the fd across fork.
  fd_ = memfd_create("attncheck-call", 0);
  if (fd_ < 0) {
    why = std::string("memfd_create failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool SharedRegion::ensure(std::size_t bytes, std::string& why) {
  if (bytes <= size_) return true;
  // Doubling keeps the number of remaps (and child notifications) logarithmic
  // in the largest call; a page multiple keeps mmap happy.
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t want = size_ ? size_ : 64 * 1024;
  while (want < bytes) want *= 2;
  want = (want + page - 1) / page * page;
  if (ftruncate(fd_, static_cast<off_t>(want)) != 0) {
    why = "cannot grow the shared call region to " + std::to_string(want) + " bytes: " + std::strerror(errno);
    return false;
  }
  void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    why = "cannot map the shared call region (" + std::to_string(want) + " bytes): " + std::strerror(errno);
    return false;
  }
  if (base_) munmap(base_, size_);
  base_ = static_cast<uint8_t*>(p);
  size_ = want;
  return true;
}

}  // namespace attncheck
