#pragma once
// Member tables of zip and tar archives read from a byte span (tinygrad's zip_extract / tar_extract use Python's
// zipfile and tarfile for this). Nothing here touches Tensors, so tests/tools/fuzz can drive it directly.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tg::nn::archive {

struct Member {
  std::string name;
  uint64_t offset = 0, size = 0;  // where the stored bytes are in the archive
  uint64_t usize = 0;             // size once inflated (== size when stored)
  bool deflated = false;
};

// zip: the central directory (zip64 included) and each local header's name and extra lengths. Only stored and deflated
// members; throws tg::Error naming `what` and the problem on anything corrupt, truncated or unsupported
bool is_zip(std::span<const uint8_t> b);
std::vector<Member> zip_members(std::span<const uint8_t> b, const std::string& what);
// the bytes of a deflated member (raw deflate), checked to be exactly m.usize long
std::vector<uint8_t> inflate(std::span<const uint8_t> b, const Member& m, const std::string& what);

// tar (ustar, GNU and pax long names): regular files only, as tinygrad's tar_extract
bool is_tar(std::span<const uint8_t> b);
std::vector<Member> tar_members(std::span<const uint8_t> b, const std::string& what);

}  // namespace tg::nn::archive
