// The kit's monitoring files: the GPU alerts (as a PrometheusRule and as a
// plain Prometheus rule file) and a Grafana dashboard of the same signals.
// One table below feeds all of them, so an alert's threshold and the line
// drawn on its panel cannot drift apart.

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "common/strings.hpp"
#include "kit/kit_detail.hpp"

namespace gb::kit {

namespace {

// One DCGM exporter signal. `metric` is a PromQL expression with {SEL} where
// the dashboard puts its node and GPU selector; the alert fires on
// `metric op threshold`.
struct Signal {
  const char* alert;
  const char* title;
  const char* metric;
  const char* op;
  double threshold;
  const char* for_;
  const char* severity;
  const char* summary;
  const char* description;
  const char* unit;     // Grafana unit id
  const char* by_node;  // aggregation for the per-node panel
};

const Signal k_signals[] = {
    {"GPUXidError", "XID errors", "DCGM_FI_DEV_XID_ERRORS{SEL}", "!=", 0, "", "critical", "GPU reported an XID error",
     "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $value }}.", "none", "max"},
    {"GPUTemperatureHigh", "Temperature", "DCGM_FI_DEV_GPU_TEMP{SEL}", ">", 85, "5m", "warning",
     "GPU temperature above 85 C", "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has been at {{ $value }} C for 5 minutes.",
     "celsius", "max"},
    {"GPUIdle", "Utilisation", "DCGM_FI_DEV_GPU_UTIL{SEL}", "==", 0, "1h", "info", "GPU idle for an hour",
     "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has had 0% utilisation for 1 hour.", "percent", "avg"},
    {"GPUMemoryNearlyFull", "Framebuffer memory used",
     "DCGM_FI_DEV_FB_USED{SEL} / (DCGM_FI_DEV_FB_USED{SEL} + DCGM_FI_DEV_FB_FREE{SEL})", ">", 0.95, "5m", "warning",
     "GPU framebuffer memory above 95%",
     "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has used {{ $value | humanizePercentage }} of its memory for 5 minutes.",
     "percentunit", "max"},
};

constexpr const char* k_dashboard_selector = R"({Hostname=~"$node", gpu=~"$gpu"})";
constexpr const char* k_dashboard_uid = "gpubundle-gpus";
constexpr const char* k_dashboard_config_map = "gpubundle-gpu-dashboard";

std::string with_selector(const char* metric, const std::string& selector) {
  std::string s = metric;
  for (size_t at; (at = s.find("{SEL}")) != std::string::npos;) s.replace(at, 5, selector);
  return s;
}

std::string alert_expr(const Signal& s) { return with_selector(s.metric, "") + " " + s.op + " " + detail::decimal(s.threshold); }

void emit_groups(YAML::Emitter& out) {
  out << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "gpubundle.dcgm";
  out << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
  for (const auto& s : k_signals) {
    out << YAML::BeginMap;
    out << YAML::Key << "alert" << YAML::Value << s.alert;
    out << YAML::Key << "expr" << YAML::Value << YAML::DoubleQuoted << alert_expr(s);
    if (*s.for_) out << YAML::Key << "for" << YAML::Value << s.for_;
    out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "severity" << YAML::Value << s.severity << YAML::EndMap;
    out << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "summary" << YAML::Value << YAML::DoubleQuoted << s.summary;
    out << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << s.description;
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndSeq;
}

std::string alerts_yaml(const recipes::Lock& lock, const KitRecipe& recipe, const KitOptions& options) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "monitoring.coreos.com/v1";
  out << YAML::Key << "kind" << YAML::Value << "PrometheusRule";
  detail::emit_managed_metadata(out, "gpubundle-gpu-alerts", recipe.monitoring.prometheus);
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  emit_groups(out);
  out << YAML::EndMap << YAML::EndMap;
  return detail::yaml_header(lock, options,
                             "Default GPU alerts on DCGM exporter metrics (needs the Prometheus Operator CRDs; install.sh "
                             "applies it when they exist).") +
         out.c_str() + "\n";
}

std::string rules_yaml(const recipes::Lock& lock, const KitOptions& options) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_groups(out);
  out << YAML::EndMap;
  return detail::yaml_header(lock, options,
                             "The rules of alerts.yaml as a plain Prometheus rule file (rule_files:), for a Prometheus "
                             "without the Operator; promtool check rules reads it.") +
         out.c_str() + "\n";
}

using Json = nlohmann::ordered_json;

Json datasource() { return {{"type", "prometheus"}, {"uid", "${datasource}"}}; }

// A panel's targets: one query. Json::array, because a one-element brace list
// of a Json is a copy under clang and an array under gcc.
Json targets(const std::string& expr, const std::string& legend) {
  return Json::array({{{"datasource", datasource()}, {"expr", expr}, {"legendFormat", legend}, {"refId", "A"}}});
}

Json thresholds(const Signal& s) {
  // Green below the alert's threshold, red from it: what the alert fires on
  // shows on the panel. XID and idle alert on a value, not a level.
  Json steps = Json::array({{{"color", "green"}, {"value", nullptr}}});
  if (std::string(s.op) == ">") steps.push_back({{"color", "red"}, {"value", s.threshold}});
  if (std::string(s.op) == "!=") steps.push_back({{"color", "red"}, {"value", 1}});
  return {{"mode", "absolute"}, {"steps", steps}};
}

Json panel(int id, const char* type, const std::string& title, int x, int y, int w, int h) {
  return {{"id", id}, {"type", type}, {"title", title}, {"datasource", datasource()},
          {"gridPos", {{"h", h}, {"w", w}, {"x", x}, {"y", y}}}};
}

Json query_variable(const std::string& name, const std::string& label, const std::string& query) {
  return {{"name", name},
          {"label", label},
          {"type", "query"},
          {"datasource", datasource()},
          {"query", {{"query", query}, {"refId", "PrometheusVariableQueryEditor-VariableQuery"}}},
          {"definition", query},
          {"refresh", 2},
          {"includeAll", true},
          {"multi", true},
          {"allValue", ".*"},
          {"current", {{"selected", true}, {"text", "All"}, {"value", "$__all"}}},
          {"sort", 3}};
}

std::string dashboard_json() {
  Json panels = Json::array();
  int id = 1, y = 0;
  std::string alerts;
  for (const auto& s : k_signals) alerts += std::string(alerts.empty() ? "" : "|") + s.alert;
  Json firing = panel(id++, "stat", "Firing GPU alerts", 0, y, 24, 4);
  firing["targets"] = targets("sum by (alertname) (ALERTS{alertstate=\"firing\", alertname=~\"" + alerts + "\"})",
                              "{{alertname}}");
  firing["fieldConfig"] = {{"defaults", {{"unit", "none"}, {"noValue", "none firing"}}}, {"overrides", Json::array()}};
  panels.push_back(firing);
  y += 4;
  for (const auto& s : k_signals) {
    panels.push_back({{"id", id++}, {"type", "row"}, {"title", s.title}, {"collapsed", false},
                      {"gridPos", {{"h", 1}, {"w", 24}, {"x", 0}, {"y", y}}}, {"panels", Json::array()}});
    y += 1;
    std::string expr = with_selector(s.metric, k_dashboard_selector);
    Json per_gpu = panel(id++, "timeseries", std::string(s.title) + " per GPU", 0, y, 16, 8);
    per_gpu["description"] = std::string("Alert ") + s.alert + ": " + alert_expr(s) + (*s.for_ ? std::string(" for ") + s.for_ : "");
    per_gpu["targets"] = targets(expr, "{{Hostname}} GPU {{gpu}}");
    per_gpu["fieldConfig"] = {
        {"defaults", {{"unit", s.unit}, {"thresholds", thresholds(s)}, {"custom", {{"thresholdsStyle", {{"mode", "line"}}}}}}},
        {"overrides", Json::array()}};
    per_gpu["options"] = {{"legend", {{"displayMode", "table"}, {"placement", "right"}, {"calcs", {"lastNotNull", "max"}}}},
                          {"tooltip", {{"mode", "multi"}}}};
    panels.push_back(per_gpu);
    Json per_node = panel(id++, "bargauge", std::string(s.title) + " per node (" + s.by_node + ")", 16, y, 8, 8);
    per_node["targets"] = targets(std::string(s.by_node) + " by (Hostname) (" + expr + ")", "{{Hostname}}");
    per_node["fieldConfig"] = {{"defaults", {{"unit", s.unit}, {"thresholds", thresholds(s)}}}, {"overrides", Json::array()}};
    per_node["options"] = {{"orientation", "horizontal"}, {"displayMode", "gradient"},
                           {"reduceOptions", {{"calcs", {"lastNotNull"}}, {"fields", ""}, {"values", false}}}};
    panels.push_back(per_node);
    y += 8;
  }

  Json dashboard = {
      {"title", "GPU nodes (gpubundle)"},
      {"uid", k_dashboard_uid},
      {"description", "The four DCGM exporter signals of the kit's alerts.yaml, per node and per GPU."},
      {"tags", {"gpu", "dcgm", "gpubundle"}},
      {"timezone", "utc"},
      {"editable", true},
      {"schemaVersion", 39},
      {"version", 1},
      {"refresh", "30s"},
      {"time", {{"from", "now-6h"}, {"to", "now"}}},
      {"templating",
       {{"list",
         {{{"name", "datasource"},
           {"label", "Data source"},
           {"type", "datasource"},
           {"query", "prometheus"},
           {"current", Json::object()},
           {"refresh", 1}},
          query_variable("node", "Node", "label_values(DCGM_FI_DEV_GPU_TEMP, Hostname)"),
          query_variable("gpu", "GPU", "label_values(DCGM_FI_DEV_GPU_TEMP{Hostname=~\"$node\"}, gpu)")}}}},
      {"panels", panels},
  };
  return dashboard.dump(2) + "\n";
}

}  // namespace

