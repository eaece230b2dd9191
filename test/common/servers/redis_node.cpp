#include "connection/server_version.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cerrno>
#include <common/processes/subprocess.hpp>
#include <common/servers/raw_client.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/tls_files.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr auto start_timeout = 5s;
constexpr auto poll_interval = 5ms;
constexpr auto stop_grace = 2s;
constexpr auto cli_timeout = 5s;
constexpr int max_start_attempts = 10;

std::string read_file(const std::string& path, std::uintmax_t from = 0)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    in.seekg(static_cast<std::streamoff>(from));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string last_lines(const std::string& text, std::size_t lines)
{
    std::vector<std::string> all;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) all.push_back(line);
    std::string result;
    for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
        result += all[i];
        if (i + 1 < all.size()) result += '\n';
    }
    return result;
}

std::string trim(const std::string& s)
{
    auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return {};
    auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

std::string resp_command(const std::vector<std::string>& args)
{
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    return out;
}

// The readiness probe for TLS nodes: handshake verified with the test CA, then PING.
asio::awaitable<void> tls_probe(asio::ssl::stream<tcp::socket>& stream, std::uint16_t port, std::string request,
                                bool& answered)
{
    co_await stream.next_layer().async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), port),
                                               asio::use_awaitable);
    co_await stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
    co_await asio::async_write(stream, asio::buffer(request), asio::use_awaitable);
    std::string buffer;
    for (;;) {
        auto n = co_await asio::async_read_until(stream, asio::dynamic_buffer(buffer), "\r\n", asio::use_awaitable);
        auto line = buffer.substr(0, n);
        buffer.erase(0, n);
        if (line == "+PONG\r\n") {
            answered = true;
            co_return;
        }
        if (line != "+OK\r\n") co_return;  // -LOADING, -NOAUTH, ...
    }
}

bool tls_answers_ping(std::uint16_t port, const std::string& request)
{
    const auto& files = tls_files::get();
    asio::io_context ctx;
    asio::ssl::context tls(asio::ssl::context::tls_client);
    tls.load_verify_file(files.ca_cert);
    // Offered only if asked for, so the probe also works with --tls-auth-clients yes in extra_args.
    tls.use_certificate_file(files.client_cert, asio::ssl::context::pem);
    tls.use_private_key_file(files.client_key, asio::ssl::context::pem);
    asio::ssl::stream<tcp::socket> stream(ctx, tls);
    stream.set_verify_mode(asio::ssl::verify_peer);
    stream.set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
    bool answered = false;
    asio::co_spawn(ctx, tls_probe(stream, port, request, answered), [](std::exception_ptr) {});
    ctx.run_for(1s);
    return answered;
}

}  // namespace

server_kind test_server()
{
    static const server_kind kind = [] {
        const char* value = std::getenv("REDLOCK_TEST_SERVER");
        const std::string name = value != nullptr ? value : "";
        if (name.empty() || name == "redis") return server_kind::redis;
        if (name == "valkey") return server_kind::valkey;
        throw std::invalid_argument("REDLOCK_TEST_SERVER='" + name + "': expected 'redis' or 'valkey'");
    }();
    return kind;
}

const std::string& server_program()
{
    static const std::string path = find_executable(
        test_server() == server_kind::valkey ? "valkey-server" : "redis-server", "REDLOCK_REDIS_SERVER");
    return path;
}

const std::string& cli_program()
{
    static const std::string path =
        find_executable(test_server() == server_kind::valkey ? "valkey-cli" : "redis-cli", "REDLOCK_REDIS_CLI");
    return path;
}

server_identity server_of_info(const std::string& node_info)
{
    auto field = [&node_info](const std::string& name) {
        const auto at = node_info.find(name + ":");
        if (at == std::string::npos) return std::string();
        const auto from = at + name.size() + 1;
        return node_info.substr(from, node_info.find_first_of("\r\n", from) - from);
    };
    if (field("server_name") == "valkey")
        return {server_kind::valkey, detail::parse_server_version(field("valkey_version"))};
    return {server_kind::redis, detail::parse_server_version(field("redis_version"))};
}

std::uint16_t pick_free_port()
{
    return pick_free_ports(1).front();
}

std::vector<std::uint16_t> pick_free_ports(std::size_t n)
{
    // All sockets stay bound until every port is known, so the n ports differ.
    std::vector<int> fds;
    std::vector<std::uint16_t> ports;
    auto close_all = [&fds] {
        for (int fd : fds) ::close(fd);
    };
    for (std::size_t i = 0; i < n; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            close_all();
            throw std::system_error(errno, std::generic_category(), "socket");
        }
        fds.push_back(fd);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = 0;
        socklen_t length = sizeof address;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            int saved = errno;
            close_all();
            throw std::system_error(saved, std::generic_category(), "bind to a free port");
        }
        ports.push_back(ntohs(address.sin_port));
    }
    close_all();
    return ports;
}

