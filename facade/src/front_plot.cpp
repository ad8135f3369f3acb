// The plot of program-edit evolution's result: an SVG written here, with no
// plotting library (docs/gevo.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tune/engine/program_edit.hpp"
#include "tune/tune.hpp"

namespace tune {

namespace {

// Plot area inside a 720 x 480 picture.
constexpr double width = 720, height = 480, left = 80, right = 24, top = 48, bottom = 64;

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

std::string coordinate(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

struct axis {
  double low = 0, high = 1;
  // From the values, with 5% room on each side (a range of 0 gets ±1 or ±10%).
  static axis of(const std::vector<double>& values) {
    axis a;
    if (values.empty()) return a;
    a.low = *std::min_element(values.begin(), values.end());
    a.high = *std::max_element(values.begin(), values.end());
    double span = a.high - a.low;
    if (span <= 0) span = a.low != 0 ? std::fabs(a.low) * 0.2 : 2.0;
    a.low -= span * 0.05;
    a.high += span * 0.05;
    return a;
  }
  double fraction(double v) const { return (v - low) / (high - low); }
};

std::string point_title(const trial_info& t, const std::string& what) {
  return what + " trial " + std::to_string(t.seq) + ": " + number(t.time_ms) + " ms, error " + number(t.objectives[1]) +
         ", " + std::to_string(edit_count(t.config)) + " edits";
}

// Text as XML character data or an attribute value.
std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters other than tab and newline are not XML: dropped.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

}  // namespace

std::string front_svg(const evolution_plot& plot) {
  auto usable = [](const trial_info& t) {
    return t.objectives.size() >= 2 && std::isfinite(t.time_ms) && std::isfinite(t.objectives[1]);
  };
  std::vector<double> xs, ys;
  auto add = [&](const trial_info& t) {
    if (!usable(t)) return;
    xs.push_back(t.time_ms);
    ys.push_back(t.objectives[1]);
  };
  for (auto& t : plot.variants) add(t);
  for (auto& t : plot.front) add(t);
  if (plot.original) add(*plot.original);
  auto ax = axis::of(xs), ay = axis::of(ys);
  const double w = width - left - right, h = height - top - bottom;
  auto px = [&](double v) { return coordinate(left + ax.fraction(v) * w); };
  auto py = [&](double v) { return coordinate(top + (1 - ay.fraction(v)) * h); };

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<title>" << xml_escape(plot.title) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"28\" font-size=\"15\">" << xml_escape(plot.title) << "</text>\n";
  // Axes with five ticks each.
  svg << "<g class=\"axes\" stroke=\"black\">\n<line x1=\"" << left << "\" y1=\"" << top + h << "\" x2=\"" << left + w
      << "\" y2=\"" << top + h << "\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
      << top + h << "\"/>\n</g>\n<g class=\"ticks\" fill=\"black\">\n";
  for (int i = 0; i <= 4; ++i) {
    double vx = ax.low + (ax.high - ax.low) * i / 4, vy = ay.low + (ay.high - ay.low) * i / 4;
    svg << "<text x=\"" << px(vx) << "\" y=\"" << top + h + 18 << "\" text-anchor=\"middle\">" << number(vx)
        << "</text>\n<text x=\"" << left - 6 << "\" y=\"" << py(vy) << "\" text-anchor=\"end\">" << number(vy)
        << "</text>\n";
  }
  svg << "</g>\n<text x=\"" << left + w / 2 << "\" y=\"" << height - 16 << "\" text-anchor=\"middle\">"
      << xml_escape(plot.x_label) << "</text>\n<text transform=\"translate(18 " << top + h / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(plot.y_label) << "</text>\n";

  svg << "<g class=\"variants\" fill=\"#b0b0b0\">\n";
  for (auto& t : plot.variants)
    if (usable(t))
      svg << "<circle class=\"variant\" cx=\"" << px(t.time_ms) << "\" cy=\"" << py(t.objectives[1])
          << "\" r=\"3\"><title>" << xml_escape(point_title(t, "variant")) << "</title></circle>\n";
  svg << "</g>\n";

  // The front as a staircase (fastest first: error falls as time grows), then its points.
  std::vector<const trial_info*> front;
  for (auto& t : plot.front)
    if (usable(t)) front.push_back(&t);
  std::sort(front.begin(), front.end(), [](auto* a, auto* b) { return a->time_ms < b->time_ms; });
  if (front.size() > 1) {
    svg << "<polyline class=\"front-line\" fill=\"none\" stroke=\"#1f77b4\" points=\"";
    for (std::size_t i = 0; i < front.size(); ++i) {
      if (i > 0) svg << px(front[i]->time_ms) << "," << py(front[i - 1]->objectives[1]) << " ";
      svg << px(front[i]->time_ms) << "," << py(front[i]->objectives[1]) << " ";
    }
    svg << "\"/>\n";
  }
  svg << "<g class=\"front\" fill=\"#1f77b4\">\n";
  for (auto* t : front)
    svg << "<circle class=\"front-point\" cx=\"" << px(t->time_ms) << "\" cy=\"" << py(t->objectives[1])
        << "\" r=\"5\"><title>" << xml_escape(point_title(*t, "front")) << "</title></circle>\n";
  svg << "</g>\n";

  if (plot.original && usable(*plot.original)) {
    auto& o = *plot.original;
    double cx = left + ax.fraction(o.time_ms) * w, cy = top + (1 - ay.fraction(o.objectives[1])) * h;
    svg << "<g class=\"original\">\n<path class=\"original-point\" fill=\"#d62728\" d=\"M" << coordinate(cx) << " "
        << coordinate(cy - 8) << " L" << coordinate(cx + 8) << " " << coordinate(cy) << " L" << coordinate(cx) << " "
        << coordinate(cy + 8) << " L" << coordinate(cx - 8) << " " << coordinate(cy) << " Z\"><title>"
        << xml_escape(point_title(o, "original")) << "</title></path>\n<text x=\"" << coordinate(cx + 10) << "\" y=\""
        << coordinate(cy - 10) << "\" fill=\"#d62728\">original</text>\n</g>\n";
  }
  // Legend.
  svg << "<g class=\"legend\">\n<circle cx=\"" << width - 200 << "\" cy=\"24\" r=\"3\" fill=\"#b0b0b0\"/><text x=\""
      << width - 192 << "\" y=\"28\">variant</text>\n<circle cx=\"" << width - 136
      << "\" cy=\"24\" r=\"5\" fill=\"#1f77b4\"/><text x=\"" << width - 128 << "\" y=\"28\">front</text>\n<text x=\""
      << width - 80 << "\" y=\"28\" fill=\"#d62728\">&#9670; original</text>\n</g>\n</svg>\n";
  return svg.str();
}

}  // namespace tune
