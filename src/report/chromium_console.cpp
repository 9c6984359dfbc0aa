#include "report/chromium_console.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/paths.h"

namespace cudal1 {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// One Chromium process driven over --remote-debugging-pipe. The destructor kills its process
// group, so nothing outlives a failed test.
class Devtools {
 public:
  Devtools(const std::vector<std::string>& argv, const std::string& stderr_path) {
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      setpgid(0, 0);
      // Move both ends above 4 first: dup2 onto itself would keep O_CLOEXEC.
      int in = fcntl(to[0], F_DUPFD, 10), out = fcntl(from[1], F_DUPFD, 10);
      int null = open("/dev/null", O_RDWR);
      int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (in < 0 || out < 0 || null < 0 || err < 0) _exit(127);
      dup2(null, 0), dup2(null, 1), dup2(err, 2), dup2(in, 3), dup2(out, 4);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);  // also here: no race with the child's own call
    close(to[0]), close(from[1]);
    write_fd_ = to[1];
    read_fd_ = from[0];
  }

  ~Devtools() {
    close(write_fd_), close(read_fd_);
    auto until = Clock::now() + std::chrono::seconds(5);
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (Clock::now() > until) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      usleep(20000);
    }
    kill(-pid_, SIGKILL);  // helpers Chromium left in its group, if any
  }

  std::function<void(const json&)> on_event;

  // Sends a command and waits for its reply; events that arrive meanwhile go to on_event.
  json call(const std::string& method, json params, const std::string& session,
            Clock::time_point until) {
    json msg = {{"id", ++last_id_}, {"method", method}, {"params", std::move(params)}};
    if (!session.empty()) msg["sessionId"] = session;
    std::string bytes = msg.dump() + '\0';
    for (std::size_t done = 0; done < bytes.size();) {
      ssize_t n = write(write_fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("Chromium closed its DevTools pipe");
      done += n;
    }
    for (;;) {
      auto reply = next(until);
      if (!reply) throw std::runtime_error("no reply to " + method + " in time");
      if (reply->value("id", -1) == last_id_) {
        if (reply->contains("error")) throw std::runtime_error(method + ": " + (*reply)["error"].dump());
        return (*reply)["result"];
      }
      if (reply->contains("method") && on_event) on_event(*reply);
    }
  }

  // Delivers events until `until`, or until `quiet` passes without one.
  void pump(Clock::time_point until, std::chrono::milliseconds quiet) {
    for (;;) {
      auto stop = std::min(until, Clock::now() + quiet);
      auto m = next(stop);
      if (!m) return;
      if (m->contains("method") && on_event) on_event(*m);
    }
  }

 private:
  std::optional<json> next(Clock::time_point until) {
    for (;;) {
      if (auto end = buffer_.find('\0'); end != std::string::npos) {
        std::string one = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return json::parse(one);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{read_fd_, POLLIN, 0};
      int r = poll(&p, 1, static_cast<int>(left.count()));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return std::nullopt;
      char chunk[65536];
      ssize_t n = read(read_fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;  // Chromium exited
      buffer_.append(chunk, n);
    }
  }

  pid_t pid_ = -1;
  int write_fd_ = -1, read_fd_ = -1, last_id_ = 0;
  std::string buffer_;
};

// Turns one DevTools event into a console message, when it is one.
std::optional<ConsoleMessage> console_message(const json& e) {
  const std::string method = e.value("method", "");
  const json& p = e.contains("params") ? e["params"] : json::object();
  if (method == "Runtime.consoleAPICalled") {
    std::string text;
    for (auto& a : p.value("args", json::array()))
      text += (text.empty() ? "" : " ") +
              (a.contains("value") ? (a["value"].is_string() ? a["value"].get<std::string>() : a["value"].dump())
                                   : a.value("description", a.value("type", "")));
    std::string type = p.value("type", "log");
    std::string level = type == "error" || type == "assert" ? "error" : type == "warning" ? "warning" : type;
    return ConsoleMessage{"console", level, text};
  }
  if (method == "Runtime.exceptionThrown") {
    const json& d = p.value("exceptionDetails", json::object());
    std::string text = d.value("text", "exception");
    if (d.contains("exception")) text += " " + d["exception"].value("description", "");
    return ConsoleMessage{"exception", "error", text};
  }
  if (method == "Log.entryAdded") {
    const json& entry = p.value("entry", json::object());
    return ConsoleMessage{entry.value("source", "log"), entry.value("level", "info"),
                          entry.value("text", "") + " " + entry.value("url", "")};
  }
  return std::nullopt;
}

std::vector<std::string> console_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos)
      out.push_back(line);
  return out;
}

}  // namespace

