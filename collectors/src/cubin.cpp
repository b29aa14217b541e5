// inspect_cubin and function_code (cubin.h): read the ELF headers of a cubin, and the bytes of one
// function's code section.
//
// The image comes from outside (a module-load callback copies whatever the application loaded),
// so it is treated as hostile: every offset, size and count is checked against the buffer before
// use, arithmetic on them cannot overflow, and every string must end inside its string table.
// Anything inconsistent is kInvalidArgument; nothing is read outside [data, data + size).
//
// What the fields mean, checked on nvcc 13.0 cubins (sm_75, sm_80, sm_90, sm_90a, sm_100, sm_120;
// tests/unit/collectors/test_cubin.cpp builds its own):
//   * e_flags carries the SM. The layout depends on the CUDA ELF ABI version (e_ident[8], as in
//     LLVM's BinaryFormat/ELF.h): version 7 (toolkits before 12.8 or so) keeps it in the low byte
//     (EF_CUDA_SM), version 8 in bits 8-15 (EF_CUDA_SM_MASK; nvcc 13 emits version 8 for every
//     target: sm_90 is 0x06005a04). Any other version leaves sm_arch 0 rather than guess.
//     Version 7 was not checked on a real cubin here (no older toolkit on this machine).
//   * -lineinfo emits .debug_line and .nv_debug_line_sass; -G adds .debug_info (and the line
//     tables); a plain build has neither (only .debug_frame, which says nothing about lines).
//   * Kernels are STT_FUNC symbols with STO_CUDA_ENTRY (0x10) in st_other, defined in an
//     executable section (.text.<name>). Device functions have their own .text.<name> section and
//     .nv.info.<name> under -G or -rdc too, but never the entry bit; static and anonymous-namespace
//     kernels are LOCAL symbols with the bit, so the binding is not looked at.
//   * Every function (kernel, or non-inlined device function) has its code alone in an executable
//     section named .text.<mangled name>, starting at section offset 0: the PC offsets of CUPTI's
//     PC-sampling records are offsets into that section (function_code returns it as is).
#include "cutriage/collectors/cubin.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

