// service/net_address.cpp — see net_address.h.
#include "service/net_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>

namespace cudal1::service {

namespace {

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family != AF_INET6) return false;
  const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

}  // namespace

bool resolves_to_loopback_only(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool all = found != nullptr;
  for (addrinfo* a = found; a; a = a->ai_next) all = all && is_loopback(a->ai_addr);
  ::freeaddrinfo(found);
  return all;
}

std::string client_key(const sockaddr* peer) {
  char text[INET6_ADDRSTRLEN] = {};
  if (peer->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(peer)->sin_addr, text, sizeof text);
    return text;
  }
  if (peer->sa_family != AF_INET6) return "other";
  in6_addr v6 = reinterpret_cast<const sockaddr_in6*>(peer)->sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    ::inet_ntop(AF_INET, &v6.s6_addr[12], text, sizeof text);
    return text;
  }
  std::memset(&v6.s6_addr[8], 0, 8);
  ::inet_ntop(AF_INET6, &v6, text, sizeof text);
  return std::string(text) + "/64";
}

}  // namespace cudal1::service
