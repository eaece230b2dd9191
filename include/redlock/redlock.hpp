// Everything public in one include.
#pragma once

#include <redlock/connection.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/node_config.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>