namespace cutriage::collectors {

namespace {

constexpr uint16_t kEmCuda = 190;
constexpr size_t kEhdrSize = 64;
constexpr size_t kShdrSize = 64;
constexpr size_t kSymSize = 24;
constexpr uint32_t kShtSymtab = 2;
constexpr uint32_t kShtStrtab = 3;
constexpr uint32_t kShtProgbits = 1;
constexpr uint32_t kShtNobits = 8;
constexpr uint64_t kShfExecinstr = 0x4;
constexpr uint16_t kShnXindex = 0xffff;
constexpr uint16_t kShnLoreserve = 0xff00;
constexpr uint8_t kSttFunc = 2;
constexpr uint8_t kStoCudaEntry = 0x10;
constexpr uint8_t kAbiCudaV1 = 7;  // SM in e_flags & 0xff
constexpr uint8_t kAbiCudaV2 = 8;  // SM in (e_flags >> 8) & 0xff
constexpr uint32_t kFatbinMagic = 0xba55ed50;
constexpr uint32_t kFatbinWrapperMagic = 0x466243b1;

Status invalid(const std::string& why) {
  return {StatusCode::kInvalidArgument, "not a usable cubin: " + why};
}

// Little-endian reads at checked offsets. Callers check `off + N <= size` first (in_bounds).
uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t u32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t u64(const uint8_t* p) { return uint64_t{u32(p)} | (uint64_t{u32(p + 4)} << 32); }

// [off, off + len) lies inside a buffer of `size` bytes, without overflow.
bool in_bounds(uint64_t off, uint64_t len, size_t size) { return off <= size && len <= size - off; }

struct Section {
  uint32_t name = 0;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint64_t entsize = 0;
};

class Image {
 public:
  Image(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  Status read_sections() {
    const uint64_t shoff = u64(data_ + 40);
    const uint16_t shentsize = u16(data_ + 58);
    uint64_t shnum = u16(data_ + 60);
    uint32_t shstrndx = u16(data_ + 62);
    if (shoff == 0) return invalid("no section headers");
    if (shentsize < kShdrSize)
      return invalid("section header entries of " + std::to_string(shentsize) + " bytes");
    if (!in_bounds(shoff, kShdrSize, size_))
      return invalid("section headers past the end of the image");
    // Extended numbering: the real count and string-table index live in section 0.
    if (shnum == 0) shnum = u64(data_ + shoff + 32);
    if (shstrndx == kShnXindex) shstrndx = u32(data_ + shoff + 40);
    if (shnum == 0 || shnum > (size_ - shoff) / shentsize) {
      return invalid("section header table (" + std::to_string(shnum) +
                     " entries) past the end of the image");
    }
    sections_.reserve(static_cast<size_t>(shnum));
    for (uint64_t i = 0; i < shnum; ++i) {
      const uint8_t* p = data_ + shoff + i * shentsize;
      Section s;
      s.name = u32(p);
      s.type = u32(p + 4);
      s.flags = u64(p + 8);
      s.offset = u64(p + 24);
      s.size = u64(p + 32);
      s.link = u32(p + 40);
      s.entsize = u64(p + 56);
      if (i != 0 && s.type != kShtNobits && !in_bounds(s.offset, s.size, size_)) {
        return invalid("section " + std::to_string(i) + " lies past the end of the image");
      }
      sections_.push_back(s);
    }
    if (shstrndx == 0 || shstrndx >= sections_.size() || sections_[shstrndx].type != kShtStrtab) {
      return invalid("no section name table");
    }
    shstrtab_ = &sections_[shstrndx];
    return Status::ok();
  }

  // The NUL-terminated string at `index` of string table `table`; nullopt when it does not end
  // inside the table.
  [[nodiscard]] std::optional<std::string_view> string_at(const Section& table,
                                                          uint32_t index) const {
    if (table.type != kShtStrtab || index >= table.size) return std::nullopt;
    const auto* begin = reinterpret_cast<const char*>(data_ + table.offset + index);
    const size_t room = static_cast<size_t>(table.size - index);
    const void* nul = std::memchr(begin, '\0', room);
    if (nul == nullptr) return std::nullopt;
    return std::string_view(begin, static_cast<size_t>(static_cast<const char*>(nul) - begin));
  }

  [[nodiscard]] std::optional<std::string_view> section_name(const Section& s) const {
    return string_at(*shstrtab_, s.name);
  }

  Status read_kernels(std::vector<std::string>& out) const {
    for (const Section& symtab : sections_) {
      if (symtab.type != kShtSymtab) continue;
      if (symtab.entsize < kSymSize)
        return invalid("symbol table entries of " + std::to_string(symtab.entsize) + " bytes");
      if (symtab.link == 0 || symtab.link >= sections_.size() ||
          sections_[symtab.link].type != kShtStrtab) {
        return invalid("symbol table without a string table");
      }
      const Section& strtab = sections_[symtab.link];
      const uint64_t count = symtab.size / symtab.entsize;
      for (uint64_t i = 1; i < count; ++i) {  // entry 0 is the undefined symbol
        const uint8_t* p = data_ + symtab.offset + i * symtab.entsize;
        const uint8_t info = p[4];
        const uint8_t other = p[5];
        const uint16_t shndx = u16(p + 6);
        if ((info & 0xf) != kSttFunc || (other & kStoCudaEntry) == 0) continue;
        // Reserved indices (absolute, common, SHN_XINDEX) never hold code.
        if (shndx == 0 || shndx >= kShnLoreserve || shndx >= sections_.size()) continue;
        if ((sections_[shndx].flags & kShfExecinstr) == 0) continue;
        std::optional<std::string_view> name = string_at(strtab, u32(p));
        if (!name)
          return invalid("symbol " + std::to_string(i) + " has a name outside its string table");
        if (!name->empty()) out.emplace_back(*name);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return Status::ok();
  }

  [[nodiscard]] const std::vector<Section>& sections() const { return sections_; }

  // The bytes of a section read_sections() accepted: within the image (checked there).
  [[nodiscard]] std::vector<uint8_t> contents(const Section& s) const {
    const uint8_t* begin = data_ + s.offset;
    return {begin, begin + s.size};
  }

 private:
  const uint8_t* data_;
  size_t size_;
  std::vector<Section> sections_;
  const Section* shstrtab_ = nullptr;
};

// What the bytes are when they are not an ELF image, for the error message.
std::string describe_non_elf(const uint8_t* data, size_t size) {
  if (size >= 4) {
    const uint32_t magic = u32(data);
    if (magic == kFatbinMagic) return "a fatbinary (select one architecture's cubin from it first)";
    if (magic == kFatbinWrapperMagic)
      return "a fatbinary wrapper (its payload is a fatbinary, not a cubin)";
  }
  std::string_view text(reinterpret_cast<const char*>(data), std::min<size_t>(size, 4096));
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos) {
    text.remove_prefix(first);
    if (text.substr(0, 2) == "//" || text.substr(0, 8) == ".version")
      return "PTX text (compile it to a cubin first)";
  }
  return "no ELF magic";
}

// A name from the caller or the image, fit for a one-line error message: control bytes become '?',
// and a very long name is cut.
std::string printable(std::string_view name) {
  constexpr size_t kMaxShown = 200;
  std::string out(name.substr(0, kMaxShown));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (name.size() > kMaxShown) out += "...";
  return out;
}

// The ELF header checks both entry points make before reading the section table: afterwards the
// 64-byte header is known to be inside the image.
Status check_header(const uint8_t* data, size_t size) {
  if (data == nullptr || size == 0) return invalid("empty image");
  if (size < 4 || std::memcmp(data,
                              "\x7f"
                              "ELF",
                              4) != 0)
    return invalid(describe_non_elf(data, size));
  if (size < kEhdrSize) return invalid("truncated ELF header (" + std::to_string(size) + " bytes)");
  if (data[4] != 2) return invalid("not a 64-bit ELF");
  if (data[5] != 1) return invalid("not a little-endian ELF");
  const uint16_t machine = u16(data + 18);
  if (machine != kEmCuda)
    return invalid("ELF for machine " + std::to_string(machine) + ", not CUDA (190)");
  return Status::ok();
}

}  // namespace

Result<CubinInfo> inspect_cubin(const uint8_t* data, size_t size) {
  if (Status s = check_header(data, size); !s.is_ok()) return s;

  CubinInfo info;
  const uint32_t flags = u32(data + 48);
  const uint8_t abi = data[8];
  if (abi == kAbiCudaV1) {
    info.sm_arch = flags & 0xffu;
  } else if (abi == kAbiCudaV2) {
    info.sm_arch = (flags >> 8) & 0xffu;
  }

  Image image(data, size);
  if (Status s = image.read_sections(); !s.is_ok()) return s;
  for (const Section& section : image.sections()) {
    std::optional<std::string_view> name = image.section_name(section);
    if (!name) return invalid("a section name lies outside the section name table");
    if (*name == ".debug_line" || *name == ".nv_debug_line_sass") info.has_line_info = true;
    if (*name == ".debug_info") info.debug_build = true;
  }
  if (Status s = image.read_kernels(info.kernels); !s.is_ok()) return s;
  return info;
}

Result<std::vector<uint8_t>> function_code(const uint8_t* data, size_t size,
                                           std::string_view mangled_name) {
  if (mangled_name.empty()) return invalid("no function name given");
  if (Status s = check_header(data, size); !s.is_ok()) return s;
  Image image(data, size);
  if (Status s = image.read_sections(); !s.is_ok()) return s;
  constexpr std::string_view kPrefix = ".text.";
  const std::string shown = printable(mangled_name);
  const std::vector<Section>& sections = image.sections();
  for (size_t i = 1; i < sections.size(); ++i) {  // section 0 is the null section, never code
    const Section& section = sections[i];
    std::optional<std::string_view> name = image.section_name(section);
    if (!name) return invalid("a section name lies outside the section name table");
    if (name->size() != kPrefix.size() + mangled_name.size() || name->substr(0, kPrefix.size()) != kPrefix ||
        name->substr(kPrefix.size()) != mangled_name) {
      continue;
    }
    // A NOBITS section has no bytes in the image (read_sections does not bound its offset), and
    // a non-executable one is not code: either would be a forged name.
    if (section.type != kShtProgbits || (section.flags & kShfExecinstr) == 0) {
      return invalid("section .text." + shown + " is not executable code");
    }
    if (section.size == 0) return invalid("section .text." + shown + " is empty");
    // read_sections() checked this already; checked again here because this is the one read of
    // section contents, and a wrong bound would read outside the image.
    if (!in_bounds(section.offset, section.size, size)) {
      return invalid("section .text." + shown + " lies past the end of the image");
    }
    return image.contents(section);
  }
  // A well-formed cubin without that function: not "not a usable cubin" (invalid()'s prefix).
  return Status(StatusCode::kInvalidArgument,
                "no function " + shown + " with code in this cubin (no section .text." + shown + ")");
}

std::string sm_arch_name(uint32_t sm_arch) {
  if (sm_arch == 0) return {};
  return "sm_" + std::to_string(sm_arch);
}

}  // namespace cutriage::collectors
