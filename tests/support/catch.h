// Catch2 v2 (Debian 12) and v3 (Ubuntu 24.04, the GPU machine) spell their header differently;
// tests include this instead. Both provide Catch2::Catch2WithMain.
#pragma once
#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
// v2 lets tests write Approx unqualified; so does v3 through this.
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
