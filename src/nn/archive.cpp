// zip (APPNOTE.TXT 6.3: end of central directory, zip64 locator and extra field, central and local headers) and tar
// (POSIX ustar with GNU 'L' and pax 'x' long names, base-256 sizes) member tables.
#include "nn/archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "tg/error.h"

namespace tg::nn::archive {

namespace {

uint64_t le(std::span<const uint8_t> b, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | b[at + uint64_t(i)];
  return v;
}

}  // namespace

// ***** 1. zip *****

bool is_zip(std::span<const uint8_t> b) {
  if (b.size() < 22) return false;
  for (uint64_t i = b.size() - 22;; i--) {
    if (le(b, i, 4) == 0x06054b50) return true;
    if (i == 0 || b.size() - i > 22 + 65535) return false;
  }
}

std::vector<Member> zip_members(std::span<const uint8_t> b, const std::string& what) {
  auto bad = [&](const std::string& why) { return Error(what + ": corrupt zip archive: " + why); };
  uint64_t n = b.size();
  auto need = [&](uint64_t at, uint64_t len, const char* part) {
    if (at > n || len > n - at) throw bad(std::string(part) + " runs past the end of the file (" + std::to_string(n) + " bytes)");
  };
  // the end of central directory record is the last 22 bytes plus a comment of up to 64KiB
  uint64_t eocd = UINT64_MAX;
  for (uint64_t i = n >= 22 ? n - 22 : 0; n >= 22; i--) {
    if (le(b, i, 4) == 0x06054b50) { eocd = i; break; }
    if (i == 0 || n - i > 22 + 65535) break;
  }
  if (eocd == UINT64_MAX) throw bad("no end of central directory record");
  uint64_t count = le(b, eocd + 10, 2), cd_size = le(b, eocd + 12, 4), cd_off = le(b, eocd + 16, 4);
  if (le(b, eocd + 4, 2) != 0 || le(b, eocd + 6, 2) != 0) throw bad("multi-disk archives are not supported");
  if ((count == 0xffff || cd_size == 0xffffffff || cd_off == 0xffffffff) && eocd >= 20 && le(b, eocd - 20, 4) == 0x07064b50) {
    uint64_t z = le(b, eocd - 12, 8);
    need(z, 56, "zip64 end of central directory");
    if (le(b, z, 4) != 0x06064b50) throw bad("bad zip64 end of central directory signature");
    count = le(b, z + 32, 8), cd_size = le(b, z + 40, 8), cd_off = le(b, z + 48, 8);
  }
  need(cd_off, cd_size, "central directory");
  if (count > cd_size / 46) throw bad(std::to_string(count) + " entries do not fit a central directory of " + std::to_string(cd_size) + " bytes");
  std::vector<Member> ret;
  uint64_t p = cd_off, end = cd_off + cd_size;
  for (uint64_t e = 0; e < count; e++) {
    if (p > end || end - p < 46) throw bad("central directory entry " + std::to_string(e) + " is truncated");
    if (le(b, p, 4) != 0x02014b50) throw bad("bad central directory signature at byte " + std::to_string(p));
    uint64_t flags = le(b, p + 8, 2), method = le(b, p + 10, 2), csize = le(b, p + 20, 4), usize = le(b, p + 24, 4);
    uint64_t nlen = le(b, p + 28, 2), xlen = le(b, p + 30, 2), clen = le(b, p + 32, 2), hoff = le(b, p + 42, 4);
    if (end - p - 46 < nlen + xlen + clen) throw bad("central directory entry " + std::to_string(e) + " is truncated");
    Member m;
    m.name.assign(reinterpret_cast<const char*>(b.data() + p + 46), nlen);
    // zip64 extra field: the 64-bit values of whichever 32-bit fields are saturated, in this order
    for (uint64_t x = p + 46 + nlen, xe = x + xlen; x + 4 <= xe;) {
      uint64_t id = le(b, x, 2), sz = le(b, x + 2, 2), q = x + 4;
      if (sz > xe - q) throw bad("extra field of \"" + m.name + "\" is truncated");
      if (id == 1) {
        for (uint64_t* f : {&usize, &csize, &hoff})
          if (*f == 0xffffffff) {
            if (q + 8 > x + 4 + sz) throw bad("zip64 extra field of \"" + m.name + "\" is truncated");
            *f = le(b, q, 8), q += 8;
          }
      }
      x += 4 + sz;
    }
    if (flags & 1) throw bad("\"" + m.name + "\" is encrypted");
    if (method != 0 && method != 8) throw Error(what + ": zip member \"" + m.name + "\" uses compression method " + std::to_string(method) + ", only stored (0) and deflated (8) are supported");
    need(hoff, 30, "local header");
    if (le(b, hoff, 4) != 0x04034b50) throw bad("bad local header signature for \"" + m.name + "\"");
    // the local header's name and extra lengths may differ from the central directory's (torch pads with extra bytes)
    m.offset = hoff + 30 + le(b, hoff + 26, 2) + le(b, hoff + 28, 2);
    m.size = csize, m.usize = usize, m.deflated = method == 8;
    need(m.offset, m.size, ("data of \"" + m.name + "\"").c_str());
    if (!m.deflated && m.size != m.usize) throw bad("stored member \"" + m.name + "\" has different compressed and uncompressed sizes");
    // deflate cannot shrink data more than about 1032:1, so a larger claim is corrupt (and would allocate a lot)
    if (m.deflated && m.usize / 1032 > m.size + 1) throw bad("deflated member \"" + m.name + "\" claims " + std::to_string(m.usize) + " bytes from " + std::to_string(m.size));
    ret.push_back(std::move(m));
    p += 46 + nlen + xlen + clen;
  }
  return ret;
}

std::vector<uint8_t> inflate(std::span<const uint8_t> b, const Member& m, const std::string& what) {
  std::vector<uint8_t> out(m.usize + 1);  // one byte of room past the claimed size, so a longer stream is caught
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) throw Error(what + ": zlib inflateInit2 failed");
  z.next_in = const_cast<Bytef*>(b.data() + m.offset);
  z.next_out = out.data();
  uint64_t in_left = m.size, out_left = out.size();
  int rc = Z_OK;
  while (rc == Z_OK) {  // zlib counts in 32 bits: feed at most 1GiB at a time
    uInt ci = uInt(std::min<uint64_t>(in_left, 1u << 30)), co = uInt(std::min<uint64_t>(out_left, 1u << 30));
    z.avail_in = ci, z.avail_out = co;
    rc = ::inflate(&z, Z_NO_FLUSH);
    in_left -= ci - z.avail_in, out_left -= co - z.avail_out;
    if (rc == Z_OK && ci == z.avail_in && co == z.avail_out) break;  // no progress: input or output exhausted
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out_left != 1)
    throw Error(what + ": zip member \"" + m.name + "\" does not inflate to its " + std::to_string(m.usize) + " bytes (corrupt deflate data)");
  out.pop_back();
  return out;
}

