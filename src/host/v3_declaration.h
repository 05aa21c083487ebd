// What a version-3 plugin declares beyond version 2 (docs/abi/plugin-abi-v3.md:
// features bits 11 to 16, kv_formats, numerics, promises), judged when it loads:
// the declarations the spec says to refuse are refused (the CLI exits 2 with
// the field and its value), and what this version of attncheck cannot judge
// yet is named, so that no report lets it pass unsaid (docs/plugins.md,
// "Version 3").
//
// Example usage (the parent, on a v3 plugin's hello):
//   const V3Declaration d{hello.features, hello.kv_formats, hello.numerics, hello.promises, hello.has_backward != 0};
//   if (std::string why = v3_declaration_refusal(d); !why.empty()) ... refuse: "cannot load plugin P: " + why
//   impl.not_judged = v3_declarations_not_judged(d);  // {"feature paged", "K/V format q8_0", ...}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attncheck {

struct V3Declaration {
  uint32_t features = 0;    // ATTNCHECK_FEATURE_* of versions 2 and 3
  uint32_t kv_formats = 0;  // bit (1u << f) per attncheck_kv_format f
  uint32_t numerics = 0;    // ATTNCHECK_NUMERICS_*
  uint32_t promises = 0;    // ATTNCHECK_PROMISE_*
  bool has_backward = false;
};

// Every feature bit version 3 defines (versions 2's and 3's), numerics bit,
// promise bit and kv_formats bit.
inline constexpr uint32_t kV3FeatureBits = (1u << 17) - 1;
inline constexpr uint32_t kV3NumericsBits = (1u << 2) - 1;
inline constexpr uint32_t kV3PromiseBits = (1u << 3) - 1;
inline constexpr uint32_t kV3KvFormatBits = (1u << 9) - 1;

// "" when the spec accepts the declaration; else why it is refused, naming
// the field and its value: "attncheck_plugin_v3() declares kv_formats 0x200
// (bit 9), which no attncheck_kv_format names (formats 0 to 8)".
std::string v3_declaration_refusal(const V3Declaration& d);

// What of the declaration this attncheck does not judge yet: each version-3
// feature ("feature paged"), the formats of kv_formats beyond DTYPE ("K/V
// format q8_0"), each numerics bit ("numerics q_as_q8_0") and each promise
// (none since the promise laws judge all three; "promise <name>" for one
// they would not). Empty for a declaration of version-2 features only.
std::vector<std::string> v3_declarations_not_judged(const V3Declaration& d);

}  // namespace attncheck
