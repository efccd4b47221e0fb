// For the metrics tests that hand a page to a parser outside bpfscope
// (promtool, protoc): a scratch directory and a shell command.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace bpfscope::output::test {

// A directory for one check, removed afterwards.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    std::string t = (std::filesystem::temp_directory_path() / "bpfscope-metrics-XXXXXX").string();
    path = mkdtemp(t.data()) ? t : "";
  }
  ~ScratchDir() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
};

// Runs a shell command; its status and what it printed (both streams).
inline int run_shell(const std::string& cmd, std::string& output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  return pclose(p);
}

}  // namespace bpfscope::output::test
