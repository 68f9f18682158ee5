#include "report/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/progress.hpp"
#include "report/report.hpp"

namespace gb::report {

namespace {

// Numbers in SVG attributes: two decimals are finer than a pixel.
std::string coord(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// <line> from (x1, y1) to (x2, y2), then `rest` (its stroke).
std::string svg_line(double x1, double y1, double x2, double y2, const std::string& rest) {
  return "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" + coord(y2) + "\" " + rest + "/>\n";
}

int floor_log2(std::uint64_t v) {
  int e = 0;
  while (v >>= 1) ++e;
  return e;
}

int ceil_log2(std::uint64_t v) {
  int e = floor_log2(v);
  return (std::uint64_t{1} << e) == v ? e : e + 1;
}

constexpr int k_max_exponent = 62;  // ticks stay below 2^63 bytes
constexpr int k_max_size_labels = 12;
constexpr double k_min_top = 1e-3, k_max_top = 1e12;  // GB/s

// A value the y axis can place: NaN and negatives at 0, the rest at most k_max_top.
double on_axis(double gbps) { return std::isnan(gbps) ? 0 : std::clamp(gbps, 0.0, k_max_top); }

}  // namespace

std::string size_label(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  std::uint64_t v = bytes;
  while (u < 6 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  if (v >= 1024) return human_bytes(bytes);  // not a whole number of a larger unit
  return std::to_string(v) + " " + units[u];
}

SizeAxis size_axis(std::uint64_t min_bytes, std::uint64_t max_bytes) {
  SizeAxis a;
  a.lo = std::min(floor_log2(std::max<std::uint64_t>(min_bytes, 1)), k_max_exponent - 1);
  a.hi = std::clamp(ceil_log2(std::max<std::uint64_t>(max_bytes, 1)), a.lo + 1, k_max_exponent);
  int span = a.hi - a.lo;
  a.step = (span + k_max_size_labels - 2) / (k_max_size_labels - 1);  // at most 12 labels
  // The right end on a label when there is room.
  int aligned = a.lo + (span + a.step - 1) / a.step * a.step;
  if (aligned <= k_max_exponent) a.hi = aligned;
  return a;
}

std::vector<Tick> size_ticks(const SizeAxis& axis) {
  std::vector<Tick> ticks;
  for (int e = axis.lo; e <= axis.hi; e += axis.step) {
    std::uint64_t bytes = std::uint64_t{1} << e;
    ticks.push_back({static_cast<double>(bytes), size_label(bytes)});
  }
  return ticks;
}

ValueAxis value_axis(double max) {
  if (!(max > 0) || !std::isfinite(max)) max = 1;
  // Within what the arithmetic below keeps finite: a denormal top would make
  // the step 0, a top near DBL_MAX round up to infinity.
  max = std::clamp(max, k_min_top, k_max_top);
  double raw = max / 5;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / magnitude;
  double nice = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10;
  ValueAxis a;
  a.step = nice * magnitude;
  a.top = std::ceil(max / a.step - 1e-9) * a.step;
  return a;
}

std::vector<Tick> value_ticks(const ValueAxis& axis) {
  // Enough decimals for the step: 0.25 needs two, 50 none.
  int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(axis.step) + 1e-9)));
  if (std::fabs(axis.step * std::pow(10.0, decimals) - std::round(axis.step * std::pow(10.0, decimals))) > 1e-6) ++decimals;
  std::vector<Tick> ticks;
  int n = static_cast<int>(std::lround(axis.top / axis.step));
  for (int i = 0; i <= n; ++i) {
    double v = i * axis.step;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    ticks.push_back({v, buf});
  }
  return ticks;
}

double PlotFrame::x(double bytes) const { return left + (std::log2(bytes) - x_axis.lo) / (x_axis.hi - x_axis.lo) * width; }
double PlotFrame::y(double gbps) const { return top + height - std::min(on_axis(gbps), y_axis.top) / y_axis.top * height; }

PlotFrame plot_frame(const std::vector<PlotSeries>& series) {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  double max = 0;
  for (const auto& s : series)
    for (const auto& [bytes, gbps] : s.points) {
      lo = std::min(lo, bytes);
      hi = std::max(hi, bytes);
      max = std::max(max, on_axis(gbps));
    }
  PlotFrame f;
  if (hi > 0) f.x_axis = size_axis(lo, hi);
  f.y_axis = value_axis(max);
  return f;
}

const char* series_colour(std::size_t n) {
  // Saturated and far from the page's greys, greens and reds, so a
  // screenshot can find each line by its colour.
  static const char* colours[] = {"#1c7ed6", "#e8590c", "#9c36b5", "#0ca678", "#f59f00", "#d6336c", "#5c940d", "#364fc7"};
  return colours[n % (sizeof colours / sizeof colours[0])];
}

