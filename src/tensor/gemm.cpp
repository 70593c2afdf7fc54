// The CPU's float32 matmul with B packed in panels (SIMD=1): B (K x N) is copied to N/P panels of K x P (P: two
// vector registers), so the heuristic's register tile (simd_upcast: a panel's lanes by a block of A's rows) streams one
// panel front to back, P floats per step of K. Read in place, B's column block jumps a whole row per step (at N=1024,
// 4 KiB: every step lands in the same L1 set), 3-10x slower at N >= 1024. A is made contiguous (a copy only when it is
// a view such as A^T, or an expression), so its rows are read along K. The copies cost O(K*N + M*K) against O(M*N*K):
// only where B has 1 MiB or more (less stays in L2) and A has enough rows: 64, or 96 where B is a stored tensor seen
// through casts (float16 weights), which the unpacked kernel (matvec_lanes' tile of x's rows by W's, both read along
// K) converts as it loads, where a float32 panel costs a conversion, a write and a read of twice the bytes per element
// (the 110M llama's prompt, CPU time: 64 tokens 1.66-1.70 s unpacked against 1.87-1.94 s packed, 96 even; a
// dequantized B, converted again for each block of x's rows, is even at 32-64 rows).
// B^T (a transposed view: attention's keys in q @ k^T) is packed at any size: read in place, no input is contiguous
// along N and the kernel gets no SIMD tile.
// Few rows of A against a big B (64 x 4096 @ 4096 x 4096: 64 MiB) spend a third of the time writing the panels out to
// memory and reading them back. There B is packed in blocks of K (GEMM_BLOCK_BYTES of panels), each multiplied by its
// block of A's columns while the panels are still in cache and added to the previous blocks' sum: the sum costs M x N
// floats written and read per block, less than the panels' round trip only while M is under a block's rows.
// With GEMM_CHUNK_BYTES set, a B with more rows than A (a prompt's x @ W^T: 128 rows of x, W's 768-2048) is packed and
// multiplied in chunks of columns of that many bytes of panels, each product run right after its pack, and the chunks'
// outputs copied into one, so the panels are read back from L2 instead of memory. Off by default: on the quiet host the
// 110M llama's prompt was as fast without it on one thread and 15-25 % slower with it on two (docs/benchmarks.md).
#include "runtime/device.h"
#include "tensor/tensor_impl.h"
#include "util/env.h"

namespace tg {

namespace {
bool cast_of_stored(UOp u) {
  bool cast = false;
  for (; GroupOp::Movement.has(u.op()) || u.op() == Ops::CAST || u.op() == Ops::BITCAST; u = u.src(0)) cast |= u.op() == Ops::CAST;
  return cast && u.op() == Ops::BUFFER;
}

// (..., M, K) @ (..., K, N) through B's panels of p floats
Tensor panel_dot(const Tensor& x, const Tensor& w, int64_t p) {
  Shape xs = x.shape(), ws = w.shape();
  int64_t k = xs.back(), n = ws.back();
  Shape wp(ws.begin(), ws.end() - 1);  // (..., K, N/P, P) -> (..., N/P, K, P)
  wp.insert(wp.end(), {n / p, p});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < int64_t(ws.size()) - 2; i++) perm.push_back(i);
  int64_t b = int64_t(perm.size());
  perm.insert(perm.end(), {b + 1, b, b + 2});
  Tensor panels = w.reshape(wp).permute(perm).contiguous();
  // panels outer, A's rows inner: (..., 1, M, K, 1) * (..., N/P, 1, K, P) summed over K is (..., N/P, M, P), so each
  // thread's loop keeps one panel in L2 while A's rows stream past it. The result is a view of that, in (..., M, N)
  Shape xr(xs.begin(), xs.end() - 1), pr(panels.shape().begin(), panels.shape().end() - 3);
  xr.insert(xr.end() - 1, 1);
  xr.insert(xr.end(), {k, 1});
  pr.insert(pr.end(), {n / p, 1, k, p});
  Tensor prod = (x.contiguous().reshape(xr) * panels.reshape(pr)).sum(-2).transpose(-3, -2);
  Shape out(prod.shape().begin(), prod.shape().end() - 2);
  out.push_back(n);
  return prod.reshape(out);
}
}  // namespace

std::optional<Tensor> packed_dot(const Tensor& x, const Tensor& w) {
  if (!simd_kernels() || x.ndim() < 2 || w.ndim() < 2 || x.dtype() != dtypes::float32 || w.dtype() != dtypes::float32) return std::nullopt;
  std::string dev = x.device().value_or(""), wdev = w.device().value_or("");
  if (dev != wdev || !(dev == "CPU" || dev.starts_with("CPU:"))) return std::nullopt;
  auto xs = x.sym_shape().ints(), ws = w.sym_shape().ints();
  if (!xs || !ws) return std::nullopt;
  int64_t m = xs->end()[-2], k = xs->back(), n = ws->back();
  int64_t p = 2 * get_device(dev).simd_width();
  const UOp& wu = uop_of(w);
  int64_t r = int64_t(ws->size());
  bool bt = wu.op() == Ops::PERMUTE && wu.arg().ints()[size_t(r - 1)] == r - 2 && wu.arg().ints()[size_t(r - 2)] == r - 1;
  if (p == 0 || n % p != 0 || n < 2 * p || m < (cast_of_stored(wu) ? 96 : 64) || (!bt && k * n < (int64_t(1) << 18))) return std::nullopt;
  // the largest power-of-two block of K whose panels fit the budget
  int64_t kb = k, budget = settings().GEMM_BLOCK_BYTES;
  if (budget > 0 && k * n * 4 > budget) {
    for (kb = 1; kb * 2 * n * 4 <= budget; kb *= 2) {}
    if (m >= kb) kb = k;
  }
  if (kb >= k) {
    // B's columns in chunks whose panels stay in L2 from their pack to their product, where more rows of B than of A
    // (the chunks' outputs copied into one M x N costs less than B's panels written to memory and read back)
    int64_t chunk = settings().GEMM_CHUNK_BYTES, nc = p;
    if (chunk <= 0 || k * n * 4 <= chunk || m >= k) return panel_dot(x, w, p);
    while (nc * 2 * k * 4 <= chunk && n % (nc * 2) == 0) nc *= 2;
    std::vector<Tensor> parts;
    for (const Tensor& wc : w.split(nc, -1)) parts.push_back(panel_dot(x, wc, p).contiguous());
    return Tensor::cat(parts, -1).contiguous();
  }
  // each partial sum its own kernel: unrealized, the blocks' reduces would fuse into one kernel of them all
  std::vector<Tensor> xb = x.split(kb, -1), wb = w.split(kb, -2);
  Tensor acc = panel_dot(xb[0], wb[0], p).contiguous();
  for (size_t j = 1; j < xb.size(); j++) acc = (acc + panel_dot(xb[j], wb[j], p)).contiguous();
  return acc;
}

}  // namespace tg
