// run_linear (tinygrad's engine/realize.py): each CALL of a kernel is lowered once per (device, AST) to a loaded
// Program and launched on the Buffers its arguments name; COPY calls move bytes between devices.
#include "engine/realize.h"

#include <chrono>
#include <map>
#include <set>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "runtime/cuda.h"
#include "util/stats.h"
#include "uop/args.h"
#include "util/env.h"
#include "util/lru.h"

namespace tg {

namespace {

struct Registry {
  std::unordered_map<const UOpNode*, std::shared_ptr<Buffer>> buffers;
  Registry() { set_buffer_release_hook([](const UOpNode* n) { registry().buffers.erase(n); }); }
  static Registry& registry();
};
Registry& Registry::registry() {
  static Registry* r = new Registry;  // never destroyed: BUFFER nodes may still die during static destruction
  return *r;
}

std::shared_ptr<Buffer> base_buffer(const UOp& b) {
  auto& bufs = Registry::registry().buffers;
  auto [it, added] = bufs.try_emplace(b.get());
  if (added) {
    try {
      const ParamArg& pa = b.arg().param();
      it->second = std::make_shared<Buffer>(pa.device, size_t(b.shape()[0]), pa.dtype);
    } catch (...) {
      bufs.erase(it);
      throw;
    }
  }
  return it->second;
}

// a BUFFER, or a byte range of one seen as another dtype (what the memory planner and callify's views produce)
std::shared_ptr<Buffer> resolve_buffer(const UOp& u) {
  switch (u.op()) {
    case Ops::BUFFER: return base_buffer(u);
    case Ops::AFTER: case Ops::RESHAPE: return resolve_buffer(u.src(0));
    case Ops::BITCAST: case Ops::SHRINK: {
      UOp shrink = u.op() == Ops::BITCAST ? u.src(0) : u;
      UOp base = shrink.op() == Ops::SHRINK ? shrink.src(0) : shrink;
      if (base.op() != Ops::BUFFER) break;
      auto b = base_buffer(base);
      int64_t begin = shrink.op() == Ops::SHRINK ? shrink.marg_pairs()[0].first : 0;
      size_t off = size_t(begin) * size_t(base.dtype().itemsize());
      return Buffer::view(b, size_t(u.max_numel()), u.dtype(), off);
    }
    default: break;
  }
  throw Error("no buffer behind a " + std::string(op_name(u.op())) + " node");
}

struct Lowered {
  std::shared_ptr<const ProgramSpec> spec;
  std::shared_ptr<Program> prg;  // shared with the JIT launches that replay it
};
// per device and settings().key(), keyed by the AST node (the key keeps it alive; equal ASTs are the same node).
// Bounded (util/lru.h): a kernel with a new constant is a new AST, and an evicted program is unloaded
LruMap<UOp, Lowered>& runtime_cache(const std::string& device) {
  static std::unordered_map<std::string, std::unordered_map<uint32_t, LruMap<UOp, Lowered>>> cache;
  return cache[device][settings().key()];
}

std::shared_ptr<const ProgramSpec> lower(Device& dev, const UOp& ast) {
  auto st = Clock::now();
  if (const std::string& arch = settings().NVRTC_CHECK; !arch.empty()) {
    // the kernel DEV=CUDA would run: rendered with the CUDA renderer's fixed caps for the arch, compiled by NVRTC
    static std::map<std::string, CUDARenderer> rens;
    auto spec = to_program(ast, rens.try_emplace(arch, arch).first->second);
    nvrtc_check_source(spec->name, spec->kernel.src, arch);
  }
  auto spec = to_program(ast, dev.renderer());
  engine_stats().lower_s += since(st);
  return spec;
}

Lowered& get_runtime(const std::string& device, const UOp& ast) {
  auto& per_dev = runtime_cache(device);
  engine_stats().program_lookups++;
  if (Lowered* l = per_dev.find(ast)) return *l;
  engine_stats().programs_built++;
  Device& dev = get_device(device);
  Lowered l;
  l.spec = lower(dev, ast);
  auto st = Clock::now();
  l.prg = dev.load_cached(l.spec->kernel.entry_name, l.spec->kernel.src);
  engine_stats().compile_s += since(st);
  return per_dev.insert(ast, std::move(l));
}

std::vector<UOp> kernel_args(const UOp& call) {
  std::vector<UOp> args;
  for (size_t i = 1; i < call.src().size(); i++)
    if (!call.src(i).is_bound_var()) args.push_back(call.src(i));
  if (args.empty()) throw Error("run_linear: a kernel call without buffers");
  return args;
}

// COMPILE_BATCH: the kernels of a schedule without a program are lowered first and compiled together
// (Device::load_cached_batch); one that fails here is left to exec_kernel, which reports its error when it is reached
void prepare_programs(const UOp& linear) {
  if (settings().COMPILE_BATCH < 1) return;
  std::map<std::string, std::vector<UOp>> todo;  // device -> ASTs without a program, in order
  std::set<const UOpNode*> seen;
  for (const UOp& call : linear.src()) {
    if (call.op() != Ops::CALL || call.src().empty() || call.src(0).op() != Ops::SINK || call.src().size() < 2) continue;
    std::vector<UOp> args = kernel_args(call);
    std::string device = args[0].device().value_or("CPU");
    if (!runtime_cache(device).find(call.src(0)) && seen.insert(call.src(0).get()).second) todo[device].push_back(call.src(0));
  }
  for (auto& [device, asts] : todo) {
    if (asts.size() < 2) continue;
    Device& dev = get_device(device);
    std::vector<Lowered> ls(asts.size());
    // each kernel lowered when the batch loader asks for it, so the first ones compile while the rest are lowered
    double lowering = 0;
    auto st = Clock::now();
    auto progs = dev.load_cached_batch(asts.size(), [&](size_t i) -> std::optional<KernelSource> {
      auto t = Clock::now();
      try {
        ls[i].spec = lower(dev, asts[i]);
      } catch (const Error&) {
        return std::nullopt;
      }
      lowering += since(t);
      const ProgramSpec& spec = *ls[i].spec;
      return KernelSource{spec.kernel.entry_name, spec.kernel.src, {spec.name, spec.kernel.entry_name}, spec.ops, spec.mem};
    });
    engine_stats().compile_s += since(st) - lowering;
    for (size_t i = 0; i < asts.size(); i++) {
      if (!progs[i]) continue;
      ls[i].prg = std::move(progs[i]);
      engine_stats().programs_built++;
      runtime_cache(device).insert(asts[i], std::move(ls[i]));
    }
  }
}

struct Stats {
  int64_t kernel_count = 0;
  double time_sum_s = 0;
} stats;

std::vector<RecordedLaunch>* recorder = nullptr;
std::vector<TimedLaunch>* timer = nullptr;

std::string size_to_str(double n) {
  char b[32];
  if (n >= 1e9) std::snprintf(b, sizeof b, "%.2f GB", n / 1e9);
  else if (n >= 1e6) std::snprintf(b, sizeof b, "%.2f MB", n / 1e6);
  else if (n >= 1e3) std::snprintf(b, sizeof b, "%.2f KB", n / 1e3);
  else std::snprintf(b, sizeof b, "%.0f B", n);
  return b;
}

void print_call(const std::string& device, const std::string& name, size_t nargs, double et, double ops, double mem) {
  stats.time_sum_s += et;
  std::printf("*** %-7.7s %4lld %-46s arg %2zu tm %9.2fus/%9.2fms (%7.0f GFLOPS %4.0f GB/s)\n", device.c_str(),
              (long long)stats.kernel_count, name.c_str(), nargs, et * 1e6, stats.time_sum_s * 1e3, ops / std::max(et, 1e-20) * 1e-9,
              mem / std::max(et, 1e-20) * 1e-9);
}

void exec_kernel(const UOp& call, const VarVals& vars) {
  std::vector<UOp> args = kernel_args(call);
  std::string device = args[0].device().value_or("CPU");
  Lowered& l = get_runtime(device, call.src(0));
  std::vector<std::shared_ptr<Buffer>> held;
  std::vector<void*> ptrs;
  std::vector<int64_t> vals;
  for (const KernelParam& p : l.spec->kernel.params) {
    if (p.is_buffer()) {
      if (p.slot < 0 || size_t(p.slot) >= args.size()) throw Error("run_linear: kernel " + l.spec->name + " reads argument " + std::to_string(p.slot) + " of " + std::to_string(args.size()));
      held.push_back(resolve_buffer(args[size_t(p.slot)]));
      ptrs.push_back(held.back()->ptr());
    } else if (p.var_name != "core_id") {
      auto it = vars.find(p.var_name.value_or(""));
      if (it == vars.end()) throw Error("run_linear: kernel " + l.spec->name + " needs variable " + p.var_name.value_or("?"));
      vals.push_back(it->second);
    }
  }
  LaunchDims dims;
  for (int i = 0; i < 3; i++) dims.global[size_t(i)] = int(l.spec->global[size_t(i)]), dims.local[size_t(i)] = int(l.spec->local[size_t(i)]);
  bool dbg = settings().DEBUG >= 2;
  double et = l.prg->launch(ptrs, vals, dims, dbg || timer);
  if (timer) timer->push_back({l.spec, call.src(0), et});
  size_t bi = 0;
  for (const KernelParam& p : l.spec->kernel.params)
    if (p.is_buffer() && p.writable) held[bi++]->touch();
    else bi += p.is_buffer();
  stats.kernel_count++;
  engine_stats().kernels_launched++;
  if (recorder) recorder->push_back({l.prg, l.spec->name, std::move(held), std::move(vals), dims, l.spec, call.src(0)});
  if (dbg) print_call(device, l.spec->name, ptrs.size(), et, l.spec->ops, l.spec->mem);
}

void exec_copy(const UOp& call) {
  if (call.src().size() != 3) throw Error("run_linear: a COPY call takes (dest, src)");
  auto dest = resolve_buffer(call.src(1)), src = resolve_buffer(call.src(2));
  auto st = std::chrono::steady_clock::now();
  // CPU memory is host memory: copy straight into (or out of) it, without staging through a host vector
  auto host = [](const Buffer& b) { return b.device().starts_with("CPU"); };
  if (dest->nbytes() != src->nbytes()) dest->copy_from(*src);  // throws, naming both sizes
  else if (host(*dest)) src->copyout(dest->ptr(), src->nbytes());
  else if (host(*src)) dest->copyin(src->ptr(), src->nbytes());
  else dest->copy_from(*src);
  dest->touch();
  stats.kernel_count++;
  engine_stats().copies++;
  if (recorder) recorder->push_back({nullptr, "copy", {dest, src}, {}, {}});
  if (settings().DEBUG >= 2)
    print_call(dest->device(), "copy " + size_to_str(double(dest->nbytes())) + ", " + dest->device() + " <- " + src->device(), 2,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count(), 0, double(dest->nbytes()));
}

}  // namespace

void set_launch_recorder(std::vector<RecordedLaunch>* rec) { recorder = rec; }
std::vector<RecordedLaunch>* launch_recorder() { return recorder; }
void set_launch_timer(std::vector<TimedLaunch>* t) { timer = t; }
std::vector<TimedLaunch>* launch_timer() { return timer; }

Buffer& buffer_of(const UOp& buf) { return *shared_buffer_of(buf); }
std::shared_ptr<Buffer> shared_buffer_of(const UOp& buf) {
  if (buf.op() != Ops::BUFFER) throw Error("buffer_of: expected a BUFFER, got " + std::string(op_name(buf.op())));
  return base_buffer(buf);
}

namespace {
// The BUFFERs nothing but this LINEAR names, by the call that uses each last. Callify makes every CONTIGUOUS an output
// of the realize (a GEMM's packed panels among them), so the memory planner keeps out of them; where no tensor took
// one (its node has no reference besides the calls and views below them), it is dead after its last kernel and goes
// back to the allocator's cache there, for the next buffer of its size, instead of living to the end of the run.
std::vector<std::vector<const UOpNode*>> dead_after(const UOp& linear) {
  auto view = [](const UOpNode* n) { return OpSet{Ops::AFTER, Ops::RESHAPE, Ops::BITCAST, Ops::SHRINK}.has(n->op) && n->nsrc > 0; };
  // references to each node from the calls (each distinct one once: its sources hold one each) and the views below them
  std::unordered_map<const UOpNode*, uint32_t> refs;
  for (const UOp& c : linear.src()) {
    if (refs[c.get()]++) continue;
    for (uint32_t j = 1; j < c.get()->nsrc; j++)
      for (const UOpNode* n = c.get()->srcs()[j].get(); refs[n]++ == 0 && view(n);) n = n->srcs()[0].get();
  }
  // a node with more references than those (a tensor's, a kept Schedule's) holds every BUFFER at or below it
  auto outside = [&](const UOpNode* n) { return n->rc > refs[n]; };
  std::unordered_set<const UOpNode*> held;
  std::unordered_map<const UOpNode*, size_t> last;
  for (size_t i = 0; i < linear.src().size(); i++) {
    const UOpNode* c = linear.src(i).get();
    for (uint32_t j = 1; j < c->nsrc; j++) {
      bool out = outside(c);
      const UOpNode* n = c->srcs()[j].get();
      for (; out |= outside(n), view(n); n = n->srcs()[0].get()) {}
      if (n->op != Ops::BUFFER) continue;
      last[n] = i;
      if (out) held.insert(n);
    }
  }
  std::vector<std::vector<const UOpNode*>> dead(linear.src().size());
  for (auto& [n, i] : last)
    if (!held.contains(n)) dead[i].push_back(n);
  return dead;
}
}  // namespace

void run_linear(const UOp& linear, const VarVals& vars) {
  if (linear.op() != Ops::LINEAR) throw Error("run_linear: expected a LINEAR, got " + std::string(op_name(linear.op())));
  prepare_programs(linear);
  // run_s: this loop less the lowering and compiling of programs prepare_programs left to it
  auto st = Clock::now();
  double built = engine_stats().lower_s + engine_stats().compile_s;
  // (one call: its buffers die with the LINEAR anyway)
  std::vector<std::vector<const UOpNode*>> dead = recorder || linear.src().size() < 2 ? decltype(dead){} : dead_after(linear);
  for (size_t i = 0; i < linear.src().size(); i++) {
    const UOp& call = linear.src(i);
    if (call.op() != Ops::CALL || call.src().empty()) throw Error("run_linear: expected CALLs in the LINEAR, got " + std::string(op_name(call.op())));
    switch (call.src(0).op()) {
      case Ops::SINK: exec_kernel(call, vars); break;
      case Ops::COPY: exec_copy(call); break;
      default: throw Error("run_linear: cannot run a CALL of " + std::string(op_name(call.src(0).op())));
    }
    if (i < dead.size())
      for (const UOpNode* b : dead[i]) Registry::registry().buffers.erase(b);
  }
  engine_stats().run_s += since(st) - (engine_stats().lower_s + engine_stats().compile_s - built);
}

}  // namespace tg
