// A run's -f record output as a recording: what json.cpp adds to bpftrace's
// messages so that nothing is lost (typed keys, the aggregation and its
// parameters), and `bpfscope render`'s reading of it back into the value
// model, rendered by the same renderers as a live run.
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <utility>

#include "output/json_read.h"
#include "output/map_common.h"
#include "output/output.h"

namespace bpfscope::output {

// Typed JSON: numbers and strings as themselves, the rest tagged so that a
// value reads back with the kind its text depends on (a pointer prints in
// hex, an enum by name, a tuple in parentheses, a stack with its frames).
std::string typed_json(const Value& v) {
  const auto list = [](const std::vector<Value>& elems) {
    std::string out = "[";
    for (size_t i = 0; i < elems.size(); ++i) out += (i ? "," : "") + typed_json(elems[i]);
    return out + "]";
  };
  switch (v.kind) {
    case Value::Kind::None: return "null";
    case Value::Kind::Int:
      if (v.is_enum) return fmt::format("{{\"enum\":{},\"name\":{}}}", v.i, json_string(v.s));
      return fmt::format("{}", v.i);
    case Value::Kind::UInt:
      if (v.is_enum) return fmt::format("{{\"enum\":{},\"name\":{}}}", v.u, json_string(v.s));
      if (v.pointer) return fmt::format("{{\"ptr\":{}}}", v.u);
      return fmt::format("{{\"uint\":{}}}", v.u);
    case Value::Kind::Bool: return v.i ? "true" : "false";
    case Value::Kind::Float: return fmt::format("{{\"float\":{}}}", json_value(v));
    case Value::Kind::String: {
      if (v.stack == Value::StackOf::None) return json_string(v.s);
      std::string frames = "[";
      for (size_t i = 0; i < v.elems.size(); ++i) frames += (i ? "," : "") + json_string(v.elems[i].s);
      return fmt::format("{{\"stack\":\"{}\",\"text\":{},\"frames\":{}]}}",
                         v.stack == Value::StackOf::Kernel ? "kernel" : "user", json_string(v.s), frames);
    }
    case Value::Kind::Buffer: return fmt::format("{{\"buffer\":{}}}", json_string(v.s));
    case Value::Kind::Array: return fmt::format("{{\"array\":{}}}", list(v.elems));
    case Value::Kind::Tuple: {
      if (v.names.empty()) return fmt::format("{{\"tuple\":{}}}", list(v.elems));
      std::string names = "[";
      for (size_t i = 0; i < v.names.size(); ++i) names += (i ? "," : "") + json_string(v.names[i]);
      return fmt::format("{{\"record\":{},\"names\":{}]}}", list(v.elems), names);
    }
  }
  return "null";
}

namespace {

using Kind = Json::Kind;

std::optional<Value> typed_value(const Json& j, std::string& error) {
  const auto list = [&](const Json* a, std::vector<Value>& out) {
    if (!a || a->kind != Kind::Array) return false;
    for (const Json& e : a->items) {
      auto v = typed_value(e, error);
      if (!v) return false;
      out.push_back(std::move(*v));
    }
    return true;
  };
  switch (j.kind) {
    case Kind::Null: return Value{};
    case Kind::Bool: return Value::of_bool(j.b);
    case Kind::Number:
      if (!j.is_int()) break;
      return j.text[0] == '-' ? Value::of_int(j.as_i64()) : Value::of_int(static_cast<int64_t>(j.as_u64()));
    case Kind::String: return Value::of_string(j.text);
    case Kind::Array: break;
    case Kind::Object: {
      if (const Json* n = j.find("uint")) return Value::of_uint(n->as_u64());
      if (const Json* n = j.find("ptr")) return Value::of_pointer(n->as_u64());
      if (const Json* n = j.find("enum")) {
        const Json* name = j.find("name");
        Value v = n->text[0] == '-' ? Value::of_int(n->as_i64()) : Value::of_uint(n->as_u64());
        v.is_enum = true;
        v.s = name ? name->text : "";
        return v;
      }
      if (const Json* n = j.find("float")) return Value::of_float(n->as_double());
      if (const Json* n = j.find("buffer")) return Value::of_buffer(n->text);
      if (const Json* s = j.find("stack")) {
        const Json* text = j.find("text");
        const Json* frames = j.find("frames");
        if (!text || !frames || frames->kind != Kind::Array) break;
        std::vector<std::string> names;
        for (const Json& f : frames->items) names.push_back(f.text);
        return Value::of_stack(s->text == "kernel" ? Value::StackOf::Kernel : Value::StackOf::User, text->text,
                               std::move(names));
      }
      std::vector<Value> elems;
      if (const Json* a = j.find("array")) return list(a, elems) ? std::optional(Value::of_array(elems)) : std::nullopt;
      if (const Json* a = j.find("tuple")) return list(a, elems) ? std::optional(Value::of_tuple(elems)) : std::nullopt;
      if (const Json* a = j.find("record")) {
        const Json* names = j.find("names");
        if (!list(a, elems) || !names || names->items.size() != elems.size()) break;
        std::vector<std::string> n;
        for (const Json& x : names->items) n.push_back(x.text);
        return Value::of_record(std::move(n), std::move(elems));
      }
      break;
    }
  }
  if (error.empty()) error = "a value the recording cannot hold";
  return std::nullopt;
}

// A number of a map's value: an integer, or one too large for a double,
// written as a string.
Value number(const Json& j) {
  if (j.kind == Kind::String || j.is_int()) {
    const std::string& t = j.text;
    if (!t.empty() && t[0] == '-') return Value::of_int(j.as_i64());
    const uint64_t u = j.as_u64();
    return u > static_cast<uint64_t>(INT64_MAX) ? Value::of_uint(u) : Value::of_int(static_cast<int64_t>(u));
  }
  return Value::of_int(j.as_i64());
}

// "1970-01-01 00:00:00.500000000" (UTC, as tseries intervals start) in ns
// since the epoch.
std::optional<uint64_t> utc_ns(const std::string& text) {
  struct tm tm = {};
  unsigned long frac = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d.%9lu%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &frac, &used) != 7 ||
      static_cast<size_t>(used) != text.size())
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t sec = timegm(&tm);
  if (sec < 0) return std::nullopt;
  return static_cast<uint64_t>(sec) * 1'000'000'000 + frac;
}

