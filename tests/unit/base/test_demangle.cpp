#include <string>

#include "catch.h"
#include "cutriage/base/demangle.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_demangle {

using cutriage::base::demangle;
using cutriage::base::function_base_name;

TEST_CASE("demangle turns Itanium symbols into C++ names", "[demangle]") {
  CHECK(demangle("_Z14zoo_vector_addPKfS0_Pfm") ==
        "zoo_vector_add(float const*, float const*, float*, unsigned long)");
  CHECK(demangle("_Z9zoo_tiledIfLi32EEvPKT_PS0_i") == "void zoo_tiled<float, 32>(float const*, float*, int)");
  CHECK(demangle("_ZNK2ns1FclEi") == "ns::F::operator()(int) const");
}

TEST_CASE("demangle returns names it cannot demangle unchanged", "[demangle]") {
  CHECK(demangle("zoo_vector_add") == "zoo_vector_add");
  CHECK(demangle("") == "");
  CHECK(demangle("_Z") == "_Z");
  CHECK(demangle("_Zgarbage!!") == "_Zgarbage!!");
  CHECK(demangle("void foo<int>(int)") == "void foo<int>(int)");
}

TEST_CASE("function_base_name strips the parameter list and the return type", "[demangle]") {
  CHECK(function_base_name("zoo_vector_add(const float *, const float *, float *, unsigned long)") ==
        "zoo_vector_add");
  CHECK(function_base_name("void zoo_tiled<float, 32>(const float *, float *, int)") == "zoo_tiled<float, 32>");
  CHECK(function_base_name("void ns::inner::k<int>(int *)") == "ns::inner::k<int>");
  CHECK(function_base_name("float* make<float>(float*)") == "make<float>");
  CHECK(function_base_name("unsigned int count<int>()") == "count<int>");
  CHECK(function_base_name("  plain_kernel  ") == "plain_kernel");
  CHECK(function_base_name("void templ<int, 4>") == "templ<int, 4>");
  CHECK(function_base_name("") == "");
}

TEST_CASE("function_base_name keeps templates whose arguments hold parentheses and spaces", "[demangle]") {
  CHECK(function_base_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                           "at::detail::Array<char *, 1>>(int, T2, T3)") ==
        "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char *, 1>>");
  CHECK(function_base_name("void k<(int)3, void (*)(int)>(void (*)(int), int)") == "k<(int)3, void (*)(int)>");
  CHECK(function_base_name("(anonymous namespace)::hidden(int)") == "(anonymous namespace)::hidden");
  CHECK(function_base_name("void (anonymous namespace)::hidden<int>(int)") ==
        "(anonymous namespace)::hidden<int>");
}

TEST_CASE("function_base_name handles operators, qualifiers and lambdas", "[demangle]") {
  CHECK(function_base_name("ns::F::operator()(int) const") == "ns::F::operator()");
  CHECK(function_base_name("ns::F::operator()") == "ns::F::operator()");
  CHECK(function_base_name("ns::F::operator()()") == "ns::F::operator()");
  CHECK(function_base_name("bool ns::operator<(ns::A const&, ns::A const&)") == "ns::operator<");
  CHECK(function_base_name("ns::A::operator unsigned int() const") == "ns::A::operator unsigned int");
  CHECK(function_base_name("void* operator new(unsigned long)") == "operator new");
  CHECK(function_base_name("main::{lambda(int)#1}::operator()(int) const") == "main::{lambda(int)#1}::operator()");
  CHECK(function_base_name("foo(int) [clone .constprop.0]") == "foo");
  CHECK(function_base_name("S::get() const &&") == "S::get");
}

}  // namespace test_demangle
