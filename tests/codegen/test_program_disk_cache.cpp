// to_program's disk cache: a program lowered once is stored under a key stable across processes (the AST's hash, the
// kernel knobs, the renderer, this binary's build-id) and read back instead of running the codegen; a damaged record
// is a miss. The build-id is checked against readelf's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "codegen/pipeline.h"
#include "runtime/rt_test_util.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "util/build_id.h"
#include "util/diskcache.h"
#include "util/process.h"

using namespace tg;

namespace {

// the one kernel of a * k + b over n floats: a new n (or k) is a kernel no earlier test lowered
UOp ew_ast(int64_t n, float k) {
  UOp linear = schedule_linear({Tensor::empty({n}) * k + Tensor::empty({n})});
  for (auto& c : linear.src())
    if (c.src(0).op() == Ops::SINK) return c.src(0);
  throw Error("no kernel");
}

void expect_same(const ProgramSpec& a, const ProgramSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.kernel.src, b.kernel.src);
  EXPECT_EQ(a.kernel.entry_name, b.kernel.entry_name);
  ASSERT_EQ(a.kernel.params.size(), b.kernel.params.size());
  for (size_t i = 0; i < a.kernel.params.size(); i++) {
    const KernelParam &x = a.kernel.params[i], &y = b.kernel.params[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.slot, y.slot);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.addrspace, y.addrspace);
    EXPECT_EQ(x.writable, y.writable);
    EXPECT_EQ(x.var_name, y.var_name);
    EXPECT_EQ(x.numel, y.numel);
    EXPECT_EQ(x.c_type, y.c_type);
  }
  EXPECT_EQ(a.global, b.global);
  EXPECT_EQ(a.local, b.local);
  EXPECT_EQ(a.outs, b.outs);
  EXPECT_EQ(a.ins, b.ins);
  EXPECT_EQ(a.vars, b.vars);
  EXPECT_EQ(a.ops, b.ops);
  EXPECT_EQ(a.mem, b.mem);
  EXPECT_EQ(a.uops, b.uops);
  EXPECT_EQ(a.applied_opts, b.applied_opts);
}

struct FreshCache {
  TempDir dir;
  test::ScopedEnv db{"CACHEDB", (dir.path() / "cache.db").string()};
  test::ScopedEnv lvl{"CACHELEVEL", std::nullopt};
};

}  // namespace

TEST(ProgramDiskCache, BuildIdIsReadelfs) {
  ProcessResult r = run_process({"readelf", "-n", std::filesystem::read_symlink("/proc/self/exe").string()});
  ASSERT_TRUE(r.started && r.exit_code == 0) << "readelf (binutils): " << r.err;
  const std::string& out = r.out;
  size_t at = out.find("Build ID: ");
  ASSERT_NE(at, std::string::npos) << "this toolchain links no build-id, and the program cache is then off:\n" << out;
  std::string want = out.substr(at + 10, out.find('\n', at) - at - 10);
  EXPECT_EQ(build_id(), want);
  EXPECT_EQ(build_id().size(), 40u);
}

TEST(ProgramDiskCache, LoweredProgramIsStoredAndReadBack) {
  FreshCache fresh;
  ClangRenderer ren;
  UOp ast = ew_ast(1000 + std::rand() % 1000, 3.0f);
  std::string key = program_disk_key(ast, ren);
  ASSERT_FALSE(key.empty());
  EXPECT_FALSE(diskcache_get("program", key));
  auto prg = to_program(ast, ren);
  auto rec = diskcache_get("program", key);
  ASSERT_TRUE(rec) << "to_program stores what it lowered";
  auto back = decode_program(*rec);
  ASSERT_TRUE(back);
  expect_same(*back, *prg);
  {
    Context other({{"SIMD", 0}});
    EXPECT_NE(program_disk_key(ast, ren), key) << "a kernel knob is part of the key";
  }
  // another AST's key holding a doctored record: to_program returns the record, so it read the disk, not the codegen
  UOp ast2 = ew_ast(3000 + std::rand() % 1000, 5.0f);
  ProgramSpec doctored = *prg;
  doctored.kernel.src = "// from the disk\n" + doctored.kernel.src;
  diskcache_put("program", program_disk_key(ast2, ren), encode_program(doctored));
  EXPECT_EQ(to_program(ast2, ren)->kernel.src, doctored.kernel.src);
}

TEST(ProgramDiskCache, DamagedRecordIsAMiss) {
  FreshCache fresh;
  ClangRenderer ren;
  UOp ast = ew_ast(5000 + std::rand() % 1000, 7.0f);
  diskcache_put("program", program_disk_key(ast, ren), "tgprog1 truncated");
  auto prg = to_program(ast, ren);
  EXPECT_NE(prg->kernel.src.find("7.0f"), std::string::npos) << prg->kernel.src;
  auto rec = diskcache_get("program", program_disk_key(ast, ren));
  ASSERT_TRUE(rec && decode_program(*rec)) << "the codegen's program replaces the damaged record";
}

// every prefix of a record, and every single-byte change of its header part, decodes to nullopt or to a whole record
TEST(ProgramDiskCache, TruncatedOrFlippedRecordsNeverCrash) {
  ClangRenderer ren;
  Context noopt({{"NOOPT", 1}});
  auto prg = to_program(ew_ast(96, 2.0f), ren);
  std::string rec = encode_program(*prg);
  ASSERT_TRUE(decode_program(rec));
  for (size_t n = 0; n < rec.size(); n++) EXPECT_FALSE(decode_program(std::string_view(rec).substr(0, n))) << n;
  EXPECT_FALSE(decode_program(rec + "x")) << "trailing bytes";
  for (size_t i = 0; i < rec.size(); i += 7) {
    std::string bad = rec;
    bad[i] = char(~bad[i]);
    (void)decode_program(bad);  // may decode (a flipped character of the source), must not crash
  }
}
