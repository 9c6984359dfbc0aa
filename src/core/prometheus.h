// core/prometheus.h — the text exposition format's header lines for one metric family, shared by
// the reward service's /metrics and the cluster's (Prometheus text format 0.0.4).
#pragma once

#include <string>

namespace cudal1 {

// "# HELP name help\n# TYPE name type\n"; type is "gauge" or "counter".
inline std::string prometheus_family(const std::string& name, const char* type, const char* help) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace cudal1
