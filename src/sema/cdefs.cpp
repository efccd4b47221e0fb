// C definitions -> BTF types (see cdefs.h).
//
// Each definition is tokenized, then parsed by recursive descent. Types are
// named by BTF id throughout: kernel ids below `base_`, and ids of the types
// this file adds from `base_` on (index into `types_` + base_). Nothing is
// written to the BTF until every definition parsed, so a failed script leaves
// the kernel's BTF untouched. A struct's entry is reserved when its
// definition starts (or when a pointer refers to a tag the script defines
// later), which is what lets `struct foo *next` point at itself.
//
// Errors unwind with the file-local CError: the parser stops at the first
// error of a definition and goes on with the next one.
#include "sema/cdefs.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <set>
#include <unordered_map>

namespace bpfscope::sema {
namespace {

using lang::Loc;
using K = bpf::BtfNewType::Kind;

struct CError {};

constexpr int kMaxDepth = 64;  // nesting of definitions, declarators and constant expressions

struct CTok {
  enum class Kind { Ident, Int, Punct, End } kind = Kind::End;
  std::string_view text;
  uint64_t value = 0;
  Loc loc;
};

// Integer types by name: the words of C's own types are handled by
// int_type(); these are the typedef names kernel and libbpf code uses.
struct IntName {
  std::string_view name;
  uint32_t size;
  bool is_signed;
};
constexpr std::array kIntNames = {
    IntName{"u8", 1, false},       IntName{"u16", 2, false},      IntName{"u32", 4, false},
    IntName{"u64", 8, false},      IntName{"s8", 1, true},        IntName{"s16", 2, true},
    IntName{"s32", 4, true},       IntName{"s64", 8, true},       IntName{"__u8", 1, false},
    IntName{"__u16", 2, false},    IntName{"__u32", 4, false},    IntName{"__u64", 8, false},
    IntName{"__s8", 1, true},      IntName{"__s16", 2, true},     IntName{"__s32", 4, true},
    IntName{"__s64", 8, true},     IntName{"__be16", 2, false},   IntName{"__be32", 4, false},
    IntName{"__be64", 8, false},   IntName{"__le16", 2, false},   IntName{"__le32", 4, false},
    IntName{"__le64", 8, false},   IntName{"int8_t", 1, true},    IntName{"int16_t", 2, true},
    IntName{"int32_t", 4, true},   IntName{"int64_t", 8, true},   IntName{"uint8_t", 1, false},
    IntName{"uint16_t", 2, false}, IntName{"uint32_t", 4, false}, IntName{"uint64_t", 8, false},
    IntName{"int8", 1, true},      IntName{"int16", 2, true},     IntName{"int32", 4, true},
    IntName{"int64", 8, true},     IntName{"uint8", 1, false},    IntName{"uint16", 2, false},
    IntName{"uint32", 4, false},   IntName{"uint64", 8, false},   IntName{"size_t", 8, false},
    IntName{"ssize_t", 8, true},   IntName{"uintptr_t", 8, false}, IntName{"intptr_t", 8, true},
    IntName{"pid_t", 4, true},     IntName{"uid_t", 4, false},    IntName{"gid_t", 4, false},
};

bool is_qualifier(std::string_view w) {
  return w == "const" || w == "volatile" || w == "restrict" || w == "__restrict" || w == "__volatile__" ||
         w == "__const" || w == "static" || w == "extern" || w == "register";
}

bool is_int_word(std::string_view w) {
  return w == "signed" || w == "unsigned" || w == "char" || w == "short" || w == "int" || w == "long" ||
         w == "_Bool" || w == "__signed__";
}

uint64_t align_up(uint64_t n, uint64_t a) { return a ? (n + a - 1) / a * a : n; }

// Attributes after `struct`, after `}` or after a member: __attribute__((packed, aligned(N))).
struct Attrs {
  bool packed = false;
  uint32_t aligned = 0;
};

class CParser {
 public:
  CParser(const lang::Program& program, bpf::Btf& btf, lang::Diagnostics& diags)
      : program_(program), btf_(btf), diags_(diags), base_(btf.next_id()) {}

