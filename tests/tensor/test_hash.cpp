// Tensor::keccak and Tensor::hash against Python's hashlib (sha3_256, shake_128), run through the .venv python.
#include <gtest/gtest.h>

#include <sstream>

#include "support/generated.h"
#include "support/hex.h"
#include "tensor/tensor_impl.h"

using namespace tg;
using tg::test::hex;

namespace {
// the message bytes: both sides build them from this formula (row r, byte i)
uint8_t msg_byte(int64_t r, int64_t i) { return uint8_t((i * 31 + r * 101 + 7) & 0xff); }
std::vector<uint8_t> msg(int64_t rows, int64_t n) {
  std::vector<uint8_t> v;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++) v.push_back(msg_byte(r, i));
  return v;
}
// one hex digest per row from hashlib; `expr` digests the bytes `m`
std::vector<std::string> oracle(int64_t rows, int64_t n, const std::string& expr) {
  std::string py = "import hashlib\nfor r in range(" + std::to_string(rows) + "):\n m = bytes(((i*31 + r*101 + 7) & 255) for i in range(" +
                   std::to_string(n) + "))\n print(" + expr + ")\n";
  test::Shell sh = test::run_shell(test::shell_quote(TG_PYTHON) + " -c " + test::shell_quote(py) + " 2>&1");
  EXPECT_EQ(sh.rc, 0) << sh.out << " (setup.sh makes the .venv)";
  std::vector<std::string> out;
  std::istringstream in(sh.out);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}
std::vector<std::string> rows_hex(const Tensor& t, int64_t rows) {
  std::vector<uint8_t> v = t.to_vector<uint8_t>();
  std::vector<std::string> out;
  size_t w = v.size() / size_t(rows);
  for (int64_t r = 0; r < rows; r++) out.push_back(hex(std::vector<uint8_t>(v.begin() + r * w, v.begin() + (r + 1) * w)));
  return out;
}
}  // namespace

// sizes around the 136/168-byte rates: empty, one byte, one short of a block (pad is 1 byte: dsbyte ^ 0x80), exact, one over
TEST(TensorHash, Sha3_256) {
  for (int64_t n : {0, 1, 135, 136, 137, 1000}) {
    Tensor t = Tensor::from_vector(msg(1, n), {n});
    Tensor d = t.keccak();
    EXPECT_EQ(d.shape(), (Shape{32}));
    EXPECT_EQ(rows_hex(d, 1), oracle(1, n, "hashlib.sha3_256(m).hexdigest()")) << "n=" << n;
  }
}

TEST(TensorHash, Shake128) {
  for (int64_t n : {0, 1, 167, 168, 169, 1000}) {
    Tensor d = Tensor::from_vector(msg(1, n), {n}).keccak("shake_128");
    EXPECT_EQ(d.shape(), (Shape{16}));
    EXPECT_EQ(rows_hex(d, 1), oracle(1, n, "hashlib.shake_128(m).hexdigest(16)")) << "n=" << n;
  }
}

TEST(TensorHash, Batched) {
  // leading dims are a batch: each row is its own message
  Tensor d = Tensor::from_vector(msg(6, 137), {2, 3, 137}).keccak("sha3_256");
  EXPECT_EQ(d.shape(), (Shape{2, 3, 32}));
  EXPECT_EQ(rows_hex(d, 6), oracle(6, 137, "hashlib.sha3_256(m).hexdigest()"));
  // a wider dtype is hashed as its bytes
  std::vector<uint8_t> bytes = msg(2, 136);
  Tensor wide = Tensor::from_bytes(bytes, dtypes::uint8, {2, 136}).bitcast(dtypes::uint32);
  EXPECT_EQ(rows_hex(wide.keccak("shake_128"), 2), oracle(2, 136, "hashlib.shake_128(m).hexdigest(16)"));
}

TEST(TensorHash, TreeHash) {
  // tinygrad's hash: the data zero-padded to 1 MiB, shake_128 (16 bytes) of each 4 KiB piece, shake_128 of those 4096 bytes
  std::string expr =
      "hashlib.shake_128(bytes().join(hashlib.shake_128(p[j:j+4096]).digest(16) for p in [m + bytes(2**20 - len(m))] for j in range(0, 2**20, 4096))).hexdigest(16)";
  Tensor d = Tensor::from_vector(msg(1, 1000), {1000}).hash();
  EXPECT_EQ(d.shape(), (Shape{16}));
  EXPECT_EQ(rows_hex(d, 1), oracle(1, 1000, expr));
}

TEST(TensorHash, Errors) {
  Tensor t = Tensor::from_vector<uint8_t>({1, 2, 3});
  EXPECT_THROW(
      try { t.keccak("md5"); } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("keccak: unknown cfg 'md5'"), std::string::npos);
        throw;
      },
      Error);
  EXPECT_THROW(t.keccak(100, 6), Error);
  EXPECT_THROW(Tensor(uint8_t(1), dtypes::uint8).keccak(), Error);
}
