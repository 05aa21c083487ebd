#include "casefile/untrusted_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

namespace attncheck {

using nlohmann::json;

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

bool read_untrusted_file(const std::string& path, std::string& text, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = std::string("not a regular file but ") + kind_of(st.st_mode);
    return false;
  }
  if (st.st_size > kMaxJsonInputBytes) {
    ::close(fd);
    error = "file of " + std::to_string(st.st_size) + " bytes exceeds the limit of " +
            std::to_string(kMaxJsonInputBytes);
    return false;
  }
  text.assign(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (true) {
    if (got == text.size()) {
      // The file may have grown since fstat: read on, still within the limit.
      if (static_cast<int64_t>(text.size()) >= kMaxJsonInputBytes) {
        char probe;
        const ssize_t n = ::read(fd, &probe, 1);
        if (n > 0) {
          ::close(fd);
          error = "file exceeds the limit of " + std::to_string(kMaxJsonInputBytes) + " bytes";
          return false;
        }
        break;
      }
      text.resize(std::min<std::size_t>(text.size() * 2 + 4096, static_cast<std::size_t>(kMaxJsonInputBytes)));
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      error = std::string("read failed: ") + std::strerror(e);
      return false;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  return true;
}

std::optional<std::size_t> first_too_deep(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

std::string parse_untrusted_json(const std::string& text, json& out) {
  if (const auto at = first_too_deep(text, kMaxJsonNesting))
    return "arrays and objects nest deeper than " + std::to_string(kMaxJsonNesting) + " levels (at byte " +
           std::to_string(*at) + ")";
  // One set of keys per open object; arrays get an empty slot so that
  // object_end always pops the set its object_start pushed.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  const json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: keys.emplace_back(); break;
      case json::parse_event_t::object_end: if (!keys.empty()) keys.pop_back(); break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default: break;
    }
    return true;
  };
  try {
    out = json::parse(text, track);
  } catch (const json::exception& e) {
    return std::string("malformed or truncated JSON: ") + e.what();
  }
  if (!duplicate.empty())
    return "the key " + shown(json(duplicate)) + " appears more than once in one object (which one counts?)";
  return "";
}

std::string shown(const json& j, std::size_t max_chars) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

}  // namespace attncheck
