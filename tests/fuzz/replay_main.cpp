// The libFuzzer targets' inputs replayed without libFuzzer: a main() that
// hands every file named on the command line (every regular file of a
// folder, in name order) to LLVMFuzzerTestOneInput once. With the
// committed seed corpora it runs in the host suite (and under the
// sanitizer builds), so a seed that crashes a target fails there, with
// any compiler. No input at all is a failure too: a replay of nothing
// proves nothing.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The regular files of `dir`, in name order.
std::vector<std::string> files_of(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string path = dir + "/" + e->d_name;
    struct stat st {};
    if (e->d_name[0] != '.' && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      out.push_back(path);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    if (is_directory(argv[i])) {
      const std::vector<std::string> f = files_of(argv[i]);
      inputs.insert(inputs.end(), f.begin(), f.end());
    } else {
      inputs.push_back(argv[i]);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no input to replay: name seed files or folders that hold some\n");
    return 1;
  }
  for (const std::string& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 1;
    }
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    std::printf("replaying %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::fflush(stdout);  // the last name printed is the input that crashed
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replayed %zu inputs, none crashed\n", inputs.size());
  return 0;
}
