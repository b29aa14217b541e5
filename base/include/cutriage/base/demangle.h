// C++ symbol names: demangling (Itanium ABI, what nvcc emits for device code) and the base name of a
// demangled function, for display and for matching kernels by name. Used by the agent (kernel-name
// filters) and the tool (reports, pprof, ncu imports) alike.
#pragma once

#include <string>
#include <string_view>

namespace cutriage::base {

// Demangles an Itanium-ABI symbol ("_Z..."). Returns the input unchanged when it is not a mangled
// name or the demangler rejects it. Never throws.
std::string demangle(std::string_view mangled);

// The function's name without its return type and parameter list, keeping namespaces, classes and
// template arguments:
//   "void ns::foo<int, 4>(float *, int)"        -> "ns::foo<int, 4>"
//   "zoo_vector_add(const float *, float *)"    -> "zoo_vector_add"
//   "Functor::operator()(int) const"            -> "Functor::operator()"
// A name without a parameter list is returned trimmed, without a leading return type.
std::string function_base_name(std::string_view demangled);

}  // namespace cutriage::base

// The names the agent and the tool called these by before they moved here from tools/src.
namespace cutriage::tools {
using base::demangle;
using base::function_base_name;
}  // namespace cutriage::tools
