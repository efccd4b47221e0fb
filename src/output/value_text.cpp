// Text of single values and map keys, as bpftrace 0.26 prints them
// (src/output/text.cpp TextEmitter there).
#include <fmt/format.h>

#include "output/output.h"

namespace bpfscope::output {

namespace {

void append_text(std::string& out, const Value& v) {
  switch (v.kind) {
    case Value::Kind::None:
      // bpftrace has no text for a missing value in map lines; print nothing.
      return;
    case Value::Kind::Int:
      if (v.is_enum) out += v.s;
      else fmt::format_to(std::back_inserter(out), "{}", v.i);
      return;
    case Value::Kind::UInt:
      if (v.is_enum)
        out += v.s;
      else if (v.pointer)
        fmt::format_to(std::back_inserter(out), "0x{:x}", v.u);
      else
        fmt::format_to(std::back_inserter(out), "{}", v.u);
      return;
    case Value::Kind::Bool:
      out += v.i != 0 ? "true" : "false";
      return;
    case Value::Kind::Float:
      // C's %g: 6 significant digits, no trailing zeros (9.76562, 1e+06).
      fmt::format_to(std::back_inserter(out), "{:g}", v.f);
      return;
    case Value::Kind::String:
      out += v.s;
      return;
    case Value::Kind::Buffer:
      out += buffer_text(v.s, "");
      return;
    case Value::Kind::Array: {
      // Arrays have no spaces: [127,0,0,1].
      out += '[';
      for (size_t i = 0; i < v.elems.size(); ++i) {
        if (i) out += ',';
        append_text(out, v.elems[i]);
      }
      out += ']';
      return;
    }
    case Value::Kind::Tuple: {
      if (!v.names.empty()) {
        // Records print like structs: { .a = 1, .b = x }.
        out += "{ ";
        for (size_t i = 0; i < v.elems.size(); ++i) {
          out += fmt::format("{}.{} = ", i ? ", " : "", v.names[i]);
          append_text(out, v.elems[i]);
        }
        out += " }";
        return;
      }
      // Tuples always get ", " between fields (arrays would not).
      out += '(';
      bool first = true;
      for (const Value& e : v.elems) {
        if (!first) out += ", ";
        append_text(out, e);
        first = false;
      }
      out += ')';
      return;
    }
  }
}

}  // namespace

std::string to_text(const Value& v) {
  std::string out;
  append_text(out, v);
  return out;
}

// bpftrace 0.24-0.26 (output/text.cpp, emit_map) strip the parentheses from the
// key's *text*, whatever its type: any key whose text starts with '(' and ends
// with ')' loses them, so the string key "(x)" prints as @m[x] too. We copy
// that rather than testing for a tuple.
std::string key_text(const Value& key) {
  std::string s = to_text(key);
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

}  // namespace bpfscope::output
