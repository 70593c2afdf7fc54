// TinyJit (tinygrad's engine/jit.py). tinygrad captures the LINEARs the function schedules, runs nothing while
// capturing, then memory-plans and runs the combined LINEAR. We let the capture call run as usual and record each
// launch run_linear makes (realize.h RecordedLaunch); a replay is then a loop over ready argument arrays, with the
// input buffers' pointers patched in. The recorded buffers (weights, optimizer state, intermediates the planner laid
// out, outputs) are held by the JIT, so their memory stays what the launches point at.
#include "tg/jit.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/realize.h"
#include "tensor/tensor_impl.h"
#include "uop/movement.h"
#include "util/env.h"
#include "util/stats.h"

namespace tg {

namespace {

// How an input is read. Contiguous: its elements are one range of its buffer (the whole buffer, or a slice such as
// X[a:b].contiguous(), which realizes to a view): the captured kernels read it from the start of a buffer, and a
// replay passes any buffer's range of the same shape. Strided: any other view (permute, expand, strided slices) is
// part of the captured kernels, so a replay's view of its buffer must be the same (tinygrad checks all inputs so).
struct InputInfo {
  Shape shape;
  DType dtype;
  std::string device;
  bool contiguous;
  int64_t buf_size;       // strided: elements of the buffer
  std::vector<UOp> view;  // strided: tensor -> BUFFER, without the BUFFER (dropped once captured: it would hold the buffer)
};
// a captured link of a strided view: the node without its source 0 (the rest are shape arguments, hash-consed)
struct Link {
  Ops op;
  DType dtype;
  Arg arg, tag;
  std::vector<UOp> rest;
};
std::vector<Link> links_of(const std::vector<UOp>& view) {
  std::vector<Link> r;
  for (const UOp& x : view) r.push_back({x.op(), x.dtype(), x.arg(), x.tag(), std::vector<UOp>(x.src().begin() + 1, x.src().end())});
  return r;
}
bool same_view(const std::vector<Link>& a, const std::vector<UOp>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    const Link& x = a[i];
    const UOp& y = b[i];
    if (x.op != y.op() || x.dtype != y.dtype() || !(x.arg == y.arg()) || !(x.tag == y.tag()) || x.rest.size() + 1 != y.src().size()) return false;
    for (size_t j = 0; j < x.rest.size(); j++)
      if (x.rest[j] != y.src(j + 1)) return false;
  }
  return true;
}

struct Resolved {
  UOp buf;            // the BUFFER
  bool contiguous;
  int64_t offset;     // contiguous: the first element's index in buf
  std::vector<UOp> view;
};
// the buffer behind a realized input; nullopt when it needs a realize first
std::optional<Resolved> resolve_input(const UOp& u) {
  UOp top = u;
  while (OpSet{Ops::CONTIGUOUS, Ops::CONTIGUOUS_BACKWARD, Ops::DETACH}.has(top.op())) top = top.src(0);
  UOp b = top.base();
  if (b.op() != Ops::BUFFER) return std::nullopt;
  bool reshapes = true;
  for (UOp v = top; v != b && reshapes; v = v.src(0)) reshapes = v.op() == Ops::RESHAPE || v.op() == Ops::DETACH;
  if (reshapes && top.numel() == b.max_numel()) return Resolved{b, true, 0, {}};
  if (auto cv = top.contiguous_view(); cv && cv->first.base() == b) return Resolved{b, true, cv->second, {}};
  if (top != u) return std::nullopt;  // CONTIGUOUS of a strided view: a copy to realize
  Resolved r{b, false, 0, {}};
  for (UOp v = u; v != b; v = v.src(0)) r.view.push_back(v);
  return r;
}

struct Inputs {
  std::vector<UOp> buf_uops;     // the BUFFERs
  std::vector<Buffer*> bufs;     // their runtime buffers
  std::vector<size_t> offsets;   // bytes into them where a contiguous input starts (0 for strided ones)
  std::vector<InputInfo> info;
};

Inputs prepare_inputs(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> unrealized;
  for (size_t i = 0; i < inputs.size(); i++) {
    const UOp& u = uop_of(inputs[i]);
    if (u.is_virtual())
      throw Error("TinyJit: input " + std::to_string(i) + " is not backed by a buffer (a device-free or weak-typed " + inputs[i].shape_str() +
                  " " + std::string(inputs[i].dtype().name()) + " constant); pass a tensor with storage, e.g. .clone()");
    if (!resolve_input(u)) unrealized.push_back(inputs[i]);
  }
  if (!unrealized.empty()) Tensor::realize(unrealized);
  Inputs r;
  for (size_t i = 0; i < inputs.size(); i++) {
    const UOp& u = uop_of(inputs[i]);
    auto res = resolve_input(u);
    if (!res) throw Error("TinyJit: input " + std::to_string(i) + " has no buffer after realize (" + std::string(op_name(u.op())) + ")");
    Buffer* buf = &buffer_of(res->buf);
    size_t off = size_t(res->offset) * size_t(res->buf.dtype().itemsize());
    for (size_t j = 0; j < i; j++)
      if (r.bufs[j] == buf && r.offsets[j] == off) throw Error("TinyJit: inputs " + std::to_string(j) + " and " + std::to_string(i) + " share one buffer");
    r.buf_uops.push_back(res->buf), r.bufs.push_back(buf), r.offsets.push_back(off);
    r.info.push_back({u.shape(), u.dtype(), res->buf.device().value_or(""), res->contiguous, res->buf.max_numel(), std::move(res->view)});
  }
  return r;
}

void check_inputs(const std::vector<InputInfo>& want, const std::vector<std::vector<Link>>& want_views, const std::vector<InputInfo>& got) {
  if (want.size() != got.size())
    throw Error("TinyJit: captured with " + std::to_string(want.size()) + " inputs, called with " + std::to_string(got.size()));
  for (size_t i = 0; i < want.size(); i++) {
    const InputInfo &w = want[i], &g = got[i];
    std::string what;
    if (w.dtype != g.dtype) what = "dtype " + std::string(w.dtype.name()) + " -> " + std::string(g.dtype.name());
    else if (w.shape != g.shape) what = "shape " + shape_str(w.shape) + " -> " + shape_str(g.shape);
    else if (w.device != g.device) what = "device " + w.device + " -> " + g.device;
    else if (w.contiguous != g.contiguous) what = w.contiguous ? "contiguous -> a strided view of a buffer" : "a strided view of a buffer -> contiguous";
    else if (!w.contiguous && (w.buf_size != g.buf_size || !same_view(want_views[i], g.view)))
      what = "its strided view of its buffer (a buffer of " + std::to_string(w.buf_size) + " -> " + std::to_string(g.buf_size) +
             " elements, or other strides or offsets)";
    if (!what.empty()) throw Error("TinyJit: input " + std::to_string(i) + " changed since capture: " + what);
  }
}

struct Launch {
  std::shared_ptr<Program> prg;  // null: a copy, ptrs = {dest, src}
  std::string name;
  std::vector<void*> ptrs;
  std::vector<int64_t> vals;
  std::vector<std::string> var_names;  // vals[i] is the value of Variable var_names[i] ("" for a fixed one)
  LaunchDims dims;
  Device *dst_dev = nullptr, *src_dev = nullptr;
  std::vector<uint8_t> bounce;  // a copy's host staging, sized once
  std::vector<Buffer*> writes;  // a skippable launch's buffers it writes, touched when it runs
  // a kernel whose inputs no launch here writes, none of them a JIT input or the caller's memory (a weight's packed
  // panels): its buffers' versions after its last run. A replay skips it while they are unchanged; empty: it always runs
  std::vector<std::pair<Buffer*, uint64_t>> unchanged;
};
// argument `arg` of launch `launch` is input `input`'s buffer, `offset` bytes in
struct InputSlot {
  size_t launch, arg, input, offset;
};

}  // namespace

