// report/chromium_console.h — loads a page in headless Chromium and records everything its
// console would show. Test support for the bench report's browser test; not part of cudal1.
//
// Chromium's own log (--enable-logging=stderr) prints console messages as "INFO:CONSOLE" lines
// without their level, and leaves out network and other browser-side messages ("Failed to load
// resource"). So the page is driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: requests on the child's fd 3, replies and events on its fd 4, each a
// JSON message ended by '\0'), which reports every console entry with its level:
// Runtime.consoleAPICalled (console.*), Runtime.exceptionThrown (uncaught errors, syntax errors)
// and Log.entryAdded (network, CSP, rendering, deprecation...). The stderr "CONSOLE" lines are kept
// too, as a second witness.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace cudal1 {

struct ConsoleMessage {
  std::string source;  // "console", "exception", or Log.entryAdded's source ("network", ...)
  std::string level;   // "error", "warning", "info", "log", "debug", "verbose"
  std::string text;
};

struct PageLoad {
  std::string error;                         // set when Chromium could not be driven at all
  bool loaded = false;                       // the page's load event fired
  std::vector<ConsoleMessage> messages;      // from the DevTools protocol, in order
  std::vector<std::string> stderr_console;   // Chromium's own log lines naming CONSOLE
  std::string dom;                           // document.documentElement.outerHTML after load
  std::vector<std::string> results;          // each script's value, as JSON text
  std::string command;                       // the command line used, for messages
};

// $CUDAL1_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH.
std::optional<std::string> find_chromium();

// Loads `url`, waits for its load event and for the page to go quiet, runs each of `scripts`
// (expressions, awaited when they are promises) in order, then reads the DOM. Everything
// Chromium starts is killed by the time this returns.
PageLoad load_page(const std::string& chromium, const std::string& url,
                   const std::vector<std::string>& scripts = {},
                   std::chrono::seconds timeout = std::chrono::seconds(60));

// True for the levels a test must fail on.
inline bool is_warning_or_error(const ConsoleMessage& m) {
  return m.level == "error" || m.level == "warning";
}

}  // namespace cudal1
