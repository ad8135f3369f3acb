// The one Catch2 main of all test executables (compiled once).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
