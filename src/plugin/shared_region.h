// A growable block of memory shared between the parent and the plugin's host
// child: a memfd, sized with ftruncate and mapped MAP_SHARED in both processes.
// A plain MAP_ANONYMOUS|MAP_SHARED mapping made before fork could not grow;
// a memfd can, and the child (which inherited the fd at fork) just maps the
// new size when a request says the region got bigger.
//
// Example usage:
//   SharedRegion r;                     // parent, before fork
//   if (!r.ensure(layout.total, why)) ...
//   encode_call(p, layout, r.data());
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attncheck {

class SharedRegion {
 public:
  SharedRegion() = default;
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // Creates the memfd (no mapping yet). False with `why` on failure.
  bool create(std::string& why);
  // Grows (never shrinks) the file and this process's mapping to at least `bytes`.
  bool ensure(std::size_t bytes, std::string& why);

  int fd() const { return fd_; }
  std::size_t size() const { return size_; }
  uint8_t* data() const { return base_; }

 private:
  int fd_ = -1;
  std::size_t size_ = 0;
  uint8_t* base_ = nullptr;
};

}  // namespace attncheck
