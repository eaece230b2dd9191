#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <charconv>
#include <common/fakes/scripted_server.hpp>
#include <common/io_thread.hpp>
#include <cstdio>
#include <set>

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

const std::string scripted_server::close_connection = std::string("\0redlock-test:close\0", 20);
const std::string scripted_server::reset_connection = std::string("\0redlock-test:reset\0", 20);

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

void report(std::exception_ptr e)
{
    if (!e) return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        std::fprintf(stderr, "scripted_server: %s\n", x.what());
    }
}

// Reads "<prefix><integer>\r\n" at `pos`; false while incomplete or malformed (`malformed` tells).
bool read_header(std::string_view bytes, std::size_t& pos, char prefix, long long& value, bool& malformed)
{
    if (pos >= bytes.size()) return false;
    if (bytes[pos] != prefix) {
        malformed = true;
        return false;
    }
    auto end = bytes.find("\r\n", pos);
    if (end == std::string_view::npos) return false;
    auto [ptr, ec] = std::from_chars(bytes.data() + pos + 1, bytes.data() + end, value);
    if (ec != std::errc{} || ptr != bytes.data() + end) {
        malformed = true;
        return false;
    }
    pos = end + 2;
    return true;
}

// Parses one RESP array of bulk strings; returns its length, 0 if incomplete; `malformed` otherwise.
std::size_t parse_array(std::string_view bytes, std::vector<std::string>* args, bool& malformed)
{
    std::size_t pos = 0;
    long long count = 0;
    if (!read_header(bytes, pos, '*', count, malformed)) return 0;
    for (long long i = 0; i < count; ++i) {
        long long length = 0;
        if (!read_header(bytes, pos, '$', length, malformed)) return 0;
        if (length < 0) {
            malformed = true;
            return 0;
        }
        auto size = static_cast<std::size_t>(length);
        if (bytes.size() < pos + size + 2) return 0;
        if (bytes.substr(pos + size, 2) != "\r\n") {
            malformed = true;
            return 0;
        }
        if (args != nullptr) args->emplace_back(bytes.substr(pos, size));
        pos += size + 2;
    }
    return pos;
}

}  // namespace

std::size_t scripted_server::command_length(std::string_view bytes)
{
    if (bytes.empty()) return 0;
    if (bytes.front() == '*') {
        bool malformed = false;
        auto n = parse_array(bytes, nullptr, malformed);
        if (!malformed) return n;
    }
    auto nl = bytes.find('\n');
    return nl == std::string_view::npos ? (bytes.front() == '*' ? bytes.size() : 0) : nl + 1;
}

std::vector<std::string> scripted_server::arguments(std::string_view request)
{
    std::vector<std::string> args;
    if (!request.empty() && request.front() == '*') {
        bool malformed = false;
        if (parse_array(request, &args, malformed) == 0 || malformed) return {};
        return args;
    }
    // Inline command: words separated by spaces.
    auto end = request.find_first_of("\r\n");
    auto line = request.substr(0, end);
    std::size_t pos = 0;
    while (pos < line.size()) {
        auto start = line.find_first_not_of(' ', pos);
        if (start == std::string_view::npos) break;
        auto stop = line.find(' ', start);
        if (stop == std::string_view::npos) stop = line.size();
        args.emplace_back(line.substr(start, stop - start));
        pos = stop;
    }
    return args;
}

namespace detail {

class scripted_core {
public:
    explicit scripted_core(scripted_server::responder r) : responder_(std::move(r))
    {
        io_.call([this] {
            acceptor_.open(tcp::v4());
            acceptor_.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0));
            acceptor_.listen();
            port_ = acceptor_.local_endpoint().port();
            asio::co_spawn(io_.context(), accept_loop(), report);
        });
    }

    ~scripted_core()
    {
        try {
            io_.call([this] {
                error_code ignored;
                acceptor_.close(ignored);
                for (const auto& socket : sockets_) socket->close(ignored);
            });
        } catch (const std::exception& e) {
            std::fprintf(stderr, "scripted_server: shutdown: %s\n", e.what());
        }
        io_.join();
    }

    std::uint16_t port() const { return port_; }
    std::size_t accepted() const { return accepted_.load(); }

private:
    asio::awaitable<void> accept_loop()
    {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
            if (ec) {
                if (!acceptor_.is_open()) co_return;
                asio::steady_timer pause(io_.context(), std::chrono::milliseconds(10));  // do not spin on EMFILE
                co_await pause.async_wait(use_tuple);
                continue;
            }
            ++accepted_;
            auto shared = std::make_shared<tcp::socket>(std::move(socket));
            sockets_.insert(shared);
            asio::co_spawn(io_.context(), serve(shared), report);
        }
    }

    asio::awaitable<void> serve(std::shared_ptr<tcp::socket> socket)
    {
        std::string pending;
        std::array<char, 16384> buffer;
        for (;;) {
            auto [ec, n] = co_await socket->async_read_some(asio::buffer(buffer), use_tuple);
            if (ec) break;
            pending.append(buffer.data(), n);
            std::string replies;
            bool close = false;
            bool reset = false;
            while (auto length = scripted_server::command_length(pending)) {
                std::string reply;
                try {
                    reply = responder_(std::string_view(pending).substr(0, length));
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "scripted_server: responder threw: %s\n", e.what());
                    close = true;
                }
                pending.erase(0, length);
                if (reply == scripted_server::close_connection) close = true;
                if (reply == scripted_server::reset_connection) reset = true;
                if (close || reset) break;
                replies += reply;
            }
            if (!replies.empty()) {
                auto [wec, written] = co_await asio::async_write(*socket, asio::buffer(replies), use_tuple);
                if (wec) break;
            }
            if (reset) {
                error_code ignored;
                socket->set_option(tcp::socket::linger(true, 0), ignored);
                break;
            }
            if (close) break;
        }
        error_code ignored;
        socket->close(ignored);
        sockets_.erase(socket);
    }

    scripted_server::responder responder_;
    io_thread io_;
    tcp::acceptor acceptor_{io_.context()};
    std::atomic<std::uint16_t> port_{0};
    std::set<std::shared_ptr<tcp::socket>> sockets_;  // io thread only
    std::atomic<std::size_t> accepted_{0};
};

}  // namespace detail

scripted_server::scripted_server(responder r) : core_(std::make_unique<detail::scripted_core>(std::move(r))) {}

scripted_server::~scripted_server() = default;

std::uint16_t scripted_server::port() const
{
    return core_->port();
}

std::string scripted_server::url() const
{
    return "redis://127.0.0.1:" + std::to_string(port());
}

std::size_t scripted_server::connections() const
{
    return core_->accepted();
}

}  // namespace redlock::test
