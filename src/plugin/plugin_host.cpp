#include "plugin/plugin_host.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "plugin/child_process.h"
#include "plugin/host_protocol.h"
#include "plugin/plugin_loader.h"
#include "plugin/printable_text.h"
#include "plugin/shared_region.h"
#include "plugin/unclaimed_bytes.h"
#include "problem/call_layout.h"

namespace attncheck {

namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A failed start: the message, and the process fault it is when it happens
// on a restart (a hang while loading is a timeout, anything else a crash).
struct StartFailure {
  std::string message;
  CallStatus fault = CallStatus::crash;
  bool failed() const { return !message.empty(); }
};

class PluginImplementation final : public Implementation {
 public:
  PluginImplementation(std::string path, PluginOptions options) : path_(std::move(path)), options_(options) {}

  std::string name() const override { return name_; }
  std::string source() const override { return "plugin:" + path_; }
  Outcome run(const Problem& problem) override;
  // A v2 plugin's declared features; a v1 plugin takes masks and causal rules.
  FeatureBits features() const override { return abi_ == 2 ? features_ : kV1Features; }

  // Starts (or restarts) the host child and waits for its hello.
  StartFailure start_host();

  bool create_region(std::string& why) { return region_.create(why); }

  // A load that failed for another instance (load_plugin_again): answered
  // like a failed restart, the fault once, then "not called" with the reason.
  void cannot_load_again(const StartFailure& f) {
    name_ = base_name(path_);
    pending_fault_ = Outcome{f.fault, {}, "loading the plugin again for another worker of --jobs: " + f.message};
    cannot_restart_ = Outcome{CallStatus::unsupported, {},
                              "not called: the plugin loaded once but could not be loaded again for another worker "
                              "of --jobs (" + f.message + "); --jobs 1 checks it in one process"};
  }

 private:
  Outcome exchange(const Problem& problem, const CallLayout& layout);

