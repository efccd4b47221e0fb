// Stacks of maps keyed by kstack/ustack (the model that folded text and
// flame graphs share), and folded stacks (`-f folded`): one line per stack,
// "frame;frame;frame count", root first, as FlameGraph and speedscope read.
#include <fmt/format.h>

#include <map>
#include <span>
#include <utility>

#include "output/map_common.h"
#include "output/output.h"

namespace bpfscope::output {

namespace {

// A frame may not contain the separator; FlameGraph splits the count off at
// the last space, so spaces may stay.
std::string frame_text(std::string s) {
  for (char& c : s)
    if (c == ';' || c == '\n') c = ':';
  return s;
}

void fields(const Value& key, std::vector<const Value*>& out) {
  if (key.kind == Value::Kind::Tuple && key.names.empty()) {
    for (const auto& e : key.elems) out.push_back(&e);
  } else if (key.kind != Value::Kind::None) {
    out.push_back(&key);
  }
}

FrameKind kind_of(Value::StackOf of) {
  switch (of) {
    case Value::StackOf::None: return FrameKind::Other;
    case Value::StackOf::User: return FrameKind::User;
    case Value::StackOf::Kernel: return FrameKind::Kernel;
  }
  std::unreachable();
}

}  // namespace

bool tracer_frame(std::string_view name) {
  if (name.starts_with("bpf_prog_")) {
    const std::string_view tag = name.substr(9, 16);
    return tag.size() == 16 && tag.find_first_not_of("0123456789abcdef") == std::string_view::npos &&
           (name.size() == 25 || name[25] == '_');
  }
  return name.starts_with("bpf_trace_run") || name.starts_with("__bpf_trace_") || name.starts_with("__traceiter_") ||
         name.starts_with("bpf_trampoline_");
}

namespace {

// Calls `f` with each frame name of a stack value, root first. A kernel
// stack leaves out the tracer's frames at its leaf end.
template <typename F>
void each_frame(const Value& stack, F f) {
  size_t skip = 0;
  while (stack.stack == Value::StackOf::Kernel && skip < stack.elems.size() && tracer_frame(stack.elems[skip].s))
    ++skip;
  for (auto it = stack.elems.rbegin(); it != stack.elems.rend() - static_cast<std::ptrdiff_t>(skip); ++it) f(it->s);
}

// Key fields, root first: the other fields, then the user stacks, then the
// kernel stacks, each stack's frames root first.
void plain_frames(std::span<const Value* const> f, std::vector<Frame>& frames) {
  for (const Value* v : f)
    if (v->stack == Value::StackOf::None) frames.push_back({to_text(*v), FrameKind::Other});
  for (auto of : {Value::StackOf::User, Value::StackOf::Kernel}) {
    for (const Value* v : f) {
      if (v->stack != of) continue;
      each_frame(*v, [&](const std::string& name) { frames.push_back({name, kind_of(of)}); });
    }
  }
}

}  // namespace

bool is_foldable(const MapSnapshot& map) {
  if (!map.keyed || is_histogram(map.kind) || map.kind == AggKind::Stats || map.kind == AggKind::TSeries) return false;
  for (const auto& [key, agg] : map.entries) {
    std::vector<const Value*> f;
    fields(key, f);
    for (const Value* v : f)
      if (v->stack != Value::StackOf::None) return true;
    return false;  // every key of a map has the same fields
  }
  return false;
}

StackSet map_stacks(const MapSnapshot& map, StackLayout layout) {
  StackSet set;
  std::vector<const Value*> f;
  for (const auto& [key, agg] : map.entries) {
    f.clear();
    fields(key, f);
    bool has_user = false, has_kernel = false;
    for (const Value* v : f) {
      has_user |= v->stack == Value::StackOf::User;
      has_kernel |= v->stack == Value::StackOf::Kernel;
    }
    set.user_and_kernel |= has_user && has_kernel;
    Stack s;
    switch (layout) {
      case StackLayout::Plain: plain_frames(f, s.frames); break;
      case StackLayout::OffWake: {
        // The blocked thread's half root first; the waker's half the same
        // way, then reversed, so that its leaf meets the separator.
        const size_t half = f.size() / 2;
        plain_frames(std::span(f).first(half), s.frames);
        s.frames.push_back({"--", FrameKind::Separator});
        std::vector<Frame> waker;
        plain_frames(std::span(f).subspan(half), waker);
        s.frames.insert(s.frames.end(), waker.rbegin(), waker.rend());
        break;
      }
    }
    s.count = entry_number(map, agg).as_i64();
    set.stacks.push_back(std::move(s));
  }
  return set;
}

std::string folded_text(const StackSet& set) {
  std::map<std::string, int64_t> lines;
  std::string line;
  for (const Stack& s : set.stacks) {
    // A key with no frames at all (an empty kernel stack of a user-space
    // sample) has no place in a flame graph.
    if (s.frames.empty()) continue;
    line.clear();
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (i) line += ';';
      line += frame_text(s.frames[i].name);
      if (s.frames[i].kind == FrameKind::Kernel && set.user_and_kernel) line += "_[k]";
    }
    lines[line] += s.count;
  }
  std::string out;
  for (const auto& [text, n] : lines) out += fmt::format("{} {}\n", text, n);
  return out;
}

std::string folded_stack(const Value& stack) {
  std::string out;
  bool first = true;
  each_frame(stack, [&](const std::string& name) {
    if (!first) out += ';';
    out += frame_text(name);
    first = false;
  });
  return out;
}

std::string folded_text(const MapSnapshot& map, StackLayout layout) { return folded_text(map_stacks(map, layout)); }

}  // namespace bpfscope::output
