// The CUDA renderer through the whole pipeline against tinygrad: each kernel AST of tests/data/cuda_cases.txt
// (tests/tools/gen_cuda_cases.py: elementwise, half/bfloat16/fp8, reduces with GROUPTOP, softmax, matmuls with locals and
// upcasts, a matvec with GROUP, convolutions, and half/bfloat16 matmuls and convolutions on the mma.sync tensor cores)
// goes through to_program with CUDARenderer's sm_90 caps and the default GPU heuristic under the case's settings; the
// CUDA C must be tinygrad's byte for byte, and the launch dims and applied opts the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "codegen/opt/search.h"
#include "codegen/pipeline.h"
#include "codegen_cases.h"
#include "support/parse.h"
#include "runtime/rt_test_util.h"
#include "tg/context.h"
#include "util/diskcache.h"
#include "util/process.h"

using namespace tg;

namespace {

// "<case> k<i>" of the kernels that do not match tinygrad yet
const std::set<std::string> kKnownGaps = {};

std::string field(const std::string& info, const std::string& key) {
  size_t p = info.find(key + "=");
  if (p == std::string::npos) return "";
  p += key.size() + 1;
  size_t e = info[p] == '(' ? info.find(')', p) + 1 : info.find(' ', p);
  return info.substr(p, e - p);
}
std::string dims(const std::array<int64_t, 3>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

}  // namespace

TEST(CudaRenderer, MatchesTinygradSource) {
  Context noopt({{"NOOPT", 0}});
  CUDARenderer ren("sm_90");
  auto cases = codegen_cases::load("cuda_cases.txt");
  ASSERT_GE(cases.size(), 15u);
  size_t total = 0, match = 0;
  std::vector<std::string> unexpected, fixed;
  for (auto& c : cases) {
    std::vector<std::unique_ptr<Context>> case_settings;  // the case's own (TC_OPT=2)
    for (auto& [k, v] : c.settings)
      case_settings.push_back(std::make_unique<Context>(std::initializer_list<std::pair<std::string, int64_t>>{{k, v}}));
    for (size_t i = 0; i < c.kernels.size(); i++) {
      const auto& k = c.kernels[i];
      std::string id = c.name + " k" + std::to_string(i), got, err;
      total++;
      try {
        auto prg = to_program(parse_uop(k.ast), ren);
        got = prg->kernel.src;
        if (got == k.src) {
          EXPECT_EQ(prg->name, field(k.info, "name")) << id;
          EXPECT_EQ(dims(prg->global), field(k.info, "global")) << id;
          EXPECT_EQ(dims(prg->local), field(k.info, "local")) << id;
          EXPECT_EQ(std::to_string(int64_t(prg->ops)), field(k.info, "ops")) << id;
          std::string opts = "(";
          for (size_t j = 0; j < prg->applied_opts.size(); j++) opts += (j ? ", " : "") + prg->applied_opts[j];
          EXPECT_EQ(opts + (prg->applied_opts.size() == 1 ? ",)" : ")"), k.info.substr(k.info.find("opts=") + 5)) << id;
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
  std::printf("cuda: %zu/%zu kernels byte-identical to tinygrad\n", match, total);
  for (auto& u : unexpected) ADD_FAILURE() << "does not match tinygrad: " << u;
  for (auto& f : fixed) ADD_FAILURE() << "matches now, remove from kKnownGaps: " << f;
}

// BEAM's actions on a half matmul for CUDARenderer's sm_90 caps: of tinygrad's 10 tensor-core ones, the two on axis 0
// (TC_OPT 0 and 2) apply, at tinygrad's action numbers 144 and 145, each leaving tinygrad's axes (its get_kernel_actions
// on this AST: g0 g1 w0 u0 u1 R0 r0 of 4 8 32 2 2 4 2, the swizzle having moved three of K's unrolls into the warp);
// TC=0 leaves them out, and a float matmul (no tf32 without ALLOW_TF32) takes none
TEST(CudaRenderer, BeamActionsIncludeTheTensorCores) {
  CUDARenderer ren("sm_90");
  UOp half_mm, float_mm;
  for (auto& c : codegen_cases::load("cuda_cases.txt")) {
    if (c.name == "tc_half_matmul") half_mm = parse_uop(c.kernels.at(0).ast);
    if (c.name == "matmul") float_mm = parse_uop(c.kernels.at(0).ast);
  }
  ASSERT_TRUE(half_mm && float_mm);
  auto tc_actions = [&](const UOp& ast) {
    Scheduler k(ast, caps_of(ren));
    k.convert_loop_to_global();
    std::map<int, Scheduler> out;
    for (auto& [i, s] : get_kernel_actions(k, false))
      if (!s.applied_opts.empty() && s.applied_opts[0].op == OptOps::TC) out.emplace(i, s);
    return out;
  };
  auto tcs = tc_actions(half_mm);
  ASSERT_EQ(tcs.size(), 2u);
  int n = 0;
  for (auto& [i, s] : tcs) {
    EXPECT_EQ(i, 144 + n);
    EXPECT_EQ(s.applied_opts[0].arg, Arg(Arg::Ints{-1, 2 * n++, 1}));
    ASSERT_TRUE(s.tensor_core.has_value());
    EXPECT_EQ(s.tensor_core->str(), "WMMA_8_16_16_half_float");
    EXPECT_EQ(s.shape_str(), (std::vector<std::string>{"g0", "g1", "w0", "u0", "u1", "R0", "r0"}));
    EXPECT_EQ(s.full_shape(), (std::vector<int64_t>{4, 8, 32, 2, 2, 4, 2}));
  }
  EXPECT_TRUE(tc_actions(float_mm).empty());
  {
    Context off({{"TC", 0}});
    EXPECT_TRUE(tc_actions(half_mm).empty());
  }
}

// a BEAM result with a tensor core, as the disk cache keeps it ("op axis arg;" with TC's arg as its three ints), replays
// to the same kernel the opts give when applied by hand (no device is opened: a cache hit returns first)
TEST(CudaRenderer, BeamCacheReplaysATensorCoreResult) {
  TempDir dir;
  test::ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  CUDARenderer ren("sm_90");
  UOp ast;
  for (auto& c : codegen_cases::load("cuda_cases.txt")) if (c.name == "tc_half_matmul") ast = parse_uop(c.kernels.at(0).ast);
  ASSERT_TRUE(ast);
  std::string device;
  for (auto& u : ast.toposort()) if (u.op() == Ops::PARAM && !u.arg().param().device.empty()) device = u.arg().param().device;
  Scheduler s(ast, caps_of(ren));
  s.convert_loop_to_global();
  diskcache_put("beam_search", beam_cache_key(s, ren, 2, device), "1 0 -1 2 1;2 0 4;4 0 2;");
  Scheduler r = beam_search(s, ren, 2), want = s;
  for (const Opt& o : {Opt{OptOps::TC, 0, Arg(Arg::Ints{-1, 2, 1})}, Opt{OptOps::UPCAST, 0, Arg(int64_t(4))}, Opt{OptOps::LOCAL, 0, Arg(int64_t(2))}})
    want.apply_opt(o);
  ASSERT_EQ(r.applied_opts.size(), 3u);
  EXPECT_EQ(r.applied_opts, want.applied_opts);
  ASSERT_TRUE(r.tensor_core.has_value());
  EXPECT_EQ(r.ast.key(), want.ast.key());
}
