// The strategies as --help lists them, from the registry.
#include "commands.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/text.hpp"

std::string tune::cli::strategy_help() { return join(strategy_names()); }
