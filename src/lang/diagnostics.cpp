#include "lang/diagnostics.h"

#include <fmt/format.h>

#include <set>

namespace bpfscope::lang {

void Diagnostics::error(Loc loc, std::string msg, std::vector<std::string> hints) {
  diags_.push_back({Severity::Error, loc, true, std::move(msg), std::move(hints)});
  ++errors_;
}

void Diagnostics::warning(Loc loc, std::string msg, std::vector<std::string> hints) {
  diags_.push_back({Severity::Warning, loc, true, std::move(msg), std::move(hints)});
}

void Diagnostics::warning_unlocated(std::string msg) {
  for (const auto& d : diags_)
    if (!d.located && d.severity == Severity::Warning && d.message == msg) return;
  diags_.push_back({Severity::Warning, {}, false, std::move(msg), {}});
}

void Diagnostics::error_unlocated(std::string msg, std::vector<std::string> hints) {
  diags_.push_back({Severity::Error, {}, false, std::move(msg), std::move(hints)});
  ++errors_;
}

static std::string expand_tabs(std::string_view line) {
  std::string out;
  for (char c : line) {
    if (c == '\t')
      out += "    ";
    else
      out += c;
  }
  return out;
}

std::string location(const Source& src, Loc loc) {
  LineCol a = src.line_col(loc.begin);
  LineCol b = src.line_col(loc.end > loc.begin ? loc.end - 1 : loc.begin);
  if (a.line != b.line) return fmt::format("{}:{}-{}", src.name_at(loc.begin), a.line, b.line);
  uint32_t end_col = loc.end > loc.begin ? src.line_col(loc.end).col : a.col + 1;
  if (loc.end > loc.begin && src.line_col(loc.end).line != a.line) end_col = b.col + 1;
  return fmt::format("{}:{}:{}-{}", src.name_at(loc.begin), a.line, a.col, end_col);
}

std::string render(const Source& src, const Diagnostic& d) {
  const char* sev = d.severity == Severity::Error ? "ERROR" : "WARNING";
  std::string out;
  if (!d.located) {
    out = fmt::format("{}: {}\n", sev, d.message);
  } else {
    LineCol a = src.line_col(d.loc.begin);
    LineCol b = src.line_col(d.loc.end > d.loc.begin ? d.loc.end - 1 : d.loc.begin);
    out = fmt::format("{}: {}: {}\n", location(src, d.loc), sev, d.message);
    if (a.line != b.line) {
      // 0.26 prints every line of the range, with no underline.
      uint32_t off = d.loc.begin;
      for (uint32_t l = a.line; l <= b.line && off <= src.text().size(); ++l) {
        std::string_view line = src.line_of(off);
        out += expand_tabs(line) + "\n";
        off = static_cast<uint32_t>(line.data() - src.text().data() + line.size() + 1);
      }
    } else {
      uint32_t end_col = d.loc.end > d.loc.begin ? src.line_col(d.loc.end).col : a.col + 1;
      if (d.loc.end > d.loc.begin && src.line_col(d.loc.end).line != a.line) end_col = b.col + 1;
      out += expand_tabs(src.line_of(d.loc.begin)) + "\n";
      out += std::string(a.col - 1, ' ') + std::string(end_col > a.col ? end_col - a.col : 1, '~') + "\n";
    }
  }
  for (const auto& h : d.hints) out += fmt::format("HINT: {}\n", h);
  return out;
}

std::string Diagnostics::render(const Source& src, std::string_view tool) const {
  if (tool.empty()) return render(src);
  std::string out;
  std::set<std::string_view> said;
  // An error in a tool option's text (a spliced expression) is the user's
  // own: the first one per option value is shown, located in it; the rest
  // follow from it (a field that does not exist has no type, so the map
  // that would hold it is never made...).
  std::set<const char*> segments;  // each option value's text is one line
  bool in_segment = false;
  for (const auto& d : diags_)
    in_segment |= d.severity == Severity::Error && d.located && src.in_spliced(d.loc.begin);
  for (const auto& d : diags_) {
    if (in_segment) {
      if (d.severity == Severity::Error && d.located && src.in_spliced(d.loc.begin) &&
          segments.insert(src.line_of(d.loc.begin).data()).second)
        out += fmt::format("{}: {}", tool, lang::render(src, d));
      continue;
    }
    // One line per message: a tool's six probes on a missing library fail alike.
    if (d.severity != Severity::Error || !said.insert(d.message).second) continue;
    // An attach point that splices an argument the user gave fails for it:
    // the argument is named, not the tool's file (lang::locate_arguments).
    if (const Source::Argument* arg = d.located ? src.argument_at(d.loc.begin) : nullptr)
      out += fmt::format("{}: {}: {}\n", tool, arg->label, d.message);
    else
      out += fmt::format("{}: {}{}\n", tool, d.message, d.located ? fmt::format(" ({})", location(src, d.loc)) : "");
    for (const auto& h : d.hints) out += fmt::format("{}: HINT: {}\n", tool, h);
  }
  return out;
}

std::string Diagnostics::render(const Source& src) const {
  std::string out;
  for (auto sev : {Severity::Error, Severity::Warning})
    for (const auto& d : diags_)
      if (d.severity == sev) out += lang::render(src, d);
  return out;
}

}  // namespace bpfscope::lang