  bool run() {
    std::vector<std::vector<CTok>> all;
    for (const auto& def : program_.c_definitions) {
      try {
        all.push_back(tokenize(def));
      } catch (const CError&) {
        all.emplace_back();
      }
    }
    for (const auto& toks : all) prescan(toks);
    for (auto& toks : all) {
      if (toks.empty()) continue;
      toks_ = &toks;
      pos_ = 0;
      depth_ = 0;
      try {
        definition();
      } catch (const CError&) {
      }
    }
    if (failed_) return false;
    std::vector<bpf::BtfNewType> out;
    for (auto& t : types_) {
      if (!t.complete) {  // a tag pre-scanned but never defined: only after an error
        error(t.loc, fmt::format("incomplete type '{}'", t.t.name));
        return false;
      }
      out.push_back(std::move(t.t));
    }
    if (auto r = btf_.add_types(out); !r) {
      diags_.error(program_.c_definitions.front().loc, r.error().message);
      return false;
    }
    return true;
  }

 private:
  struct Local {
    bpf::BtfNewType t;
    uint32_t align = 1;
    bool complete = true;
    Loc loc;
  };

  // --- tokens ---

  std::vector<CTok> tokenize(const lang::CDefinition& def) {
    std::vector<CTok> out;
    std::string_view s = def.text;
    size_t i = 0;
    auto at = [&](size_t k) { return k < s.size() ? s[k] : '\0'; };
    while (i < s.size()) {
      const char c = s[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++i;
      } else if (c == '/' && at(i + 1) == '/') {
        while (i < s.size() && s[i] != '\n') ++i;
      } else if (c == '/' && at(i + 1) == '*') {
        size_t close = s.find("*/", i + 2);
        i = close == std::string_view::npos ? s.size() : close + 2;
      } else {
        CTok t;
        const size_t b = i;
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
          while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
          t.kind = CTok::Kind::Ident;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
          while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
          t.kind = CTok::Kind::Int;
          std::string digits(s.substr(b, i - b));
          while (!digits.empty() && (digits.back() == 'u' || digits.back() == 'U' || digits.back() == 'l' ||
                                     digits.back() == 'L'))
            digits.pop_back();
          char* end = nullptr;
          errno = 0;
          t.value = std::strtoull(digits.c_str(), &end, 0);
          if (digits.empty() || *end != '\0' || errno == ERANGE)
            fail(loc_of(def, b, i), fmt::format("invalid integer constant '{}'", s.substr(b, i - b)));
        } else {
          const bool shift = (c == '<' || c == '>') && at(i + 1) == c;
          i += shift ? 2 : 1;
          t.kind = CTok::Kind::Punct;
          if (!shift && std::string_view("{}()[];,*:=-+~!|&^/%<>").find(c) == std::string_view::npos)
            fail(loc_of(def, b, i), fmt::format("unexpected character '{}' in a C definition", c));
        }
        t.text = s.substr(b, i - b);
        t.loc = loc_of(def, b, i);
        out.push_back(t);
      }
    }
    CTok end;
    end.loc = loc_of(def, s.size(), s.size());
    out.push_back(end);
    return out;
  }

  static Loc loc_of(const lang::CDefinition& def, size_t b, size_t e) {
    return {def.loc.begin + static_cast<uint32_t>(b), def.loc.begin + static_cast<uint32_t>(e)};
  }

  // Every tag the script defines, so that a pointer may name one defined later.
  void prescan(const std::vector<CTok>& toks) {
    for (size_t i = 0; i + 2 < toks.size(); i++) {
      if (toks[i].kind != CTok::Kind::Ident || toks[i + 1].kind != CTok::Kind::Ident) continue;
      if (toks[i].text != "struct" && toks[i].text != "union" && toks[i].text != "enum") continue;
      if (toks[i + 2].text == "{") script_tags_.insert(fmt::format("{} {}", toks[i].text, toks[i + 1].text));
    }
  }

