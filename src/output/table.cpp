// Tables of maps joined by key: print((@rx / 1024, @tx / 1024), rows,
// "%-6d %-12.12s %6d %6d", "PID COMM RX_KB TX_KB"), a bpfscope extension for
// top-style tools (tcptop, biotop).
#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <unordered_map>

#include "output/map_common.h"
#include "output/output.h"

namespace bpfscope::output {

namespace {

Value divided(const Value& v, const TableDivisor& d) {
  if (d.by == 0) return v;
  if (d.is_float) return Value::of_float(v.as_double() / d.by);
  return divide(v, static_cast<uint64_t>(d.by));
}

// The key's fields as columns: a tuple key gives one column per element.
void key_columns(const Value& key, std::vector<Value>& out) {
  if (key.kind == Value::Kind::Tuple && key.names.empty()) {
    out.insert(out.end(), key.elems.begin(), key.elems.end());
  } else if (key.kind != Value::Kind::None) {
    out.push_back(key);
  }
}

std::string pad(const std::string& s, size_t width, bool left) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

// The width written in a conversion ("%-12.12s" -> 12; none -> 0) and
// whether it pads on the right ('-').
std::pair<size_t, bool> spec_width(const std::string& spec) {
  size_t i = 1;
  bool left = false;
  while (i < spec.size() && std::string_view("-+ #0").find(spec[i]) != std::string_view::npos) left |= spec[i++] == '-';
  size_t w = 0;
  while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') w = w * 10 + static_cast<size_t>(spec[i++] - '0');
  return {w, left};
}

// A record key's column reads "fd = 1, size = 16" (bcc argdist's EVENT).
Value cell_value(const Value& v) {
  if (v.kind != Value::Kind::Tuple || v.names.empty()) return v;
  std::string s;
  for (size_t i = 0; i < v.elems.size(); ++i) s += (i ? ", " : "") + v.names[i] + " = " + to_text(v.elems[i]);
  return Value::of_string(s);
}

}  // namespace

Table join_maps(const std::vector<const MapSnapshot*>& maps, const std::vector<TableDivisor>& divisors,
                uint64_t limit, const MapSnapshot* order_by) {
  struct Row {
    Value key;
    std::string key_text;  // joins the maps' entries, and breaks ties
    std::vector<Value> values;
    double total = 0;
  };
  std::vector<Row> rows;
  std::unordered_map<std::string, size_t> index;
  for (size_t m = 0; m < maps.size(); ++m) {
    for (const auto& [key, agg] : maps[m]->entries) {
      std::string text = key_text(key);
      auto [it, added] = index.try_emplace(text, rows.size());
      if (added) rows.push_back(Row{key, std::move(text), std::vector<Value>(maps.size(), Value::of_int(0)), 0});
      Row& r = rows[it->second];
      r.values[m] = entry_number(*maps[m], agg);
      r.total += r.values[m].as_double();
    }
  }
  if (order_by) {
    for (auto& r : rows) r.total = 0;
    for (const auto& [key, agg] : order_by->entries)
      if (auto it = index.find(key_text(key)); it != index.end())
        rows[it->second].total = entry_number(*order_by, agg).as_double();
  }
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rows[a].total != rows[b].total) return rows[a].total > rows[b].total;
    return rows[a].key_text < rows[b].key_text;
  });
  if (limit != 0 && order.size() > limit) order.resize(limit);
  Table t;
  for (size_t i : order) {
    std::vector<Value> cells;
    key_columns(rows[i].key, cells);
    for (size_t m = 0; m < maps.size(); ++m)
      cells.push_back(divided(rows[i].values[m], m < divisors.size() ? divisors[m] : TableDivisor{}));
    t.rows.push_back(std::move(cells));
  }
  return t;
}

void order_columns(Table& t, const PrintfFormat& row) {
  bool any = false;
  for (const auto& spec : row.specs) any |= spec.column >= 0;
  if (!any) return;
  for (auto& cells : t.rows) {
    std::vector<Value> ordered;
    for (size_t c = 0; c < row.specs.size(); ++c) {
      const size_t from = row.specs[c].column >= 0 ? static_cast<size_t>(row.specs[c].column) : c;
      ordered.push_back(from < cells.size() ? cells[from] : Value());
    }
    cells = std::move(ordered);
  }
}

std::string table_text(const Table& t, const std::vector<std::string>& names, const PrintfFormat& row) {
  const size_t ncols = row.specs.size();
  // Each cell as its conversion prints it; then every column is as wide as
  // its widest cell or its name, so an IPv6 address or a long number keeps
  // the columns aligned.
  std::vector<std::vector<std::string>> cells(t.rows.size(), std::vector<std::string>(ncols));
  std::vector<size_t> width(ncols);
  std::vector<char> left(ncols);
  for (size_t c = 0; c < ncols; ++c) {
    PrintfSpec one = row.specs[c];
    one.literal_before.clear();
    const PrintfFormat f{.specs = {one}, .trailing = ""};
    const auto [w, l] = spec_width(one.spec);
    width[c] = std::max(w, c < names.size() ? names[c].size() : 0);
    left[c] = l;
    for (size_t r = 0; r < t.rows.size(); ++r) {
      cells[r][c] = c < t.rows[r].size() ? format_printf(f, {cell_value(t.rows[r][c])}) : "";
      width[c] = std::max(width[c], cells[r][c].size());
    }
  }
  const auto line = [&](auto&& cell) {
    std::string s;
    for (size_t c = 0; c < ncols; ++c) s += row.specs[c].literal_before + pad(cell(c), width[c], left[c]);
    s += row.trailing;
    // Trailing spaces of a left-aligned last column are not kept.
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line([&](size_t c) { return c < names.size() ? names[c] : std::string(); });
  for (size_t r = 0; r < t.rows.size(); ++r) out += line([&](size_t c) { return cells[r][c]; });
  return out;
}

std::string json_table(const Table& t, const std::vector<std::string>& names) {
  std::vector<std::string> keys;
  for (const auto& n : names) {
    std::string k = n;
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    keys.push_back(std::move(k));
  }
  std::string data = "[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (r != 0) data += ", ";
    std::vector<Value> v = t.rows[r];
    v.resize(keys.size());
    data += json_value(Value::of_record(keys, v));
  }
  return fmt::format("{{\"type\": \"table\", \"data\": {}]}}\n", data);
}

namespace {
// --mode bench's columns: the name (at least 40 wide, and one space), the
// mean time (15 wide), then the iteration count.
size_t benchmark_name_width(const std::vector<std::string>& names) {
  size_t w = 40;
  for (const auto& n : names) w = std::max(w, n.size());
  return w + 1;
}
}  // namespace

std::string benchmark_header(const std::vector<std::string>& names) {
  const size_t w = benchmark_name_width(names);
  return fmt::format("{:<{}}{:<15}Iterations\n{}\n", "Benchmark", w, "Time(ns)", std::string(w + 15 + 10, '-'));
}

std::string benchmark_row(const std::vector<std::string>& names, std::string_view name, uint64_t average_ns,
                          uint64_t iters) {
  return fmt::format("{:<{}}{:<15}{}\n", name, benchmark_name_width(names), average_ns, iters);
}

}  // namespace bpfscope::output
