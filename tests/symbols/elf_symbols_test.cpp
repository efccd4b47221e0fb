#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "symbols/symbols.h"
#include "test_util.h"

namespace bpfscope::symbols {
namespace {

using test::lines;
using test::run;
using test::words;

const std::string kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
const std::string kPython = "/usr/bin/python3.11";

// The vaddr of a defined dynamic symbol, from nm -D.
std::optional<uint64_t> nm_vaddr(const std::string& file, const std::string& sym) {
  auto out = run("nm -D --defined-only " + file);
  if (!out) return std::nullopt;
  for (const std::string& l : lines(*out)) {
    auto w = words(l);
    if (w.size() != 3) continue;
    std::string name = w[2].substr(0, w[2].find('@'));
    if (name == sym) return std::stoull(w[0], nullptr, 16);
  }
  return std::nullopt;
}

// vaddr -> file offset through the LOAD lines of readelf -lW.
std::optional<uint64_t> readelf_offset(const std::string& file, uint64_t vaddr) {
  auto out = run("readelf -lW " + file);
  if (!out) return std::nullopt;
  for (const std::string& l : lines(*out)) {
    auto w = words(l);
    if (w.size() < 6 || w[0] != "LOAD") continue;
    uint64_t off = std::stoull(w[1], nullptr, 16), va = std::stoull(w[2], nullptr, 16),
             memsz = std::stoull(w[5], nullptr, 16);
    if (vaddr >= va && vaddr < va + memsz) return vaddr - va + off;
  }
  return std::nullopt;
}

// The file offset of a section, from readelf -SW.
std::optional<std::pair<uint64_t, uint64_t>> readelf_section(const std::string& file,
                                                             const std::string& name) {
  auto out = run("readelf -SW " + file);
  if (!out) return std::nullopt;
  for (std::string l : lines(*out)) {
    auto b = l.find(']');
    if (b == std::string::npos) continue;
    auto w = words(l.substr(b + 1));
    if (w.size() >= 4 && w[0] == name) {
      return std::pair{std::stoull(w[2], nullptr, 16), std::stoull(w[3], nullptr, 16)};
    }
  }
  return std::nullopt;
}

void expect_offset_matches_tools(const ElfSymbols& elf, const std::string& file,
                                 const std::string& func) {
  auto va = nm_vaddr(file, func);
  ASSERT_TRUE(va) << func;
  EXPECT_EQ(elf.vaddr(func), *va);
  auto expected = readelf_offset(file, *va);
  ASSERT_TRUE(expected);
  EXPECT_EQ(elf.file_offset(func), *expected) << func;
}

// uaddr(): data objects resolve as well as functions, with their sizes.
TEST(ElfSymbols, LibcDataSymbol) {
  if (!test::have_tool("nm")) GTEST_SKIP() << "binutils missing";
  auto elf = ElfSymbols::load(kLibc);
  ASSERT_TRUE(elf) << elf.error();
  EXPECT_TRUE(elf->relocatable());
  auto va = nm_vaddr(kLibc, "program_invocation_name");
  ASSERT_TRUE(va);
  auto sym = elf->symbol("program_invocation_name");
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->vaddr, *va);
  EXPECT_EQ(sym->size, 8u);
  // Data symbols are not functions: they cannot be probed.
  EXPECT_FALSE(elf->vaddr("program_invocation_name"));
  auto fn = elf->symbol("getaddrinfo");
  ASSERT_TRUE(fn);
  EXPECT_EQ(fn->vaddr, nm_vaddr(kLibc, "getaddrinfo"));
  EXPECT_GT(fn->size, 0u);
  EXPECT_FALSE(elf->symbol("no_such_symbol_bpfscope"));
}

TEST(ElfSymbols, LibcGetaddrinfo) {
  if (!test::have_tool("nm") || !test::have_tool("readelf")) GTEST_SKIP() << "binutils missing";
  auto elf = ElfSymbols::load(kLibc);
  ASSERT_TRUE(elf) << elf.error();
  EXPECT_GT(elf->size(), 1000u);
  expect_offset_matches_tools(*elf, kLibc, "getaddrinfo");
  expect_offset_matches_tools(*elf, kLibc, "malloc");
  expect_offset_matches_tools(*elf, kLibc, "nanosleep");
  EXPECT_FALSE(elf->file_offset("no_such_function_bpfscope"));
}

TEST(ElfSymbols, ExecutableOffsetDiffersFromVaddr) {
  // python3.11 is ET_EXEC at 0x400000: vaddr and file offset differ.
  if (!test::have_tool("nm") || !test::have_tool("readelf")) GTEST_SKIP() << "binutils missing";
  auto elf = ElfSymbols::load(kPython);
  if (!elf) GTEST_SKIP() << elf.error();
  expect_offset_matches_tools(*elf, kPython, "Py_Initialize");
  EXPECT_NE(elf->vaddr("Py_Initialize"), elf->file_offset("Py_Initialize"));
}

TEST(ElfSymbols, Match) {
  auto elf = ElfSymbols::load(kLibc);
  ASSERT_TRUE(elf) << elf.error();
  auto m = elf->match("getaddrinf*");
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(std::find(m.begin(), m.end(), "getaddrinfo") != m.end());
  for (const auto& s : m) EXPECT_TRUE(s.starts_with("getaddrinf")) << s;
  EXPECT_TRUE(std::is_sorted(m.begin(), m.end()));
  EXPECT_EQ(elf->match("getaddrinfo"), std::vector<std::string>{"getaddrinfo"});
  EXPECT_TRUE(elf->match("zz_no_such_*").empty());
  auto q = elf->match("mallo?");
  EXPECT_TRUE(std::find(q.begin(), q.end(), "malloc") != q.end());
}

TEST(ElfSymbols, MatchCpp) {
  auto path = find_library("libstdc++.so.6");
  if (!path) GTEST_SKIP() << "no libstdc++";
  auto elf = ElfSymbols::load(*path);
  ASSERT_TRUE(elf) << elf.error();
  // By the demangled name without parameters.
  auto t = elf->match_cpp("std::terminate");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].first, "_ZSt9terminatev");
  EXPECT_EQ(t[0].second, "std::terminate()");
  // Globs see the whole qualified name; overloads all match.
  auto w = elf->match_cpp("std::__throw_out_of_range*");
  ASSERT_GE(w.size(), 2u);
  for (const auto& [mangled, demangled] : w) {
    EXPECT_TRUE(mangled.starts_with("_Z")) << mangled;
    EXPECT_TRUE(demangled.starts_with("std::__throw_out_of_range")) << demangled;
  }
  EXPECT_TRUE(elf->match_cpp("no_such_ns::f").empty());
  EXPECT_TRUE(elf->match_cpp("terminate").empty());  // the namespace is part of the name
}

