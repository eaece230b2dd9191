#include <common/processes/subprocess.hpp>
#include <common/servers/tls_files.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace redlock::test {
namespace {

// EC keys: generating them is instant, RSA would cost ~100 ms per key.
constexpr const char* openssl_config = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
)";

class generator {
public:
    explicit generator(std::string dir) : dir_(std::move(dir)), openssl_(find_executable("openssl")) {}

    std::string path(const std::string& name) const { return dir_ + "/" + name; }

    void write_config() const { std::ofstream(path("openssl.cnf")) << openssl_config; }

    // A self-signed CA certificate.
    void make_ca(const std::string& name, const std::string& subject) const
    {
        run({"req", "-x509", "-config", path("openssl.cnf"), "-extensions", "ca_ext", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650", "-subj", subject, "-keyout",
             path(name + ".key"), "-out", path(name + ".crt")});
    }

    // A leaf certificate signed by the CA `ca`, with the extensions of config section `extensions`.
    void make_leaf(const std::string& name, const std::string& subject, const std::string& ca,
                   const std::string& extensions, const std::string& serial) const
    {
        run({"req", "-new", "-config", path("openssl.cnf"), "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-subj", subject, "-keyout", path(name + ".key"), "-out", path(name + ".csr")});
        run({"x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".crt"), "-CAkey", path(ca + ".key"),
             "-set_serial", serial, "-days", "3650", "-extfile", path("openssl.cnf"), "-extensions", extensions, "-out",
             path(name + ".crt")});
    }

private:
    void run(std::vector<std::string> args) const
    {
        args.insert(args.begin(), openssl_);
        auto result = run_command(args, std::chrono::seconds(30));
        if (result.exit_code != 0) {
            throw std::runtime_error("openssl " + args.at(1) + " failed (" + std::to_string(result.exit_code) +
                                     "): " + result.err);
        }
    }

    std::string dir_;
    std::string openssl_;
};

tls_files generate()
{
    tls_files files;
    files.dir = make_temp_dir("redlock-tls-");
    try {
        generator gen(files.dir);
        gen.write_config();
        gen.make_ca("ca", "/CN=redlock test CA");
        gen.make_leaf("server", "/CN=localhost", "ca", "server_ext", "2");
        gen.make_leaf("client", "/CN=redlock test client", "ca", "client_ext", "3");
        gen.make_ca("other-ca", "/CN=redlock unrelated CA");
        files.ca_cert = gen.path("ca.crt");
        files.server_cert = gen.path("server.crt");
        files.server_key = gen.path("server.key");
        files.client_cert = gen.path("client.crt");
        files.client_key = gen.path("client.key");
        files.other_ca_cert = gen.path("other-ca.crt");
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove_all(files.dir, ignored);
        throw;
    }
    return files;
}

// Owns the directory for the rest of the process.
struct tls_files_owner {
    tls_files files = generate();

    ~tls_files_owner()
    {
        std::error_code ignored;
        std::filesystem::remove_all(files.dir, ignored);
    }
};

}  // namespace

const tls_files& tls_files::get()
{
    static const tls_files_owner owner;
    return owner.files;
}

}  // namespace redlock::test