namespace detail {

void emit_managed_metadata(YAML::Emitter& out, const char* name, const std::map<std::string, std::string>& selected_by) {
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name;
  out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app.kubernetes.io/managed-by" << YAML::Value << "gpubundle";
  for (const auto& [k, v] : selected_by)
    if (k != "app.kubernetes.io/managed-by") out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
  out << YAML::EndMap << YAML::EndMap;
}

std::string managed_config_map(const char* name, const std::map<std::string, std::string>& labels, const std::string& key,
                               const std::string& value) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "ConfigMap";
  emit_managed_metadata(out, name, labels);
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << key << YAML::Value << YAML::Literal << value;
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string label_list(const std::map<std::string, std::string>& labels) {
  std::string s;
  for (const auto& [k, v] : labels) s += (s.empty() ? "" : ", ") + k + ": \"" + v + "\"";
  return s.empty() ? "none" : s;
}

std::vector<KitFile> monitoring_files(const recipes::Lock& lock, const KitRecipe& recipe, const KitOptions& options) {
  std::string dashboard = dashboard_json();
  std::string cm_text = yaml_header(lock, options,
                                    "The Grafana dashboard for the Grafana sidecar (labels " + label_list(recipe.monitoring.dashboard) +
                                        ", recipe monitoring.dashboardLabels): apply it in the namespace the sidecar watches, or "
                                        "import monitoring/grafana-dashboard.json by hand (Dashboards > New > Import).") +
                        managed_config_map(k_dashboard_config_map, recipe.monitoring.dashboard, std::string(k_dashboard_uid) + ".json", dashboard);
  return {
      {"alerts.yaml", alerts_yaml(lock, recipe, options), 0644},
      {"monitoring/gpu-alerts.rules.yaml", rules_yaml(lock, options), 0644},
      {"monitoring/grafana-dashboard.json", dashboard, 0644},
      {"monitoring/grafana-dashboard-configmap.yaml", cm_text, 0644},
  };
}

}  // namespace detail

}  // namespace gb::kit
