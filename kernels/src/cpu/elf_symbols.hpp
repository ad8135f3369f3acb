#pragma once
// The symbols a built shared object leaves for the dynamic linker to find,
// read from its ELF file, and whether the C library defines them: how a
// build linked without any library (compile.hpp) is checked to need nothing
// but the C library.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tune {

/// One undefined symbol of a shared object's dynamic symbol table.
struct undefined_symbol {
  std::string name;
  bool weak = false;  // may stay unresolved: the loader gives it the address 0
};

/// The undefined symbols of the 64-bit, host-endian ELF file `bytes` (its
/// .dynsym): the list, empty when none, or nothing with `error` saying what is
/// wrong with the file (not ELF, another class or byte order, a table or
/// name outside the file). Never reads outside `bytes`.
std::optional<std::vector<undefined_symbol>> undefined_dynamic_symbols(std::string_view bytes, std::string& error);

/// True when the C library this process runs with (libc.so.6 and what it
/// loads, the dynamic linker: `__tls_get_addr`) defines `name`.
bool c_library_defines(const std::string& name);

/// The non-weak undefined symbols of the shared object at `path` that the C
/// library does not define: empty when the object needs nothing more; nothing,
/// with `error`, when the file cannot be read or is not a shared object this
/// function understands.
std::optional<std::vector<std::string>> needed_beyond_c_library(const std::string& path, std::string& error);

}  // namespace tune
