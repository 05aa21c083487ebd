// Everything here runs in the forked child. It keeps to plain system calls and
// fixed buffers: the parent may have been anywhere when it forked, and the
// child must never return into the parent's code (it ends with _exit).
// fork without exec is safe as long as the parent is single-threaded when it
// loads or restarts a plugin (the CLI and the tests are); dlopen in a child
// forked from a multi-threaded parent could deadlock on a lock held by another
// thread. `check --jobs N` keeps it so: its workers are processes, each
// single-threaded, each with its own plugin hosts (run/worker_processes.h),
// never threads sharing one process.
#include "host/host_child.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/host_protocol.h"

namespace attncheck::host {

namespace {

void copy_text(char* dst, std::size_t cap, const char* src) {
  if (!src) src = "";
  std::snprintf(dst, cap, "%s", src);
}

bool send_all(int sock, const void* msg, std::size_t n) {
  // MSG_NOSIGNAL: a parent that went away must end the child quietly, not by SIGPIPE.
  for (;;) {
    const ssize_t r = send(sock, msg, n, MSG_NOSIGNAL);
    if (r == static_cast<ssize_t>(n)) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

// Closes fds first..last; close_range needs Linux 5.9, so older kernels get the loop.
void close_fds(unsigned first, unsigned last) {
  if (close_range(first, last, 0) == 0) return;
  const long open_max = sysconf(_SC_OPEN_MAX);
  const unsigned cap = open_max > 0 && open_max < 65536 ? static_cast<unsigned>(open_max) : 65536u;
  for (unsigned fd = first; fd <= last && fd < cap; ++fd) close(static_cast<int>(fd));
}

// Signals and fds as a fresh process would have them, so a plugin fault is the
// plain signal the parent can name (a sanitizer's or test runner's handlers,
// inherited through fork, would turn a SIGSEGV into an exit status), and so
// the plugin cannot reach the parent's other files, sockets or shared regions.
// A high fd number for the host's own fds, so that a plugin that closes the
// low ones it does not own (0 to 100, say) leaves its connection alone.
int high_fd(int below) {
  rlimit r{};
  long top = getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY ? static_cast<long>(r.rlim_cur) : 1024;
  if (top > 1024) top = 1024;
  return static_cast<int>(top) - below;
}

// Moves `fd` to `target` (when that is free and higher); returns where it is now.
int move_fd(int fd, int target) {
  if (target <= fd || fcntl(target, F_GETFD) >= 0) return fd;
  if (dup2(fd, target) != target) return fd;
  close(fd);
  return target;
}

void isolate(int& sock, int& region_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a dying supervisor takes its host along
  setpgid(0, 0);  // an own process group, so the parent can kill whatever the plugin forks
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  static const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS,
                                 SIGPIPE, SIGTERM, SIGINT, SIGALRM, SIGHUP, SIGQUIT};
  for (int sig : kSignals) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  // stdin from /dev/null; stdout onto stderr, so plugin chatter cannot get
  // into the parent's report on stdout.
  if (int devnull = open("/dev/null", O_RDONLY); devnull >= 0) {
    dup2(devnull, 0);
    if (devnull != 0) close(devnull);
  }
  dup2(2, 1);

  sock = move_fd(sock, high_fd(2));
  region_fd = move_fd(region_fd, high_fd(3));
  const unsigned lo = static_cast<unsigned>(sock < region_fd ? sock : region_fd);
  const unsigned hi = static_cast<unsigned>(sock < region_fd ? region_fd : sock);
  if (lo > 3) close_fds(3, lo - 1);
  if (hi > lo + 1) close_fds(lo + 1, hi - 1);
  close_fds(hi + 1, ~0u);
}

// The plugin's entry point, the highest version it exports: v3 when it
// exports attncheck_plugin_v3, else v2, else v1. The one chosen must be sound:
// a broken v3 export is refused, never passed over for a lower one.
struct Entry {
  const attncheck_impl* v1 = nullptr;
  const attncheck_impl_v2* v2 = nullptr;
  const attncheck_impl_v3* v3 = nullptr;
  bool loaded() const { return v1 || v2 || v3; }
  int version() const { return v3 ? 3 : v2 ? 2 : 1; }
};

// A plugin that refuses to load (its entry returns NULL) may say why through
// the optional `const char* attncheck_plugin_load_error(void)`: not part of the
// pinned ABI, an addition the loader reads when it is there.
void load_error_reason(void* lib, HelloMessage& hello) {
  using ReasonFn = const char* (*)();
  if (void* sym = dlsym(lib, "attncheck_plugin_load_error"))
    if (const char* why = reinterpret_cast<ReasonFn>(sym)()) copy_text(hello.reason, sizeof hello.reason, why);
}

// abi_version is the only field every ABI version is promised to share:
// nothing else of the struct is read before it matches.
const attncheck_impl_v2* load_v2(void* sym, HelloMessage& hello) {
  using EntryFn = const attncheck_impl_v2* (*)();
  const attncheck_impl_v2* impl = reinterpret_cast<EntryFn>(sym)();
  copy_text(hello.text, sizeof hello.text, "attncheck_plugin_v2");
  if (!impl) {
    hello.status = LoadStatus::null_impl;
    return nullptr;
  }
  hello.abi_version = impl->abi_version;
  if (impl->abi_version != ATTNCHECK_ABI_VERSION_2) {
    hello.status = LoadStatus::abi_mismatch;
    return nullptr;
  }
  hello.features = impl->features;
  if (impl->features & ~((1u << 11) - 1)) {
    hello.status = LoadStatus::unknown_features;
    return nullptr;
  }
  if (!impl->forward) {
    hello.status = LoadStatus::null_forward;
    return nullptr;
  }
  hello.has_backward = impl->backward ? 1 : 0;
  hello.status = LoadStatus::ok;
  copy_text(hello.text, sizeof hello.text, impl->name);
  return impl;
}

// A v3 export: only abi_version and forward are judged here; its features,
// kv_formats, numerics and promises travel in the hello, and the parent
// refuses what the spec refuses (v3_declaration.h), naming field and value.
const attncheck_impl_v3* load_v3(void* sym, HelloMessage& hello) {
  using EntryFn = const attncheck_impl_v3* (*)();
  const attncheck_impl_v3* impl = reinterpret_cast<EntryFn>(sym)();
  copy_text(hello.text, sizeof hello.text, "attncheck_plugin_v3");
  if (!impl) {
    hello.status = LoadStatus::null_impl;
    return nullptr;
  }
  hello.abi_version = impl->abi_version;
  if (impl->abi_version != ATTNCHECK_ABI_VERSION_3) {
    hello.status = LoadStatus::abi_mismatch;
    return nullptr;
  }
  if (!impl->forward) {
    hello.status = LoadStatus::null_forward;
    return nullptr;
  }
  hello.features = impl->features;
  hello.kv_formats = impl->kv_formats;
  hello.numerics = impl->numerics;
  hello.promises = impl->promises;
  hello.has_backward = impl->backward ? 1 : 0;
  hello.status = LoadStatus::ok;
  copy_text(hello.text, sizeof hello.text, impl->name);
  return impl;
}

const attncheck_impl* load_v1(void* sym, HelloMessage& hello) {
  using EntryFn = const attncheck_impl* (*)();
  const attncheck_impl* impl = reinterpret_cast<EntryFn>(sym)();
  copy_text(hello.text, sizeof hello.text, "attncheck_plugin_v1");
  if (!impl) {
    hello.status = LoadStatus::null_impl;
    return nullptr;
  }
  hello.abi_version = impl->abi_version;
  if (impl->abi_version != ATTNCHECK_ABI_VERSION) {
    hello.status = LoadStatus::abi_mismatch;
    return nullptr;
  }
  if (!impl->forward) {
    hello.status = LoadStatus::null_forward;
    return nullptr;
  }
  hello.status = LoadStatus::ok;
  copy_text(hello.text, sizeof hello.text, impl->name);
  return impl;
}

// Loads the plugin and fills `hello`.
Entry load(const char* path, HelloMessage& hello) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    hello.status = LoadStatus::dlopen_failed;
    copy_text(hello.text, sizeof hello.text, dlerror());
    return {};
  }
  dlerror();
  if (void* sym = dlsym(lib, "attncheck_plugin_v3")) {
    Entry e{nullptr, nullptr, load_v3(sym, hello)};
    if (hello.status == LoadStatus::null_impl) load_error_reason(lib, hello);
    return e;
  }
  dlerror();
  if (void* sym = dlsym(lib, "attncheck_plugin_v2")) {
    Entry e{nullptr, load_v2(sym, hello)};
    if (hello.status == LoadStatus::null_impl) load_error_reason(lib, hello);
    return e;
  }
  dlerror();
  void* sym = dlsym(lib, "attncheck_plugin_v1");
  if (!sym) {
    hello.status = LoadStatus::no_symbol;
    const char* e = dlerror();
    copy_text(hello.text, sizeof hello.text, e ? e : "attncheck_plugin_v1 resolves to NULL");
    return {};
  }
  Entry e{load_v1(sym, hello), nullptr};
  if (hello.status == LoadStatus::null_impl) load_error_reason(lib, hello);
  return e;
}

// Whether the host's own socket is gone: the plugin closed (or replaced) it.
int g_sock = -1;
bool lost_connection() {
  int type = 0;
  socklen_t len = sizeof type;
  return getsockopt(g_sock, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET;
}

// One CallRequest, and the fd it carries when it hands over a new region (else -1).
ssize_t receive_request(int sock, CallRequest& req, int& fd) {
  iovec io{&req, sizeof req};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); n >= 0 && c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return n;
}

}  // namespace

