// The build's provenance, written at every build by cmake/version.cmake
// (bpfscope --version, the man pages' date).
#pragma once

namespace bpfscope {

extern const char* const kGitRevision;  // "cda64cd23ab1", "cda64cd23ab1-dirty", or "unknown"
extern const char* const kGitDate;      // the commit's date, "2026-11-27" (without git, the build's)

}  // namespace bpfscope
