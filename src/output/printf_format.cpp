// printf(): parsing the format once and formatting each event with C/libc
// semantics (REFERENCE 6.5 and 9: bpfscope keeps libc precision handling and
// the 32-bit conversion of unmodified %d/%u, where 0.26 uses iostreams).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <fmt/format.h>
#include <optional>
#include <string_view>
#include <utility>

#include "output/output.h"

namespace bpfscope::output {

namespace {

// Widths and precisions above this are refused at parse time, so one event
// can never ask snprintf for gigabytes.
constexpr int kMaxWidth = 65536;

using Conversion = PrintfConversion;

struct ScanError {
  size_t end;  // one past the offending character
  std::string why;
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Scans the conversion starting at s[pos] == '%' (not "%%").
std::variant<Conversion, ScanError> scan_conversion(std::string_view s, size_t pos) {
  Conversion c;
  size_t i = pos + 1;
  while (i < s.size() && std::string_view("-+ #0").find(s[i]) != std::string_view::npos) {
    c.flags += s[i++];
  }
  const auto number = [&](int& out) -> bool {
    int64_t v = 0;
    bool fits = true;
    while (i < s.size() && is_digit(s[i])) {
      v = v * 10 + (s[i++] - '0');
      if (v > kMaxWidth) {
        fits = false;
        v = kMaxWidth;
      }
    }
    out = static_cast<int>(v);
    return fits;
  };
  if (i < s.size() && s[i] == '*') {
    c.star_width = true;
    i++;
  } else if (i < s.size() && is_digit(s[i]) && !number(c.width)) {
    return ScanError{i, "width too large"};
  }
  if (i < s.size() && s[i] == '.') {
    i++;
    // C: a '.' with no digits is precision 0.
    if (i < s.size() && s[i] == '*') {
      c.star_precision = true;
      i++;
    } else if (!number(c.precision)) {
      return ScanError{i, "precision too large"};
    }
  }
  for (const std::string_view len : {"hh", "h", "ll", "l", "j", "z", "t", "L"}) {
    if (s.substr(i, len.size()) == len) {
      c.length = len;
      i += len.size();
      break;
    }
  }
  if (i >= s.size()) return ScanError{i, ""};
  const char conv = s[i++];
  if (std::string_view("diouxXcspeEfFgGaA").find(conv) != std::string_view::npos) {
    c.conv = conv;
    // %gr: GFP flag names (0.26), not %g followed by "r".
    if (conv == 'g' && i < s.size() && s[i] == 'r') {
      c.conv = 'm';
      i++;
    }
  } else if (conv == 'r') {
    c.conv = 'r';
    if (i < s.size() && (s[i] == 'x' || s[i] == 'h')) c.buffer_mode = s[i++];
  } else {
    return ScanError{i, ""};
  }
  c.end = i;
  return c;
}

PrintfSpec::ArgKind wanted(char conv) {
  switch (conv) {
    case 's':
      return PrintfSpec::ArgKind::Any;
    case 'r':
      return PrintfSpec::ArgKind::String;
    default:
      return PrintfSpec::ArgKind::Integer;
  }
}

// snprintf into a std::string; `spec` is a format we built, with one argument.
// Most conversions fit the stack buffer, which spares a second pass.
template <typename T>
std::string c_format(const std::string& spec, T arg) {
  char small[256];
  const int n = std::snprintf(small, sizeof small, spec.c_str(), arg);
  if (n <= 0) return "";
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n), '\0');
  // data() has room for the terminating NUL as well.
  std::snprintf(out.data(), out.size() + 1, spec.c_str(), arg);
  return out;
}

// A conversion with no flags, width or precision: the digits alone, which
// std::to_chars writes as printf would (the common case, per event).
bool plain(const Conversion& c) { return c.flags.empty() && c.width < 0 && c.precision < 0; }

template <typename T>
std::string digits(T v, int base, bool upper = false) {
  char buf[72];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, base);
  (void)ec;
  if (upper) std::transform(buf, end, buf, [](char ch) { return static_cast<char>(std::toupper(ch)); });
  return std::string(buf, end);
}

// "%" + flags + width + precision, ready for a length and a conversion.
std::string c_prefix(const Conversion& c, bool with_precision) {
  std::string spec = "%" + c.flags;
  if (c.width >= 0) spec += fmt::format("{}", c.width);
  if (with_precision && c.precision >= 0) spec += fmt::format(".{}", c.precision);
  return spec;
}

int64_t integer_of(const Value& v) { return v.as_i64(); }

bool wide_length(const std::string& length) {
  if (length.empty()) return false;  // the common case, per event
  // glibc treats L on an integer conversion like ll.
  return length == "l" || length == "ll" || length == "j" || length == "z" || length == "t" ||
         length == "L";
}