// Delegating: if wait_ready() throws, the destructor cleans up.
redis_node::redis_node(node_options options) : redis_node(std::move(options), pick_free_port(), deferred_start{})
{
    wait_ready(pick_free_port);
}

redis_node::redis_node(node_options options, std::uint16_t port, deferred_start)
    : options_(std::move(options)), port_(port)
{
    if (options_.tls) tls_files::get();  // generate the certificates before the clock starts
    dir_ = make_temp_dir("redlock-node-");
    try {
        if (options_.clock_shim) set_clock(0);
        launch();
    } catch (...) {
        teardown();
        throw;
    }
}

redis_node::~redis_node()
{
    teardown();
}

void redis_node::teardown() noexcept
{
    stop_process(pid_, stop_grace);
    pid_ = -1;
    if (!dir_.empty()) {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        dir_.clear();
    }
}

void redis_node::launch()
{
    // valkey-server takes the same options as redis-server 7.0 (enable-debug-command, hz, the tls- and cluster-
    // ones all exist in Valkey 8 under the same names); its log says "Ready to accept connections" too.
    std::vector<std::string> args = {server_program()};
    auto add = [&args](std::initializer_list<std::string> more) { args.insert(args.end(), more); };
    if (options_.tls) {
        const auto& files = tls_files::get();
        add({"--port", "0", "--tls-port", std::to_string(port_), "--tls-cert-file", files.server_cert, "--tls-key-file",
             files.server_key, "--tls-ca-cert-file", files.ca_cert, "--tls-auth-clients", "no"});
    } else {
        add({"--port", std::to_string(port_)});
    }
    add({"--bind", "127.0.0.1", "--daemonize", "no", "--save", "", "--enable-debug-command", "local", "--hz", "100",
         "--dir", dir_, "--logfile", dir_ + "/redis.log"});
    if (options_.persistence) {
        add({"--appendonly", "yes", "--appendfsync", "always"});
    } else {
        add({"--appendonly", "no"});
    }
    if (options_.unix_socket) add({"--unixsocket", unix_path(), "--unixsocketperm", "700"});
    if (!options_.requirepass.empty()) add({"--requirepass", options_.requirepass});
    args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());

    std::vector<std::string> env_set;
    if (options_.clock_shim) {
        env_set = {std::string("LD_PRELOAD=") + REDLOCK_TEST_CLOCKSHIM, "REDLOCK_CLOCKSHIM_FILE=" + dir_ + "/clock"};
    }
    std::error_code ec;
    auto size = std::filesystem::file_size(dir_ + "/redis.log", ec);
    log_offset_ = ec ? 0 : size;
    pid_ = spawn_process({std::move(args), environment_with(env_set), dir_ + "/stdio.log"});
}

bool redis_node::logged_ready() const
{
    // A test that moves the log or silences notices gets the PING check alone.
    for (const auto& arg : options_.extra_args) {
        if (arg == "--logfile" || arg == "--loglevel") return true;
    }
    return read_file(dir_ + "/redis.log", log_offset_).find("Ready to accept connections") != std::string::npos;
}

bool redis_node::answers_ping() const
{
    std::string request;
    if (!options_.requirepass.empty()) request = resp_command({"AUTH", options_.requirepass});
    request += resp_command({"PING"});
    if (options_.tls) return tls_answers_ping(port_, request);
    try {
        raw_client client(port_, 200ms);
        client.write(request, 500ms);
        for (int replies = 0; replies < 2; ++replies) {
            boost::system::error_code ec;
            auto line = client.read_until("\r\n", 500ms, ec);
            if (ec) return false;
            if (line == "+PONG\r\n") return true;
            if (line != "+OK\r\n") return false;  // -LOADING, -NOAUTH, ...
        }
    } catch (const std::exception&) {
    }
    return false;
}

void redis_node::wait_ready(std::uint16_t (*another_port)())
{
    int attempts = 1;
    auto deadline = std::chrono::steady_clock::now() + start_timeout;
    for (;;) {
        int status = 0;
        if (wait_for_exit(pid_, 0ms, &status)) {
            pid_ = -1;
            auto log = read_file(dir_ + "/redis.log", log_offset_) + read_file(dir_ + "/stdio.log");
            // Another process took the port between pick_free_port() and the server's bind().
            if (log.find("Address already in use") != std::string::npos && attempts < max_start_attempts) {
                ++attempts;
                if (another_port != nullptr) {
                    port_ = another_port();
                } else {
                    std::this_thread::sleep_for(50ms);
                }
                std::error_code ignored;
                std::filesystem::remove(dir_ + "/stdio.log", ignored);
                launch();
                deadline = std::chrono::steady_clock::now() + start_timeout;
                continue;
            }
            throw std::runtime_error(std::filesystem::path(server_program()).filename().string() + " on port " +
                                     std::to_string(port_) + " exited (status " + std::to_string(status) +
                                     ") while starting:\n" + log_tail());
        }
        // Only our own server, once it logged that it listens: PING alone could reach a stranger that
        // took the port while ours is still starting (and about to fail with "Address already in use").
        if (logged_ready() && answers_ping()) return;
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error(std::filesystem::path(server_program()).filename().string() + " on port " +
                                     std::to_string(port_) + " did not answer PING within 5 s:\n" + log_tail());
        }
        std::this_thread::sleep_for(poll_interval);
    }
}

