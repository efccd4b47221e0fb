// to_text / key_text (REFERENCE 6.2, 6.4).
#include <gtest/gtest.h>

#include "output/output.h"

namespace bpfscope::output {
namespace {

Value I(int64_t v) { return Value::of_int(v); }
Value U(uint64_t v) { return Value::of_uint(v); }
Value S(std::string v) { return Value::of_string(std::move(v)); }
Value T(std::vector<Value> v) { return Value::of_tuple(std::move(v)); }

struct TextCase {
  const char* name;
  Value value;
  std::string text;
  std::string key;
};

TEST(ValueText, Table) {
  const std::vector<TextCase> cases = {
      {"int", I(5), "5", "5"},
      {"negative", I(-5), "-5", "-5"},
      {"int64 min", I(INT64_MIN), "-9223372036854775808", "-9223372036854775808"},
      {"uint64 max", U(UINT64_MAX), "18446744073709551615", "18446744073709551615"},
      {"bool true", Value::of_bool(true), "true", "true"},
      {"float as %g", Value::of_float(9.765625), "9.76562", "9.76562"},
      {"float integral", Value::of_float(-3), "-3", "-3"},
      {"bool false", Value::of_bool(false), "false", "false"},
      {"string bare", S("hello"), "hello", "hello"},
      {"empty string", S(""), "", ""},
      {"none", Value{}, "", ""},
      {"tuple nested", T({I(1), S("two"), T({I(2), I(3)})}), "(1, two, (2, 3))",
       "1, two, (2, 3)"},
      {"tuple key a, 2", T({S("a"), I(2)}), "(a, 2)", "a, 2"},
      {"tuple key 1, (123, 1234)", T({I(1), T({I(123), I(1234)})}), "(1, (123, 1234))",
       "1, (123, 1234)"},
      {"one-field tuple", T({I(1)}), "(1)", "1"},
      {"empty tuple", T({}), "()", ""},
      {"tuple of bool", T({Value::of_bool(true), U(7)}), "(true, 7)", "true, 7"},
      // pton(): arrays print without spaces.
      {"uint8 array", Value::of_array({U(127), U(0), U(0), U(1)}), "[127,0,0,1]", "[127,0,0,1]"},
      // buf(): bytes 32..126 as they are, others \xNN.
      {"buffer", Value::of_buffer(std::string("ab\n\0\xff~", 6)), "ab\\x0a\\x00\\xff~", "ab\\x0a\\x00\\xff~"},
      // 0.24-0.26 strip the parentheses from any key text wrapped in them.
      {"string key in parens", S("(x)"), "(x)", "x"},
      {"string key with one paren", S("(x"), "(x", "(x"},
      // Records (0.25) print like structs, also as keys.
      {"record", Value::of_record({"a", "c"}, {I(0), S("str")}), "{ .a = 0, .c = str }", "{ .a = 0, .c = str }"},
      {"record nested", Value::of_record({"d", "e"}, {T({I(5), I(6)}), Value::of_record({"x"}, {I(1)})}),
       "{ .d = (5, 6), .e = { .x = 1 } }", "{ .d = (5, 6), .e = { .x = 1 } }"},
      {"tuple of records", T({Value::of_record({"m"}, {I(2)}), I(3)}), "({ .m = 2 }, 3)", "{ .m = 2 }, 3"},
      // Pointers print in hex (0.26; 0.17 printed 50).
      {"pointer", Value::of_pointer(50), "0x32", "0x32"},
      {"null pointer", Value::of_pointer(0), "0x0", "0x0"},
      {"pointer in tuple", T({Value::of_pointer(0x7ffd1234), I(3)}), "(0x7ffd1234, 3)", "0x7ffd1234, 3"},
  };
  for (const TextCase& c : cases) {
    EXPECT_EQ(to_text(c.value), c.text) << c.name;
    EXPECT_EQ(key_text(c.value), c.key) << c.name;
  }
}

}  // namespace
}  // namespace bpfscope::output
