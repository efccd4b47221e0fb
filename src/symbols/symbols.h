// Symbols: kernel symbols from /proc/kallsyms, ELF symbol tables of binaries
// and libraries (uprobe offsets, user stacks, USDT notes), library name
// resolution through ld.so.cache, C++ demangling. Depends on no other bpfscope
// stage.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bpfscope::symbols {

// Formats an address that no symbol covers, as ksym/usym and stacks print it:
// "0x1234" (and "0" for 0).
std::string hex_address(uint64_t addr);

// Text symbols (types t/T) of /proc/kallsyms, loaded on first use. Safe to
// share between threads, except load_only(), which is for an object one
// thread uses (the runtime's symbolizer). Kept compact (a kernel has ~120k of them): 12 bytes
// a symbol and its name in one blob of names, without the __pfx_ padding
// symbols (half of them; no stack frame is in one), and the index by name is
// made only when a name is looked up.
// The address of any kernel symbol, text or data ("avenrun"), read from
// /proc/kallsyms (kaddr()); nullopt when absent or hidden by kptr_restrict.
std::optional<uint64_t> kernel_symbol_address(std::string_view name, const std::string& path = "/proc/kallsyms");

class KernelSymbols {
 public:
  explicit KernelSymbols(std::string path = "/proc/kallsyms");

  // The symbol containing addr, without offset (ksym()).
  std::optional<std::string> name(uint64_t addr) const;
  // "sym+off" with a decimal offset as bpftrace stacks print ("do_nanosleep+16",
  // "do_nanosleep+0"), else hex_address(addr).
  std::string with_offset(uint64_t addr) const;
  // The address of a text symbol (the first one of that name).
  std::optional<uint64_t> address(std::string_view name) const;
  // Number of text symbols loaded (0 if the file is unreadable).
  size_t size() const;
  // Sorted, unique names matching a glob (*, ?, [..]), without the
  // __pfx_ padding symbols (-l kprobe:*).
  std::vector<std::string> match(std::string_view glob) const;
  // Reads /proc/kallsyms once keeping only the symbols that contain
  // `addrs` (the frames of every kernel stack a map holds), so that naming
  // them does not need the whole table in memory. A later lookup of another
  // address loads the whole table. Returns false (and does nothing) when the
  // table is already loaded or the file is not in address order.
  bool load_only(std::vector<uint64_t> addrs) const;

 private:
  // 12 bytes (packed: no padding after name).
  struct __attribute__((packed, aligned(4))) Sym {
    uint64_t addr;
    uint32_t name;  // offset of its NUL-terminated name in the blob (chunk << kChunkBits | offset)
  };
  static constexpr uint32_t kChunkBits = 18;  // 256 KiB chunks: the blob grows without copying
  void load() const;
  void index_names() const;
  const Sym* find(uint64_t addr) const;
  std::string_view name_of(const Sym& s) const;

  std::string path_;
  mutable std::once_flag once_, names_once_;
  mutable std::vector<Sym> syms_;                  // sorted by address (then file order)
  mutable std::vector<std::unique_ptr<char[]>> chunks_;  // the names
  mutable std::vector<uint32_t> by_name_;          // indexes into syms_, sorted by name (then address)
  // load_only(): the addresses asked for, sorted, and each one's symbol
  // (addr 0: none), while the whole table is not loaded.
  mutable std::vector<uint64_t> only_addrs_;
  mutable std::vector<std::pair<uint64_t, std::string>> only_syms_;
  mutable bool loaded_ = false;
};

// One SystemTap SDT probe from .note.stapsdt.
struct UsdtProbe {
  std::string provider;
  std::string name;
  uint64_t pc = 0;         // file offset of the probe site (the uprobe offset)
  uint64_t pc_vaddr = 0;   // its virtual address (adjusted by .stapsdt.base)
  uint64_t base = 0;       // the note's .stapsdt.base address
  uint64_t semaphore = 0;  // file offset of the semaphore (ref_ctr_offset), 0 if none
  uint64_t semaphore_vaddr = 0;
  std::string args;        // argument spec, e.g. "8@%rbp 8@%r12 -4@%eax"
};

// A defined symbol's virtual address and size (uaddr()).
struct SymbolInfo {
  uint64_t vaddr = 0;
  uint64_t size = 0;
};

