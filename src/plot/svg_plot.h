// Line charts written directly as SVG, for `attncheck sensitivity`: panels
// side by side over one logarithmic x axis, each with its own y axis (linear
// or logarithmic), ticks, labels, reference lines and bands, and one legend
// for the whole figure. No plotting dependency: the output is plain SVG 1.1
// text that browsers, GitHub and rsvg-convert render.
//
// Example usage:
//   PlotFigure f;  f.title = "...";  f.x_label = "head_dim";  f.x_ticks = {16, 32, 64};
//   PlotPanel p;  p.title = "entropy";  p.y_min = 0;  p.y_max = 3;  p.y_ticks = {0, 1, 2, 3};
//   p.series.push_back({"reference", "#1f77b4", false, {16, 32, 64}, {2.1, 2.1, 2.1}});
//   f.panels.push_back(p);
//   write_text_file("plot.svg", render_svg(f));
#pragma once

#include <string>
#include <vector>

namespace attncheck {

struct PlotSeries {
  std::string name, color;  // color: an SVG colour ("#1f77b4")
  bool dashed = false;
  std::vector<double> x, y;  // same length; a NaN y is a gap (no point)
};

// A horizontal reference line, labelled at its right end.
struct PlotGuide {
  double y = 0;
  std::string label;
};

// A shaded horizontal band lo..hi, labelled at its left end.
struct PlotBand {
  double lo = 0, hi = 0;
  std::string label;
};

struct PlotPanel {
  std::string title, y_label;
  bool log_y = false;
  double y_min = 0, y_max = 1;  // values outside are drawn at the edge as a triangle pointing out
  std::vector<double> y_ticks;
  std::vector<PlotSeries> series;
  std::vector<PlotGuide> guides;
  std::vector<PlotBand> bands;
};

struct PlotFigure {
  std::string title, subtitle, x_label;
  std::vector<double> x_ticks;  // logarithmic x axis from the first to the last tick (all > 0)
  std::vector<PlotPanel> panels;
  std::vector<std::string> notes;  // lines under the panels
};

// The figure as an SVG document. Throws std::invalid_argument for an empty
// figure, x ticks that are not positive and increasing, or a panel whose
// y range is empty (or not positive on a logarithmic axis).
std::string render_svg(const PlotFigure& figure);

}  // namespace attncheck
