// The codegen pipeline (src/codegen/pipeline.h) against tinygrad: each kernel AST of tests/data/codegen_cases.txt
// (tests/tools/gen_codegen_cases.py) is parsed, run through full_rewrite_to_sink/to_program with the same NOOPT
// setting, and the C must be tinygrad's byte for byte (our runtime entry wrapper follows it and is not compared).
// Kernels known not to match yet are listed in kKnownGaps; the suite fails if one of them starts matching (move it
// out) or if any other kernel stops matching.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "codegen/pipeline.h"
#include "codegen_cases.h"
#include "runtime/device.h"
#include "support/parse.h"
#include "tg/context.h"

using namespace tg;

namespace {

// "<case> NOOPT=<n> k<i>" of the kernels that do not match tinygrad yet
const std::set<std::string> kKnownGaps = {
};

// the settings the cases were generated with
struct EnvNoopt {
  explicit EnvNoopt(bool on) : ctx{{"NOOPT", on}, {"NUM_CPU_THREADS", 8}} {}
  Context ctx;
};

std::string field(const std::string& info, const std::string& key) {
  size_t p = info.find(key + "=");
  if (p == std::string::npos) return "";
  p += key.size() + 1;
  size_t e = info[p] == '(' ? info.find(')', p) + 1 : info.find(' ', p);
  return info.substr(p, e - p);
}

}  // namespace

TEST(Pipeline, MatchesTinygradSource) {
  Context tinygrad_kernels({{"SIMD", 0}});  // our CPU SIMD shaping departs from tinygrad on purpose
  ClangRenderer ren;
  auto cases = codegen_cases::load();
  size_t total = 0, match = 0;
  std::vector<std::string> unexpected, fixed;
  for (auto& c : cases) {
    EnvNoopt env(c.noopt);
    for (size_t i = 0; i < c.kernels.size(); i++) {
      const auto& k = c.kernels[i];
      std::string id = c.name + " NOOPT=" + (c.noopt ? "1" : "0") + " k" + std::to_string(i), got, err;
      total++;
      try {
        auto prg = to_program(parse_uop(k.ast), ren);
        got = prg->kernel.src.substr(0, std::min(prg->kernel.src.size(), k.src.size()));
        if (got == k.src) {
          EXPECT_EQ(prg->name, field(k.info, "name")) << id;
          EXPECT_EQ(std::to_string(int64_t(prg->ops)), field(k.info, "ops")) << id;
          EXPECT_EQ(std::to_string(int64_t(prg->mem)), field(k.info, "mem")) << id;
          EXPECT_EQ("(" + std::to_string(prg->global[0]) + ", 1, 1)", field(k.info, "global")) << id;
        }
      } catch (const std::exception& e) { err = e.what(); }
      bool ok = err.empty() && got == k.src;
      match += ok;
      bool gap = kKnownGaps.count(id) > 0;
      if (ok && gap) fixed.push_back(id);
      if (!ok && !gap) {
        unexpected.push_back(id);
        if (getenv("TG_CODEGEN_VERBOSE"))
          std::printf("=== %s\n%s\n--- tinygrad\n%s\n--- ours\n%s\n", id.c_str(), err.c_str(), k.src.c_str(), got.c_str());
      }
    }
  }
  std::printf("codegen: %zu/%zu kernels byte-identical to tinygrad\n", match, total);
  for (auto& u : unexpected) ADD_FAILURE() << "does not match tinygrad: " << u;
  for (auto& f : fixed) ADD_FAILURE() << "matches now, remove from kKnownGaps: " << f;
}
