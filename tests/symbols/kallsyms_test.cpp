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
