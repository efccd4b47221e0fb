// Compiles a script to BPF programs and loads them with the maps they need,
// for the backend tests and the runtime's tests of real maps.
#pragma once

#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <string>
#include <vector>

#include "../ir/lower_text.h"
#include "bpf/bpf.h"
#include "codegen/codegen.h"
#include "ir/ir.h"

namespace bpfscope::codegen::test {

// A lowered script and its compiled programs (by module function).
struct Compiled : ir::test::Lowered {
  std::vector<Program> programs;
};

inline Compiled compile_text(const std::string& text) {
  Compiled out;
  static_cast<ir::test::Lowered&>(out) = ir::test::lower_text(text);
  if (!out.typed) return out;
  for (const auto& f : out.module.functions) {
    EXPECT_EQ(ir::verify(f), "") << ir::print(f);
    auto p = compile(f);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error()) << "\n" << ir::print(f);
    if (!p) {
      out.programs.clear();
      return out;
    }
    out.programs.push_back(std::move(*p));
  }
  return out;
}

// The kernel objects of a loaded script: its maps in map-id order (the
// script's maps first, as sema numbers them) and its programs by module
// function.
struct LoadedScript {
  std::vector<bpf::Fd> maps;
  std::vector<bpf::Fd> programs;
};

// Creates the script's and the support maps in map-id order, patches the
// relocations and loads every program. Returns "" or the failure; `out`,
// when given, keeps the maps and programs.
inline std::string load_all(Compiled& c, LoadedScript* out = nullptr) {
  const auto& m = c.module;
  LoadedScript loaded_script;
  auto created = ir::create_maps(ir::map_specs(*c.typed, m, 4096 * 64));
  if (!created) return created.error();
  std::vector<bpf::Fd>& fds = loaded_script.maps;
  fds = std::move(*created);
  for (size_t k = 0; k < c.programs.size(); ++k) {
    auto& p = c.programs[k];
    for (const auto& r : p.relocs) p.insns[r.insn].imm = fds.at(r.map).get();
    auto kind = c.typed->units.at(m.unit_of.at(k)).kind;
    bpf::ProgramSpec spec;
    spec.type = kind == sema::ProbeKind::Tracepoint ? BPF_PROG_TYPE_TRACEPOINT : BPF_PROG_TYPE_RAW_TRACEPOINT;
    spec.name = p.name;
    spec.insns = p.insns;
    spec.subprograms = p.subprograms;
    auto loaded = bpf::load_program(spec);
    if (!loaded)
      return "load " + p.name + " failed: errno " + std::to_string(loaded.error().err) + "\n" + loaded.error().log +
             "\n" + disassemble(p);
    if (!loaded->fd) return "load " + p.name + ": no fd";
    loaded_script.programs.push_back(std::move(loaded->fd));
  }
  if (out) *out = std::move(loaded_script);
  return "";
}

}  // namespace bpfscope::codegen::test
