// The install kit's naming rules and files: registry parsing, strip/keep host
// layouts, collisions, every YAML file parses, manifest,
// determinism. Lock fixtures are built by hand so these run without shared/.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "kit/kit.hpp"
#include "tests/unit/kit_fixture.hpp"
#include "report/results.hpp"
#include "signing/digest.hpp"

namespace fs = std::filesystem;
using namespace gb;
using namespace gb::recipes;
using namespace gb::signing;
using nlohmann::json;

using namespace gb::kit_test;

TEST_CASE("site registry argument", "[kit][naming]") {
  auto r = kit::SiteRegistry::parse("registry.site:5000/gpu").value();
  CHECK(r.host == "registry.site:5000");
  CHECK(r.prefix == "gpu");
  CHECK_FALSE(r.plain_http);
  CHECK(r.url() == "https://registry.site:5000");
  auto h = kit::SiteRegistry::parse("http://127.0.0.1:5000/team/gpu/").value();
  CHECK(h.plain_http);
  CHECK(h.prefix == "team/gpu");
  CHECK(h.str() == "127.0.0.1:5000/team/gpu");
  CHECK(kit::SiteRegistry::parse("https://Reg.Site").value().host == "reg.site");
  for (const char* bad : {"", "/gpu", "reg!/x", "reg.site/GPU", "reg.site/a//b", "reg.site:port"}) {
    INFO(bad);
    auto p = kit::SiteRegistry::parse(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().kind == ErrorKind::Input);
  }
  CHECK(kit::parse_layout("keep-host").value() == kit::Layout::KeepHost);
  CHECK_FALSE(kit::parse_layout("flat").ok());
}

TEST_CASE("destination naming: strip-host, keep-host, port colons", "[kit][naming]") {
  auto src = Reference::parse("nvcr.io/nvidia/driver:580.105.08-ubuntu22.04").value();
  auto site = kit::SiteRegistry::parse("registry.site:5000/gpu").value();
  CHECK(kit::site_reference(src, site, kit::Layout::StripHost).str() == "registry.site:5000/gpu/nvidia/driver:580.105.08-ubuntu22.04");
  CHECK(kit::site_reference(src, site, kit::Layout::KeepHost).str() == "registry.site:5000/gpu/nvcr.io/nvidia/driver:580.105.08-ubuntu22.04");
  auto local = Reference::parse("localhost:5000/acme/driver:1").value();
  CHECK(kit::site_reference(local, site, kit::Layout::KeepHost).str() == "registry.site:5000/gpu/localhost_5000/acme/driver:1");
  auto bare = kit::SiteRegistry::parse("reg.site").value();
  CHECK(kit::site_reference(src, bare, kit::Layout::StripHost).name() == "reg.site/nvidia/driver");
}

TEST_CASE("two sources landing on one name are an error naming both", "[kit][naming]") {
  Lock l = fixture_lock();
  l.images.push_back(image({"extraImages"}, "docker.io/nvidia/cuda:12.4.1-base-ubuntu22.04"));
  auto strip = kit::place_images(l, options().registry, kit::Layout::StripHost);
  REQUIRE_FALSE(strip.ok());
  CHECK(contains(strip.error().message, "nvcr.io/nvidia/cuda"));
  CHECK(contains(strip.error().message, "docker.io/nvidia/cuda"));
  CHECK(contains(strip.error().message, "registry.site:5000/gpu/nvidia/cuda"));
  CHECK_FALSE(kit::make_kit(l, fixture_chart(), options()).ok());
  // keep-host separates them; two tags of one source are no collision.
  auto keep = kit::place_images(l, options().registry, kit::Layout::KeepHost);
  REQUIRE(keep.ok());
  Lock tags = fixture_lock();
  tags.images.push_back(image({"extraImages"}, "nvcr.io/nvidia/cuda:12.6.0-base-ubuntu22.04"));
  CHECK(kit::place_images(tags, options().registry, kit::Layout::StripHost).ok());
}

