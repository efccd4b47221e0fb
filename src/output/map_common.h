// Internal to src/output: map helpers shared by the text and JSON renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "output/output.h"

namespace bpfscope::output {

// Signed value / div with div > 0, safe for any uint64 div.
int64_t div_signed(int64_t v, uint64_t div);

// v / div for Int and UInt values (div > 0); other kinds are returned as is.
Value divide(const Value& v, uint64_t div);

// avg()/stats() average: total / count truncated toward zero, 0 when empty.
Value average(const Aggregate& a, bool is_signed);

// A stats count or total as a signed or unsigned value.
Value stat_number(int64_t n, bool is_signed);

// The number one entry of a count, sum, min, max, avg or plain map shows: its
// value, or an avg()'s truncated mean.
Value entry_number(const MapSnapshot& map, const Aggregate& a);

// A tseries() entry as bpftrace's graph: the value scale, a row per
// interval of the map's window ("<no data>" when none), the scale again.
std::string tseries_text(const MapSnapshot& map, const Aggregate& a);
// ... and in JSON: [{"interval_start":"1970-01-01 00:00:00.500000000","value":9},...].
std::string tseries_json(const MapSnapshot& map, const Aggregate& a);

// Key order (REFERENCE 4.3): <0, 0 or >0 as a sorts before, with or after b.
int compare_keys(const Value& a, const Value& b);

// Ascending order per REFERENCE 4.3 (stable: ties keep the snapshot's order).
void sort_entries(const MapSnapshot& map, std::vector<std::pair<Value, Aggregate>>& entries);

// The entries print(@m, top) shows, in print order: sorted, the last `top`
// kept (0 = all), a scalar map cut to its one entry.
std::vector<std::pair<Value, Aggregate>> select_entries(const MapSnapshot& map, uint64_t top);

// An aggregation's name in a recording's "agg" ("count", "lhist"...), and
// back (nullopt for a name that is none).
std::string_view agg_name(AggKind kind);
std::optional<AggKind> agg_of(std::string_view name);

}  // namespace bpfscope::output
