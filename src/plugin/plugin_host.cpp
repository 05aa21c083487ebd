#include "plugin/plugin_host.h"

#include <algorithm>

#include "plugin/child_process.h"
#include "plugin/host_protocol.h"
#include "plugin/plugin_loader.h"
#include "plugin/shared_region.h"
#include "problem/call_layout.h"

namespace attncheck {

namespace {

// Loading runs the plugin's constructors and dlopen's relocations: allow it
// more than one forward call, so a short per-call limit does not refuse a
// plugin that is merely big.
int load_timeout_ms(const PluginOptions& o) { return std::max(o.timeout_ms, 5000); }

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class PluginImplementation final : public Implementation {
 public:
  PluginImplementation(std::string path, PluginOptions options) : path_(std::move(path)), options_(options) {}

  std::string name() const override { return name_; }
  std::string source() const override { return "plugin:" + path_; }
  Outcome run(const Problem& problem) override;

  // Starts (or restarts) the host child and waits for its hello. "" on
  // success, else the message naming the file and the cause.
  std::string start_host();

  bool create_region(std::string& why) { return region_.create(why); }

 private:
  std::string path_;
  PluginOptions options_;
  std::string name_;
  SharedRegion region_;
  ChildProcess child_;
};

std::string PluginImplementation::start_host() {
  std::string why;
  if (!child_.start(dlopen_path_for(path_), region_.fd(), why)) return "cannot load plugin " + path_ + ": " + why;
  host::HelloMessage hello;
  std::string how;
  switch (child_.receive(&hello, sizeof hello, load_timeout_ms(options_), how)) {
    case ChildProcess::Wait::ok: break;
    case ChildProcess::Wait::died: return load_crash_message(path_, how);
    case ChildProcess::Wait::timed_out:
      child_.kill_and_reap();
      return load_timeout_message(path_, load_timeout_ms(options_));
    case ChildProcess::Wait::io_error:
      child_.kill_and_reap();
      return "cannot load plugin " + path_ + ": broken reply from the plugin host";
  }
  if (hello.status != host::LoadStatus::ok) {
    child_.kill_and_reap();
    return load_failure_message(path_, hello);
  }
  hello.text[sizeof hello.text - 1] = 0;
  name_ = hello.text[0] ? hello.text : base_name(path_);
  return "";
}

Outcome PluginImplementation::run(const Problem& problem) {
  const CallLayout layout = layout_for(problem);
  std::string why;
  if (!region_.ensure(layout.total, why)) return {CallStatus::error, {}, why};
  if (!child_.running()) {
    // The previous call crashed or hung: a fresh child, as the plugin was at load.
    if (std::string e = start_host(); !e.empty()) return {CallStatus::error, {}, "restarting the plugin host: " + e};
  }
  encode_call(problem, layout, region_.data());

  host::CallRequest req;
  req.region_size = region_.size();
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
  ChildProcess::Wait w = child_.send(&req, sizeof req);
  if (w == ChildProcess::Wait::ok) w = child_.receive(&reply, sizeof reply, options_.timeout_ms, how);
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
  if (reply.host_failed) return {CallStatus::error, {}, std::string("plugin host: ") + reply.err};
  reply.err[sizeof reply.err - 1] = 0;
  return outcome_from_return(reply.rc, reply.err, problem, layout, region_.data());
}

}  // namespace

std::unique_ptr<Implementation> load_plugin(const std::string& path, const PluginOptions& options, std::string& error) {
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
  if (std::string e = impl->start_host(); !e.empty()) {
    error = e;
    return nullptr;
  }
  return impl;
}

}  // namespace attncheck
