// Internal to src/output: text for the SVG writers (flame graphs, heat maps).
#pragma once

#include <string>
#include <string_view>

namespace bpfscope::output {

// Appends `s` as XML text (also fit for attribute values in double quotes):
// & < > " escaped; control characters other than tab become '?', and so
// does every byte of a malformed UTF-8 sequence (a symbol name is bytes, and
// one bad byte would make the whole file unreadable).
void append_xml(std::string& out, std::string_view s);

}  // namespace bpfscope::output
