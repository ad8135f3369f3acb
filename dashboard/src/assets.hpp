#pragma once
// The page and its assets, embedded into the library when it is built
// (dashboard/web/ and Debian's libjs-chart.js; cmake/embed_assets.cmake), so
// an installed tune-engine serves them without any file beside it.

#include <string_view>

namespace tune::dashboard {

struct asset {
  std::string_view path;          ///< "/app.js"
  std::string_view content_type;  ///< "text/javascript; charset=utf-8"
  std::string_view body;
};

/// The asset served at `path`, or nullptr.
const asset* find_asset(std::string_view path);

}  // namespace tune::dashboard
