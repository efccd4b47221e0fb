// Parses, checks and lowers a script for the IR and backend tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "ir/ir.h"
#include "lang/lang.h"
#include "sema/sema.h"

namespace bpfscope::ir::test {

struct Lowered {
  std::unique_ptr<lang::Program> ast;
  std::optional<sema::TypedProgram> typed;
  Module module;
  std::string text;  // ir::print of the whole module
};

// Fails the current test (and returns what it has) when parsing or checking
// reports errors.
inline Lowered lower_text(const std::string& text, const LowerOptions& options = {},
                          const sema::Options& sema_options = {}) {
  Lowered out;
  lang::Source src("stdin", text);
  lang::Diagnostics diags;
  auto parsed = lang::parse(src, diags);
  EXPECT_TRUE(parsed.has_value()) << diags.render(src);
  if (!parsed) return out;
  out.ast = std::make_unique<lang::Program>(std::move(*parsed));
  out.typed = sema::analyse(*out.ast, sema_options, diags);
  EXPECT_TRUE(out.typed.has_value()) << diags.render(src);
  if (!out.typed) return out;
  out.module = lower(*out.typed, options);
  out.text = print(out.module);
  return out;
}

}  // namespace bpfscope::ir::test
