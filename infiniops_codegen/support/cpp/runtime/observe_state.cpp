// The library's observation state (core/observe.h): one copy in each
// library, compiled with its dispatch (generated/ops.cpp) and at -Os, since
// everything here runs only while something observes: off the eager path,
// and its own TU so that the ops' -O3 dispatch does not also optimise it.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/observe.h"

namespace infini::ops::observe {

std::atomic<unsigned> g_flags{0};

namespace {

thread_local Call* t_call = nullptr;

struct State {
  std::mutex mutex;
  // Calls since the last reset, by what the Call noted (no strings: the
  // names are made when stats() is read). Few keys: a vector, searched.
  struct Key {
    const char* op;
    Ran ran;
    Route route;
    AtenCall aten_call;
    bool operator==(const Key&) const = default;
  };
  std::vector<std::pair<Key, uint64_t>> counts;
  // The trace's sink: a file, or lines kept for the Python module to take.
  std::FILE* file = nullptr;
  bool owns_file = false;
  bool keep_lines = false;
  std::vector<std::string> lines;
  // The environment's sink, restored when a Python trace ends.
  std::FILE* env_file = nullptr;
  // ops.require_native: every op, or these.
  bool strict_all = false;
  std::vector<std::string> strict_ops;
};

State& state() {
  static State* s = new State;  // never destroyed: calls may run at exit
  return *s;
}

void set_flag(unsigned bit, bool on) {
  if (on) {
    g_flags.fetch_or(bit, std::memory_order_relaxed);
  } else {
    g_flags.fetch_and(~bit, std::memory_order_relaxed);
  }
}

void json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", ch);
      out += buffer;
    } else {
      out += ch;
    }
  }
  out += '"';
}

std::string path_of(Ran ran, Route route, AtenCall aten_call) {
  // A native kernel takes tensors made in C++ as they are: no from_blob.
  std::string path(ran == Ran::kNative && route == Route::kFromBlob ? "core"
                                                                    : to_string(route));
  if (ran == Ran::kTorch) {
    path += '+';
    path += to_string(aten_call);
  }
  return path;
}

std::string trace_line(const Call& c, const std::string& path) {
  std::string line = "{\"op\": ";
  json_string(line, c.op);
  line += ", \"aten\": ";
  if (c.aten != nullptr) {
    json_string(line, std::string("aten::") + c.aten);
  } else {
    line += "null";
  }
  line += ", \"device\": ";
  json_string(line, c.device.empty() ? "cpu" : c.device);
  line += ", \"tensors\": [" + c.tensors + "], \"implementation\": ";
  json_string(line, to_string(c.ran));
  line += ", \"path\": ";
  json_string(line, path);
  if (!c.declined.empty()) {
    line += ", \"declined\": ";
    json_string(line, c.declined);
  }
  if (!c.error.empty()) {
    line += ", \"error\": ";
    json_string(line, c.error);
  }
  line += "}";
  return line;
}

// INFINIOPS_TRACE, INFINIOPS_STATS and INFINIOPS_REQUIRE_NATIVE, read once
// when the library is loaded.
const bool kFromEnvironment = [] {
  State& s = state();
  if (const char* trace = std::getenv("INFINIOPS_TRACE"); trace != nullptr && *trace) {
    if (std::strcmp(trace, "0") != 0) {
      s.env_file = std::strcmp(trace, "1") == 0 ? stderr : std::fopen(trace, "w");
      if (s.env_file == nullptr) {
        std::fprintf(stderr, "infiniops: INFINIOPS_TRACE=%s: cannot open it for writing: %s\n",
                     trace, std::strerror(errno));
      }
      s.file = s.env_file;
      if (s.file != nullptr) set_flag(kTrace, true);
    }
  }
  if (const char* stats = std::getenv("INFINIOPS_STATS");
      stats != nullptr && *stats && std::strcmp(stats, "0") != 0) {
    set_flag(kCount, true);
  }
  if (const char* ops = std::getenv("INFINIOPS_REQUIRE_NATIVE");
      ops != nullptr && *ops && std::strcmp(ops, "0") != 0) {
    if (std::strcmp(ops, "1") == 0) {
      s.strict_all = true;
    } else {
      std::string_view names(ops);
      while (!names.empty()) {
        const std::size_t comma = names.find(',');
        const std::string_view name = names.substr(0, comma);
        if (!name.empty()) s.strict_ops.emplace_back(name);
        names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
      }
    }
    set_flag(kStrict, true);
  }
  return true;
}();

}  // namespace

bool open(Call& c) noexcept {
  if (t_call != nullptr) return false;
  t_call = &c;
  c.traced = (g_flags.load(std::memory_order_relaxed) & kTrace) != 0;
  return true;
}

Call* current() noexcept { return t_call; }

