#pragma once
// The NCCL bus-bandwidth plot: inline SVG, drawn here, no script or font.
// x: message size on a log2 scale, labelled in bytes ("8 B" ... "8 GiB");
// y: bus bandwidth in GB/s from 0. One polyline per run, each in its own
// colour (series_colour), with a legend in the plot's top left corner.
// Any double is safe: NaN and negative bandwidths draw at 0, and the y axis
// stays within 0.001 .. 1e12 GB/s, so no value makes it infinite or zero
// (the report clamps far lower, and says so: verdict.hpp k_max_bus_bw).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gb::report {

struct PlotSeries {
  std::string label;
  std::vector<std::pair<std::uint64_t, double>> points;  // bytes (> 0), GB/s
};

struct Tick {
  double value;
  std::string label;
};

// "8 B", "64 KiB", "8 GiB"; a size that is no whole number of its unit reads
// like "1.5 KiB".
std::string size_label(std::uint64_t bytes);

// The x axis: log2 of its ends, labels every `step` doublings from `lo`.
struct SizeAxis {
  int lo = 3, hi = 33, step = 3;
};
SizeAxis size_axis(std::uint64_t min_bytes, std::uint64_t max_bytes);
std::vector<Tick> size_ticks(const SizeAxis& axis);  // value: bytes

// The y axis: 0 to `top` in steps of 1, 2, 2.5 or 5 times a power of ten.
struct ValueAxis {
  double top = 1, step = 0.2;
};
ValueAxis value_axis(double max);
std::vector<Tick> value_ticks(const ValueAxis& axis);

// Where the data lands in the SVG's user units.
struct PlotFrame {
  double left = 72, top = 16, width = 700, height = 360;
  SizeAxis x_axis;
  ValueAxis y_axis;
  double x(double bytes) const;
  double y(double gbps) const;
};
PlotFrame plot_frame(const std::vector<PlotSeries>& series);

// The colour of series n ("#rrggbb"), distinct from the report's other colours.
const char* series_colour(std::size_t n);

// The whole <svg> element. Each series is a <polyline data-run="N"
// points="x,y ..."> in its colour, its points in ascending size. Labels are
// HTML-escaped here.
std::string bus_bw_svg(const std::vector<PlotSeries>& series);

}  // namespace gb::report
