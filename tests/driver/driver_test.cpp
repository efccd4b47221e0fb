// The driver's pipeline, called as the command line calls it, without the
// command line: a script's text to loadable programs, or to its errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "driver/driver.h"

namespace bpfscope::driver {
namespace {

// A FILE* whose contents can be read back (open_memstream).
struct Captured {
  char* data = nullptr;
  size_t size = 0;
  FILE* file = open_memstream(&data, &size);
  ~Captured() {
    if (file) fclose(file);
    free(data);
  }
  std::string text() {
    fflush(file);
    return std::string(data, size);
  }
};

struct Compiled {
  std::unique_ptr<runtime::Compiled> result;
  std::string out, err;
};

Compiled compile_text(std::string_view program, std::set<std::string> debug = {}) {
  Captured out, err;
  CompileOptions options;
  options.program = std::string(program);
  options.filename = "stdin";
  options.debug = std::move(debug);
  options.out = out.file;
  options.err = err.file;
  std::optional<runtime::Child> child;
  Compiled c;
  c.result = compile(std::move(options), child);
  EXPECT_FALSE(child.has_value());
  c.out = out.text();
  c.err = err.text();
  return c;
}

TEST(Driver, CompilesAProgram) {
  auto c = compile_text(R"(BEGIN { printf("x\n"); exit(); })");
  ASSERT_NE(c.result, nullptr) << c.err;
  EXPECT_FALSE(c.result->programs.empty());
  EXPECT_FALSE(c.result->programs.front().insns.empty());
  EXPECT_EQ(c.err, "");
  EXPECT_EQ(c.out, "");
}

TEST(Driver, PrintsTheStagesAsked) {
  auto c = compile_text("BEGIN { @x = 1; exit(); }", {"ast", "bpf"});
  ASSERT_NE(c.result, nullptr) << c.err;
  EXPECT_TRUE(c.out.starts_with("probe BEGIN\n")) << c.out;
  EXPECT_NE(c.out.find("\nprogram BEGIN ("), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find("scratch "), std::string::npos) << "-d ir was not asked for:\n" << c.out;
}

TEST(Driver, ASyntaxErrorIsReported) {
  auto c = compile_text(R"(BEGIN { printf("x\n") exit(); })");
  EXPECT_EQ(c.result, nullptr);
  EXPECT_EQ(c.err,
            "stdin:1:23-27: ERROR: syntax error, unexpected identifier, expected ; or }\n"
            "BEGIN { printf(\"x\\n\") exit(); }\n"
            "                      ~~~~\n");
}

TEST(Driver, ATypeErrorIsReported) {
  auto c = compile_text("BEGIN { $x; exit(); }");
  EXPECT_EQ(c.result, nullptr);
  EXPECT_EQ(c.err,
            "stdin:1:9-11: ERROR: Undefined or undeclared variable: $x\n"
            "BEGIN { $x; exit(); }\n"
            "        ~~\n");
}

}  // namespace
}  // namespace bpfscope::driver
