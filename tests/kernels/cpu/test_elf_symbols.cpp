// kernels/src/cpu/elf_symbols.hpp: a shared object's undefined symbols read
// from its ELF file, and which of them the C library defines; files that are
// not what they claim are refused without reading outside them (the cut,
// scrambled and unended copies end where an unreadable page begins).
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "../../../kernels/src/cpu/elf_symbols.hpp"
#include "../kernel_fixtures.hpp"
#include "tune/kernels/subprocess.hpp"

namespace {

using tune::test::file_bytes;

// A shared object linked against nothing that calls memcpy (the C
// library's), sinf (libm's) and a weak function nobody defines.
std::string unlinked_object(const tune::test::kernel_scratch& scratch) {
  auto source = scratch.write("uses.cpp",
                              "#include <cstring>\n"
                              "extern \"C\" float sinf(float);\n"
                              "extern \"C\" __attribute__((weak)) void tune_maybe_there();\n"
                              "extern \"C\" float tune_entry(void* const* a, float x) {\n"
                              "  std::memcpy(a[0], a[1], *static_cast<unsigned long*>(a[2]));\n"
                              "  if (tune_maybe_there) tune_maybe_there();\n"
                              "  return sinf(x);\n"
                              "}\n");
  auto object = (scratch.path() / "uses.so").string();
  auto built = tune::run_process({"c++", "-O2", "-fPIC", "-shared", "-nostdlib", "-o", object, source}, 120.0);
  INFO(built.output);
  REQUIRE(built.ok());
  return object;
}

Elf64_Ehdr header_of(const std::string& bytes) {
  Elf64_Ehdr header{};
  std::memcpy(&header, bytes.data(), sizeof header);
  return header;
}

void put_header(std::string& bytes, const Elf64_Ehdr& header) { std::memcpy(bytes.data(), &header, sizeof header); }

// The dynamic symbol table's section header and where it sits in the file.
std::pair<Elf64_Shdr, std::size_t> dynsym_of(const std::string& bytes) {
  auto header = header_of(bytes);
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr s{};
    std::size_t at = header.e_shoff + i * sizeof s;
    std::memcpy(&s, bytes.data() + at, sizeof s);
    if (s.sh_type == SHT_DYNSYM) return {s, at};
  }
  FAIL("no dynamic symbol table");
  return {};
}

// A copy of some bytes that ends where an unreadable page begins: reading a
// byte past its end kills the test.
class guarded_bytes {
 public:
  explicit guarded_bytes(const std::string& bytes) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t data_pages = (bytes.size() + page - 1) / page;
    size_ = (data_pages + 1) * page;
    void* area = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(area != MAP_FAILED);
    base_ = static_cast<char*>(area);
    REQUIRE(::mprotect(base_ + data_pages * page, page, PROT_NONE) == 0);
    char* begin = base_ + data_pages * page - bytes.size();
    std::memcpy(begin, bytes.data(), bytes.size());
    view_ = std::string_view(begin, bytes.size());
  }
  ~guarded_bytes() { ::munmap(base_, size_); }
  guarded_bytes(const guarded_bytes&) = delete;
  guarded_bytes& operator=(const guarded_bytes&) = delete;
  std::string_view view() const { return view_; }

 private:
  char* base_ = nullptr;
  std::size_t size_ = 0;
  std::string_view view_;
};

}  // namespace

TEST_CASE("the undefined symbols of a shared object are listed with their weakness", "[kernels]") {
  tune::test::kernel_scratch scratch("elf-symbols");
  auto object = unlinked_object(scratch);
  std::string error;
  auto symbols = tune::undefined_dynamic_symbols(file_bytes(object), error);
  INFO(error);
  REQUIRE(symbols);
  std::map<std::string, bool> weak;
  for (const auto& s : *symbols) weak[s.name] = s.weak;
  REQUIRE(weak.count("memcpy") == 1);
  REQUIRE(weak.count("sinf") == 1);
  REQUIRE(weak.count("tune_maybe_there") == 1);
  CHECK_FALSE(weak["memcpy"]);
  CHECK_FALSE(weak["sinf"]);
  CHECK(weak["tune_maybe_there"]);
  // Its own function is defined, not listed.
  CHECK(weak.count("tune_entry") == 0);
}

TEST_CASE("only what the C library does not define is needed beyond it", "[kernels]") {
  CHECK(tune::c_library_defines("memcpy"));
  CHECK(tune::c_library_defines("aligned_alloc"));
  // A thread_local's accessor lives in the dynamic linker, which libc loads.
  CHECK(tune::c_library_defines("__tls_get_addr"));
  CHECK_FALSE(tune::c_library_defines("sinf"));
  CHECK_FALSE(tune::c_library_defines("_Znwm"));
  CHECK_FALSE(tune::c_library_defines("tune_no_such_symbol"));

  tune::test::kernel_scratch scratch("elf-needed");
  std::string error;
  auto beyond = tune::needed_beyond_c_library(unlinked_object(scratch), error);
  INFO(error);
  REQUIRE(beyond);
  CHECK(*beyond == std::vector<std::string>{"sinf"});

  auto missing = tune::needed_beyond_c_library((scratch.path() / "none.so").string(), error);
  CHECK_FALSE(missing);
  CHECK_THAT(error, Catch::Matchers::Contains("cannot read"));
}