// One entry's value from its JSON (bpftrace's form of that aggregation).
bool aggregate_of(const MapSnapshot& map, const Json& j, const Json* typed, Aggregate& a, std::string& error) {
  switch (map.kind) {
    case AggKind::Plain:
      if (typed) {
        auto v = typed_value(*typed, error);
        if (!v) return false;
        a.value = std::move(*v);
        return true;
      }
      [[fallthrough]];
    case AggKind::Count:
    case AggKind::Sum:
    case AggKind::Min:
    case AggKind::Max:
      a.value = number(j);
      return true;
    case AggKind::Avg:
      // The mean as printed: a count of 1 gives it back.
      a.count = 1;
      a.total = number(j).as_i64();
      return true;
    case AggKind::Stats: {
      const Json* c = j.find("count");
      const Json* t = j.find("total");
      if (!c || !t) return error = "a stats value without count and total", false;
      a.count = number(*c).as_i64();
      a.total = number(*t).as_i64();
      return true;
    }
    case AggKind::Hist:
    case AggKind::LHist: {
      if (j.kind != Kind::Array) return error = "a histogram that is not a list of buckets", false;
      const bool log2 = map.kind == AggKind::Hist;
      a.buckets.assign(log2 ? hist_bucket_count(map.hist.bits)
                            : lhist_bucket_count(map.hist.min, map.hist.max, map.hist.step), 0);
      for (const Json& b : j.items) {
        const Json* min = b.find("min");
        const Json* count = b.find("count");
        if (!count) return error = "a bucket without a count", false;
        size_t i = 0;
        if (min) {
          const int64_t lo = number(*min).as_i64();
          i = log2 ? hist_index(lo, map.hist.bits) : lhist_index(lo, map.hist.min, map.hist.max, map.hist.step);
        }
        if (i >= a.buckets.size()) return error = "a bucket outside the histogram", false;
        a.buckets[i] = count->as_u64();
      }
      return true;
    }
    case AggKind::TSeries: {
      if (j.kind != Kind::Array) return error = "a tseries that is not a list of intervals", false;
      for (const Json& p : j.items) {
        const Json* start = p.find("interval_start");
        const Json* v = p.find("value");
        const auto ns = start && start->kind == Kind::String ? utc_ns(start->text) : std::nullopt;
        if (!ns || !v) return error = "an interval without its interval_start and value", false;
        a.series.emplace(*ns / map.tseries.interval_ns, number(*v).as_i64());
      }
      return true;
    }
  }
  return false;
}