struct TinyJitBase::Impl {
  Fn fn;
  int64_t cnt = 0;
  bool captured = false;
  std::vector<InputInfo> expected;
  std::vector<std::vector<Link>> expected_views;
  std::vector<Launch> launches;
  std::vector<InputSlot> slots;
  std::vector<TimedLaunch> kernels;    // per launch what a launch timer records (spec, AST), kept off the replay's loop
  std::vector<size_t> written_inputs;  // inputs a launch writes: their buffers are touched after a replay
  std::vector<Buffer*> written_roots;  // the other buffers the launches that always run write: likewise, once each
  std::vector<std::shared_ptr<Buffer>> held;   // every non-input buffer the launches touch
  std::unordered_set<const Buffer*> held_roots;
  std::vector<std::shared_ptr<Buffer>> scratch;  // per input: a copy, when the caller passes a buffer the launches touch
  std::vector<Tensor> ret;
  // ret[j] is (a view of) inputs: the captured input BUFFERs it reads, by input; a replay rebuilds it on this call's
  std::vector<std::vector<std::pair<size_t, UOp>>> ret_inputs;

  std::vector<std::string> var_names;  // the Variables the capture call was given
  std::vector<Tensor> capture(const std::vector<Tensor>& inputs, const Inputs& in, const std::vector<sint>& vars);
  std::vector<Tensor> replay(const std::vector<Tensor>& inputs, const Inputs& in, const std::vector<sint>& vars);
};

