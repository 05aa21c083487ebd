// A main for fuzz targets built without libFuzzer (GCC, the default preset):
// runs LLVMFuzzerTestOneInput once on every file given and every file inside
// every folder given (recursively), so seed corpora and saved crash inputs run
// under CTest, gdb and valgrind. Arguments starting with '-' (libFuzzer flags)
// are ignored, so a libFuzzer command line replays unchanged.
//
// Example usage:
//   build/fuzz/fuzz_overflow fuzz/corpus/fuzz_overflow crash-1234abcd
//   valgrind build/fuzz/fuzz_case_file fuzz/corpus/fuzz_case_file
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

bool run_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "running %s (%zu bytes)\n", path.c_str(), bytes.size());
  // A copy sized exactly, so a read past the input's end is caught by ASan as under libFuzzer.
  std::vector<uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> files;
  bool ok = true;
  for (int a = 1; a < argc; ++a) {
    const fs::path arg = argv[a];
    if (argv[a][0] == '-') continue;
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::exists(arg, ec)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "no such file or folder: %s\n", arg.c_str());
      ok = false;
    }
  }
  std::sort(files.begin(), files.end());
  int ran = 0;
  for (const fs::path& f : files) ran += run_file(f) ? 1 : 0;
  std::printf("%s: ran %d input(s)\n", argc > 0 ? argv[0] : "fuzz target", ran);
  if (ran == 0) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER... (no input was run)\n", argc > 0 ? argv[0] : "fuzz target");
    return 1;
  }
  return ok && ran == static_cast<int>(files.size()) ? 0 : 1;
}
