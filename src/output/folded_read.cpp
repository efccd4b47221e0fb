// Folded stacks read back into the stack model (bpfscope render): the
// format -f folded writes and FlameGraph's stackcollapse scripts print.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "output/output.h"

namespace bpfscope::output {

namespace {

std::string_view trim_end(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::expected<StackSet, std::string> read_folded(std::string_view text, std::string_view filename) {
  StackSet set;
  bool has_user = false, has_kernel = false;
  size_t lineno = 0;
  int64_t total = 0;
  set.stacks.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  auto fail = [&](std::string_view msg) {
    return std::unexpected(fmt::format("{}:{}: ERROR: {}", filename, lineno, msg));
  };
  while (!text.empty()) {
    ++lineno;
    const size_t nl = text.find('\n');
    std::string_view line = trim_end(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    // The count follows the last space: frame names may hold spaces.
    const size_t sp = line.rfind(' ');
    if (sp == std::string_view::npos) return fail("expected \"frame;frame;... COUNT\", found no count");
    std::string_view count = line.substr(sp + 1), frames = trim_end(line.substr(0, sp));
    Stack s;
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), s.count);
    if (ec != std::errc() || end != count.data() + count.size() || s.count < 0)
      return fail(fmt::format("the count \"{}\" is not a non-negative integer", count));
    // A second count makes a differential line ("stack before after").
    if (const size_t sp2 = frames.rfind(' '); sp2 != std::string_view::npos) {
      std::string_view before = frames.substr(sp2 + 1);
      int64_t ignored;
      const auto [e2, ec2] = std::from_chars(before.data(), before.data() + before.size(), ignored);
      if (ec2 == std::errc() && e2 == before.data() + before.size())
        return fail("two counts: differential folded stacks are not supported");
    }
    if (frames.empty()) return fail("no frames before the count");
    s.frames.reserve(static_cast<size_t>(std::count(frames.begin(), frames.end(), ';')) + 1);
    while (true) {
      const size_t semi = frames.find(';');
      std::string_view name = frames.substr(0, semi);
      if (name.empty()) return fail("an empty frame name (\";;\", or \";\" at an end)");
      Frame f{std::string(name), FrameKind::User};
      if (name == "--") {
        f.kind = FrameKind::Separator;
      } else if (name.ends_with("_[k]") && name.size() > 4) {
        f.name.resize(f.name.size() - 4);
        f.kind = FrameKind::Kernel;
      }
      has_user |= f.kind == FrameKind::User;
      has_kernel |= f.kind == FrameKind::Kernel;
      s.frames.push_back(std::move(f));
      if (semi == std::string_view::npos) break;
      frames.remove_prefix(semi + 1);
    }
    // The graph sums the counts: their total must stay an int64.
    if (__builtin_add_overflow(total, s.count, &total)) return fail("the counts add up to more than 2^63 - 1");
    set.stacks.push_back(std::move(s));
  }
  set.user_and_kernel = has_user && has_kernel;
  return set;
}

}  // namespace bpfscope::output
