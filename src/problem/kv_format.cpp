#include "problem/kv_format.h"

#include <iterator>

namespace attncheck {

namespace {

constexpr bool rows_in_abi_order() {
  for (std::size_t i = 0; i < std::size(kKvFormatTable); ++i)
    if (static_cast<std::size_t>(kKvFormatTable[i].format) != i) return false;
  return true;
}
static_assert(rows_in_abi_order());

}  // namespace

const KvFormatInfo* find_kv_format(int abi_value) {
  for (const KvFormatInfo& r : kKvFormatTable)
    if (static_cast<int>(r.format) == abi_value) return &r;
  return nullptr;
}

std::optional<KvFormat> kv_format_from_name(std::string_view name) {
  for (const KvFormatInfo& r : kKvFormatTable)
    if (r.name == name) return r.format;
  return std::nullopt;
}

bool kv_format_allows(KvFormat f, DType dtype) {
  if (f == KvFormat::dtype) return true;
  if (f == KvFormat::f16 || f == KvFormat::bf16) return dtype == DType::f32;
  return dtype != DType::f64;
}

int64_t kv_unit_bytes(KvFormat f, DType dtype) {
  return f == KvFormat::dtype ? static_cast<int64_t>(dtype_bytes(dtype)) : info(f).unit_bytes;
}

bool kv_channels_fit(KvFormat f, int64_t channels) { return channels >= 0 && channels % info(f).unit_channels == 0; }

int64_t kv_row_units(KvFormat f, int64_t channels) { return channels / info(f).unit_channels; }

}  // namespace attncheck