std::string format_signed(const Conversion& c, int64_t v) {
  const bool wide = wide_length(c.length);
  // Narrower conversions cast first, exactly as C's argument conversion does.
  int narrowed = static_cast<int>(v);
  if (!c.length.empty() && c.length[0] == 'h')
    narrowed = c.length == "hh" ? static_cast<signed char>(v) : static_cast<short>(v);
  if (plain(c)) return wide ? digits(v, 10) : digits(narrowed, 10);
  const std::string prefix = c_prefix(c, true);
  if (wide) return c_format(prefix + "ll" + c.conv, static_cast<long long>(v));
  return c_format(prefix + c.conv, narrowed);
}

std::string format_unsigned(const Conversion& c, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  const bool wide = wide_length(c.length);
  unsigned narrowed = static_cast<unsigned>(u);
  if (!c.length.empty() && c.length[0] == 'h')
    narrowed = c.length == "hh" ? static_cast<unsigned char>(u) : static_cast<unsigned short>(u);
  if (plain(c)) {
    const int base = c.conv == 'u' ? 10 : c.conv == 'o' ? 8 : 16;
    return wide ? digits(u, base, c.conv == 'X') : digits(narrowed, base, c.conv == 'X');
  }
  const std::string prefix = c_prefix(c, true);
  if (wide) return c_format(prefix + "ll" + c.conv, static_cast<unsigned long long>(u));
  return c_format(prefix + c.conv, narrowed);
}

// An integer or a float (a printf argument divided by a float literal) as a
// double; with L as a long double, which holds any 64-bit integer exactly.
std::string format_float(const Conversion& c, const Value& v) {
  const std::string prefix = c_prefix(c, true);
  if (c.length == "L") {
    const long double d = v.kind == Value::Kind::Float  ? static_cast<long double>(v.f)
                          : v.kind == Value::Kind::UInt ? static_cast<long double>(v.u)
                                                        : static_cast<long double>(v.as_i64());
    return c_format(prefix + "L" + c.conv, d);
  }
  return c_format(prefix + c.conv, v.as_double());
}

}  // namespace

std::string buffer_text(std::string_view bytes, std::string_view mode) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); i++) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (mode.empty() && b >= 32 && b <= 126) {
      out += static_cast<char>(b);
    } else if (mode != "h") {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", b);
    } else {
      if (i > 0) out += ' ';
      fmt::format_to(std::back_inserter(out), "{:02x}", b);
    }
  }
  return out;
}