TEST(ElfSymbols, NameAt) {
  auto elf = ElfSymbols::load(kLibc);
  ASSERT_TRUE(elf) << elf.error();
  auto va = elf->vaddr("getaddrinfo");
  ASSERT_TRUE(va);
  EXPECT_EQ(elf->name_at(*va), "getaddrinfo");
  EXPECT_EQ(elf->name_at(*va + 5), "getaddrinfo");
  EXPECT_EQ(elf->name_at_with_offset(*va + 5), "getaddrinfo+5");
  EXPECT_EQ(elf->name_at_with_offset(*va), "getaddrinfo+0");
  EXPECT_FALSE(elf->name_at(0x10));
  EXPECT_EQ(elf->name_at_with_offset(0x10), "0x10");
}

TEST(ElfSymbols, Errors) {
  EXPECT_FALSE(ElfSymbols::load("/nonexistent/file"));
  auto r = ElfSymbols::load("/etc/hostname");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not an ELF"), std::string::npos);
}

TEST(ElfSymbols, Cache) {
  auto a = cached_elf(kLibc);
  auto b = cached_elf(kLibc);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_FALSE(cached_elf("/nonexistent/file"));
}

TEST(ElfSymbols, UsdtPython) {
  auto elf = ElfSymbols::load(kPython);
  if (!elf) GTEST_SKIP() << elf.error();
  const auto& probes = elf->usdt();
  auto it = std::find_if(probes.begin(), probes.end(), [](const UsdtProbe& p) {
    return p.provider == "python" && p.name == "function__entry";
  });
  ASSERT_NE(it, probes.end());
  EXPECT_NE(it->semaphore, 0u);
  EXPECT_NE(it->semaphore_vaddr, 0u);
  EXPECT_NE(it->base, 0u);
  EXPECT_FALSE(it->args.empty());
  EXPECT_EQ(elf->vaddr_to_offset(it->pc_vaddr), it->pc);
  EXPECT_GE(probes.size(), 8u);
  for (const auto& p : probes) EXPECT_EQ(p.provider, "python");

  if (!test::have_tool("readelf")) return;
  // Compare against readelf -n: Location / Semaphore / Arguments.
  auto notes = run("readelf -n " + kPython);
  ASSERT_TRUE(notes);
  auto ls = lines(*notes);
  int seen = 0;
  for (size_t i = 0; i + 3 < ls.size(); ++i) {
    if (ls[i].find("Name: function__entry") == std::string::npos) continue;
    ++seen;
    const std::string& loc = ls[i + 1];
    auto num = [&](const std::string& key) {
      size_t p = loc.find(key);
      return std::stoull(loc.substr(p + key.size()), nullptr, 16);
    };
    EXPECT_EQ(it->pc_vaddr, num("Location: "));
    EXPECT_EQ(it->base, num("Base: "));
    EXPECT_EQ(it->semaphore_vaddr, num("Semaphore: "));
    EXPECT_EQ("    Arguments: " + it->args, ls[i + 2]);
    EXPECT_EQ(readelf_offset(kPython, it->pc_vaddr), it->pc);
  }
  EXPECT_EQ(seen, 1);
  // The semaphore lives in .probes: its file offset comes from that section.
  auto probes_sec = readelf_section(kPython, ".probes");
  ASSERT_TRUE(probes_sec);
  EXPECT_EQ(it->semaphore, it->semaphore_vaddr - probes_sec->first + probes_sec->second);
}

TEST(ElfSymbols, NoUsdtInLibc) {
  auto elf = ElfSymbols::load(kLibc);
  ASSERT_TRUE(elf) << elf.error();
  EXPECT_TRUE(elf->usdt().empty());
}

}  // namespace
}  // namespace bpfscope::symbols