  const CTok& tok() const { return (*toks_)[pos_]; }
  bool at(std::string_view p) const { return tok().kind != CTok::Kind::End && tok().text == p; }
  bool at_ident() const { return tok().kind == CTok::Kind::Ident; }
  void advance() {
    if (tok().kind != CTok::Kind::End) ++pos_;
  }
  bool accept(std::string_view p) {
    if (!at(p)) return false;
    advance();
    return true;
  }
  void expect(std::string_view p) {
    if (!accept(p)) unexpected(fmt::format("'{}'", p));
  }
  [[noreturn]] void unexpected(std::string_view expected) {
    if (tok().kind == CTok::Kind::End) fail(tok().loc, fmt::format("unexpected end of definition, expected {}", expected));
    fail(tok().loc, fmt::format("syntax error, unexpected '{}', expected {}", tok().text, expected));
  }
  void error(Loc loc, std::string msg) {
    diags_.error(loc, std::move(msg));
    failed_ = true;
  }
  [[noreturn]] void fail(Loc loc, std::string msg) {
    error(loc, std::move(msg));
    throw CError{};
  }
  void enter(Loc loc) {
    if (++depth_ > kMaxDepth) fail(loc, "C definition nested too deeply");
  }

  // --- types ---

  bool is_local(uint32_t id) const { return id >= base_; }
  Local& local(uint32_t id) { return types_[id - base_]; }

  uint32_t add(bpf::BtfNewType t, uint32_t align, Loc loc, bool complete = true) {
    types_.push_back({std::move(t), align, complete, loc});
    return base_ + static_cast<uint32_t>(types_.size() - 1);
  }

  uint32_t int_type(std::string name, uint32_t size, bool is_signed, bool is_bool = false) {
    auto it = ints_.find(name);
    if (it != ints_.end()) return it->second;
    bpf::BtfNewType t;
    t.kind = K::Int;
    t.name = name;
    t.size = size;
    t.is_signed = is_signed;
    t.is_bool = is_bool;
    uint32_t id = add(std::move(t), size, {});
    ints_.emplace(std::move(name), id);
    return id;
  }

  uint32_t pointer_to(uint32_t target) {
    auto it = pointers_.find(target);
    if (it != pointers_.end()) return it->second;
    bpf::BtfNewType t;
    t.kind = K::Pointer;
    t.target = target;
    uint32_t id = add(std::move(t), 8, {});
    pointers_.emplace(target, id);
    return id;
  }

  uint32_t array_of(uint32_t elem, uint32_t count, Loc loc) {
    const uint64_t size = uint64_t{size_of(elem, loc)} * count;
    if (size > UINT32_MAX / 8) fail(loc, "array is too large");
    bpf::BtfNewType t;
    t.kind = K::Array;
    t.target = elem;
    t.count = count;
    return add(std::move(t), align_of(elem), loc);
  }

  // sizeof, for a complete type (an error otherwise).
  uint32_t size_of(uint32_t id, Loc loc) {
    if (is_local(id)) {
      const Local& l = local(id);
      if (!l.complete) fail(loc, fmt::format("field has incomplete type '{}'", tag_text(l.t)));
      switch (l.t.kind) {
        case K::Pointer: return 8;
        case K::Array: return l.t.count * size_of(l.t.target, loc);
        default: return l.t.size;
      }
    }
    if (id == 0) fail(loc, "field has incomplete type 'void'");
    auto size = btf_.size_of(id);
    if (!size) fail(loc, fmt::format("field has incomplete type '{}'", btf_.type_name(id)));
    return *size;
  }

  uint32_t align_of(uint32_t id) {
    if (is_local(id)) return local(id).align;
    return kernel_align(id, 0);
  }

