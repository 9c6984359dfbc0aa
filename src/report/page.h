// report/page.h — the self-contained HTML page every cudal1 report is drawn on (`cudal1 bench`,
// `cudal1 optimize`): one stylesheet (the classes report/svg.h plots use), a few lines of script
// (click a heading of a `table.sortable` to sort it) and a Content-Security-Policy that allows
// only those, so an input string that slipped past escaping could neither run nor fetch anything.
#pragma once

#include <string>

namespace cudal1 {

// `title_html` and `body_html` must already be escaped (report/html.h); `footer` is a fixed label.
std::string html_page(const std::string& title_html, const std::string& body_html, const char* footer);

}  // namespace cudal1
