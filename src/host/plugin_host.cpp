#include "host/plugin_host.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/child_process.h"
#include "host/host_protocol.h"
#include "host/plugin_loader.h"
#include "text/printable_text.h"
#include "host/shared_region.h"
#include "host/unclaimed_bytes.h"
#include "host/v3_declaration.h"
#include "call/call_layout.h"

namespace attncheck {

namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A write into the byte `at` of the region, which no tensor or guard zone
// claims (unclaimed_bytes.h), said for a report: before the call's layout
// (which starts `shift` bytes into the region), past the last output zone,
// between two output zones, or in an alignment gap between the inputs.
std::string unclaimed_write(const CallLayout& l, long at, std::size_t shift) {
  if (static_cast<std::size_t>(at) < shift)
    return "wrote into the shared region before the call's first tensor (byte " + std::to_string(at) + ")";
  at -= static_cast<long>(shift);
  struct Zone { const char* name; std::size_t data_end, end; };
  std::vector<Zone> zones = {{"out", l.out + l.out_bytes, l.guard_after + CallLayout::kGuardBytes}};
  if (l.lse_bytes) zones.push_back({"lse", l.lse + l.lse_bytes, l.lse_guard_after + CallLayout::kGuardBytes});
  if (l.backward)
    for (auto [name, z] : {std::pair{"dq", &l.dq}, {"dk", &l.dk}, {"dv", &l.dv}})
      zones.push_back({name, z->data + z->bytes, z->end()});
  const std::size_t byte = static_cast<std::size_t>(at);
  if (byte >= zones.back().end)
    return "wrote " + std::to_string(byte - zones.back().data_end) + " bytes past the end of " + zones.back().name +
           ", beyond its guard zone";
  for (std::size_t i = 0; i + 1 < zones.size(); ++i)
    if (byte >= zones[i].end && byte < zones[i + 1].end)
      return std::string("wrote into the shared region between the guard zones of ") + zones[i].name + " and " +
             zones[i + 1].name + " (byte " + std::to_string(at) + ")";
  return "wrote into the shared region outside every tensor (byte " + std::to_string(at) +
         ", an alignment gap between the inputs)";
}

// A call past its limits: which one, and the time it used. "no answer
// within N ms" leads, as before the CPU limit, so scripts keep their words.
std::string call_timeout_message(const ChildProcess::Limits& limits, const ChildProcess::Spent& spent) {
  const std::string used = spent.text();
  if (spent.by_wall)
    return "no answer within " + std::to_string(limits.wall_ms) + " ms of wall-clock time (--wall-timeout-ms), having used " +
           used + ": blocked or sleeping, not computing";
  return "no answer within " + std::to_string(limits.cpu_ms) + " ms of CPU time (--timeout-ms; used " + used + ")";
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
  std::string source() const override { return options_.source.empty() ? "plugin:" + path_ : options_.source; }
  Outcome run(const Problem& problem) override;
  // A v2 or v3 plugin's declared v2 features (and kBackwardFeature when its
  // backward is not NULL); a v1 plugin takes masks and causal rules. A v3
  // plugin's own bits (11 to 16) are not among them but PACKED, PAGED,
  // KV_FORMATS, V_VIEW_OF_K and ALIBI_BATCH, the ones problems use so far (the rest declared_not_judged
  // names); bit 16 is kBackwardFeature here, so BROADCAST_KV (the ABI's bit 16)
  // is taken as kBroadcastKvFeature (bit 17).
  FeatureBits features() const override {
    const FeatureBits taken =
        abi_ == 3 ? kAllFeatures | kPackedFeature | kPagedFeature | kKvFormatsFeature | kVViewFeature | kAlibiBatchFeature : kAllFeatures;
    const FeatureBits broadcast = abi_ == 3 && (features_ & ATTNCHECK_FEATURE_BROADCAST_KV) ? kBroadcastKvFeature : 0;
    return abi_ >= 2 ? (features_ & taken) | broadcast | (has_backward_ ? kBackwardFeature : 0) : kV1Features;
  }
  std::vector<std::string> declared_not_judged() const override { return not_judged_; }
  // A v3 plugin's attncheck_impl_v3::promises (0 for versions 1 and 2).
  uint32_t promises() const override { return promises_; }
  // A v3 plugin's kv_formats, with KV_FORMATS (0 otherwise): the formats problems store K and V in.
  uint32_t kv_formats() const override { return abi_ == 3 && (features_ & kKvFormatsFeature) ? kv_formats_ : 0; }
  // A v3 plugin's ATTNCHECK_NUMERICS_* bits (0 for versions 1 and 2).
  uint32_t numerics() const override { return abi_ == 3 ? numerics_ : 0; }
  // The call's layout starts `bytes` into the shared region: in the child too,
  // every pointer of the call moves by `bytes` (the wire carries offsets).
  bool shift_buffers(std::size_t bytes) override {
    if (bytes % CallLayout::kAlign != 0) return false;
    shift_ = bytes;
    return true;
  }

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
  Outcome exchange_backward(const Problem& problem, const CallLayout& layout, host::CallRequest& req,
                            const std::vector<ByteSpan>& unclaimed, Outcome forward);
  ChildProcess::Limits call_limits() const {
    return {options_.timeout_ms,
            options_.wall_timeout_ms ? options_.wall_timeout_ms : default_wall_timeout_ms(options_.timeout_ms)};
  }
  ChildProcess::Limits load_limits() const {
    return {options_.load_timeout_ms, options_.load_wall_timeout_ms
                                          ? options_.load_wall_timeout_ms
                                          : default_load_wall_timeout_ms(options_.load_timeout_ms)};
  }
  // Sends `req` (with the region's fd when `new_region`) and receives `reply`;
  // a failed exchange (the host died, hung, broke the exchange or failed
  // itself) as its Outcome, the fault's message ending in `during`.
  std::optional<Outcome> transact(const host::CallRequest& req, host::CallReply& reply, bool new_region,
                                  const std::string& during);

  std::string path_;
  PluginOptions options_;
  std::string name_;
  uint32_t abi_ = 1;        // the ABI the plugin is called through (its hello)
  FeatureBits features_ = 0;
  bool has_backward_ = false;  // a v2 or v3 plugin with a backward entry (its hello)
  uint32_t promises_ = 0;      // a v3 plugin's ATTNCHECK_PROMISE_* bits (its hello)
  uint32_t kv_formats_ = 0;    // a v3 plugin's attncheck_impl_v3::kv_formats (its hello)
  uint32_t numerics_ = 0;      // a v3 plugin's attncheck_impl_v3::numerics (its hello)
  std::size_t shift_ = 0;      // where in the region the call's layout starts (shift_buffers)
  std::vector<std::string> not_judged_;  // a v3 plugin's declarations no law judges yet
  SharedRegion region_;
  uint64_t child_region_generation_ = 0;  // the region the running child has
  ChildProcess child_;
  // Set when a restart failed: every later call answers this fault at once.
  std::optional<Outcome> cannot_restart_;
  std::optional<Outcome> pending_fault_;  // answered once, before cannot_restart_
  std::string last_fault_;  // how the last call that ended the host ended, for that answer
  double restart_ms_ = 0;   // wall-clock time spent restarting after faults, in all
};

StartFailure PluginImplementation::start_host() {
  std::string why;
  child_.set_environment(options_.environment);
  if (!child_.start(dlopen_path_for(path_), region_.fd(), options_.memory_limit_bytes, why))
    return {"cannot load plugin " + path_ + ": " + why};
  child_region_generation_ = region_.generation();
  host::HelloMessage hello;
  std::string how;
  ChildProcess::Spent spent;
  switch (child_.receive(&hello, sizeof hello, load_limits(), ChildProcess::Counting::start, how, spent)) {
    case ChildProcess::Wait::ok: break;
    case ChildProcess::Wait::died: return {load_crash_message(path_, how)};
    case ChildProcess::Wait::timed_out:
      child_.kill_and_reap();
      return {load_timeout_message(path_, load_limits(), spent), CallStatus::timeout};
    case ChildProcess::Wait::io_error:
      child_.kill_and_reap();
      return {"cannot load plugin " + path_ + ": broken reply from the plugin host"};
  }
  if (hello.status != host::LoadStatus::ok) {
    child_.kill_and_reap();
    return {load_failure_message(path_, hello)};
  }
  if (std::string refused = declaration_refusal(path_, hello); !refused.empty()) {
    child_.kill_and_reap();
    return {refused};
  }
  hello.text[sizeof hello.text - 1] = 0;
  child_.set_host_pid(hello.pid);
  name_ = hello.text[0] ? printable(hello.text) : base_name(path_);
  abi_ = hello.abi_version;
  features_ = hello.features;
  has_backward_ = hello.abi_version >= 2 && hello.has_backward != 0;
  promises_ = hello.abi_version == 3 ? hello.promises : 0;
  kv_formats_ = hello.abi_version == 3 ? hello.kv_formats : 0;
  numerics_ = hello.abi_version == 3 ? hello.numerics : 0;
  if (hello.abi_version == 3)
    not_judged_ = v3_declarations_not_judged(
        {hello.features, hello.kv_formats, hello.numerics, hello.promises, has_backward_});
  return {};
}

Outcome PluginImplementation::run(const Problem& problem) {
  if (pending_fault_) {
    Outcome o = std::move(*pending_fault_);
    pending_fault_.reset();
    return o;
  }
  if (cannot_restart_) return *cannot_restart_;
  if (backward_needs_lse(problem, features())) {
    Problem with_lse = problem;
    with_lse.lse_requested = true;
    Outcome o = run(with_lse);
    o.lse.clear();
    return o;
  }
  if (std::string why = undeclared_features(problem, features(), kv_formats()); !why.empty())
    return {CallStatus::unsupported, {}, why};
  // A packed problem whose packing does not fit its shape (a call derived from
  // a packed case by a transform that knows nothing of packing) would be laid
  // out past its buffers: never sent, and said to be the checker's.
  if (problem.packed() || problem.paged() || problem.kv_formatted() || problem.v_view_of_k)
    if (std::string bad = problem.inconsistency(); !bad.empty())
      return {CallStatus::unsupported, {}, std::string("not called: the checker built an inconsistent ") +
                                               (problem.paged()          ? "paged"
                                                : problem.packed()       ? "packed"
                                                : problem.kv_formatted() ? "quantized"
                                                                         : "V-view-of-K") +
                                               " call (" + bad + ")"};
  // A v3 call is laid out as v2's, with the packing's arrays when packed.
  const CallLayout layout = layout_for(problem, abi_ >= 2 ? static_cast<int>(abi_) : 1);
  std::string why;
  if (!region_.ensure(layout.total + shift_, why)) return {CallStatus::error, {}, why};
  if (!child_.running()) {
    // The previous call crashed or hung: a fresh child, as the plugin was at load.
    if (restart_ms_ >= options_.restart_budget_ms) {
      cannot_restart_ = Outcome{CallStatus::unsupported, {},
                                "not called: restarting the plugin after its faults took " +
                                    std::to_string(std::lround(restart_ms_ / 1000.0)) + " s in all, the most a run spends "
                                    "on restarts (" + std::to_string(options_.restart_budget_ms / 1000) +
                                    " s); its last fault: it " + last_fault_};
      return *cannot_restart_;
    }
    const auto restart_start = std::chrono::steady_clock::now();
    StartFailure f = start_host();
    restart_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - restart_start).count();
    if (f.failed()) {
      // Later calls are not made: they answer "not called: ..." (as
      // unsupported), so the laws that ask judge too few cases and are
      // insufficient with this reason, and no process law fails on a case
      // that was never run (the fault itself was reported with its case).
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
  // The call's layout starts shift_ bytes into the region (shift_buffers);
  // the bytes before it are unclaimed too, guarded like the others.
  uint8_t* const base = region_.data() + shift_;
  encode_call(problem, layout, base);
  std::vector<ByteSpan> unclaimed = unclaimed_spans(layout, region_.size() - shift_);
  for (ByteSpan& span : unclaimed) span.begin += shift_, span.end += shift_;
  if (shift_) unclaimed.insert(unclaimed.begin(), ByteSpan{0, shift_});
  fill_unclaimed(region_.data(), unclaimed);

  host::CallRequest req;
  req.region_size = region_.size();
  const bool new_region = child_region_generation_ != region_.generation();
  req.region_fd_attached = new_region ? 1 : 0;
  req.abi = static_cast<int32_t>(abi_);
  if (abi_ == 2) req.v2 = host::to_wire(abi_call_v2(problem, layout, base), region_.data());
  if (abi_ == 3)
    req.v3 = host::to_wire(abi_call_v3(problem, layout, base), region_.data());
  req.q = shift_ + layout.q;
  req.k = shift_ + layout.k;
  req.v = shift_ + layout.v;
  req.mask = shift_ + layout.mask;
  req.out = shift_ + layout.out;
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
  if (std::optional<Outcome> failed = transact(req, reply, new_region, "")) return std::move(*failed);
  const std::string err = printable(reply.err);
  Outcome o = outcome_from_return(reply.rc, err.c_str(), problem, layout, base);
  if (reply.rc == ATTNCHECK_OK && o.status != CallStatus::out_of_bounds_write)
    if (const long at = first_changed_unclaimed(region_.data(), unclaimed); at >= 0)
      return {CallStatus::out_of_bounds_write, {}, unclaimed_write(layout, at, shift_)};
  if (!problem.is_backward() || !has_backward_ || o.status != CallStatus::ok) return o;
  return exchange_backward(problem, layout, req, unclaimed, std::move(o));
}

Outcome PluginImplementation::exchange_backward(const Problem& problem, const CallLayout& layout,
                                                host::CallRequest& req, const std::vector<ByteSpan>& unclaimed,
                                                Outcome forward) {
  // Forward's out and lse are backward's inputs: kept here, where the plugin
  // cannot reach them, and compared after backward.
  const ForwardOutputs before = snapshot_forward_outputs(layout, region_.data() + shift_);
  req.backward = 1;
  req.region_fd_attached = 0;  // the region forward used, already mapped by the child
  req.grad = host::to_wire(abi_grad(problem, layout, region_.data() + shift_), region_.data());
  host::CallReply reply;
  if (std::optional<Outcome> failed = transact(req, reply, false, " during backward")) return std::move(*failed);
  const std::string err = printable(reply.err);
  Outcome o = backward_outcome_from_return(reply.rc, err.c_str(), problem, layout, region_.data() + shift_, before,
                                           std::move(forward));
  if (reply.rc == ATTNCHECK_OK && o.status != CallStatus::out_of_bounds_write)
    if (const long at = first_changed_unclaimed(region_.data(), unclaimed); at >= 0)
      return {CallStatus::out_of_bounds_write, {}, "backward " + unclaimed_write(layout, at, shift_)};
  return o;
}

std::optional<Outcome> PluginImplementation::transact(const host::CallRequest& req, host::CallReply& reply,
                                                      bool new_region, const std::string& during) {
  std::string how;
  ChildProcess::Spent spent;
  ChildProcess::Wait w = child_.send(&req, sizeof req, new_region ? region_.fd() : -1);
  if (w == ChildProcess::Wait::ok) {
    child_region_generation_ = region_.generation();
    w = child_.receive(&reply, sizeof reply, call_limits(), ChildProcess::Counting::call, how, spent);
  }
  switch (w) {
    case ChildProcess::Wait::ok: break;
    case ChildProcess::Wait::died:
      if (how.empty()) {  // found dead at send time: it died between calls
        child_.kill_and_reap();
        how = during.empty() ? "the plugin host died between calls" : "the plugin host died after forward";
      }
      return Outcome{CallStatus::crash, {}, how + during};
    case ChildProcess::Wait::timed_out:
      child_.kill_and_reap();
      return Outcome{CallStatus::timeout, {}, call_timeout_message(call_limits(), spent) + during};
    case ChildProcess::Wait::io_error:
      child_.kill_and_reap();
      return Outcome{CallStatus::error, {}, "broken exchange with the plugin host" + during};
  }
  reply.err[sizeof reply.err - 1] = 0;
  if (reply.host_failed) return Outcome{CallStatus::error, {}, std::string("plugin host: ") + reply.err};
  return std::nullopt;
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