TEST_CASE("the kit's files: YAML parses, scripts carry site values", "[kit][files]") {
  Lock l = fixture_lock();
  auto made = kit::make_kit(l, fixture_chart(), options());
  INFO((made ? std::string() : made.error().message));
  REQUIRE(made.ok());
  const kit::Kit& k = *made;

  std::vector<std::string> names;
  for (const auto& f : k.files) names.push_back(f.path);
  CHECK(names == std::vector<std::string>{"alerts.yaml", "containerd/certs.d/nvcr.io/hosts.toml",
                                          "containerd/certs.d/registry.k8s.io/hosts.toml",
                                          "containerd/certs.d/registry.site:5000/hosts.toml",
                                          "crio/registries.conf.d/99-gpubundle.conf", "cuda-smoke-pod.yaml", "install.sh", "manifest.json",
                                          "mig.sh",
                                          "monitoring/gpu-alerts.rules.yaml", "monitoring/grafana-dashboard-configmap.yaml",
                                          "monitoring/grafana-dashboard.json", "time-slicing.yaml", "upgrade.sh", "values.yaml",
                                          "verify.sh"});
  for (const auto& f : k.files) {
    if (f.path.size() > 5 && f.path.substr(f.path.size() - 5) == ".yaml") {
      INFO(f.path);
      CHECK_NOTHROW(YAML::Load(f.content));
    }
  }

  // values.yaml on the fixture chart.
  YAML::Node v = YAML::Load(file(k, "values.yaml"));
  CHECK(v["driver"]["repository"].as<std::string>() == "registry.site:5000/gpu/nvidia");
  CHECK(v["driver"]["version"].as<std::string>() == "580.105.08");
  CHECK(v["operator"]["version"].as<std::string>() == "v25.10.1");
  CHECK(v["validator"]["version"].as<std::string>() == sha256_digest("nvcr.io/nvidia/gpu-operator:v25.10.1"));
  CHECK(v["node-feature-discovery"]["image"]["repository"].as<std::string>() == "registry.site:5000/gpu/nfd/node-feature-discovery");
  CHECK(kit::unknown_keys(v, fixture_chart()).empty());

  // time-slicing ConfigMap and the device-plugin config inside it.
  YAML::Node ts = YAML::Load(file(k, "time-slicing.yaml"));
  CHECK(ts["kind"].as<std::string>() == "ConfigMap");
  CHECK(ts["metadata"]["name"].as<std::string>() == kit::k_time_slicing_configmap);
  YAML::Node cfg = YAML::Load(ts["data"][kit::k_time_slicing_key].as<std::string>());
  CHECK(cfg["version"].as<std::string>() == "v1");
  CHECK(cfg["flags"]["migStrategy"].as<std::string>() == "mixed");
  CHECK(cfg["sharing"]["timeSlicing"]["renameByDefault"].as<bool>());
  CHECK(cfg["sharing"]["timeSlicing"]["resources"][0]["name"].as<std::string>() == "nvidia.com/gpu");
  CHECK(cfg["sharing"]["timeSlicing"]["resources"][0]["replicas"].as<int>() == 4);

  // alerts.
  YAML::Node alerts = YAML::Load(file(k, "alerts.yaml"));
  CHECK(alerts["kind"].as<std::string>() == "PrometheusRule");
  auto rules = alerts["spec"]["groups"][0]["rules"];
  REQUIRE(rules.size() == 4);
  std::string exprs;
  for (const auto& r : rules) exprs += r["expr"].as<std::string>() + "|" + (r["for"] ? r["for"].as<std::string>() : "") + "|" +
                                       r["labels"]["severity"].as<std::string>() + "\n";
  CHECK(contains(exprs, "DCGM_FI_DEV_XID_ERRORS != 0||critical"));
  CHECK(contains(exprs, "DCGM_FI_DEV_GPU_TEMP > 85|5m|warning"));
  CHECK(contains(exprs, "DCGM_FI_DEV_GPU_UTIL == 0|1h|info"));
  CHECK(contains(exprs, "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.95"));
  // The plain rule file holds the same groups (promtool reads it: kit-monitoring).
  YAML::Node plain = YAML::Load(file(k, "monitoring/gpu-alerts.rules.yaml"));
  CHECK(YAML::Dump(plain["groups"]) == YAML::Dump(alerts["spec"]["groups"]));

  // The dashboard: each alert's threshold is the red step of its panels.
  auto board = nlohmann::json::parse(file(k, "monitoring/grafana-dashboard.json"));
  std::map<std::string, double> red;
  for (const auto& p : board["panels"])
    if (p["type"] == "timeseries")
      for (const auto& step : p["fieldConfig"]["defaults"]["thresholds"]["steps"])
        if (step["color"] == "red") red[p["title"].get<std::string>()] = step["value"].get<double>();
  CHECK(red == std::map<std::string, double>{{"Temperature per GPU", 85}, {"Framebuffer memory used per GPU", 0.95},
                                             {"XID errors per GPU", 1}});
  // Every panel but a row queries through a list of targets (a clang build once wrote one object).
  for (const auto& p : board["panels"]) {
    if (p["type"] == "row") continue;
    INFO(p["title"]);
    REQUIRE(p["targets"].is_array());
    CHECK(p["targets"].size() == 1);
    CHECK(p["targets"][0]["expr"].is_string());
  }
  YAML::Node cm = YAML::Load(file(k, "monitoring/grafana-dashboard-configmap.yaml"));
  CHECK(cm["metadata"]["labels"]["grafana_dashboard"].as<std::string>() == "1");
  CHECK(cm["data"]["gpubundle-gpus.json"].as<std::string>() == file(k, "monitoring/grafana-dashboard.json"));

  // Scripts.
  CHECK(contains(file(k, "install.sh"), "chart=\"${GPUBUNDLE_CHART:-$here/gpu-operator-v25.10.1.tgz}\""));
  CHECK(contains(file(k, "install.sh"), "pull_secret='site-pull'"));
  CHECK(contains(file(k, "mig.sh"), "config='all-1g.10gb'"));
  CHECK(contains(file(k, "verify.sh"), "cuda_image='registry.site:5000/gpu/nvidia/cuda:12.4.1-base-ubuntu22.04'"));
  CHECK(k.find("install.sh")->mode == 0755);
  // verify.sh's smoke pod: the site's CUDA image and pull secret, one GPU.
  YAML::Node pod = YAML::Load(file(k, "cuda-smoke-pod.yaml"));
  CHECK(pod["kind"].as<std::string>() == "Pod");
  CHECK(pod["spec"]["imagePullSecrets"][0]["name"].as<std::string>() == "site-pull");
  CHECK(pod["spec"]["containers"][0]["image"].as<std::string>() ==
        "registry.site:5000/gpu/nvidia/cuda:12.4.1-base-ubuntu22.04");
  CHECK(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 1);

  // manifest.json.
  json m = json::parse(file(k, "manifest.json"));
  CHECK(m["schemaVersion"] == 1);
  CHECK(m["bundleId"] == "");
  CHECK(m["chart"]["file"] == "gpu-operator-v25.10.1.tgz");
  CHECK(m["driver"]["mode"] == "conventional");
  CHECK(m["target"]["osTag"] == "ubuntu22.04");
  CHECK(m["registry"]["layout"] == "strip-host");
  REQUIRE(m["images"].size() == l.images.size());
  for (size_t i = 0; i < l.images.size(); ++i) {
    CHECK(m["images"][i]["source"] == l.images[i].source);
    CHECK(m["images"][i]["digest"] == l.images[i].digest);
    CHECK_FALSE(m["images"][i].contains("size"));
  }
  CHECK(m["images"][2]["destination"] == "registry.site:5000/gpu/nvidia/driver:580.105.08-ubuntu22.04");
  CHECK(m["files"].size() == k.files.size());
}

