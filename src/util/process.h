#pragma once
// Run a child program (no shell) and capture its output; a scoped temporary directory.
#include <filesystem>
#include <string>
#include <vector>

namespace tg {

struct ProcessResult {
  bool started = false;  // false when the program could not be executed (not found, not executable)
  int exit_code = -1;    // the exit status, or 128+signal when killed by a signal
  std::string out, err;  // captured stdout and stderr
};

// runs argv[0] (searched in PATH when it has no '/') with stdin from /dev/null
ProcessResult run_process(const std::vector<std::string>& argv);

// a fresh directory under the system temp dir, removed with its contents on destruction
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tg
