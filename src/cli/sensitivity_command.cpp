#include "cli/sensitivity_command.h"

#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>

#include "run/dtype_probe.h"
#include "cli/python_targets.h"
#include "cli/sensitivity_sweep.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "plot/svg_plot.h"
#include "host/plugin_host.h"
#include "report/run_report.h"

namespace attncheck {
namespace {

struct Curve {
  std::string name, source;
  std::vector<SweepPoint> points;
};

const char* color_of(const std::string& name, size_t k) {
  if (name == "reference") return "#1f77b4";
  if (name == "seed_unscaled" || name == "seed_layer") return "#d62728";
  static const char* palette[] = {"#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  return palette[k % std::size(palette)];
}

std::string csv_text(const std::vector<Curve>& curves) {
  std::ostringstream o;
  o << std::setprecision(10);
  o << "implementation,source,head_dim,query_sensitivity,entropy_nats,exact_entropy_nats,rows,note\n";
  for (const Curve& c : curves)
    for (const SweepPoint& p : c.points) {
      o << c.name << "," << c.source << "," << p.head_dim << ",";
      if (p.error.empty())
        o << p.sensitivity << "," << p.entropy << "," << p.exact_entropy << "," << p.rows << ",\n";
      else
        o << ",,,0,\"" << p.error << "\"\n";  // the reason, quoted: it may hold commas
    }
  return o.str();
}

// Decades covering every measured sensitivity and 1 (exact), at most 1e-8..1e4.
void sensitivity_range(const std::vector<Curve>& curves, PlotPanel& panel) {
  double lo = 0.1, hi = 10;
  for (const Curve& c : curves)
    for (const SweepPoint& p : c.points)
      if (p.error.empty() && p.sensitivity > 0) {
        lo = std::min(lo, p.sensitivity);
        hi = std::max(hi, p.sensitivity);
      }
  const int e_lo = std::max(-8, static_cast<int>(std::floor(std::log10(lo)))),
            e_hi = std::min(4, static_cast<int>(std::ceil(std::log10(hi))));
  panel.y_min = std::pow(10.0, e_lo);
  panel.y_max = std::pow(10.0, e_hi);
  const int step = (e_hi - e_lo) > 6 ? 2 : 1;
  for (int e = e_hi; e >= e_lo; e -= step) panel.y_ticks.insert(panel.y_ticks.begin(), std::pow(10.0, e));
}

PlotFigure figure_of(const std::vector<Curve>& curves, const std::string& command, DType dtype) {
  PlotFigure f;
  f.title = "The founding symptom: does the output still follow the query?";
  std::ostringstream sub;
  sub << "unit-Gaussian q, k, v (" << dtype_name(dtype) << "); q_len " << kSensitivityQLen << ", kv_len "
      << kSensitivityKvLen << ", " << kSensitivityProblems << " problems per point; seed " << kSensitivitySeed;
  f.subtitle = sub.str();
  f.x_label = "head_dim (log scale)";
  for (int64_t d : sensitivity_head_dims()) f.x_ticks.push_back(static_cast<double>(d));

  PlotPanel sens;
  sens.title = "query sensitivity (the query_sensitivity law's ratio)";
  sens.y_label = "|change of out| / |change of exact out|, median";
  sens.log_y = true;
  sensitivity_range(curves, sens);
  sens.bands.push_back({0.5, 2, "the law's allowed band 0.5..2"});
  sens.guides.push_back({1, "exact attention: 1"});
  PlotPanel ent;
  ent.title = "entropy of the attention weights";
  ent.y_label = "entropy (nats), mean over rows";
  ent.y_min = 0;
  ent.y_max = 3;
  ent.y_ticks = {0, 0.5, 1, 1.5, 2, 2.5, 3};
  ent.guides.push_back({std::log(static_cast<double>(kSensitivityKvLen)),
                        "uniform over " + std::to_string(kSensitivityKvLen) + " keys"});
  for (size_t k = 0; k < curves.size(); ++k) {
    PlotSeries s{curves[k].name, color_of(curves[k].name, k), false, {}, {}};
    PlotSeries e = s;
    for (const SweepPoint& p : curves[k].points) {
      s.x.push_back(static_cast<double>(p.head_dim));
      e.x.push_back(static_cast<double>(p.head_dim));
      s.y.push_back(p.error.empty() ? p.sensitivity : NAN);
      e.y.push_back(p.error.empty() ? p.entropy : NAN);
    }
    sens.series.push_back(std::move(s));
    ent.series.push_back(std::move(e));
  }
  // Exact attention's entropy, from the first curve's problems (the same problems for every curve).
  PlotSeries exact{"exact attention", "#555555", true, {}, {}};
  for (const SweepPoint& p : curves.front().points) {
    exact.x.push_back(static_cast<double>(p.head_dim));
    exact.y.push_back(p.error.empty() ? p.exact_entropy : NAN);
  }
  ent.series.push_back(std::move(exact));
  f.panels = {std::move(sens), std::move(ent)};
  bool clamped = false;
  for (const PlotPanel& p : f.panels)
    for (const PlotSeries& s : p.series)
      for (double y : s.y) clamped = clamped || y < p.y_min || y > p.y_max;
  if (clamped)
    f.notes.push_back("A triangle on an axis edge: the value lies beyond it (the output did not move at all, or far more).");
  f.notes.push_back("Made by: " + command);
  return f;
}

}  // namespace

int run_sensitivity(const SensitivityArgs& a, std::ostream& out, std::ostream& err) {
  if (a.svg.empty()) {
    err << "attncheck sensitivity: --svg FILE is required\n";
    return 2;
  }
  std::vector<std::string> impls = a.impls;
  if (impls.empty() && a.plugins.empty() && a.pythons.empty()) impls = {"reference", "seed_unscaled"};
  std::vector<std::unique_ptr<Implementation>> targets;
  std::string command = a.program + " sensitivity";
  for (const std::string& name : impls) {
    std::unique_ptr<Implementation> impl = make_builtin(name);
    if (!impl) {
      std::string names;
      for (const BuiltinInfo& b : builtins()) names += (names.empty() ? "" : ", ") + std::string(b.name);
      err << "attncheck sensitivity: unknown implementation '" << name << "'; the built-ins are: " << names
          << " (or load your own with --plugin PATH)\n";
      return 2;
    }
    targets.push_back(std::move(impl));
    command += " --impl " + name;
  }
  for (const std::string& path : a.plugins) {
    std::string error;
    std::unique_ptr<Implementation> impl = load_plugin(path, PluginOptions{}, error);
    if (!impl) {
      err << "attncheck sensitivity: " << (error.empty() ? "cannot load plugin " + path : error) << "\n";
      return 2;
    }
    targets.push_back(std::move(impl));
    command += " --plugin " + path;
  }
  for (const std::string& target : a.pythons) {
    std::string error;
    if (const std::string bad = python_target_problem(target); !bad.empty()) {
      err << "attncheck sensitivity: --python " << target << ": " << bad << "\n";
      return 2;
    }
    const std::string bridge = python_bridge_path(error);
    std::unique_ptr<Implementation> impl =
        bridge.empty() ? nullptr : load_plugin(bridge, python_target_options(PluginOptions{}, target), error);
    if (!impl) {
      err << "attncheck sensitivity: --python " << target << ": " << error << "\n";
      return 2;
    }
    targets.push_back(std::move(impl));
    command += " --python " + target;
  }
  command += " --svg " + a.svg + (a.csv.empty() ? "" : " --csv " + a.csv);

  // f64 where every implementation takes it (the oracle's noise is then far
  // below any response), else f32.
  DType dtype = DType::f64;
  for (auto& t : targets)
    if (probe_dtypes(*t, {DType::f64}).supported.empty()) dtype = DType::f32;

  std::vector<Curve> curves;
  bool any = false;
  out << std::left << std::setw(22) << "implementation" << std::setw(10) << "head_dim" << std::setw(14)
      << "sensitivity" << "entropy (nats)\n";
  for (auto& t : targets) {
    Curve c{t->name(), t->source(), {}};
    for (int64_t d : sensitivity_head_dims()) {
      const SweepPoint p = measure_sensitivity(*t, d, dtype, kSensitivitySeed);
      out << std::setw(22) << c.name << std::setw(10) << d;
      if (p.error.empty()) {
        any = true;
        out << std::setw(14) << std::setprecision(4) << p.sensitivity << std::setprecision(4) << p.entropy << "\n";
      } else {
        out << "not measured: " << p.error << "\n";
      }
      c.points.push_back(p);
    }
    curves.push_back(std::move(c));
  }
  if (!any) {
    err << "attncheck sensitivity: no implementation could be measured at any head_dim\n";
    return 2;
  }
  try {
    write_text_file(a.svg, render_svg(figure_of(curves, command, dtype)));
    out << "wrote the figure to " << a.svg << "\n";
    if (!a.csv.empty()) {
      write_text_file(a.csv, csv_text(curves));
      out << "wrote the numbers to " << a.csv << "\n";
    }
  } catch (const std::exception& e) {
    err << "attncheck sensitivity: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace attncheck
