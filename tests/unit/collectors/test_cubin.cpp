// The cubin inspector (collectors/include/cutriage/collectors/cubin.h).
//
// Real inputs: cubins nvcc builds from tests/data/cubin/kernels.cu at build time (plain, -lineinfo,
// -G, and sm_80), when the toolkit is there (CUTRIAGE_CUBIN_DIR). SYNTHETIC inputs: the small ELF
// images MiniElf assembles below, and every corruption of a real or synthetic image, are made up
// here to exercise the parser's bounds checks; they come from no compiler.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "catch.h"
#include "cutriage/collectors/cubin.h"
#include "fuzz_cubin.h"
#include "fuzz_replay.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_cubin {

using cutriage::collectors::CubinInfo;
using cutriage::collectors::function_code;
using cutriage::collectors::inspect_cubin;
using cutriage::collectors::sm_arch_name;
using cutriage::collectors::StatusCode;
using cutriage::fuzz::exercise_cubin;

namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v);
  b[off + 1] = static_cast<uint8_t>(v >> 8);
}
void put32(Bytes& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(Bytes& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get16(const Bytes& b, size_t off) {
  return static_cast<uint16_t>(b[off] | (b[off + 1] << 8));
}
uint32_t get32(const Bytes& b, size_t off) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | b[off + static_cast<size_t>(i)];
  return v;
}
uint64_t get64(const Bytes& b, size_t off) {
  return uint64_t{get32(b, off)} | (uint64_t{get32(b, off + 4)} << 32);
}

// Offsets of the ELF64 header fields the tests corrupt.
constexpr size_t kShoff = 40;
constexpr size_t kShnum = 60;
constexpr size_t kShstrndx = 62;
constexpr size_t kFlags = 48;

uint64_t section_field(const Bytes& b, size_t index, size_t field_off) {
  return get64(b, static_cast<size_t>(get64(b, kShoff)) + index * get16(b, 58) + field_off);
}
void set_section_field64(Bytes& b, size_t index, size_t field_off, uint64_t v) {
  put64(b, static_cast<size_t>(get64(b, kShoff)) + index * get16(b, 58) + field_off, v);
}
void set_section_field32(Bytes& b, size_t index, size_t field_off, uint32_t v) {
  put32(b, static_cast<size_t>(get64(b, kShoff)) + index * get16(b, 58) + field_off, v);
}

// A section found by name with the test's own reading of the ELF tables (trusting the image), to
// check function_code against: its index, file offset and size.
struct RawSection {
  size_t index = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};
// Used by the nvcc-built cubin cases only (absent from builds without CUDA).
[[maybe_unused]] std::optional<RawSection> find_section(const Bytes& b, const std::string& name) {
  const uint64_t shstr_off = section_field(b, get16(b, kShstrndx), 24);
  for (size_t i = 0; i < get16(b, kShnum); ++i) {
    const auto name_off = static_cast<size_t>(shstr_off + get32(b, static_cast<size_t>(get64(b, kShoff)) + i * get16(b, 58)));
    if (std::string(reinterpret_cast<const char*>(b.data() + name_off)) == name) {
      return RawSection{i, section_field(b, i, 24), section_field(b, i, 32)};
    }
  }
  return std::nullopt;
}

Bytes code_ok(const Bytes& b, std::string_view name) {
  auto r = function_code(b.data(), b.size(), name);
  INFO(name << ": " << r.status().message());
  REQUIRE(r.is_ok());
  return r.value();
}

std::string code_error(const Bytes& b, std::string_view name) {
  auto r = function_code(b.data(), b.size(), name);
  INFO(name);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  return r.status().message();
}

CubinInfo inspect_ok(const Bytes& b) {
  auto r = inspect_cubin(b.data(), b.size());
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  return r.value();
}

std::string inspect_error(const Bytes& b) {
  auto r = inspect_cubin(b.data(), b.size());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  return r.status().message();
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// 16 bytes first, first + 1, ...: the synthetic code of one function in mini_elf.
Bytes mini_code(uint8_t first) {
  Bytes code(16);
  for (size_t i = 0; i < code.size(); ++i) code[i] = static_cast<uint8_t>(first + i);
  return code;
}

// A minimal CUDA ELF (SYNTHETIC): a kernel "kern" (entry bit set) and a device function "helper"
// (none), each in its .text.<name> section, a symbol table, and optionally a .debug_line section.
Bytes mini_elf(bool line_info = false) {
  // Names at 1, 11, 19, 27, 38 and 51; the literal's own terminator ends the last one.
  static const char kShstr[] =
      "\0.shstrtab\0.strtab\0.symtab\0.text.kern\0.text.helper\0.debug_line";
  static const char kStr[] = "\0kern\0helper";
  const std::string shstr(kShstr, sizeof kShstr);
  const std::string str(kStr, sizeof kStr);
  Bytes b(64, 0);
  auto append = [&](const void* p, size_t n) {
    const size_t off = b.size();
    b.resize(off + n);
    if (n != 0) std::memcpy(b.data() + off, p, n);
    return off;
  };
  const size_t shstr_off = append(shstr.data(), shstr.size());
  const size_t str_off = append(str.data(), str.size());
  while (b.size() % 8 != 0) b.push_back(0);
  Bytes sym(size_t{3} * 24, 0);
  put32(sym, 24 + 0, 1);  // "kern"
  sym[24 + 4] = 0x12;     // GLOBAL FUNC
  sym[24 + 5] = 0x10;     // STO_CUDA_ENTRY
  put16(sym, 24 + 6, 4);  // .text.kern
  put32(sym, 48 + 0, 6);  // "helper"
  sym[48 + 4] = 0x12;
  put16(sym, 48 + 6, 5);  // .text.helper
  const size_t sym_off = append(sym.data(), sym.size());
  // The "code" of each function is a distinct byte pattern, so that function_code can be checked
  // to return the right section's bytes.
  const Bytes kern_code = mini_code(0x10);
  const Bytes helper_code = mini_code(0x20);
  const Bytes line_table(16, 0);
  const size_t kern_off = append(kern_code.data(), kern_code.size());
  const size_t helper_off = append(helper_code.data(), helper_code.size());
  const size_t line_off = append(line_table.data(), line_table.size());
  while (b.size() % 8 != 0) b.push_back(0);

  struct Sh {
    uint32_t name, type;
    uint64_t flags, off, size;
    uint32_t link;
    uint64_t entsize;
  };
  std::vector<Sh> sh = {{0, 0, 0, 0, 0, 0, 0},
                        {1, 3, 0, shstr_off, shstr.size(), 0, 0},
                        {11, 3, 0, str_off, str.size(), 0, 0},
                        {19, 2, 0, sym_off, sym.size(), 2, 24},
                        {27, 1, 0x6, kern_off, 16, 0, 0},
                        {38, 1, 0x6, helper_off, 16, 0, 0}};
  if (line_info) sh.push_back({51, 1, 0, line_off, 16, 0, 0});
  const size_t shoff = b.size();
  for (const Sh& s : sh) {
    Bytes e(64, 0);
    put32(e, 0, s.name);
    put32(e, 4, s.type);
    put64(e, 8, s.flags);
    put64(e, 24, s.off);
    put64(e, 32, s.size);
    put32(e, 40, s.link);
    put64(e, 56, s.entsize);
    append(e.data(), e.size());
  }
  const uint8_t ident[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41, 8, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(b.data(), ident, 16);
  put16(b, 16, 2);    // ET_EXEC
  put16(b, 18, 190);  // EM_CUDA
  put32(b, 20, 1);
  put64(b, kShoff, shoff);
  put32(b, kFlags, 0x06005a04);  // sm_90 in the ABI version 8 layout
  put16(b, 52, 64);
  put16(b, 58, 64);
  put16(b, kShnum, static_cast<uint16_t>(sh.size()));
  put16(b, kShstrndx, 1);
  return b;
}

#ifdef CUTRIAGE_CUBIN_DIR
Bytes read_cubin(const char* name) {
  const std::string s = cutriage::testing::slurp(std::filesystem::path(CUTRIAGE_CUBIN_DIR) / name);
  REQUIRE(!s.empty());
  return Bytes(s.begin(), s.end());
}

// The entry points of kernels.cu, mangled; the anonymous-namespace one carries a per-file hash.
void check_kernels(const CubinInfo& info) {
  INFO("kernels: " << info.kernels.size());
  REQUIRE(info.kernels.size() == 5);
  CHECK(info.kernels[0] == "_Z13static_kernelPi");
  CHECK(info.kernels[1] == "_Z7add_oneIdEvPT_i");
  CHECK(info.kernels[2] == "_Z7add_oneIiEvPT_i");
  CHECK(info.kernels[3].rfind("_ZN", 0) == 0);
  CHECK(contains(info.kernels[3], "anonymous_kernel"));
  CHECK(info.kernels[4] == "plain_kernel");
  for (const std::string& k : info.kernels)
    CHECK_FALSE(contains(k, "scale_one"));  // a device function
}
#endif

}  // namespace

#ifdef CUTRIAGE_CUBIN_DIR
TEST_CASE("cubin: nvcc's plain, -lineinfo, -G and sm_80 builds", "[cubin]") {
  const CubinInfo plain = inspect_ok(read_cubin("kernels_plain.cubin"));
  CHECK(plain.sm_arch == 90);
  CHECK_FALSE(plain.has_line_info);
  CHECK_FALSE(plain.debug_build);
  check_kernels(plain);

  const CubinInfo line = inspect_ok(read_cubin("kernels_lineinfo.cubin"));
  CHECK(line.sm_arch == 90);
  CHECK(line.has_line_info);
  CHECK_FALSE(line.debug_build);
  check_kernels(line);

  // Under -G the device function gets its own global symbol and .text section: still no kernel.
  const CubinInfo debug = inspect_ok(read_cubin("kernels_debug.cubin"));
  CHECK(debug.sm_arch == 90);
  CHECK(debug.has_line_info);
  CHECK(debug.debug_build);
  check_kernels(debug);

  const CubinInfo sm80 = inspect_ok(read_cubin("kernels_sm80.cubin"));
  CHECK(sm80.sm_arch == 80);
  check_kernels(sm80);
}

TEST_CASE("cubin: the ELF ABI version decides where the SM sits in e_flags", "[cubin]") {
  // Derived from the real sm_90 cubin by patching its header (SYNTHETIC): ABI version 7 keeps the
  // SM in the low byte (0x500550 is what toolkits of that ABI wrote for sm_80).
  Bytes b = read_cubin("kernels_plain.cubin");
  REQUIRE(b[8] == 8);
  REQUIRE(get32(b, kFlags) == 0x06005a04);
  b[8] = 7;
  put32(b, kFlags, 0x00500550);
  CHECK(inspect_ok(b).sm_arch == 80);
  b[8] = 9;  // unknown layout: not guessed
  CHECK(inspect_ok(b).sm_arch == 0);
}

TEST_CASE(
    "cubin: every prefix of a real cubin is handled, and any cut into the section table is an "
    "error",
    "[cubin]") {
  const Bytes full = read_cubin("kernels_lineinfo.cubin");
  const uint64_t table_end = get64(full, kShoff) + uint64_t{get16(full, kShnum)} * get16(full, 58);
  REQUIRE(table_end <= full.size());
  for (size_t n = 0; n < full.size(); n += (n < 128 ? 1 : 7)) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<long>(n));
    INFO("prefix of " << n << " bytes");
    CHECK(exercise_cubin(
              std::string_view(reinterpret_cast<const char*>(prefix.data()), prefix.size()))
              .empty());
    if (n < table_end) CHECK_FALSE(inspect_cubin(prefix.data(), prefix.size()).is_ok());
  }
}

