// resolve_binary: uprobe/usdt targets by path, PATH lookup or ld.so.cache;
// mapped_binaries: the files a process maps.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "symbols/symbols.h"

namespace bpfscope::symbols {
namespace {

// glibc's new cache format (glibc-ld.so.cache1.1), see elf/cache.c.
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr size_t kHeaderSize = 48;  // magic+version 20, nlibs, len_strings, flags[4], ext, unused[3]
constexpr size_t kEntrySize = 24;   // flags, key, value, osversion, hwcap
constexpr int32_t kFlagTypeMask = 0x00ff;
constexpr int32_t kFlagElfLibc6 = 0x0003;
constexpr int32_t kFlagArchMask = 0xff00;
constexpr uint64_t kHwcapExtension = 1ULL << 62;

#if defined(__x86_64__)
constexpr int32_t kArch = 0x0300;  // FLAG_X8664_LIB64
#elif defined(__aarch64__)
constexpr int32_t kArch = 0x0a00;  // FLAG_AARCH64_LIB64
#else
constexpr int32_t kArch = -1;      // accept any
#endif

bool is_regular_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

template <typename T>
T read_at(const std::string& buf, size_t off) {
  T v;
  std::memcpy(&v, buf.data() + off, sizeof v);
  return v;
}

// "libc" matches "libc.so.6"; "libc.so.6" matches itself; "libc.so" matches
// "libc.so.6" too.
bool library_matches(std::string_view key, std::string_view name) {
  if (key == name) return true;
  if (name.find(".so") == std::string_view::npos) {
    return key.starts_with(name) && key.substr(name.size()).starts_with(".so");
  }
  return key.starts_with(name) && key.substr(name.size()).starts_with(".");
}

// Appends the executable file mappings of one process to out (each once).
void add_mapped_binaries(int pid, std::vector<std::string>& out, std::set<std::string>& seen) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(f, line)) {
    // start-end perms offset dev inode path
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%*x-%*x %7s %*x %*s %*s %n", perms, &path_at) < 1 || perms[2] != 'x') continue;
    if (path_at <= 0 || static_cast<size_t>(path_at) >= line.size()) continue;
    std::string path = line.substr(path_at);
    if (!path.starts_with("/") || path.ends_with(" (deleted)")) continue;
    if (seen.insert(path).second && is_regular_file(path)) out.push_back(path);
  }
}

}  // namespace

std::vector<std::string> mapped_binaries(int pid) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  if (pid > 0) {
    add_mapped_binaries(pid, out, seen);
    return out;
  }
  DIR* dir = opendir("/proc");
  if (!dir) return out;
  std::vector<int> pids;
  while (dirent* e = readdir(dir)) {
    if (std::all_of(e->d_name, e->d_name + strlen(e->d_name), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      pids.push_back(std::atoi(e->d_name));
  }
  closedir(dir);
  std::sort(pids.begin(), pids.end());
  for (int p : pids) add_mapped_binaries(p, out, seen);
  return out;
}

std::optional<std::string> find_library(std::string_view name, const std::string& cache) {
  std::ifstream in(cache, std::ios::binary);
  if (!in) return std::nullopt;
  std::string buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The new format stands alone or follows an old-format (ld.so-1.7.0) table.
  size_t base = buf.find(kNewMagic);
  if (base == std::string::npos || buf.size() < base + kHeaderSize) return std::nullopt;
  uint32_t nlibs = read_at<uint32_t>(buf, base + 20);
  if (nlibs > (buf.size() - base - kHeaderSize) / kEntrySize) return std::nullopt;
  // String offsets are relative to the new header.
  auto str = [&](uint32_t off) -> std::optional<std::string_view> {
    if (static_cast<size_t>(off) + base >= buf.size()) return std::nullopt;
    const char* p = buf.data() + base + off;
    size_t max = buf.size() - base - off;
    size_t len = strnlen(p, max);
    if (len == max) return std::nullopt;
    return std::string_view(p, len);
  };
  std::optional<std::string> fallback;
  for (uint32_t i = 0; i < nlibs; ++i) {
    size_t e = base + kHeaderSize + static_cast<size_t>(i) * kEntrySize;
    int32_t flags = read_at<int32_t>(buf, e);
    uint32_t key = read_at<uint32_t>(buf, e + 4);
    uint32_t value = read_at<uint32_t>(buf, e + 8);
    uint64_t hwcap = read_at<uint64_t>(buf, e + 16);
    if ((flags & kFlagTypeMask) != kFlagElfLibc6) continue;
    if (kArch != -1 && (flags & kFlagArchMask) != kArch) continue;
    auto k = str(key);
    auto v = str(value);
    if (!k || !v || !library_matches(*k, name)) continue;
    // Prefer the plain entry to glibc-hwcaps subdirectory variants.
    if (hwcap & kHwcapExtension) {
      if (!fallback) fallback = std::string(*v);
      continue;
    }
    return std::string(*v);
  }
  return fallback;
}

std::optional<std::string> resolve_binary(std::string_view name) {
  if (name.empty()) return std::nullopt;
  std::string n(name);
  if (n.find('/') != std::string::npos) {
    if (is_regular_file(n)) return n;
    return std::nullopt;
  }
  if (const char* path = getenv("PATH")) {
    std::string_view rest(path);
    while (true) {
      size_t colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      if (dir.empty()) dir = ".";
      std::string candidate = dir + "/" + n;
      if (is_regular_file(candidate) && access(candidate.c_str(), X_OK) == 0) return candidate;
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return find_library(name);
}

std::vector<std::string> program_files(const std::string& program) {
  std::vector<std::string> out{program};
  std::set<std::string> seen{program};
  for (size_t i = 0; i < out.size(); ++i) {
    auto elf = cached_elf(out[i]);
    if (!elf) continue;
    for (const auto& name : (*elf)->needed()) {
      auto path = find_library(name);
      if (path && seen.insert(*path).second) out.push_back(*path);
    }
  }
  return out;
}

}  // namespace bpfscope::symbols
