// The site package repository in the kit (a lock with packageRepo): the
// repoConfig ConfigMap, the optional CA ConfigMap, and the Deployment and
// Service that serve the repository image. docs/package-repos.md.
#include <algorithm>

#include "common/strings.hpp"
#include "kit/kit_detail.hpp"

namespace gb::kit::detail {

namespace {

// No namespace: install.sh and upgrade.sh apply the file into theirs
// (GPUBUNDLE_NAMESPACE), and kubectl refuses `apply -n` of an object that
// names another.
void metadata(YAML::Emitter& out, const std::string& name) {
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name;
  out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app.kubernetes.io/name" << YAML::Value << k_package_repo_name;
  out << YAML::Key << "app.kubernetes.io/managed-by" << YAML::Value << "gpubundle" << YAML::EndMap;
  out << YAML::EndMap;
}

std::string config_map(const std::string& name, const std::vector<std::pair<std::string, std::string>>& data) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "ConfigMap";
  metadata(out, name);
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, value] : data) out << YAML::Key << key << YAML::Value << YAML::Literal << value;
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string deployment(const Placement& image, const KitRecipe& recipe) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "apps/v1";
  out << YAML::Key << "kind" << YAML::Value << "Deployment";
  metadata(out, k_package_repo_name);
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "replicas" << YAML::Value << 1;
  out << YAML::Key << "selector" << YAML::Value << YAML::BeginMap << YAML::Key << "matchLabels" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app.kubernetes.io/name" << YAML::Value << k_package_repo_name << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "template" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app.kubernetes.io/name" << YAML::Value << k_package_repo_name << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  if (!recipe.pull_secret.empty())
    out << YAML::Key << "imagePullSecrets" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name"
        << YAML::Value << recipe.pull_secret << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "securityContext" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "runAsNonRoot" << YAML::Value << true;
  out << YAML::Key << "runAsUser" << YAML::Value << 65534 << YAML::EndMap;
  out << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "httpd";
  out << YAML::Key << "image" << YAML::Value << image.destination.str();
  out << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "http";
  out << YAML::Key << "containerPort" << YAML::Value << recipes::k_package_repo_port << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "readinessProbe" << YAML::Value << YAML::BeginMap << YAML::Key << "httpGet" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "path" << YAML::Value << std::string("/dists/") + recipes::k_package_repo_suite + "/InRelease";
  out << YAML::Key << "port" << YAML::Value << "http" << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "securityContext" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "allowPrivilegeEscalation" << YAML::Value << false;
  out << YAML::Key << "readOnlyRootFilesystem" << YAML::Value << true;
  out << YAML::Key << "capabilities" << YAML::Value << YAML::BeginMap << YAML::Key << "drop" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << "ALL" << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  out << YAML::EndMap << YAML::EndSeq;  // containers
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string service() {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "Service";
  metadata(out, k_package_repo_name);
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "selector" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app.kubernetes.io/name" << YAML::Value << k_package_repo_name << YAML::EndMap;
  out << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "http";
  out << YAML::Key << "port" << YAML::Value << recipes::k_package_repo_port;
  out << YAML::Key << "targetPort" << YAML::Value << "http" << YAML::EndMap << YAML::EndSeq;
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// The sources file the driver container reads: an apt sources.list line or a yum .repo.
std::string package_repo_sources(const recipes::Lock& lock, const KitOptions& options) {
  std::vector<std::string> archs;
  for (const auto& p : lock.platforms) {
    auto parts = split(p, '/');
    if (parts.size() >= 2 && std::find(archs.begin(), archs.end(), parts[1]) == archs.end()) archs.push_back(parts[1]);
  }
  std::string url = package_repo_url(options);
  if (lock.package_repo->format == "rpm-md") {
    // rpm-md: the repository metadata is signed (repo_gpgcheck), and it
    // holds every package's sha256; the packages keep their vendor's signature.
    return std::string("[gpubundle]\nname=gpubundle kernel packages\nbaseurl=") + url +
           "\nenabled=1\ngpgcheck=0\nrepo_gpgcheck=1\ngpgkey=file://" + k_rpm_repo_config_dir + "/" + recipes::k_package_repo_key_file + "\n" +
           (options.package_repo_ca.empty() ? "" : std::string("sslcacert=") + k_rpm_ca_dir + "/" + k_package_repo_ca_key + "\n");
  }
  return std::string("deb [") + (archs.empty() ? "" : "arch=" + join(archs, ",") + " ") + "signed-by=" + k_apt_repo_config_dir +
         "/" + recipes::k_package_repo_key_file + "] " + url + " " + recipes::k_package_repo_suite + " " + recipes::k_package_repo_area + "\n";
}

// The repository files the RHEL driver images bring (UBI's, the CUDA
// repository's, EPEL's): the repoConfig ConfigMap carries a key of each name,
// disabled, because the operator mounts each key over the image's file and
// `dnf makecache` fails on any enabled repository it cannot reach.
constexpr const char* k_rpm_image_repo_files[] = {"ubi.repo", "cuda-rhel8.repo", "cuda-rhel9.repo", "cuda-rhel10.repo",
                                                  "epel.repo", "epel-testing.repo", "epel-cisco-openh264.repo"};

}  // namespace

