// tg::nn::state::torch_load, zip_extract and tar_extract against files written by real torch.save (Debian's
// python3-torch, tests/nn/make_torch_files.py run at test time): every tensor's dtype, shape and bytes equal what
// torch.load returns, in the zip, legacy and tar layouts, with transposed, sliced, strided, broadcast and shared
// storages; contiguous tensors stay lazy on DISK; corrupt, truncated and unsupported files give a tg::Error.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/generated.h"
#include "tg/state.h"
#include "../tensor/tensor_test_util.h"

using namespace tg;
using namespace tg::nn::state;
using json = nlohmann::json;
using testutil::error_of;
using testutil::expect_has;

namespace {

struct Files : test::GeneratedFiles {
  json manifest;
  Files() : GeneratedFiles("tg_torch", test::shell_quote(TG_SYSTEM_PYTHON) + " " + test::shell_quote(TG_TORCH_SCRIPT), "setup.sh installs python3-torch") {
    if (error.empty()) manifest = json::parse(std::ifstream(path("manifest.json")));
  }
};
const Files& files() {
  static Files f;
  return f;
}
#define NEED_FILES() ASSERT_TRUE(files().error.empty()) << files().error

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) s += d[c >> 4], s += d[c & 15];
  return s;
}
std::vector<uint8_t> bytes_of(const Tensor& t) { return t.numel() ? t.to("CPU").data() : std::vector<uint8_t>{}; }

// every tensor torch.load returned, and nothing else, with its dtype, shape and bytes
void expect_file(const std::string& name) {
  SCOPED_TRACE(name);
  const json& want = files().manifest[name];
  std::map<std::string, Tensor> got = torch_load(files().path(name));
  std::vector<std::string> gk, wk;
  for (auto& [k, v] : got) gk.push_back(k);
  for (auto& [k, v] : want.items()) wk.push_back(k);
  std::sort(wk.begin(), wk.end());
  EXPECT_EQ(gk, wk);
  for (auto& [k, w] : want.items()) {
    SCOPED_TRACE(k);
    auto it = got.find(k);
    if (it == got.end()) continue;
    EXPECT_EQ(it->second.dtype(), dtypes::from_name(w["dtype"].get<std::string>()));
    EXPECT_EQ(it->second.shape(), w["shape"].get<Shape>());
    EXPECT_EQ(hex(bytes_of(it->second)), w["hex"].get<std::string>());
  }
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write(const std::string& path, const std::string& b) { std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), std::streamsize(b.size())); }

}  // namespace

TEST(TorchLoad, ZipMatchesTorch) {
  NEED_FILES();
  for (auto f : {"net.pt", "tensors.pt", "checkpoint.pth", "params.pt", "bare.pt", "deflated.pt"}) expect_file(f);
}

TEST(TorchLoad, LegacyMatchesTorch) {
  NEED_FILES();
  for (auto f : {"net_legacy.pt", "tensors_legacy.pt"}) expect_file(f);
}

TEST(TorchLoad, TarMatchesTorch) {
  NEED_FILES();
  expect_file("old_tar.pt");
}

TEST(TorchLoad, ContiguousTensorsStayOnDisk) {
  NEED_FILES();
  for (auto f : {"tensors.pt", "tensors_legacy.pt"}) {
    auto sd = torch_load(files().path(f));
    EXPECT_EQ(sd.at("f32").device()->rfind("DISK:", 0), 0u) << f;
    EXPECT_EQ(sd.at("sliced").device()->rfind("DISK:", 0), std::string::npos) << f;  // a strided view moves to the default device
  }
}

TEST(TorchLoad, IntoModule) {
  NEED_FILES();
  // the checkpoint's nested state dict loads into a Linear with the same names
  nn::Linear fc(4, 5);
  std::map<std::string, Tensor> sd;
  for (auto& [k, v] : torch_load(files().path("checkpoint.pth")))
    if (k.rfind("model.fc.", 0) == 0) sd.emplace(k.substr(9), v);
  load_state_dict(fc, sd);
  EXPECT_EQ(hex(bytes_of(fc.weight)), files().manifest["checkpoint.pth"]["model.fc.weight"]["hex"].get<std::string>());
}

