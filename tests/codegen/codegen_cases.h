#pragma once
// The cases of tests/data/codegen_cases.txt (tests/tools/gen_codegen_cases.py): per Tensor graph and NOOPT setting,
// the printed graph and, per kernel tinygrad scheduled, its AST, tinygrad's C source and launch/estimate info.
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tg::codegen_cases {

struct Kernel {
  std::string ast, src, info;
};
struct Case {
  std::string name;
  bool noopt = false;
  std::vector<std::pair<std::string, int64_t>> settings;  // after NOOPT on the CASE line: TC_OPT=2
  std::string graph;
  std::vector<Kernel> kernels;
};

// `file` under tests/data: codegen_cases.txt (the CPU renderer) or cuda_cases.txt (tests/tools/gen_cuda_cases.py)
inline std::vector<Case> load(const std::string& file = "codegen_cases.txt") {
  std::ifstream f(std::string(TG_TEST_DATA) + "/" + file);
  std::vector<Case> out;
  std::string line, *into = nullptr;
  bool fresh = true;
  auto add = [&](std::string* s) { into = s, fresh = true; };
  while (std::getline(f, line)) {
    if (line.rfind("### ", 0) != 0) {
      if (into) *into += (fresh ? "" : "\n") + line, fresh = false;
      continue;
    }
    std::istringstream ls(line.substr(4));
    std::string tag;
    ls >> tag;
    if (tag == "CASE") {
      std::string nm, no;
      ls >> nm >> no;
      out.push_back(Case{nm, no == "NOOPT=1", {}, "", {}});
      for (std::string kv; ls >> kv;) out.back().settings.emplace_back(kv.substr(0, kv.find('=')), std::stoll(kv.substr(kv.find('=') + 1)));
      add(nullptr);
    } else if (tag == "GRAPH") add(&out.back().graph);
    else if (tag == "KERNEL") { out.back().kernels.emplace_back(); add(nullptr); }
    else if (tag == "AST") add(&out.back().kernels.back().ast);
    else if (tag == "SRC") add(&out.back().kernels.back().src);
    else if (tag == "INFO") add(&out.back().kernels.back().info);
    else add(nullptr);
  }
  return out;
}

}  // namespace tg::codegen_cases
