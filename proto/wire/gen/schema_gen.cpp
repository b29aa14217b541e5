// Build-time generator of cutriage/wire/schema.h: the field numbers and enums of one .proto file,
// as C++ constants for the protozero writer and reader (proto/wire/src), so the schema is the
// only place they are written. Reads the FileDescriptorSet that `protoc --descriptor_set_out`
// produced, with protozero: the build needs protoc, never libprotobuf, which the injected agent
// must not depend on.
//
//   cutriage_schema_gen <descriptor set> <proto file name> <schema.h> <schema_table.h>
//
// schema.h: per message a struct of `static constexpr uint32_t k<FieldName>` field numbers, its
// nested enums and messages inside it; every enum an `enum class` whose values drop the enum's
// upper-snake prefix and are CamelCased (PROFILE_STATUS_NOT_PROFILED_GRAPH in ProfileStatus ->
// kNotProfiledGraph, every *_UNSPECIFIED -> kUnspecified), with an X-macro listing the values for
// code that mirrors an enum elsewhere and checks it against the schema. schema_table.h: the same
// names, numbers and proto names as constexpr tables, for the test that compares them with the
// descriptors libprotobuf was generated from. Output is a function of the descriptors only (no
// paths, no times), and a file whose text is unchanged is not rewritten, so nothing that includes
// it rebuilds for a comment-only edit of the .proto.
#include <protozero/pbf_reader.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

// ---- descriptor.proto, the part read here (google/protobuf/descriptor.proto field numbers) -----

struct FieldDesc {
  std::string name;
  int32_t number = 0;
  int32_t label = 0;  // 1 optional, 2 required, 3 repeated
  int32_t type = 0;   // FieldDescriptorProto.Type
  std::string type_name;  // ".pkg.Message" for messages and enums
  bool in_oneof = false;
  int32_t oneof_index = 0;
  bool proto3_optional = false;
};

struct EnumDesc {
  std::string name;
  std::vector<std::pair<std::string, int32_t>> values;
};

struct MessageDesc {
  std::string name;
  std::vector<FieldDesc> fields;
  std::vector<MessageDesc> nested;
  std::vector<EnumDesc> enums;
  std::vector<std::string> oneofs;
};

struct FileDesc {
  std::string name;
  std::string package;
  std::vector<MessageDesc> messages;
  std::vector<EnumDesc> enums;
};

EnumDesc parse_enum(protozero::pbf_reader m) {
  EnumDesc e;
  while (m.next()) {
    switch (m.tag()) {
      case 1: e.name = m.get_string(); break;  // EnumDescriptorProto.name
      case 2: {                                 // EnumDescriptorProto.value
        protozero::pbf_reader v = m.get_message();
        std::pair<std::string, int32_t> value{"", 0};
        while (v.next()) {
          switch (v.tag()) {
            case 1: value.first = v.get_string(); break;  // EnumValueDescriptorProto.name
            case 2: value.second = v.get_int32(); break;  // EnumValueDescriptorProto.number
            default: v.skip();
          }
        }
        e.values.push_back(std::move(value));
        break;
      }
      default: m.skip();
    }
  }
  return e;
}

FieldDesc parse_field(protozero::pbf_reader m) {
  FieldDesc f;
  while (m.next()) {
    switch (m.tag()) {  // FieldDescriptorProto
      case 1: f.name = m.get_string(); break;
      case 3: f.number = m.get_int32(); break;
      case 4: f.label = m.get_enum(); break;
      case 5: f.type = m.get_enum(); break;
      case 6: f.type_name = m.get_string(); break;
      case 9:
        f.in_oneof = true;
        f.oneof_index = m.get_int32();
        break;
      case 17: f.proto3_optional = m.get_bool(); break;
      default: m.skip();
    }
  }
  return f;
}

MessageDesc parse_message(protozero::pbf_reader m) {
  MessageDesc d;
  while (m.next()) {
    switch (m.tag()) {  // DescriptorProto
      case 1: d.name = m.get_string(); break;
      case 2: d.fields.push_back(parse_field(m.get_message())); break;
      case 3: d.nested.push_back(parse_message(m.get_message())); break;
      case 4: d.enums.push_back(parse_enum(m.get_message())); break;
      case 8: {  // oneof_decl
        protozero::pbf_reader o = m.get_message();
        std::string name;
        while (o.next()) {
          if (o.tag() == 1) {
            name = o.get_string();  // OneofDescriptorProto.name
          } else {
            o.skip();
          }
        }
        d.oneofs.push_back(std::move(name));
        break;
      }
      default: m.skip();
    }
  }
  return d;
}

