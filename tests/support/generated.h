// Test files written at run time by a generator script (gguf-py, torch.save, ...) into a fresh scratch folder, removed
// when the test program ends. A failed script leaves `error` set (with its output) so each test can assert on it.
#pragma once
#include <string>

namespace tg::test {

struct Shell {
  int rc;
  std::string out;  // stdout (and stderr when the command redirects it)
};
Shell run_shell(const std::string& cmd);
std::string shell_quote(const std::string& s);

struct GeneratedFiles {
  std::string dir, error;
  // runs `command DIR 2>&1` with DIR a new /tmp/PREFIX_XXXXXX; `hint` says how to get what the script needs
  GeneratedFiles(const std::string& prefix, const std::string& command, const std::string& hint);
  GeneratedFiles(const GeneratedFiles&) = delete;
  ~GeneratedFiles();
  std::string path(const std::string& file) const { return dir + "/" + file; }
};

}  // namespace tg::test
