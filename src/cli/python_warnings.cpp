#include "cli/python_warnings.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "text/printable_text.h"

namespace attncheck {

PythonWarnings::PythonWarnings() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attncheck-python-warnings-XXXXXX";
  if (::mkdtemp(pattern.data())) folder_ = pattern;
}

PythonWarnings::~PythonWarnings() {
  std::error_code ignored;
  if (!folder_.empty()) std::filesystem::remove_all(folder_, ignored);
}

std::vector<std::string> PythonWarnings::notes() const {
  std::map<std::string, long long> calls;
  std::error_code ec;
  if (folder_.empty()) return {};
  for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("warnings.", 0) != 0 || name.find(".tmp") != std::string::npos) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      calls[line.substr(tab + 1)] += std::strtoll(line.substr(0, tab).c_str(), nullptr, 10);
    }
  }
  std::vector<std::pair<std::string, long long>> sorted(calls.begin(), calls.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> notes;
  for (const auto& [text, n] : sorted)
    notes.push_back("the function warned: " + printable(text) + " (" + std::to_string(n) +
                    (n == 1 ? " call)" : " calls)"));
  return notes;
}

}  // namespace attncheck