  // BTF keeps no alignment: a kernel type's is its largest member's, reduced
  // for packed structs (whose size it does not divide).
  uint32_t kernel_align(uint32_t id, int depth) {
    auto bt = btf_.type(id);
    if (!bt || depth > kMaxDepth) return 1;
    using BK = bpf::BtfType::Kind;
    switch (bt->kind) {
      case BK::Int:
      case BK::Float:
      case BK::Enum: return std::clamp<uint32_t>(bt->size, 1, 8);
      case BK::Pointer: return 8;
      case BK::Array: return kernel_align(bt->target, depth + 1);
      case BK::Struct:
      case BK::Union: {
        if (auto it = kernel_aligns_.find(bt->id); it != kernel_aligns_.end()) return it->second;
        uint32_t a = 1;
        for (const auto& m : btf_.members(bt->id)) a = std::max(a, kernel_align(m.type_id, depth + 1));
        while (a > 1 && bt->size % a) a /= 2;
        kernel_aligns_.emplace(bt->id, a);
        return a;
      }
      default: return 1;
    }
  }

  static std::string tag_text(const bpf::BtfNewType& t) {
    const char* kw = t.kind == K::Union ? "union" : t.kind == K::Enum ? "enum" : "struct";
    return t.name.empty() ? fmt::format("{} (anonymous)", kw) : fmt::format("{} {}", kw, t.name);
  }

  // --- definitions ---

  void definition() {
    Spec s = specifiers();
    if (!s.defined && !s.declared) fail(s.loc, "expected a struct, union or enum definition");
    accept(";");
    if (tok().kind != CTok::Kind::End)
      unexpected(at_ident() ? "';' (variables cannot be declared in C definitions)" : "';'");
  }

  struct Spec {
    uint32_t type = 0;
    Loc loc;
    bool defined = false;    // a struct/union/enum body was written here
    bool declared = false;   // `struct foo;`: a declaration only
    bool anonymous = false;  // a struct/union body without a tag
    bool is_void = false;
  };

  Spec specifiers() {
    Spec s;
    s.loc = tok().loc;
    std::vector<std::string_view> words;
    bool have = false;
    while (at_ident()) {
      std::string_view w = tok().text;
      if (is_qualifier(w)) {
        advance();
      } else if (w == "__attribute__") {
        attributes();
      } else if (w == "struct" || w == "union" || w == "enum") {
        if (have || !words.empty()) unexpected("a declarator");
        tag(s);
        have = true;
      } else if (is_int_word(w)) {
        if (have) unexpected("a declarator");
        words.push_back(w);
        advance();
      } else if (!have && words.empty()) {
        named_type(s);
        have = true;
      } else {
        break;
      }
    }
    if (!words.empty()) s.type = c_int(words, s.loc);
    else if (!have) unexpected("a type");
    return s;
  }

  // `unsigned long`, `signed char`, `long long int`, `_Bool`, ...
  uint32_t c_int(const std::vector<std::string_view>& words, Loc loc) {
    int longs = 0, chars = 0, shorts = 0, ints = 0, sign = 0, unsign = 0, bools = 0;
    for (auto w : words) {
      longs += w == "long";
      chars += w == "char";
      shorts += w == "short";
      ints += w == "int";
      sign += w == "signed" || w == "__signed__";
      unsign += w == "unsigned";
      bools += w == "_Bool";
    }
    const int kinds = (longs > 0) + chars + shorts + bools;
    if (kinds > 1 || longs > 2 || ints > 1 || sign + unsign > 1 || (bools && (sign || unsign || ints)) ||
        (chars && ints))
      fail(loc, "invalid combination of type specifiers");
    if (bools) return int_type("_Bool", 1, false, true);
    if (chars) return int_type(unsign ? "unsigned char" : sign ? "signed char" : "char", 1, !unsign);
    const char* u = unsign ? "unsigned " : "";
    if (shorts) return int_type(fmt::format("{}short", u), 2, !unsign);
    if (longs == 2) return int_type(fmt::format("{}long long", u), 8, !unsign);
    if (longs == 1) return int_type(fmt::format("{}long", u), 8, !unsign);
    return int_type(unsign ? "unsigned int" : "int", 4, !unsign);
  }

