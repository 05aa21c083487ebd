// The block of memory shared between the parent and the plugin's host child:
// a memfd mapped MAP_SHARED in both processes.
//
// The child can reach the memfd itself, not only the mapping, so its size is
// sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL): a plugin that truncates
// it would otherwise make the parent die of SIGBUS on its next read. A sealed
// file cannot grow either, so growing means a new, bigger memfd; the parent
// hands it to a running child with the next request (SCM_RIGHTS, see
// plugin_host.cpp), and generation() tells whether that is still to do.
//
// Example usage:
//   SharedRegion r;
//   if (!r.ensure(layout.total, why)) ...   // r.fd(): the memfd to share
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

  // Makes the first (small) memfd, so a child can be started before any call.
  bool create(std::string& why);
  // Ensures at least `bytes`: keeps the region when it is big enough, else
  // replaces it by a new sealed memfd (at least twice the size), bumping generation().
  bool ensure(std::size_t bytes, std::string& why);

  int fd() const { return fd_; }
  std::size_t size() const { return size_; }
  uint8_t* data() const { return base_; }
  // Counts replacements: a child that holds an older generation needs the new fd.
  uint64_t generation() const { return generation_; }

 private:
  bool replace(std::size_t bytes, std::string& why);

  int fd_ = -1;
  std::size_t size_ = 0;
  uint8_t* base_ = nullptr;
  uint64_t generation_ = 0;
};

}  // namespace attncheck
