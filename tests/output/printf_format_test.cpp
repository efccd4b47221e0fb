// printf parsing and C/libc formatting (REFERENCE 6.5, 9).
#include <gtest/gtest.h>

#include "output/output.h"

namespace bpfscope::output {
namespace {

Value I(int64_t v) { return Value::of_int(v); }
Value U(uint64_t v) { return Value::of_uint(v); }
Value S(std::string v) { return Value::of_string(std::move(v)); }
Value T(std::vector<Value> v) { return Value::of_tuple(std::move(v)); }
Value F(double v) { return Value::of_float(v); }

std::string fmt_one(std::string_view format, std::vector<Value> args) {
  auto parsed = parse_printf(format);
  if (auto* err = std::get_if<std::string>(&parsed)) return "ERROR " + *err;
  return format_printf(std::get<PrintfFormat>(parsed), args);
}

struct FormatCase {
  const char* format;
  std::vector<Value> args;
  std::string out;
};

TEST(Printf, Format) {
  const std::vector<FormatCase> cases = {
      // Integers follow C: no length modifier means int / unsigned int.
      {"%d", {I(5000000000)}, "705032704"},
      // Floats (a printf argument divided by a float literal): %f %e %g as
      // doubles, integer conversions truncated, %s as %g.
      {"%.2f|%6.1f|%e|%g|%G", {F(9.765625), F(-2.5), F(1234.5), F(0.0001), F(1e-5)},
       "9.77|  -2.5|1.234500e+03|0.0001|1E-05"},
      {"%d|%u|%ld|%x|%s|%s", {F(9.77), F(2.5), F(-9.99), F(255.9), F(9.765625), F(1e6)}, "9|2|-9|ff|9.76562|1e+06"},
      {"%Lf", {F(0.5)}, "0.500000"},
      // An integer with %f prints as a double.
      {"%f|%.1f|%.0f|%Lf", {I(7), I(-3), U(UINT64_MAX), U(5)}, "7.000000|-3.0|18446744073709551616|5.000000"},
      {"%i", {I(-5)}, "-5"},
      // buf() values: %r escapes, %rx all hex, %rh spaced hex, %s like %r.
      {"%r|%rx|%rh|%s", {Value::of_buffer("a\n"), Value::of_buffer("a\n"), Value::of_buffer("a\n"), Value::of_buffer("a\n")},
       "a\\x0a|\\x61\\x0a|61 0a|a\\x0a"},
      {"%u", {I(-1)}, "4294967295"},
      {"%hhd", {I(257)}, "1"},
      {"%hhu", {I(-1)}, "255"},
      {"%hd", {I(65537)}, "1"},
      {"%hu", {I(-1)}, "65535"},
      {"%ld", {I(5000000000)}, "5000000000"},
      {"%lld", {I(-5000000000)}, "-5000000000"},
      {"%lu", {I(-1)}, "18446744073709551615"},
      {"%llx", {U(0xdeadbeefcafeULL)}, "deadbeefcafe"},
      {"%jd", {I(INT64_MIN)}, "-9223372036854775808"},
      {"%zu", {U(UINT64_MAX)}, "18446744073709551615"},
      {"%x", {I(-1)}, "ffffffff"},
      {"%X", {I(255)}, "FF"},
      {"%#x", {I(255)}, "0xff"},
      {"%o", {I(8)}, "10"},
      {"%#o", {I(8)}, "010"},
      {"%d", {Value::of_bool(true)}, "1"},
      {"%d", {U(UINT64_MAX)}, "-1"},
      // Flags, width, precision (libc).
      {"%5.2d", {I(7)}, "   07"},
      {"%8.3s", {S("abcdef")}, "     abc"},
      {"%-5d|", {I(42)}, "42   |"},
      {"%05d", {I(42)}, "00042"},
      {"%-08lld|", {I(-3)}, "-3      |"},
      {"%+d", {I(3)}, "+3"},
      {"% d", {I(3)}, " 3"},
      {"%.0d", {I(0)}, ""},
      {"%.d", {I(0)}, ""},
      {"%10s|", {S("hi")}, "        hi|"},
      {"%-10s|", {S("hi")}, "hi        |"},
      // %s prints any value as its text.
      {"%s", {S("hello")}, "hello"},
      {"%s", {I(-42)}, "-42"},
      {"%s", {U(UINT64_MAX)}, "18446744073709551615"},
      {"%s", {Value::of_bool(false)}, "false"},
      {"%s", {T({I(1), S("a"), T({I(2), I(3)})})}, "(1, a, (2, 3))"},
      {"%ls", {S("wide?")}, "wide?"},
      // %c and %p.
      {"%c", {I(65)}, "A"},
      {"%3c|", {I('z')}, "  z|"},
      {"%-3c|", {I('z')}, "z  |"},
      {"%p", {U(0x1234)}, "0x1234"},
      {"%p", {I(0)}, "(nil)"},
      {"%10p|", {U(0x1234)}, "    0x1234|"},
      // Floats take the integer value as a double.
      {"%f", {I(3)}, "3.000000"},
      {"%.2f", {I(-7)}, "-7.00"},
      {"%e", {I(12345)}, "1.234500e+04"},
      {"%.2E", {I(12345)}, "1.23E+04"},
      {"%g", {I(100000)}, "100000"},
      {"%G", {I(10000000)}, "1E+07"},
      {"%a", {I(1)}, "0x1p+0"},
      {"%Lf", {I(2)}, "2.000000"},
      {"%.1f", {U(UINT64_MAX)}, "18446744073709551616.0"},
      // Buffers.
      {"%r", {S("ab\n")}, "ab\\x0a"},
      {"%r", {S(std::string("a\0\x7f~ ", 5))}, "a\\x00\\x7f~ "},
      {"%r", {S("\xff")}, "\\xff"},
      {"%rx", {S("ab")}, "\\x61\\x62"},
      {"%rh", {S("ab")}, "61 62"},
      {"%rh", {S("\x01")}, "01"},
      {"%rh", {S("")}, ""},
      {"%rhello", {S("a")}, "61ello"},
      {"%6r|", {S("ab")}, "    ab|"},
      // %gr: GFP flags, named masks before single flags, leftovers in hex.
      {"%gr", {I(0x1)}, "GFP_DMA"},
      {"%gr", {I(0)}, "0"},
      {"%gr", {I(0xcc0)}, "GFP_KERNEL"},
      {"%gr", {I(0xcc0 | 0x100)}, "GFP_KERNEL|__GFP_ZERO"},
      {"%gr", {I(0x400000 | 0xcc0)}, "GFP_KERNEL_ACCOUNT"},
      {"%gr", {I(0x820)}, "GFP_ATOMIC"},
      {"%gr", {I(0x2800)}, "GFP_NOWAIT"},
      {"%gr", {I(0x9)}, "GFP_DMA|0x8"},
      {"%gr", {I(0x10)}, "0x10"},
      {"[%-12gr]", {I(0x4)}, "[GFP_DMA32   ]"},
      {"[%12gr]", {I(0x4)}, "[   GFP_DMA32]"},
      {"%grx", {I(0x1)}, "GFP_DMAx"},
      // Text around conversions, %% and several arguments.
      {"a %d b %s c\n", {I(1), S("x")}, "a 1 b x c\n"},
      {"100%%", {}, "100%"},
      {"%%d %d%%", {I(5)}, "%d 5%"},
      {"no conversions", {}, "no conversions"},
      {"", {}, ""},
      // Missing arguments read as 0 / "", extra ones are ignored.
      {"[%d|%s|%c|%p|%f|%r]", {}, std::string("[0||\0|(nil)|0.000000|]", 22)},
      {"%d", {I(1), I(2)}, "1"},
      {"%d", {S("abc")}, "0"},
  };
  for (const FormatCase& c : cases) {
    EXPECT_EQ(fmt_one(c.format, c.args), c.out) << c.format;
  }
}

// Integers without flags, width or precision take a path of their own
// (std::to_chars, not snprintf): every conversion and length against libc.
TEST(Printf, PlainIntegersAsLibc) {
  const int64_t values[] = {0, 1, -1, 7, -128, 255, 256, 65535, -32769, INT32_MAX, INT32_MIN, 5000000000,
                            INT64_MAX, INT64_MIN, -5000000000};
  for (const char* length : {"", "hh", "h", "l", "ll", "j", "z", "t"}) {
    for (char conv : {'d', 'i', 'u', 'o', 'x', 'X'}) {
      const std::string spec = std::string("%") + length + conv;
      for (int64_t v : values) {
        char want[64];
        const std::string ll = std::string("%ll") + conv;
        const std::string l = std::string("%") + conv;
        const std::string_view len(length);
        if (len == "hh")
          std::snprintf(want, sizeof want, l.c_str(), conv == 'd' || conv == 'i' ? static_cast<int>(static_cast<signed char>(v))
                                                                                  : static_cast<int>(static_cast<unsigned char>(v)));
        else if (len == "h")
          std::snprintf(want, sizeof want, l.c_str(), conv == 'd' || conv == 'i' ? static_cast<int>(static_cast<short>(v))
                                                                                  : static_cast<int>(static_cast<unsigned short>(v)));
        else if (len.empty())
          std::snprintf(want, sizeof want, l.c_str(), static_cast<int>(v));
        else
          std::snprintf(want, sizeof want, ll.c_str(), static_cast<long long>(v));
        EXPECT_EQ(fmt_one(spec, {I(v)}), want) << spec << " of " << v;
      }
    }
  }
  // %s without width or precision stops at a NUL, as C's does.
  EXPECT_EQ(fmt_one("[%s]", {S(std::string("ab\0cd", 5))}), "[ab]");
}

TEST(Printf, Errors) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"%y", "printf: Unknown format string token: %y"},
      {"a %5y b", "printf: Unknown format string token: %5y"},
      {"%", "printf: Unknown format string token: %"},
      {"abc %-", "printf: Unknown format string token: %-"},
      {"%n", "printf: Unknown format string token: %n"},
      {"%**d", "printf: Unknown format string token: %**"},
      {"%lq", "printf: Unknown format string token: %lq"},
      {"%999999999d", "printf: width too large: %999999999"},
      {"%.70000f", "printf: precision too large: %.70000"},
  };
  for (const auto& [format, error] : cases) {
    auto parsed = parse_printf(format);
    ASSERT_TRUE(std::holds_alternative<std::string>(parsed)) << format;
    EXPECT_EQ(std::get<std::string>(parsed), error) << format;
  }
}