  // A typedef name: the common integer ones, or a kernel typedef (sector_t).
  void named_type(Spec& s) {
    const CTok t = tok();
    advance();
    if (t.text == "void") {
      s.is_void = true;
      s.type = 0;
      return;
    }
    if (t.text == "bool") {
      s.type = int_type("bool", 1, false, true);
      return;
    }
    for (const auto& n : kIntNames) {
      if (n.name == t.text) {
        s.type = int_type(std::string(n.name), n.size, n.is_signed);
        return;
      }
    }
    if (auto id = btf_.find_type(t.text)) {
      s.type = *id;
      return;
    }
    fail(t.loc, fmt::format("unknown type name '{}'", t.text));
  }

  void tag(Spec& s) {
    const CTok kw = tok();
    advance();
    Attrs attrs = attributes();
    std::string name;
    Loc name_loc = kw.loc;
    if (at_ident()) {
      name = std::string(tok().text);
      name_loc = tok().loc;
      advance();
    }
    const std::string key = fmt::format("{} {}", kw.text, name);
    if (!at("{")) {
      if (name.empty()) unexpected(fmt::format("a name or '{{' after '{}'", kw.text));
      if (at(";")) {  // `struct foo;`: a declaration, nothing to resolve
        s.declared = true;
        return;
      }
      s.type = tag_reference(kw.text, key, name_loc);
      return;
    }
    s.defined = true;
    s.anonymous = name.empty();
    enter(kw.loc);
    if (kw.text == "enum") s.type = enum_body(name, key, name_loc);
    else s.type = composite_body(kw.text == "union" ? K::Union : K::Struct, name, key, name_loc, attrs);
    --depth_;
  }

  // `struct foo` without a body: the script's (defined already or later), else the kernel's.
  uint32_t tag_reference(std::string_view kw, const std::string& key, Loc loc) {
    if (auto it = tags_.find(key); it != tags_.end()) return it->second;
    if (script_tags_.count(key)) {
      bpf::BtfNewType t;
      t.kind = kw == "union" ? K::Union : kw == "enum" ? K::Enum : K::Struct;
      t.name = key.substr(kw.size() + 1);
      uint32_t id = add(std::move(t), 1, loc, /*complete=*/false);
      tags_.emplace(key, id);
      return id;
    }
    if (auto id = btf_.find_type(key)) return *id;
    fail(loc, fmt::format("unknown type '{}'", key));
  }

  // The entry for a tag being defined: a new one, or the one a pointer reserved.
  uint32_t begin_tag(K kind, const std::string& name, const std::string& key, Loc loc) {
    if (name.empty()) return add({kind}, 1, loc, false);
    auto it = tags_.find(key);
    if (it != tags_.end()) {
      Local& l = local(it->second);
      if (l.complete || defining_.count(it->second)) fail(loc, fmt::format("redefinition of '{}'", key));
      l.loc = loc;
      return it->second;
    }
    bpf::BtfNewType t;
    t.kind = kind;
    t.name = name;
    uint32_t id = add(std::move(t), 1, loc, false);
    tags_.emplace(key, id);
    return id;
  }

  struct Decl {
    std::string name;
    uint32_t type = 0;
    int64_t bits = -1;  // bitfield width, -1 when not a bitfield
    uint32_t align = 0;  // __attribute__((aligned(N))) on the member
    Loc loc;
  };

  uint32_t composite_body(K kind, const std::string& name, const std::string& key, Loc loc, Attrs attrs) {
    const uint32_t id = begin_tag(kind, name, key, loc);
    defining_.insert(id);
    expect("{");
    std::vector<Decl> decls;
    while (!at("}")) {
      if (tok().kind == CTok::Kind::End) unexpected("'}'");
      Spec s = specifiers();
      if (at(";")) {
        if (s.anonymous && (local(s.type).t.kind == K::Struct || local(s.type).t.kind == K::Union))
          decls.push_back({"", s.type, -1, 0, s.loc});  // an anonymous member: its fields are the outer's
        else if (!s.defined)
          fail(s.loc, "declaration does not declare anything");
        advance();
        continue;
      }
      while (true) {
        decls.push_back(declarator(s));
        if (!accept(",")) break;
      }
      // The last member's ';' may be left out, as clang allows: struct x { long a }.
      if (!at("}")) expect(";");
    }
    expect("}");
    Attrs after = attributes();
    attrs.packed |= after.packed;
    attrs.aligned = std::max(attrs.aligned, after.aligned);
    layout(id, decls, attrs);
    defining_.erase(id);
    return id;
  }

