#include "lang/source.h"

#include <algorithm>

namespace bpfscope::lang {

Source::Source(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  main_size_ = static_cast<uint32_t>(text_.size());
}

uint32_t Source::add_segment(std::string name, std::string_view text) {
  // A newline first, so that the segment starts a line of its own; its own
  // newlines are spaces, so that it stays one line.
  text_ += '\n';
  const auto start = static_cast<uint32_t>(text_.size());
  line_starts_.push_back(start);
  for (char c : text) text_ += c == '\n' ? ' ' : c;
  segments_.emplace_back(start, std::move(name));
  return start;
}

const std::string& Source::name_at(uint32_t offset) const {
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it)
    if (offset >= it->first) return it->second;
  return name_;
}

LineCol Source::line_col(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - line_starts_.begin());
  uint32_t start = line_starts_[line - 1];
  if (start > main_size_) line = 1;  // a segment is line 1 of its own text
  uint32_t col = 1;
  for (uint32_t i = start; i < offset; ++i) col += text_[i] == '\t' ? 4 : 1;
  return {line, col};
}

std::string_view Source::line_of(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  uint32_t start = *(it - 1);
  uint32_t end = start;
  while (end < text_.size() && text_[end] != '\n') ++end;
  return std::string_view(text_).substr(start, end - start);
}

}  // namespace bpfscope::lang
