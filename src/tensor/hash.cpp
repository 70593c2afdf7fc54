// Keccak (sha3 / shake) over the last dim and tinygrad's 16-byte tree hash, built from Tensor ops on uint64 lanes
// (https://keccak.team/keccak_specs_summary.html), as tinygrad's mixin/op.py keccak and hash.
#include "tensor/hash.h"

#include "tensor/tensor_impl.h"

namespace tg {

namespace {
constexpr int64_t kStateBytes = 200;  // 25 lanes of 64 bits
// ρ rotation of lanes 1..24 after the π reorder; lane 0 is not rotated
constexpr int kRot[24] = {44, 43, 21, 14, 28, 20, 3, 45, 61, 1, 6, 25, 8, 18, 27, 36, 10, 15, 56, 62, 55, 39, 41, 2};
// π step as a gather of the flat 5x5 state
const std::vector<int32_t> kPi = {0, 6, 12, 18, 24, 3, 9, 10, 16, 22, 1, 7, 13, 19, 20, 4, 5, 11, 17, 23, 2, 8, 14, 15, 21};
constexpr uint64_t kRound[24] = {1, 0x8082, 0x800000000000808a, 0x8000000080008000, 0x808b, 0x80000001, 0x8000000080008081,
                                 0x8000000000008009, 0x8a, 0x88, 0x80008009, 0x8000000a, 0x8000808b, 0x800000000000008b,
                                 0x8000000000008089, 0x8000000000008003, 0x8000000000008002, 0x8000000000000080, 0x800a,
                                 0x800000008000000a, 0x8000000080008081, 0x8000000000008080, 0x80000001, 0x8000000080008008};
constexpr int64_t kChunk = int64_t(1) << 20;
}  // namespace

Tensor Tensor::keccak(const std::string& cfg) const {
  if (cfg == "sha3_224") return keccak(144, 6);
  if (cfg == "sha3_256") return keccak(136, 6);
  if (cfg == "shake_128") return keccak(168, 31);
  throw Error("keccak: unknown cfg '" + cfg + "' (sha3_224, sha3_256 or shake_128, or a (rate, dsbyte) pair)");
}

Tensor Tensor::keccak(int64_t rate, int64_t dsbyte) const {
  if (rate <= 0 || rate >= kStateBytes || rate % 8 != 0) throw Error("keccak: rate must be a multiple of 8 in (0, 200), got " + std::to_string(rate));
  if (dsbyte < 0 || dsbyte > 0xff) throw Error("keccak: dsbyte must fit a byte, got " + std::to_string(dsbyte));
  if (ndim() == 0) throw Error("keccak: needs at least one dim (it hashes the last one)");
  std::string dev = device().value_or("");
  Shape sh = shape();
  int64_t bs = 1;
  for (size_t i = 0; i + 1 < sh.size(); i++) bs *= sh[i];
  Tensor data = bitcast(dtypes::uint8);
  int64_t len = data.shape().back(), pad = rate - len % rate, blocks = (len + pad) / rate;
  // pad the message to whole blocks, then each block to the 200-byte state
  data = data.reshape({bs, len}).pad(std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, pad}}).reshape({bs, blocks, rate});
  data = data.pad(std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 0}, {0, kStateBytes - rate}});
  // the padding rule: dsbyte right after the message, 0x80 on the last byte of the rate (one byte holds both when pad == 1)
  std::vector<uint8_t> mask(size_t(blocks * kStateBytes), 0);
  int64_t last = (blocks - 1) * kStateBytes;
  mask[size_t(last + rate - pad)] ^= uint8_t(dsbyte);
  mask[size_t(last + rate - 1)] ^= 0x80;
  data = (data.flatten(1) ^ from_vector(mask, {1, blocks * kStateBytes}, std::nullopt, dev)).reshape({bs, blocks, kStateBytes}).bitcast(dtypes::uint64);

  std::vector<uint64_t> mul_by(25, 1), div_by(25, 1);  // rotl(x, r) == x * 2^r | x / 2^(64-r) in uint64
  for (int i = 0; i < 24; i++) mul_by[i + 1] = uint64_t(1) << kRot[i], div_by[i + 1] = uint64_t(1) << (64 - kRot[i]);
  Tensor rot_mul = from_vector(mul_by, {25}, std::nullopt, dev), rot_div = from_vector(div_by, {25}, std::nullopt, dev);
  Tensor pi = from_vector(kPi, {25}, std::nullopt, dev);
  std::vector<uint64_t> rc(24 * 25, 0);
  for (int i = 0; i < 24; i++) rc[size_t(i * 25)] = kRound[i];
  Tensor round_const = from_vector(rc, {24, 25}, std::nullopt, dev);

  Tensor state = zeros({bs, 25}, dtypes::uint64, dev);
  // the block is picked by a bound Variable, so one block's kernels are compiled once and serve every block
  sint block = Variable("keccak_block", 0, blocks - 1);
  for (int64_t k = 0; k < blocks; k++) {
    sint b = block.bind(k);
    state = state ^ (blocks == 1 ? data[{Slice{}, k}] : data.shrink({{0, bs}, {b, b + 1}, {0, 25}}).reshape({bs, 25}));
    for (int64_t i = 0; i < 24; i++) {
      // θ: xor each lane with the parities of the two neighbouring columns
      Tensor p = state.reshape({bs, 5, 5}).transpose(2, 1);
      Tensor t1 = (p[{Slice{}, Slice{}, int64_t(0)}] ^ p[{Slice{}, Slice{}, int64_t(1)}] ^ p[{Slice{}, Slice{}, int64_t(2)}] ^
                   p[{Slice{}, Slice{}, int64_t(3)}] ^ p[{Slice{}, Slice{}, int64_t(4)}]).roll({-1}, IntList{1});
      Tensor d = t1.roll({2}, IntList{1}) ^ (t1.lshift(Tensor(int64_t(1), dtypes::uint64)) ^ t1.rshift(Tensor(int64_t(63), dtypes::uint64)));
      state = state ^ d.unsqueeze(2).expand({bs, 5, 5}).transpose(2, 1).flatten(1);
      // ρ and π
      state = state[{Slice{}, pi}];
      state = (state * rot_mul).bitwise_or(state.idiv(rot_div)).reshape({bs, 5, 5});
      // χ and ι
      state = state ^ (state.roll({-1}, IntList{2}).bitwise_not() & state.roll({-2}, IntList{2}));
      state = state.flatten(1) ^ round_const[i];
    }
    // one block's 24 rounds per graph: unrealized, the graph (and the recursion walking it) grows with the message
    if (blocks > 1) state.realize();
  }
  int64_t out = (kStateBytes - rate) / 2;
  Shape oshape(sh.begin(), sh.end() - 1);
  oshape.push_back(out);
  return state.bitcast(dtypes::uint8)[{Slice{}, Slice{std::nullopt, out, std::nullopt}}].reshape(SymShape(oshape));
}

Tensor hash_1mb(const Tensor& rows) {
  int64_t n = rows.shape()[0];
  return rows.reshape({-1, 4096}).keccak("shake_128").reshape({n, -1}).keccak("shake_128");
}

Tensor Tensor::hash() const {
  Tensor data = flatten().bitcast(dtypes::uint8);
  int64_t n = data.shape()[0], chunks = (n + kChunk - 1) / kChunk;
  while (chunks > 1) {
    data = hash_1mb(data.pad_to({chunks * kChunk}).reshape({chunks, kChunk})).flatten();
    chunks = (chunks + 65535) / 65536;
  }
  return hash_1mb(data.pad_to({kChunk}).unsqueeze(0)).flatten()[{Slice{std::nullopt, 16, std::nullopt}}];
}

}  // namespace tg
