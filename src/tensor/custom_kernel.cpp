// tinygrad's Tensor.custom_kernel (UOp.custom_kernel): the kernel function builds a SINK on placeholders of the
// buffers; CALL(SINK, *buffers) is the kernel and each buffer AFTER the CALL is what it returns. KernelUOp wraps the
// UOp builders a kernel needs and checks what can be checked while building (index ranges, dtypes, open ranges).
#include "tg/kernel.h"

#include "codegen/expander.h"
#include "tensor/gradient.h"
#include "tensor/tensor_impl.h"
#include "tg/device.h"
#include "uop/args.h"
#include "uop/movement.h"

namespace tg {

struct KernelUOp::Impl {
  UOp u;
};
struct KernelAccess {
  static const UOp& of(const KernelUOp& k) { return k.impl_->u; }
  static KernelUOp make(UOp u) { return KernelUOp(std::make_shared<const KernelUOp::Impl>(KernelUOp::Impl{std::move(u)})); }
};

namespace {
const UOp& U(const KernelUOp& k) { return KernelAccess::of(k); }
KernelUOp K(UOp u) { return KernelAccess::make(std::move(u)); }
std::vector<UOp> uops(const std::vector<KernelUOp>& ks) {
  std::vector<UOp> r;
  for (const KernelUOp& k : ks) r.push_back(U(k));
  return r;
}
std::string what(const UOp& u) { return std::string(op_name(u.op())) + " " + std::string(u.dtype().name()); }
// a PARAM or BUFFER, seen through AFTERs and movement ops
bool is_buffer(UOp u) {
  for (UOp b; (b = u.op() == Ops::AFTER ? u.src(0) : u.base()) != u;) u = b;
  return u.op() == Ops::PARAM || u.op() == Ops::BUFFER;
}
}  // namespace

KernelUOp KernelUOp::literal(ConstVal v) { return K(UOp::const_(v)); }
KernelUOp KernelUOp::const_(ConstVal v, DType dtype) { return K(UOp::const_(v, dtype)); }
KernelUOp KernelUOp::range(int64_t end, int64_t axis_id, bool reduce) {
  if (end < 1) throw Error("custom_kernel: range " + std::to_string(axis_id) + " needs an end >= 1, got " + std::to_string(end));
  return K(UOp::range(end, axis_id, reduce ? AxisType::REDUCE : AxisType::WEAK));
}
KernelUOp KernelUOp::reg(int64_t size, DType dtype, int64_t slot) {
  if (size < 1 || dtype.is_weak() || dtype == dtypes::void_)
    throw Error("custom_kernel: reg needs a size >= 1 and a storable dtype, got " + std::to_string(size) + " " + std::string(dtype.name()));
  return K(placeholder({size}, dtype, slot, AddrSpace::REG));
}
KernelUOp KernelUOp::group(const std::vector<KernelUOp>& stores) { return K(UOp::group(uops(stores))); }
KernelUOp KernelUOp::sink(const std::vector<KernelUOp>& srcs, const std::string& name, bool apply_opts) {
  KernelInfo ki;
  ki.name = name;
  if (!apply_opts) ki.opts_to_apply = std::vector<Opt>{};
  return K(UOp::make(Ops::SINK, dtypes::void_, uops(srcs), make_arg(std::move(ki))));
}

KernelUOp KernelUOp::operator[](std::initializer_list<KernelUOp> idx) const { return index(std::vector<KernelUOp>(idx)); }
KernelUOp KernelUOp::index(const std::vector<KernelUOp>& idx) const {
  const UOp& b = U(*this);
  if (!is_buffer(b)) throw Error("custom_kernel: only a buffer (a kernel argument or a reg) can be indexed, not a " + what(b));
  const Shape& sh = b.shape();
  if (idx.size() != sh.size())
    throw Error("custom_kernel: " + std::to_string(idx.size()) + " indices for a buffer of shape " + shape_str(sh) + " (one per dim)");
  for (size_t d = 0; d < idx.size(); d++) {
    const UOp& i = U(idx[d]);
    if (!i.dtype().is_int()) throw Error("custom_kernel: index " + std::to_string(d) + " is a " + what(i) + ", not an int");
    bool gated = false;  // a gated index (valid.where(i, Invalid)) is checked where it is valid, by the renderer's gate
    for (const UOp& x : i.toposort()) gated |= x.is_invalid();
    if (gated) continue;
    int64_t lo = i.vmin().as_int(), hi = i.vmax().as_int();
    if (lo < 0 || hi >= sh[d])
      throw Error("custom_kernel: index " + std::to_string(d) + " takes values " + std::to_string(lo) + ".." + std::to_string(hi) +
                  ", out of range for dim " + std::to_string(d) + " of a buffer of shape " + shape_str(sh));
  }
  return K(b.index(uops(idx)));
}
KernelUOp KernelUOp::store(const KernelUOp& value) const {
  const UOp& dst = U(*this);
  if (dst.op() != Ops::INDEX) throw Error("custom_kernel: store goes to an indexed buffer (buf[{i}]), not a " + what(dst));
  UOp v = U(value);
  if (v.dtype().is_weak()) v = v.cast(dst.dtype());
  if (v.dtype() != dst.dtype())
    throw Error("custom_kernel: storing a " + std::string(v.dtype().name()) + " value into a " + std::string(dst.dtype().name()) +
                " buffer (cast it first)");
  return K(dst.store(v));
}
KernelUOp KernelUOp::set(const KernelUOp& value, const std::vector<KernelUOp>& end) const {
  return K(U(*this).src(0).after({U(store(value)).end(uops(end))}));
}
KernelUOp KernelUOp::end(const std::vector<KernelUOp>& ranges) const {
  for (const KernelUOp& r : ranges)
    if (U(r).op() != Ops::RANGE) throw Error("custom_kernel: end takes RANGEs, got a " + what(U(r)));
  return ranges.empty() ? *this : K(U(*this).end(uops(ranges)));
}
KernelUOp KernelUOp::after(const std::vector<KernelUOp>& deps) const { return deps.empty() ? *this : K(U(*this).after(uops(deps))); }
KernelUOp KernelUOp::reshape(const Shape& shape) const { return K(U(*this).reshape(shape)); }
KernelUOp KernelUOp::flatten() const { return K(U(*this).flatten()); }
KernelUOp KernelUOp::permute(const std::vector<int64_t>& order) const { return K(U(*this).permute(order)); }

KernelUOp KernelUOp::cast(DType dt) const { return K(U(*this).cast(dt)); }
KernelUOp KernelUOp::where(const KernelUOp& a, const KernelUOp& b) const { return K(U(*this).where(U(a), U(b))); }
KernelUOp KernelUOp::eq(const KernelUOp& x) const { return K(U(*this).eq(U(x))); }
KernelUOp KernelUOp::ne(const KernelUOp& x) const { return K(U(*this).ne(U(x))); }
KernelUOp KernelUOp::maximum(const KernelUOp& x) const { return K(U(*this).maximum(U(x))); }
KernelUOp KernelUOp::sqrt() const { return K(U(*this).sqrt()); }
KernelUOp KernelUOp::exp2() const { return K(U(*this).exp2()); }
KernelUOp KernelUOp::log2() const { return K(U(*this).log2()); }
KernelUOp KernelUOp::reciprocal() const { return K(U(*this).reciprocal()); }
Shape KernelUOp::shape() const { return U(*this).shape(); }
int64_t KernelUOp::numel() const { return U(*this).numel(); }
DType KernelUOp::dtype() const { return U(*this).dtype(); }
std::string KernelUOp::str() const { return U(*this).str(); }

KernelUOp operator+(const KernelUOp& a, const KernelUOp& b) { return K(U(a) + U(b)); }
KernelUOp operator-(const KernelUOp& a, const KernelUOp& b) { return K(U(a) - U(b)); }
KernelUOp operator*(const KernelUOp& a, const KernelUOp& b) { return K(U(a) * U(b)); }
KernelUOp operator/(const KernelUOp& a, const KernelUOp& b) { return K(U(a) / U(b)); }
KernelUOp operator%(const KernelUOp& a, const KernelUOp& b) { return K(U(a) % U(b)); }
KernelUOp operator<(const KernelUOp& a, const KernelUOp& b) { return K(U(a) < U(b)); }
KernelUOp operator&(const KernelUOp& a, const KernelUOp& b) { return K(U(a) & U(b)); }
KernelUOp operator|(const KernelUOp& a, const KernelUOp& b) { return K(U(a) | U(b)); }
KernelUOp operator-(const KernelUOp& a) { return K(-U(a)); }

const KernelUOp& KernelArgs::operator[](size_t i) const {
  if (i >= bufs_.size())
    throw Error("custom_kernel: the kernel reads buffer " + std::to_string(i) + " but " + std::to_string(bufs_.size()) + " buffer(s) were passed");
  return bufs_[i];
}
void KernelArgs::check_count(size_t n) const {
  if (n != bufs_.size())
    throw Error("custom_kernel: the kernel takes " + std::to_string(n) + " buffers, " + std::to_string(bufs_.size()) + " were passed");
}

std::vector<Tensor> custom_kernel(const std::vector<Tensor>& bufs, const KernelFxn& fxn, Tensor::CallGradFxn grad_fxn) {
  if (bufs.empty()) throw Error("custom_kernel: needs at least one buffer (the output)");
  std::optional<std::string> dev;
  for (size_t i = 0; i < bufs.size(); i++)
    if (std::optional<std::string> d = bufs[i].device()) {
      if (dev && *dev != *d) throw Error("custom_kernel: the buffers are on different devices: " + *dev + " and " + *d + " (buffer " + std::to_string(i) + ")");
      dev = d;
    }
  std::vector<UOp> srcs;
  std::vector<KernelUOp> params;
  for (size_t i = 0; i < bufs.size(); i++) {
    const Tensor& t = bufs[i];
    if (t.dtype().is_weak()) throw Error("custom_kernel: buffer " + std::to_string(i) + " has the weak dtype " + std::string(t.dtype().name()) + " (give it a dtype)");
    // a device-free constant (arange, a literal) gets a buffer on the kernel's device
    srcs.push_back(uop_of(t.device() ? t : Tensor::empty(t.shape(), t.dtype(), dev.value_or(default_device())).assign(t)));
    params.push_back(K(placeholder(t.shape(), t.dtype(), int64_t(i), AddrSpace::GLOBAL)));
  }
  UOp sink = U(fxn(KernelArgs(params)));
  if (sink.op() != Ops::SINK) throw Error("custom_kernel: the kernel function must return a SINK (….sink(name)), it returned a " + what(sink));
  if (std::vector<UOp> open = sink.ranges(); !open.empty())
    throw Error("custom_kernel: the kernel leaves " + std::to_string(open.size()) + " range(s) open (end them: store(...).end({ranges}))");
  std::vector<UOp> call_src{sink};
  call_src.insert(call_src.end(), srcs.begin(), srcs.end());
  UOp call = UOp::make(Ops::CALL, dtypes::void_, call_src, make_arg(call_info_with(std::move(grad_fxn), std::nullopt)));
  std::vector<Tensor> ret;
  for (const UOp& s : srcs) ret.push_back(wrap(s.after({call})));
  return ret;
}

}  // namespace tg