// Function symbols (STT_FUNC/STT_GNU_IFUNC, defined) of .symtab and .dynsym of
// one ELF file, its data symbols (STT_OBJECT), PT_LOAD segments and USDT notes.
class ElfSymbols {
 public:
  static std::expected<ElfSymbols, std::string> load(const std::string& path);

  const std::string& path() const { return path_; }
  // The uprobe offset of func: its vaddr converted to a file offset through the
  // PT_LOAD segment containing it.
  std::optional<uint64_t> file_offset(std::string_view func) const;
  std::optional<uint64_t> vaddr(std::string_view func) const;
  // Converts a virtual address to a file offset (PT_LOAD segments).
  std::optional<uint64_t> vaddr_to_offset(uint64_t vaddr) const;
  // The reverse: the virtual address of a file offset inside a PT_LOAD
  // segment (user stacks: a mapping's file offset to a symbol address).
  std::optional<uint64_t> offset_to_vaddr(uint64_t offset) const;
  // Sorted, unique function names matching a glob (*, ?, [..]).
  std::vector<std::string> match(std::string_view glob) const;
  // C++ functions whose demangled name without its parameters ("ns::f" of
  // "ns::f(int)") matches a glob: {mangled, demangled} pairs, sorted by the
  // demangled name (uprobe:BIN:cpp:"ns::f" probes every overload).
  std::vector<std::pair<std::string, std::string>> match_cpp(std::string_view glob) const;
  // The function containing vaddr (for user stacks / usym()).
  std::optional<std::string> name_at(uint64_t vaddr) const;
  // "func+off" (decimal, as bpftrace stacks; "+0" included), else hex_address.
  std::string name_at_with_offset(uint64_t vaddr) const;
  const std::vector<UsdtProbe>& usdt() const { return usdt_; }
  // The libraries the file links against (DT_NEEDED), by name ("libc.so.6").
  const std::vector<std::string>& needed() const { return needed_; }
  size_t size() const { return funcs_.size(); }
  // A function or data object by name (uaddr("sym")).
  std::optional<SymbolInfo> symbol(std::string_view name) const;
  // ET_DYN (PIE executables, shared libraries): loaded at a base chosen at
  // run time, so a vaddr is relative to the object's load bias.
  bool relocatable() const { return relocatable_; }

 private:
  struct Func {
    uint64_t addr;
    uint64_t size;
    std::string name;
  };
  struct Segment {
    uint64_t vaddr, memsz, filesz, offset;
  };
  const Func* find(uint64_t vaddr) const;

  std::string path_;
  std::vector<Func> funcs_;  // sorted by address
  std::unordered_map<std::string, uint64_t> by_name_;
  std::vector<Segment> segments_;
  std::vector<UsdtProbe> usdt_;
  std::unordered_map<std::string, SymbolInfo> objects_;  // STT_OBJECT symbols by name
  std::vector<std::string> needed_;
  bool relocatable_ = false;
};

// A process-wide cache of loaded ELF files, keyed by path.
std::expected<std::shared_ptr<const ElfSymbols>, std::string> cached_elf(const std::string& path);

// A uprobe/usdt target: a path containing '/' if it exists; a program name
// found in PATH; a library name ("libc", "libc.so.6") from /etc/ld.so.cache.
std::optional<std::string> resolve_binary(std::string_view name);
// The files mapped executable by process pid (its /proc/PID/maps), each once,
// in map order: the program and its libraries, for usdt:* with -p. pid <= 0
// reads every process. Deleted files, anonymous and special mappings are left
// out; an unreadable maps file gives nothing.
std::vector<std::string> mapped_binaries(int pid);
// The ld.so.cache lookup alone (cache file configurable for tests).
std::optional<std::string> find_library(std::string_view name,
                                        const std::string& cache = "/etc/ld.so.cache");

// A program and the libraries it links against, transitively (DT_NEEDED
// through ld.so.cache): the files a process running it will map, known
// before it runs (usdt:* with -c). Libraries that cannot be found are left
// out.
std::vector<std::string> program_files(const std::string& program);

// Demangles an Itanium C++ name; returns the input when it is not mangled.
std::string demangle(std::string_view name);

}  // namespace bpfscope::symbols
