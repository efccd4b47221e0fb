// ElfSymbols: function symbols, PT_LOAD segments and USDT notes of an ELF file.
#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "symbols/symbols.h"

namespace bpfscope::symbols {
namespace {

constexpr uint32_t kNtStapsdt = 3;

// Closes the Elf handle and file descriptor on every path.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
  ~ElfFile() {
    if (elf) elf_end(elf);
    if (fd >= 0) close(fd);
  }
};

struct Section {
  std::string name;
  GElf_Shdr shdr;
  Elf_Scn* scn;
};

std::vector<Section> sections(Elf* elf) {
  std::vector<Section> out;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    out.push_back({name ? name : "", shdr, scn});
  }
  return out;
}

// Reads a note address field of 4 or 8 bytes in the file's byte order.
uint64_t read_addr(const unsigned char* p, size_t size, bool swap) {
  if (size == 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return swap ? std::byteswap(v) : v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? std::byteswap(v) : v;
}

std::string strip_version(const char* name) {
  std::string s(name);
  if (size_t at = s.find('@'); at != std::string::npos && at > 0) s.resize(at);
  return s;
}

}  // namespace

std::expected<ElfSymbols, std::string> ElfSymbols::load(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return std::unexpected("libelf initialisation failed");
  ElfFile f;
  f.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return std::unexpected(fmt::format("{}: {}", path, std::strerror(errno)));
  f.elf = elf_begin(f.fd, ELF_C_READ_MMAP, nullptr);
  if (!f.elf || elf_kind(f.elf) != ELF_K_ELF) {
    return std::unexpected(fmt::format("{}: not an ELF file", path));
  }
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(f.elf, &ehdr)) return std::unexpected(fmt::format("{}: bad ELF header", path));
  const bool swap = (ehdr.e_ident[EI_DATA] == ELFDATA2MSB) != (std::endian::native == std::endian::big);
  const size_t addr_size = gelf_getclass(f.elf) == ELFCLASS64 ? 8 : 4;

  ElfSymbols out;
  out.path_ = path;
  out.relocatable_ = ehdr.e_type == ET_DYN;

  size_t phnum = 0;
  if (elf_getphdrnum(f.elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(f.elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
        out.segments_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_filesz, ph.p_offset});
      }
    }
  }

  std::vector<Section> secs = sections(f.elf);
  for (const Section& s : secs) {
    if (s.shdr.sh_type != SHT_DYNAMIC || s.shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(s.scn, nullptr);
    for (size_t i = 0; data && i < s.shdr.sh_size / s.shdr.sh_entsize; ++i) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) break;
      if (dyn.d_tag != DT_NEEDED) continue;
      if (const char* name = elf_strptr(f.elf, s.shdr.sh_link, dyn.d_un.d_val)) out.needed_.push_back(name);
    }
  }
  // .symtab first so its (unversioned, complete) entries come before .dynsym's.
  for (Elf64_Word type : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (const Section& s : secs) {
      if (s.shdr.sh_type != type || s.shdr.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(s.scn, nullptr);
      if (!data) continue;
      size_t n = s.shdr.sh_size / s.shdr.sh_entsize;
      for (size_t i = 0; i < n; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        int st = GELF_ST_TYPE(sym.st_info);
        if (st != STT_FUNC && st != STT_GNU_IFUNC && st != STT_OBJECT) continue;
        if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
        const char* name = elf_strptr(f.elf, s.shdr.sh_link, sym.st_name);
        if (!name || !*name) continue;
        if (st == STT_OBJECT) {
          out.objects_.emplace(strip_version(name), SymbolInfo{sym.st_value, sym.st_size});
          continue;
        }
        out.funcs_.push_back({sym.st_value, sym.st_size, strip_version(name)});
      }
    }
  }
  std::stable_sort(out.funcs_.begin(), out.funcs_.end(),
                   [](const Func& a, const Func& b) { return a.addr < b.addr; });
  // Drop exact duplicates (the same symbol in .symtab and .dynsym).
  auto last = std::unique(out.funcs_.begin(), out.funcs_.end(), [](const Func& a, const Func& b) {
    return a.addr == b.addr && a.name == b.name;
  });
  out.funcs_.erase(last, out.funcs_.end());
  for (const Func& fn : out.funcs_) out.by_name_.emplace(fn.name, fn.addr);

  // USDT: .note.stapsdt, adjusted by the actual .stapsdt.base address (prelink).
  std::optional<uint64_t> sdt_base;
  for (const Section& s : secs) {
    if (s.name == ".stapsdt.base") sdt_base = s.shdr.sh_addr;
  }
  auto section_offset = [&](uint64_t addr) -> std::optional<uint64_t> {
    for (const Section& s : secs) {
      const GElf_Shdr& h = s.shdr;
      if (!(h.sh_flags & SHF_ALLOC) || h.sh_type == SHT_NOBITS) continue;
      if (addr >= h.sh_addr && addr < h.sh_addr + h.sh_size) return addr - h.sh_addr + h.sh_offset;
    }
    return std::nullopt;
  };
  for (const Section& s : secs) {
    if (s.shdr.sh_type != SHT_NOTE || s.name != ".note.stapsdt") continue;
    Elf_Data* data = elf_getdata(s.scn, nullptr);
    if (!data) continue;
    size_t off = 0, name_off = 0, desc_off = 0;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) != 0) {
      const auto* bytes = static_cast<const unsigned char*>(data->d_buf);
      if (nh.n_type != kNtStapsdt || nh.n_namesz != sizeof("stapsdt") ||
          std::memcmp(bytes + name_off, "stapsdt", sizeof("stapsdt")) != 0 ||
          nh.n_descsz < 3 * addr_size) {
        continue;
      }
      const unsigned char* desc = bytes + desc_off;
      UsdtProbe p;
      p.pc_vaddr = read_addr(desc, addr_size, swap);
      p.base = read_addr(desc + addr_size, addr_size, swap);
      p.semaphore_vaddr = read_addr(desc + 2 * addr_size, addr_size, swap);
      if (sdt_base && p.base != 0) p.pc_vaddr += *sdt_base - p.base;
      // Three NUL-terminated strings follow: provider, name, arguments.
      const char* str = reinterpret_cast<const char*>(desc + 3 * addr_size);
      const char* end = reinterpret_cast<const char*>(desc + nh.n_descsz);
      std::string* fields[] = {&p.provider, &p.name, &p.args};
      for (std::string* field : fields) {
        if (str >= end) break;
        const char* z = static_cast<const char*>(std::memchr(str, '\0', end - str));
        if (!z) z = end;
        field->assign(str, z);
        str = z + 1;
      }
      p.pc = out.vaddr_to_offset(p.pc_vaddr).value_or(p.pc_vaddr);
      if (p.semaphore_vaddr != 0) {
        auto sem = section_offset(p.semaphore_vaddr);
        if (!sem) sem = out.vaddr_to_offset(p.semaphore_vaddr);
        p.semaphore = sem.value_or(p.semaphore_vaddr);
      }
      out.usdt_.push_back(std::move(p));
    }
  }
  return out;
}