// "%-*s", "%.*s": C's width and precision arguments (a bpfscope extension).
TEST(Printf, StarWidthAndPrecision) {
  auto parsed = parse_printf("[%-*s|%*.*s|%.*d]");
  ASSERT_TRUE(std::holds_alternative<PrintfFormat>(parsed));
  const auto& f = std::get<PrintfFormat>(parsed);
  ASSERT_EQ(f.specs.size(), 7u);
  EXPECT_EQ(f.specs[0].conv, '*');
  EXPECT_EQ(f.specs[0].literal_before, "[");
  EXPECT_EQ(f.specs[1].spec, "%-*s");
  EXPECT_EQ(f.specs[1].literal_before, "");
  EXPECT_EQ(format_printf(f, {Value::of_int(5), Value::of_string("ab"), Value::of_int(6), Value::of_int(2),
                              Value::of_string("xyz"), Value::of_int(3), Value::of_int(7)}),
            "[ab   |    xy|007]");
  // A negative width left-aligns, a negative precision is none.
  EXPECT_EQ(format_printf(f, {Value::of_int(-4), Value::of_string("a"), Value::of_int(3), Value::of_int(-1),
                              Value::of_string("xyz"), Value::of_int(0), Value::of_int(7)}),
            "[a   |xyz|7]");
}

