#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "symbols/symbols.h"

namespace bpfscope::symbols {
namespace {

TEST(Demangle, CxxNames) {
  EXPECT_EQ(demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)");
  EXPECT_EQ(demangle("malloc"), "malloc");
  EXPECT_EQ(demangle("_Znotvalid!"), "_Znotvalid!");
  EXPECT_EQ(demangle(""), "");
}

TEST(HexAddress, Format) {
  EXPECT_EQ(hex_address(0x1234), "0x1234");
  EXPECT_EQ(hex_address(0), "0");
  EXPECT_EQ(hex_address(0x7f1300000000), "0x7f1300000000");
}

// A program's files before it runs: itself, then the libraries it links
// against, transitively, each once.
TEST(ProgramFiles, ProgramAndItsLibraries) {
  auto sh = resolve_binary("sh");
  ASSERT_TRUE(sh.has_value());
  auto files = program_files(*sh);
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files[0], *sh);
  auto libc = find_library("libc.so.6");
  ASSERT_TRUE(libc.has_value());
  EXPECT_EQ(std::count(files.begin(), files.end(), *libc), 1);
  EXPECT_EQ(program_files("/no/such/program"), std::vector<std::string>{"/no/such/program"});
}

TEST(ResolveBinary, Libraries) {
  auto libc = resolve_binary("libc");
  ASSERT_TRUE(libc);
  EXPECT_EQ(*libc, "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(resolve_binary("libc.so.6"), "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(find_library("libc.so"), "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(find_library("libcap"), "/lib/x86_64-linux-gnu/libcap.so.2");
  auto py = find_library("libpython3.11");
  ASSERT_TRUE(py);
  EXPECT_TRUE(py->starts_with("/lib/x86_64-linux-gnu/libpython3.11.so")) << *py;
  EXPECT_FALSE(find_library("libdoesnotexist_bpfscope"));
  EXPECT_FALSE(find_library("libc", "/nonexistent/ld.so.cache"));
}

TEST(ResolveBinary, PathsAndPrograms) {
  EXPECT_EQ(resolve_binary("/lib/x86_64-linux-gnu/libc.so.6"), "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_FALSE(resolve_binary("/nonexistent/bin"));
  EXPECT_FALSE(resolve_binary("/tmp"));  // a directory
  EXPECT_FALSE(resolve_binary(""));
  auto sh = resolve_binary("sh");
  ASSERT_TRUE(sh);
  EXPECT_TRUE(sh->ends_with("/sh")) << *sh;
  EXPECT_FALSE(resolve_binary("no_such_program_bpfscope"));
}

TEST(MappedBinaries, OwnProcess) {
  auto files = mapped_binaries(getpid());
  ASSERT_FALSE(files.empty());
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = 0;
  EXPECT_EQ(files[0], self);  // the program is mapped first
  bool libc = false;
  for (const auto& f : files) {
    EXPECT_TRUE(f.starts_with("/")) << f;
    libc = libc || f.find("libc.so") != std::string::npos;
  }
  EXPECT_TRUE(libc);
  auto sorted = files;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());  // each once
  EXPECT_TRUE(mapped_binaries(999999999).empty());
  // Every process: a superset that includes this one's files.
  auto all = mapped_binaries(-1);
  EXPECT_NE(std::find(all.begin(), all.end(), files[0]), all.end());
}

}  // namespace
}  // namespace bpfscope::symbols