TEST_CASE("cubin: random corruption of a real cubin never breaks the contract", "[cubin]") {
  const Bytes full = read_cubin("kernels_debug.cubin");
  const size_t shoff = static_cast<size_t>(get64(full, kShoff));
  std::mt19937_64 rng(1234);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible
  for (int round = 0; round < 3000; ++round) {
    Bytes b = full;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) {
      // Mostly the headers and the tables they point to, where a bad value leads somewhere.
      const size_t off = rng() % 2 == 0 ? rng() % 64
                                        : (rng() % 2 == 0 ? shoff + rng() % (full.size() - shoff)
                                                          : rng() % full.size());
      b[off] = static_cast<uint8_t>(rng());
    }
    INFO("round " << round);
    REQUIRE(exercise_cubin(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()))
                .empty());
  }
}

TEST_CASE("cubin: function_code returns each function's .text section of nvcc's builds", "[cubin]") {
  for (const char* file : {"kernels_plain.cubin", "kernels_lineinfo.cubin", "kernels_debug.cubin",
                           "kernels_sm80.cubin"}) {
    INFO(file);
    const Bytes b = read_cubin(file);
    std::vector<std::string> functions = inspect_ok(b).kernels;
    REQUIRE(functions.size() == 5);
    // Under -G the device function keeps its own code (elsewhere it is inlined): PCs can be in it.
    const bool debug = std::string_view(file) == "kernels_debug.cubin";
    if (debug) functions.emplace_back("_Z9scale_onef");
    for (const std::string& f : functions) {
      INFO(f);
      const std::optional<RawSection> raw = find_section(b, ".text." + f);
      REQUIRE(raw.has_value());
      const Bytes code = code_ok(b, f);
      CHECK(code.size() == raw->size);
      CHECK(Bytes(b.begin() + static_cast<long>(raw->offset),
                  b.begin() + static_cast<long>(raw->offset + raw->size)) == code);
      // Volta and later encode every instruction in 16 bytes; the first one is never all zeros.
      CHECK(code.size() % 16 == 0);
      REQUIRE(code.size() >= 16);
      CHECK(std::any_of(code.begin(), code.begin() + 16, [](uint8_t c) { return c != 0; }));
    }
    // Names that are not functions of this cubin, or only part of one.
    CHECK(contains(code_error(b, "no_such_kernel"), "no section .text.no_such_kernel"));
    code_error(b, "plain_kerne");
    code_error(b, "lain_kernel");
    code_error(b, "");
    if (!debug) code_error(b, "_Z9scale_onef");  // inlined: no code of its own
    // Sections that merely end with a function's name (.nv.info.*, .rela.text.*, .nv.constant0.*)
    // are never taken for its code.
    code_error(b, "nv.info.plain_kernel");
    code_error(b, "text.plain_kernel");
  }
}

