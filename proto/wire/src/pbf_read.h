// Reading a cutriage file's records with protozero, for the parsers the agent itself runs on
// files named by its environment (prior_run.cpp, prior_ranking.cpp). Those files may be foreign
// or malformed: protozero asserts when a field is read with another wire type than it has, so
// every read checks the type first and skips a field that does not match. The files themselves
// are read by the agent (base::read_regular_file: a regular file only, opened without blocking,
// up to a size cap); what is parsed here is the bytes that read returned, never more.
#pragma once

#include <cstdint>
#include <exception>
#include <protozero/pbf_reader.hpp>
#include <string>
#include <string_view>
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

// Every record of one cutriage file (or segment), in order. `on_session` is handed the first
// SessionHeader record's message; a later one (a late segment's) is skipped, the first names the
// process. `on_field` is handed each record positioned on each of its other fields (its tag()),
// and must read or skip that field. Nothing past `bytes` is read, whatever a length says
// (protozero checks each against what is left).
//
// A process that was killed may have left its last record half written: what came before it
// stands, and `truncated` is set. Returns false, with `error` set (when not null), when the bytes
// are not a cutriage file: no session header before the first unreadable byte.
template <typename OnSession, typename OnField>
bool for_each_record(std::string_view bytes, const OnSession& on_session, const OnField& on_field, bool* truncated,
                     std::string* error) {
  bool has_session = false;
  try {
    protozero::pbf_reader file(bytes.data(), bytes.size());
    while (file.next(schema::File::kRecords, WT::length_delimited)) {
      protozero::pbf_reader record = message(file);
      while (record.next()) {
        if (record.tag() != schema::Record::kSession) {
          on_field(record);
        } else if (has_session) {
          record.skip();
        } else {
          has_session = true;  // before the header is read: a header torn inside is a torn file
          on_session(message(record));
        }
      }
    }
  } catch (const std::exception& e) {
    if (!has_session) {
      if (error) *error = std::string("not a readable cutriage file (") + e.what() + ")";
      return false;
    }
    *truncated = true;
  }
  if (!has_session) {
    if (error) *error = "not a cutriage file (no session header)";
    return false;
  }
  return true;
}

}  // namespace cutriage::wire::pbf
