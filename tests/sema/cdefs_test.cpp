// C definitions written in a script: layout (sizes, offsets, bitfields,
// alignment), shadowing of kernel types, enum values and located errors.
#include <gtest/gtest.h>

#include <string>

#include "lang/lang.h"
#include "sema/cdefs.h"

namespace bpfscope::sema {
namespace {

struct Defined {
  std::unique_ptr<bpf::Btf> btf = std::make_unique<bpf::Btf>();
  bool ok = false;
  std::string diags;
};

// The definitions followed by a trivial probe, added to a fresh vmlinux Btf.
Defined define(const std::string& defs) {
  Defined out;
  lang::Source src("stdin", defs + "\nBEGIN { exit(); }\n");
  lang::Diagnostics diags;
  auto parsed = lang::parse(src, diags);
  if (!parsed) {
    out.diags = diags.render(src);
    return out;
  }
  out.ok = add_c_definitions(*parsed, *out.btf, diags);
  out.diags = diags.render(src);
  return out;
}

// "name@byte_offset" or "name@bit_offset:bits" for each member, with the size.
std::string layout(const bpf::Btf& btf, const std::string& name) {
  auto id = btf.find_type(name);
  if (!id) return "<no " + name + ">";
  std::string s = "size=" + std::to_string(btf.size_of(*id).value_or(0));
  for (const auto& m : btf.members(*id)) {
    s += " " + m.name + "@";
    s += m.bitfield_size ? std::to_string(m.bit_offset) + ":" + std::to_string(m.bitfield_size)
                         : std::to_string(m.bit_offset / 8);
  }
  return s;
}

class CDefsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bpf::Btf().load()) GTEST_SKIP() << "no kernel BTF";
  }
};

TEST_F(CDefsTest, Layouts) {
  struct Case {
    std::string defs, type, want;
  };
  const Case cases[] = {
      {"struct foo { int a; char name[16]; struct foo *next; unsigned long x[4]; };", "struct foo",
       "size=64 a@0 name@4 next@24 x@32"},
      {"struct a { char c; short s; char d; long l; char e; }", "struct a", "size=24 c@0 s@2 d@4 l@8 e@16"},
      {"struct p { char c; int i; } __attribute__((packed));", "struct p", "size=5 c@0 i@1"},
      {"struct __attribute__((packed)) p { char c; u64 i; };", "struct p", "size=9 c@0 i@1"},
      {"struct al { char c; } __attribute__((aligned(8)));", "struct al", "size=8 c@0"},
      {"union u { char b[3]; int i; unsigned long long l; };", "union u", "size=8 b@0 i@0 l@0"},
      {"struct bf { unsigned int a : 3; unsigned int b : 30; unsigned char c; int : 0; char d; };", "struct bf",
       "size=16 a@0:3 b@32:30 c@8 d@12"},
      {"struct an { int x; union { int i; char c[8]; }; struct { short s1, s2; }; int y; };", "struct an",
       "size=20 x@0 i@4 c@4 s1@12 s2@14 y@16"},
      {"struct nest { struct inner { char a; long b; } in; struct inner *pin; };", "struct nest", "size=24 in@0 pin@16"},
      {"struct nest { struct inner { char a; long b; } in; };", "struct inner", "size=16 a@0 b@8"},
      {"struct k { struct list_head head; u32 v; __u8 b; s64 t; uint16_t w; };", "struct k",
       "size=40 head@0 v@16 b@20 t@24 w@32"},
      {"struct k { struct sock *sk; sector_t s; enum color { RED, GREEN } c; };", "struct k", "size=24 sk@0 s@8 c@16"},
      {"struct fp { void (*fn)(int, char *); char flex[]; };", "struct fp", "size=8 fn@0 flex@8"},
      {"struct m { int a[2][3]; const char *const p; volatile long v; _Bool b; };", "struct m",
       "size=48 a@0 p@24 v@32 b@40"},
      {"struct fwd { struct later *l; }; struct later { int x; };", "struct later", "size=4 x@0"},
      // The last member's ';' may be left out.
      {"struct A { int32_t a; int32_t b; char c[28] };", "struct A", "size=36 a@0 b@4 c@8"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.defs);
    auto d = define(c.defs);
    ASSERT_TRUE(d.ok) << d.diags;
    EXPECT_EQ(layout(*d.btf, c.type), c.want);
  }
}