namespace {
// name -> value of the bound Variables a call passes
std::unordered_map<std::string, int64_t> var_values(const std::vector<sint>& vars) {
  std::unordered_map<std::string, int64_t> r;
  for (auto& v : vars) {
    if (!v.is_bound()) throw Error("TinyJit: " + v.render() + " is not a bound Variable; pass Variable(...).bind(value)");
    auto [var, val] = v.unbind();
    if (auto it = r.find(var.name()); it != r.end() && it->second != val)
      throw Error("TinyJit: Variable '" + var.name() + "' is passed bound to " + std::to_string(it->second) + " and " + std::to_string(val));
    r[var.name()] = val;
  }
  return r;
}
}  // namespace

std::vector<Tensor> TinyJitBase::Impl::capture(const std::vector<Tensor>& inputs, const Inputs& in, const std::vector<sint>& vars) {
  auto vv = var_values(vars);
  // a contiguous input that is part of a bigger buffer is captured from a copy of its own, so the kernels read it from
  // the start of a buffer and a replay can pass any range
  std::vector<Tensor> fn_in = inputs;
  std::vector<Buffer*> bufs = in.bufs;
  std::vector<UOp> buf_uops = in.buf_uops;
  for (size_t i = 0; i < inputs.size(); i++) {
    const InputInfo& e = in.info[i];
    if (!e.contiguous || (in.offsets[i] == 0 && inputs[i].numel() == e.buf_size)) continue;
    UOp stage = UOp::new_buffer(e.device, inputs[i].numel(), e.dtype);
    Buffer& sb = buffer_of(stage);
    std::vector<uint8_t> tmp(sb.nbytes());
    in.bufs[i]->dev().copyout(tmp.data(), static_cast<char*>(in.bufs[i]->ptr()) + in.offsets[i], tmp.size());
    sb.copyin(tmp.data(), tmp.size());
    fn_in[i] = wrap(stage.reshape(e.shape));
    bufs[i] = &sb;
    buf_uops[i] = stage;
  }
  std::vector<RecordedLaunch> rec;
  std::vector<Tensor> out;
  {
    struct Stop {
      ~Stop() { set_launch_recorder(nullptr); }
    } stop;
    set_launch_recorder(&rec);
    out = fn(fn_in, vars);
    Tensor::realize(out);
  }
  if (rec.empty()) throw Error("TinyJit: the function launched no kernels while captured, there is nothing to replay");
  std::unordered_map<const Buffer*, size_t> input_of;
  for (size_t i = 0; i < bufs.size(); i++) input_of[bufs[i]] = i;
  // buffer argument k of a recorded launch is written (a kernel's writable parameter, a copy's dest) or read
  auto param = [](const RecordedLaunch& r, size_t k) -> const KernelParam& {
    for (const KernelParam& p : r.spec->kernel.params)
      if (p.is_buffer() && k-- == 0) return p;
    internal_error("TinyJit: a recorded launch with more buffers than its kernel's parameters");
  };
  auto writes = [&](const RecordedLaunch& r, size_t k) { return r.spec ? param(r, k).writable : k == 0; };
  auto reads = [&](const RecordedLaunch& r, size_t k) { return !r.spec || has(r.spec->ins, int(param(r, k).slot)); };
  // the byte ranges each launch writes, by root buffer (the memory planner's intermediates are views of one arena)
  struct Range {
    size_t begin, end, launch;
  };
  std::unordered_map<const Buffer*, std::vector<Range>> written;
  for (size_t i = 0; i < rec.size(); i++)
    for (size_t k = 0; k < rec[i].bufs.size(); k++)
      if (writes(rec[i], k)) written[&rec[i].bufs[k]->root()].push_back({rec[i].bufs[k]->offset(), rec[i].bufs[k]->offset() + rec[i].bufs[k]->nbytes(), i});
  auto written_by_other = [&](const std::shared_ptr<Buffer>& b, size_t launch) {
    auto it = written.find(&b->root());
    if (it == written.end()) return false;
    size_t lo = b->offset(), hi = lo + b->nbytes();
    return std::any_of(it->second.begin(), it->second.end(), [&](const Range& w) { return w.launch != launch && w.begin < hi && lo < w.end; });
  };
  std::unordered_set<const Buffer*> seen;
  for (size_t i = 0; i < rec.size(); i++) {
    RecordedLaunch& r = rec[i];
    bool same = r.prg && r.spec;  // the same result on every replay while its buffers are unchanged
    for (size_t k = 0; k < r.bufs.size(); k++)
      same &= !input_of.contains(&r.bufs[k]->root()) && r.bufs[k]->version() && !written_by_other(r.bufs[k], reads(r, k) ? rec.size() : i);
    Launch l{r.prg, r.name, {}, std::move(r.vals), {}, r.dims};
    kernels.push_back({r.spec, r.ast, 0});
    if (r.spec)  // which of the values are the call's Variables: those a replay sets
      for (const KernelParam& p : r.spec->kernel.params)
        if (!p.is_buffer() && p.var_name != "core_id") {
          std::string nm = p.var_name.value_or("");
          l.var_names.push_back(vv.contains(nm) ? nm : "");
        }
    if (l.var_names.size() != l.vals.size()) l.var_names.assign(l.vals.size(), "");
    same &= l.vals.empty();  // a Variable's value (a KV cache's length) changes what it reads
    for (size_t k = 0; k < r.bufs.size(); k++) {
      const std::shared_ptr<Buffer>& b = r.bufs[k];
      Buffer* root = &b->root();
      if (auto it = input_of.find(root); it != input_of.end()) {
        slots.push_back({launches.size(), k, it->second, b->offset()});
        l.ptrs.push_back(nullptr);
        if (writes(r, k) && std::find(written_inputs.begin(), written_inputs.end(), it->second) == written_inputs.end()) written_inputs.push_back(it->second);
      } else {
        l.ptrs.push_back(b->ptr());
        if (seen.insert(b.get()).second) held.push_back(b);
        held_roots.insert(root);
        if (writes(r, k) && same) l.writes.push_back(root);
        else if (writes(r, k) && !has(written_roots, root)) written_roots.push_back(root);
      }
      // an output in the planner's arena is only this launch's (checked above; a schedule's arena is its own:
      // resolve_linear_call makes fresh intermediates), and the arena's version moves with every other launch's
      // writes: its inputs' versions decide
      if (same && !(!reads(r, k) && b->is_view())) l.unchanged.push_back({b.get(), *b->version()});
    }
    if (!l.prg) {
      if (r.bufs.size() != 2) internal_error("TinyJit: a recorded copy without (dest, src)");
      l.dst_dev = &r.bufs[0]->dev(), l.src_dev = &r.bufs[1]->dev();
      l.bounce.resize(r.bufs[0]->nbytes());
    }
    launches.push_back(std::move(l));
  }
  for (auto& [k, v] : vv) var_names.push_back(k);
  expected = in.info;
  for (InputInfo& e : expected) expected_views.push_back(links_of(e.view)), e.view.clear();
  scratch.assign(in.bufs.size(), nullptr);
  ret = out;
  std::unordered_map<UOp, size_t> input_buf;
  for (size_t i = 0; i < buf_uops.size(); i++) input_buf[buf_uops[i]] = i;
  for (const Tensor& t : out) {
    ret_inputs.emplace_back();
    for (const UOp& x : uop_of(t).toposort())
      if (auto it = input_buf.find(x); it != input_buf.end()) ret_inputs.back().push_back({it->second, x});
  }
  captured = true;
  if (debug_level() >= 1) std::printf("JIT captured %zu launches with %zu inputs\n", launches.size(), in.bufs.size());
  return out;
}