std::string redis_node::url() const
{
    return (options_.tls ? "rediss://127.0.0.1:" : "redis://127.0.0.1:") + std::to_string(port_);
}

std::string redis_node::unix_path() const
{
    return options_.unix_socket ? dir_ + "/redis.sock" : std::string();
}

void redis_node::pause()
{
    if (pid_ <= 0) throw std::logic_error("redis_node::pause: not running");
    ::kill(pid_, SIGSTOP);
}

void redis_node::resume()
{
    if (pid_ <= 0) throw std::logic_error("redis_node::resume: not running");
    ::kill(pid_, SIGCONT);
}

void redis_node::kill()
{
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

void redis_node::restart()
{
    kill();
    launch();
    try {
        wait_ready(nullptr);
    } catch (...) {
        kill();
        throw;
    }
}

bool redis_node::running() const
{
    if (pid_ <= 0) return false;
    siginfo_t info{};
    // WNOWAIT: look without reaping, so kill() and the destructor still own the pid.
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
    return info.si_pid == 0;
}

void redis_node::set_clock(std::int64_t offset_ms, double rate)
{
    if (!options_.clock_shim) throw std::logic_error("redis_node::set_clock needs node_options::clock_shim");
    if (rate < 0) throw std::invalid_argument("redis_node::set_clock: negative rate");
    char text[64];
    std::snprintf(text, sizeof text, "%lld %.6f\n", static_cast<long long>(offset_ms), rate);
    // Replaced with rename() so the shim never reads a half-written file.
    std::string path = dir_ + "/clock";
    {
        std::ofstream out(path + ".new", std::ios::trunc);
        out << text;
        if (!out.flush()) throw std::runtime_error("cannot write " + path + ".new");
    }
    std::filesystem::rename(path + ".new", path);
    // The shim re-reads the file at most once a millisecond.
    std::this_thread::sleep_for(3ms);
}

long redis_node::command_stat(const std::string& command, const std::string& field) const
{
    const auto info = cli({"INFO", "commandstats"});
    const auto line_at = info.find("cmdstat_" + command + ":");
    if (line_at == std::string::npos) return 0;
    const auto line = info.substr(line_at, info.find('\n', line_at) - line_at);
    const auto at = line.find(field + "=");
    if (at == std::string::npos) return 0;
    return std::stol(line.substr(at + field.size() + 1));
}

std::string redis_node::cli(std::vector<std::string> args) const
{
    std::vector<std::string> command = {cli_program(), "-h", "127.0.0.1", "-p", std::to_string(port_)};
    if (options_.tls) {
        const auto& files = tls_files::get();
        command.insert(command.end(),
                       {"--tls", "--cacert", files.ca_cert, "--cert", files.client_cert, "--key", files.client_key});
    }
    if (!options_.requirepass.empty()) {
        command.insert(command.end(), {"-a", options_.requirepass, "--no-auth-warning"});
    }
    command.insert(command.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
    auto result = run_command(command, cli_timeout);
    if (result.exit_code != 0) {
        throw std::runtime_error(std::filesystem::path(cli_program()).filename().string() + " on port " +
                                 std::to_string(port_) + " failed (" + std::to_string(result.exit_code) +
                                 "): " + trim(result.err + result.out));
    }
    return trim(result.out);
}

std::string redis_node::log_tail(std::size_t lines) const
{
    auto tail = last_lines(read_file(dir_ + "/redis.log"), lines);
    auto stdio = trim(read_file(dir_ + "/stdio.log"));
    if (!stdio.empty()) tail += "\n[stdout/stderr]\n" + last_lines(stdio, lines);
    return tail;
}

cluster::cluster(std::size_t n, node_options options)
{
    auto ports = pick_free_ports(n);
    nodes_.reserve(n);
    // Launch all, then wait for all: the start-up times overlap.
    for (auto port : ports) {
        nodes_.push_back(std::unique_ptr<redis_node>(new redis_node(options, port, redis_node::deferred_start{})));
    }
    for (auto& node : nodes_) node->wait_ready(pick_free_port);
}

std::vector<std::string> cluster::urls() const
{
    std::vector<std::string> result;
    for (const auto& node : nodes_) result.push_back(node->url());
    return result;
}

}  // namespace redlock::test
