#include "law_sweep.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "finding.h"
#include "impls/builtins.h"
#include "impls/in_process.h"

namespace attncheck::fuzz {

namespace {

bool listed(const char* list, const std::string& name) {
  // (Appended rather than "," + ...: GCC 12 warns falsely there, -Wrestrict bug 105329.)
  const std::string padded = std::string(",").append(list).append(","), item = std::string(",").append(name).append(",");
  return padded.find(item) != std::string::npos;
}

// Keeps the laws ATTNCHECK_FUZZ_LAWS names (all when unset), less those
// ATTNCHECK_FUZZ_SKIP_LAWS names (a known finding, while hunting for others).
std::vector<const Law*> narrowed(std::vector<const Law*> laws) {
  const char* env = std::getenv("ATTNCHECK_FUZZ_LAWS");
  const char* skip = std::getenv("ATTNCHECK_FUZZ_SKIP_LAWS");
  std::vector<const Law*> kept;
  for (const Law* l : laws) {
    // nullptr: fuzz_gradients' own oracle comparison, the law grad_matches_oracle.
    const std::string name = l ? l->name : std::string("grad_matches_oracle");
    if ((!env || !*env || listed(env, name)) && !(skip && *skip && listed(skip, name))) kept.push_back(l);
  }
  if (kept.empty()) {
    std::fprintf(stderr, "attncheck fuzz: ATTNCHECK_FUZZ_LAWS / ATTNCHECK_FUZZ_SKIP_LAWS leave none of this target's laws\n");
    std::exit(2);
  }
  return kept;
}

}  // namespace

std::vector<const Law*> differential_laws() {
  std::vector<const Law*> laws;
  if (const Law* oracle = find_law("matches_oracle")) laws.push_back(oracle);
  // The gradient laws are fuzz_gradients' (its problems carry dout and the
  // gradient views): here they would judge every forward input through a
  // derived dout, at a fifth of the forward laws' speed.
  for (const Law& l : all_laws())
    if (l.cheap && l.name != "matches_oracle" && !(l.required & kBackwardFeature)) laws.push_back(&l);
  return narrowed(std::move(laws));
}

std::vector<const Law*> laws_named(std::initializer_list<std::string_view> names) {
  std::vector<const Law*> laws;
  for (std::string_view n : names) {
    if (const Law* l = find_law(n)) laws.push_back(l);
    else std::fprintf(stderr, "attncheck fuzz: the catalogue has no law %.*s; not checked\n",
                      static_cast<int>(n.size()), n.data());
  }
  return narrowed(std::move(laws));
}

std::vector<std::unique_ptr<Implementation>> references() {
  std::vector<std::unique_ptr<Implementation>> impls;
  for (const BuiltinInfo& b : builtins())
    if (b.kind == BuiltinKind::reference) impls.push_back(make_builtin(b.name));
  return impls;
}

std::vector<std::unique_ptr<Implementation>> backward_references() {
  std::vector<std::unique_ptr<Implementation>> impls;
  for (auto& i : references())
    if (i->features() & kBackwardFeature) impls.push_back(std::move(i));
  return impls;
}

std::vector<const Law*> gradient_judges() {
  std::vector<const Law*> judges{nullptr};
  for (const Law& l : all_laws())
    if (l.cheap && (l.required & kBackwardFeature) && l.name != "grad_matches_oracle") judges.push_back(&l);
  return narrowed(std::move(judges));
}

Pick pick_pair(const std::vector<std::unique_ptr<Implementation>>& impls, const std::vector<const Law*>& laws,
               const uint8_t*& data, std::size_t& size) {
  uint8_t bytes[2] = {0, 0};
  for (uint8_t& b : bytes)
    if (size > 0) { b = *data++; --size; }
  Pick pick;
  static const bool all = [] { const char* e = std::getenv("ATTNCHECK_FUZZ_ALL"); return e && *e && *e != '0'; }();
  if (all) {
    for (const auto& i : impls) pick.impls.push_back(i.get());
    pick.laws = laws;
    return pick;
  }
  if (!impls.empty()) pick.impls.push_back(impls[bytes[0] % impls.size()].get());
  if (laws.size() == 1 || (!laws.empty() && bytes[1] < 64)) pick.laws.push_back(laws[0]);
  else if (!laws.empty()) pick.laws.push_back(laws[1 + (bytes[1] - 64) % (laws.size() - 1)]);
  return pick;
}

void judge(Implementation& impl, const Problem& p, const std::vector<const Law*>& laws) {
  for (const Law* law : laws) {
    // A law judges only problems within the features it understands (a v1
    // law on a windowed call would read the window as a fault).
    if (p.features() & ~law->features) continue;
    const Verdict v = law->check(impl, p);
    if (v.status == VerdictStatus::fail) report_finding(p, law->name, impl, v.message, v.calls);
    // A crash, hang or bad write provoked by this law's calls: the case is
    // saved under the law that provoked it, whose replay repeats those calls.
    if (v.status == VerdictStatus::fault) report_finding(p, law->name, impl, "process fault: " + v.message);
  }
}

}  // namespace attncheck::fuzz
