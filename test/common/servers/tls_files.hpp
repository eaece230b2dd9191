// Certificates for TLS tests, made once per test process with the openssl CLI.
#pragma once

#include <string>

namespace redlock::test {

struct tls_files {
    std::string dir;          // a temp dir holding all of them; removed at process exit
    std::string ca_cert;      // the CA that signed the server and client certificates
    std::string server_cert;  // CN=localhost, subjectAltName DNS:localhost, IP:127.0.0.1
    std::string server_key;
    std::string client_cert;  // extendedKeyUsage clientAuth, for mutual TLS
    std::string client_key;
    std::string other_ca_cert;  // an unrelated CA: verifying the server with it must fail

    // Generated on first use (thread-safe); throws std::runtime_error if openssl fails.
    static const tls_files& get();
};

}  // namespace redlock::test
