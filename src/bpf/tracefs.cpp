// tracefs: mounting, tracepoint format files, listing events, glob matching.
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <mutex>

#include "bpf/bpf.h"
#include "bpf/btf.h"
#include "bpf/internal.h"

namespace bpfscope::bpf {

using detail::make_error;

namespace {

constexpr const char* kTracefs = "/sys/kernel/tracing";
constexpr const char* kTracefsEvents = "/sys/kernel/tracing/events";
constexpr const char* kDebugfsTracing = "/sys/kernel/debug/tracing";
constexpr const char* kDebugfsEvents = "/sys/kernel/debug/tracing/events";

bool is_dir(const char* path) {
  struct stat st;
  return ::stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
  return s.substr(b, e - b);
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

template <typename T>
bool parse_uint(std::string_view s, T& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// A category or event name that is safe to put in a path.
bool valid_name_part(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::none_of(s.begin(), s.end(), [](char c) { return c == '/' || c == '\0'; });
}

// Parses the declaration part of a field line ("const char * filename",
// "char comm[16]", "__data_loc char[] name") into f.name/type/array_len/data_loc.
bool parse_declaration(std::string_view decl, TracepointField& f) {
  decl = trim(decl);
  constexpr std::string_view kDataLoc = "__data_loc ";
  constexpr std::string_view kRelLoc = "__rel_loc ";
  if (decl.starts_with(kDataLoc)) {
    f.data_loc = true;
    decl = trim(decl.substr(kDataLoc.size()));
  } else if (decl.starts_with(kRelLoc)) {
    f.data_loc = true;
    f.rel_loc = true;
    decl = trim(decl.substr(kRelLoc.size()));
  }

  // An array suffix after the name: "comm[16]", "args[]".
  std::string_view dim;
  bool is_array = false;
  if (!decl.empty() && decl.back() == ']') {
    size_t open = decl.rfind('[');
    if (open == std::string_view::npos) return false;
    dim = trim(decl.substr(open + 1, decl.size() - open - 2));
    decl = trim(decl.substr(0, open));
    is_array = true;
  }

  size_t name_begin = decl.size();
  while (name_begin > 0 && is_ident_char(decl[name_begin - 1])) --name_begin;
  if (name_begin == decl.size()) return false;
  f.name = std::string(decl.substr(name_begin));
  std::string_view type = trim(decl.substr(0, name_begin));
  if (type.empty()) return false;
  f.type = std::string(type);

  if (is_array) {
    uint32_t n = 0;
    if (dim.empty()) {
      f.array_len = 0;  // flexible array ("char buf[]"): size 0
      f.type += "[]";
    } else if (parse_uint(dim, n)) {
      f.array_len = n;
      f.type += "[" + std::to_string(n) + "]";
    } else {
      // A symbolic length that the kernel did not expand: keep it as written;
      // the byte size is still exact.
      f.array_len = 0;
      f.type += "[" + std::string(dim) + "]";
    }
  }
  return true;
}

}  // namespace

Result<std::string> tracefs_root() {
  static std::mutex mu;
  static std::string cached;
  std::lock_guard lock(mu);
  if (!cached.empty()) return cached;

  if (is_dir(kTracefsEvents)) {
    cached = kTracefs;
    return cached;
  }
  if (::mount("tracefs", kTracefs, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    int err = errno;
    // Somebody else may have mounted it meanwhile (EBUSY), or only debugfs
    // offers it.
    if (is_dir(kTracefsEvents)) {
      cached = kTracefs;
      return cached;
    }
    if (is_dir(kDebugfsEvents)) {
      cached = kDebugfsTracing;
      return cached;
    }
    return std::unexpected(make_error(err, std::string("mount(tracefs on ") + kTracefs + ")"));
  }
  if (!is_dir(kTracefsEvents)) {
    return std::unexpected(Error{ENOENT, std::string("tracefs mounted on ") + kTracefs +
                                             " has no events/ directory (kernel without trace events?)"});
  }
  cached = kTracefs;
  return cached;
}

Result<TracepointFormat> parse_tracepoint_format(std::string_view category, std::string_view event,
                                                 std::string_view text) {
  TracepointFormat out;
  out.category = std::string(category);
  out.event = std::string(event);
  const std::string where = "format of tracepoint " + out.category + ":" + out.event;

  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;

    if (line.starts_with("ID:")) {
      uint32_t id = 0;
      if (parse_uint(line.substr(3), id)) out.id = id;
      continue;
    }
    if (!line.starts_with("field:")) continue;
    // "field:DECL;\toffset:O;\tsize:S;\tsigned:X;"
    TracepointField f;
    bool have_decl = false, have_offset = false, have_size = false;
    size_t p = 0;
    while (p < line.size()) {
      size_t semi = line.find(';', p);
      if (semi == std::string_view::npos) semi = line.size();
      std::string_view part = trim(line.substr(p, semi - p));
      p = semi + 1;
      if (part.empty()) continue;
      size_t colon = part.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view key = trim(part.substr(0, colon));
      std::string_view value = part.substr(colon + 1);
      if (key == "field") {
        have_decl = parse_declaration(value, f);
      } else if (key == "offset") {
        have_offset = parse_uint(value, f.offset);
      } else if (key == "size") {
        have_size = parse_uint(value, f.size);
      } else if (key == "signed") {
        uint32_t s = 0;
        if (parse_uint(value, s)) f.is_signed = s != 0;
      }
    }
    if (!have_decl || !have_offset || !have_size) {
      return std::unexpected(Error{EINVAL, where + ": cannot parse line '" + std::string(line) + "'"});
    }
    if (f.name.starts_with("common_")) continue;
    out.fields.push_back(std::move(f));
  }
  return out;
}

Result<TracepointFormat> read_tracepoint_format(std::string_view category, std::string_view event) {
  const std::string name = std::string(category) + ":" + std::string(event);
  if (!valid_name_part(category) || !valid_name_part(event)) {
    return std::unexpected(Error{EINVAL, "invalid tracepoint name '" + name + "'"});
  }
  auto root = tracefs_root();
  if (!root) return std::unexpected(root.error());
  const std::string dir = *root + "/events/" + std::string(category) + "/" + std::string(event);

  auto text = detail::read_text_file(dir + "/format");
  if (!text) {
    Error e = text.error();
    // An event whose format file cannot be read takes its layout from BTF.
    if (auto id_text = detail::read_text_file(dir + "/id")) {
      uint32_t id = 0;
      Btf btf;
      auto fmt = tracepoint_format_from_btf(btf, category, event);
      if (fmt && parse_uint(*id_text, id) && id != 0) {
        fmt->id = id;
        return fmt;
      }
    }
    if (e.err == ENOENT) e.message = "tracepoint " + name + " does not exist (no " + dir + "/format)";
    return std::unexpected(std::move(e));
  }
  auto fmt = parse_tracepoint_format(category, event, *text);
  if (!fmt) return fmt;
  if (fmt->id == 0) {
    // Older kernels print "ID:" in the format file; the id file always has it.
    auto id_text = detail::read_text_file(dir + "/id");
    if (!id_text) return std::unexpected(id_text.error());
    uint32_t id = 0;
    if (!parse_uint(*id_text, id) || id == 0) {
      return std::unexpected(Error{EINVAL, "cannot parse " + dir + "/id"});
    }
    fmt->id = id;
  }
  return fmt;
}

Result<std::vector<std::string>> list_tracepoints(std::string_view category_glob, std::string_view event_glob) {
  auto root = tracefs_root();
  if (!root) return std::unexpected(root.error());

  std::vector<std::string> out;
  // A name without wildcards is its event's directory: no need for the
  // kernel to print available_events (~2,000 lines, about 1 ms here).
  auto exact = [](std::string_view s) { return valid_name_part(s) && s.find_first_of("*?") == s.npos; };
  if (exact(category_glob) && exact(event_glob)) {
    std::string name = std::string(category_glob) + ":" + std::string(event_glob);
    if (is_dir((*root + "/events/" + std::string(category_glob) + "/" + std::string(event_glob)).c_str()))
      out.push_back(std::move(name));
    return out;
  }
  auto consider = [&](std::string_view cat, std::string_view ev) {
    if (glob_match(category_glob, cat) && glob_match(event_glob, ev)) {
      std::string s(cat);
      s += ':';
      s += ev;
      out.push_back(std::move(s));
    }
  };

  auto text = detail::read_text_file(*root + "/available_events");
  if (text) {
    std::string_view t = *text;
    size_t pos = 0;
    while (pos < t.size()) {
      size_t nl = t.find('\n', pos);
      if (nl == std::string_view::npos) nl = t.size();
      std::string_view line = trim(t.substr(pos, nl - pos));
      pos = nl + 1;
      size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0 || colon + 1 == line.size()) continue;
      consider(line.substr(0, colon), line.substr(colon + 1));
    }
  } else {
    // Walk events/CATEGORY/EVENT directories instead.
    const std::string events = *root + "/events";
    DIR* d = ::opendir(events.c_str());
    if (!d) return std::unexpected(make_error(errno, "opendir(" + events + ")"));
    std::vector<std::string> cats;
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      if (glob_match(category_glob, n) && is_dir((events + "/" + std::string(n)).c_str())) cats.emplace_back(n);
    }
    ::closedir(d);
    for (const auto& cat : cats) {
      const std::string cdir = events + "/" + cat;
      DIR* cd = ::opendir(cdir.c_str());
      if (!cd) continue;
      while (dirent* e = ::readdir(cd)) {
        std::string_view n = e->d_name;
        if (n == "." || n == "..") continue;
        if (!glob_match(event_glob, n)) continue;
        if (!is_dir((cdir + "/" + std::string(n)).c_str())) continue;  // enable, filter
        consider(cat, n);
      }
      ::closedir(cd);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Greedy matching with backtracking to the last '*': linear in practice,
  // O(|pattern| * |text|) at worst, no recursion.
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t]) && pattern[p] != '*') {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star_p = p++;
      star_t = t;
    } else if (star_p != std::string_view::npos) {
      p = star_p + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace bpfscope::bpf