FileDesc parse_file(protozero::pbf_reader m) {
  FileDesc f;
  while (m.next()) {
    switch (m.tag()) {  // FileDescriptorProto
      case 1: f.name = m.get_string(); break;
      case 2: f.package = m.get_string(); break;
      case 4: f.messages.push_back(parse_message(m.get_message())); break;
      case 5: f.enums.push_back(parse_enum(m.get_message())); break;
      default: m.skip();
    }
  }
  return f;
}

// Stops the generator: the message is main's to print.
[[noreturn]] void fail(std::initializer_list<std::string_view> parts) {
  std::string why;
  for (std::string_view p : parts) why += p;
  throw std::runtime_error(why);
}

// ---- names --------------------------------------------------------------------------------------

bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
char to_upper(char c) { return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

// snake_case words (either case) -> CamelCase: each word's first character upper, the rest lower.
// "mangled_name_iid" -> "MangledNameIid", "NOT_PROFILED_GRAPH" -> "NotProfiledGraph",
// "L1TEX_THROUGHPUT" -> "L1texThroughput", "D2A_DISPATCH" -> "D2aDispatch".
std::string camel(std::string_view snake) {
  std::string out;
  bool start = true;
  for (char c : snake) {
    if (c == '_') {
      start = true;
      continue;
    }
    out += start ? to_upper(c) : to_lower(c);
    start = false;
  }
  return out;
}

// CamelCase type name -> its UPPER_SNAKE value prefix, the proto style guide's: "ProfileStatus" ->
// "PROFILE_STATUS_", "Source" -> "SOURCE_", "HTTPServer" -> "HTTP_SERVER_".
std::string upper_snake_prefix(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (i > 0 && is_upper(c)) {
      const char prev = name[i - 1];
      const bool next_lower = i + 1 < name.size() && is_lower(name[i + 1]);
      if (is_lower(prev) || is_digit(prev) || (is_upper(prev) && next_lower)) out += '_';
    }
    out += to_upper(c);
  }
  out += '_';
  return out;
}

std::string field_constant(const FieldDesc& f) { return "k" + camel(f.name); }

std::string value_constant(const EnumDesc& e, const std::string& value) {
  const std::string prefix = upper_snake_prefix(e.name);
  if (value.size() <= prefix.size() || value.compare(0, prefix.size(), prefix) != 0) {
    fail({"enum ", e.name, ": value ", value, " does not start with ", prefix,
          " (cutriage.v1 convention: values carry their enum's name as prefix)"});
  }
  return "k" + camel(std::string_view(value).substr(prefix.size()));
}

// The narrowest type holding every value: records and atomics keep these enums, and stay as small
// as the values allow.
std::string underlying_type(const EnumDesc& e) {
  int64_t lo = 0;
  int64_t hi = 0;
  for (const auto& [name, number] : e.values) {
    lo = std::min<int64_t>(lo, number);
    hi = std::max<int64_t>(hi, number);
  }
  if (lo >= 0 && hi <= UINT8_MAX) return "uint8_t";
  if (lo >= 0 && hi <= UINT16_MAX) return "uint16_t";
  return "int32_t";
}

const char* scalar_name(int32_t type) {
  switch (type) {  // FieldDescriptorProto.Type
    case 1: return "double";
    case 2: return "float";
    case 3: return "int64";
    case 4: return "uint64";
    case 5: return "int32";
    case 6: return "fixed64";
    case 7: return "fixed32";
    case 8: return "bool";
    case 9: return "string";
    case 10: return "group";
    case 12: return "bytes";
    case 13: return "uint32";
    case 15: return "sfixed32";
    case 16: return "sfixed64";
    case 17: return "sint32";
    case 18: return "sint64";
    default: return nullptr;  // 11 message, 14 enum: named by type_name
  }
}

