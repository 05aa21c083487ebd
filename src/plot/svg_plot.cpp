#include "plot/svg_plot.h"

#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace attncheck {
namespace {

// Layout, in SVG user units (pixels at 100%).
constexpr double kPanelWidth = 400, kPanelHeight = 280;
constexpr double kLeft = 80, kPanelGap = 110, kTop = 112, kBottomSpace = 70, kRight = 40;
constexpr double kNoteLine = 16;

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v;
  return s.str();
}

// A tick label: 1024, 0.5, 1e-06.
std::string tick_text(double v) {
  std::ostringstream s;
  if (v != 0 && (std::abs(v) < 1e-2 || std::abs(v) >= 1e5)) {
    s << std::setprecision(0) << std::scientific << v;
    std::string t = s.str();  // "1e-04": drop the exponent's leading zero
    const auto e = t.find('e');
    if (e != std::string::npos && e + 2 < t.size() && t[e + 2] == '0') t.erase(e + 2, 1);
    return t;
  }
  s << std::setprecision(4) << v;
  return s.str();
}

struct Axis {
  double lo, hi, pixel_lo, pixel_hi;  // pixel_lo is where lo is drawn
  bool log;
  double at(double v) const {
    const double t = log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return pixel_lo + t * (pixel_hi - pixel_lo);
  }
};

void text(std::ostringstream& o, double x, double y, const std::string& s, const char* anchor, int size,
          const char* extra = "") {
  o << "<text x=\"" << fixed(x) << "\" y=\"" << fixed(y) << "\" text-anchor=\"" << anchor << "\" font-size=\"" << size
    << "\"" << extra << ">" << escaped(s) << "</text>\n";
}

void panel_svg(std::ostringstream& o, const PlotPanel& p, const std::vector<double>& x_ticks,
               const std::string& x_label, double left) {
  const double top = kTop, bottom = kTop + kPanelHeight, right = left + kPanelWidth;
  const Axis xa{x_ticks.front(), x_ticks.back(), left, right, true};
  const Axis ya{p.y_min, p.y_max, bottom, top, p.log_y};
  auto clamp_y = [&](double v) { return v < p.y_min ? p.y_min : v > p.y_max ? p.y_max : v; };

  text(o, (left + right) / 2, top - 12, p.title, "middle", 15, " font-weight=\"bold\"");
  for (const PlotBand& b : p.bands) {
    const double y1 = ya.at(clamp_y(b.hi)), y2 = ya.at(clamp_y(b.lo));
    o << "<rect x=\"" << fixed(left) << "\" y=\"" << fixed(y1) << "\" width=\"" << fixed(kPanelWidth)
      << "\" height=\"" << fixed(y2 - y1) << "\" fill=\"#2ca02c\" fill-opacity=\"0.10\"/>\n";
  }
  // Grid and ticks.
  for (double t : p.y_ticks) {
    const double y = ya.at(t);
    o << "<line x1=\"" << fixed(left) << "\" y1=\"" << fixed(y) << "\" x2=\"" << fixed(right) << "\" y2=\"" << fixed(y)
      << "\" stroke=\"#dddddd\"/>\n";
    text(o, left - 7, y + 4, tick_text(t), "end", 12);
  }
  for (double t : x_ticks) {
    const double x = xa.at(t);
    o << "<line x1=\"" << fixed(x) << "\" y1=\"" << fixed(top) << "\" x2=\"" << fixed(x) << "\" y2=\"" << fixed(bottom)
      << "\" stroke=\"#eeeeee\"/>\n";
    o << "<line x1=\"" << fixed(x) << "\" y1=\"" << fixed(bottom) << "\" x2=\"" << fixed(x) << "\" y2=\""
      << fixed(bottom + 5) << "\" stroke=\"#333333\"/>\n";
    text(o, x, bottom + 19, tick_text(t), "middle", 12);
  }
  for (const PlotBand& b : p.bands)  // labels over the grid, inside the band at its lower edge
    text(o, left + 6, ya.at(clamp_y(b.lo)) - 4, b.label, "start", 11, " fill=\"#2a7a2a\"");
  for (const PlotGuide& g : p.guides) {
    const double y = ya.at(clamp_y(g.y));
    o << "<line x1=\"" << fixed(left) << "\" y1=\"" << fixed(y) << "\" x2=\"" << fixed(right) << "\" y2=\"" << fixed(y)
      << "\" stroke=\"#777777\" stroke-dasharray=\"2,3\"/>\n";
    text(o, right - 4, y - 5, g.label, "end", 11, " fill=\"#555555\"");
  }
  // Axes.
  o << "<rect x=\"" << fixed(left) << "\" y=\"" << fixed(top) << "\" width=\"" << fixed(kPanelWidth) << "\" height=\""
    << fixed(kPanelHeight) << "\" fill=\"none\" stroke=\"#333333\"/>\n";
  text(o, (left + right) / 2, bottom + 42, x_label, "middle", 13);
  const double ly = (top + bottom) / 2, lx = left - 52;
  o << "<text x=\"" << fixed(lx) << "\" y=\"" << fixed(ly) << "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 "
    << fixed(lx) << " " << fixed(ly) << ")\">" << escaped(p.y_label) << "</text>\n";
  // Series: a polyline through the points, a marker at each; a value outside
  // the y range is drawn at the edge as a triangle pointing the way it went.
  for (const PlotSeries& s : p.series) {
    std::ostringstream pts;
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      if (std::isnan(s.y[k])) continue;
      pts << fixed(xa.at(s.x[k])) << "," << fixed(ya.at(clamp_y(s.y[k]))) << " ";
    }
    o << "<polyline points=\"" << pts.str() << "\" fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2.5\""
      << (s.dashed ? " stroke-dasharray=\"7,4\"" : "") << "/>\n";
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      if (std::isnan(s.y[k])) continue;
      const double x = xa.at(s.x[k]), y = ya.at(clamp_y(s.y[k]));
      if (s.y[k] < p.y_min || s.y[k] > p.y_max) {
        const double d = s.y[k] < p.y_min ? 1 : -1;  // points down below the axis, up above it
        o << "<polygon points=\"" << fixed(x - 6) << "," << fixed(y - 5 * d) << " " << fixed(x + 6) << ","
          << fixed(y - 5 * d) << " " << fixed(x) << "," << fixed(y + 6 * d) << "\" fill=\"" << s.color << "\"/>\n";
      } else {
        o << "<circle cx=\"" << fixed(x) << "\" cy=\"" << fixed(y) << "\" r=\"4\" fill=\"" << s.color << "\"/>\n";
      }
    }
  }
}

}  // namespace

