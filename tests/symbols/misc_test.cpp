#include <gtest/gtest.h>

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

}  // namespace
}  // namespace bpfscope::symbols
