#include "util/build_id.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace tg {

namespace {

struct Search {
  uintptr_t addr;  // an address inside this library's code
  std::string id;
};

// the NT_GNU_BUILD_ID note of the object whose loaded segments contain s->addr
int find_note(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    mine = p.p_type == PT_LOAD && s->addr >= info->dlpi_addr + p.p_vaddr && s->addr < info->dlpi_addr + p.p_vaddr + p.p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_NOTE) continue;
    auto* at = reinterpret_cast<const uint8_t*>(info->dlpi_addr + p.p_vaddr);
    for (size_t off = 0; off + sizeof(ElfW(Nhdr)) <= p.p_memsz;) {
      ElfW(Nhdr) n;
      std::memcpy(&n, at + off, sizeof n);
      size_t name_at = off + sizeof n, desc_at = name_at + ((n.n_namesz + 3) & ~size_t(3));
      size_t next = desc_at + ((n.n_descsz + 3) & ~size_t(3));
      if (next > p.p_memsz) break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(at + name_at, "GNU", 4) == 0) {
        char hex[3];
        for (size_t b = 0; b < n.n_descsz; b++) std::snprintf(hex, sizeof hex, "%02x", at[desc_at + b]), s->id += hex;
        return 1;
      }
      off = next;
    }
  }
  return 1;  // this library's object, without a build-id
}

}  // namespace

const std::string& build_id() {
  static const std::string id = [] {
    Search s{reinterpret_cast<uintptr_t>(&find_note), {}};
    dl_iterate_phdr(find_note, &s);
    return s.id;
  }();
  return id;
}

}  // namespace tg
