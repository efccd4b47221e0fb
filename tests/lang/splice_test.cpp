// Splicing tool options into a script: probes and statements repeated per
// value, maps per value, parts replaced by the value's expressions, errors
// located in the value's text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

SplicedValue value(const std::string& text, const std::string& probe) {
  SplicedValue v{.option = "h", .origin = "-H", .text = text};
  v.parts.push_back({.name = "h", .kind = SplicedPart::Kind::Probe, .text = probe});
  v.parts.push_back({.name = "h.value", .ranges = {{0, static_cast<uint32_t>(text.size())}}, .casts = {"uint32"}});
  v.parts.push_back({.name = "h.label", .kind = SplicedPart::Kind::String, .text = text});
  v.aliases.emplace_back("size", "arg0");
  return v;
}

struct Result {
  std::string dump;
  std::string errors;
  std::set<std::string> dropped;
};

Result splice(const std::string& script, const std::vector<SplicedValue>& values) {
  Diagnostics diags;
  auto program = parse(Source("t.bt", script), diags);
  EXPECT_TRUE(program);
  Result r;
  if (!splice_options(*program, {"h"}, values, diags, &r.dropped)) r.errors = diags.render(program->source);
  else r.dump = dump(*program);
  return r;
}

const char* kScript =
    "getopt(\"h\") { @m = hist(getopt(\"h.value\")); }\n"
    "END { printf(\"%s\\n\", getopt(\"h.label\")); clear(@m); clear(@n); }\n";

TEST(Splice, RepeatsProbesAndStatementsPerValue) {
  Result r = splice(kScript, {value("size", "uprobe:/x:f"), value("pid * 2", "tracepoint:a:b")});
  ASSERT_EQ(r.errors, "");
  EXPECT_EQ(r.dump,
            "probe uprobe:/x:f\n"
            " assign =\n  map @m#1\n  call hist\n   cast uint32\n    identifier arg0\n"
            "probe tracepoint:a:b\n"
            " assign =\n  map @m#2\n  call hist\n   cast uint32\n    binop *\n     identifier pid\n     int 2\n"
            "probe END\n"
            " call printf\n  string \"%s\\n\"\n  string \"size\"\n"
            " call printf\n  string \"%s\\n\"\n  string \"pid * 2\"\n"
            " call clear\n  map @m#1\n"
            " call clear\n  map @m#2\n"
            " call clear\n  map @n\n");
}

TEST(Splice, NoValueDropsThem) {
  Result r = splice(kScript, {});
  ASSERT_EQ(r.errors, "");
  EXPECT_EQ(r.dump, "probe END\n call clear\n  map @n\n");
  EXPECT_EQ(r.dropped, (std::set<std::string>{"h.value", "h.label"}));
}

TEST(Splice, ErrorsAreLocatedInTheValue) {
  Result r = splice(kScript, {value("size +", "uprobe:/x:f")});
  EXPECT_EQ(r.errors, "-H:1:7-8: ERROR: unexpected end of file\nsize +\n      ~\n");
}

}  // namespace
}  // namespace bpfscope::lang