std::optional<MapSnapshot> map_of(const Json& msg, std::string_view type, std::string& error) {
  const Json* data = msg.find("data");
  if (!data || data->kind != Kind::Object || data->members.size() != 1)
    return error = "a map message without one map in its data", std::nullopt;
  MapSnapshot map;
  map.name = data->members[0].first;
  const Json& body = data->members[0].second;
  const Json* agg = msg.find("agg");
  // bpftrace's own JSON has no "agg": read it as the kind its type names.
  std::optional<AggKind> kind = agg                 ? agg_of(agg->text)
                                : type == "hist"    ? AggKind::Hist
                                : type == "stats"   ? AggKind::Stats
                                : type == "tseries" ? AggKind::TSeries
                                                    : AggKind::Plain;
  if (!kind) return error = fmt::format("unknown aggregation \"{}\"", agg->text), std::nullopt;
  map.kind = *kind;
  if (const Json* b = msg.find("bits")) map.hist.bits = static_cast<int>(b->as_i64());
  if (map.kind == AggKind::LHist) {
    const Json *min = msg.find("min"), *max = msg.find("max"), *step = msg.find("step");
    if (!min || !max || !step || step->as_i64() <= 0) return error = "an lhist without min, max and step", std::nullopt;
    map.hist.min = min->as_i64();
    map.hist.max = max->as_i64();
    map.hist.step = step->as_i64();
  }
  if (map.kind == AggKind::TSeries) {
    const Json *interval = msg.find("interval_ns"), *intervals = msg.find("intervals"), *agg = msg.find("tseries_agg");
    if (!interval || !intervals || interval->as_u64() == 0 || intervals->as_u64() == 0)
      return error = "a tseries without interval_ns and intervals", std::nullopt;
    map.tseries.interval_ns = interval->as_u64();
    map.tseries.intervals = static_cast<uint32_t>(intervals->as_u64());
    if (agg) map.tseries.agg = tseries_agg_of(agg->text).value_or(TSeriesAgg::Last);
  }
  if (const Json* s = msg.find("signed")) map.value_signed = s->b;
  const Json* keys = msg.find("keys");
  const Json* values = msg.find("values");
  map.keyed = keys != nullptr || (!agg && body.kind == Kind::Object && map.kind != AggKind::Stats);
  if (!map.keyed) {
    Aggregate a;
    const Json* typed = values && !values->items.empty() ? &values->items[0] : nullptr;
    if (!aggregate_of(map, body, typed, a, error)) return std::nullopt;
    map.entries.emplace_back(Value{}, std::move(a));
    return map;
  }
  if (body.kind != Kind::Object) return error = "a keyed map whose data is not an object", std::nullopt;
  if (keys && keys->items.size() != body.members.size())
    return error = "a map with another number of keys than entries", std::nullopt;
  for (size_t i = 0; i < body.members.size(); ++i) {
    std::optional<Value> key = keys ? typed_value(keys->items[i], error) : Value::of_string(body.members[i].first);
    if (!key) return std::nullopt;
    Aggregate a;
    const Json* typed = values && i < values->items.size() ? &values->items[i] : nullptr;
    if (!aggregate_of(map, body.members[i].second, typed, a, error)) return std::nullopt;
    map.entries.emplace_back(std::move(*key), std::move(a));
  }
  return map;
}

std::string text_field(const Json& msg, std::string_view name) {
  const Json* t = msg.find(name);
  return t && t->kind == Kind::String ? t->text : "";
}

}  // namespace