std::string package_repo_url(const KitOptions& options) {
  if (!options.package_repo_url.empty()) return options.package_repo_url;
  return std::string("http://") + k_package_repo_name + "." + options.namespace_name + ".svc.cluster.local:" +
         std::to_string(recipes::k_package_repo_port) + "/";
}

std::vector<std::pair<std::string, std::string>> package_repo_config(const recipes::Lock& lock, const KitOptions& options) {
  const bool apt = lock.package_repo->format != "rpm-md";
  std::vector<std::pair<std::string, std::string>> data = {{apt ? "gpubundle.list" : "gpubundle.repo", package_repo_sources(lock, options)},
                                                           {recipes::k_package_repo_key_file, lock.package_repo->public_key}};
  if (!apt)
    for (const char* f : k_rpm_image_repo_files)
      data.emplace_back(f, std::string("# Mounted over the driver image's ") + f +
                               " by the kit's repoConfig: at an air-gapped site only gpubundle.repo is reachable.\n");
  return data;
}

std::string package_repo_yaml(const recipes::Lock& lock, const std::vector<Placement>& placements, const KitRecipe& recipe,
                              const KitOptions& options) {
  std::string text = yaml_header(
      lock, options,
      "The site package repository for the driver containers (docs/package-repos.md): install.sh and upgrade.sh apply it, "
      "before the chart, to the release namespace (GPUBUNDLE_NAMESPACE, default " +
          options.namespace_name + ")" +
          (options.package_repo_url.empty()
               ? std::string(", and point the sources at the Service ") + k_package_repo_name + " in that namespace: they name it in " +
                     options.namespace_name + " here (kubectl apply -n NS by hand: change ." + options.namespace_name + ".svc. too)"
               : std::string()) +
          "; values.yaml driver.repoConfig" + (options.package_repo_ca.empty() ? "" : " and driver.certConfig") +
          " point at it. Signing key " + lock.package_repo->fingerprint + ".");
  text += config_map(k_package_repo_config_map, package_repo_config(lock, options));
  // Ubuntu's update-ca-certificates takes only *.crt files.
  if (!options.package_repo_ca.empty())
    text += "---\n" + config_map(k_package_repo_ca_config_map, {{k_package_repo_ca_key, pem_file(options.package_repo_ca)}});
  if (options.package_repo_url.empty()) {
    for (const auto& p : placements)
      if (p.image->built == recipes::BuiltKind::PackageRepo) {
        text += "---\n" + deployment(p, recipe);
        text += "---\n" + service();
      }
  }
  return text;
}

}  // namespace gb::kit::detail
