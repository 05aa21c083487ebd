// The time a run started, as reports print it: UTC, "YYYY-MM-DDTHH:MM:SS"
// without a zone suffix, the form junit-10.xsd's timestamp pattern takes
// (RunReport::timestamp; the JSON and Markdown reports print the same text).
#pragma once

#include <string>

namespace attncheck {

std::string utc_timestamp();

}  // namespace attncheck
