// Man pages in roff (man(7)): bpfscope(8) from the text of `bpfscope --help`,
// and a tool's page from its header (tools/README.md), so that neither can
// drift from what the program prints. The build writes them with `bpfscope
// --man [TOOL]` (CMakeLists.txt).
#include <fmt/format.h>

#include <cctype>

#include "tools/tools.h"

namespace bpfscope::tools {

namespace {

// Text for a roff line: backslashes and hyphens escaped (an option's -x is
// a minus sign in man(7)), and a line that would start with a control
// character guarded.
std::string esc(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (c == '\\')
      s += "\\e";
    else if (c == '-')
      s += "\\-";
    else
      s += c;
  }
  if (!s.empty() && (s[0] == '.' || s[0] == '\'')) s.insert(0, "\\&");
  return s;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  return u;
}

std::string title(std::string_view name, std::string_view date, std::string_view version, std::string_view manual) {
  return fmt::format(".TH \"{}\" 8 \"{}\" \"bpfscope {}\" \"{}\"\n", upper(name), date, version, manual);
}

// "-p, --pid PID" in bold and italics.
std::string option_tag(const OptionSpec& o) {
  std::string s;
  if (o.letter) s += fmt::format("\\fB\\-{}\\fR, ", o.letter);
  s += fmt::format("\\fB\\-\\-{}\\fR", esc(o.name));
  if (!o.metavar.empty()) s += fmt::format(" \\fI{}\\fR", esc(o.metavar));
  return s;
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

size_t indent_of(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return lines;
}

// A --help section of entries ("    -e PROGRAM     the program to run", a
// description continued on lines indented to its column) as .TP items. The
// description starts after two spaces, or else at the first lower-case
// word after one space from about the section's description column (that
// of its continuation lines): "--max-series N series...", where
// "--probe-filter REGEX" is all tag.
std::string entries(const std::vector<std::string_view>& lines) {
  size_t column = 0;
  for (auto l : lines)
    if (indent_of(l) > 4 && !strip(l).empty()) {
      column = indent_of(l);
      break;
    }
  std::string out;
  for (auto l : lines) {
    if (strip(l).empty()) continue;
    if (indent_of(l) > 4) {
      out += esc(strip(l)) + "\n";
      continue;
    }
    std::string_view body = l.substr(indent_of(l));
    std::string_view tag = body, desc;
    if (size_t gap = body.find("  "); gap != std::string_view::npos) {
      tag = body.substr(0, gap);
      desc = strip(body.substr(gap));
    } else if (column > 4) {
      for (size_t sp = l.find(' ', column - 1); sp != std::string_view::npos && sp + 1 < l.size();
           sp = l.find(' ', sp + 1))
        if (islower(static_cast<unsigned char>(l[sp + 1]))) {
          tag = strip(l.substr(0, sp));
          desc = l.substr(sp + 1);
          break;
        }
    }
    out += ".TP\n\\fB" + esc(tag) + "\\fR\n";
    if (!desc.empty()) out += esc(desc) + "\n";
  }
  return out;
}

std::string preformatted(const std::vector<std::string_view>& lines) {
  std::string out = ".RS 4\n.nf\n";
  size_t margin = std::string_view::npos;
  for (auto l : lines)
    if (!strip(l).empty()) margin = std::min(margin, indent_of(l));
  for (auto l : lines) out += (strip(l).empty() ? "" : esc(l.substr(margin))) + "\n";
  while (out.ends_with("\n\n")) out.pop_back();
  return out + ".fi\n.RE\n";
}

}  // namespace

std::string man_page(const Tool& tool, std::string_view version, std::string_view date) {
  std::string s = title(tool.name, date, version, "bpfscope tools");
  s += fmt::format(".SH NAME\n{} \\- {}\n", esc(tool.name), esc(tool.about));
  s += fmt::format(".SH SYNOPSIS\n.B bpfscope {}\n[\\fB\\-h\\fR]", esc(tool.name));
  for (const auto& o : tool.options) {
    std::string flag = o.letter ? fmt::format("\\-{}", o.letter) : "\\-\\-" + esc(o.name);
    s += o.metavar.empty() ? fmt::format(" [\\fB{}\\fR]", flag)
                           : fmt::format(" [\\fB{}\\fR \\fI{}\\fR]", flag, esc(o.metavar));
  }
  for (const auto& a : tool.args)
    s += a.default_value ? fmt::format(" [\\fI{}\\fR]", esc(a.name)) : fmt::format(" \\fI{}\\fR", esc(a.name));
  s += "\n.SH DESCRIPTION\n";
  s += esc(tool.about) + "\n";
  for (const auto& n : tool.notes) s += ".PP\n" + esc(n) + "\n";
  if (tool.percentiles) s += ".PP\n" + esc(std::string(kPercentilesNote)) + "\n";
  s += fmt::format(
      ".PP\n{0} is a tool of\n.BR bpfscope (8):\n"
      "a bpftrace program that bpfscope carries built in, run as \\fBbpfscope {0}\\fR.\n"
      "\\fBbpfscope {0} \\-\\-source\\fR prints it; a copy, changed, runs as \\fBbpfscope ./{0}.bt\\fR with the "
      "same options.\n",
      esc(tool.name));
  if (!tool.args.empty()) {
    s += ".SH ARGUMENTS\n";
    for (const auto& a : tool.args) {
      s += fmt::format(".TP\n.I {}\n{}", esc(a.name), esc(a.help));
      s += a.default_value ? fmt::format(" (default {})\n", esc(*a.default_value)) : "\n";
    }
  }
  s += ".SH OPTIONS\n";
  for (const auto& o : tool.options) {
    s += ".TP\n" + option_tag(o) + "\n" + esc(o.help);
    s += o.default_value ? fmt::format(" (default {})\n", esc(*o.default_value)) : "\n";
  }
  s += ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nShow the usage.\n";
  s += ".TP\n\\fB\\-\\-source\\fR\nPrint the tool's script.\n";
  s += ".PP\nThe options of\n.BR bpfscope (8)\nalso apply, before the tool's name or after it where the tool does "
       "not use the letter: \\fB\\-o\\fR \\fIFILE\\fR, \\fB\\-f json\\fR, \\fB\\-q\\fR, \\fB\\-v\\fR, "
       "\\fB\\-\\-dry\\-run\\fR, \\fB\\-c\\fR \\fICMD\\fR, \\fB\\-k\\fR, \\fB\\-\\-prometheus\\fR "
       "[\\fIADDR\\fR:]\\fIPORT\\fR (long forms \\fB\\-\\-output\\fR, \\fB\\-\\-format\\fR, \\fB\\-\\-quiet\\fR, "
       "\\fB\\-\\-verbose\\fR, \\fB\\-\\-cmd\\fR).\n";
  if (!tool.columns.empty()) {
    s += ".SH COLUMNS\n";
    // A name with spaces ('TIME (us)') is one argument of .B, in double quotes.
    for (const auto& [name, help] : tool.columns) {
      std::string tag = name.find(' ') == std::string::npos ? esc(name) : "\"" + esc(name) + "\"";
      s += fmt::format(".TP\n.B {}\n{}\n", tag, esc(help));
    }
  }
  if (!tool.metrics.empty()) {
    s += ".SH METRICS\nWith \\fB\\-\\-prometheus\\fR [\\fIADDR\\fR:]\\fIPORT\\fR, served on /metrics:\n";
    for (const auto& m : tool.metrics) {
      const std::string labels = metric_labels(m.naming);
      s += fmt::format(".TP\n.B bpfscope_{}\n{}{}\n", esc(m.naming.name), esc(m.naming.help),
                       labels.empty() ? "" : esc(" (labels: " + labels + ")"));
    }
  }
  if (!tool.examples.empty()) {
    s += ".SH EXAMPLES\n";
    for (const auto& e : tool.examples) {
      std::string_view command = e, comment;
      if (size_t hash = e.find("  #"); hash != std::string::npos) {
        command = strip(std::string_view(e).substr(0, hash));
        comment = strip(std::string_view(e).substr(hash + 3));
      }
      // The header's examples start with the tool's name: run through bpfscope.
      std::string line = command.starts_with(tool.name + " ") || command == tool.name
                             ? "bpfscope " + std::string(command)
                             : std::string(command);
      s += fmt::format(".TP\n.B {}\n{}\n", esc(line), comment.empty() ? "" : esc(comment));
    }
  }
  s += ".SH SEE ALSO\n.BR bpfscope (8),\n.BR bpftrace (8)\n";
  return s;
}

std::string program_man_page(std::string_view help, std::string_view about, std::string_view description,
                             std::string_view version, std::string_view date) {
  std::string s = title("bpfscope", date, version, "System Manager's Manual");
  s += fmt::format(".SH NAME\nbpfscope \\- {}\n", esc(about));
  // The sections of --help: "NAME:" at the margin, then indented lines.
  std::vector<std::pair<std::string_view, std::vector<std::string_view>>> sections;
  for (auto l : lines_of(help)) {
    if (!l.empty() && l[0] != ' ' && l.ends_with(':'))
      sections.push_back({l.substr(0, l.size() - 1), {}});
    else if (!sections.empty())
      sections.back().second.push_back(l);
  }
  std::string body;
  for (const auto& [name, lines] : sections) {
    if (name == "USAGE") {
      s += ".SH SYNOPSIS\n" + preformatted(lines);
      s += ".SH DESCRIPTION\n";
      for (auto para : lines_of(description)) s += (para.empty() ? ".PP" : esc(para)) + "\n";
    } else if (name == "EXAMPLES") {
      body += ".SH EXAMPLES\n" + preformatted(lines);
    } else {
      body += ".SH " + esc(name) + "\n" + entries(lines);
    }
  }
  s += body;
  s += ".SH TOOLS\nEach tool is run as \\fBbpfscope\\fR \\fITOOL\\fR [\\fIOPTIONS\\fR]; \\fBbpfscope tools\\fR "
       "says which run on this kernel.\n";
  for (const auto& t : all()) s += fmt::format(".TP\n.BR {} (8)\n{}\n", esc(t.name), esc(t.about));
  s += ".SH SEE ALSO\n.BR bpftrace (8)\n";
  return s;
}

}  // namespace bpfscope::tools