namespace {

// The kernel's GFP bits (include/linux/gfp_types.h, as bpftrace 0.26 fixes
// them; bits past __GFP_ACCOUNT move with the kernel's config).
constexpr uint64_t gfp_bit(int n) { return uint64_t{1} << n; }
constexpr uint64_t kGfpDma = gfp_bit(0), kGfpHighmem = gfp_bit(1), kGfpDma32 = gfp_bit(2), kGfpMovable = gfp_bit(3),
                   kGfpHigh = gfp_bit(5), kGfpIo = gfp_bit(6), kGfpFs = gfp_bit(7), kGfpZero = gfp_bit(8),
                   kGfpDirectReclaim = gfp_bit(10), kGfpKswapdReclaim = gfp_bit(11), kGfpWrite = gfp_bit(12),
                   kGfpNowarn = gfp_bit(13), kGfpRetryMayfail = gfp_bit(14), kGfpNofail = gfp_bit(15),
                   kGfpNoretry = gfp_bit(16), kGfpMemalloc = gfp_bit(17), kGfpComp = gfp_bit(18),
                   kGfpNomemalloc = gfp_bit(19), kGfpHardwall = gfp_bit(20), kGfpThisnode = gfp_bit(21),
                   kGfpAccount = gfp_bit(22), kGfpZerotags = gfp_bit(23), kGfpSkipZero = gfp_bit(24),
                   kGfpSkipKasan = gfp_bit(25), kGfpNoObjExt = gfp_bit(26);
constexpr uint64_t kGfpReclaim = kGfpDirectReclaim | kGfpKswapdReclaim;
constexpr uint64_t kGfpKernel = kGfpReclaim | kGfpIo | kGfpFs;
constexpr uint64_t kGfpNoio = kGfpReclaim;
constexpr uint64_t kGfpNofs = kGfpReclaim | kGfpIo;
constexpr uint64_t kGfpUser = kGfpKernel | kGfpHardwall;
constexpr uint64_t kGfpHighuser = kGfpUser | kGfpHighmem;
constexpr uint64_t kGfpHighuserMovable = kGfpHighuser | kGfpMovable | kGfpSkipKasan;
constexpr uint64_t kGfpTranshugeLight = (kGfpHighuserMovable | kGfpComp | kGfpNomemalloc | kGfpNowarn) & ~kGfpReclaim;

// Named masks first, those with the most bits before their parts (the
// kernel's mmflags.h order), then single flags. __GFP_MOVABLE and
// __GFP_RECLAIMABLE have no name of their own and print in hex.
constexpr std::pair<uint64_t, std::string_view> kGfpNames[] = {
    {kGfpTranshugeLight | kGfpDirectReclaim, "GFP_TRANSHUGE"},
    {kGfpTranshugeLight, "GFP_TRANSHUGE_LIGHT"},
    {kGfpHighuserMovable, "GFP_HIGHUSER_MOVABLE"},
    {kGfpHighuser, "GFP_HIGHUSER"},
    {kGfpUser, "GFP_USER"},
    {kGfpKernel | kGfpAccount, "GFP_KERNEL_ACCOUNT"},
    {kGfpKernel, "GFP_KERNEL"},
    {kGfpNofs, "GFP_NOFS"},
    {kGfpHigh | kGfpKswapdReclaim, "GFP_ATOMIC"},
    {kGfpNoio, "GFP_NOIO"},
    {kGfpKswapdReclaim | kGfpNowarn, "GFP_NOWAIT"},
    {kGfpDma, "GFP_DMA"},
    {kGfpHighmem, "__GFP_HIGHMEM"},
    {kGfpDma32, "GFP_DMA32"},
    {kGfpHigh, "__GFP_HIGH"},
    {kGfpIo, "__GFP_IO"},
    {kGfpFs, "__GFP_FS"},
    {kGfpZero, "__GFP_ZERO"},
    {kGfpDirectReclaim, "__GFP_DIRECT_RECLAIM"},
    {kGfpKswapdReclaim, "__GFP_KSWAPD_RECLAIM"},
    {kGfpWrite, "__GFP_WRITE"},
    {kGfpNowarn, "__GFP_NOWARN"},
    {kGfpRetryMayfail, "__GFP_RETRY_MAYFAIL"},
    {kGfpNofail, "__GFP_NOFAIL"},
    {kGfpNoretry, "__GFP_NORETRY"},
    {kGfpMemalloc, "__GFP_MEMALLOC"},
    {kGfpComp, "__GFP_COMP"},
    {kGfpNomemalloc, "__GFP_NOMEMALLOC"},
    {kGfpHardwall, "__GFP_HARDWALL"},
    {kGfpThisnode, "__GFP_THISNODE"},
    {kGfpAccount, "__GFP_ACCOUNT"},
    {kGfpZerotags, "__GFP_ZEROTAGS"},
    {kGfpSkipZero, "__GFP_SKIP_ZERO"},
    {kGfpSkipKasan, "__GFP_SKIP_KASAN"},
    {kGfpNoObjExt, "__GFP_NO_OBJ_EXT"},
};

}  // namespace

std::string gfp_flags_text(uint64_t flags) {
  if (flags == 0) return "0";
  std::string out;
  for (const auto& [mask, name] : kGfpNames) {
    if ((flags & mask) != mask) continue;
    if (!out.empty()) out += '|';
    out += name;
    flags &= ~mask;
  }
  if (flags != 0) out += fmt::format("{}0x{:x}", out.empty() ? "" : "|", flags);
  return out;
}

namespace {

// Pads `body` to the conversion's width with spaces, as %s does (0.26
// applies setw to %r and %gr; they take no precision).
std::string pad_to_width(const Conversion& c, std::string body) {
  if (c.width < 0 || body.size() >= static_cast<size_t>(c.width)) return body;
  const std::string pad(static_cast<size_t>(c.width) - body.size(), ' ');
  return c.flags.find('-') != std::string::npos ? body + pad : pad + body;
}

std::string apply(const Conversion& c, const Value& arg) {
  switch (c.conv) {
    case 'd':
    case 'i':
      return format_signed(c, integer_of(arg));
    case 'u':
    case 'o':
    case 'x':
    case 'X':
      return format_unsigned(c, integer_of(arg));
    case 'c':
      // Precision and length mean nothing (or wint_t) for %c.
      return c_format(c_prefix(c, false) + "c", static_cast<int>(integer_of(arg)));
    case 'p':
      // glibc: 0x-prefixed hex, "(nil)" for 0.
      return c_format(c_prefix(c, true) + "p",
                      reinterpret_cast<void*>(static_cast<uintptr_t>(integer_of(arg))));
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
      return format_float(c, arg);
    case 's': {
      // Any value prints as its text; "%ls" would read a wide string, so the
      // length modifier is dropped.
      std::string text = arg.kind == Value::Kind::String ? arg.s : to_text(arg);
      if (plain(c)) return text.substr(0, text.find('\0'));  // as %s reads it: up to a NUL
      return c_format(c_prefix(c, true) + "s", text.c_str());
    }
    case 'r': {
      const bool raw = arg.kind == Value::Kind::String || arg.kind == Value::Kind::Buffer;
      return pad_to_width(c, buffer_text(raw ? arg.s : to_text(arg), c.buffer_mode));
    }
    case 'm':
      return pad_to_width(c, gfp_flags_text(static_cast<uint64_t>(integer_of(arg))));
    default:
      return "";
  }
}

}  // namespace