TEST_CASE("cubin: function_code on truncated and corrupted real cubins is an error", "[cubin]") {
  const Bytes full = read_cubin("kernels_lineinfo.cubin");
  const std::optional<RawSection> text = find_section(full, ".text.plain_kernel");
  REQUIRE(text.has_value());
  // Cut inside the function's code, right after it, and inside the section table.
  const uint64_t table_end = get64(full, kShoff) + uint64_t{get16(full, kShnum)} * get16(full, 58);
  for (uint64_t cut : {text->offset + 1, text->offset + text->size - 1, text->offset + text->size,
                       table_end - 1}) {
    INFO("cut at " << cut);
    const Bytes prefix(full.begin(), full.begin() + static_cast<long>(cut));
    code_error(prefix, "plain_kernel");
  }
  Bytes b = full;
  set_section_field64(b, text->index, 24, full.size() - 8);  // code runs past the end
  CHECK(contains(code_error(b, "plain_kernel"), "past the end"));
  b = full;
  set_section_field64(b, text->index, 32, 0xfffffffffffffff0ULL);  // size that overflows
  code_error(b, "plain_kernel");
  b = full;
  set_section_field32(b, text->index, 4, 8);  // SHT_NOBITS: no bytes in the image
  CHECK(contains(code_error(b, "plain_kernel"), "not executable code"));
  b = full;
  set_section_field64(b, text->index, 8, 0x2);  // SHF_ALLOC only: not code
  CHECK(contains(code_error(b, "plain_kernel"), "not executable code"));
  b = full;
  set_section_field64(b, text->index, 32, 0);
  CHECK(contains(code_error(b, "plain_kernel"), "empty"));
  // The other functions are still found in an image whose plain_kernel section is broken.
  CHECK(code_ok(b, "_Z13static_kernelPi").size() == find_section(full, ".text._Z13static_kernelPi")->size);
}
#endif

