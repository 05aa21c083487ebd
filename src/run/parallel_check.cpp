#include "run/parallel_check.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <thread>

#include "run/law_result_wire.h"
#include "run/worker_processes.h"

namespace attncheck {

namespace {

struct Item {
  std::size_t target;
  std::size_t law_index;  // in the target's list: the run's laws, then its extra_laws
  const Law* law;
  bool alone = false;     // the only target of its group: its items run one after another
};

// Items go law by law over groups of this many targets (target-major across
// groups). Implementations with the same features draw the same cases for a
// law, so a worker that runs one law on several of them in a row finds the
// oracle's results for those cases in its memo (oracle/oracle_memo.h): 71% of
// the embedded default's oracle calls with its 28 targets in one group, and
// 113 CPU s for the run instead of 127 with groups of 8 and 136 target by
// target. Larger runs still report their first targets before the rest.
constexpr std::size_t kTargetsPerGroup = 32;

// A group's own laws (Target::extra_laws) follow the run's laws.
std::vector<Item> work_items(const std::vector<Target>& targets, const std::vector<const Law*>& laws) {
  std::vector<Item> items;
  for (std::size_t first = 0; first < targets.size(); first += kTargetsPerGroup) {
    const std::size_t end = std::min(targets.size(), first + kTargetsPerGroup);
    const bool alone = end - first == 1;
    for (std::size_t l = 0; l < laws.size(); ++l)
      for (std::size_t k = first; k < end; ++k) items.push_back({k, l, laws[l], alone});
    for (std::size_t k = first; k < end; ++k)
      for (std::size_t e = 0; e < targets[k].extra_laws.size(); ++e)
        items.push_back({k, laws.size() + e, targets[k].extra_laws[e], alone});
  }
  return items;
}

struct ItemAnswer {
  LawResult law;
  double seconds = 0;         // the law and its diagnosis
  bool budget_spent = false;  // the worker found the --budget spent
  std::string error;          // no instance could be opened
};

// The instances one worker (or the run without workers) keeps between items.
class Instances {
 public:
  explicit Instances(std::vector<Target>& targets) : targets_(targets), kept_(targets.size()) {}

  // The instance item `k`'s law runs on; `fresh` holds it when it is the law's own.
  Implementation* get(std::size_t k, std::unique_ptr<Implementation>& fresh, std::string& error) {
    Target& t = targets_[k];
    if (t.new_instance_per_law) {
      if (t.open) fresh = t.open(error);
      return fresh.get();
    }
    if (t.loaded) return t.loaded.get();
    if (!kept_[k] && t.open) kept_[k] = t.open(error);
    return kept_[k].get();
  }
  void close_all() { kept_.clear(); }

 private:
  std::vector<Target>& targets_;
  std::vector<std::unique_ptr<Implementation>> kept_;
};

ItemAnswer run_item(const Item& item, std::vector<Target>& targets, const RunSettings& settings, Instances& instances,
                    RunBudget& budget) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ItemAnswer a;
  std::unique_ptr<Implementation> fresh;
  Implementation* impl = instances.get(item.target, fresh, a.error);
  if (!impl) {
    const Target& t = targets[item.target];
    if (a.error.empty()) a.error = "cannot open another instance of " + t.name + " (" + t.source + ")";
    // Not run for want of an instance: nothing judged, and not because the law cannot apply.
    a.law.run.law = item.law->name;
    a.law.run.status = LawStatus::insufficient;
    a.law.run.cases = 0;
    a.law.run.message = "not run: " + a.error;
    return a;
  }
  BudgetedImplementation budgeted(*impl, budget);
  a.law = check_law(budgeted, *item.law, targets[item.target], settings);
  a.budget_spent = budget.spent();
  a.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return a;
}

// ItemAnswer as bytes: a fixed header, the error, then the LawResult.
struct AnswerHeader {
  double seconds;
  uint64_t error_size;
  uint8_t budget_spent;
};

std::string encode(const ItemAnswer& a) {
  const AnswerHeader h{a.seconds, a.error.size(), static_cast<uint8_t>(a.budget_spent)};
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  bytes.append(a.error);
  bytes.append(encode_law_result(a.law));
  return bytes;
}

bool decode(const std::string& bytes, ItemAnswer& a) {
  AnswerHeader h;
  if (bytes.size() < sizeof h) return false;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.error_size > bytes.size() - sizeof h) return false;
  a.seconds = h.seconds;
  a.budget_spent = h.budget_spent != 0;
  a.error = bytes.substr(sizeof h, h.error_size);
  return decode_law_result(std::string_view(bytes).substr(sizeof h + h.error_size), a.law);
}

}  // namespace

std::size_t work_item_count(const std::vector<Target>& targets, const std::vector<const Law*>& laws) {
  std::size_t n = 0;
  for (const Target& t : targets) n += laws.size() + t.extra_laws.size();
  return n;
}

