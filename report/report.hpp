#pragma once
// The handover report: one self-contained HTML file made from the acceptance
// results (results.hpp). No script, no font, no image file, no URL: the
// styles are inline and the plots inline SVG (plot.hpp), so it opens
// anywhere, offline, and can be mailed or archived as it is.
//
// Top to bottom: the verdict (PASS, FAIL or INCOMPLETE with why; verdict.hpp)
// and a summary line per source, per missing result and per result naming
// another kit; the bundle and lock identity and versions (--kit); the
// NCCL bus-bandwidth plot, one line per run, and each run's avgBusBw; the
// verify.sh checks; the node checks, per node; each NCCL run's table; the
// images the kit placed. A source not given says so. Every string from the
// inputs is HTML-escaped.

#include <string>
#include <string_view>

#include "report/results.hpp"

namespace gb::report {

// &, <, >, " and ' as entities: safe in text and in quoted attributes.
std::string html_escape(std::string_view text);

// The verdict is PASS (verdict.hpp).
bool passed(const Results& results);

// generated_at: the time stamp the report shows (RFC 3339).
std::string report_html(const Results& results, const std::string& generated_at);

}  // namespace gb::report