std::vector<Tensor> TinyJitBase::Impl::replay(const std::vector<Tensor>& inputs, const Inputs& in, const std::vector<sint>& vars) {
  check_inputs(expected, expected_views, in.info);
  auto vv = var_values(vars);
  for (auto& nm : var_names)
    if (!vv.contains(nm)) throw Error("TinyJit: the captured function takes Variable '" + nm + "', which this call does not pass");
  for (Launch& l : launches)
    for (size_t j = 0; j < l.var_names.size(); j++)
      if (!l.var_names[j].empty()) l.vals[j] = vv.at(l.var_names[j]);
  std::vector<char*> ptrs(in.bufs.size());
  for (size_t i = 0; i < in.bufs.size(); i++) {
    Buffer* b = in.bufs[i];
    ptrs[i] = static_cast<char*>(b->ptr()) + in.offsets[i];
    // a buffer the launches also write (last call's output passed back in): read a copy, as tinygrad's _copy_input
    if (held_roots.contains(b)) {
      const InputInfo& e = expected[i];
      if (!scratch[i]) scratch[i] = e.contiguous ? std::make_shared<Buffer>(b->device(), size_t(inputs[i].numel()), e.dtype)
                                                 : std::make_shared<Buffer>(b->device(), b->size(), b->dtype());
      std::vector<uint8_t> tmp(scratch[i]->nbytes());
      b->dev().copyout(tmp.data(), ptrs[i], tmp.size());
      scratch[i]->copyin(tmp.data(), tmp.size());
      ptrs[i] = static_cast<char*>(scratch[i]->ptr());
    }
  }
  for (const InputSlot& s : slots) launches[s.launch].ptrs[s.arg] = ptrs[s.input] + s.offset;
  bool dbg = debug_level() >= 2;
  auto& st = engine_stats();
  std::vector<TimedLaunch>* timer = launch_timer();
  for (size_t i = 0; i < launches.size(); i++) {
    Launch& l = launches[i];
    if (!l.unchanged.empty() && std::all_of(l.unchanged.begin(), l.unchanged.end(), [](auto& bv) { return bv.first->version() == bv.second; })) {
      st.kernels_unchanged++;
      continue;
    }
    if (l.prg) {
      double et = l.prg->launch(l.ptrs, l.vals, l.dims, dbg || timer);
      if (timer) timer->push_back({kernels[i].spec, kernels[i].ast, et});
      st.kernels_launched++;
      if (dbg) std::printf("*** JIT %-46s arg %2zu tm %9.2fus\n", l.name.c_str(), l.ptrs.size(), et * 1e6);
    } else {
      if (!l.bounce.empty()) l.src_dev->copyout(l.bounce.data(), l.ptrs[1], l.bounce.size()), l.dst_dev->copyin(l.ptrs[0], l.bounce.data(), l.bounce.size());
      st.copies++;
    }
    for (Buffer* b : l.writes) b->touch();
    for (auto& [b, v] : l.unchanged) v = *b->version();
  }
  for (size_t i : written_inputs) in.bufs[i]->touch();
  for (Buffer* b : written_roots) b->touch();
  std::vector<Tensor> out = ret;
  for (size_t j = 0; j < out.size(); j++) {
    if (ret_inputs[j].empty()) continue;
    std::unordered_map<UOp, UOp> sub;
    for (auto& [i, b] : ret_inputs[j])
      sub[b] = expected[i].contiguous ? uop_of(inputs[i]).reshape({b.max_numel()}) : in.buf_uops[i];
    out[j] = wrap(uop_of(ret[j]).substitute(sub));
  }
  return out;
}