void run_host_child(const char* path, int sock, int region_fd) {
  isolate(sock, region_fd);
  g_sock = sock;

  HelloMessage hello;
  hello.pid = static_cast<int32_t>(getpid());
  const Entry impl = load(path, hello);
  if (!send_all(sock, &hello, sizeof hello)) _exit(lost_connection() ? kExitLostConnection : 0);
  if (!impl.loaded()) _exit(0);

  uint8_t* base = nullptr;
  std::size_t mapped = 0;
  for (;;) {
    CallRequest req;
    int new_region = -1;
    const ssize_t n = receive_request(sock, req, new_region);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && lost_connection()) _exit(kExitLostConnection);
    if (n != static_cast<ssize_t>(sizeof req)) _exit(0);  // parent closed the socket (or garbage)

    CallReply reply;
    if (new_region >= 0) {
      // A new, bigger sealed region replaces the old one at the same fd number.
      if (!req.region_fd_attached || dup2(new_region, region_fd) != region_fd) {
        close(new_region);
        reply.host_failed = 1;
        std::snprintf(reply.err, sizeof reply.err, "host child cannot take the new shared region");
        if (!send_all(sock, &reply, sizeof reply)) _exit(0);
        continue;
      }
      close(new_region);
      if (base) munmap(base, mapped);
      base = nullptr;
      mapped = 0;
    }
    if (req.region_size > mapped) {
      if (base) munmap(base, mapped);
      void* p = mmap(nullptr, req.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd, 0);
      if (p == MAP_FAILED) {
        base = nullptr;
        mapped = 0;
        reply.host_failed = 1;
        std::snprintf(reply.err, sizeof reply.err, "host child cannot map %llu bytes: %s",
                      static_cast<unsigned long long>(req.region_size), std::strerror(errno));
        if (!send_all(sock, &reply, sizeof reply)) _exit(0);
        continue;
      }
      base = static_cast<uint8_t*>(p);
      mapped = req.region_size;
    }

    if (req.abi == 3 && impl.v3 && req.backward && !impl.v3->backward) {
      reply.host_failed = 1;
      std::snprintf(reply.err, sizeof reply.err, "host child got a backward call for a plugin without backward");
      if (!send_all(sock, &reply, sizeof reply)) _exit(0);
      continue;
    } else if (req.abi == 3 && impl.v3 && req.backward) {
      const attncheck_call_v3 call = from_wire(req.v3, base);
      const attncheck_grad grad = from_wire(req.grad, base);
      reply.rc = impl.v3->backward(&call, &grad, reply.err, sizeof reply.err);
    } else if (req.abi == 3 && impl.v3) {
      const attncheck_call_v3 call = from_wire(req.v3, base);
      reply.rc = impl.v3->forward(&call, reply.err, sizeof reply.err);
    } else if (req.abi == 2 && impl.v2 && req.backward && !impl.v2->backward) {
      reply.host_failed = 1;
      std::snprintf(reply.err, sizeof reply.err, "host child got a backward call for a plugin without backward");
      if (!send_all(sock, &reply, sizeof reply)) _exit(0);
      continue;
    } else if (req.abi == 2 && impl.v2 && req.backward) {
      const attncheck_call_v2 call = from_wire(req.v2, base);
      const attncheck_grad grad = from_wire(req.grad, base);
      reply.rc = impl.v2->backward(&call, &grad, reply.err, sizeof reply.err);
    } else if (req.abi == 2 && impl.v2) {
      const attncheck_call_v2 call = from_wire(req.v2, base);
      reply.rc = impl.v2->forward(&call, reply.err, sizeof reply.err);
    } else if (req.abi == 1 && impl.v1) {
      attncheck_call call{};
      call.dtype = static_cast<attncheck_dtype>(req.dtype);
      call.batch = req.batch;
      call.heads = req.heads;
      call.q_len = req.q_len;
      call.kv_len = req.kv_len;
      call.head_dim = req.head_dim;
      call.value_dim = req.value_dim;
      call.causal = static_cast<attncheck_causal>(req.causal);
      call.scale = req.scale;
      call.q = base + req.q;
      call.k = base + req.k;
      call.v = base + req.v;
      call.mask = req.has_mask ? base + req.mask : nullptr;
      call.out = base + req.out;
      reply.rc = impl.v1->forward(&call, reply.err, sizeof reply.err);
    } else {
      reply.host_failed = 1;
      std::snprintf(reply.err, sizeof reply.err, "host child got a v%d call for a v%d plugin", req.abi,
                    impl.version());
      if (!send_all(sock, &reply, sizeof reply)) _exit(0);
      continue;
    }
    reply.err[sizeof reply.err - 1] = 0;  // the plugin may not have terminated it
    if (!send_all(sock, &reply, sizeof reply)) _exit(lost_connection() ? kExitLostConnection : 0);
  }
}

}  // namespace attncheck::host
