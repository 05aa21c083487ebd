// render_svg (plot/svg_plot.h): refuses figures it cannot draw, escapes
// text, and marks a value beyond the y range instead of drawing it off the panel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "plot/svg_plot.h"

namespace attncheck {
namespace {

PlotFigure one_panel() {
  // Aggregate initialisation, not assignment of short literals: GCC 12 warns
  // falsely (-Wrestrict) on the inlined assignment.
  PlotFigure f{std::string("t"), std::string(), std::string("head_dim"), {16, 32, 64}, {}, {}};
  PlotPanel p{std::string("p"), std::string(), true, 0.01, 10, {}, {}, {}, {}};
  p.log_y = true;
  p.y_min = 0.01;
  p.y_max = 10;
  p.y_ticks = {0.01, 0.1, 1, 10};
  p.series.push_back({"a<b & c", "#1f77b4", false, {16, 32, 64}, {1, NAN, 1e-5}});
  f.panels.push_back(p);
  return f;
}

TEST(SvgPlot, RefusesWhatItCannotDraw) {
  PlotFigure f = one_panel();
  f.x_ticks = {16};
  EXPECT_THROW(render_svg(f), std::invalid_argument);
  f = one_panel();
  f.x_ticks = {16, 0, 64};
  EXPECT_THROW(render_svg(f), std::invalid_argument);
  f = one_panel();
  f.panels[0].y_min = 0;  // a log axis from 0
  EXPECT_THROW(render_svg(f), std::invalid_argument);
  f.panels.clear();
  EXPECT_THROW(render_svg(f), std::invalid_argument);
}

TEST(SvgPlot, EscapesTextAndMarksValuesBeyondTheAxis) {
  const std::string svg = render_svg(one_panel());
  EXPECT_NE(svg.find("a&lt;b &amp; c"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  // 1: a circle; NaN: no point; 1e-5 below 0.01: a triangle on the axis.
  size_t circles = 0, triangles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  for (size_t at = svg.find("<polygon"); at != std::string::npos; at = svg.find("<polygon", at + 1)) ++triangles;
  EXPECT_EQ(circles, 2u);  // the point, and the legend's marker
  EXPECT_EQ(triangles, 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

}  // namespace
}  // namespace attncheck
