#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "evolve_detail.hpp"
#include "evolved_variant.hpp"
#include "skip.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/tune.hpp"

using namespace tune;
using Catch::Matchers::Contains;
using tune::test::evolved_variant;

namespace {

// Python's XML parser reads the SVG and counts what it holds: front points,
// variants, originals, then the document's <title> text, one per line.
std::string parsed_counts(const std::string& svg) {
  auto file = std::filesystem::temp_directory_path() / "tune-test-front-plot.svg";
  {
    std::ofstream out(file, std::ios::binary);
    out << svg;
  }
  const char* script =
      "import sys, xml.etree.ElementTree as E\n"
      "root = E.parse(sys.argv[1]).getroot()\n"
      "ns = '{http://www.w3.org/2000/svg}'\n"
      "count = lambda c: sum(1 for e in root.iter() if e.get('class') == c)\n"
      "print(count('front-point'), count('variant'), count('original-point'))\n"
      "print(root.find(ns + 'title').text)\n";
  auto parsed = run_process({"/usr/bin/python3", "-c", script, file.string()}, 60);
  INFO(parsed.output);
  REQUIRE(parsed.ok());
  return parsed.output;
}

/// Five variants, a front of three, the first the original; a title that needs escaping.
evolution_plot five_variants() {
  evolution_plot plot;
  plot.title = "matmul:32x64x48 <seed 1> & \"quotes\" 'too'";
  plot.variants = {evolved_variant(0, 10, 0.05, 0), evolved_variant(1, 8, 0.06, 3), evolved_variant(2, 9, 0.07, 2),
                   evolved_variant(3, 12, 0.04, 4), evolved_variant(4, 11, 0.08, 1)};
  plot.front = detail::front_of(plot.variants);
  plot.original = plot.variants[0];
  return plot;
}

/// One variant, its own front, no original.
evolution_plot single_variant() {
  evolution_plot single;
  single.title = "one";
  single.variants = {evolved_variant(7, 2, 0, 1)};
  single.front = single.variants;
  return single;
}
}  // namespace

TEST_CASE("the front plot escapes its title and writes no NaN coordinates", "[facade][gevo]") {
  auto plot = five_variants();
  REQUIRE(plot.front.size() == 3);
  CHECK_THAT(front_svg(plot), Contains("&lt;seed 1&gt; &amp; &quot;quotes&quot; &apos;too&apos;"));
  auto single = single_variant();
  single.variants.push_back(evolved_variant(8, std::nan(""), 0.1, 1));
  CHECK(front_svg(single).find("nan") == std::string::npos);
}

TEST_CASE("the front plot is XML with one point per front member and the original marked", "[facade][gevo]") {
  if (!std::filesystem::exists("/usr/bin/python3")) SKIP_TEST("no /usr/bin/python3 to parse the SVG");
  auto plot = five_variants();
  REQUIRE(plot.front.size() == 3);
  CHECK(parsed_counts(front_svg(plot)) == "3 5 1\n" + plot.title + "\n");

  // Without an original, one variant, a front of one: still a document, nothing marked.
  auto single = single_variant();
  CHECK(parsed_counts(front_svg(single)) == "1 1 0\none\n");

  // Non-finite points are left out: the document still parses.
  single.variants.push_back(evolved_variant(8, std::nan(""), 0.1, 1));
  CHECK(parsed_counts(front_svg(single)) == "1 1 0\none\n");
}
