// docs/one-liners.md read as data (cookbook.h).
#include "cookbook/cookbook.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "bpf/bpf.h"

namespace bpfscope::cookbook {

extern const char kEmbeddedText[];

namespace {

// "`text`" -> "text"; empty when the value is not one backquoted span.
std::string unquote(std::string_view v) {
  if (v.size() < 2 || v.front() != '`' || v.back() != '`') return "";
  return std::string(v.substr(1, v.size() - 2));
}

// "`FUNCTION` -> `PROBE`".
bool parse_replacement(std::string_view v, Replacement& r) {
  auto arrow = v.find(" -> ");
  if (arrow == std::string_view::npos) return false;
  r.function = unquote(v.substr(0, arrow));
  r.probe = unquote(v.substr(arrow + 4));
  return !r.function.empty() && !r.probe.empty();
}

// One "- key: value" line of an entry into `e`; false for an unknown key or
// a value not in its form.
bool parse_entry_line(std::string_view key, std::string_view value, Entry& e) {
  if (key == "book") {
    e.book.emplace_back(value);
    return true;
  }
  if (key == "bcc" || key == "bpftrace") {
    std::string cmd = unquote(value);
    if (!cmd.starts_with("bpfscope ")) return false;
    (key == "bcc" ? e.bcc : e.bpftrace) = std::move(cmd);
    return true;
  }
  if (key == "differs") {
    e.differs = value;
    return true;
  }
  if (key == "untested") {
    e.untested = value;
    return true;
  }
  if (key == "kernel") {
    Replacement r;
    if (!parse_replacement(value, r)) return false;
    e.kernel.push_back(std::move(r));
    return true;
  }
  return false;
}

// The number of characters of a glob that are not wildcards: the more, the
// more specific ("udp*_sendmsg" before "udp_*" for udp_sendmsg).
size_t literal_chars(std::string_view glob) {
  return static_cast<size_t>(std::count_if(glob.begin(), glob.end(), [](char c) { return c != '*' && c != '?'; }));
}

void print_entry(const Entry& e, FILE* out) {
  fmt::print(out, "{}  {}\n", e.id, e.question);
  if (!e.bcc.empty()) fmt::print(out, "    {}\n", e.bcc);
  if (!e.bpftrace.empty()) fmt::print(out, "    {}\n", e.bpftrace);
  // The `kernel:` lines of an entry without `differs:` only feed the hints.
  if (!e.kernel.empty() && !e.differs.empty()) {
    std::string fns;
    for (const auto& r : e.kernel) fns += (fns.empty() ? "" : ", ") + r.function;
    fmt::print(out, "    (instead of kprobes on {}: {})\n", fns, e.differs);
  } else if (!e.differs.empty()) {
    fmt::print(out, "    ({})\n", e.differs);
  }
  if (!e.untested.empty()) fmt::print(out, "    (untested here: {})\n", e.untested);
}

}  // namespace

Parsed parse(std::string_view text) {
  Parsed p;
  Entry* entry = nullptr;
  size_t line_no = 0;
  const auto fail = [&](std::string_view why) {
    p.error = fmt::format("line {}: {}", line_no, why);
    return p;
  };
  while (!text.empty()) {
    ++line_no;
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.starts_with("## ")) {
      auto colon = line.find(": ");
      if (colon == std::string_view::npos) return fail("a topic is `## NAME: title`");
      p.book.topics.push_back({std::string(line.substr(3, colon - 3)), std::string(line.substr(colon + 2))});
      entry = nullptr;
    } else if (line.starts_with("### ")) {
      auto colon = line.find(": ");
      if (colon == std::string_view::npos) return fail("an entry is `### ID: question`");
      if (p.book.topics.empty()) return fail("an entry before the first topic");
      Entry e;
      e.id = line.substr(4, colon - 4);
      e.question = line.substr(colon + 2);
      e.topic = p.book.topics.back().name;
      for (const auto& other : p.book.entries)
        if (other.id == e.id) return fail(fmt::format("a second entry {}", e.id));
      p.book.entries.push_back(std::move(e));
      entry = &p.book.entries.back();
    } else if (line.starts_with("- ") && entry) {
      auto colon = line.find(": ");
      if (colon == std::string_view::npos) return fail("an entry's line is `- KEY: VALUE`");
      if (!parse_entry_line(line.substr(2, colon - 2), line.substr(colon + 2), *entry))
        return fail(fmt::format("bad `{}` line", line.substr(2, colon - 2)));
    }
  }
  for (const auto& e : p.book.entries)
    if (e.bcc.empty() && e.bpftrace.empty()) {
      p.error = fmt::format("entry {} has no command", e.id);
      break;
    }
  return p;
}

const Cookbook& embedded() {
  // Parsed on first use and never changed after; the unit test checks that
  // the embedded text parses.
  static const Cookbook book = [] {
    Parsed p = parse(kEmbeddedText);
    if (!p.error.empty()) {
      fmt::print(stderr, "ERROR: the embedded docs/one-liners.md: {}\n", p.error);
      abort();
    }
    return std::move(p.book);
  }();
  return book;
}

int print_examples(std::string_view what, FILE* out, FILE* err) {
  const Cookbook& book = embedded();
  for (const auto& e : book.entries)
    if (e.id == what) {
      print_entry(e, out);
      return 0;
    }
  bool known = what.empty();
  for (const auto& t : book.topics) known = known || t.name == what;
  if (!known) {
    std::string names;
    for (const auto& t : book.topics) names += fmt::format("    {:<6} {}\n", t.name, t.title);
    fmt::print(err, "ERROR: --examples: no topic or entry {}; the topics:\n{}", what, names);
    return 1;
  }
  bool first = true;
  for (const auto& t : book.topics) {
    if (!what.empty() && t.name != what) continue;
    if (what.empty()) fmt::print(out, "{}# {}\n\n", first ? "" : "\n", t.title);
    bool first_entry = true;
    for (const auto& e : book.entries) {
      if (e.topic != t.name) continue;
      if (!first_entry) fmt::print(out, "\n");
      print_entry(e, out);
      first_entry = false;
    }
    first = false;
  }
  return 0;
}

Found find_replacement(std::string_view function) {
  const Cookbook& book = embedded();
  Found best{nullptr, nullptr};
  for (const auto& e : book.entries)
    for (const auto& r : e.kernel) {
      if (r.function == function) return {&e, &r};
      if (bpf::glob_match(r.function, function) &&
          (!best.replacement || literal_chars(r.function) > literal_chars(best.replacement->function)))
        best = {&e, &r};
    }
  return best;
}

}  // namespace bpfscope::cookbook
