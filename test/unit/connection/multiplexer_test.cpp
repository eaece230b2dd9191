// The pipeline bookkeeping without any I/O: coalescing, reply matching, abandon, connection loss.
#include "connection/multiplexer.hpp"

#include <boost/test/unit_test.hpp>

#include <common/resp_values.hpp>
#include <memory>
#include <vector>

using redlock::error_code;
using redlock::request;
using redlock::response;
using redlock::detail::exec_entry;
using redlock::detail::multiplexer;
namespace resp = redlock::resp;
using redlock::test::aggregate;
using redlock::test::bulk;

namespace {

struct recording_entry final : exec_entry {
    recording_entry(const request& req, response* resp) : exec_entry(req, resp) {}
    void finish(error_code ec) override { results.push_back(ec); }
    std::vector<error_code> results;
};

request command(std::string_view name, std::string_view arg)
{
    request r;
    r.push(name, arg);
    return r;
}

resp::value push_message()
{
    return aggregate(resp::type::push, {bulk("message"), bulk("channel"), bulk("payload")});
}

}  // namespace

BOOST_AUTO_TEST_CASE(waiting_requests_are_coalesced_into_one_write)
{
    multiplexer mpx;
    auto a = command("GET", "a"), b = command("GET", "b");
    response ra, rb;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    mpx.add(ea);
    mpx.add(eb);
    BOOST_TEST(mpx.has_waiting());
    BOOST_TEST(mpx.prepare_write() == std::string(a.payload()) + std::string(b.payload()));
    BOOST_TEST(!mpx.has_waiting());
    BOOST_TEST(mpx.prepare_write().empty());  // nothing new to write
}

BOOST_AUTO_TEST_CASE(replies_go_to_requests_in_write_order)
{
    multiplexer mpx;
    auto a = command("GET", "a"), b = command("GET", "b");
    response ra, rb;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    mpx.add(ea);
    mpx.add(eb);
    mpx.prepare_write();
    mpx.commit_write();
    auto va = bulk("A"), vb = bulk("B");
    BOOST_TEST((mpx.consume(va) == multiplexer::consumed::reply));
    BOOST_TEST((mpx.consume(vb) == multiplexer::consumed::reply));
    BOOST_TEST(ra.size() == 1u);
    BOOST_TEST(ra[0].text == "A");
    BOOST_TEST(rb[0].text == "B");
    BOOST_TEST(ea->results.size() == 1u);
    BOOST_TEST(!ea->results[0]);
    BOOST_TEST(eb->results.size() == 1u);
    BOOST_TEST(mpx.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_pipelined_request_finishes_after_its_last_reply)
{
    multiplexer mpx;
    request r;
    r.push("SET", "k", "v");
    r.push("GET", "k");
    response out;
    auto e = std::make_shared<recording_entry>(r, &out);
    mpx.add(e);
    mpx.prepare_write();
    mpx.commit_write();
    auto ok = bulk("OK");
    mpx.consume(ok);
    BOOST_TEST(e->results.empty());
    auto v = bulk("v");
    mpx.consume(v);
    BOOST_TEST(e->results.size() == 1u);
    BOOST_TEST(out.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_waiting_request_can_be_removed_but_a_written_one_cannot)
{
    multiplexer mpx;
    auto a = command("GET", "a"), b = command("GET", "b");
    response ra, rb;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    mpx.add(ea);
    mpx.prepare_write();
    mpx.add(eb);
    BOOST_TEST(!mpx.remove(*ea));
    BOOST_TEST(mpx.remove(*eb));
    BOOST_TEST(mpx.prepare_write().empty());
}

BOOST_AUTO_TEST_CASE(an_abandoned_request_drops_its_reply_and_keeps_the_stream_in_step)
{
    multiplexer mpx;
    auto a = command("GET", "a"), b = command("GET", "b");
    response ra, rb;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    mpx.add(ea);
    mpx.add(eb);
    mpx.prepare_write();
    mpx.commit_write();
    mpx.abandon(*ea);
    auto va = bulk("A"), vb = bulk("B");
    mpx.consume(va);
    mpx.consume(vb);
    BOOST_TEST(ra.empty());
    BOOST_TEST(ea->results.empty());  // an abandoned entry is never finished by the multiplexer
    BOOST_TEST(rb.size() == 1u);
    BOOST_TEST(rb[0].text == "B");
}

BOOST_AUTO_TEST_CASE(pushes_are_not_replies)
{
    multiplexer mpx;
    auto a = command("GET", "a");
    response ra;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    mpx.add(ea);
    mpx.prepare_write();
    mpx.commit_write();
    auto p = push_message();
    BOOST_TEST((mpx.consume(p) == multiplexer::consumed::push));
    BOOST_TEST(ea->results.empty());
    auto va = bulk("A");
    BOOST_TEST((mpx.consume(va) == multiplexer::consumed::reply));
    BOOST_TEST(ea->results.size() == 1u);
}

BOOST_AUTO_TEST_CASE(subscribe_expects_no_reply_and_finishes_when_written)
{
    multiplexer mpx;
    auto sub = command("SUBSCRIBE", "ch");
    BOOST_TEST(sub.expected_replies() == 0u);
    auto get = command("GET", "a");
    response rs, rg;
    auto es = std::make_shared<recording_entry>(sub, &rs);
    auto eg = std::make_shared<recording_entry>(get, &rg);
    mpx.add(es);
    mpx.add(eg);
    mpx.prepare_write();
    mpx.commit_write();
    BOOST_TEST(es->results.size() == 1u);
    auto v = bulk("A");
    mpx.consume(v);
    BOOST_TEST(eg->results.size() == 1u);
    BOOST_TEST(rg[0].text == "A");
}

BOOST_AUTO_TEST_CASE(a_reply_nobody_asked_for_is_reported)
{
    multiplexer mpx;
    auto v = bulk("surprise");
    BOOST_TEST((mpx.consume(v) == multiplexer::consumed::unsolicited));
}

BOOST_AUTO_TEST_CASE(connection_loss_fails_written_and_waiting_requests_differently)
{
    multiplexer mpx;
    auto a = command("GET", "a"), b = command("GET", "b"), c = command("GET", "c");
    response ra, rb, rc;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    auto ec = std::make_shared<recording_entry>(c, &rc);
    mpx.add(ea);
    mpx.add(eb);
    mpx.prepare_write();
    mpx.commit_write();
    mpx.abandon(*eb);
    mpx.add(ec);
    mpx.fail_all(redlock::error::connection_lost, redlock::error::not_connected);
    BOOST_TEST(ea->results.at(0) == redlock::error::connection_lost);
    BOOST_TEST(eb->results.empty());
    BOOST_TEST(ec->results.at(0) == redlock::error::not_connected);
    BOOST_TEST(mpx.size() == 0u);
}