TinyJitBase::TinyJitBase(Fn fn) : impl_(std::make_unique<Impl>()) {
  if (!fn) throw Error("TinyJit: no function given");
  impl_->fn = std::move(fn);
}
TinyJitBase::~TinyJitBase() = default;
TinyJitBase::TinyJitBase(TinyJitBase&&) noexcept = default;
TinyJitBase& TinyJitBase::operator=(TinyJitBase&&) noexcept = default;

std::vector<Tensor> TinyJitBase::call(const std::vector<Tensor>& inputs, const std::vector<sint>& vars) {
  if (!impl_) throw Error("TinyJit: called after being moved from");
  Impl& s = *impl_;
  if (launch_recorder()) throw Error("TinyJit: calling a TinyJit while another TinyJit captures is not supported");
  Inputs in = prepare_inputs(inputs);
  std::vector<Tensor> out;
  if (settings().JIT == 0 || s.cnt == 0) {
    out = s.fn(inputs, vars);
    Tensor::realize(out);
  } else if (!s.captured) {
    out = s.capture(inputs, in, vars);
  } else {
    out = s.replay(inputs, in, vars);
  }
  s.cnt++;
  return out;
}

int64_t TinyJitBase::calls() const { return impl_ ? impl_->cnt : 0; }
bool TinyJitBase::is_captured() const { return impl_ && impl_->captured; }
size_t TinyJitBase::captured_launches() const { return impl_ ? impl_->launches.size() : 0; }
void TinyJitBase::reset() {
  if (impl_) impl_ = std::make_unique<Impl>(Impl{std::move(impl_->fn)});
}

}  // namespace tg
