// service/net_address.h — what the reward service needs to know about addresses: whether a bind
// host is loopback and nothing else (the only place `--no-auth` is allowed), and which client a
// connection counts against for the per-address connection cap.
#pragma once

#include <sys/socket.h>

#include <string>

namespace cudal1::service {

// True when `host` resolves, and every address it resolves to is loopback (127.0.0.0/8, ::1, or
// an IPv4-mapped 127.x). Decided on the resolved addresses, never on the spelling: a name such as
// "127.0.0.1.example.com" may point anywhere.
bool resolves_to_loopback_only(const std::string& host);

// The client a peer address counts as: an IPv4 address (IPv4-mapped IPv6 included) on its own,
// an IPv6 address by its /64, since one host is commonly handed a whole /64 to pick from.
std::string client_key(const sockaddr* peer);

}  // namespace cudal1::service
