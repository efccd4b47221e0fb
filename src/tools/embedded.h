// The tool files, embedded by cmake/embed_tools.cmake (generated source).
#pragma once

#include <cstddef>

namespace bpfscope::tools {

struct EmbeddedFile {
  const char* name;    // "tcplife"
  const char* source;  // the file's text
};

extern const EmbeddedFile kEmbeddedTools[];
extern const size_t kEmbeddedToolCount;

}  // namespace bpfscope::tools