std::optional<Rendered> render_message(std::string_view line, const RenderOptions& opts, std::string& error) {
  Rendered r;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return r;  // blank lines (bpftrace 0.17)
  auto msg = parse_json(line, error);
  if (!msg) return std::nullopt;
  const Json* type = msg->find("type");
  if (msg->kind != Kind::Object || !type || type->kind != Kind::String)
    return error = "not a message: no \"type\"", std::nullopt;
  const std::string& t = type->text;
  if (const Json* time = msg->find("time"); time && time->kind == Kind::Number) r.time = time->as_double();
  if (t == "printf" || t == "time" || t == "join" || t == "cat" || t == "syscall") {
    r.out = text_field(*msg, "data");
  } else if (t == "event" || t == "table") {
    if (!msg->find("text")) return error = fmt::format("a {} message without its \"text\"", t), std::nullopt;
    r.out = text_field(*msg, "text");
  } else if (t == "value") {
    const Json* typed = msg->find("typed");
    if (!typed) return error = "a value message without its \"typed\" value", std::nullopt;
    auto v = typed_value(*typed, error);
    if (!v) return std::nullopt;
    r.out = to_text(*v) + "\n";
  } else if (t == "map" || t == "hist" || t == "stats" || t == "tseries") {
    auto map = map_of(*msg, t, error);
    if (!map) return std::nullopt;
    const Json* layout = msg->find("layout");
    const bool bcc = layout && layout->text == "bcc";
    if (const Json* g = msg->find("graph")) {
      r.graph = graph_kind(g->text);
      if (!r.graph) return error = fmt::format("unknown graph \"{}\"", g->text), std::nullopt;
      r.unit = text_field(*msg, "unit");
    }
    const Json* drawn = msg->find("drawn_only");
    if (opts.folded && is_foldable(*map)) {
      r.out = folded_text(*map, stack_layout(r.graph.value_or(GraphKind::Cpu)));
    } else if (drawn && drawn->b) {
      // Not printed by the text run.
    } else {
      std::string text = map_text(*map, 0, 0, bcc ? HistLayout::Bcc : HistLayout::Bpftrace,
                                  opts.percentiles || msg->find("percentiles") != nullptr);
      (opts.folded ? r.err : r.out) = std::move(text);
    }
    r.map = std::move(*map);
  } else if (t == "exit") {
    r.exit = true;
    const Json* data = msg->find("data");
    const Json* gap = data ? data->find("gap") : nullptr;
    if (gap && gap->b) r.out = "\n\n";
  } else if (t == "attached_probes") {
    r.attached = true;
    const int64_t n = msg->find("count") ? msg->find("count")->as_i64() : 0;
    r.err = fmt::format("Attached {} probe{}\n", n, n == 1 ? "" : "s");
  } else if (t == "lost_events") {
    r.err = fmt::format("Lost {} events\n", msg->find("count") ? msg->find("count")->as_i64() : 0);
  } else if ((t == "errorf" || t == "warnf" || t == "helper_error") && msg->find("text")) {
    r.err = text_field(*msg, "text");
  } else if (t == "errorf" || t == "warnf" || t == "helper_error") {  // bpftrace's, without "text"
    const Json* l = msg->find("line");
    const Json* c = msg->find("col");
    r.err = fmt::format("{}:{}:{}: {}: {}\n", text_field(*msg, "filename"), l ? l->as_i64() : 0, c ? c->as_i64() : 0,
                        t == "errorf" ? "ERROR" : "WARNING", text_field(*msg, "msg"));
  } else {
    return error = fmt::format("unknown message type \"{}\"", t), std::nullopt;
  }
  // -f folded: only folded stacks on the output (the map branch sorts maps).
  if (opts.folded && !r.map) r.err.insert(0, std::exchange(r.out, ""));
  return r;
}

std::optional<AggKind> agg_of(std::string_view name) {
  for (AggKind k : {AggKind::Plain, AggKind::Count, AggKind::Sum, AggKind::Min, AggKind::Max, AggKind::Avg,
                    AggKind::Stats, AggKind::Hist, AggKind::LHist, AggKind::TSeries})
    if (agg_name(k) == name) return k;
  return std::nullopt;
}

}  // namespace bpfscope::output
