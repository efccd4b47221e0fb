#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "symbols/symbols.h"

namespace bpfscope::symbols {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/bpfscope_kallsyms_XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(KernelSymbols, ParsesTextSymbolsOnly) {
  TempFile f(
      "ffffffff81000000 T _stext\n"
      "ffffffff81000000 T _text\n"
      "ffffffff81000100 t helper\n"
      "ffffffff81000200 D some_data\n"
      "ffffffff81000300 T last_kernel\n"
      "ffffffff81000400 T final_sym\n"
      "ffffffffc0000000 t mod_func\t[mymod]\n"
      "ffffffffc0000100 T mod_end\t[mymod]\n");
  KernelSymbols k(f.path());
  EXPECT_EQ(k.size(), 7u);
  EXPECT_EQ(k.name(0xffffffff81000000), "_stext");  // first of several at one address
  EXPECT_EQ(k.name(0xffffffff81000104), "helper");
  EXPECT_EQ(k.name(0xffffffff81000204), "helper");  // data symbols are skipped
  EXPECT_EQ(k.with_offset(0xffffffff81000110), "helper+16");
  EXPECT_EQ(k.with_offset(0xffffffff81000100), "helper+0");
  EXPECT_EQ(k.name(0xffffffffc0000010), "mod_func");  // module suffix dropped
  EXPECT_EQ(k.address("mod_func"), 0xffffffffc0000000u);
  EXPECT_EQ(k.address("helper"), 0xffffffff81000100u);
  EXPECT_FALSE(k.address("some_data"));
  EXPECT_FALSE(k.address("nope"));
  EXPECT_FALSE(k.name(0x1234));
  EXPECT_EQ(k.with_offset(0x1234), "0x1234");
  EXPECT_EQ(k.with_offset(0), "0");
  EXPECT_EQ(k.name(0xffffffffc0000100), "mod_end");
  EXPECT_FALSE(k.name(0xffffffffc0000108));  // past the last symbol: unknown
}

TEST(KernelSymbols, MatchGlob) {
  TempFile f(
      "ffffffff81000000 T __pfx_do_read\n"
      "ffffffff81000010 T do_read\n"
      "ffffffff81000100 t do_write\n"
      "ffffffff81000200 D do_data\n"
      "ffffffff81000300 t do_read\n");
  KernelSymbols k(f.path());
  EXPECT_EQ(k.match("do_*"), (std::vector<std::string>{"do_read", "do_write"}));  // sorted, once, text only
  EXPECT_EQ(k.match("*read"), (std::vector<std::string>{"do_read"}));  // no __pfx_ padding
  EXPECT_TRUE(k.match("nothing*").empty());
}

// load_only() keeps only the symbols of the addresses asked for, and names
// them as the whole table does: ranges up to the next symbol, the first of
// several at one address, the out-of-order tail (BPF programs, trampolines),
// nothing before the first symbol or past the last one; another address
// loads the whole table.
TEST(KernelSymbols, LoadOnlyNamesAsTheWholeTable) {
  TempFile f(
      "ffffffff81000000 T _stext\n"
      "ffffffff81000000 T _text\n"
      "ffffffff810000f0 T __pfx_helper\n"
      "ffffffff81000100 t helper\n"
      "ffffffff81000200 D some_data\n"
      "ffffffff81000300 T last_kernel\n"
      "ffffffffc0203000 t ftrace_trampoline\t[__builtin__ftrace]\n"
      "ffffffffc0025b88 t bpf_prog_a_probe\t[bpf]\n"
      "ffffffffc0026d18 t bpf_prog_c\t[bpf]\n"
      "ffffffffc00269ec t bpf_prog_b\t[bpf]\n");
  const std::vector<uint64_t> addrs = {0x1234,           0xffffffff81000000, 0xffffffff810000f8, 0xffffffff81000110,
                                       0xffffffff81000204, 0xffffffff81000310, 0xffffffffc0025b90, 0xffffffffc0026a00,
                                       0xffffffffc0026d20, 0xffffffffc0203000, 0xffffffffc0203008};
  KernelSymbols whole(f.path()), only(f.path());
  ASSERT_TRUE(only.load_only(addrs));
  for (uint64_t a : addrs) {
    EXPECT_EQ(only.name(a), whole.name(a)) << std::hex << a;
    EXPECT_EQ(only.with_offset(a), whole.with_offset(a)) << std::hex << a;
  }
  EXPECT_EQ(only.with_offset(0xffffffff81000110), "helper+16");
  EXPECT_EQ(only.name(0xffffffffc0026a00), "bpf_prog_b");
  EXPECT_EQ(only.with_offset(0xffffffffc0203008), "0xffffffffc0203008");  // past the last symbol
  // Another address: the whole table, which a second load_only() leaves alone.
  EXPECT_EQ(only.with_offset(0xffffffff81000120), "helper+32");
  EXPECT_FALSE(only.load_only(addrs));
  EXPECT_EQ(only.size(), 8u);
}

TEST(KernelSymbols, MissingFileIsEmpty) {
  KernelSymbols k("/nonexistent/kallsyms");
  EXPECT_EQ(k.size(), 0u);
  EXPECT_FALSE(k.name(0xffffffff81000000));
  EXPECT_EQ(k.with_offset(0xffffffff81000000), "0xffffffff81000000");
}

TEST(KernelSymbols, RealKallsyms) {
  KernelSymbols k;
  if (k.size() == 0) GTEST_SKIP() << "/proc/kallsyms unreadable or addresses hidden";
  for (const char* sym : {"do_nanosleep", "schedule", "vfs_read"}) {
    auto addr = k.address(sym);
    ASSERT_TRUE(addr) << sym;
    EXPECT_EQ(k.name(*addr), sym);
    EXPECT_EQ(k.name(*addr + 0x10), sym);
    EXPECT_EQ(k.with_offset(*addr + 0x10), std::string(sym) + "+16");
    EXPECT_EQ(k.with_offset(*addr), std::string(sym) + "+0");
  }
  EXPECT_FALSE(k.name(0x1234));
  EXPECT_EQ(k.with_offset(0x1234), "0x1234");
}

}  // namespace
}  // namespace bpfscope::symbols
