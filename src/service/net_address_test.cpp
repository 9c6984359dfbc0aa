// Addresses as the reward service judges them: loopback by what a host resolves to, never by
// its spelling; clients counted by address, IPv6 ones by their /64.
#include "service/net_address.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

namespace cudal1::service {
namespace {

TEST(NetAddress, LoopbackIsDecidedOnTheResolvedAddresses) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "::ffff:127.0.0.1"})
    EXPECT_TRUE(resolves_to_loopback_only(host)) << host;
  // Every address on the machine, other machines' addresses, and names that only look like
  // loopback (this one resolves nowhere: .invalid never does) are not.
  for (const char* host : {"0.0.0.0", "::", "10.1.2.3", "192.0.2.1", "2001:db8::1", "127.0.0.1.invalid", ""})
    EXPECT_FALSE(resolves_to_loopback_only(host)) << host;
}

sockaddr_in6 v6(const char* text) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  EXPECT_EQ(inet_pton(AF_INET6, text, &a.sin6_addr), 1) << text;
  return a;
}

TEST(NetAddress, ClientsAreCountedByAddressAndIpv6ByItsSlash64) {
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  inet_pton(AF_INET, "192.0.2.7", &v4.sin_addr);
  EXPECT_EQ(client_key(reinterpret_cast<sockaddr*>(&v4)), "192.0.2.7");
  auto key = [](sockaddr_in6 a) { return client_key(reinterpret_cast<sockaddr*>(&a)); };
  EXPECT_EQ(key(v6("::ffff:192.0.2.7")), "192.0.2.7");  // a dual-stack socket's IPv4 client
  EXPECT_EQ(key(v6("2001:db8:1:2::1")), key(v6("2001:db8:1:2:aaaa:bbbb:cccc:dddd")));
  EXPECT_NE(key(v6("2001:db8:1:2::1")), key(v6("2001:db8:1:3::1")));
}

}  // namespace
}  // namespace cudal1::service