TEST_CASE("cubin: a minimal synthetic image", "[cubin]") {
  const CubinInfo info = inspect_ok(mini_elf());
  CHECK(info.sm_arch == 90);
  CHECK_FALSE(info.has_line_info);
  CHECK_FALSE(info.debug_build);
  CHECK(info.kernels == std::vector<std::string>{"kern"});
  CHECK(inspect_ok(mini_elf(/*line_info=*/true)).has_line_info);
}

TEST_CASE("cubin: function_code on a minimal synthetic image", "[cubin]") {
  const Bytes b = mini_elf();
  CHECK(code_ok(b, "kern") == mini_code(0x10));
  CHECK(code_ok(b, "helper") == mini_code(0x20));  // a device function: code of its own, no entry bit
  code_error(b, "ker");
  code_error(b, "kern\n");
  CHECK(code_error(b, std::string_view("kern\0x", 6)).find('\n') == std::string::npos);
  code_error(b, "debug_line");  // a section that is not named .text.*
  CHECK_FALSE(function_code(nullptr, 0, "kern").is_ok());
  CHECK_FALSE(function_code(nullptr, 64, "kern").is_ok());
  const Bytes fatbin = [] {
    Bytes f(64, 0);
    put32(f, 0, 0xba55ed50);
    return f;
  }();
  CHECK(contains(code_error(fatbin, "kern"), "fatbinary"));
  // Every prefix of the image: an error or the right bytes, never a read outside it.
  for (size_t n = 0; n < b.size(); ++n) {
    const Bytes prefix(b.begin(), b.begin() + static_cast<long>(n));
    auto r = function_code(prefix.data(), prefix.size(), "kern");
    if (r.is_ok()) CHECK(r.value() == mini_code(0x10));
  }
  // Section 0 (the null section) named like a function with code past the end: never read.
  Bytes forged = b;
  set_section_field32(forged, 0, 0, 27);  // ".text.kern"
  set_section_field32(forged, 0, 4, 1);
  set_section_field64(forged, 0, 8, 0x6);
  set_section_field64(forged, 0, 24, 0xffffff00);
  set_section_field64(forged, 0, 32, 16);
  CHECK(code_ok(forged, "kern") == mini_code(0x10));
}