  Decl declarator(const Spec& s) {
    Decl d;
    d.type = s.type;
    d.loc = tok().loc;
    bool pointer = false;
    while (accept("*")) {
      d.type = pointer_to(d.type);
      pointer = true;
      while (at_ident() && is_qualifier(tok().text)) advance();
    }
    if (accept("(")) {
      // A function pointer: `ret (*name)(params)`; only its size matters.
      expect("*");
      if (!at_ident()) unexpected("a name");
      d.name = std::string(tok().text);
      d.loc = tok().loc;
      advance();
      expect(")");
      expect("(");
      for (int open = 1; open > 0; advance()) {
        if (tok().kind == CTok::Kind::End) unexpected("')'");
        open += at("(") ? 1 : at(")") ? -1 : 0;
        if (open == 0) break;
      }
      expect(")");
      d.type = pointer_to(0);
      pointer = true;
    } else if (at_ident()) {
      d.name = std::string(tok().text);
      d.loc = tok().loc;
      advance();
    } else if (!at(":")) {
      unexpected("a member name");
    }
    std::vector<std::pair<uint64_t, Loc>> dims;
    while (at("[")) {
      Loc l = tok().loc;
      advance();
      uint64_t n = 0;
      if (!at("]")) {
        int64_t v = constant();
        if (v < 0) fail(l, "array has a negative size");
        n = static_cast<uint64_t>(v);
      }
      l.end = tok().loc.end;
      expect("]");
      if (n > UINT32_MAX) fail(l, "array is too large");
      dims.emplace_back(n, l);
    }
    if (s.is_void && !pointer) fail(d.loc, fmt::format("field '{}' has incomplete type 'void'", d.name));
    for (auto it = dims.rbegin(); it != dims.rend(); ++it)
      d.type = array_of(d.type, static_cast<uint32_t>(it->first), it->second);
    if (accept(":")) {
      const Loc l = tok().loc;
      d.bits = constant();
      if (!is_integer(d.type)) fail(d.loc, fmt::format("bit-field '{}' has a non-integral type", d.name));
      if (d.bits < 0 || static_cast<uint64_t>(d.bits) > uint64_t{size_of(d.type, d.loc)} * 8)
        fail(l, fmt::format("width of bit-field '{}' ({} bits) exceeds the width of its type", d.name, d.bits));
      if (d.bits == 0 && !d.name.empty()) fail(l, fmt::format("named bit-field '{}' has zero width", d.name));
    } else if (d.name.empty()) {
      unexpected("a member name");
    }
    d.align = attributes().aligned;
    return d;
  }

  bool is_integer(uint32_t id) {
    if (is_local(id)) return local(id).t.kind == K::Int || local(id).t.kind == K::Enum;
    auto bt = btf_.type(id);
    return bt && (bt->kind == bpf::BtfType::Kind::Int || bt->kind == bpf::BtfType::Kind::Enum);
  }

