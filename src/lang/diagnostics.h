// Diagnostics as values: every stage reports into a Diagnostics sink, and one
// renderer prints them in bpftrace's form (REFERENCE.md section 8):
//
//   FILE:LINE:COL1-COL2: ERROR: message
//   <source line>
//   <~~~ underline>
#pragma once

#include <string>
#include <vector>

#include "lang/source.h"

namespace bpfscope::lang {

enum class Severity { Error, Warning };

struct Diagnostic {
  Severity severity = Severity::Error;
  Loc loc;
  bool located = true;  // false: rendered as a bare "ERROR: msg"
  std::string message;
  std::vector<std::string> hints;  // rendered as "HINT: text" lines
};

class Diagnostics {
 public:
  void error(Loc loc, std::string msg, std::vector<std::string> hints = {});
  void warning(Loc loc, std::string msg, std::vector<std::string> hints = {});
  void error_unlocated(std::string msg, std::vector<std::string> hints = {});
  // A bare "WARNING: msg", said once however often it is reported.
  void warning_unlocated(std::string msg);

  bool has_errors() const { return errors_ > 0; }
  size_t error_count() const { return errors_; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  void clear() { diags_.clear(); errors_ = 0; }

  // Errors first, then warnings, each in report order (0.26 order).
  std::string render(const Source& src) const;
  // For a packaged tool, whose user did not write the script (`tool` is its
  // name; "" renders as above): each error on one line naming the tool, the
  // script's location at the end, then its hints (a message repeated at
  // other locations is said once); warnings are left out.
  std::string render(const Source& src, std::string_view tool) const;

 private:
  std::vector<Diagnostic> diags_;
  size_t errors_ = 0;
};

std::string render(const Source& src, const Diagnostic& d);

// The location part of a diagnostic: "FILE:LINE:COL1-COL2", or
// "FILE:LINE1-LINE2" for a range over several lines (errorf()/warnf() print it).
std::string location(const Source& src, Loc loc);

}  // namespace bpfscope::lang