TEST_CASE("keep-host, plain HTTP, bundle id and sizes", "[kit][files]") {
  Lock l = fixture_lock();
  auto o = options("http://127.0.0.1:5000", kit::Layout::KeepHost);
  o.bundle_id = "b-123";
  o.image_sizes[l.images[0].source] = 4242;
  auto k = kit::make_kit(l, fixture_chart(), o).value();
  YAML::Node v = YAML::Load(file(k, "values.yaml"));
  CHECK(v["driver"]["repository"].as<std::string>() == "127.0.0.1:5000/nvcr.io/nvidia");
  CHECK(v["node-feature-discovery"]["image"]["repository"].as<std::string>() == "127.0.0.1:5000/registry.k8s.io/nfd/node-feature-discovery");
  json m = json::parse(file(k, "manifest.json"));
  CHECK(m["bundleId"] == "b-123");
  CHECK(m["images"][0]["size"] == 4242);
  CHECK(m["registry"]["plainHttp"] == true);

}

TEST_CASE("gpubundle report reads the kit's manifest.json as written", "[kit][files][report]") {
  Lock l = fixture_lock();
  auto o = options();
  o.bundle_id = "b-123";
  auto k = kit::make_kit(l, fixture_chart(), o).value();
  auto id = report::parse_kit_manifest(file(k, "manifest.json"), "kit/manifest.json");
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  CHECK(id->bundle_id == "b-123");
  CHECK(id->recipe_name == l.recipe_name);
  CHECK(id->operator_version == l.operator_version);
  CHECK(id->chart_version == l.chart.version);
  CHECK(id->driver_version == l.driver.version);
  CHECK(id->registry == "registry.site:5000/gpu");
  REQUIRE(id->images.size() == l.images.size());
  CHECK(id->images[2].destination == "registry.site:5000/gpu/nvidia/driver:580.105.08-ubuntu22.04");
}

