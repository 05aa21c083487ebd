// The messages between the parent and a plugin's host child. They travel over
// an AF_UNIX SOCK_SEQPACKET socketpair: one send is one message, so a message
// is a fixed-size struct read whole, never a byte stream to parse. The plugin
// shares the child with this protocol but not its fd numbers' meaning to the
// parent: whatever it prints goes to stderr, never into the socket.
//
//   child  -> parent  HelloMessage   once, after dlopen + attncheck_plugin_v3()
//                                    (or, without it, attncheck_plugin_v2(), else
//                                    attncheck_plugin_v1(): the highest version present)
//   parent -> child   CallRequest    one per forward call; the tensors are in
//                                    the shared region (see call_layout.h)
//   child  -> parent  CallReply      forward's return code and err text
//
// A backward problem is two exchanges on the same region: the forward
// request, then (when forward answered and its outputs decoded ok) a request
// with `backward` set, which the child answers with backward's return code.
// Between them the parent keeps forward's out and lse, which backward takes
// as inputs and must leave as they are: the copy is out of the plugin's reach.
//
// A child that dies or stays silent past the time limit is reaped by the
// parent and restarted for the next call (plugin_host.cpp).
//
// The host child is not the parent's child: between them sits a supervisor
// (supervisor.h), which never loads the plugin. It reaps everything the
// plugin starts and tells the parent how the host ended, over a second
// socketpair, the lifeline:
//
//   supervisor -> parent  SupervisorReport  once, when the host ended (or was
//                                           stopped at the memory limit)
//   parent -> supervisor  (closing the lifeline)  end the host and all it started
#pragma once

#include <cstdint>

#include "attncheck/plugin_v3.h"
#include "host/call_wire.h"

namespace attncheck::host {

enum class LoadStatus : int32_t {
  ok = 0,          // text = the plugin's name
  dlopen_failed,   // text = dlerror()
  no_symbol,       // text = dlerror()
  null_impl,       // attncheck_plugin_v1() (or _v2, _v3: text says which) returned NULL
  abi_mismatch,    // abi_version holds what the plugin reports; text the symbol
  null_forward,    // the attncheck_impl (or _v2, _v3) has no forward function; text the symbol
  unknown_features,  // features holds bits no ATTNCHECK_FEATURE_* of ABI v2 names (a v2 plugin)
};

struct HelloMessage {
  LoadStatus status = LoadStatus::ok;
  uint32_t abi_version = 0;  // 1, 2 or 3: the ABI the host calls the plugin through
  uint32_t features = 0;     // a v2 or v3 plugin's ATTNCHECK_FEATURE_* bits
  int32_t has_backward = 0;  // 1: a v2 or v3 plugin whose `backward` is not NULL
  // A v3 plugin's other declarations, as it made them: the parent judges them
  // (v3_declaration.h) and refuses the plugin when the spec says to.
  uint32_t kv_formats = 0, numerics = 0, promises = 0;
  int32_t pid = 0;           // the host's: a call's CPU time starts from the host's own
  char text[1024] = {};
  // null_impl only: what the plugin's optional attncheck_plugin_load_error()
  // says about why it refused to load (the Python bridge: the import error and
  // sys.path); empty when it exports none.
  char reason[2048] = {};
};

struct CallRequest {
  uint64_t region_size = 0;  // bytes the child must have mapped (grows only)
  // 1: this message carries a new region memfd (SCM_RIGHTS) that replaces the
  // child's; the region is sealed at region_size bytes (shared_region.h).
  int32_t region_fd_attached = 0;
  int32_t abi = 1;  // 3: the call is `v3`; 2: the call is `v2`; 1: the fields below
  WireCallV2 v2;
  WireCallV3 v3;
  // 1 (abi 2 and 3): call the plugin's backward on `v2` (`v3`) and `grad`, not forward;
  // out and lse in the region hold what the forward call just wrote.
  int32_t backward = 0;
  WireGrad grad;
  // Offsets into the region (CallLayout) of a v1 call.
  uint64_t q = 0, k = 0, v = 0, mask = 0, out = 0;
  int32_t dtype = 0, causal = 0, has_mask = 0;
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  double scale = 0;
};

struct CallReply {
  int32_t host_failed = 0;  // 1: the child itself failed (err says why); rc is meaningless
  int32_t rc = 0;           // forward's (or, for a backward request, backward's) return code
  // 2048: a Python traceback (plugins/python) must fit; most plugins say one line.
  char err[2048] = {};
};

// The host child's exit status when the plugin closed the host's end of the
// connection (a plugin that closes file descriptors it does not own).
inline constexpr int kExitLostConnection = 121;

enum class SupervisorEvent : int32_t {
  host_ended = 1,       // wait_status: the host's waitpid status
  memory_exceeded = 2,  // the host was stopped: resident_bytes over limit_bytes
};

struct SupervisorReport {
  SupervisorEvent event = SupervisorEvent::host_ended;
  int32_t wait_status = 0;
  uint64_t resident_bytes = 0;
  uint64_t limit_bytes = 0;
};

}  // namespace attncheck::host
