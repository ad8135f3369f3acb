#include <zlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/scratch_dir.hpp"
#include "tune/engine/readers.hpp"

using namespace tune;
using Catch::Matchers::Contains;

namespace {

std::string spec(const std::string& name) { return std::string(TUNE_DATA_DIR) + "/specs/" + name; }

std::string write(const tune::test::scratch_dir& dir, const std::string& name, const std::string& text) {
  auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string write_gz(const tune::test::scratch_dir& dir, const std::string& name, const std::string& text) {
  auto path = (dir / name).string();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

std::vector<std::string> names(const search_space& space) {
  std::vector<std::string> out;
  for (const auto& p : space.parameters()) out.push_back(p->name());
  return out;
}

const char* cache_text =
    R"({"device_name": "X", "kernel_name": "k", "tune_params_keys": ["block_size_x", "use_shmem", "method"],
 "tune_params": {"block_size_x": [64, 16, 32], "use_shmem": [0, 1], "method": ["a", "b", "c"]},
 "cache": {
"16,0,a": {"block_size_x": 16, "use_shmem": 0, "method": "a", "time": 1.5},
"32,1,b": {"block_size_x": 32, "use_shmem": 1, "method": "b", "time": 1.0})";

}  // namespace

TEST_CASE("NNI OpEvo spaces: factor, discrete, choice in file order", "[engine][readers]") {
  auto mm = read_nni_space(spec("opevo_mm_N512K1024M1024_search_space.json"));
  CHECK(names(mm) == std::vector<std::string>{"K", "X", "Y"});
  CHECK(mm.cartesian_size() == 4152720u);
  CHECK(mm.parameters()[0]->kind() == parameter_kind::factorization);

  auto conv = read_nni_space(spec("opevo_conv_N512C3HW227F64K11ST4PD0_search_space.json"));
  REQUIRE(conv.dimension() == 8);
  CHECK(conv.parameters()[6]->kind() == parameter_kind::discrete);
  CHECK(conv.parameters()[7]->kind() == parameter_kind::categorical);
  CHECK(conv.parameters()[1]->cardinality() == 16);  // 55 = 5 * 11 in 4 ordered factors: 4 * 4

  for (const char* f :
       {"opevo_bmm_B960N128K128M64PNN_search_space.json", "opevo_bmm_B960N128K128M64PTN_search_space.json",
        "opevo_bmm_B960N128K64M128PNT_search_space.json", "opevo_mm_N512K1024M4096_search_space.json",
        "opevo_mm_N512K4096M1024_search_space.json", "opevo_conv_N512C64HW27F192K5ST1PD2_search_space.json"})
    CHECK(read_space_file(spec(f)).dimension() >= 3);
}

TEST_CASE("NNI spaces: permutations and strings", "[engine][readers]") {
  auto space = nni_space_from_json(nlohmann::json::parse(R"({"order": {"_type": "perm", "_value": [4]},
      "n": {"_type": "perm", "_value": 3}, "how": {"_type": "choice", "_value": ["x", "y"]}})"),
                                   "inline");
  CHECK(space.cartesian_size() == 24u * 6u * 2u);
  CHECK(space.parameters()[*space.find("order")]->kind() == parameter_kind::permutation);
}

TEST_CASE("malformed NNI spaces name the parameter and the field", "[engine][readers]") {
  auto bad = [](const char* text) { return nni_space_from_json(nlohmann::json::parse(text), "s.json"); };
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "uniform", "_value": [0, 1]}})"),
                    Contains("s.json: t._type") && Contains("factor, perm, discrete or choice"));
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "factor", "_value": [1024]}})"),
                    Contains("t._value") && Contains("[product, parts]"));
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "factor", "_value": [0, 2]}})"), Contains("t._value[0]"));
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "factor", "_value": ["64", 2]}})"), Contains("t._value[0]"));
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "discrete", "_value": [1, "a"]}})"), Contains("t._value[1]"));
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "discrete", "_value": [1, 1]}})"), Contains("listed twice"));
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "choice", "_value": []}})"), Contains("non-empty"));
  CHECK_THROWS_WITH(bad(R"({"t": {"_value": [1]}})"), Contains("\"_type\""));
  CHECK_THROWS_WITH(bad(R"({"t": {"_type": "perm", "_value": [0]}})"), Contains("t._value"));
  CHECK_THROWS_WITH(bad(R"([])"), Contains("(top level)"));
}

