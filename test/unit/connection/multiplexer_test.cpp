// The pipeline bookkeeping without any I/O: coalescing, reply matching, abandon, connection loss.
#include "connection/multiplexer.hpp"

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

using redlock::error_code;
using redlock::request;
using redlock::response;
using redlock::detail::exec_entry;
using redlock::detail::multiplexer;
namespace resp = redlock::resp;
using redlock::test::aggregate;
using redlock::test::bulk;
using redlock::test::error_reply;
using redlock::test::integer;

namespace {

struct recording_entry final : exec_entry {
    recording_entry(const request& req, response* resp) : exec_entry(req, resp) {}
    void finish(error_code ec) override { results.push_back(ec); }
    void confirmed(const resp::value& push) override { confirmed_channels.push_back(push.elements.at(1).text); }
    std::vector<error_code> results;
    std::vector<std::string> confirmed_channels;
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

// RESP3 (un)subscribe confirmation: [kind, channel, subscription count].
resp::value confirmation(std::string kind, std::string channel, std::int64_t count)
{
    return aggregate(resp::type::push, {bulk(std::move(kind)), bulk(std::move(channel)), integer(count)});
}

request subscribe(std::initializer_list<std::string_view> channels, std::string_view command = "SUBSCRIBE")
{
    request r;
    r.push_range(command, channels);
    return r;
}

// Writes every waiting entry, as the connection's writer does.
void write_all(multiplexer& mpx)
{
    mpx.prepare_write();
    mpx.commit_write();
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

// Subscriptions: each SUBSCRIBE-family command is answered by one confirmation push per channel, or by one
// error reply for the whole command. Both are that command's replies, wherever it sits in the pipeline.

BOOST_AUTO_TEST_CASE(subscribe_expects_one_confirmation_per_channel)
{
    BOOST_TEST(subscribe({"a"}).expected_replies() == 1u);
    BOOST_TEST(subscribe({"a", "b", "c"}).expected_replies() == 3u);
    BOOST_TEST(subscribe({"x", "y"}, "unsubscribe").expected_replies() == 2u);
    BOOST_TEST(subscribe({"p*"}, "PSUBSCRIBE").expected_replies() == 1u);
}

BOOST_AUTO_TEST_CASE(a_subscribe_alone_completes_on_its_confirmations_not_when_written)
{
    multiplexer mpx;
    auto sub = subscribe({"a", "b"});
    response rs;
    auto es = std::make_shared<recording_entry>(sub, &rs);
    mpx.add(es);
    write_all(mpx);
    BOOST_TEST(es->results.empty());
    BOOST_TEST(mpx.awaiting_replies() == 1u);
    auto ca = confirmation("subscribe", "a", 1);
    mpx.consume(ca);
    BOOST_TEST(es->results.empty());  // one confirmation per channel
    auto cb = confirmation("subscribe", "b", 2);
    mpx.consume(cb);
    BOOST_REQUIRE(es->results.size() == 1u);
    BOOST_TEST(!es->results[0]);
    BOOST_REQUIRE(rs.size() == 2u);
    BOOST_TEST(rs[0].elements.at(1).text == "a");
    BOOST_TEST(rs[1].elements.at(1).text == "b");
    BOOST_TEST(mpx.awaiting_replies() == 0u);
    BOOST_TEST(mpx.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_subscribe_between_ordinary_requests_keeps_every_reply_with_its_request)
{
    multiplexer mpx;
    auto a = command("GET", "a"), b = command("GET", "b");
    auto sub = subscribe({"ch1", "ch2"});
    response ra, rs, rb;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto es = std::make_shared<recording_entry>(sub, &rs);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    mpx.add(ea);
    mpx.add(es);
    mpx.add(eb);
    write_all(mpx);
    BOOST_TEST(es->results.empty());  // not done when written
    auto va = bulk("A");
    BOOST_TEST((mpx.consume(va) == multiplexer::consumed::reply));
    BOOST_TEST(ea->results.size() == 1u);
    auto c1 = confirmation("subscribe", "ch1", 1), c2 = confirmation("subscribe", "ch2", 2);
    BOOST_TEST((mpx.consume(c1) == multiplexer::consumed::confirmation));
    BOOST_TEST(es->results.empty());
    BOOST_TEST((mpx.consume(c2) == multiplexer::consumed::confirmation));
    BOOST_TEST(es->results.size() == 1u);
    BOOST_TEST(rs.size() == 2u);
    auto vb = bulk("B");
    BOOST_TEST((mpx.consume(vb) == multiplexer::consumed::reply));
    BOOST_REQUIRE(rb.size() == 1u);
    BOOST_TEST(rb[0].text == "B");
    BOOST_TEST(mpx.size() == 0u);
}

BOOST_AUTO_TEST_CASE(an_error_reply_to_subscribe_goes_to_the_subscribe_not_to_the_next_request)
{
    multiplexer mpx;
    auto a = command("GET", "a"), b = command("GET", "b");
    auto sub = subscribe({"ch1", "ch2", "ch3"});
    response ra, rs, rb;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto es = std::make_shared<recording_entry>(sub, &rs);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    mpx.add(ea);
    mpx.add(es);
    mpx.add(eb);
    write_all(mpx);
    auto va = bulk("A");
    mpx.consume(va);
    // One error for the whole command (ACL: no rights on one of the channels) finishes it.
    auto refusal = error_reply("NOPERM this user has no permissions to access the 'ch2' channel");
    BOOST_TEST((mpx.consume(refusal) == multiplexer::consumed::reply));
    BOOST_REQUIRE(es->results.size() == 1u);
    BOOST_REQUIRE(rs.size() == 3u);  // one value per channel, each the error, so later indexes stay put
    for (auto& v : rs) BOOST_TEST(v.error_text().starts_with("NOPERM"));
    BOOST_TEST(mpx.awaiting_replies() == 1u);
    auto vb = bulk("B");
    BOOST_TEST((mpx.consume(vb) == multiplexer::consumed::reply));
    BOOST_REQUIRE(rb.size() == 1u);
    BOOST_TEST(rb[0].text == "B");
    BOOST_TEST(eb->results.size() == 1u);
    BOOST_TEST(mpx.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_subscribe_written_behind_a_request_stops_awaiting_once_confirmed)
{
    // The health check pings only when nothing is awaited: a confirmed subscription must not count.
    multiplexer mpx;
    auto a = command("GET", "a");
    auto sub = subscribe({"ch"});
    response ra, rs;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto es = std::make_shared<recording_entry>(sub, &rs);
    mpx.add(ea);
    mpx.add(es);
    write_all(mpx);
    BOOST_TEST(mpx.awaiting_replies() == 2u);
    auto va = bulk("A");
    mpx.consume(va);
    BOOST_TEST(mpx.awaiting_replies() == 1u);  // the confirmation is still due
    auto c = confirmation("subscribe", "ch", 1);
    mpx.consume(c);
    BOOST_TEST(mpx.awaiting_replies() == 0u);
    BOOST_TEST(mpx.size() == 0u);
    BOOST_TEST(es->results.size() == 1u);
}

BOOST_AUTO_TEST_CASE(commands_of_one_request_get_replies_and_confirmations_in_order)
{
    multiplexer mpx;
    request r;
    r.push("SET", "k", "v");
    r.push("SUBSCRIBE", "a", "b");
    r.push("GET", "k");
    BOOST_TEST(r.expected_replies() == 4u);
    response out;
    auto e = std::make_shared<recording_entry>(r, &out);
    mpx.add(e);
    write_all(mpx);
    auto ok = bulk("OK"), ca = confirmation("subscribe", "a", 1), cb = confirmation("subscribe", "b", 2), v = bulk("v");
    mpx.consume(ok);
    mpx.consume(ca);
    mpx.consume(cb);
    BOOST_TEST(e->results.empty());
    mpx.consume(v);
    BOOST_REQUIRE(e->results.size() == 1u);
    BOOST_REQUIRE(out.size() == 4u);
    BOOST_TEST(out[0].text == "OK");
    BOOST_TEST(out[2].elements.at(1).text == "b");
    BOOST_TEST(out[3].text == "v");
}

BOOST_AUTO_TEST_CASE(messages_between_confirmations_go_to_the_handlers)
{
    multiplexer mpx;
    auto sub = subscribe({"a", "b"});
    response rs;
    auto es = std::make_shared<recording_entry>(sub, &rs);
    mpx.add(es);
    write_all(mpx);
    auto ca = confirmation("subscribe", "a", 1);
    mpx.consume(ca);
    auto m = push_message();  // published on `a` before `b` was confirmed
    BOOST_TEST((mpx.consume(m) == multiplexer::consumed::push));
    auto cb = confirmation("subscribe", "b", 2);
    mpx.consume(cb);
    BOOST_TEST(es->results.size() == 1u);
    BOOST_TEST(rs.size() == 2u);
}

BOOST_AUTO_TEST_CASE(unsubscribe_of_channels_never_subscribed_is_still_confirmed_per_channel)
{
    // Redis answers UNSUBSCRIBE x y with [unsubscribe, x, 0], [unsubscribe, y, 0] even if neither was subscribed.
    multiplexer mpx;
    auto unsub = subscribe({"x", "y"}, "UNSUBSCRIBE");
    auto b = command("GET", "b");
    response ru, rb;
    auto eu = std::make_shared<recording_entry>(unsub, &ru);
    auto eb = std::make_shared<recording_entry>(b, &rb);
    mpx.add(eu);
    mpx.add(eb);
    write_all(mpx);
    auto cx = confirmation("unsubscribe", "x", 0), cy = confirmation("unsubscribe", "y", 0), vb = bulk("B");
    mpx.consume(cx);
    mpx.consume(cy);
    BOOST_TEST(eu->results.size() == 1u);
    mpx.consume(vb);
    BOOST_TEST(rb.at(0).text == "B");
}

BOOST_AUTO_TEST_CASE(an_abandoned_subscribe_drops_its_confirmations_and_keeps_the_stream_in_step)
{
    multiplexer mpx;
    auto sub = subscribe({"a", "b"});
    auto g = command("GET", "g");
    response rs, rg;
    auto es = std::make_shared<recording_entry>(sub, &rs);
    auto eg = std::make_shared<recording_entry>(g, &rg);
    mpx.add(es);
    mpx.add(eg);
    write_all(mpx);
    mpx.abandon(*es);
    auto ca = confirmation("subscribe", "a", 1), cb = confirmation("subscribe", "b", 2), vg = bulk("G");
    mpx.consume(ca);
    mpx.consume(cb);
    BOOST_TEST(es->results.empty());
    BOOST_TEST(rs.empty());
    BOOST_TEST((es->confirmed_channels == std::vector<std::string>{"a", "b"}));  // the server did subscribe
    BOOST_TEST(mpx.awaiting_replies() == 1u);
    BOOST_TEST((mpx.consume(vg) == multiplexer::consumed::reply));
    BOOST_TEST(rg.at(0).text == "G");
}

BOOST_AUTO_TEST_CASE(a_confirmation_while_an_ordinary_reply_is_due_is_out_of_step)
{
    multiplexer mpx;
    auto a = command("GET", "a");
    response ra;
    auto ea = std::make_shared<recording_entry>(a, &ra);
    auto stray = confirmation("subscribe", "ch", 1);
    BOOST_TEST((mpx.consume(stray) == multiplexer::consumed::unsolicited));  // nothing written at all
    mpx.add(ea);
    write_all(mpx);
    BOOST_TEST((mpx.consume(stray) == multiplexer::consumed::unsolicited));
    BOOST_TEST(ra.empty());
    // A cluster sends sunsubscribe on its own when a shard channel's slot moves: that one is for the handlers.
    auto moved = confirmation("sunsubscribe", "ch", 0);
    BOOST_TEST((mpx.consume(moved) == multiplexer::consumed::push));
}

BOOST_AUTO_TEST_CASE(an_ordinary_reply_or_a_wrong_kind_where_a_confirmation_is_due_is_out_of_step)
{
    multiplexer mpx;
    auto sub = subscribe({"ch"});
    response rs;
    auto es = std::make_shared<recording_entry>(sub, &rs);
    mpx.add(es);
    write_all(mpx);
    auto v = bulk("QUEUED");
    BOOST_TEST((mpx.consume(v) == multiplexer::consumed::unsolicited));
    auto wrong = confirmation("unsubscribe", "ch", 0);
    BOOST_TEST((mpx.consume(wrong) == multiplexer::consumed::unsolicited));
    BOOST_TEST(es->results.empty());
    BOOST_TEST(es->confirmed_channels.empty());
}

BOOST_AUTO_TEST_CASE(pattern_and_shard_subscriptions_are_confirmed_by_their_own_kind)
{
    multiplexer mpx;
    auto psub = subscribe({"p*"}, "PSUBSCRIBE"), ssub = subscribe({"s"}, "SSUBSCRIBE");
    response rp, rs;
    auto ep = std::make_shared<recording_entry>(psub, &rp);
    auto es = std::make_shared<recording_entry>(ssub, &rs);
    mpx.add(ep);
    mpx.add(es);
    write_all(mpx);
    auto cp = confirmation("psubscribe", "p*", 1), cs = confirmation("ssubscribe", "s", 1);
    BOOST_TEST((mpx.consume(cp) == multiplexer::consumed::confirmation));
    BOOST_TEST((mpx.consume(cs) == multiplexer::consumed::confirmation));
    BOOST_TEST(ep->results.size() == 1u);
    BOOST_TEST(es->results.size() == 1u);
    auto pmessage = aggregate(resp::type::push, {bulk("pmessage"), bulk("p*"), bulk("p1"), bulk("x")});
    BOOST_TEST((mpx.consume(pmessage) == multiplexer::consumed::push));
}

BOOST_AUTO_TEST_CASE(connection_loss_fails_a_subscribe_waiting_for_confirmations)
{
    multiplexer mpx;
    auto sub = subscribe({"a", "b"});
    response rs;
    auto es = std::make_shared<recording_entry>(sub, &rs);
    mpx.add(es);
    write_all(mpx);
    auto ca = confirmation("subscribe", "a", 1);
    mpx.consume(ca);
    mpx.fail_all(redlock::error::connection_lost, redlock::error::not_connected);
    BOOST_TEST(es->results.at(0) == redlock::error::connection_lost);
    BOOST_TEST(mpx.awaiting_replies() == 0u);
}

// A Cluster master's own sunsubscribe (its slot moved) may arrive while our SUNSUBSCRIBE of another channel is due:
// the channel tells it from our confirmation, and the stream stays in step.
BOOST_AUTO_TEST_CASE(a_servers_own_sunsubscribe_is_not_taken_for_the_confirmation_due)
{
    multiplexer mpx;
    auto unsub = subscribe({"a", "b"}, "SUNSUBSCRIBE");
    response r;
    auto e = std::make_shared<recording_entry>(unsub, &r);
    mpx.add(e);
    write_all(mpx);
    auto theirs = confirmation("sunsubscribe", "moved", 0);
    BOOST_TEST((mpx.consume(theirs) == multiplexer::consumed::push));
    auto a = confirmation("sunsubscribe", "a", 0);
    BOOST_TEST((mpx.consume(a) == multiplexer::consumed::confirmation));
    auto theirs_again = confirmation("sunsubscribe", "a", 0);  // a second of a channel already confirmed
    BOOST_TEST((mpx.consume(theirs_again) == multiplexer::consumed::push));
    auto b = confirmation("sunsubscribe", "b", 0);
    BOOST_TEST((mpx.consume(b) == multiplexer::consumed::confirmation));
    BOOST_TEST(e->results.size() == 1u);
    BOOST_TEST((e->confirmed_channels == std::vector<std::string>{"a", "b"}));
    BOOST_TEST(mpx.size() == 0u);
}

// An entry may change its request until it is written (a subscribe takes the command of the server the connection
// reached): its replies are counted from the request as written.
BOOST_AUTO_TEST_CASE(an_entry_changed_before_its_write_is_counted_as_written)
{
    struct switching_entry final : exec_entry {
        switching_entry(const request& first, const request& second) : exec_entry(first, nullptr), then(&second) {}
        void before_write() override { reuse(*then, nullptr); }
        void finish(error_code ec) override { results.push_back(ec); }
        const request* then;
        std::vector<error_code> results;
    };
    multiplexer mpx;
    auto classic = subscribe({"a"}), sharded = subscribe({"a", "b"}, "SSUBSCRIBE");
    auto e = std::make_shared<switching_entry>(classic, sharded);
    mpx.add(e);
    BOOST_TEST(mpx.prepare_write() == sharded.payload());
    mpx.commit_write();
    auto wrong = confirmation("subscribe", "a", 1);
    BOOST_TEST((mpx.consume(wrong) == multiplexer::consumed::unsolicited));
    auto a = confirmation("ssubscribe", "a", 1), b = confirmation("ssubscribe", "b", 2);
    BOOST_TEST((mpx.consume(a) == multiplexer::consumed::confirmation));
    BOOST_TEST(e->results.empty());  // two confirmations, as the request written expects
    BOOST_TEST((mpx.consume(b) == multiplexer::consumed::confirmation));
    BOOST_TEST(e->results.size() == 1u);
}
