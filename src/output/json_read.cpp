// A small recursive-descent JSON reader (RFC 8259) for recordings.
#include "output/json_read.h"

#include <charconv>
#include <cstdlib>
#include <fmt/format.h>

namespace bpfscope::output {

const Json* Json::find(std::string_view name) const {
  for (const auto& [k, v] : members)
    if (k == name) return &v;
  return nullptr;
}

bool Json::is_int() const { return kind == Kind::Number && text.find_first_of(".eE") == std::string::npos; }

int64_t Json::as_i64() const {
  int64_t v = 0;
  if (kind == Kind::String || is_int()) std::from_chars(text.data(), text.data() + text.size(), v);
  else if (kind == Kind::Number) v = static_cast<int64_t>(as_double());
  return v;
}

uint64_t Json::as_u64() const {
  uint64_t v = 0;
  if (!text.empty() && text[0] == '-') return static_cast<uint64_t>(as_i64());
  if (kind == Kind::String || is_int()) std::from_chars(text.data(), text.data() + text.size(), v);
  else if (kind == Kind::Number) v = static_cast<uint64_t>(as_double());
  return v;
}

double Json::as_double() const { return kind == Kind::Number ? std::strtod(text.c_str(), nullptr) : 0; }

namespace {

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  std::optional<Json> document(std::string& error) {
    Json v;
    bool ok = value(v, 0);
    if (ok) {
      space();
      if (pos_ != s_.size()) ok = fail("text after the JSON value");
    }
    if (!ok) {
      error = fmt::format("{} (column {})", error_, pos_ + 1);
      return std::nullopt;
    }
    return v;
  }

 private:
  bool fail(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
    return false;
  }
  void space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n')) ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool value(Json& v, int depth) {
    if (depth > 64) return fail("nested too deeply");
    space();
    if (pos_ >= s_.size()) return fail("unexpected end of line");
    switch (s_[pos_]) {
      case '{': return object(v, depth);
      case '[': return array(v, depth);
      case '"': v.kind = Json::Kind::String; return string(v.text);
      case 't': v.kind = Json::Kind::Bool; v.b = true; return literal("true");
      case 'f': v.kind = Json::Kind::Bool; return literal("false");
      case 'n': return literal("null");
      default: return number(v);
    }
  }

  bool object(Json& v, int depth) {
    v.kind = Json::Kind::Object;
    ++pos_;
    space();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    while (true) {
      space();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a string key");
      if (!string(key)) return false;
      space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      Json item;
      if (!value(item, depth + 1)) return false;
      v.members.emplace_back(std::move(key), std::move(item));
      space();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      return fail("expected ',' or '}'");
    }
  }

  bool array(Json& v, int depth) {
    v.kind = Json::Kind::Array;
    ++pos_;
    space();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    while (true) {
      Json item;
      if (!value(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      space();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      return fail("expected ',' or ']'");
    }
  }

  bool number(Json& v) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    size_t digits = pos_;
    while (pos_ < s_.size() && (isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' || s_[pos_] == 'e' ||
                                s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-'))
      ++pos_;
    if (pos_ == digits || !isdigit(static_cast<unsigned char>(s_[digits]))) return fail("invalid value");
    v.kind = Json::Kind::Number;
    v.text = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool hex4(uint32_t& cp) {
    if (pos_ + 4 > s_.size()) return fail("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return fail("invalid \\u escape");
      cp = cp * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  // Bytes that are not UTF-8 are kept as they are (a recording holds the
  // raw bytes of kernel strings).
  bool string(std::string& out) {
    ++pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      switch (char e = s_[pos_++]) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t lo;
            if (!hex4(lo)) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          utf8(out, cp);
          break;
        }
        default: return fail("invalid escape");
      }
    }
    return fail("unterminated string");
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::optional<Json> parse_json(std::string_view s, std::string& error) { return Reader(s).document(error); }

}  // namespace bpfscope::output