TEST_CASE("cubin: sm_arch_name", "[cubin]") {
  CHECK(sm_arch_name(90) == "sm_90");
  CHECK(sm_arch_name(80) == "sm_80");
  CHECK(sm_arch_name(120) == "sm_120");
  CHECK(sm_arch_name(0).empty());
}

TEST_CASE("cubin: what is not a cubin is an error, never a crash", "[cubin]") {
  CHECK_FALSE(inspect_cubin(nullptr, 0).is_ok());
  CHECK_FALSE(inspect_cubin(nullptr, 100).is_ok());
  CHECK(contains(inspect_error(Bytes{0x7f, 'E', 'L'}), "ELF"));
  CHECK(contains(inspect_error(Bytes{0x7f, 'E', 'L', 'F', 2, 1}), "truncated"));

  Bytes fatbin(64, 0);
  put32(fatbin, 0, 0xba55ed50);
  CHECK(contains(inspect_error(fatbin), "fatbinary"));
  const std::string ptx = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.5\n.target sm_90\n";
  CHECK(contains(inspect_error(Bytes(ptx.begin(), ptx.end())), "PTX"));

  std::mt19937_64 rng(99);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible
  for (int i = 0; i < 200; ++i) {
    Bytes garbage(static_cast<size_t>(rng() % 512));
    for (uint8_t& c : garbage) c = static_cast<uint8_t>(rng());
    if (garbage.size() >= 4 && i % 2 == 0)
      std::memcpy(garbage.data(),
                  "\x7f"
                  "ELF",
                  4);
    CHECK(exercise_cubin(
              std::string_view(reinterpret_cast<const char*>(garbage.data()), garbage.size()))
              .empty());
  }

  Bytes b = mini_elf();
  b[4] = 1;
  CHECK(contains(inspect_error(b), "64-bit"));
  b = mini_elf();
  b[5] = 2;
  CHECK(contains(inspect_error(b), "little-endian"));
  b = mini_elf();
  put16(b, 18, 62);  // x86-64
  CHECK(contains(inspect_error(b), "machine 62"));
}