TEST_CASE("optional files follow the recipe; output is deterministic", "[kit][files]") {
  Lock l = fixture_lock();
  l.recipe_spec = R"({"components":{},"mig":{"config":"","strategy":""},"sharing":{"timeSlicing":{"replicas":0}}})";
  l.images.erase(l.images.begin() + 1);  // the CUDA image
  auto k = kit::make_kit(l, fixture_chart(), options()).value();
  CHECK(k.find("mig.sh") == nullptr);
  CHECK(k.find("time-slicing.yaml") == nullptr);
  YAML::Node v = YAML::Load(file(k, "values.yaml"));
  CHECK_FALSE(v["devicePlugin"]["config"]);
  CHECK_FALSE(v["mig"]);
  CHECK_FALSE(v["toolkit"]["imagePullSecrets"]);
  CHECK(contains(file(k, "verify.sh"), "cuda_image=''"));

  auto a = kit::make_kit(fixture_lock(), fixture_chart(), options()).value();
  auto b = kit::make_kit(fixture_lock(), fixture_chart(), options()).value();
  REQUIRE(a.files.size() == b.files.size());
  for (size_t i = 0; i < a.files.size(); ++i) {
    CHECK(a.files[i].path == b.files[i].path);
    CHECK(a.files[i].content == b.files[i].content);
  }
}

TEST_CASE("a node overlay or the tool image in the lock changes neither the values nor the runtime mirrors", "[kit][files]") {
  // Built here under localhost/...: listed and pushed, but no chart key and no node pulls them by that name.
  auto [component, source, kind] = GENERATE(
      std::make_tuple(std::string(k_node_overlay_component), std::string("localhost/gpubundle/node-overlay:580.105.08-ubuntu22.04"),
                      BuiltKind::NodeOverlay),
      std::make_tuple(std::string(k_tool_image_component), std::string("localhost/gpubundle/gpubundle:0.1.0"), BuiltKind::ToolImage));
  INFO(component);
  Lock plain = fixture_lock();
  Lock with = fixture_lock();
  LockImage built = image({component}, source);
  built.built = kind;
  with.images.push_back(built);
  auto a = kit::make_kit(plain, fixture_chart(), options());
  auto b = kit::make_kit(with, fixture_chart(), options());
  REQUIRE(a.ok());
  INFO((b ? std::string() : b.error().message));
  REQUIRE(b.ok());
  std::vector<std::string> names_a, names_b;
  for (const auto& f : a->files) names_a.push_back(f.path);
  for (const auto& f : b->files) names_b.push_back(f.path);
  CHECK(names_a == names_b);  // no containerd/certs.d/localhost
  CHECK(file(*a, "values.yaml") == file(*b, "values.yaml"));
  CHECK(file(*a, "crio/registries.conf.d/99-gpubundle.conf") == file(*b, "crio/registries.conf.d/99-gpubundle.conf"));
  CHECK_THAT(file(*b, "manifest.json"), Catch::Contains(source));  // still listed as shipped
}

namespace {

const char* k_test_public_key = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ0test\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n";

// The fixture lock of a conventional recipe with packages.sources: the server
// image pulled, the repository image built, and its key.
Lock package_repo_lock() {
  Lock l = fixture_lock();
  l.images.push_back(image({k_package_server_component}, "docker.io/library/busybox:1.36.1"));
  LockImage repo = image({k_package_repo_component}, "localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab");
  repo.built = BuiltKind::PackageRepo;
  l.images.push_back(repo);
  std::sort(l.images.begin(), l.images.end(), [](const auto& a, const auto& b) { return a.source < b.source; });
  l.package_repo = LockPackageRepo{"apt", std::string(40, 'A'), k_test_public_key};
  return l;
}

}  // namespace