void close(Call& c) noexcept {
  t_call = nullptr;
  if (c.ran == Ran::kUnknown) c.ran = Ran::kTorch;  // the binding's own ATen call
  if (c.route == Route::kUnknown) c.route = Route::kHandle;
  if (c.ran == Ran::kTorch && c.aten_call == AtenCall::kUnknown) {
    c.aten_call = AtenCall::kDispatcher;
  }
  const unsigned flags = g_flags.load(std::memory_order_relaxed);
  if ((flags & (kCount | kTrace)) == 0) return;
  try {
    const bool trace = (flags & kTrace) && c.traced;
    const std::string line =
        trace ? trace_line(c, path_of(c.ran, c.route, c.aten_call)) : std::string();
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if ((flags & kCount) && c.error.empty()) {
      const State::Key key{c.op, c.ran, c.route, c.aten_call};
      auto it = std::find_if(s.counts.begin(), s.counts.end(),
                             [&](const auto& entry) { return entry.first == key; });
      if (it == s.counts.end()) {
        s.counts.emplace_back(key, 1);
      } else {
        ++it->second;
      }
    }
    if (trace) {
      if (s.keep_lines) {
        s.lines.push_back(line);
      } else if (s.file != nullptr) {
        std::fputs(line.c_str(), s.file);
        std::fputc('\n', s.file);
        std::fflush(s.file);
      }
    }
  } catch (...) {
    // Out of memory while observing: the call itself has succeeded.
  }
}

bool strict(const char* op) noexcept {
  if ((g_flags.load(std::memory_order_relaxed) & kStrict) == 0) return false;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.strict_all ||
         std::find(s.strict_ops.begin(), s.strict_ops.end(), std::string_view(op)) !=
             s.strict_ops.end();
}

bool dispatch(const char* op, const char* aten, std::initializer_list<Arg> args,
              void (*call)(void*), void* f) {
  Call own;
  own.op = op;
  own.aten = aten;
  const bool outer = open(own);
  Call* c = outer ? &own : current();
  if (c != nullptr && !c->described) {
    for (const Arg& a : args) {
      switch (a.kind) {
        case Arg::kTensor:
          c->arg(a.name, *static_cast<const Tensor*>(a.value));
          break;
        case Arg::kOptional:
          c->arg(a.name, *static_cast<const std::optional<Tensor>*>(a.value));
          break;
        case Arg::kList:
          c->arg(a.name, *static_cast<const std::span<const Tensor>*>(a.value));
          break;
        case Arg::kOptionalList:
          c->arg(a.name, *static_cast<const std::span<const std::optional<Tensor>>*>(a.value));
          break;
      }
    }
    c->described = true;
  }
  if (!outer) return false;
  try {
    call(f);
  } catch (const std::exception& e) {
    own.error = e.what();
    close(own);
    throw;
  } catch (...) {
    own.error = "an exception";
    close(own);
    throw;
  }
  close(own);
  return true;
}

// --- Control (the library's C++ API in ops.h, and the Python module) ---------

std::vector<Count> stats() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  // One row per name: the binding's and the dispatch's string of an op's
  // name may be two objects.
  std::vector<Count> result;
  for (const auto& [key, n] : s.counts) {
    Count row{key.op, std::string(to_string(key.ran)), path_of(key.ran, key.route, key.aten_call),
              n};
    auto same = std::find_if(result.begin(), result.end(), [&](const Count& c) {
      return c.op == row.op && c.implementation == row.implementation && c.path == row.path;
    });
    if (same == result.end()) {
      result.push_back(std::move(row));
    } else {
      same->calls += n;
    }
  }
  std::sort(result.begin(), result.end(), [](const Count& a, const Count& b) {
    return std::tie(a.op, a.implementation, a.path) < std::tie(b.op, b.implementation, b.path);
  });
  return result;
}

void reset_stats(bool count) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.counts.clear();
  }
  set_flag(kCount, count);
}

void trace_to(const char* path, bool keep_lines) {
  State& s = state();
  std::FILE* file = nullptr;
  if (path != nullptr) {
    file = std::fopen(path, "w");
    if (file == nullptr) {
      throw Error(std::string("trace: cannot open ") + path + " for writing: " +
                  std::strerror(errno));
    }
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.owns_file) std::fclose(s.file);
  s.file = file;
  s.owns_file = file != nullptr;
  s.keep_lines = keep_lines;
  s.lines.clear();
  set_flag(kTrace, file != nullptr || keep_lines);
}

std::vector<std::string> end_trace() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.owns_file) std::fclose(s.file);
  std::vector<std::string> lines = std::move(s.lines);
  s.lines.clear();
  s.keep_lines = false;
  s.owns_file = false;
  s.file = s.env_file;  // back to INFINIOPS_TRACE's, if any
  set_flag(kTrace, s.file != nullptr);
  return lines;
}

void require_native(bool all, std::vector<std::string> ops) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.strict_all = all;
  s.strict_ops = std::move(ops);
  set_flag(kStrict, all || !s.strict_ops.empty());
}

const Control kControl{&g_flags,    &open,     &close,     &current,        &stats,
                      &reset_stats, &trace_to, &end_trace, &require_native, &strict};

}  // namespace infini::ops::observe
