#include "lang/source.h"

#include <algorithm>
#include <cctype>

namespace bpfscope::lang {

Source::Source(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

// A newline first, so that the segment starts a line of its own.
uint32_t Source::start_segment(std::string name, bool lines) {
  text_ += '\n';
  const auto start = static_cast<uint32_t>(text_.size());
  segments_.push_back({start, std::move(name), static_cast<uint32_t>(line_starts_.size()), lines});
  line_starts_.push_back(start);
  return start;
}

// Its newlines are spaces, so that it stays one line.
uint32_t Source::add_segment(std::string name, std::string_view text) {
  const uint32_t start = start_segment(std::move(name), false);
  for (char c : text) text_ += c == '\n' ? ' ' : c;
  return start;
}

uint32_t Source::add_argument(std::string label, std::string_view text, std::string before, std::string after) {
  const uint32_t start = add_segment(label, text);
  segments_.back().argument = static_cast<int>(arguments_.size());
  arguments_.push_back({std::move(label), std::move(before), std::move(after)});
  return start;
}

const Source::Argument* Source::argument_at(uint32_t offset) const {
  const Segment* seg = segment_at(offset);
  return seg && seg->argument >= 0 ? &arguments_[static_cast<size_t>(seg->argument)] : nullptr;
}

std::string shell_word(std::string_view value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return isalnum(static_cast<unsigned char>(c)) || std::string_view("_./:,=+@%-").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(value);
  std::string quoted = "'";
  for (char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string Source::Argument::retry(std::string_view value) const { return before + shell_word(value) + after; }

uint32_t Source::add_file(std::string name, std::string_view text) {
  const uint32_t start = start_segment(std::move(name), true);
  for (char c : text) {
    text_ += c;
    if (c == '\n') line_starts_.push_back(static_cast<uint32_t>(text_.size()));
  }
  return start;
}

const Source::Segment* Source::segment_at(uint32_t offset) const {
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it)
    if (offset >= it->start) return &*it;
  return nullptr;
}

const std::string& Source::name_at(uint32_t offset) const {
  const Segment* seg = segment_at(offset);
  return seg ? seg->name : name_;
}

bool Source::in_spliced(uint32_t offset) const {
  const Segment* seg = segment_at(offset);
  return seg && !seg->lines && seg->argument < 0;
}

uint32_t Source::file_start(uint32_t offset) const {
  const Segment* seg = segment_at(offset);
  return seg ? seg->start : 0;
}

LineCol Source::line_col(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - line_starts_.begin());
  uint32_t start = line_starts_[line - 1];
  if (const Segment* seg = segment_at(offset))
    line = seg->lines ? line - seg->first_line : 1;  // a spliced value is line 1 of its own text
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