  // Member offsets by the x86-64 System V rules: each member at the next
  // multiple of its alignment; a bitfield goes on in its storage unit unless
  // it would cross it (packed: anywhere); a zero-width bitfield closes the
  // unit; the size is rounded up to the largest alignment.
  void layout(uint32_t id, const std::vector<Decl>& decls, Attrs attrs) {
    const bool is_union = local(id).t.kind == K::Union;
    std::vector<bpf::BtfMember> members;
    std::set<std::string> names;
    uint64_t bit = 0, end_bits = 0;
    uint32_t max_align = 1;
    for (const Decl& d : decls) {
      const uint32_t size = size_of(d.type, d.loc);
      uint32_t align = attrs.packed ? 1 : align_of(d.type);
      align = std::max(align, d.align);
      if (is_union) bit = 0;
      if (d.bits >= 0) {
        const uint64_t unit = uint64_t{size} * 8;
        if (d.bits == 0) {
          bit = align_up(bit, unit);
          continue;
        }
        if (!attrs.packed && bit % unit + static_cast<uint64_t>(d.bits) > unit) bit = align_up(bit, unit);
        if (!d.name.empty()) {
          max_align = std::max(max_align, align);
          members.push_back({d.name, static_cast<uint32_t>(bit), static_cast<uint32_t>(d.bits), d.type});
        }
        bit += static_cast<uint64_t>(d.bits);
      } else {
        bit = align_up(align_up(bit, 8), uint64_t{align} * 8);
        max_align = std::max(max_align, align);
        members.push_back({d.name, static_cast<uint32_t>(bit), 0, d.type});
        bit += uint64_t{size} * 8;
      }
      end_bits = std::max(end_bits, bit);
      if (end_bits > uint64_t{UINT32_MAX} / 2) fail(d.loc, "struct is too large");
      if (!d.name.empty() && !names.insert(d.name).second) fail(d.loc, fmt::format("duplicate member '{}'", d.name));
      // Fields of an anonymous member share the outer namespace.
      if (d.name.empty() && is_local(d.type))
        for (const auto& m : local(d.type).t.members)
          if (!m.name.empty() && !names.insert(m.name).second)
            fail(d.loc, fmt::format("duplicate member '{}'", m.name));
    }
    max_align = std::max(max_align, attrs.aligned);
    Local& l = local(id);
    l.t.size = static_cast<uint32_t>(align_up(align_up(end_bits, 8) / 8, max_align));
    l.t.members = std::move(members);
    l.align = max_align;
    l.complete = true;
  }

  uint32_t enum_body(const std::string& name, const std::string& key, Loc loc) {
    const uint32_t id = begin_tag(K::Enum, name, key, loc);
    expect("{");
    std::vector<std::pair<std::string, int64_t>> values;
    int64_t next = 0;
    while (!at("}")) {
      if (!at_ident()) unexpected("an enumerator name");
      const CTok n = tok();
      advance();
      if (accept("=")) next = constant();
      if (!enumerators_.emplace(std::string(n.text), next).second)
        fail(n.loc, fmt::format("redefinition of enumerator '{}'", n.text));
      values.emplace_back(std::string(n.text), next);
      ++next;
      if (!accept(",")) break;
    }
    expect("}");
    const bool negative = std::any_of(values.begin(), values.end(), [](const auto& v) { return v.second < 0; });
    const bool fits32 = std::all_of(values.begin(), values.end(), [&](const auto& v) {
      return negative ? v.second >= INT32_MIN && v.second <= INT32_MAX : v.second <= int64_t{UINT32_MAX};
    });
    Local& l = local(id);
    l.t.values = std::move(values);
    l.t.size = fits32 ? 4 : 8;
    l.t.is_signed = negative;
    l.align = l.t.size;
    l.complete = true;
    return id;
  }

  // --- constant expressions (array sizes, bitfield widths, enumerator values) ---

  int64_t constant() { return binary(0); }

  static int precedence(std::string_view op) {
    if (op == "|") return 1;
    if (op == "^") return 2;
    if (op == "&") return 3;
    if (op == "<<" || op == ">>") return 4;
    if (op == "+" || op == "-") return 5;
    if (op == "*" || op == "/" || op == "%") return 6;
    return 0;
  }