std::optional<std::string> find_chromium() {
  if (const char* env = std::getenv("CUDAL1_CHROMIUM"); env && *env) return std::string(env);
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (std::string p = find_on_path(name); !p.empty()) return p;
  return std::nullopt;
}

PageLoad load_page(const std::string& chromium, const std::string& url,
                   const std::vector<std::string>& scripts, std::chrono::seconds timeout) {
  PageLoad out;
  signal(SIGPIPE, SIG_IGN);  // a write to a Chromium that died must fail, not kill the test
  std::string tmpl = (fs::temp_directory_path() / "cudal1-chromium-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    out.error = "mkdtemp failed";
    return out;
  }
  fs::path dir = tmpl;
  std::vector<std::string> argv = {chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                                   "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                                   "--disable-extensions", "--user-data-dir=" + (dir / "profile").string(),
                                   "--remote-debugging-pipe", "--enable-logging=stderr", "--v=0",
                                   "about:blank"};
  for (auto& a : argv) out.command += (out.command.empty() ? "" : " ") + a;
  const auto until = Clock::now() + timeout;
  try {
    Devtools dt(argv, (dir / "stderr.log").string());
    std::string session;
    dt.on_event = [&](const json& e) {
      if (e.value("sessionId", "") != session) return;
      if (e.value("method", "") == "Page.loadEventFired") out.loaded = true;
      if (auto m = console_message(e)) out.messages.push_back(*m);
    };
    std::string target = dt.call("Target.createTarget", {{"url", "about:blank"}}, "", until)["targetId"];
    session = dt.call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}}, "", until)["sessionId"];
    for (const char* domain : {"Runtime.enable", "Log.enable", "Page.enable"})
      dt.call(domain, json::object(), session, until);
    json nav = dt.call("Page.navigate", {{"url", url}}, session, until);
    if (nav.contains("errorText")) throw std::runtime_error("navigation failed: " + nav["errorText"].dump());
    while (!out.loaded && Clock::now() < until) dt.pump(until, std::chrono::milliseconds(200));
    dt.pump(until, std::chrono::milliseconds(700));  // late messages: timers, rendering
    auto evaluate = [&](const std::string& expression) {
      json r = dt.call("Runtime.evaluate",
                       {{"expression", expression}, {"awaitPromise", true}, {"returnByValue", true}},
                       session, until);
      if (r.contains("exceptionDetails"))
        out.messages.push_back({"evaluate", "error", r["exceptionDetails"].dump()});
      return r["result"].contains("value") ? r["result"]["value"] : json();
    };
    for (auto& s : scripts) out.results.push_back(evaluate(s).dump());
    dt.pump(until, std::chrono::milliseconds(300));
    json dom = evaluate("document.documentElement.outerHTML");
    out.dom = dom.is_string() ? dom.get<std::string>() : "";
    try {
      dt.call("Browser.close", json::object(), "", Clock::now() + std::chrono::seconds(2));
    } catch (const std::exception&) {
      // It may exit before it replies; the destructor reaps or kills it either way.
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  out.stderr_console = console_lines((dir / "stderr.log").string());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

}  // namespace cudal1