std::variant<PrintfFormat, std::string> parse_printf(std::string_view fmt) {
  PrintfFormat out;
  std::string owned;  // the format without the "N$" read so far
  std::string literal;
  size_t i = 0;
  while (i < fmt.size()) {
    if (fmt[i] != '%') {
      literal += fmt[i++];
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      literal += '%';
      i += 2;
      continue;
    }
    // "%2$": POSIX's argument number.
    int column = -1;
    if (size_t j = i + 1; j < fmt.size() && fmt[j] >= '1' && fmt[j] <= '9') {
      int n = 0;
      while (j < fmt.size() && isdigit(static_cast<unsigned char>(fmt[j])) && n < 1000) n = n * 10 + (fmt[j++] - '0');
      if (j < fmt.size() && fmt[j] == '$') {
        column = n - 1;
        std::string rest = std::string(fmt.substr(0, i + 1)) + std::string(fmt.substr(j + 1));
        owned = std::move(rest);
        fmt = owned;
      }
    }
    auto scanned = scan_conversion(fmt, i);
    if (auto* err = std::get_if<ScanError>(&scanned)) {
      const std::string token(fmt.substr(i, err->end - i));
      if (err->why.empty()) return "printf: Unknown format string token: " + token;
      return "printf: " + err->why + ": " + token;
    }
    const Conversion& c = std::get<Conversion>(scanned);
    // "%-*.*s": the width and precision arguments come first, as in C; each
    // is a spec of its own that wants an integer.
    for (int stars = c.star_width + c.star_precision; stars > 0; --stars) {
      PrintfSpec star;
      star.literal_before = std::move(literal);
      literal.clear();
      star.spec = "*";
      star.conv = '*';
      star.wants = PrintfSpec::ArgKind::Integer;
      out.specs.push_back(std::move(star));
    }
    PrintfSpec spec;
    spec.literal_before = std::move(literal);
    literal.clear();
    spec.spec = std::string(fmt.substr(i, c.end - i));
    spec.conv = c.conv;
    spec.length = c.length;
    spec.buffer_mode = c.buffer_mode;
    spec.wants = wanted(c.conv);
    spec.column = column;
    spec.parts = c;
    spec.parts->end = spec.spec.size();
    out.specs.push_back(std::move(spec));
    i = c.end;
  }
  out.trailing = std::move(literal);
  return out;
}

std::string format_printf(const PrintfFormat& fmt, const std::vector<Value>& args) {
  std::string out;
  const Value missing;
  std::vector<int64_t> stars;  // the * arguments of the next conversion
  for (size_t i = 0; i < fmt.specs.size(); i++) {
    const PrintfSpec& spec = fmt.specs[i];
    out += spec.literal_before;
    if (spec.conv == '*') {
      stars.push_back(i < args.size() ? args[i].as_i64() : 0);
      continue;
    }
    // The spec's parts as parsed; a spec built by hand is scanned from its
    // text, and without one falls back to its conversion and length alone.
    Conversion c;
    std::optional<Conversion> written = spec.parts;
    if (!written && spec.spec.size() >= 2 && spec.spec[0] == '%') {
      auto scanned = scan_conversion(spec.spec, 0);
      if (auto* ok = std::get_if<Conversion>(&scanned); ok && ok->end == spec.spec.size()) {
        written = *ok;
      }
    }
    if (written) {
      c = *written;
      // As C: a negative * width is the '-' flag and its magnitude, a
      // negative * precision none at all.
      size_t next = 0;
      if (c.star_width && next < stars.size()) {
        int64_t w = stars[next++];
        if (w < 0 && c.flags.find('-') == std::string::npos) c.flags += '-';
        c.width = static_cast<int>(std::min<int64_t>(w < 0 ? -w : w, kMaxWidth));
      }
      if (c.star_precision && next < stars.size()) {
        int64_t p = stars[next++];
        c.precision = p < 0 ? -1 : static_cast<int>(std::min<int64_t>(p, kMaxWidth));
      }
    } else {
      c.conv = spec.conv;
      c.length = spec.length;
      c.buffer_mode = spec.buffer_mode;
    }
    stars.clear();
    out += apply(c, i < args.size() ? args[i] : missing);
  }
  out += fmt.trailing;
  return out;
}

}  // namespace bpfscope::output
