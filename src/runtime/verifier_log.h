// Reading the kernel verifier's log: which instruction it rejected and why,
// so that the rejection can be reported at the script location that
// produced the instruction. Internal to the runtime (and its tests).
#pragma once

#include <string>
#include <string_view>

namespace bpfscope::runtime {

struct VerifierFailure {
  int insn = -1;        // the last instruction the log shows, or -1
  std::string message;  // the log's last meaningful line
};

VerifierFailure parse_verifier_log(std::string_view log);

}  // namespace bpfscope::runtime