  int64_t binary(int min_prec) {
    enter(tok().loc);
    int64_t lhs = unary();
    while (tok().kind == CTok::Kind::Punct) {
      const CTok op = tok();
      const int prec = precedence(op.text);
      if (prec == 0 || prec <= min_prec) break;
      advance();
      const int64_t rhs = binary(prec);
      const auto a = static_cast<uint64_t>(lhs), b = static_cast<uint64_t>(rhs);
      if ((op.text == "/" || op.text == "%") && rhs == 0) fail(op.loc, "division by zero in a constant expression");
      if (op.text == "|") lhs = static_cast<int64_t>(a | b);
      else if (op.text == "^") lhs = static_cast<int64_t>(a ^ b);
      else if (op.text == "&") lhs = static_cast<int64_t>(a & b);
      else if (op.text == "<<") lhs = static_cast<int64_t>(b >= 64 ? 0 : a << b);
      else if (op.text == ">>") lhs = b >= 64 ? (lhs < 0 ? -1 : 0) : lhs >> b;
      else if (op.text == "+") lhs = static_cast<int64_t>(a + b);
      else if (op.text == "-") lhs = static_cast<int64_t>(a - b);
      else if (op.text == "*") lhs = static_cast<int64_t>(a * b);
      else if (op.text == "/") lhs = (lhs == INT64_MIN && rhs == -1) ? lhs : lhs / rhs;
      else lhs = (lhs == INT64_MIN && rhs == -1) ? 0 : lhs % rhs;
    }
    --depth_;
    return lhs;
  }

  int64_t unary() {
    const CTok t = tok();
    if (accept("-")) return static_cast<int64_t>(0 - static_cast<uint64_t>(unary()));
    if (accept("+")) return unary();
    if (accept("~")) return ~unary();
    if (accept("!")) return !unary();
    if (accept("(")) {
      int64_t v = binary(0);
      expect(")");
      return v;
    }
    if (t.kind == CTok::Kind::Int) {
      advance();
      return static_cast<int64_t>(t.value);
    }
    if (t.kind == CTok::Kind::Ident) {
      advance();
      if (auto it = enumerators_.find(std::string(t.text)); it != enumerators_.end()) return it->second;
      if (auto v = btf_.enum_value(t.text)) return *v;
      fail(t.loc, fmt::format("'{}' is not a constant", t.text));
    }
    unexpected("a constant");
  }

  Attrs attributes() {
    Attrs a;
    while (at("__attribute__")) {
      advance();
      expect("(");
      expect("(");
      while (!at(")")) {
        if (!at_ident()) unexpected("an attribute");
        std::string_view w = tok().text;
        advance();
        if (w == "packed" || w == "__packed__") {
          a.packed = true;
        } else if (w == "aligned" || w == "__aligned__") {
          uint32_t n = 16;  // aligned alone: the largest alignment (x86-64)
          if (accept("(")) {
            const Loc l = tok().loc;
            int64_t v = constant();
            if (v <= 0 || v > 4096 || (v & (v - 1))) fail(l, "requested alignment is not a power of 2");
            n = static_cast<uint32_t>(v);
            expect(")");
          }
          a.aligned = std::max(a.aligned, n);
        } else if (accept("(")) {  // another attribute: its arguments are skipped
          for (int open = 1; open > 0; advance()) {
            if (tok().kind == CTok::Kind::End) unexpected("')'");
            open += at("(") ? 1 : at(")") ? -1 : 0;
            if (open == 0) break;
          }
          expect(")");
        }
        if (!accept(",")) break;
      }
      expect(")");
      expect(")");
    }
    return a;
  }

  const lang::Program& program_;
  bpf::Btf& btf_;
  lang::Diagnostics& diags_;
  const uint32_t base_;
  std::vector<Local> types_;
  std::map<std::string, uint32_t> tags_;            // "struct foo" -> id, the script's
  std::set<std::string> script_tags_;               // every tag the script defines
  std::set<uint32_t> defining_;                     // tags whose body is being parsed
  std::unordered_map<std::string, uint32_t> ints_;  // by name
  std::unordered_map<uint32_t, uint32_t> pointers_;  // pointee -> pointer
  std::unordered_map<uint32_t, uint32_t> kernel_aligns_;
  std::unordered_map<std::string, int64_t> enumerators_;
  const std::vector<CTok>* toks_ = nullptr;
  size_t pos_ = 0;
  int depth_ = 0;
  bool failed_ = false;
};

}  // namespace

bool add_c_definitions(const lang::Program& program, bpf::Btf& btf, lang::Diagnostics& diags) {
  if (program.c_definitions.empty()) return true;
  return CParser(program, btf, diags).run();
}

}  // namespace bpfscope::sema