std::string render_svg(const PlotFigure& f) {
  if (f.panels.empty()) throw std::invalid_argument("render_svg: the figure has no panel");
  if (f.x_ticks.size() < 2) throw std::invalid_argument("render_svg: the x axis needs at least two ticks");
  for (size_t k = 0; k < f.x_ticks.size(); ++k)
    if (!(f.x_ticks[k] > 0) || (k > 0 && !(f.x_ticks[k] > f.x_ticks[k - 1])))
      throw std::invalid_argument("render_svg: x ticks must be positive and increasing");
  for (const PlotPanel& p : f.panels)
    if (!(p.y_max > p.y_min) || (p.log_y && !(p.y_min > 0)))
      throw std::invalid_argument("render_svg: panel '" + p.title + "' has an empty y range" +
                                  (p.log_y ? " (a logarithmic axis needs y_min > 0)" : ""));

  const double n = static_cast<double>(f.panels.size());
  const double width = kLeft + n * kPanelWidth + (n - 1) * kPanelGap + kRight;
  const double height = kTop + kPanelHeight + kBottomSpace + kNoteLine * static_cast<double>(f.notes.size()) + 10;
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << fixed(width) << "\" height=\""
    << fixed(height) << "\" viewBox=\"0 0 " << fixed(width) << " " << fixed(height)
    << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  text(o, width / 2, 26, f.title, "middle", 18, " font-weight=\"bold\"");
  text(o, width / 2, 46, f.subtitle, "middle", 12, " fill=\"#444444\"");

  // One legend for the figure: every series name once, in order of appearance.
  std::vector<const PlotSeries*> legend;
  for (const PlotPanel& p : f.panels)
    for (const PlotSeries& s : p.series) {
      bool seen = false;
      for (const PlotSeries* l : legend) seen = seen || l->name == s.name;
      if (!seen) legend.push_back(&s);
    }
  double entry_width = 0;
  for (const PlotSeries* s : legend) entry_width += 44 + 7.5 * static_cast<double>(s->name.size());
  double lx = (width - entry_width) / 2;
  for (const PlotSeries* s : legend) {
    o << "<line x1=\"" << fixed(lx) << "\" y1=\"68\" x2=\"" << fixed(lx + 26) << "\" y2=\"68\" stroke=\"" << s->color
      << "\" stroke-width=\"2.5\"" << (s->dashed ? " stroke-dasharray=\"7,4\"" : "") << "/>\n";
    o << "<circle cx=\"" << fixed(lx + 13) << "\" cy=\"68\" r=\"4\" fill=\"" << s->color << "\"/>\n";
    text(o, lx + 32, 72, s->name, "start", 13);
    lx += 44 + 7.5 * static_cast<double>(s->name.size());
  }

  for (size_t k = 0; k < f.panels.size(); ++k)
    panel_svg(o, f.panels[k], f.x_ticks, f.x_label, kLeft + static_cast<double>(k) * (kPanelWidth + kPanelGap));
  double ny = kTop + kPanelHeight + kBottomSpace;
  for (const std::string& note : f.notes) {
    text(o, kLeft - 50, ny, note, "start", 11, " fill=\"#444444\"");
    ny += kNoteLine;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace attncheck
