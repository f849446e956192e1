// SPDX-License-Identifier: Apache-2.0
// A corpus replay driver for compilers without libFuzzer: runs LLVMFuzzerTestOneInput once on
// each file named on the command line, and on every regular file of each directory named.
// Exit 0 when every input ran (a crash aborts the process, as under libFuzzer).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0;
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec)) {
        if (!e.is_regular_file()) continue;
        failures += RunFile(e.path());
        ++inputs;
      }
    } else {
      failures += RunFile(p);
      ++inputs;
    }
  }
  std::fprintf(stderr, "ran %d inputs, %d unreadable\n", inputs, failures);
  return failures == 0 ? 0 : 1;
}