TEST_F(CDefsTest, ScriptStructShadowsTheKernels) {
  auto d = define("struct sock { int mine; };");
  ASSERT_TRUE(d.ok) << d.diags;
  EXPECT_EQ(layout(*d.btf, "struct sock"), "size=4 mine@0");
  // Kernel types still resolve, and pointers to the script's struct are typed.
  EXPECT_TRUE(d.btf->find_struct("task_struct").has_value());
  auto fwd = define("struct fwd { struct later *l; }; struct later { int x; };");
  ASSERT_TRUE(fwd.ok) << fwd.diags;
  auto m = fwd.btf->find_member(*fwd.btf->find_struct("fwd"), "l");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(fwd.btf->type_name(m->type_id), "struct later *");
  auto ptr = fwd.btf->type(m->type_id);
  EXPECT_EQ(ptr->target, *fwd.btf->find_struct("later"));
}

TEST_F(CDefsTest, Enums) {
  auto d = define("enum e { A, B = 5, C, D = (1 << 4) | B, E = -1 }; enum { F = C * 2 };");
  ASSERT_TRUE(d.ok) << d.diags;
  EXPECT_EQ(d.btf->enum_value("A"), 0);
  EXPECT_EQ(d.btf->enum_value("C"), 6);
  EXPECT_EQ(d.btf->enum_value("D"), 21);
  EXPECT_EQ(d.btf->enum_value("E"), -1);
  EXPECT_EQ(d.btf->enum_value("F"), 12);
  EXPECT_EQ(d.btf->size_of(*d.btf->find_type("enum e")), 4u);
  // Script enumerators shadow the kernel's; kernel ones may be used in values.
  auto k = define("enum mine { TCP_ESTABLISHED = 42, X = TCP_CLOSE + 1, BIG = 0x100000000 };");
  ASSERT_TRUE(k.ok) << k.diags;
  EXPECT_EQ(k.btf->enum_value("TCP_ESTABLISHED"), 42);
  EXPECT_EQ(k.btf->enum_value("X"), 8);
  EXPECT_EQ(k.btf->enum_value("BIG"), 0x100000000);
  EXPECT_EQ(k.btf->size_of(*k.btf->find_type("enum mine")), 8u);
}

TEST_F(CDefsTest, Errors) {
  struct Case {
    std::string defs, want;  // want: a substring of the rendered diagnostics
  };
  const Case cases[] = {
      {"struct a { int x; };\nstruct a { int y; };", "stdin:2:8-9: ERROR: redefinition of 'struct a'"},
      {"struct a { nosuchtype x; };", "stdin:1:12-22: ERROR: unknown type name 'nosuchtype'"},
      {"struct a { struct nosuch s; };", "stdin:1:19-25: ERROR: unknown type 'struct nosuch'"},
      {"struct a { struct a self; };", "ERROR: field has incomplete type 'struct a'"},
      {"struct a { int x; int x; };", "stdin:1:23-24: ERROR: duplicate member 'x'"},
      {"struct a { char c : 9; };", "ERROR: width of bit-field 'c' (9 bits) exceeds the width of its type"},
      {"struct a { int x int y };", "stdin:1:18-21: ERROR: syntax error, unexpected 'int', expected ';'"},
      {"struct a { int x[N]; };", "stdin:1:18-19: ERROR: 'N' is not a constant"},
      {"struct a { void v; };", "ERROR: field 'v' has incomplete type 'void'"},
      {"enum e { A, A };", "stdin:1:13-14: ERROR: redefinition of enumerator 'A'"},
      {"struct a { int x; } var;", "ERROR: syntax error"},
      {"struct a { int x @; };", "ERROR: unexpected character '@' in a C definition"},
      {"struct a { unsigned char short c; };", "ERROR: invalid combination of type specifiers"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.defs);
    auto d = define(c.defs);
    EXPECT_FALSE(d.ok);
    EXPECT_NE(d.diags.find(c.want), std::string::npos) << d.diags;
  }
}

}  // namespace
}  // namespace bpfscope::sema
