// attncheck_fuzz_seed_corpus FUZZ_DIR: writes the seed corpora of the
// problem-taking targets (FUZZ_DIR/corpus/<target>/, each folder emptied
// first), the case-file seeds drawn by the generators
// (FUZZ_DIR/corpus/fuzz_case_file/drawn_*.json; the hand-kept files beside them
// stay) and FUZZ_DIR/dicts/problem.dict. Deterministic: the same generators
// write the same files. Rerun it whenever the generators change how they read
// their choices (fuzz/README.md, "Seeds and dictionaries"):
//   build/fuzz/attncheck_fuzz_seed_corpus fuzz
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "casefile/case_file.h"
#include "seed_corpus.h"

using namespace attncheck;
namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FUZZ_DIR   (the repository's fuzz/ folder)\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  try {
    std::set<std::string> emptied;
    std::vector<Problem> for_case_files;
    for (const fuzz::SeedTarget& t : fuzz::seed_targets()) {
      const fs::path folder = dir / "corpus" / t.name;
      if (emptied.insert(t.name).second) {
        fs::remove_all(folder);
        fs::create_directories(folder);
      }
      const std::vector<fuzz::Seed> seeds = fuzz::choose_seeds(t);
      for (const fuzz::Seed& s : seeds) write_file(folder / s.name, s.bytes.data(), s.bytes.size());
      std::printf("%s: %zu %sseeds\n", t.name.c_str(), seeds.size(), t.prefix.c_str());
      // A few of the references' problems as case files (fuzz_case_file reads JSON).
      if (t.prefix.empty() && (t.name == "fuzz_differential" || t.name == "fuzz_gradients"))
        for (std::size_t i = 1; i < seeds.size() && i <= 2; ++i)
          for_case_files.push_back(fuzz::draw_as_target(t, seeds[i].bytes.data(), seeds[i].bytes.size()).problem);
    }
    const fs::path case_files = dir / "corpus" / "fuzz_case_file";
    fs::create_directories(case_files);
    for (const auto& e : fs::directory_iterator(case_files))
      if (e.path().filename().string().rfind("drawn_", 0) == 0) fs::remove(e.path());
    for (std::size_t i = 0; i < for_case_files.size(); ++i) {
      CaseRecord rec = failure_record(for_case_files[i], for_case_files[i].is_backward() ? "grad_matches_oracle" : "matches_oracle",
                                      "reference", "builtin:reference", "libfuzzer", 0, "a seed of fuzz_case_file");
      rec.date = "2026-12-06T00:00:00Z";  // fixed, so that the files are the same on every run
      const std::string json = case_to_json(rec);
      write_file(case_files / ("drawn_" + std::to_string(i) + ".json"), json.data(), json.size());
    }
    std::printf("fuzz_case_file: %zu drawn case files\n", for_case_files.size());
    const std::string dict = fuzz::problem_dictionary();
    write_file(dir / "dicts" / "problem.dict", dict.data(), dict.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attncheck_fuzz_seed_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}