TEST(TorchLoad, Unsupported) {
  NEED_FILES();
  expect_has(error_of([] { torch_load(files().path("overlap.pt")); }), {"torch_load", "overlap.pt", "\"overlap\"", "overlapping strides"});
  expect_has(error_of([] { torch_load(files().path("complex.pt")); }), {"torch_load", "ComplexFloatStorage", "not supported"});
  expect_has(error_of([] { torch_load(files().path("missing.pt")); }), {"missing.pt", "no such file"});
  expect_has(error_of([] { torch_load(files().path("archive.zip")); }), {"torch_load", "data.pkl", "not a torch checkpoint"});
  expect_has(error_of([] { torch_load(files().path("archive.tar")); }), {"torch_load", "'storages'", "not a torch checkpoint"});
  expect_has(error_of([] { torch_load(files().path("manifest.json")); }), {"torch_load", "not supported"});
}

// every truncation and many single-byte corruptions of each layout either load or throw a tg::Error
TEST(TorchLoad, CorruptFilesThrow) {
  NEED_FILES();
  std::string tmp = files().path("corrupt.pt");
  for (auto f : {"tensors.pt", "tensors_legacy.pt", "old_tar.pt", "params.pt"}) {
    std::string good = read(files().path(f));
    int errors = 0, cases = 0;
    auto attempt = [&](const std::string& b) {
      write(tmp, b);
      cases++;
      std::string e = error_of([&] {
        for (auto& [k, v] : torch_load(tmp)) (void)v.shape();
      });
      EXPECT_EQ(e.find("<not a tg::Error"), std::string::npos) << f << ": " << e;
      errors += e != "<no throw>";
      if (e != "<no throw>") { EXPECT_NE(e.find("torch_load: " + tmp), std::string::npos) << e; }
    };
    size_t content = good.find_last_not_of('\0') + 1;  // a tar's zero padding at the end may go
    for (size_t n = 0; n < content; n += 1 + content / 60) attempt(good.substr(0, n));
    EXPECT_EQ(errors, cases) << f << ": a truncated file loaded";
    for (size_t i = 0; i < good.size(); i += 1 + good.size() / 150) {
      std::string b = good;
      b[i] = char(b[i] ^ (i % 3 == 0 ? 0xff : i % 3 == 1 ? 0x01 : 0x80));
      attempt(b);
    }
  }
}

TEST(Archives, ZipAndTarExtract) {
  NEED_FILES();
  const json& want = files().manifest["archives"];
  for (auto [name, fn] : {std::pair{"archive.zip", &zip_extract}, std::pair{"archive.tar", &tar_extract}}) {
    SCOPED_TRACE(name);
    auto got = fn(files().path(name));
    ASSERT_EQ(got.size(), want.size());
    for (auto& [k, w] : want.items()) {
      ASSERT_TRUE(got.contains(k)) << k;
      EXPECT_EQ(hex(bytes_of(got.at(k))), w.get<std::string>()) << k;
      EXPECT_EQ(got.at(k).dtype(), dtypes::uint8);
    }
  }
  expect_has(error_of([] { zip_extract(files().path("archive.tar")); }), {"zip_extract", "archive.tar", "no end of central directory"});
  expect_has(error_of([] { tar_extract(files().path("archive.zip")); }), {"tar_extract", "archive.zip", "not a tar archive"});
  std::string tmp = files().path("bad.tar"), t = read(files().path("archive.tar"));
  write(tmp, t.substr(0, 700));
  expect_has(error_of([&] { tar_extract(tmp); }), {"tar_extract", "runs past the end"});
  t[130] = '9';  // a size digit that is not octal breaks the header checksum
  write(tmp, t);
  expect_has(error_of([&] { tar_extract(tmp); }), {"tar_extract", "not a tar archive"});
}
