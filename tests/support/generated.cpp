#include "support/generated.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

namespace tg::test {

Shell run_shell(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = p ? ::pclose(p) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

GeneratedFiles::GeneratedFiles(const std::string& prefix, const std::string& command, const std::string& hint) {
  std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
  if (!::mkdtemp(tmpl.data())) { error = "mkdtemp failed"; return; }
  dir = tmpl;
  std::string cmd = command + " " + shell_quote(dir) + " 2>&1";
  if (Shell r = run_shell(cmd); r.rc != 0) error = "`" + cmd + "` failed (rc " + std::to_string(r.rc) + "; " + hint + "):\n" + r.out;
}

GeneratedFiles::~GeneratedFiles() {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

}  // namespace tg::test
