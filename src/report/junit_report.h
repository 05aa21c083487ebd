// The --junit report: JUnit XML as CI systems read it, valid against the
// junit-10.xsd schema of Jenkins' xunit plugin (restated in
// tests/cli/schema/junit-10.xsd, checked in CTest). One <testsuite> per
// implementation (name, tests, failures, errors, skipped, time, timestamp,
// hostname, id, package), one <testcase> per law (classname = the
// implementation's name, unique in the file; time = the law's seconds; in a
// replay one per case file, named "<law> <path>"), a <failure> whose message
// is the law's message and whose body adds the diagnosis, the case file, the
// reproducing command and the shrunk case; <skipped/> for skipped laws.
// An expected failure (--expect-fail) is <skipped type="expected_fail"> with
// the failure in <system-out>; an expected failure that passed is a
// <failure type="unexpected_pass">.
//
// In the embedded default run the file follows the run's expectations, as its
// exit status does: a zoo member's failing law is the expected catch (a
// passing testcase whose <system-out> says what caught it), and each zoo
// suite has one more testcase, "caught_by_a_law", that fails when no law did.
// A reference skipped for any reason but "not applicable" is a failure.
#pragma once

#include <string>

#include "report/run_report.h"

namespace attncheck {

std::string report_to_junit(const RunReport& report);

// Throws std::runtime_error when the file cannot be written.
void write_junit_report(const RunReport& report, const std::string& path);

// Escapes text for XML 1.0, whatever bytes it holds: & < > " ' become
// references; what is not an XML 1.0 character becomes '?' (C0 controls but
// tab and line breaks, DEL, U+FFFE, U+FFFF) and so does every byte of
// ill-formed UTF-8 (a surrogate such as ED A0 80, an overlong form such as
// C0 AF, F5..FF, a cut sequence), so the file stays well-formed. In an attribute, line breaks and tabs
// become character references (a parser would fold them to spaces); in
// element content they stay as they are, readable.
std::string xml_escape(const std::string& text, bool attribute = true);

}  // namespace attncheck
