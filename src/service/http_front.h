// service/http_front.h — the reward service's listening socket and connections, in front of
// httplib's request handling (parsing, routing, the handlers).
//
// httplib 0.11's own accept loop gives every connection a pool thread for as long as it is open,
// and its read timeout counts from the last byte: 80 clients trickling header bytes held every
// thread and the service stopped answering. Here one thread waits on all connections that are
// between requests: each must deliver its request line and headers within one deadline in total,
// and one client address holds a bounded number of connections at once. A pool thread only gets
// a connection whose headers are in, for one request, and gives it back afterwards. Closing goes
// through the same thread: it stops sending, then reads for a little while before closing, so
// that a client still sending a body it was refused (a 401 answered before the body) reads the
// answer instead of losing it to a reset.
#pragma once

#include <httplib.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cudal1::service {

struct FrontConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0: any free port (bind() says which)
  int max_per_address = 16;        // connections one client holds at once (net_address.h: client_key)
  double header_timeout_s = 5;     // request line and headers, all of them, and the idle wait before them
  int threads = 64;                // requests handled at once (POST /reward holds its thread while it waits)
  std::size_t max_connections = 512;  // all clients together; more wait in the kernel's backlog
};

// httplib's parsing, routing and handlers for one request on a connection the front hands it.
// Routes are registered on it as on any httplib::Server; its own listen() is never used.
class Router : public httplib::Server {
 public:
  bool serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
};

class HttpFront {
 public:
  // A response with "Connection: close" (set by a handler) closes its connection afterwards.
  HttpFront(FrontConfig config, Router& router);
  ~HttpFront();

  // Listens (SO_REUSEADDR only: SO_REUSEPORT would let another process bind the same port and
  // take a share of the connections, tokens included) and returns the port. Throws Error(usage).
  int bind();
  // Accepts and serves until stop(); requests in progress finish first.
  void run();
  void stop();  // from any thread

  struct Connection;

 private:
  enum class Next { wait, dispatch, close };
  bool accept_all(std::vector<std::shared_ptr<Connection>>& waiting);  // false: out of descriptors
  Next on_readable(Connection& c);
  void dispatch(const std::shared_ptr<Connection>& c);
  void serve(const std::shared_ptr<Connection>& c);
  void adopt_returned(std::vector<std::shared_ptr<Connection>>& waiting);
  void close(Connection& c);
  void wake();

  FrontConfig config_;
  Router& router_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::unique_ptr<httplib::ThreadPool> pool_;
  std::map<std::string, int> per_client_;  // open connections by client (front thread only)
  std::size_t open_ = 0;
  std::mutex returned_m_;
  std::vector<std::shared_ptr<Connection>> returned_;  // from pool threads, done with a request
};

}  // namespace cudal1::service
