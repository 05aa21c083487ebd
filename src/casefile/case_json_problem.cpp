// The writer of a Problem's fields (case_json_problem.h). Each kind of value
// has one text, the format's since schema 1:
//   a dtype, a causal rule  their names, quoted             "dtype": "f32"
//   an extent, a window     an integer                      "batch": 2
//   a double                a JSON number (shortest text that reads back to
//                           the same double); NaN "default" (the scale's
//                           default), an infinity its text, quoted
//   a tensor (doubles)      hex-float strings, a row a line (the field's `row`);
//                           empty: null, but [] for q, k and v (schema 1 wrote them so)
//   the mask                a string of '0'/'1'; empty: null
//   lengths, cu_seqlens     [3, 1]; empty: null
//   a flag                  true / false
//   a Broadcast             {"per_batch": true, "per_head": true, "per_row": false}
//   the layouts             {"q": {"order": ["batch", "row", "head"], "gap": {"batch": 0, ...}}, ...}
// Shape's members are keys of "problem" itself (kv_heads as kv_head_count()).
#include "casefile/case_json_problem.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "casefile/case_json_v2.h"
#include "casefile/float_text.h"
#include "problem/problem_fields.h"

namespace attncheck {
namespace {

constexpr const char* kAxisNames[3] = {"batch", "head", "row"};

void write_floats(std::ostringstream& os, const std::vector<double>& t, int64_t cols) {
  os << "[";
  const bool rows = cols > 0 && !t.empty() && t.size() % static_cast<std::size_t>(cols) == 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i == 0 || (rows && i % static_cast<std::size_t>(cols) == 0)) os << (i ? ",\n      " : "\n      ");
    else os << ", ";
    os << '"' << exact_float_text(t[i]) << '"';
  }
  os << (t.empty() ? "]" : "\n    ]");
}

void write_value(std::ostringstream& os, const TensorLayout& l) {
  os << "{";
  const char* sep = "";
  for_each_field<TensorLayout>(
      [&](const auto& f, const auto& axes) {
        os << sep << '"' << f.name << "\": ";
        sep = ", ";
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(axes)>, std::array<uint8_t, 3>>) {
          os << "[";  // the axes, outermost first
          for (int k = 0; k < 3; ++k) os << (k ? ", " : "") << '"' << kAxisNames[axes[k]] << '"';
          os << "]";
        } else {
          os << "{";  // a number per axis
          for (int a = 0; a < 3; ++a) os << (a ? ", " : "") << '"' << kAxisNames[a] << "\": " << axes[a];
          os << "}";
        }
      },
      l);
  os << "}";
}

void write_value(std::ostringstream& os, const Broadcast& b) {
  os << "{";
  const char* sep = "";
  for_each_field<Broadcast>(
      [&](const auto& f, bool flag) {
        os << sep << '"' << f.name << "\": " << (flag ? "true" : "false");
        sep = ", ";
      },
      b);
  os << "}";
}

// A field's value; `field` gives its attributes, `p` the extents.
template <class F, class T>
void write_value(std::ostringstream& os, const F& field, const T& x, const Problem& p, Since level) {
  using nlohmann::json;
  if constexpr (std::is_same_v<T, DType>) {
    os << '"' << dtype_name(x) << '"';
  } else if constexpr (std::is_same_v<T, Causal>) {
    os << '"' << causal_name(x) << '"';
  } else if constexpr (std::is_same_v<T, KvFormat>) {
    os << '"' << kv_format_name(x) << '"';
  } else if constexpr (std::is_same_v<T, ScaleGranularity>) {
    os << '"' << scale_granularity_name(x) << '"';
  } else if constexpr (std::is_same_v<T, double>) {
    if (std::isnan(x)) os << "\"default\"";
    else if (std::isinf(x)) os << '"' << exact_float_text(x) << '"';
    else os << json(x).dump();
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    if (x.empty() && field.attrs.since != Since::v1) os << "null";
    else write_floats(os, x, field.attrs.row ? field.attrs.row(p.shape) : 0);
  } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
    if (x.empty()) {
      os << "null";
    } else {
      os << '"';
      for (uint8_t m : x) os << (m ? '1' : '0');
      os << '"';
    }
  } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
    if (x.empty()) {
      os << "null";
    } else {
      os << "[";
      for (std::size_t b = 0; b < x.size(); ++b) os << (b ? ", " : "") << x[b];
      os << "]";
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    os << (x ? "true" : "false");
  } else if constexpr (std::is_same_v<T, Broadcast>) {
    write_value(os, x);
  } else if constexpr (std::is_same_v<T, ViewLayouts>) {
    // The views the file's schema holds: the gradient views in a backward problem's only.
    os << "{";
    const char* sep = "\n      \"";
    for_each_field<ViewLayouts>(
        [&](const auto& view, const TensorLayout& l) {
          if (view.attrs.since > level) return;
          os << sep << view.name << "\": ";
          sep = ",\n      \"";
          write_value(os, l);
        },
        x);
    os << "\n    }";
  } else {
    static_assert(std::is_same_v<T, int64_t>, "a new kind of field: say how a case file writes it");
    os << x;
  }
}

}  // namespace

void write_problem_json(std::ostringstream& os, const Problem& p) {
  const Since level = !needs_schema_2(p) ? Since::v1 : p.is_backward() ? Since::backward : Since::v2;
  const char* sep = "    \"";
  auto key = [&](const char* name) {
    os << sep << name << "\": ";
    sep = ",\n    \"";
  };
  for_each_field<Problem>(
      [&](const auto& field, const auto& x) {
        // Packing's (paging's) fields (ABI v3) in a packed (paged) problem's file only, whatever its level.
        const Since since = field.attrs.since;
        if (since == Since::packed     ? !p.packed()
            : since == Since::paged      ? !p.paged()
            : since == Since::kv_formats ? !p.kv_formatted()  // stored formats' in such a problem's file only
            : since == Since::alibi_batch ? !p.alibi_per_batch()  // per-batch slopes' likewise
            : since == Since::broadcast_kv ? !p.kv_broadcast()  // broadcast K and V's likewise
            : since == Since::v_view ? !p.v_view_of_k  // V as a view of K's likewise
            : since == Since::numerics ? p.numerics == 0  // declared numerics' likewise
                                         : since > level)
          return;
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, Shape>) {
          // The extents are keys of "problem" itself.
          for_each_field<Shape>(
              [&](const auto& extent, int64_t) {
                if (extent.attrs.since > level) return;
                key(extent.name);
                os << written_extent(extent, x);
              },
              x);
        } else {
          key(field.name);
          write_value(os, field, x, p, level);
        }
      },
      p);
}

std::vector<std::string> schema2_keys() {
  std::vector<std::string> keys;
  const Problem neutral;
  for_each_field<Problem>(
      [&](const auto& field, const auto& x) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, Shape>) {
          for_each_field<Shape>([&](const auto& extent, int64_t) {
            if (extent.attrs.since != Since::v1) keys.emplace_back(extent.name);
          }, x);
        } else if (field.attrs.since != Since::v1) {
          keys.emplace_back(field.name);
        }
      },
      neutral);
  return keys;
}

}  // namespace attncheck
