#include "runtime/verifier_log.h"

#include <cctype>

namespace bpfscope::runtime {

// The log prints each instruction it checks as "N: (op) ...", then the error
// on the following lines, then a summary ("processed N insns ...").
VerifierFailure parse_verifier_log(std::string_view log) {
  VerifierFailure f;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    start = end + 1;
    size_t digits = 0;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
    if (digits > 0 && line.substr(digits, 3) == ": (") {
      f.insn = std::stoi(std::string(line.substr(0, digits)));
      continue;
    }
    bool summary = line.starts_with("processed ") || line.starts_with("verification time") ||
                   line.starts_with("stack depth") || line.starts_with("-- END PROG LOAD LOG --") || line.empty();
    if (!summary) f.message = std::string(line);
  }
  return f;
}

}  // namespace bpfscope::runtime