TEST_CASE("a package repository: repoConfig ConfigMap with the key, Deployment and Service, values", "[kit][files][package-repo]") {
  Lock lock = package_repo_lock();
  auto k = kit::make_kit(lock, fixture_chart(), options());
  INFO((k ? std::string() : k.error().message));
  REQUIRE(k.ok());
  const std::string& text = file(*k, "package-repo.yaml");
  std::vector<YAML::Node> docs = YAML::LoadAll(text);
  REQUIRE(docs.size() == 3);
  const auto& cm = docs[0];
  CHECK(cm["kind"].as<std::string>() == "ConfigMap");
  CHECK(cm["metadata"]["name"].as<std::string>() == kit::k_package_repo_config_map);
  // No object names a namespace: install.sh applies them into the release namespace,
  // and kubectl refuses `apply -n` of an object pinned to another.
  for (const auto& d : docs) CHECK_FALSE(d["metadata"]["namespace"]);
  // The key rides in the same ConfigMap, which the operator mounts at /etc/apt/sources.list.d.
  CHECK(cm["data"]["gpubundle-repo.asc"].as<std::string>() == k_test_public_key);
  const std::string list = cm["data"]["gpubundle.list"].as<std::string>();
  CHECK(list == "deb [arch=amd64 signed-by=/etc/apt/sources.list.d/gpubundle-repo.asc] "
                "http://gpubundle-package-repo.gpu-operator.svc.cluster.local:8080/ gpubundle main\n");
  CHECK_FALSE(contains(text, "trusted=yes"));
  const auto& dep = docs[1];
  CHECK(dep["kind"].as<std::string>() == "Deployment");
  const auto& pod = dep["spec"]["template"]["spec"];
  // From the site registry, pinned by digest, with the recipe's pull secret.
  CHECK(pod["containers"][0]["image"].as<std::string>() ==
        "registry.site:5000/gpu/gpubundle/package-repo:ubuntu22.04-0123456789ab@" +
            sha256_digest("localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab"));
  CHECK(pod["imagePullSecrets"][0]["name"].as<std::string>() == "site-pull");
  CHECK(pod["containers"][0]["ports"][0]["containerPort"].as<int>() == 8080);
  CHECK(dep["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"].as<std::string>() == "gpubundle-package-repo");
  const auto& svc = docs[2];
  CHECK(svc["kind"].as<std::string>() == "Service");
  CHECK(svc["metadata"]["name"].as<std::string>() == "gpubundle-package-repo");
  CHECK(svc["spec"]["ports"][0]["port"].as<int>() == 8080);

  YAML::Node values = YAML::Load(file(*k, "values.yaml"));
  CHECK(values["driver"]["repoConfig"]["configMapName"].as<std::string>() == kit::k_package_repo_config_map);
  CHECK_FALSE(values["driver"]["certConfig"]);
  // Applied before the chart is installed.
  const std::string& install = file(*k, "install.sh");
  auto applied = install.find("apply_package_repo \"${kubectl_flags[@]}\"");
  REQUIRE(applied != std::string::npos);
  // ... into the release namespace, its sources naming the Service there.
  CHECK(contains(install, "sed \"s#//gpubundle-package-repo\\.gpu-operator\\.svc\\.#//gpubundle-package-repo.$namespace.svc.#\" "
                          "\"$here/package-repo.yaml\" |\n    kubectl apply -n \"$namespace\" -f - \"$@\""));
  CHECK(applied < install.find("helm upgrade --install \"$release\""));
  // Neither image is pulled by a node from its source host.
  CHECK_FALSE(k->find("containerd/certs.d/localhost/hosts.toml"));
  CHECK_FALSE(k->find("containerd/certs.d/docker.io/hosts.toml"));
}

TEST_CASE("a package repository on the site's own https server: certConfig, no Deployment", "[kit][files][package-repo]") {
  Lock lock = package_repo_lock();
  auto o = options();
  o.package_repo_url = "https://packages.site.example/gpu/";
  o.package_repo_ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
  auto k = kit::make_kit(lock, fixture_chart(), o);
  INFO((k ? std::string() : k.error().message));
  REQUIRE(k.ok());
  std::vector<YAML::Node> docs = YAML::LoadAll(file(*k, "package-repo.yaml"));
  REQUIRE(docs.size() == 2);
  CHECK(docs[0]["data"]["gpubundle.list"].as<std::string>() ==
        "deb [arch=amd64 signed-by=/etc/apt/sources.list.d/gpubundle-repo.asc] https://packages.site.example/gpu/ gpubundle main\n");
  CHECK(docs[1]["metadata"]["name"].as<std::string>() == kit::k_package_repo_ca_config_map);
  CHECK(docs[1]["data"]["gpubundle-repo-ca.crt"].as<std::string>() == o.package_repo_ca + "\n");
  YAML::Node values = YAML::Load(file(*k, "values.yaml"));
  CHECK(values["driver"]["certConfig"]["name"].as<std::string>() == kit::k_package_repo_ca_config_map);

  o.package_repo_url = "ftp://packages.site.example/";
  auto bad = kit::make_kit(lock, fixture_chart(), o);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("ftp://packages.site.example/"));
}

