// Source text and byte ranges into it. Every AST node, IR instruction and
// emitted BPF instruction carries a Loc, so any later error (a type error, a
// verifier rejection) can point back at the script.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bpfscope::lang {

// Half-open byte range [begin, end) into Source::text.
struct Loc {
  uint32_t begin = 0;
  uint32_t end = 0;
};

inline Loc join(Loc a, Loc b) { return {a.begin < b.begin ? a.begin : b.begin, a.end > b.end ? a.end : b.end}; }

struct LineCol {
  uint32_t line = 1;  // 1-based
  uint32_t col = 1;   // 1-based, tabs count as 4 (bpftrace's rendering rule)
};

class Source {
 public:
  Source() = default;
  // name: "stdin" for -e and -, else the path as given.
  Source(std::string name, std::string text);

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }

  // Appends `text` as a segment of its own named `name` (a tool option's
  // value spliced into the script, tools/README.md): locations in it report
  // that name, line 1 and columns from its start. Returns its offset.
  uint32_t add_segment(std::string name, std::string_view text);
  // Appends a value given on a tool's command line that an attach point
  // splices (the pattern of funccount 'tcp*', profile's -F 1000000), so that
  // an error located in it names the value as the user wrote it (`label`:
  // "pattern 'tcp*'", "-F 1000000"), not the tool's file. `before` and
  // `after` are the rest of the command line around the value, for a hint
  // that suggests another value. Returns its offset.
  uint32_t add_argument(std::string label, std::string_view text, std::string before, std::string after);
  struct Argument {
    std::string label;
    std::string before, after;
    // The command line with `value` (shell-quoted) in place of the given one.
    std::string retry(std::string_view value) const;
  };
  // The argument that holds `offset`, if it lies in one.
  const Argument* argument_at(uint32_t offset) const;
  // Appends a whole file (an imported script) as a segment named `name`:
  // it keeps its lines, and locations in it report its own line numbers.
  // Returns its offset.
  uint32_t add_file(std::string name, std::string_view text);
  // Whether `offset` lies in a segment added by add_segment (a tool option's
  // value spliced as script text), not in the script, a file it imports or
  // an argument.
  bool in_spliced(uint32_t offset) const;
  // Where the script or imported file that holds `offset` starts.
  uint32_t file_start(uint32_t offset) const;
  // The name a location reports: the script's, or its segment's.
  const std::string& name_at(uint32_t offset) const;
  LineCol line_col(uint32_t offset) const;
  // The line (without newline) that contains offset.
  std::string_view line_of(uint32_t offset) const;
  std::string_view slice(Loc loc) const { return std::string_view(text_).substr(loc.begin, loc.end - loc.begin); }

 private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
  struct Segment {
    uint32_t start;       // offset of its first byte
    std::string name;
    uint32_t first_line;  // index of its first line in line_starts_
    bool lines;           // a file (add_file): its own line numbers; else line 1
    int argument = -1;    // an add_argument() segment: its index in arguments_
  };
  uint32_t start_segment(std::string name, bool lines);
  const Segment* segment_at(uint32_t offset) const;
  std::vector<Segment> segments_;  // in order
  std::vector<Argument> arguments_;
};

// `value` as a shell reads it: plain when it has no special characters, else
// in single quotes ('t:tcp:*').
std::string shell_word(std::string_view value);

}  // namespace bpfscope::lang
