// Folded stacks (`-f folded`): one line per map entry keyed by a stack,
// "frame;frame;frame count", root first, as FlameGraph and speedscope read.
#include <fmt/format.h>
#include <map>

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

}  // namespace

bool is_foldable(const MapSnapshot& map) {
  if (!map.keyed || map.kind == AggKind::Hist || map.kind == AggKind::LHist || map.kind == AggKind::Stats) return false;
  for (const auto& [key, agg] : map.entries) {
    std::vector<const Value*> f;
    fields(key, f);
    for (const Value* v : f)
      if (v->stack != Value::StackOf::None) return true;
    return false;  // every key of a map has the same fields
  }
  return false;
}

std::string folded_text(const MapSnapshot& map) {
  std::map<std::string, int64_t> lines;
  for (const auto& [key, agg] : map.entries) {
    std::vector<const Value*> f;
    fields(key, f);
    bool has_user = false, has_kernel = false;
    for (const Value* v : f) {
      has_user |= v->stack == Value::StackOf::User;
      has_kernel |= v->stack == Value::StackOf::Kernel;
    }
    // Other key fields (comm, pid...) first, as the base frames; then the
    // user stack, then the kernel stack above it, each root first.
    std::vector<std::string> frames;
    for (const Value* v : f)
      if (v->stack == Value::StackOf::None) frames.push_back(frame_text(to_text(*v)));
    for (auto of : {Value::StackOf::User, Value::StackOf::Kernel}) {
      const char* mark = of == Value::StackOf::Kernel && has_user && has_kernel ? "_[k]" : "";
      for (const Value* v : f) {
        if (v->stack != of) continue;
        for (auto it = v->elems.rbegin(); it != v->elems.rend(); ++it) frames.push_back(frame_text(it->s) + mark);
      }
    }
    std::string line;
    for (size_t i = 0; i < frames.size(); ++i) line += (i ? ";" : "") + frames[i];
    const Value n = map.kind == AggKind::Avg ? average(agg, map.value_signed) : agg.value;
    lines[line] += n.as_i64();
  }
  // A key with no frames at all (an empty kernel stack of a user-space
  // sample) has no place in a flame graph.
  std::string out;
  for (const auto& [line, n] : lines)
    if (!line.empty()) out += fmt::format("{} {}\n", line, n);
  return out;
}

}  // namespace bpfscope::output
