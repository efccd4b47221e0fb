// The tool files, embedded by cmake/embed_tools.cmake (generated source).
#pragma once

#include <cstddef>

namespace bpfscope::tools {

struct EmbeddedFile {
  const char* name;    // "tcplife" (a library file: "tools/lib/tcp.bt")
  const char* source;  // the file's text
};

extern const EmbeddedFile kEmbeddedTools[];
extern const size_t kEmbeddedToolCount;
// tools/lib/*.bt, the files tools import, by path: "tools/lib/tcp.bt".
extern const EmbeddedFile kEmbeddedLibrary[];
extern const size_t kEmbeddedLibraryCount;

}  // namespace bpfscope::tools
