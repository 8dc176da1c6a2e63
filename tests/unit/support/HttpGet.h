#pragma once
/// \file
/// A minimal HTTP client for exporter tests: one HTTP/1.0 GET to 127.0.0.1.

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace tierd::testing {

/// One HTTP/1.0 GET of `path` on 127.0.0.1:`port`, with "Authorization: Basic `auth`" when
/// `auth` is not empty; returns the whole response (status line, headers, body).
inline std::string httpGet(int port, const std::string& path, const std::string& auth = "") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n";
  if (!auth.empty()) req += "Authorization: Basic " + auth + "\r\n";
  req += "\r\n";
  REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace tierd::testing
