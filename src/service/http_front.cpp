// service/http_front.cpp — see http_front.h.
#include "service/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "service/net_address.h"

namespace cudal1::service {

using Clock = std::chrono::steady_clock;

struct HttpFront::Connection {
  int fd = -1;
  std::string client;     // whom it counts against (client_key)
  std::string in;         // read from the socket and not yet taken by httplib
  std::size_t taken = 0;
  Clock::time_point deadline;
  int requests = 0;
  bool draining = false;  // answered for the last time: what still comes is read and dropped
  bool keep = false;      // set by the pool thread: it may carry another request
};

namespace {

constexpr std::size_t kHeaderBytesMax = 64 << 10;  // a request line and headers larger than this are refused
constexpr int kRequestsPerConnection = 100;
constexpr auto kDrainFor = std::chrono::seconds(2);
constexpr int kIoTimeoutMs = 5000;  // one read or write while a request is handled (httplib's default)
constexpr int kReadsPerWake = 16;   // a client sending fast does not keep the front thread to itself

// Set by the router's post-routing handler, which sees the response's final headers.
thread_local bool close_after_response = false;

bool wait_for(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int r;
  while ((r = ::poll(&p, 1, ms)) < 0 && errno == EINTR) {
  }
  return r > 0;
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

bool headers_complete(const HttpFront::Connection& c) { return c.in.find("\r\n\r\n", c.taken) != std::string::npos; }

void endpoint(int (*name)(int, sockaddr*, socklen_t*), int fd, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char text[INET6_ADDRSTRLEN] = {};
  ip.clear();
  port = 0;
  if (name(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
  if (a.ss_family == AF_INET) {
    auto& v4 = reinterpret_cast<sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    auto& v6 = reinterpret_cast<sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

// One connection's bytes for httplib: first those the front read already, then the socket's.
class ConnectionStream final : public httplib::Stream {
 public:
  explicit ConnectionStream(HttpFront::Connection& c) : c_(c) {}
  bool is_readable() const override { return c_.taken < c_.in.size() || wait_for(c_.fd, POLLIN, kIoTimeoutMs); }
  bool is_writable() const override { return wait_for(c_.fd, POLLOUT, kIoTimeoutMs); }
  ssize_t read(char* ptr, size_t size) override {
    if (c_.taken == c_.in.size()) {
      char buf[16384];
      ssize_t n;
      do {
        if (!wait_for(c_.fd, POLLIN, kIoTimeoutMs)) return -1;
        n = ::recv(c_.fd, buf, sizeof buf, 0);
      } while (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
      if (n <= 0) return n;
      c_.in.assign(buf, std::size_t(n));
      c_.taken = 0;
    }
    const std::size_t k = std::min(size, c_.in.size() - c_.taken);
    std::memcpy(ptr, c_.in.data() + c_.taken, k);
    c_.taken += k;
    return ssize_t(k);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : n;  // 0: httplib tries again
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { endpoint(::getpeername, c_.fd, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { endpoint(::getsockname, c_.fd, ip, port); }
  socket_t socket() const override { return c_.fd; }

 private:
  HttpFront::Connection& c_;
};

// Told why before it is closed; written without waiting, so a client that does not read loses it.
void refuse(int fd, int max_per_address) {
  const std::string body = "{\"error\": \"this address holds " + std::to_string(max_per_address) +
                           " connections to the service already (--max-connections-per-address): reuse them, "
                           "or retry after Retry-After seconds\"}";
  const std::string reply = "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                            "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void begin_drain(HttpFront::Connection& c) {
  ::shutdown(c.fd, SHUT_WR);
  c.draining = true;
  c.in.clear();
  c.taken = 0;
  c.deadline = Clock::now() + kDrainFor;
}

}  // namespace

HttpFront::HttpFront(FrontConfig config, Router& router) : config_(std::move(config)), router_(router) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw Error(ErrorKind::internal, std::string("cannot make the service's wake-up pipe: ") + std::strerror(errno));
  // What a response's Keep-Alive header promises is what the front does.
  router_.set_keep_alive_timeout(time_t(std::ceil(config_.header_timeout_s)));
  router_.set_keep_alive_max_count(kRequestsPerConnection);
  router_.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    auto [from, to] = res.headers.equal_range("Connection");
    close_after_response = std::any_of(from, to, [](auto& h) { return h.second == "close"; });
  });
}

HttpFront::~HttpFront() {
  for (int fd : {listen_fd_, wake_[0], wake_[1]})
    if (fd >= 0) ::close(fd);
}

int HttpFront::bind() {
  const std::string where = config_.host + ":" + std::to_string(config_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(config_.host.c_str(), std::to_string(config_.port).c_str(), &hints, &found); rc != 0)
    throw Error(ErrorKind::usage, "cannot resolve --host " + config_.host + ": " + ::gai_strerror(rc),
                "pass an IP address, or a name this machine resolves");
  int err = 0;
  for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int yes = 1, no = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // a restarted service gets its port back at once
    if (a->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listen_fd_ = fd;
    } else {
      err = errno;
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0)
    throw Error(ErrorKind::usage, "cannot listen on " + where + ": " + std::strerror(err),
                err == EADDRINUSE ? "another process holds the port: pass another --port, or 0 for any free one"
                                  : "pass a --host this machine has, and a --port above 1023 unless running as root");
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<sockaddr_in&>(a).sin_port);
}

void HttpFront::run() {
  pool_ = std::make_unique<httplib::ThreadPool>(std::size_t(std::max(1, config_.threads)));
  std::vector<std::shared_ptr<Connection>> waiting, still;
  std::vector<pollfd> fds;
  auto accept_after = Clock::now();
  while (!stopping_) {
    adopt_returned(waiting);
    auto now = Clock::now(), next = now + std::chrono::seconds(1);
    const bool accepting = open_ < config_.max_connections && now >= accept_after;
    fds.assign({pollfd{wake_[0], POLLIN, 0}, pollfd{accepting ? listen_fd_ : -1, POLLIN, 0}});
    for (auto& c : waiting) {
      fds.push_back({c->fd, POLLIN, 0});
      next = std::min(next, c->deadline);
    }
    if (!accepting) next = std::min(next, std::max(accept_after, now + std::chrono::milliseconds(50)));
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(std::max(next - now, Clock::duration::zero()));
    if (::poll(fds.data(), fds.size(), int(ms.count())) < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      char drop[64];
      while (::read(wake_[0], drop, sizeof drop) > 0) {
      }
    }
    const std::size_t polled = waiting.size();
    // Out of descriptors: the backlog keeps the rest until some close.
    if (fds[1].revents && !accept_all(waiting)) accept_after = Clock::now() + std::chrono::milliseconds(100);
    now = Clock::now();
    still.clear();
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      auto& c = waiting[i];
      Next step = i < polled && fds[2 + i].revents ? on_readable(*c) : Next::wait;
      if (step == Next::wait && now >= c->deadline) step = Next::close;
      if (step == Next::dispatch) dispatch(c);
      else if (step == Next::close) close(*c);
      else still.push_back(c);
    }
    waiting.swap(still);
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  for (auto& c : waiting) close(*c);
  pool_->shutdown();  // requests in progress finish; their connections come back to be closed
  std::lock_guard lock(returned_m_);
  for (auto& c : returned_) close(*c);
  returned_.clear();
}

void HttpFront::stop() {
  stopping_ = true;
  wake();
}

void HttpFront::wake() {
  const char one = 1;
  (void)!::write(wake_[1], &one, 1);
}

bool HttpFront::accept_all(std::vector<std::shared_ptr<Connection>>& waiting) {
  while (open_ < config_.max_connections) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    auto c = std::make_shared<Connection>();
    c->fd = fd;
    c->client = client_key(reinterpret_cast<sockaddr*>(&peer));
    c->deadline = after(config_.header_timeout_s);
    const int held = ++per_client_[c->client];
    ++open_;
    // Refused connections still count while they close, so a client opening them as fast as it
    // can holds twice the cap at most; past that it is not even told why.
    if (held > 2 * config_.max_per_address) {
      close(*c);
      continue;
    }
    if (held > config_.max_per_address) refuse(fd, config_.max_per_address), begin_drain(*c);
    waiting.push_back(c);
  }
  return true;
}

HttpFront::Next HttpFront::on_readable(Connection& c) {
  char buf[16384];
  for (int i = 0; i < kReadsPerWake; ++i) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0) return Next::close;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Next::wait : Next::close;
    if (c.draining) continue;
    c.in.append(buf, std::size_t(n));
    if (headers_complete(c)) return Next::dispatch;
    if (c.in.size() - c.taken > kHeaderBytesMax) return Next::close;
  }
  return Next::wait;
}

void HttpFront::dispatch(const std::shared_ptr<Connection>& c) {
  pool_->enqueue([this, c] { serve(c); });
}

void HttpFront::serve(const std::shared_ptr<Connection>& c) {
  const bool last = ++c->requests >= kRequestsPerConnection || stopping_;
  bool closed = false, ok = false;
  close_after_response = false;
  try {
    ConnectionStream stream(*c);
    ok = router_.serve(stream, last, closed);
  } catch (const std::exception&) {
    ok = false;  // httplib answers its handlers' exceptions itself; anything else ends the connection
  }
  c->keep = ok && !closed && !last && !close_after_response;
  {
    std::lock_guard lock(returned_m_);
    returned_.push_back(c);
  }
  wake();
}

void HttpFront::adopt_returned(std::vector<std::shared_ptr<Connection>>& waiting) {
  std::vector<std::shared_ptr<Connection>> back;
  {
    std::lock_guard lock(returned_m_);
    back.swap(returned_);
  }
  for (auto& c : back) {
    c->in.erase(0, c->taken);
    c->taken = 0;
    if (!c->keep) {
      begin_drain(*c);
      waiting.push_back(c);
      continue;
    }
    c->deadline = after(config_.header_timeout_s);
    if (headers_complete(*c)) dispatch(c);  // the client sent its next request already
    else waiting.push_back(c);
  }
}

void HttpFront::close(Connection& c) {
  ::close(c.fd);
  c.fd = -1;
  if (--per_client_[c.client] <= 0) per_client_.erase(c.client);
  --open_;
}

}  // namespace cudal1::service