TEST_CASE("cubin: offsets, sizes and counts pointing outside the image are errors", "[cubin]") {
  const Bytes good = mini_elf();
  Bytes b = good;
  put64(b, kShoff, 0xfffffffffffffff0ULL);
  inspect_error(b);
  b = good;
  put64(b, kShoff, 0);
  CHECK(contains(inspect_error(b), "no section headers"));
  b = good;
  put16(b, kShnum, 0xfffe);
  inspect_error(b);
  b = good;
  put16(b, 58, 16);  // section header entries smaller than Elf64_Shdr
  inspect_error(b);
  b = good;
  put16(b, kShstrndx, 40);
  inspect_error(b);
  b = good;
  set_section_field64(b, 4, 24, 0xffffffffffff0000ULL);  // .text.kern data offset
  CHECK(contains(inspect_error(b), "past the end"));
  b = good;
  set_section_field64(b, 3, 32, 0x7fffffffffffffffULL);  // .symtab size
  inspect_error(b);
  b = good;
  set_section_field64(b, 3, 56, 0);  // .symtab entry size
  inspect_error(b);
  b = good;
  set_section_field32(b, 3, 40, 99);  // .symtab's string table index
  inspect_error(b);
  b = good;
  set_section_field32(b, 4, 0, 0x7ffffff0);  // a section name beyond the name table
  inspect_error(b);
  b = good;
  // A name table cut inside ".text.helper" (38..50): that name does not end inside the table.
  set_section_field64(b, 1, 32, 45);
  inspect_error(b);
  b = good;
  // Extended numbering: e_shnum 0 and a huge count in section 0.
  put16(b, kShnum, 0);
  set_section_field64(b, 0, 32, 0xffffffffffffULL);
  inspect_error(b);
  b = good;
  put16(b, kShnum, 0);
  set_section_field64(b, 0, 32, 6);  // the same count through section 0: fine
  CHECK(inspect_ok(b).kernels == std::vector<std::string>{"kern"});
  b = good;
  // A symbol whose name index lies beyond its string table.
  const size_t sym_off = static_cast<size_t>(section_field(b, 3, 24));
  put32(b, sym_off + 24, 0x10000);
  inspect_error(b);
  b = good;
  put16(b, sym_off + 24 + 6, 0xfff1);  // SHN_ABS: not code, skipped
  CHECK(inspect_ok(b).kernels.empty());
}

TEST_CASE("fuzz regressions and seeds: cubin", "[cubin][fuzz]") {
  cutriage::testing::replay("cubin", exercise_cubin);
  const std::filesystem::path seeds =
      std::filesystem::path(CUTRIAGE_SOURCE_DIR) / "tests/fuzz/seeds/cubin";
  if (!std::filesystem::is_directory(seeds)) return;
  for (const auto& entry : std::filesystem::directory_iterator(seeds)) {
    INFO(entry.path().string());
    const std::string bytes = cutriage::testing::slurp(entry.path());
    CHECK(exercise_cubin(bytes).empty());
    CHECK(inspect_cubin(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).is_ok());
  }
}

}  // namespace test_cubin