// ***** 2. tar *****

namespace {

// a numeric header field: octal text, or base-256 when the top bit of the first byte is set
bool tar_num(const uint8_t* f, int len, uint64_t& v) {
  v = 0;
  if (f[0] & 0x80) {
    if (f[0] != 0x80) return false;
    for (int i = 1; i < len; i++) {
      if (v >> 56) return false;
      v = v << 8 | f[i];
    }
    return true;
  }
  int i = 0;
  while (i < len && f[i] == ' ') i++;
  bool any = false;
  for (; i < len && f[i] >= '0' && f[i] <= '7'; i++, any = true) {
    if (v >> 60) return false;
    v = v << 3 | uint64_t(f[i] - '0');
  }
  for (; i < len; i++)
    if (f[i] != ' ' && f[i] != 0) return false;
  return any;
}
bool tar_checksum_ok(const uint8_t* h) {
  uint64_t want;
  if (!tar_num(h + 148, 8, want)) return false;
  uint64_t sum = 0;
  for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  return sum == want;
}
std::string cstr(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), strnlen(reinterpret_cast<const char*>(p), n)); }

}  // namespace

bool is_tar(std::span<const uint8_t> b) { return b.size() >= 512 && tar_checksum_ok(b.data()); }

std::vector<Member> tar_members(std::span<const uint8_t> b, const std::string& what) {
  auto bad = [&](const std::string& why) { return Error(what + ": corrupt tar archive: " + why); };
  std::vector<Member> ret;
  std::string long_name;
  for (uint64_t p = 0; p < b.size();) {
    if (b.size() - p < 512) throw bad("truncated header at byte " + std::to_string(p));
    const uint8_t* h = b.data() + p;
    if (std::all_of(h, h + 512, [](uint8_t c) { return c == 0; })) break;  // end of archive
    if (!tar_checksum_ok(h)) throw bad("bad header checksum at byte " + std::to_string(p));
    uint64_t size;
    if (!tar_num(h + 124, 12, size)) throw bad("bad size field at byte " + std::to_string(p));
    uint64_t data = p + 512;
    if (size > b.size() - data || (size + 511) / 512 * 512 > b.size() - data) throw bad("member at byte " + std::to_string(p) + " runs past the end of the file");
    char type = char(h[156]);
    std::string name = cstr(h, 100);
    if (std::memcmp(h + 257, "ustar", 5) == 0 && h[345]) name = cstr(h + 345, 155) + "/" + name;
    if (!long_name.empty()) name = std::move(long_name), long_name.clear();
    if (type == 'L') {
      long_name = cstr(b.data() + data, size);
    } else if (type == 'x') {
      // pax records "LEN key=value\n"; only the path matters here
      for (uint64_t q = data, e = data + size; q < e;) {
        uint64_t len = 0, s = q;
        while (s < e && b[s] >= '0' && b[s] <= '9' && len <= size) len = len * 10 + (b[s++] - '0');
        if (s >= e || b[s] != ' ' || len < s - q + 2 || len > e - q) throw bad("bad pax record at byte " + std::to_string(q));
        std::string rec(reinterpret_cast<const char*>(b.data() + s + 1), q + len - s - 2);
        if (rec.rfind("path=", 0) == 0) long_name = rec.substr(5);
        q += len;
      }
    } else if (type == '0' || type == '\0' || type == '7') {
      ret.push_back({name, data, size, size, false});
    }
    p = data + (size + 511) / 512 * 512;
  }
  return ret;
}

}  // namespace tg::nn::archive