TEST_CASE("an rpm-md package repository: the driver image's own .repo files masked, the CA named by sslcacert", "[kit][files][package-repo]") {
  Lock lock = package_repo_lock();
  lock.package_repo->format = "rpm-md";
  auto o = options();
  auto k = kit::make_kit(lock, fixture_chart(), o);
  INFO((k ? std::string() : k.error().message));
  REQUIRE(k.ok());
  YAML::Node data = YAML::LoadAll(file(*k, "package-repo.yaml"))[0]["data"];
  // yum makecache fails on any enabled repository it cannot reach: each the RHEL
  // driver images bring is covered by a key of its name (the operator mounts keys by subPath).
  for (const char* masked : {"ubi.repo", "cuda-rhel8.repo", "cuda-rhel9.repo", "cuda-rhel10.repo", "epel.repo",
                             "epel-testing.repo", "epel-cisco-openh264.repo"}) {
    CAPTURE(masked);
    REQUIRE(data[masked]);
    const std::string text = data[masked].as<std::string>();
    CHECK(text.find('[') == std::string::npos);  // no repository section at all
    CHECK(text.rfind("# ", 0) == 0);
  }
  const std::string repo = data["gpubundle.repo"].as<std::string>();
  CHECK(repo.find("sslcacert") == std::string::npos);
  // An https site mirror with its own CA: dnf reads the certConfig file only if named.
  o.package_repo_url = "https://packages.site.example/el9/";
  o.package_repo_ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
  auto with_ca = kit::make_kit(lock, fixture_chart(), o);
  REQUIRE(with_ca.ok());
  std::vector<YAML::Node> docs = YAML::LoadAll(file(*with_ca, "package-repo.yaml"));
  CHECK_THAT(docs[0]["data"]["gpubundle.repo"].as<std::string>(),
             Catch::Contains("\nsslcacert=/etc/pki/ca-trust/extracted/pem/gpubundle-repo-ca.crt\n"));
  CHECK(docs[1]["data"]["gpubundle-repo-ca.crt"]);
}

TEST_CASE("a package repository needs driver.repoConfig in the chart; without one the kit has none", "[kit][files][package-repo]") {
  Chart old = fixture_chart();
  old.values["driver"].remove("repoConfig");
  auto k = kit::make_kit(package_repo_lock(), old, options());
  REQUIRE_FALSE(k.ok());
  CHECK_THAT(k.error().message, Catch::Contains("driver.repoConfig.configMapName"));
  // A packageRepo without its image: nothing would serve what the ConfigMap names.
  Lock no_image = package_repo_lock();
  std::erase_if(no_image.images, [](const LockImage& i) { return i.built == BuiltKind::PackageRepo; });
  auto orphan = kit::make_kit(no_image, fixture_chart(), options());
  REQUIRE_FALSE(orphan.ok());
  CHECK_THAT(orphan.error().message, Catch::Contains("no package repository image"));
  auto served = options();
  served.package_repo_url = "http://packages.site.example/";
  CHECK(kit::make_kit(no_image, fixture_chart(), served).ok());
  auto plain = kit::make_kit(fixture_lock(), fixture_chart(), options());
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->find("package-repo.yaml"));
  CHECK_FALSE(contains(file(*plain, "values.yaml"), "repoConfig"));
}

TEST_CASE("write_kit writes every file with its mode", "[kit][files]") {
  fs::path dir = fs::temp_directory_path() / ("gb-kit-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto k = kit::make_kit(fixture_lock(), fixture_chart(), options()).value();
  REQUIRE(kit::write_kit(k, dir).ok());
  for (const auto& f : k.files) {
    INFO(f.path);
    REQUIRE(fs::exists(dir / f.path));
    std::ifstream in(dir / f.path, std::ios::binary);
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(got == f.content);
  }
  struct stat st {};
  REQUIRE(::stat((dir / "install.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  fs::remove_all(dir);
}
