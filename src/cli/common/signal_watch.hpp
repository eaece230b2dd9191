// INT, TERM and HUP for `redlock exec` and `redlock elect`, each with its origin. An SA_SIGINFO handler writes every
// signal to a pipe that the event loop reads: asio::signal_set cannot say who sent a signal, and exec must tell a
// terminal's Ctrl-C (which the whole foreground process group got, the command included) from a kill(2) aimed at
// redlock alone.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>

#include <csignal>
#include <utility>
#include <vector>

namespace redlock::cli {

struct signal_event {
    int signo = 0;
    int code = 0;    // si_code: SI_USER (kill), SI_KERNEL (the terminal driver), SI_QUEUE, SI_TKILL...
    pid_t from = 0;  // the sender's pid, for signals sent by a process

    // Sent by the terminal driver (Ctrl-C, Ctrl-\, hangup) to the whole foreground process group at once.
    bool from_terminal() const noexcept { return code == SI_KERNEL; }
};

// One at a time in a process (the handler writes to the pipe of the live one).
class signal_watch {
public:
    explicit signal_watch(const boost::asio::any_io_executor& ex);
    ~signal_watch();
    signal_watch(const signal_watch&) = delete;
    signal_watch& operator=(const signal_watch&) = delete;

    // Catches `signo` from now on, unless the caller left it ignored (nohup, `cmd &` in a script): then it stays
    // ignored, for us and for the command, as a shell would do. Returns whether it is caught.
    bool add(int signo);

    // Completes with the next signal. Signature: void(error_code, std::size_t); `out` must live until then.
    template <class Token>
    auto async_wait(signal_event& out, Token&& token)
    {
        return boost::asio::async_read(pipe_, boost::asio::buffer(&out, sizeof out), std::forward<Token>(token));
    }

    void cancel() { pipe_.cancel(); }

private:
    boost::asio::posix::stream_descriptor pipe_;
    std::vector<std::pair<int, struct sigaction>> previous_;
};

}  // namespace redlock::cli
