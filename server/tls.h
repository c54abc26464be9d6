// The server's transport credentials: plaintext, TLS, or mutual TLS, from PEM
// files named by flags.
#ifndef MEMPLAN_SERVER_TLS_H_
#define MEMPLAN_SERVER_TLS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace memplan {

// PEM files; all empty: plaintext.
struct ServerTlsFiles {
  std::string cert_file;  // the server's certificate chain
  std::string key_file;   // its private key
  // CAs whose certificates clients must present (mutual TLS); empty: TLS
  // without client certificates.
  std::string client_ca_file;

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// Returns InsecureServerCredentials when `files` is all empty; TLS with the
// certificate and key otherwise; and when client_ca_file is set, TLS that
// requires every client to present a certificate signed by one of its CAs
// (a handshake without one, or with another CA's, fails). Returns
// INVALID_ARGUMENT naming the flags (--tls_cert_file, --tls_key_file,
// --tls_client_ca_file) when only one of cert and key is set or a client CA
// comes without them, NOT_FOUND naming the flag and path of a file that
// cannot be read, INVALID_ARGUMENT when a file holds no PEM block. A
// certificate that does not match its key is found when the server starts
// (Server::Start's UNAVAILABLE).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const ServerTlsFiles& files);

// Returns the contents of the PEM file at `path` named by `flag`: NOT_FOUND
// when it cannot be read, INVALID_ARGUMENT when it holds no
// "-----BEGIN " block.
absl::StatusOr<std::string> ReadPemFile(const std::string& flag,
                                        const std::string& path);

}  // namespace memplan

#endif  // MEMPLAN_SERVER_TLS_H_
