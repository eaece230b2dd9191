// The cluster shapes a test runs on: one node, three, and three with a minority down.
#pragma once

#include "common/servers/redis_node.hpp"

#include <boost/test/data/monomorphic.hpp>

#include <ostream>

namespace redlock::test {

struct node_setup {
    int nodes;
    int down;  ///< the last `down` nodes are killed before the test
};

inline std::ostream& operator<<(std::ostream& os, const node_setup& s)
{
    return os << s.nodes << " nodes, " << s.down << " down";
}

inline const auto one_three_and_three_with_one_down =
    boost::unit_test::data::make({node_setup{1, 0}, node_setup{3, 0}, node_setup{3, 1}});

/// Kills the last s.down nodes of `nodes`.
inline void stop_minority(cluster& nodes, const node_setup& s)
{
    for (int i = 0; i < s.down; ++i) nodes[nodes.size() - 1 - static_cast<std::size_t>(i)].kill();
}

}  // namespace redlock::test