std::optional<uint64_t> ElfSymbols::offset_to_vaddr(uint64_t offset) const {
  for (const Segment& s : segments_)
    if (offset >= s.offset && offset < s.offset + s.filesz) return offset - s.offset + s.vaddr;
  return std::nullopt;
}

std::optional<uint64_t> ElfSymbols::vaddr_to_offset(uint64_t vaddr) const {
  for (const Segment& s : segments_) {
    if (vaddr >= s.vaddr && vaddr < s.vaddr + s.memsz) return vaddr - s.vaddr + s.offset;
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfSymbols::vaddr(std::string_view func) const {
  auto it = by_name_.find(std::string(func));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<SymbolInfo> ElfSymbols::symbol(std::string_view name) const {
  std::string key(name);
  if (auto it = objects_.find(key); it != objects_.end()) return it->second;
  auto it = by_name_.find(key);
  if (it == by_name_.end()) return std::nullopt;
  const Func* f = find(it->second);
  return SymbolInfo{it->second, f && f->addr == it->second ? f->size : 0};
}

std::optional<uint64_t> ElfSymbols::file_offset(std::string_view func) const {
  auto v = vaddr(func);
  if (!v) return std::nullopt;
  return vaddr_to_offset(*v);
}

std::vector<std::string> ElfSymbols::match(std::string_view glob) const {
  std::string pattern(glob);
  std::vector<std::string> out;
  for (const auto& [name, addr] : by_name_) {
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::string, std::string>> ElfSymbols::match_cpp(std::string_view glob) const {
  std::string pattern(glob);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, addr] : by_name_) {
    if (!name.starts_with("_Z")) continue;
    std::string full = demangle(name);
    if (full == name) continue;
    // The name ends where the parameter list starts: the first '(' outside
    // template arguments that does not belong to an operator() name.
    std::string base = full;
    int depth = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      char c = full[i];
      if (c == '<') ++depth;
      else if (c == '>' && depth > 0) --depth;
      else if (c == '(' && depth == 0 && !std::string_view(full).substr(0, i).ends_with("operator")) {
        base = full.substr(0, i);
        break;
      }
    }
    if (fnmatch(pattern.c_str(), base.c_str(), 0) == 0) out.emplace_back(name, std::move(full));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

const ElfSymbols::Func* ElfSymbols::find(uint64_t vaddr) const {
  auto it = std::upper_bound(funcs_.begin(), funcs_.end(), vaddr,
                             [](uint64_t a, const Func& f) { return a < f.addr; });
  if (it == funcs_.begin()) return nullptr;
  --it;
  // Of the symbols at the nearest address at or below vaddr, take the first
  // that contains it (a size-0 symbol covers only its own address).
  auto first = it;
  while (first != funcs_.begin() && (first - 1)->addr == it->addr) --first;
  for (auto f = first; f <= it; ++f) {
    if (vaddr < f->addr + std::max<uint64_t>(f->size, 1)) return &*f;
  }
  return nullptr;
}

std::optional<std::string> ElfSymbols::name_at(uint64_t vaddr) const {
  const Func* f = find(vaddr);
  if (!f) return std::nullopt;
  return f->name;
}

std::string ElfSymbols::name_at_with_offset(uint64_t vaddr) const {
  const Func* f = find(vaddr);
  if (!f) return hex_address(vaddr);
  return fmt::format("{}+{}", f->name, vaddr - f->addr);
}

std::expected<std::shared_ptr<const ElfSymbols>, std::string> cached_elf(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const ElfSymbols>> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  auto loaded = ElfSymbols::load(path);
  if (!loaded) return std::unexpected(loaded.error());
  auto ptr = std::make_shared<const ElfSymbols>(std::move(*loaded));
  cache.emplace(path, ptr);
  return ptr;
}

}  // namespace bpfscope::symbols
