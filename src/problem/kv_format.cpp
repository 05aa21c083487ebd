#include "problem/kv_format.h"

namespace attncheck {

namespace {

// Indexed by the ABI value (checked below).
constexpr KvFormatInfo kKvFormatTable[] = {
    {KvFormat::dtype, "dtype", 0, 1, 0, false, false, std::nullopt},
    {KvFormat::f16, "f16", 2, 1, 16, false, false, DType::f16},
    {KvFormat::bf16, "bf16", 2, 1, 16, false, false, DType::bf16},
    {KvFormat::fp8_e4m3, "fp8_e4m3", 1, 1, 8, true, false, std::nullopt},
    {KvFormat::fp8_e5m2, "fp8_e5m2", 1, 1, 8, true, false, std::nullopt},
    {KvFormat::int8, "int8", 1, 1, 8, true, false, std::nullopt},
    {KvFormat::int4, "int4", 1, 2, 4, true, false, std::nullopt},
    {KvFormat::q8_0, "q8_0", 34, 32, 8, false, true, DType::f16},
    {KvFormat::q4_0, "q4_0", 18, 32, 4, false, true, DType::f16},
};

constexpr bool rows_in_abi_order() {
  for (std::size_t i = 0; i < std::size(kKvFormatTable); ++i)
    if (static_cast<std::size_t>(kKvFormatTable[i].format) != i) return false;
  return true;
}
static_assert(rows_in_abi_order());

}  // namespace

std::span<const KvFormatInfo> all_kv_formats() { return kKvFormatTable; }

const KvFormatInfo& info(KvFormat f) { return kKvFormatTable[static_cast<std::size_t>(f)]; }

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
