// Linear algebra built from other Tensor ops (tinygrad's mixin/op.py): newton_schulz, qr, svd.
#include "tg/tensor.h"

#include <algorithm>

namespace tg {

Tensor Tensor::newton_schulz(int64_t steps, const std::vector<double>& params, double eps) const {
  if (ndim() < 2) throw Error("newton_schulz: needs two or more dims, got " + shape_str());
  if (steps < 0) throw Error("newton_schulz: steps must be >= 0, got " + std::to_string(steps));
  if (params.empty()) throw Error("newton_schulz: needs at least one polynomial coefficient");
  if (shape()[size_t(ndim() - 2)] > shape()[size_t(ndim() - 1)]) return transpose(-2, -1).newton_schulz(steps, params, eps).transpose(-2, -1);
  Tensor g = *this / (square().sum({-2, -1}, true).sqrt() + eps);
  for (int64_t s = 0; s < steps; s++) {
    Tensor gg = g.matmul(g.transpose(-2, -1)), term = g, acc = g * params[0];
    for (size_t i = 1; i < params.size(); i++) acc = acc + (term = gg.matmul(term)) * params[i];
    g = acc;
  }
  return g;
}

}  // namespace tg

namespace tg {

namespace {
Shape batch_with(const Tensor& t, std::initializer_list<int64_t> tail) {
  Shape s(t.shape().begin(), t.shape().end() - 2);
  s.insert(s.end(), tail);
  return s;
}
// x[..., lo:hi] on the last dim
Tensor last(const Tensor& x, int64_t lo, int64_t hi) {
  std::vector<std::pair<int64_t, int64_t>> sh;
  for (size_t d = 0; d + 1 < x.shape().size(); d++) sh.push_back({0, x.shape()[d]});
  sh.push_back({lo, hi});
  return x.shrink(sh);
}
}  // namespace

std::pair<Tensor, Tensor> Tensor::qr() const {
  if (ndim() < 2) throw Error("qr: expected two or more dims, got " + shape_str());
  int64_t m = shape()[size_t(ndim() - 2)], n = shape()[size_t(ndim() - 1)];
  Tensor R = *this, Q = Tensor::eye(m, std::nullopt, dtype()).expand(batch_with(*this, {m, m}));
  Tensor idx = Tensor::arange(m);
  for (int64_t i = 0; i < std::min(m, n); i++) {
    // the Householder reflector v of column i below the diagonal (zeros above), and w = tau * v
    Tensor at_i = idx.eq(Tensor(i)), x = (idx >= Tensor(i)).where(last(R, i, i + 1).squeeze(-1), 0);
    Tensor norm = x.square().sum(-1, true).sqrt(), x0 = at_i.where(x, 0).sum(-1, true);
    Tensor sgn = x0.ne(Tensor(0)).where(x0.sign(), 1), active = norm.ne(Tensor(0));
    Tensor u0 = x0 + sgn * norm;
    Tensor v = (at_i.where(u0, x) / active.where(u0, 1)).unsqueeze(-1);
    Tensor w = active.where(sgn * u0 / active.where(norm, 1), 0).unsqueeze(-1) * v;
    R = R - w.matmul(v.transpose(-2, -1).matmul(R));
    Q = Q - Q.matmul(v).matmul(w.transpose(-2, -1));
  }
  return {Q, R};
}

std::tuple<Tensor, Tensor, Tensor> Tensor::svd(bool full_matrices) const {
  if (ndim() < 2) throw Error("svd: expected two or more dims, got " + shape_str());
  int64_t m = shape()[size_t(ndim() - 2)], n = shape()[size_t(ndim() - 1)], num = std::min(m, n), q_num = std::max(m, n), h = num / 2;
  auto [Q, R] = (m >= n ? *this : transpose(-2, -1)).qr();
  Tensor U = R.shrink_to(batch_with(R, {num, num})).contiguous();
  Tensor V = Tensor::eye(num, std::nullopt, dtype()).expand(batch_with(*this, {num, num})).contiguous();
  Tensor eye_num = Tensor::eye(num, std::nullopt, dtype()).expand(batch_with(*this, {num, num}));
  // round-robin pairing of columns: identity on the first half, reversed on the second
  Tensor permute = Tensor::arange(h, dtypes::int32).cat(Tensor::arange(h, num, 1, dtypes::int32).flip(0));
  Tensor cols = Tensor::arange(num, dtypes::int32);
  Shape bh = batch_with(*this, {1, h}), bh3 = batch_with(*this, {h, 1, 1});
  for (int64_t round = 0; h > 0 && round < 4 * num; round++) {
    // P[a, b] = (a == permute[b]); its first 2h columns select the pairs (i_k, j_k)
    Tensor P_pair = last(cols.unsqueeze(1).eq(permute.unsqueeze(0)).cast(U.dtype()), 0, 2 * h);
    Tensor U_pair = U.matmul(P_pair);
    std::vector<Tensor> lr = U_pair.split(h, -1), ab = U_pair.square().sum(-2).unsqueeze(-2).split(h, -1);
    Tensor gamma = (lr[0] * lr[1]).sum(-2).reshape(bh), rot = gamma.ne(Tensor(0));
    Tensor tau = (ab[1] - ab[0]) / (rot.where(gamma, 1) * 2);
    Tensor t = rot.where(tau.ne(Tensor(0)).where(tau.sign(), 1) / (tau.abs() + (tau.square() + 1).sqrt()), 0);
    Tensor c = (t.square() + 1).sqrt().reciprocal(), s = c * t;
    std::vector<Tensor> M = P_pair.transpose(-2, -1).split(h, -2);  // each (h, num)
    Tensor Mi_a = M[0].unsqueeze(-1), Mi_b = M[0].unsqueeze(-2), Mj_a = M[1].unsqueeze(-1), Mj_b = M[1].unsqueeze(-2);
    Tensor cc = (c - 1).reshape(bh3), ss = s.reshape(bh3);
    Tensor rotm = eye_num + (cc * (Mi_a * Mi_b + Mj_a * Mj_b) + ss * (Mi_a * Mj_b - Mj_a * Mi_b)).sum(-3);
    U = U.matmul(rotm), V = V.matmul(rotm);
    if (num % 2 == 1) permute = (permute - 1) % Tensor(num);
    else permute = last(permute, 0, 1).cat(((last(permute, 1, num) - 2) % Tensor(num - 1)) + 1);
  }
  auto [S, indices] = U.square().sum(-2).sqrt().sort(-1, true);
  Tensor new_indices = indices.unsqueeze(-2).expand(batch_with(*this, {num, num}));
  U = U.gather(-1, new_indices) / S.ne(Tensor(0)).where(S, 1).unsqueeze(-2);
  V = V.gather(-1, new_indices);
  // U in the top-left num x num block of a q_num x q_num identity, then rotated back by Q
  std::vector<std::pair<int64_t, int64_t>> pad(size_t(ndim() - 2), {0, 0});
  pad.insert(pad.end(), {{0, q_num - num}, {0, q_num - num}});
  Tensor eye_q = Tensor::eye(q_num, std::nullopt, U.dtype()).expand(batch_with(*this, {q_num, q_num}));
  Tensor eye_n = Tensor::eye(num, std::nullopt, U.dtype()).expand(batch_with(*this, {num, num})).pad(pad);
  U = Q.matmul(U.pad(pad) + eye_q - eye_n);
  if (!full_matrices) U = last(U, 0, num);
  if (m >= n) return {U, S, V.transpose(-2, -1)};
  return {V, S, U.transpose(-2, -1)};
}

}  // namespace tg
