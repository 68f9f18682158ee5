#pragma once
// The driver build matrix as Kubernetes documents (`gpubundle driver plan
// --format k8s-job|argo`, docs/scale.md): a ConfigMap holding the plan
// (node-images/driver_plan.hpp), then either a batch/v1 Job with
// completionMode Indexed, one index per plan entry, or an argoproj.io/v1alpha1
// Workflow with one step per entry. Every pod runs the gpubundle image
// (`driver tool-image`) as
//   gpubundle --store /work/store driver build --plan /plan/plan.json --entry N --result /dev/termination-log
// so nothing is downloaded by a script: the kernel headers come from the
// recipe's packages.sources, the base image from the registry config.
// Mounts: the plan at /plan (the ConfigMap), the inputs (recipe, installer,
// keyrings) at /inputs from a PersistentVolumeClaim (the working folder, so
// the plan's relative paths hold), the module signing key and certificate at
// /keys from a Secret, the registry config at /registry from a Secret, and
// scratch at /work (emptyDir). Results: each pod's termination message is its
// result line (Argo: the output parameter "result").

#include <cstddef>
#include <string>

namespace gb::kit {

struct DriverJobOptions {
  std::string name = "gpubundle-drivers";  // the Job or Workflow, and the ConfigMap's prefix
  std::string name_space;                  // "" leaves metadata.namespace out
  std::string image;                       // the gpubundle image
  std::string plan_json;                   // the plan, as the pods read it
  std::size_t entries = 0;
  std::size_t parallelism = 0;  // 0: every entry at once
  std::string inputs_claim = "gpubundle-inputs";
  std::string sign_secret;      // "" mounts no /keys
  std::string registry_secret;  // "" mounts no /registry
  std::string cpu = "2", memory = "4Gi";
};

// Multi-document YAML: the ConfigMap, then the Job.
std::string driver_build_job(const DriverJobOptions& options);
// Multi-document YAML: the ConfigMap, then the Workflow.
std::string driver_build_workflow(const DriverJobOptions& options);

// Where the pods see their files (the plan's paths are written for these).
inline constexpr const char* k_job_keys_dir = "/keys";
inline constexpr const char* k_job_registry_dir = "/registry";
inline constexpr const char* k_job_inputs_dir = "/inputs";

}  // namespace gb::kit