  std::string path_;
  PluginOptions options_;
  std::string name_;
  uint32_t abi_ = 1;        // the ABI the plugin is called through (its hello)
  FeatureBits features_ = 0;
  SharedRegion region_;
  uint64_t child_region_generation_ = 0;  // the region the running child has
  ChildProcess child_;
  // Set when a restart failed: every later call answers this fault at once.
  std::optional<Outcome> cannot_restart_;
  std::optional<Outcome> pending_fault_;  // answered once, before cannot_restart_
  std::string last_fault_;  // how the last call that ended the host ended, for that answer
};

StartFailure PluginImplementation::start_host() {
  std::string why;
  if (!child_.start(dlopen_path_for(path_), region_.fd(), options_.memory_limit_bytes, why))
    return {"cannot load plugin " + path_ + ": " + why};
  child_region_generation_ = region_.generation();
  host::HelloMessage hello;
  std::string how;
  switch (child_.receive(&hello, sizeof hello, options_.load_timeout_ms, how)) {
    case ChildProcess::Wait::ok: break;
    case ChildProcess::Wait::died: return {load_crash_message(path_, how)};
    case ChildProcess::Wait::timed_out:
      child_.kill_and_reap();
      return {load_timeout_message(path_, options_.load_timeout_ms), CallStatus::timeout};
    case ChildProcess::Wait::io_error:
      child_.kill_and_reap();
      return {"cannot load plugin " + path_ + ": broken reply from the plugin host"};
  }
  if (hello.status != host::LoadStatus::ok) {
    child_.kill_and_reap();
    return {load_failure_message(path_, hello)};
  }
  hello.text[sizeof hello.text - 1] = 0;
  name_ = hello.text[0] ? printable(hello.text) : base_name(path_);
  abi_ = hello.abi_version;
  features_ = hello.features;
  return {};
}

Outcome PluginImplementation::run(const Problem& problem) {
  if (pending_fault_) {
    Outcome o = std::move(*pending_fault_);
    pending_fault_.reset();
    return o;
  }
  if (cannot_restart_) return *cannot_restart_;
  if (std::string why = undeclared_features(problem, features()); !why.empty())
    return {CallStatus::unsupported, {}, why};
  const CallLayout layout = layout_for(problem, static_cast<int>(abi_));
  std::string why;
  if (!region_.ensure(layout.total, why)) return {CallStatus::error, {}, why};
  if (!child_.running()) {
    // The previous call crashed or hung: a fresh child, as the plugin was at load.
    if (StartFailure f = start_host(); f.failed()) {
      // Later calls are not made: they answer "unsupported", so the laws
      // that ask are skipped with this reason, and no process law fails on a
      // case that was never run (the fault itself was reported with its case).
      cannot_restart_ = Outcome{CallStatus::unsupported, {},
                                "not called: the plugin could not be restarted after an earlier call " + last_fault_ +
                                    " (" + f.message + ")"};
      return {f.fault, {}, "restarting the plugin host after the previous fault: " + f.message};
    }
  }
  Outcome o = exchange(problem, layout);
  if (o.status == CallStatus::crash) last_fault_ = "crashed (" + o.message + ")";
  if (o.status == CallStatus::timeout) last_fault_ = "hung (" + o.message + ")";
  return o;
}

Outcome PluginImplementation::exchange(const Problem& problem, const CallLayout& layout) {
  encode_call(problem, layout, region_.data());
  const std::vector<ByteSpan> unclaimed = unclaimed_spans(layout, region_.size());
  fill_unclaimed(region_.data(), unclaimed);

  host::CallRequest req;
  req.region_size = region_.size();
  const bool new_region = child_region_generation_ != region_.generation();
  req.region_fd_attached = new_region ? 1 : 0;
  req.abi = static_cast<int32_t>(abi_);
  if (abi_ == 2) req.v2 = host::to_wire(abi_call_v2(problem, layout, region_.data()), region_.data());
  req.q = layout.q;
  req.k = layout.k;
  req.v = layout.v;
  req.mask = layout.mask;
  req.out = layout.out;
  req.dtype = static_cast<int32_t>(problem.dtype);
  req.causal = static_cast<int32_t>(problem.causal);
  req.has_mask = problem.has_mask() ? 1 : 0;
  req.batch = problem.shape.batch;
  req.heads = problem.shape.heads;
  req.q_len = problem.shape.q_len;
  req.kv_len = problem.shape.kv_len;
  req.head_dim = problem.shape.head_dim;
  req.value_dim = problem.shape.value_dim;
  req.scale = problem.scale;

  host::CallReply reply;
  std::string how;
  ChildProcess::Wait w = child_.send(&req, sizeof req, new_region ? region_.fd() : -1);
  if (w == ChildProcess::Wait::ok) {
    child_region_generation_ = region_.generation();
    w = child_.receive(&reply, sizeof reply, options_.timeout_ms, how);
  }
  switch (w) {
    case ChildProcess::Wait::ok: break;
    case ChildProcess::Wait::died:
      if (how.empty()) {  // found dead at send time: it died between calls
        child_.kill_and_reap();
        how = "the plugin host died between calls";
      }
      return {CallStatus::crash, {}, how};
    case ChildProcess::Wait::timed_out:
      child_.kill_and_reap();
      return {CallStatus::timeout, {}, "no answer within " + std::to_string(options_.timeout_ms) + " ms"};
    case ChildProcess::Wait::io_error:
      child_.kill_and_reap();
      return {CallStatus::error, {}, "broken exchange with the plugin host"};
  }
  reply.err[sizeof reply.err - 1] = 0;
  if (reply.host_failed) return {CallStatus::error, {}, std::string("plugin host: ") + reply.err};
  const std::string err = printable(reply.err);
  Outcome o = outcome_from_return(reply.rc, err.c_str(), problem, layout, region_.data());
  if (reply.rc == ATTNCHECK_OK && o.status != CallStatus::out_of_bounds_write) {
    if (const long at = first_changed_unclaimed(region_.data(), unclaimed); at >= 0) {
      const long after_out = at - static_cast<long>(layout.out + layout.out_bytes);
      o = {CallStatus::out_of_bounds_write, {},
           after_out > 0 ? "wrote " + std::to_string(after_out) + " bytes past the end of out, beyond its guard zone"
                         : "wrote into the shared region outside every tensor (byte " + std::to_string(at) +
                               ", an alignment gap between the inputs)"};
    }
  }
  return o;
}

}  // namespace

uint64_t default_memory_limit_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{8} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2;
}

namespace {

// The checks and the shared region every load needs before its host starts.
std::unique_ptr<PluginImplementation> prepare_plugin(const std::string& path, const PluginOptions& options,
                                                     std::string& error) {
  if (std::string problem = plugin_file_problem(path); !problem.empty()) {
    error = problem;
    return nullptr;
  }
  auto impl = std::make_unique<PluginImplementation>(path, options);
  std::string why;
  if (!impl->create_region(why)) {
    error = "cannot load plugin " + path + ": " + why;
    return nullptr;
  }
  return impl;
}

}  // namespace

std::unique_ptr<Implementation> load_plugin(const std::string& path, const PluginOptions& options, std::string& error) {
  auto impl = prepare_plugin(path, options, error);
  if (!impl) return nullptr;
  if (StartFailure f = impl->start_host(); f.failed()) {
    error = f.message;
    return nullptr;
  }
  return impl;
}

std::unique_ptr<Implementation> load_plugin_again(const std::string& path, const PluginOptions& options,
                                                  std::string& error) {
  auto impl = prepare_plugin(path, options, error);
  if (!impl) return nullptr;
  if (StartFailure f = impl->start_host(); f.failed()) impl->cannot_load_again(f);
  return impl;
}

}  // namespace attncheck