// Table rows name the constants fully: a message called Field must not resolve to table::Field.
constexpr std::string_view kNamespace = "::cutriage::wire::schema::";

// ---- output -------------------------------------------------------------------------------------

struct Output {
  std::string package;
  std::ostringstream header;  // schema.h, the namespace's body
  std::ostringstream macros;  // schema.h, after the namespace
  std::ostringstream fields;  // schema_table.h, kFields rows
  std::ostringstream values;  // schema_table.h, kEnumValues rows
  std::ostringstream messages;  // schema_table.h, kMessages rows
  std::ostringstream enums;     // schema_table.h, kEnums rows
};

// `scope`: the enclosing messages, "SessionHeader." style, as proto and C++ ("SessionHeader::").
void emit_enum(Output& out, const EnumDesc& e, const std::string& indent, const std::string& proto_scope,
               const std::string& cpp_scope) {
  const std::string full = out.package + "." + proto_scope + e.name;
  out.header << indent << "// " << full << "\n"
             << indent << "enum class " << e.name << " : " << underlying_type(e) << " {\n";
  std::set<std::string> seen;
  std::string macro = "CUTRIAGE_SCHEMA_ENUM";  // SessionHeader.Source -> ..._SESSION_HEADER_SOURCE
  const std::string path = proto_scope + e.name;
  for (std::string_view rest = path; !rest.empty();) {
    const size_t dot = rest.find('.');
    const std::string part = upper_snake_prefix(rest.substr(0, dot));
    macro += "_" + part.substr(0, part.size() - 1);
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  }
  out.macros << "#define " << macro << "(X)";
  out.enums << "    \"" << full << "\",\n";
  for (const auto& [name, number] : e.values) {
    const std::string constant = value_constant(e, name);
    if (!seen.insert(constant).second) {
      fail({"enum ", full, ": two values map to ", constant});
    }
    out.header << indent << "  " << constant << " = " << number << ",  // " << name << "\n";
    out.macros << " \\\n  X(" << constant << ", " << number << ")";
    out.values << "    {\"" << full << "\", \"" << name << "\", \"" << constant << "\", static_cast<int32_t>("
               << kNamespace << cpp_scope << e.name << "::" << constant << ")},\n";
  }
  out.header << indent << "};\n";
  out.macros << "\n";
}

void emit_message(Output& out, const MessageDesc& m, const std::string& indent, const std::string& proto_scope,
                  const std::string& cpp_scope) {
  const std::string full = out.package + "." + proto_scope + m.name;
  out.messages << "    \"" << full << "\",\n";
  out.header << indent << "// " << full << "\n" << indent << "struct " << m.name << " {\n";
  const std::string inner = indent + "  ";
  const std::string inner_proto = proto_scope + m.name + ".";
  const std::string inner_cpp = cpp_scope + m.name + "::";
  for (const EnumDesc& e : m.enums) emit_enum(out, e, inner, inner_proto, inner_cpp);
  for (const MessageDesc& n : m.nested) emit_message(out, n, inner, inner_proto, inner_cpp);
  std::set<std::string> seen;
  for (const FieldDesc& f : m.fields) {
    const std::string constant = field_constant(f);
    if (!seen.insert(constant).second) {
      fail({"message ", full, ": two fields map to ", constant});
    }
    std::string type;
    if (const char* scalar = scalar_name(f.type)) {
      type = scalar;
    } else {
      // Relative to the package: ".cutriage.v1.SessionHeader.Source" -> "SessionHeader.Source".
      const std::string own = "." + out.package + ".";
      type = f.type_name.compare(0, own.size(), own) == 0 ? f.type_name.substr(own.size()) : f.type_name;
    }
    std::string note;
    if (f.label == 3) note = "repeated ";
    if (f.proto3_optional) note = "optional ";
    note += type;
    if (f.in_oneof && !f.proto3_optional && f.oneof_index >= 0 &&
        static_cast<size_t>(f.oneof_index) < m.oneofs.size()) {
      note += ", oneof " + m.oneofs[static_cast<size_t>(f.oneof_index)];
    }
    out.header << inner << "static constexpr uint32_t " << constant << " = " << f.number << ";  // " << note
               << "\n";
    out.fields << "    {\"" << full << "\", \"" << f.name << "\", \"" << constant << "\", " << kNamespace << cpp_scope
               << m.name << "::" << constant << "},\n";
  }
  out.header << indent << "};\n";
}