TEST_CASE("a file that is not a 64-bit ELF file of this machine is refused", "[kernels]") {
  tune::test::kernel_scratch scratch("elf-bad-header");
  const auto good = file_bytes(unlinked_object(scratch));
  std::string error;
  CHECK_FALSE(tune::undefined_dynamic_symbols("", error));
  CHECK(error == "not an ELF file");
  CHECK_FALSE(tune::undefined_dynamic_symbols("#!/bin/sh\necho not a kernel\n", error));
  CHECK(error == "not an ELF file");

  auto other_class = good;
  other_class[EI_CLASS] = ELFCLASS32;
  CHECK_FALSE(tune::undefined_dynamic_symbols(other_class, error));
  CHECK_THAT(error, Catch::Matchers::Contains("64-bit"));

  auto other_order = good;
  other_order[EI_DATA] = other_order[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
  CHECK_FALSE(tune::undefined_dynamic_symbols(other_order, error));
  CHECK_THAT(error, Catch::Matchers::Contains("byte order"));

  auto far_headers = good;
  auto header = header_of(far_headers);
  header.e_shoff = ~std::uint64_t{0} - 16;
  put_header(far_headers, header);
  CHECK_FALSE(tune::undefined_dynamic_symbols(far_headers, error));
  CHECK_THAT(error, Catch::Matchers::Contains("outside the file"));

  auto odd_entries = good;
  header = header_of(odd_entries);
  header.e_shentsize = 40;
  put_header(odd_entries, header);
  CHECK_FALSE(tune::undefined_dynamic_symbols(odd_entries, error));
}

TEST_CASE("a symbol table or a name outside the file is refused", "[kernels]") {
  tune::test::kernel_scratch scratch("elf-bad-table");
  const auto good = file_bytes(unlinked_object(scratch));
  const auto [dynsym, at] = dynsym_of(good);
  std::string error;

  auto far_table = good;
  auto moved = dynsym;
  moved.sh_offset = good.size() - 8;
  std::memcpy(far_table.data() + at, &moved, sizeof moved);
  CHECK_FALSE(tune::undefined_dynamic_symbols(far_table, error));
  CHECK_THAT(error, Catch::Matchers::Contains("outside the file"));

  // Every symbol's name past the end of the string table.
  auto far_names = good;
  for (std::size_t s = 1; s < dynsym.sh_size / sizeof(Elf64_Sym); ++s) {
    Elf64_Sym symbol{};
    std::size_t where = dynsym.sh_offset + s * sizeof symbol;
    std::memcpy(&symbol, far_names.data() + where, sizeof symbol);
    symbol.st_name = 0x7fffffff;
    std::memcpy(far_names.data() + where, &symbol, sizeof symbol);
  }
  CHECK_FALSE(tune::undefined_dynamic_symbols(far_names, error));
  CHECK_THAT(error, Catch::Matchers::Contains("name outside"));

  auto no_strings = good;
  auto unlinked = dynsym;
  unlinked.sh_link = 0xffff;
  std::memcpy(no_strings.data() + at, &unlinked, sizeof unlinked);
  CHECK_FALSE(tune::undefined_dynamic_symbols(no_strings, error));
}

TEST_CASE("a name that runs to the end of the file is refused without reading past it", "[kernels]") {
  tune::test::kernel_scratch scratch("elf-unended-name");
  auto bytes = file_bytes(unlinked_object(scratch));
  const auto [dynsym, at] = dynsym_of(bytes);
  const auto header = header_of(bytes);
  Elf64_Shdr names{};
  const std::size_t names_at = header.e_shoff + dynsym.sh_link * sizeof names;
  std::memcpy(&names, bytes.data() + names_at, sizeof names);
  const std::string table = bytes.substr(names.sh_offset, names.sh_size);
  // Every undefined symbol named "sinf"; the table moved to the end of the
  // file and cut just before that name's terminating zero.
  const auto sinf = table.find(std::string("sinf") + '\0');
  REQUIRE(sinf != std::string::npos);
  for (std::size_t s = 1; s < dynsym.sh_size / sizeof(Elf64_Sym); ++s) {
    Elf64_Sym symbol{};
    const std::size_t where = dynsym.sh_offset + s * sizeof symbol;
    std::memcpy(&symbol, bytes.data() + where, sizeof symbol);
    if (symbol.st_shndx != SHN_UNDEF || symbol.st_name == 0) continue;
    symbol.st_name = static_cast<Elf64_Word>(sinf);
    std::memcpy(bytes.data() + where, &symbol, sizeof symbol);
  }
  names.sh_offset = bytes.size();
  names.sh_size = sinf + 4;
  std::memcpy(bytes.data() + names_at, &names, sizeof names);
  bytes += table.substr(0, sinf + 4);
  guarded_bytes guarded(bytes);
  std::string error;
  CHECK_FALSE(tune::undefined_dynamic_symbols(guarded.view(), error));
  CHECK(error == "a symbol's name without its end");
}

TEST_CASE("a cut or scrambled shared object never reads outside its bytes", "[kernels]") {
  tune::test::kernel_scratch scratch("elf-fuzz");
  const auto good = file_bytes(unlinked_object(scratch));
  std::string error;
  {
    guarded_bytes whole(good);
    auto symbols = tune::undefined_dynamic_symbols(whole.view(), error);
    INFO(error);
    CHECK(symbols);
  }
  // Cut anywhere, each cut ending at an unreadable page: the section headers
  // are at the end, so every cut short of the whole file loses them.
  for (std::size_t size = 0; size < good.size(); size += 7) {
    guarded_bytes cut(good.substr(0, size));
    CHECK_FALSE(tune::undefined_dynamic_symbols(cut.view(), error));
  }
  // Bytes changed at random, the copy ending at an unreadable page: refused,
  // or a list of names.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    auto scrambled = good;
    for (int k = 0; k < 8; ++k) scrambled[rng() % scrambled.size()] = static_cast<char>(rng());
    guarded_bytes guarded(scrambled);
    auto symbols = tune::undefined_dynamic_symbols(guarded.view(), error);
    if (!symbols) continue;
    for (const auto& s : *symbols) CHECK(s.name.size() < scrambled.size());
  }
}
