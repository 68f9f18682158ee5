#include "kit/driver_jobs.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "kit/kit_detail.hpp"

namespace gb::kit {

using json = nlohmann::json;

namespace {

json labels() { return {{"app.kubernetes.io/name", "gpubundle-drivers"}, {"app.kubernetes.io/managed-by", "gpubundle"}}; }

json metadata(const DriverJobOptions& o, const std::string& name) {
  json m = {{"name", name}, {"labels", labels()}};
  if (!o.name_space.empty()) m["namespace"] = o.name_space;
  return m;
}

std::string plan_map_name(const DriverJobOptions& o) { return o.name + "-plan"; }

json config_map(const DriverJobOptions& o) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", metadata(o, plan_map_name(o))}, {"data", {{"plan.json", o.plan_json}}}};
}

json volumes(const DriverJobOptions& o) {
  json v = json::array();
  v.push_back({{"name", "plan"}, {"configMap", {{"name", plan_map_name(o)}}}});
  v.push_back({{"name", "inputs"}, {"persistentVolumeClaim", {{"claimName", o.inputs_claim}, {"readOnly", true}}}});
  if (!o.sign_secret.empty()) v.push_back({{"name", "keys"}, {"secret", {{"secretName", o.sign_secret}}}});
  if (!o.registry_secret.empty()) v.push_back({{"name", "registry"}, {"secret", {{"secretName", o.registry_secret}}}});
  v.push_back({{"name", "work"}, {"emptyDir", json::object()}});
  return v;
}

// The build container; `entry` and `result` are how the engine hands over the
// index and takes the result line.
json container(const DriverJobOptions& o, const std::string& entry, const std::string& result, json env) {
  json mounts = json::array();
  mounts.push_back({{"name", "plan"}, {"mountPath", "/plan"}, {"readOnly", true}});
  mounts.push_back({{"name", "inputs"}, {"mountPath", k_job_inputs_dir}, {"readOnly", true}});
  if (!o.sign_secret.empty()) mounts.push_back({{"name", "keys"}, {"mountPath", k_job_keys_dir}, {"readOnly", true}});
  if (!o.registry_secret.empty()) mounts.push_back({{"name", "registry"}, {"mountPath", k_job_registry_dir}, {"readOnly", true}});
  mounts.push_back({{"name", "work"}, {"mountPath", "/work"}});
  // Scratch and HOME on the emptyDir: the root filesystem stays read-only.
  env.push_back({{"name", "TMPDIR"}, {"value", "/work"}});
  env.push_back({{"name", "HOME"}, {"value", "/work"}});
  // The command spelled out: Argo's executor would otherwise ask the registry for the entrypoint.
  return {{"name", "build"},
          {"image", o.image},
          {"command", {"/usr/local/bin/gpubundle"}},
          {"args", {"--store", "/work/store", "driver", "build", "--plan", "/plan/plan.json", "--entry", entry, "--result", result}},
          {"workingDir", k_job_inputs_dir},
          {"env", env},
          {"resources", {{"requests", {{"cpu", o.cpu}, {"memory", o.memory}}}}},
          {"securityContext",
           {{"allowPrivilegeEscalation", false},
            {"readOnlyRootFilesystem", true},
            {"runAsNonRoot", true},
            {"runAsUser", 65534},
            {"capabilities", {{"drop", {"ALL"}}}}}},
          {"volumeMounts", mounts}};
}

std::string documents(const std::vector<json>& docs) {
  std::string out;
  for (const auto& d : docs) {
    YAML::Emitter e;
    detail::emit_node(e, d);
    out += "---\n" + std::string(e.c_str()) + "\n";
  }
  return out;
}

std::size_t parallelism(const DriverJobOptions& o) { return o.parallelism == 0 || o.parallelism > o.entries ? o.entries : o.parallelism; }

}  // namespace

std::string driver_build_job(const DriverJobOptions& o) {
  json env = json::array();
  env.push_back({{"name", "GPUBUNDLE_ENTRY"},
                 {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}}});
  json c = container(o, "$(GPUBUNDLE_ENTRY)", "/dev/termination-log", env);
  c["terminationMessagePolicy"] = "File";
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", metadata(o, o.name)},
              {"spec",
               {{"completionMode", "Indexed"},
                {"completions", o.entries},
                {"parallelism", parallelism(o)},
                // Each entry may fail twice (backoffLimitPerIndex is newer than many clusters).
                {"backoffLimit", 2 * o.entries},
                {"template",
                 {{"metadata", {{"labels", labels()}}},
                  {"spec", {{"restartPolicy", "Never"}, {"containers", json::array({c})}, {"volumes", volumes(o)}}}}}}}};
  return documents({config_map(o), job});
}

std::string driver_build_workflow(const DriverJobOptions& o) {
  json entry = {{"name", "entry"},
                {"inputs", {{"parameters", json::array({{{"name", "index"}}})}}},
                {"retryStrategy", {{"limit", "2"}}},
                {"container", container(o, "{{inputs.parameters.index}}", "/work/result.json", json::array())},
                {"outputs", {{"parameters", json::array({{{"name", "result"}, {"valueFrom", {{"path", "/work/result.json"}}}}})}}}};
  json step = {{"name", "build"},
               {"template", "entry"},
               {"arguments", {{"parameters", json::array({{{"name", "index"}, {"value", "{{item}}"}}})}}},
               {"withSequence", {{"count", std::to_string(o.entries)}}}};
  json matrix = {{"name", "matrix"}, {"steps", json::array({json::array({step})})}};
  json wf = {{"apiVersion", "argoproj.io/v1alpha1"},
             {"kind", "Workflow"},
             {"metadata", metadata(o, o.name)},
             {"spec",
              {{"entrypoint", "matrix"},
               {"parallelism", parallelism(o)},
               {"podMetadata", {{"labels", labels()}}},
               {"volumes", volumes(o)},
               {"templates", json::array({matrix, entry})}}}};
  return documents({config_map(o), wf});
}

}  // namespace gb::kit
