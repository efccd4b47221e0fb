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
  // The script alone, without the segments appended after it.
  std::string_view main_text() const { return std::string_view(text_).substr(0, main_size_); }

  // Appends `text` as a segment of its own named `name` (a tool option's
  // value spliced into the script, tools/README.md): locations in it report
  // that name, line 1 and columns from its start. Returns its offset.
  uint32_t add_segment(std::string name, std::string_view text);
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
  uint32_t main_size_ = 0;
  std::vector<std::pair<uint32_t, std::string>> segments_;  // start offset, name; in order
};

}  // namespace bpfscope::lang
