// Who leads an election, from what each node holds (pure logic): the token on a quorum, its value from the highest
// revision of the hashes naming it, a stale hash ignored; when to read again without a message; which reads an
// observer delivers; and how a node's reply reads.
#include "primitives/election/election_scripts.hpp"
#include "primitives/election/leader_decision.hpp"

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>

using namespace std::chrono_literals;
using redlock::leader_info;
using redlock::detail::decide_leader;
using redlock::detail::node_leader_view;
using redlock::detail::observed_leaders;
using ms = std::chrono::milliseconds;

namespace {

// A node holding `holder` (its TTL) with a hash naming `hash_token` at `revision` (term 7, value "v<revision>").
node_leader_view node(std::optional<std::string> holder, std::optional<ms> ttl = 1000ms,
                      std::optional<std::string> hash_token = std::nullopt, std::uint64_t revision = 1,
                      std::uint64_t term = 7)
{
    node_leader_view v;
    v.answered = true;
    v.holder = std::move(holder);
    v.ttl = v.holder ? ttl : std::nullopt;
    if (hash_token) {
        v.hash_token = std::move(hash_token);
        v.hash_term = term;
        v.hash_revision = revision;
        v.hash_value = "v" + std::to_string(revision);
    }
    return v;
}

node_leader_view down()
{
    return {};
}

redlock::resp::value null()
{
    redlock::resp::value v;
    v.data_type = redlock::resp::type::null;
    return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_token_on_a_quorum_with_its_hash_leads)
{
    const auto d = decide_leader({node("A", 900ms, "A"), node("A", 800ms, "A"), node("A", 700ms, "A")}, 2);
    BOOST_REQUIRE(d.leader);
    BOOST_TEST(d.leader->token == "A");
    BOOST_TEST(d.leader->term == 7u);
    BOOST_TEST(d.leader->value == "v1");
    BOOST_TEST(d.answered == 3u);
    // Once the second longest TTL ran out, fewer than two nodes hold A.
    BOOST_REQUIRE(d.recheck_in);
    BOOST_TEST(d.recheck_in->count() == 800);
}

BOOST_AUTO_TEST_CASE(a_token_on_a_minority_does_not_lead)
{
    const auto d = decide_leader({node("A", 900ms, "A"), node("B", 500ms, "B"), node(std::nullopt)}, 2);
    BOOST_TEST(!d.leader);
    BOOST_TEST(!d.holder);
    // Keys on some nodes: read again when the first of them lapses.
    BOOST_REQUIRE(d.recheck_in);
    BOOST_TEST(d.recheck_in->count() == 500);
}

BOOST_AUTO_TEST_CASE(nothing_held_needs_a_message)
{
    const auto d = decide_leader({node(std::nullopt, {}, "A"), node(std::nullopt), node(std::nullopt)}, 2);
    BOOST_TEST(!d.leader);
    BOOST_TEST(!d.recheck_in);
}

BOOST_AUTO_TEST_CASE(one_node_is_its_own_quorum)
{
    const auto d = decide_leader({node("A", 300ms, "A", 4)}, 1);
    BOOST_REQUIRE(d.leader);
    BOOST_TEST(d.leader->revision == 4u);
    BOOST_TEST(d.recheck_in->count() == 300);
}

BOOST_AUTO_TEST_CASE(a_node_down_counts_for_nobody)
{
    const auto d = decide_leader({node("A", 900ms, "A"), down(), node("A", 600ms, "A")}, 2);
    BOOST_REQUIRE(d.leader);
    BOOST_TEST(d.answered == 2u);
    BOOST_TEST(d.recheck_in->count() == 600);
    const auto minority = decide_leader({node("A", 900ms, "A"), down(), down()}, 2);
    BOOST_TEST(!minority.leader);
    BOOST_TEST(minority.answered == 1u);
}

// Nobody leads only when no token could hold a quorum with the nodes not heard from (down, or an error reply): a read
// of {A, nil, down} may miss A's quorum (the third node holds A, the second lost its key); it decides nothing.
BOOST_AUTO_TEST_CASE(nodes_not_heard_from_may_complete_a_quorum)
{
    auto d = decide_leader({node("A", 900ms, "A"), node(std::nullopt), down()}, 2);
    BOOST_TEST(!d.leader);
    BOOST_TEST(!d.decided);
    d = decide_leader({node("A", 900ms, "A"), node("B", 900ms, "B"), down()}, 2);
    BOOST_TEST(!d.decided);
    d = decide_leader({down()}, 1);  // one node that replied an error (LOADING)
    BOOST_TEST(!d.decided);
    d = decide_leader({node(std::nullopt), node(std::nullopt), down()}, 2);  // one node cannot make a quorum
    BOOST_TEST(d.decided);
    BOOST_TEST(!d.leader);
    d = decide_leader({node("A", 900ms, "A"), node(std::nullopt), node(std::nullopt), down(), down()}, 3);
    BOOST_TEST(!d.decided);  // A and the two nodes down would be three
    d = decide_leader({node("A", 900ms, "A"), node(std::nullopt), node(std::nullopt), node(std::nullopt), down()}, 3);
    BOOST_TEST(d.decided);
    d = decide_leader({node("A", 900ms, "A"), down(), node("A", 600ms, "A")}, 2);  // {A, error, A}: A leads
    BOOST_TEST(d.decided);
    BOOST_REQUIRE(d.leader);
    BOOST_TEST(d.leader->token == "A");
    d = decide_leader({node(std::nullopt), node(std::nullopt), node(std::nullopt)}, 2);
    BOOST_TEST(d.decided);
}

// The previous leader's hash is still there where the new leader has not proclaimed yet (or never will: a plain lock
// of the same name): its term and value are not the holder's.
BOOST_AUTO_TEST_CASE(a_hash_naming_another_token_is_stale)
{
    const auto d = decide_leader({node("B", 900ms, "A", 9), node("B", 900ms, "A", 9), node("A", 100ms, "A", 9)}, 2);
    BOOST_TEST(!d.leader);
    BOOST_REQUIRE(d.holder);
    BOOST_TEST(*d.holder == "B");
    BOOST_TEST(d.recheck_in->count() == 900);  // B may lapse without a message
}

BOOST_AUTO_TEST_CASE(the_highest_revision_among_the_holders_hashes_wins)
{
    // A proclaim that reached one node so far: its value is the leader's newest.
    auto d = decide_leader({node("A", 900ms, "A", 2), node("A", 900ms, "A", 3), node("A", 900ms, "A", 2)}, 2);
    BOOST_REQUIRE(d.leader);
    BOOST_TEST(d.leader->revision == 3u);
    BOOST_TEST(d.leader->value == "v3");
    // A node whose key lapsed still tells what the leader wrote there.
    d = decide_leader({node("A", 900ms, "A", 1), node("A", 900ms, "A", 1), node(std::nullopt, {}, "A", 2)}, 2);
    BOOST_REQUIRE(d.leader);
    BOOST_TEST(d.leader->revision == 2u);
    // Equal revisions are the same write: the first is taken.
    d = decide_leader({node("A", 900ms, "A", 5), node("A", 900ms, "A", 5)}, 2);
    BOOST_TEST(d.leader->value == "v5");
}

BOOST_AUTO_TEST_CASE(a_key_without_ttl_needs_a_message)
{
    const auto d = decide_leader({node("A", std::nullopt, "A"), node("A", std::nullopt, "A"), node("A", 50ms, "A")}, 2);
    BOOST_REQUIRE(d.leader);
    BOOST_TEST(!d.recheck_in);  // two nodes keep it for ever
}

BOOST_AUTO_TEST_CASE(an_observer_delivers_each_change_once_and_never_an_older_value)
{
    observed_leaders seen;
    const std::optional<leader_info> nobody;
    const leader_info a1{"A", 3, "x", 1}, a2{"A", 3, "y", 2}, b1{"B", 4, "z", 1};
    BOOST_TEST(seen.is_change(nobody));  // the first read, whatever it is
    seen.deliver(nobody);
    BOOST_TEST(!seen.is_change(nobody));
    BOOST_TEST(seen.is_change(a1));
    seen.deliver(a1);
    BOOST_TEST(!seen.is_change(a1));
    BOOST_TEST(seen.is_change(a2));
    seen.deliver(a2);
    BOOST_TEST(!seen.is_change(a1), "an older value of the same leader (a read that missed a node)");
    BOOST_TEST(seen.is_change(nobody));
    seen.deliver(nobody);
    BOOST_TEST(!seen.is_change(a1), "still older than what was delivered, after nobody");
    BOOST_TEST(seen.is_change(a2), "the same leader seen again after a gap");
    BOOST_TEST(seen.is_change(b1));
    seen.deliver(b1);
    // A lower term of another token: the fence counters were lost (a restart without persistence); it is shown.
    BOOST_TEST(seen.is_change(leader_info{"C", 1, "w", 1}));
}

BOOST_AUTO_TEST_CASE(a_nodes_reply_reads_as_a_view)
{
    using namespace redlock::test;
    namespace scripts = redlock::detail::election_scripts;
    const redlock::response held{bulk("A"), integer(1500), array({bulk("A"), bulk("12"), bulk("value"), bulk("3")})};
    auto v = scripts::read_view(true, {}, held);
    BOOST_TEST(v.answered);
    BOOST_TEST(*v.holder == "A");
    BOOST_TEST(v.ttl->count() == 1500);
    BOOST_TEST(*v.hash_token == "A");
    BOOST_TEST(v.hash_term == 12u);
    BOOST_TEST(v.hash_value == "value");
    BOOST_TEST(v.hash_revision == 3u);
    // Expired between GET and PTTL; no hash.
    v = scripts::read_view(true, {}, {bulk("A"), integer(-2), array({null(), null(), null(), null()})});
    BOOST_TEST(!v.holder);
    BOOST_TEST(!v.hash_token);
    // A key that never expires; a hash that is not ours (a term that is no number) is ignored.
    v = scripts::read_view(true, {}, {bulk("A"), integer(-1), array({bulk("A"), bulk("x"), bulk("v"), bulk("1")})});
    BOOST_TEST(*v.holder == "A");
    BOOST_TEST(!v.ttl);
    BOOST_TEST(!v.hash_token);
    // An error reply that tells nothing of the key (LOADING, NOPERM) is no answer; WRONGTYPE is: nobody's key.
    const auto loading = error_reply("LOADING Redis is loading the dataset in memory");
    BOOST_TEST(
        !scripts::read_view(true, make_error_code(redlock::error::server_error), {loading, loading, loading}).answered);
    const auto noperm = error_reply("NOPERM this user has no permissions to run the 'get' command");
    BOOST_TEST(!scripts::read_view(true, make_error_code(redlock::error::server_error),
                                   {noperm, integer(-2), array({null(), null(), null(), null()})})
                    .answered);
    v = scripts::read_view(true, make_error_code(redlock::error::server_error),
                           {error_reply("WRONGTYPE Operation against a key holding the wrong kind of value"),
                            integer(-1), array({null(), null(), null(), null()})});
    BOOST_TEST(v.answered);
    BOOST_TEST(!v.holder);
    // Unanswered, or too few replies: no answer.
    BOOST_TEST(!scripts::read_view(false, {}, held).answered);
    BOOST_TEST(!scripts::read_view(true, {}, {bulk("A")}).answered);
}

BOOST_AUTO_TEST_CASE(a_proclaim_answer_is_a_vote)
{
    using namespace redlock::test;
    namespace scripts = redlock::detail::election_scripts;
    using redlock::detail::vote;
    BOOST_TEST((scripts::classify_proclaim({}, {integer(1)}) == vote::yes));
    BOOST_TEST((scripts::classify_proclaim({}, {integer(0)}) == vote::no));
    BOOST_TEST((scripts::classify_proclaim({}, {integer(7)}) == vote::error));
    BOOST_TEST((scripts::classify_proclaim(make_error_code(redlock::error::timeout), {}) == vote::error));
}
