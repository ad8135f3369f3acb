// A shared object's undefined dynamic symbols (elf_symbols.hpp).
#include "elf_symbols.hpp"

#include <dlfcn.h>
#include <elf.h>

#include <bit>
#include <cstring>
#include <stdexcept>

#include "tune/engine/readers.hpp"

namespace tune {

namespace {

// A copy of the T at `offset`, when all of it lies within `bytes`.
template <class T>
bool read_at(std::string_view bytes, std::uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

// Section `index`'s header, when the table holds it.
bool section(std::string_view bytes, const Elf64_Ehdr& header, std::uint64_t index, Elf64_Shdr& out) {
  return index < header.e_shnum && header.e_shoff <= bytes.size() &&
         read_at(bytes, header.e_shoff + index * sizeof(Elf64_Shdr), out);
}

bool within(std::string_view bytes, const Elf64_Shdr& s) {
  return s.sh_offset <= bytes.size() && s.sh_size <= bytes.size() - s.sh_offset;
}

constexpr unsigned char host_data = std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;

}  // namespace

std::optional<std::vector<undefined_symbol>> undefined_dynamic_symbols(std::string_view bytes, std::string& error) {
  Elf64_Ehdr header{};
  if (!read_at(bytes, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    error = "not an ELF file";
    return std::nullopt;
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != host_data) {
    error = "not a 64-bit ELF file of this machine's byte order";
    return std::nullopt;
  }
  if (header.e_shnum > 0 && header.e_shentsize != sizeof(Elf64_Shdr)) {
    error = "section headers of an unknown size";
    return std::nullopt;
  }
  std::vector<undefined_symbol> out;
  for (std::uint64_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr symbols{};
    if (!section(bytes, header, i, symbols)) {
      error = "section header " + std::to_string(i) + " outside the file";
      return std::nullopt;
    }
    if (symbols.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr names{};
    if (!within(bytes, symbols) || !section(bytes, header, symbols.sh_link, names) || !within(bytes, names) ||
        (symbols.sh_entsize != 0 && symbols.sh_entsize != sizeof(Elf64_Sym))) {
      error = "a dynamic symbol table or its names outside the file";
      return std::nullopt;
    }
    // Entry 0 is the null symbol.
    for (std::uint64_t s = 1; s < symbols.sh_size / sizeof(Elf64_Sym); ++s) {
      Elf64_Sym symbol{};
      read_at(bytes, symbols.sh_offset + s * sizeof(Elf64_Sym), symbol);
      if (symbol.st_shndx != SHN_UNDEF || symbol.st_name == 0) continue;
      if (symbol.st_name >= names.sh_size) {
        error = "a symbol's name outside its string table";
        return std::nullopt;
      }
      const char* begin = bytes.data() + names.sh_offset + symbol.st_name;
      const void* end = std::memchr(begin, '\0', names.sh_size - symbol.st_name);
      if (!end) {
        error = "a symbol's name without its end";
        return std::nullopt;
      }
      out.push_back({std::string(begin, static_cast<const char*>(end)), ELF64_ST_BIND(symbol.st_info) == STB_WEAK});
    }
  }
  return out;
}

bool c_library_defines(const std::string& name) {
  // Already loaded in every dynamically linked program; NOLOAD only finds it.
  static void* const library = ::dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  return library && ::dlsym(library, name.c_str()) != nullptr;
}

std::optional<std::vector<std::string>> needed_beyond_c_library(const std::string& path, std::string& error) {
  std::string bytes;
  try {
    bytes = read_file_text(path);
  } catch (const std::invalid_argument& e) {
    error = std::string("cannot read: ") + e.what();
    return std::nullopt;
  }
  auto symbols = undefined_dynamic_symbols(bytes, error);
  if (!symbols) {
    error = path + ": " + error;
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& s : *symbols)
    if (!s.weak && !c_library_defines(s.name)) out.push_back(s.name);
  return out;
}

}  // namespace tune