// The whole file; nullopt when it cannot be opened.
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Leaves an unchanged file alone (and its time stamp: the build's restat sees nothing new).
void write_if_changed(const std::string& path, const std::string& text) {
  if (read_file(path) == text) return;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) fail({"cannot write ", path});
}

std::string banner(const FileDesc& f) {
  return "// Generated from " + f.name + " (package " + f.package +
         ") by proto/wire/gen/schema_gen.cpp; do not edit.\n"
         "// The .proto is the schema's only source: change it, the build regenerates this file.\n";
}

void generate(const FileDesc& file, const std::string& header_path, const std::string& table_path) {
  Output out;
  out.package = file.package;
  for (const EnumDesc& e : file.enums) {
    emit_enum(out, e, "", "", "");
    out.header << "\n";
  }
  for (const MessageDesc& m : file.messages) {
    emit_message(out, m, "", "", "");
    out.header << "\n";
  }

  std::ostringstream h;
  h << banner(file) << "//\n"
    << "// Field numbers: schema::<Message>::k<FieldName>. Enums: schema::<Enum>::k<Value>, the value's\n"
    << "// name without its enum's prefix, CamelCased. CUTRIAGE_SCHEMA_ENUM_<ENUM>(X) expands X(name,\n"
    << "// value) for every value, for checking an enum kept elsewhere against the schema.\n"
    << "#pragma once\n\n#include <cstdint>\n\nnamespace cutriage::wire::schema {\n\n"
    << out.header.str() << "}  // namespace cutriage::wire::schema\n\n"
    << out.macros.str();

  std::ostringstream t;
  t << banner(file) << "//\n"
    << "// Every field and enum value of schema.h with its proto name, for tests that compare them with\n"
    << "// the descriptors of the libprotobuf classes.\n"
    << "#pragma once\n\n#include <cstdint>\n#include <string_view>\n\n#include \"cutriage/wire/schema.h\"\n\n"
    << "namespace cutriage::wire::schema::table {\n\n"
    << "struct Field {\n  std::string_view message;   // full proto name\n  std::string_view name;\n"
    << "  std::string_view constant;  // the schema.h name\n  uint32_t number;\n};\n"
    << "struct EnumValue {\n  std::string_view enum_name;  // full proto name\n  std::string_view name;\n"
    << "  std::string_view constant;   // the schema.h name\n  int32_t number;\n};\n\n"
    << "inline constexpr std::string_view kPackage = \"" << file.package << "\";\n"
    << "inline constexpr std::string_view kMessages[] = {\n" << out.messages.str() << "};\n"
    << "inline constexpr std::string_view kEnums[] = {\n" << out.enums.str() << "};\n"
    << "inline constexpr Field kFields[] = {\n" << out.fields.str() << "};\n"
    << "inline constexpr EnumValue kEnumValues[] = {\n" << out.values.str() << "};\n\n"
    << "}  // namespace cutriage::wire::schema::table\n";

  write_if_changed(header_path, h.str());
  write_if_changed(table_path, t.str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: cutriage_schema_gen <descriptor set> <proto file name> <schema.h> <schema_table.h>\n";
    return 2;
  }
  try {
    const std::optional<std::string> bytes = read_file(argv[1]);
    if (!bytes) fail({"cannot read ", argv[1]});
    const std::string_view wanted = argv[2];
    protozero::pbf_reader set(*bytes);
    std::vector<std::string> names;
    while (set.next(1, protozero::pbf_wire_type::length_delimited)) {  // FileDescriptorSet.file
      FileDesc file = parse_file(set.get_message());
      if (file.name == wanted) {
        generate(file, argv[3], argv[4]);
        return 0;
      }
      names.push_back(file.name);
    }
    std::cerr << "cutriage_schema_gen: " << wanted << " is not in " << argv[1] << " (it holds:";
    for (const std::string& n : names) std::cerr << ' ' << n;
    std::cerr << ")\n";
  } catch (const std::exception& e) {
    std::cerr << "cutriage_schema_gen: " << e.what() << "\n";
  }
  return 1;
}