TEST(Printf, Parse) {
  auto parsed = parse_printf("x=%-08lld y%%=%s buf=%rx z=%hhu %.3e tail%%");
  ASSERT_TRUE(std::holds_alternative<PrintfFormat>(parsed));
  const PrintfFormat& f = std::get<PrintfFormat>(parsed);
  ASSERT_EQ(f.specs.size(), 5u);
  EXPECT_EQ(f.specs[0].literal_before, "x=");
  EXPECT_EQ(f.specs[0].spec, "%-08lld");
  EXPECT_EQ(f.specs[0].conv, 'd');
  EXPECT_EQ(f.specs[0].length, "ll");
  EXPECT_EQ(f.specs[0].wants, PrintfSpec::ArgKind::Integer);
  EXPECT_EQ(f.specs[1].literal_before, " y%=");
  EXPECT_EQ(f.specs[1].conv, 's');
  EXPECT_EQ(f.specs[1].wants, PrintfSpec::ArgKind::Any);
  EXPECT_EQ(f.specs[2].spec, "%rx");
  EXPECT_EQ(f.specs[2].conv, 'r');
  EXPECT_EQ(f.specs[2].buffer_mode, "x");
  EXPECT_EQ(f.specs[2].wants, PrintfSpec::ArgKind::String);
  EXPECT_EQ(f.specs[3].length, "hh");
  EXPECT_EQ(f.specs[3].conv, 'u');
  EXPECT_EQ(f.specs[4].spec, "%.3e");
  EXPECT_EQ(f.specs[4].wants, PrintfSpec::ArgKind::Integer);
  EXPECT_EQ(f.trailing, " tail%");

  for (const char conv : std::string("diouxXcpeEfFgGaA")) {
    auto p = parse_printf(std::string("%") + conv);
    ASSERT_TRUE(std::holds_alternative<PrintfFormat>(p)) << conv;
    EXPECT_EQ(std::get<PrintfFormat>(p).specs.at(0).wants, PrintfSpec::ArgKind::Integer) << conv;
  }
}

TEST(Printf, HandBuiltSpecFallsBack) {
  PrintfFormat f;
  PrintfSpec s;
  s.literal_before = "v=";
  s.conv = 'd';
  f.specs.push_back(s);
  f.trailing = ".";
  EXPECT_EQ(format_printf(f, {I(5000000000)}), "v=705032704.");
  f.specs[0].spec = "%";  // malformed
  EXPECT_EQ(format_printf(f, {I(3)}), "v=3.");
}

}  // namespace
}  // namespace bpfscope::output