TEST_CASE("T1 specs: value expressions and conditions", "[engine][readers]") {
  auto conv = read_t1_spec(spec("convolution_milo_T1.json"));
  CHECK(conv.cartesian_size() == 10240u);
  CHECK(conv.count_valid() == 4362u);
  CHECK(conv.parameters()[0]->kind() == parameter_kind::discrete);
  CHECK(conv.parameters()[4]->kind() == parameter_kind::categorical);  // read_only [0, 1]

  auto hotspot = read_t1_spec(spec("hotspot_milo_T1.json"));
  CHECK(hotspot.parameters()[*hotspot.find("block_size_x")]->cardinality() == 37);
  CHECK(hotspot.parameters()[*hotspot.find("block_size_y")]->cardinality() == 6);
  CHECK(hotspot.count_valid() == 82984u);

  // Counts checked against an exhaustive evaluation of the conditions in Python.
  CHECK(read_t1_spec(spec("gemm_milo_T1.json")).count_valid() == 116928u);
  CHECK(read_t1_spec(spec("BAT_GEMM-CAFF.json")).count_valid() == 10312u);
  CHECK(read_t1_spec(spec("dedispersion_milo_T1.json")).count_valid() == 11130u);
}

TEST_CASE("malformed T1 specs name the field", "[engine][readers]") {
  auto bad = [](const std::string& tp, const std::string& conditions = "[]") {
    return t1_space_from_json(nlohmann::json::parse(R"({"ConfigurationSpace": {"TuningParameters": [)" + tp +
                                                    R"(], "Conditions": )" + conditions + "}}"),
                              "t1.json");
  };
  CHECK_THROWS_WITH(bad(R"({"Name": "a", "Type": "int", "Values": "[1, 2"})"),
                    Contains("t1.json: ConfigurationSpace.TuningParameters[0].Values: cannot read '[1, 2'"));
  CHECK_THROWS_WITH(bad(R"({"Name": "a", "Type": "int", "Values": "[1.5, 2]"})"), Contains("not of Type 'int'"));
  CHECK_THROWS_WITH(bad(R"({"Name": "a", "Type": "int", "Values": "[]"})"), Contains("empty"));
  CHECK_THROWS_WITH(bad(R"({"Type": "int", "Values": "[1]"})"), Contains("TuningParameters[0].Name: missing"));
  CHECK_THROWS_WITH(bad(R"({"Name": "a", "Type": "complex", "Values": "[1]"})"), Contains(".Type"));
  CHECK_THROWS_WITH(bad(R"({"Name": "a", "Values": 3})"), Contains(".Values: expected a list"));
  CHECK_THROWS_WITH(bad(R"({"Name": "a", "Values": "[1, 2]"})", R"([{"Expression": "b > 1"}])"),
                    Contains("Conditions[0].Expression") && Contains("\"b\""));
  CHECK_THROWS_WITH(bad(R"({"Name": "a", "Values": "[1, 2]"})", R"([{"Parameters": ["a"]}])"),
                    Contains("Conditions[0].Expression: missing"));
  CHECK_THROWS_WITH(t1_space_from_json(nlohmann::json::parse("{}"), "t1.json"),
                    Contains("ConfigurationSpace: missing"));
  auto ok = bad(R"({"Name": "s", "Type": "string", "Values": "['x', 'y']"})", R"([{"Expression": "s == 'y'"}])");
  CHECK(ok.count_valid() == 1u);
}

TEST_CASE("Kernel Tuner caches: tune_params in key order, kinds guessed, overrides", "[engine][readers]") {
  tune::test::scratch_dir dir("readers-kt");
  auto path = write(dir, "cache.json", std::string(cache_text) + "}}");
  auto space = read_kernel_tuner_space(path);
  CHECK(names(space) == std::vector<std::string>{"block_size_x", "use_shmem", "method"});
  CHECK(space.parameters()[0]->kind() == parameter_kind::discrete);
  CHECK(std::get<double>(space.parameters()[0]->value(0)) == 16);  // sorted
  CHECK(space.parameters()[1]->kind() == parameter_kind::categorical);
  CHECK(space.parameters()[2]->kind() == parameter_kind::categorical);

  auto overridden = read_kernel_tuner_space(path, {{"block_size_x", "categorical"}, {"use_shmem", "discrete"}});
  CHECK(overridden.parameters()[0]->kind() == parameter_kind::categorical);
  CHECK(overridden.parameters()[1]->kind() == parameter_kind::discrete);
  CHECK_THROWS_WITH(read_kernel_tuner_space(path, {{"method", "discrete"}}), Contains("non-numeric"));
  CHECK_THROWS_WITH(read_kernel_tuner_space(path, {{"nope", "discrete"}}), Contains("kind override 'nope'"));
  CHECK_THROWS_WITH(read_kernel_tuner_space(path, {{"method", "ordered"}}), Contains("'ordered'"));
}

TEST_CASE("Kernel Tuner caches: gzip and a missing final }} are read", "[engine][readers]") {
  tune::test::scratch_dir dir("readers-kt-gz");
  auto truncated = write_gz(dir, "cache.json.gz", std::string(cache_text) + ",\n");
  CHECK(read_kernel_tuner_space(truncated).dimension() == 3);
  CHECK(read_json_file(truncated, true)["cache"].size() == 2);
  CHECK_THROWS_WITH(read_json_file(truncated, false), Contains("not valid JSON"));
  CHECK(read_space_file(truncated).dimension() == 3);
  CHECK(read_kernel_tuner_space(std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice_truncated.json.gz").dimension() ==
        10);
}

TEST_CASE("broken Kernel Tuner caches are rejected with the field", "[engine][readers]") {
  auto bad = [](const char* text) { return kernel_tuner_space_from_json(nlohmann::json::parse(text), "c.json"); };
  CHECK_THROWS_WITH(bad(R"({"cache": {}})"), Contains("c.json: tune_params: missing"));
  CHECK_THROWS_WITH(bad(R"({"tune_params": {}})"), Contains("tune_params"));
  CHECK_THROWS_WITH(bad(R"({"tune_params": {"a": 3}})"), Contains("tune_params.a: expected a list"));
  CHECK_THROWS_WITH(bad(R"({"tune_params": {"a": []}})"), Contains("tune_params.a: the list of values is empty"));
  CHECK_THROWS_WITH(bad(R"({"tune_params": {"a": [[1]]}})"), Contains("tune_params.a[0]"));
  CHECK_THROWS_WITH(bad(R"({"tune_params": {"a": [1]}, "tune_params_keys": ["b"]})"), Contains("tune_params_keys"));
  CHECK_THROWS_WITH(bad(R"({"tune_params": {"a": [1], "b": [2]}, "tune_params_keys": ["a"]})"),
                    Contains("lists 1 names"));
}

TEST_CASE("files that cannot be read or recognised", "[engine][readers]") {
  tune::test::scratch_dir dir("readers-files");
  CHECK_THROWS_WITH(read_space_file((dir / "absent.json").string()), Contains("absent.json: (file): cannot open"));
  CHECK_THROWS_WITH(read_space_file(write(dir, "bad.json", "{\"a\": ")), Contains("bad.json: (file): not valid JSON"));
  CHECK_THROWS_WITH(read_space_file(write(dir, "other.json", R"({"a": 1})")), Contains("not a search-space file"));
  CHECK_THROWS_WITH(read_space_file(write(dir, "fake.json.gz", "not gzip at all")), Contains("fake.json.gz"));
  CHECK_THROWS_WITH(read_space_file(write(dir, "empty.json", "")), Contains("not valid JSON"));
}

TEST_CASE("a gzip bomb is refused at the decompressed-size limit", "[engine][readers]") {
  tune::test::scratch_dir dir("readers-gz-bomb");
  // max_file_bytes and one MiB more of zeros: a file of about a megabyte.
  auto path = (dir / "bomb.json.gz").string();
  gzFile f = gzopen(path.c_str(), "wb1");
  std::string zeros(1 << 20, '0');
  for (std::size_t written = 0; written <= max_file_bytes; written += zeros.size())
    gzwrite(f, zeros.data(), static_cast<unsigned>(zeros.size()));
  gzclose(f);
  CHECK_THROWS_WITH(read_json_file(path), Contains("bomb.json.gz: (file): holds more than 256 MiB decompressed"));
  CHECK_THROWS_WITH(read_space_file(path), Contains("256 MiB decompressed"));

  // A smaller limit applies to plain and gzip files alike; at the limit a file is read.
  auto small = write_gz(dir, "small.json.gz", std::string(100, ' ') + "{}");
  CHECK(read_file_text(small, 102).size() == 102);
  CHECK_THROWS_WITH(read_file_text(small, 101),
                    Contains("small.json.gz: (file): holds more than 101 bytes decompressed"));
  auto plain = write(dir, "plain.json", std::string(100, ' ') + "{}");
  CHECK(read_file_text(plain, 102).size() == 102);
  CHECK_THROWS_WITH(read_file_text(plain, 101), Contains("plain.json: (file): holds more than 101 bytes;"));
}

TEST_CASE("JSON nested deeper than the limit is refused before it is parsed", "[engine][readers]") {
  tune::test::scratch_dir dir("readers-depth");
  auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  CHECK(json_nesting_depth(nested(max_json_depth)) == max_json_depth);
  CHECK(json_nesting_depth(R"({"a": "[[[{{{\"[[", "b": [1, {"c": []}]})") == 4);
  CHECK(read_json_file(write(dir, "deep_ok.json", nested(max_json_depth))).is_array());
  CHECK_THROWS_WITH(read_json_file(write(dir, "deep.json", nested(max_json_depth + 1))),
                    Contains("deep.json: (file): arrays and objects nested more than 100 levels deep"));
  // The depth counts in unclosed text too, and in every reader.
  CHECK_THROWS_WITH(read_space_file(write(dir, "open.json", "{\"a\": " + std::string(100000, '['))),
                    Contains("nested more than 100 levels"));
}