int default_jobs() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::size_t run_checks(std::vector<Target>& targets, const std::vector<const Law*>& laws, const RunSettings& settings,
                       int jobs, RunBudget& budget,
                       const std::function<void(std::size_t)>& started,
                       const std::function<void(std::size_t, std::vector<LawResult>, double)>& done,
                       std::vector<std::string>& errors, const CheckProgress& progress) {
  using Clock = std::chrono::steady_clock;
  const std::vector<Item> items = work_items(targets, laws);
  const std::size_t workers = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, jobs)), items.size());
  if (progress.begins) progress.begins(static_cast<int>(std::max<std::size_t>(1, workers)));

  std::vector<std::vector<LawResult>> results;
  std::vector<std::size_t> left;
  for (const Target& t : targets) {
    results.emplace_back(laws.size() + t.extra_laws.size());
    left.push_back(laws.size() + t.extra_laws.size());
  }
  // Each target's wall time: from its first item's start to its last item's end.
  std::vector<std::optional<Clock::time_point>> first_start(targets.size());
  std::vector<double> seconds(targets.size(), 0);
  auto note_start = [&](std::size_t k) {
    if (!first_start[k]) first_start[k] = Clock::now();
  };
  std::size_t next_to_report = 0, finished = 0;
  bool stopped = false;
  // Whether started(k) was called already: with one worker, before the first
  // law of a target that is alone in its group (nothing else comes between
  // its "checking ..." and its result); otherwise just before done(k).
  std::vector<bool> announced(targets.size(), false);
  // Target k's results go out once they and all before them are in: the
  // console lists the implementations in the same order whatever N.
  auto take = [&](std::size_t i, int slot, ItemAnswer a) {
    const Item& item = items[i];
    if (stopped) {
      // Finished after the stop (or cut short by it): not run, whatever it found.
      a = ItemAnswer{};
      a.law.run.law = item.law->name;
      a.law.run.status = LawStatus::insufficient;
      a.law.run.cases = 0;
      a.law.run.message = kNotRunInterrupted;
    } else {
      ++finished;
      if (progress.finished) progress.finished(slot, item.target, a.law);
    }
    if (!a.error.empty()) errors.push_back(a.error);
    if (a.budget_spent) budget.over();  // the same deadline: the parent records it as spent too
    results[item.target][item.law_index] = std::move(a.law);
    note_start(item.target);
    seconds[item.target] = std::chrono::duration<double>(Clock::now() - *first_start[item.target]).count();
    --left[item.target];
    while (next_to_report < targets.size() && left[next_to_report] == 0) {
      if (!announced[next_to_report]) started(next_to_report);
      done(next_to_report, std::move(results[next_to_report]), seconds[next_to_report]);
      ++next_to_report;
    }
  };
  auto stop_now = [&] { return progress.interrupted && progress.interrupted(); };
  // After a stop: every item without an answer is not run.
  std::vector<bool> answered(items.size(), false);
  auto finish_stopped = [&] {
    stopped = true;
    for (std::size_t i = 0; i < items.size(); ++i)
      if (!answered[i]) take(i, 0, ItemAnswer{});
  };

  Instances instances(targets);
  if (workers <= 1) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (stop_now()) break;
      const std::size_t k = items[i].target;
      if (items[i].alone && !announced[k]) {
        started(k);
        announced[k] = true;
      }
      note_start(k);
      if (progress.started) progress.started(0, items[i].target, *items[i].law);
      ItemAnswer a = run_item(items[i], targets, settings, instances, budget);
      if (stop_now()) break;  // cut short by the stop: not run
      answered[i] = true;
      take(i, 0, std::move(a));
    }
    if (stop_now()) finish_stopped();
    return finished;
  }
  // Every worker opens its own instances; none may inherit the probes' plugin hosts.
  for (Target& t : targets) t.loaded.reset();
  RunSettings in_worker = settings;
  in_worker.judged_so_far = [](int judged) { report_worker_progress(static_cast<uint64_t>(judged)); };
  WorkerEvents events;
  std::vector<int> slot_of(items.size(), 0);
  events.handed = [&](std::size_t i, int slot) {
    slot_of[i] = slot;
    note_start(items[i].target);
    if (progress.started) progress.started(slot, items[i].target, *items[i].law);
  };
  events.progress = [&](std::size_t, int slot, uint64_t judged) {
    if (progress.advanced) progress.advanced(slot, static_cast<long long>(judged));
  };
  events.tick = progress.tick;
  events.stop = stop_now;
  const bool complete = run_in_worker_processes(
      items.size(), static_cast<int>(workers),
      [&](std::size_t i) { return encode(run_item(items[i], targets, in_worker, instances, budget)); },
      [&] { instances.close_all(); },
      [&](std::size_t i, std::string bytes) {
        ItemAnswer a;
        if (!decode(bytes, a))
          throw std::runtime_error("--jobs: a worker's answer for work item " + std::to_string(i) +
                                   " could not be read; this is a bug of attncheck's, please report it");
        answered[i] = true;
        take(i, slot_of[i], std::move(a));
      },
      events);
  if (!complete) finish_stopped();
  return finished;
}

}  // namespace attncheck
