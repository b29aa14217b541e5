// The generated wire schema (cutriage/wire/schema.h, proto/wire/gen/schema_gen.cpp) against the
// descriptors of the libprotobuf classes protoc generated from the same .proto: every message,
// field and enum value has its constant, with the proto's number and the name the naming rule
// gives, and nothing else is there. A generator that dropped, renumbered or misnamed anything, or
// a descriptor decoding that went wrong, fails here. Also the .proto's own "Next id" notes, which
// say which number a new field takes (docs/schema.md).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "catch.h"
#include "cutriage/v1/cutriage.pb.h"
#include "cutriage/wire/records.h"
#include "cutriage/wire/schema.h"
#include "cutriage/wire/schema_table.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_schema {

using namespace cutriage;
namespace table = wire::schema::table;
namespace pb = google::protobuf;

// A few constants spelled out against protoc's own names for them, one per kind of name (field,
// nested message field, top-level and nested enum value, a value after a gap).
static_assert(wire::schema::KernelProfile::kMangledNameIid == v1::KernelProfile::kMangledNameIidFieldNumber);
static_assert(wire::schema::KernelProfile::kAssembledLaunches == v1::KernelProfile::kAssembledLaunchesFieldNumber);
static_assert(wire::schema::FamilyStats::kP50Ns == v1::FamilyStats::kP50NsFieldNumber);
static_assert(wire::schema::Record::kTraceSummary == v1::Record::kTraceSummaryFieldNumber);
static_assert(static_cast<int>(wire::schema::ProfileStatus::kNotProfiledPermission) ==
              v1::PROFILE_STATUS_NOT_PROFILED_PERMISSION);
static_assert(static_cast<int>(wire::schema::Limiter::kL1texThroughput) == v1::LIMITER_L1TEX_THROUGHPUT);
static_assert(static_cast<int>(wire::schema::Decision::kD2aDispatch) == v1::DECISION_D2A_DISPATCH);
static_assert(static_cast<int>(wire::schema::SessionHeader::Source::kNcuCsv) == v1::SessionHeader::SOURCE_NCU_CSV);
static_assert(static_cast<int>(wire::schema::FamilyStats::Selection::kTraceOnly) ==
              v1::FamilyStats::SELECTION_TRACE_ONLY);

// records.h's enums are the generated ones, not copies; what the code keeps them in is one byte.
static_assert(std::is_same_v<wire::ProfileStatus, wire::schema::ProfileStatus>);
static_assert(std::is_same_v<wire::SessionSource, wire::schema::SessionHeader::Source>);
static_assert(std::is_same_v<wire::Severity, wire::schema::Notice::Severity>);
static_assert(std::is_same_v<wire::SelectionMode, wire::schema::SelectionPolicy::Mode>);
static_assert(std::is_same_v<wire::FamilySelection, wire::schema::FamilyStats::Selection>);
static_assert(std::is_same_v<std::underlying_type_t<wire::AgentState>, uint8_t>);

namespace {

// The naming rule of docs/schema.md, written again from its description.
std::string camel_case(const std::string& snake) {
  std::string out;
  bool word_start = true;
  for (char c : snake) {
    if (c == '_') {
      word_start = true;
    } else {
      out += static_cast<char>(word_start ? std::toupper(static_cast<unsigned char>(c))
                                          : std::tolower(static_cast<unsigned char>(c)));
      word_start = false;
    }
  }
  return out;
}
std::string value_prefix(const std::string& enum_name) {  // "ProfileStatus" -> "PROFILE_STATUS_"
  std::string out;
  for (size_t i = 0; i < enum_name.size(); ++i) {
    const auto c = static_cast<unsigned char>(enum_name[i]);
    if (i > 0 && std::isupper(c) != 0) {
      const auto prev = static_cast<unsigned char>(enum_name[i - 1]);
      const bool next_lower = i + 1 < enum_name.size() && std::islower(static_cast<unsigned char>(enum_name[i + 1])) != 0;
      if (std::islower(prev) != 0 || std::isdigit(prev) != 0 || (std::isupper(prev) != 0 && next_lower)) out += '_';
    }
    out += static_cast<char>(std::toupper(c));
  }
  return out + "_";
}

using FieldRow = std::tuple<std::string, std::string, std::string, int>;  // message, field, constant, number
using ValueRow = std::tuple<std::string, std::string, std::string, int>;  // enum, value, constant, number

struct Expected {
  std::set<std::string> messages;
  std::set<std::string> enums;
  std::set<FieldRow> fields;
  std::set<ValueRow> values;
};

void add_enum(const pb::EnumDescriptor* e, Expected& out) {
  out.enums.insert(e->full_name());
  const std::string prefix = value_prefix(e->name());
  for (int i = 0; i < e->value_count(); ++i) {
    const pb::EnumValueDescriptor* v = e->value(i);
    INFO(v->full_name());
    REQUIRE(v->name().rfind(prefix, 0) == 0);  // the convention the rule relies on
    out.values.emplace(e->full_name(), v->name(), "k" + camel_case(v->name().substr(prefix.size())), v->number());
  }
}

void add_message(const pb::Descriptor* m, Expected& out) {
  out.messages.insert(m->full_name());
  for (int i = 0; i < m->field_count(); ++i) {
    const pb::FieldDescriptor* f = m->field(i);
    out.fields.emplace(m->full_name(), f->name(), "k" + camel_case(f->name()), f->number());
  }
  for (int i = 0; i < m->enum_type_count(); ++i) add_enum(m->enum_type(i), out);
  for (int i = 0; i < m->nested_type_count(); ++i) add_message(m->nested_type(i), out);
}

Expected from_descriptors() {
  const pb::FileDescriptor* file = v1::File::descriptor()->file();
  Expected out;
  for (int i = 0; i < file->enum_type_count(); ++i) add_enum(file->enum_type(i), out);
  for (int i = 0; i < file->message_type_count(); ++i) add_message(file->message_type(i), out);
  return out;
}

}  // namespace