std::string bus_bw_svg(const std::vector<PlotSeries>& series) {
  PlotFrame f = plot_frame(series);
  const double width = f.left + f.width + 24, height = f.top + f.height + 52;
  const double bottom = f.top + f.height, right = f.left + f.width;
  std::string s = "<svg class=\"plot\" viewBox=\"0 0 " + coord(width) + " " + coord(height) + "\" width=\"" + coord(width) +
                  "\" height=\"" + coord(height) + "\" role=\"img\" aria-label=\"NCCL bus bandwidth against message size\">\n";
  s += "<rect class=\"plot-area\" x=\"" + coord(f.left) + "\" y=\"" + coord(f.top) + "\" width=\"" + coord(f.width) + "\" height=\"" +
       coord(f.height) + "\" fill=\"#f4f6f9\"/>\n";
  // Grid: a faint line at every doubling, a darker one at each label.
  for (int e = f.x_axis.lo; e <= f.x_axis.hi; ++e) {
    double x = f.x(std::ldexp(1.0, e));
    bool labelled = (e - f.x_axis.lo) % f.x_axis.step == 0;
    s += svg_line(x, f.top, x, bottom, std::string("stroke=\"") + (labelled ? "#ced4da" : "#e4e7eb") + "\" stroke-width=\"1\"");
  }
  for (const auto& t : size_ticks(f.x_axis)) {
    double x = f.x(t.value);
    s += svg_line(x, bottom, x, bottom + 5, "stroke=\"#495057\"");
    s += "<text x=\"" + coord(x) + "\" y=\"" + coord(bottom + 19) + "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#343a40\">" +
         html_escape(t.label) + "</text>\n";
  }
  for (const auto& t : value_ticks(f.y_axis)) {
    double y = f.y(t.value);
    s += svg_line(f.left, y, right, y, "stroke=\"#dee2e6\" stroke-width=\"1\"");
    s += "<text x=\"" + coord(f.left - 8) + "\" y=\"" + coord(y + 4) + "\" text-anchor=\"end\" font-size=\"12\" fill=\"#343a40\">" +
         html_escape(t.label) + "</text>\n";
  }
  s += "<path d=\"M" + coord(f.left) + " " + coord(f.top) + "V" + coord(bottom) + "H" + coord(right) +
       "\" fill=\"none\" stroke=\"#495057\" stroke-width=\"1.5\"/>\n";
  s += "<text x=\"" + coord(f.left + f.width / 2) + "\" y=\"" + coord(height - 8) +
       "\" text-anchor=\"middle\" font-size=\"13\" fill=\"#212529\">message size (bytes, log2 scale)</text>\n";
  s += "<text transform=\"translate(16 " + coord(f.top + f.height / 2) +
       ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" fill=\"#212529\">bus bandwidth (GB/s)</text>\n";
  // The runs: points in ascending size.
  for (std::size_t n = 0; n < series.size(); ++n) {
    auto points = series[n].points;
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string list;
    for (const auto& [bytes, gbps] : points) list += (list.empty() ? "" : " ") + coord(f.x(static_cast<double>(bytes))) + "," + coord(f.y(gbps));
    const char* colour = series_colour(n);
    s += "<polyline class=\"run\" data-run=\"" + std::to_string(n) + "\" points=\"" + list + "\" fill=\"none\" stroke=\"" + colour +
         "\" stroke-width=\"3\" stroke-linejoin=\"round\" stroke-linecap=\"round\"/>\n";
    for (const auto& [bytes, gbps] : points)
      s += "<circle cx=\"" + coord(f.x(static_cast<double>(bytes))) + "\" cy=\"" + coord(f.y(gbps)) + "\" r=\"3.5\" fill=\"" + colour + "\"/>\n";
  }
  // Legend in the top left corner, where bus bandwidth curves are low.
  if (!series.empty()) {
    double lx = f.left + 12, ly = f.top + 12, line_h = 20;
    std::size_t longest = 0;
    for (const auto& ser : series) longest = std::max(longest, ser.label.size());
    double box_w = std::min(f.width - 24, 44 + 7.2 * static_cast<double>(longest));
    s += "<rect x=\"" + coord(lx) + "\" y=\"" + coord(ly) + "\" width=\"" + coord(box_w) + "\" height=\"" +
         coord(8 + line_h * static_cast<double>(series.size())) + "\" fill=\"#ffffff\" fill-opacity=\"0.9\" stroke=\"#ced4da\"/>\n";
    for (std::size_t n = 0; n < series.size(); ++n) {
      double y = ly + 4 + line_h * static_cast<double>(n) + line_h / 2;
      s += svg_line(lx + 8, y, lx + 32, y, std::string("stroke=\"") + series_colour(n) + "\" stroke-width=\"3\"");
      s += "<text x=\"" + coord(lx + 38) + "\" y=\"" + coord(y + 4) + "\" font-size=\"12\" fill=\"#212529\">" + html_escape(series[n].label) +
           "</text>\n";
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace gb::report
