// Reading a cutriage file's records with protozero, for the parsers the agent itself runs on
// files named by its environment (prior_run.cpp, prior_ranking.cpp). Those files may be foreign
// or malformed: protozero asserts when a field is read with another wire type than it has, so
// every read checks the type first and skips a field that does not match.
#pragma once

#include <cstdint>
#include <protozero/pbf_reader.hpp>
#include <string>
#include <unordered_map>

#include "cutriage/triage/inputs.h"
#include "cutriage/wire/schema.h"

namespace cutriage::wire::pbf {

// An enum's number on the wire, for comparing with what a file holds: a value read from a file is
// kept as the int32 it is, never cast into the enum (a foreign number would wrap into a known one).
template <typename E>
constexpr int32_t wire_number(E value) {
  return static_cast<int32_t>(value);
}

using WT = protozero::pbf_wire_type;
inline bool is(const protozero::pbf_reader& m, WT type) { return m.wire_type() == type; }
inline uint64_t u64(protozero::pbf_reader& m) {
  if (is(m, WT::varint)) return m.get_uint64();
  m.skip();
  return 0;
}
inline uint32_t u32(protozero::pbf_reader& m) {
  if (is(m, WT::varint)) return m.get_uint32();
  m.skip();
  return 0;
}
inline int32_t enum32(protozero::pbf_reader& m) {
  if (is(m, WT::varint)) return m.get_enum();
  m.skip();
  return 0;
}
inline bool boolean(protozero::pbf_reader& m) {
  if (is(m, WT::varint)) return m.get_bool();
  m.skip();
  return false;
}
inline double f64(protozero::pbf_reader& m) {
  if (is(m, WT::fixed64)) return m.get_double();
  m.skip();
  return 0;
}
inline std::string text(protozero::pbf_reader& m) {
  if (is(m, WT::length_delimited)) return std::string(m.get_view());
  m.skip();
  return {};
}
// An embedded message; an empty one when the field is not length-delimited.
inline protozero::pbf_reader message(protozero::pbf_reader& m) {
  if (is(m, WT::length_delimited)) return m.get_message();
  m.skip();
  return {};
}

inline triage::Dim3 read_dim3(protozero::pbf_reader m) {
  triage::Dim3 d{0, 0, 0};
  while (m.next()) {
    switch (m.tag()) {
      case schema::Dim3::kX: d.x = u32(m); break;
      case schema::Dim3::kY: d.y = u32(m); break;
      case schema::Dim3::kZ: d.z = u32(m); break;
      default: m.skip();
    }
  }
  return d;
}

// An InternedString record into `strings` (id 0, the "no string" id, is never stored).
inline void read_interned(protozero::pbf_reader m, std::unordered_map<uint64_t, std::string>& strings) {
  uint64_t id = 0;
  std::string value;
  while (m.next()) {
    if (m.tag() == schema::InternedString::kId) {
      id = u64(m);
    } else if (m.tag() == schema::InternedString::kValue) {
      value = text(m);
    } else {
      m.skip();
    }
  }
  if (id != 0) strings[id] = std::move(value);
}

}  // namespace cutriage::wire::pbf