TEST_CASE("schema.h names every message and enum of cutriage.proto, and only those", "[schema]") {
  const Expected want = from_descriptors();
  REQUIRE(std::string(table::kPackage) == v1::File::descriptor()->file()->package());
  std::set<std::string> messages(std::begin(table::kMessages), std::end(table::kMessages));
  std::set<std::string> enums(std::begin(table::kEnums), std::end(table::kEnums));
  CHECK(messages == want.messages);
  CHECK(enums == want.enums);
  CHECK(messages.size() == std::size(table::kMessages));  // no name twice
  CHECK(enums.size() == std::size(table::kEnums));
}

TEST_CASE("schema.h has every field with the proto's number and the rule's name", "[schema]") {
  const Expected want = from_descriptors();
  std::set<FieldRow> got;
  for (const table::Field& f : table::kFields) {
    got.emplace(std::string(f.message), std::string(f.name), std::string(f.constant), static_cast<int>(f.number));
  }
  CHECK(got.size() == std::size(table::kFields));
  for (const FieldRow& row : want.fields) {
    INFO(std::get<0>(row) << "." << std::get<1>(row) << " = " << std::get<3>(row) << " as " << std::get<2>(row));
    CHECK(got.count(row) == 1);
  }
  for (const FieldRow& row : got) {
    INFO(std::get<0>(row) << "." << std::get<1>(row) << " = " << std::get<3>(row) << " as " << std::get<2>(row));
    CHECK(want.fields.count(row) == 1);
  }
}

TEST_CASE("schema.h has every enum value with the proto's number and the rule's name", "[schema]") {
  const Expected want = from_descriptors();
  std::set<ValueRow> got;
  for (const table::EnumValue& v : table::kEnumValues) {
    got.emplace(std::string(v.enum_name), std::string(v.name), std::string(v.constant), v.number);
  }
  CHECK(got.size() == std::size(table::kEnumValues));
  for (const ValueRow& row : want.values) {
    INFO(std::get<0>(row) << " " << std::get<1>(row) << " = " << std::get<3>(row) << " as " << std::get<2>(row));
    CHECK(got.count(row) == 1);
  }
  for (const ValueRow& row : got) {
    INFO(std::get<0>(row) << " " << std::get<1>(row) << " = " << std::get<3>(row) << " as " << std::get<2>(row));
    CHECK(want.values.count(row) == 1);
  }
  // Every *_UNSPECIFIED = 0 has the one spelling.
  for (const ValueRow& row : want.values) {
    if (std::get<3>(row) == 0 && std::get<1>(row).size() > 11 &&
        std::get<1>(row).compare(std::get<1>(row).size() - 11, 11, "UNSPECIFIED") == 0) {
      CHECK(std::get<2>(row) == "kUnspecified");
    }
  }
}

namespace {

// "Next id: N" of every message in the .proto text, by full name. Messages, enums and oneofs open
// on a line of their own and close with a line starting with "}" (the file's layout).
std::map<std::string, int> next_id_notes(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  const std::regex open(R"(^\s*(message|enum|oneof)\s+(\w+)\s*\{)");
  const std::regex close(R"(^\s*\})");
  const std::regex note(R"(//\s*Next id:\s*(\d+))");
  std::vector<std::pair<std::string, std::string>> scopes;  // (kind, name)
  std::map<std::string, int> notes;
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, open)) {
      scopes.emplace_back(m[1], m[2]);
    } else if (std::regex_search(line, close)) {
      REQUIRE(!scopes.empty());
      scopes.pop_back();
    } else if (std::regex_search(line, m, note)) {
      std::string name = "cutriage.v1";
      for (const auto& [kind, scope] : scopes) {
        if (kind == "message") name += "." + scope;
      }
      INFO(line);
      REQUIRE(notes.emplace(name, std::stoi(m[1])).second);  // one note per message
    }
  }
  return notes;
}

void expect_next_id(const pb::Descriptor* m, const std::map<std::string, int>& notes) {
  int highest = 0;
  for (int i = 0; i < m->field_count(); ++i) highest = std::max(highest, m->field(i)->number());
  for (int i = 0; i < m->reserved_range_count(); ++i) highest = std::max(highest, m->reserved_range(i)->end - 1);
  INFO(m->full_name());
  auto it = notes.find(m->full_name());
  REQUIRE(it != notes.end());
  CHECK(it->second == highest + 1);
  for (int i = 0; i < m->nested_type_count(); ++i) expect_next_id(m->nested_type(i), notes);
}

}  // namespace

TEST_CASE("every message's Next id note is one past its highest field or reserved number", "[schema]") {
  const std::map<std::string, int> notes = next_id_notes(CUTRIAGE_SOURCE_DIR "/proto/cutriage/v1/cutriage.proto");
  const pb::FileDescriptor* file = v1::File::descriptor()->file();
  for (int i = 0; i < file->message_type_count(); ++i) expect_next_id(file->message_type(i), notes);
  CHECK(notes.size() == from_descriptors().messages.size());
}

}  // namespace test_schema
