// Hostile input at the parsing layer (issue 11): shape checks that replaced
// std::regex, limits on recipes and locks, duplicate YAML keys, bounded
// messages, and private key permissions. Tagged [hostile]: the sanitizer job
// runs these under ASan and UBSan.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit/kit.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "fixtures.hpp"
#include "mirror/registry_config.hpp"
#include "node-images/bake.hpp"
#include "node-images/driver_files.hpp"
#include "recipes/catalog.hpp"
#include "recipes/chart.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"
#include "recipes/reference.hpp"
#include "signing/keys.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::node_images;
using namespace gb::recipes;
using namespace gb::signing;

namespace {

// Random strings glued from `pieces` (single characters or whole words), so
// that the interesting shapes come up often. Seeded: failures reproduce.
std::vector<std::string> samples(const std::vector<std::string>& pieces, size_t max_pieces, size_t count = 20000) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<size_t> len(0, max_pieces), pick(0, pieces.size() - 1);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string s;
    for (size_t n = len(rng); n > 0; --n) s += pieces[pick(rng)];
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> chars(const std::string& set) {
  std::vector<std::string> out;
  for (char c : set) out.emplace_back(1, c);
  return out;
}

// The old std::regex and the new check must agree on every sample.
void same_language(const char* pattern, const std::vector<std::string>& inputs, const std::function<bool(const std::string&)>& check) {
  const std::regex re(pattern);
  size_t accepted = 0;
  for (const auto& s : inputs) {
    bool old = std::regex_match(s, re);
    if (check(s) != old) {  // Catch's per-assertion cost only on a difference: 200,000 inputs under ASan
      INFO(pattern << " on " << quote(s));
      REQUIRE(check(s) == old);
    }
    accepted += old;
  }
  CHECK(accepted > 0);  // the samples reach the accepted side too
}

std::string recipe_with(const std::string& os, const std::string& name = "site-a") {
  return "apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: \"" + name + "\"}\noperator: {version: v24.9.2}\n"
         "target: {gpus: [L4], os: \"" + os + "\"}\n";
}

std::string recipe_error(const std::string& text) {
  auto r = parse_recipe(text, "recipe.yaml");
  return r.ok() ? "" : r.error().message;
}

Lock sample_lock() {
  Lock l;
  l.generator = "gpubundle 0.1.0";
  l.recipe_name = "site-a";
  l.recipe_file = "site-a.yaml";
  l.recipe_sha256 = std::string(64, 'a');
  l.recipe_spec = "{}";
  l.operator_version = "v24.9.2";
  l.chart = {"gpu-operator", "24.9.2", "v24.9.2", "https://helm.ngc.nvidia.com/nvidia", std::string(64, 'b')};
  l.gpus = {"L4"};
  l.os = "ubuntu22.04";
  l.os_tag = "ubuntu22.04";
  l.kernels = {"5.15.0-122-generic"};
  l.platforms = {"linux/amd64"};
  l.workloads = {"container"};
  l.driver = {"conventional", "550.127.08", "550", "auto", false};
  l.destination_registry = "reg.site:5000";
  l.destination_prefix = "gpu";
  LockImage img;
  img.components = {"driver"};
  img.source = "nvcr.io/nvidia/driver:550.127.08-ubuntu22.04";
  img.platforms = {"linux/amd64"};
  img.destination = "reg.site:5000/gpu/nvidia/driver:550.127.08-ubuntu22.04";
  img.digest = "sha256:" + std::string(64, 'c');
  l.images.push_back(img);
  return l;
}

std::string lock_error(const std::string& json) {
  auto r = parse_lock(json, "x.lock.json");
  return r.ok() ? "" : r.error().message;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("hand-written shape checks accept exactly what the old regexes did", "[hostile][shapes]") {
  same_language("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", samples(chars("az09-.A_/\n "), 8), [](auto& s) { return is_recipe_name(s); });
  same_language("^v[0-9]+\\.[0-9]+\\.[0-9]+$", samples(chars("v019.-a"), 9), [](auto& s) { return is_release_tag(s); });
  same_language("^[a-z]+(-[a-z]+)*[0-9]+(\\.[0-9]+)?$", samples(chars("abz09.-A"), 8), [](auto& s) { return is_os_name(s); });
  same_language("^[0-9]+\\.[0-9]+[A-Za-z0-9._+~-]*$", samples(chars("09.aZ_+~-/ \n"), 8), [](auto& s) { return is_kernel_release(s); });
  same_language("^([0-9]+\\.[0-9]+(\\.[0-9]+)?|sha256:[0-9a-f]{64})$",
                samples({"0", "5", ".", "a", "sha256:", std::string(64, 'f'), std::string(63, '0'), "g"}, 6),
                [](auto& s) { return is_driver_version(s); });
  same_language("^[0-9]{3}$", samples(chars("05a "), 5), [](auto& s) { return is_driver_branch(s); });
  same_language("^[A-Za-z0-9][A-Za-z0-9._+-]*$", samples(chars("aZ0._+-~/ \n"), 7), [](auto& s) { return is_word(s, "._+-"); });
  same_language("^[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*$", samples(chars("a0._-A/"), 8), [](auto& s) { return is_valid_path_component(s); });
  same_language("^v?[0-9]+\\.[0-9]+\\.[0-9]+$", samples(chars("v09.-a"), 9), [](auto& s) { return !is_placeholder_version(s); });
  same_language("[A-Za-z0-9][A-Za-z0-9._+~-]*\\.(deb|rpm)", samples({"a", "Z", "0", ".", "_", "+", "~", "-", ".deb", ".rpm", "/", " "}, 5),
                [](auto& s) { return is_package_file_name(s); });
  // --registry HOST.
  same_language("^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$", samples(chars("az09.-:_"), 9), [](auto& s) {
    return kit::SiteRegistry::parse(s).ok();
  });
}

TEST_CASE("chart archive paths and installer names match the old regexes, captures included", "[hostile][shapes]") {
  auto paths = samples({"charts/", "Chart.yaml", "values.yaml", ".tgz", "/", "a", "x.", "\n"}, 4);
  same_language(R"(^(Chart\.yaml|values\.yaml|charts/[^/]+/(Chart|values)\.yaml|charts/[^/]+\.tgz)$)", paths,
                [](auto& s) { return is_chart_file_wanted(s); });
  const std::regex sub_dir(R"(^charts/([^/]+)/Chart\.yaml$)"), sub_tgz(R"(^charts/([^/]+)\.tgz$)");
  for (const auto& p : paths) {
    std::smatch m;
    std::string dir = std::regex_match(p, m, sub_dir) ? m[1].str() : "", tgz = std::regex_match(p, m, sub_tgz) ? m[1].str() : "";
    if (subchart_name(p, "/Chart.yaml") != dir || subchart_name(p, ".tgz") != tgz) {
      INFO(quote(p));
      CHECK(std::string(subchart_name(p, "/Chart.yaml")) == dir);
      CHECK(std::string(subchart_name(p, ".tgz")) == tgz);
    }
  }

  const std::regex run_name(R"(^NVIDIA-Linux-([A-Za-z0-9_]+)-[0-9.]+.*\.run$)");
  size_t matched = 0;
  for (const auto& n : samples({"NVIDIA-Linux-", "x86_64", "aarch64", "-", "5", "5.", ".", ".run", "\n", "\r", "a", "_", " "}, 6, 40000)) {
    std::smatch m;
    bool old = std::regex_match(n, m, run_name);
    if (installer_arch(n) != (old ? m[1].str() : "")) {
      INFO(quote(n));
      REQUIRE(installer_arch(n) == (old ? m[1].str() : ""));
    }
    matched += old;
  }
  CHECK(matched > 0);
  CHECK(installer_arch("NVIDIA-Linux-aarch64-550.127.08.run") == "aarch64");
}

TEST_CASE("long strings are refused without recursion", "[hostile][shapes]") {
  const std::string huge(1 << 20, 'a');  // std::regex_match overflowed the stack from about 50 KB
  CHECK(is_lower_name(huge));
  CHECK_FALSE(is_recipe_name(huge));
  CHECK_FALSE(is_release_tag("v1." + huge));
  CHECK(is_word(huge, "._-"));
  CHECK(kit::SiteRegistry::parse(huge + ".site:5000/" + huge).ok());
  CHECK_FALSE(kit::SiteRegistry::parse(huge + "-").ok());
  CHECK_FALSE(kit::SiteRegistry::parse("reg.site:5000/" + huge + "-").ok());
  CHECK_FALSE(is_kernel_release("5.1" + huge + "/"));
  CHECK(installer_arch("NVIDIA-Linux-x86_64-5" + huge + ".run") == "x86_64");

  auto name = recipe_error(recipe_with("ubuntu22.04", std::string(4000, 'n')));
  CHECK(name.find("recipe.yaml:3: metadata.name: 'nnnn") == 0);
  CHECK(name.find("(4000 bytes) must be lower-case letters, digits, '-' or '.', at most 253") != std::string::npos);
  CHECK(name.size() < 400);
  const std::string long_value(100000, 'a');
  CHECK(recipe_error(recipe_with("ubuntu22.04", long_value)) == "recipe.yaml:3: metadata.name: longer than 4096 bytes");
  auto os = recipe_error(recipe_with(long_value));
  CHECK(os.find("target.os: longer than 4096 bytes") != std::string::npos);
}

TEST_CASE("recipe limits: file size, list length", "[hostile][limits]") {
  gbtest::TempDir dir;
  std::string big = recipe_with("ubuntu22.04") + "# " + std::string(k_recipe_max_bytes, 'x') + "\n";
  gbtest::spit(dir / "big.yaml", big);
  auto r = load_recipe(dir / "big.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message.find("larger than 1048576 bytes") != std::string::npos);

  std::string kernels = "[";
  for (size_t i = 0; i <= k_recipe_max_list; ++i) kernels += "5.15.0, ";
  kernels += "5.15.0]";
  auto many = recipe_error("apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v24.9.2}\n"
                      "target:\n  gpus: [L4]\n  os: ubuntu22.04\n  kernels: " + kernels + "\n");
  CHECK(many.find("target.kernels: more than 1024 entries") != std::string::npos);
}

TEST_CASE("duplicate keys in a recipe are refused with file, line and key", "[hostile][yaml]") {
  std::string text = recipe_with("ubuntu22.04") + "target: {gpus: [H100], os: rhel9.4}\n";
  CHECK(recipe_error(text) == "recipe.yaml:6: duplicate key 'target' (first at line 5)");
  auto nested = recipe_error("apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v24.9.2}\n"
                             "target:\n  gpus: [L4]\n  os: ubuntu22.04\n  os: rhel9.4\n");
  CHECK(nested == "recipe.yaml:7: duplicate key 'os' (first at line 6)");
  auto in_list = recipe_error(recipe_with("ubuntu22.04") + "components: {gds: {enabled: true, enabled: false}}\n");
  CHECK(in_list.find("duplicate key 'enabled'") != std::string::npos);
}

TEST_CASE("aliases are walked once: a billion-laughs recipe is quick", "[hostile][yaml]") {
  std::string text = "a0: &a0 {k: v}\n";
  for (int i = 1; i < 40; ++i)
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  auto start = std::chrono::steady_clock::now();
  auto error = recipe_error(text);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(error.find("unknown field") != std::string::npos);  // it got past the duplicate check
}

TEST_CASE("duplicate keys in the registry config and the catalog are refused", "[hostile][yaml]") {
  gbtest::TempDir dir;
  gbtest::spit(dir / "registries.yaml", "hosts:\n  nvcr.io:\n    plainHttp: true\n  nvcr.io:\n    plainHttp: false\n");
  auto cfg = RegistryConfig::load(dir / "registries.yaml");
  REQUIRE_FALSE(cfg.ok());
  CHECK(cfg.error().message == (dir / "registries.yaml").string() + ":4: duplicate key 'nvcr.io' (first at line 2)");

  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(GB_SOURCE_DIR) / "recipes/catalog"))
    files[e.path().filename().string()] = gbtest::slurp(e.path());
  REQUIRE(Catalog::from_files(files).ok());
  files["drivers.yaml"] += "\nautoOpenFromBranch: 1\n";
  auto cat = Catalog::from_files(files);
  REQUIRE_FALSE(cat.ok());
  CHECK(cat.error().message.find("drivers.yaml:") != std::string::npos);
  CHECK(cat.error().message.find("duplicate key 'autoOpenFromBranch'") != std::string::npos);
}

TEST_CASE("chart values read a key written twice as Helm does: the last wins", "[hostile][yaml]") {
  gbtest::TempDir dir;
  gbtest::spit(dir / "Chart.yaml", "apiVersion: v2\nname: gpu-operator\nversion: v1.0.0\n");
  gbtest::spit(dir / "values.yaml",
               "driver:\n  repository: nvcr.io/nvidia\n  version: \"1.0\"\n  version: \"2.0\"\n"
               "toolkit: {version: a}\ntoolkit:\n  version: b\n  env: [{name: X, value: \"1\"}]\n"
               "list:\n  - {k: first, k: second}\n");
  auto chart = load_chart(dir.path());
  REQUIRE(chart.ok());
  const YAML::Node& v = chart.value().values;
  CHECK(v["driver"]["version"].as<std::string>() == "2.0");
  CHECK(v["driver"]["repository"].as<std::string>() == "nvcr.io/nvidia");
  CHECK(v["toolkit"]["version"].as<std::string>() == "b");
  CHECK(v["toolkit"]["env"][0]["value"].as<std::string>() == "1");
  CHECK(v["list"][0]["k"].as<std::string>() == "second");
  size_t entries = 0;
  for (const auto& kv : v) {
    (void)kv;
    ++entries;
  }
  CHECK(entries == 3);  // driver, toolkit, list: each once
}

TEST_CASE("a registry config with a non-scalar key is refused with the line", "[hostile][yaml]") {
  gbtest::TempDir dir;
  for (std::string text : {"hosts:\n  ? [a, b]\n  : {}\n", "? {x: 1}\n: 2\n", "hosts:\n  nvcr.io:\n    ? [m]\n    : x\n"}) {
    gbtest::spit(dir / "registries.yaml", text);
    auto cfg = RegistryConfig::load(dir / "registries.yaml");  // threw YAML::TypedBadConversion before
    REQUIRE_FALSE(cfg.ok());
    CHECK(cfg.error().message.find((dir / "registries.yaml").string() + ":") == 0);
    CHECK(cfg.error().message.find("must be plain") != std::string::npos);
  }
}

TEST_CASE("the catalog's component entries survive loading", "[hostile][catalog]") {
  // Catalog::from_files once held a reference into yaml-cpp's temporary
  // iterator proxy here (ASan: stack-use-after-scope).
  const auto* driver = Catalog::builtin().component("driver");
  REQUIRE(driver);
  CHECK(driver->title == "Driver");
  CHECK(driver->os_suffix);
  const auto* kata = Catalog::builtin().component("kataManager");
  REQUIRE(kata);
  CHECK(kata->workloads == std::vector<std::string>{"vm-passthrough"});
  CHECK(kata->images == std::vector<std::string>{"config.runtimeClasses.*.artifacts.url"});
}

TEST_CASE("lock loading checks every value it will write somewhere", "[hostile][lock]") {
  const std::string good = lock_to_json(sample_lock());
  REQUIRE(lock_error(good).empty());

  auto digest = replaced(good, "\"sha256:" + std::string(64, 'c') + "\"", "\"sha512:../../../etc/hostname\"");
  CHECK(lock_error(digest) == "x.lock.json: images[0].digest: 'sha512:../../../etc/hostname' is not sha256:<64 hex>");
  auto source = replaced(good, "nvcr.io/nvidia/driver:550", "nvcr.io/nvidia/Driver:550");
  CHECK(lock_error(source).find("x.lock.json: images[0].source: invalid image reference") == 0);
  auto version = replaced(good, "\"version\": \"24.9.2\"", "\"version\": \"24.9.2/../../x\"");
  CHECK(lock_error(version).find("chart.version: '24.9.2/../../x' is not a chart version") != std::string::npos);
  auto name = replaced(good, "\"gpu-operator\"", "\"gpu operator\"");
  CHECK(lock_error(name).find("chart.name:") != std::string::npos);
  auto kernel = replaced(good, "\"5.15.0-122-generic\"", "\"5.15.0\\n$(reboot)\"");
  CHECK(lock_error(kernel).find("target.kernels[0]: '5.15.0\\n$(reboot)' is not a kernel release") != std::string::npos);
  auto mode = replaced(good, "\"conventional\"", "\"sideways\"");
  CHECK(lock_error(mode).find("driver.mode:") != std::string::npos);
  auto origin = replaced(good, "\"upstream\"", "\"elsewhere\"");
  CHECK(lock_error(origin).find("images[0].origin:") != std::string::npos);

  auto long_version = replaced(good, "\"version\": \"24.9.2\"", "\"version\": \"" + std::string(100000, '1') + "\"");
  CHECK(lock_error(long_version).find("longer than 4096 bytes") != std::string::npos);
  CHECK(lock_error(long_version).size() < 300);
}

TEST_CASE("a lock's recipe.spec is held to the recipe's rules where it is read", "[hostile][lock]") {
  // Every value below reaches the kit's scripts or YAML (pullSecret and mig.config
  // once went into nccl-allreduce.sh and mig.sh as they were).
  Lock l = sample_lock();
  l.recipe_spec = R"({"toolkit":{"mode":"container"},"components":{"dcgm":{"enabled":true}},"mig":{"strategy":"mixed","config":"all-1g.10gb"},)"
                  R"("sharing":{"timeSlicing":{"replicas":4,"renameByDefault":false}},"extraImages":["nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"],)"
                  R"("pullSecret":"site-registry","acceptance":{"nccl":{"image":"reg.site/nccl-tests:2.13","nodes":2,"gpusPerNode":8,)"
                  R"("minBytes":"8","maxBytes":"8G","minBusBw":100,"mpiOperator":{"install":false,"image":""}}},)"
                  R"("monitoring":{"prometheusLabels":{"release":"kube-prometheus-stack"},"dashboardLabels":{"grafana_dashboard":"1"}}})";
  const std::string good = lock_to_json(l);
  REQUIRE(lock_error(good).empty());
  auto bad = [&](const std::string& from, const std::string& to) { return lock_error(replaced(good, from, to)); };
  CHECK(bad("\"site-registry\"", "\"site$(touch X)\"").find("x.lock.json: recipe.spec.pullSecret: 'site$(touch X)' is not a Kubernetes secret name") == 0);
  CHECK(bad("\"site-registry\"", "\"site\\n      hostPID: true\"").find("recipe.spec.pullSecret:") != std::string::npos);
  CHECK(bad("\"all-1g.10gb\"", "\"x; reboot\"").find("recipe.spec.mig.config:") != std::string::npos);
  CHECK(bad("\"mixed\"", "\"both\"").find("recipe.spec.mig.strategy: must be single or mixed") != std::string::npos);
  CHECK(bad("\"container\"", "\"nodes\"").find("recipe.spec.toolkit.mode") != std::string::npos);
  CHECK(bad("\"8G\"", "\"8G -x\"").find("recipe.spec.acceptance.nccl.maxBytes") != std::string::npos);
  CHECK(bad("\"reg.site/nccl-tests:2.13\"", "\"reg.site/nccl tests\"").find("recipe.spec.acceptance.nccl.image: not an image reference") != std::string::npos);
  CHECK(bad("\"nodes\": 2", "\"nodes\": 0").find("recipe.spec.acceptance.nccl.nodes") != std::string::npos);
  CHECK(bad("\"minBusBw\": 100", "\"minBusBw\": -1").find("recipe.spec.acceptance.nccl.minBusBw") != std::string::npos);
  CHECK(bad("\"replicas\": 4", "\"replicas\": 1").find("recipe.spec.sharing.timeSlicing.replicas") != std::string::npos);
  CHECK(bad("\"kube-prometheus-stack\"", "\"a b\"").find("recipe.spec.monitoring.prometheusLabels") != std::string::npos);
  CHECK(bad("\"dcgm\": {", "\"dc gm\": {").find("recipe.spec.components: 'dc gm' is not a component key") != std::string::npos);
  CHECK(bad("\"enabled\": true", "\"enabled\": \"yes\"").find("recipe.spec.components.dcgm") != std::string::npos);
  CHECK(bad("\"toolkit\": {", "\"hostPID\": true, \"toolkit\": {").find("recipe.spec.hostPID: unknown field 'hostPID'") != std::string::npos);
  CHECK(bad("\"nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04\"", "\"$(id)\"").find("recipe.spec.extraImages[0]") != std::string::npos);
  // target.gpus reaches diff, inventory and node check: terminal escapes refused.
  CHECK(bad("\"L4\"", "\"L4\\u001b[2J\"").find("target.gpus[0]: 'L4\\x1b[2J' is not a GPU name or PCI id") != std::string::npos);
}

TEST_CASE("a plain-HTTP destination survives the lock round trip; HTTPS writes no plainHttp", "[lock]") {
  Lock l = sample_lock();
  const std::string https = lock_to_json(l);
  CHECK(https.find("plainHttp") == std::string::npos);  // locks written before stay byte for byte
  CHECK_FALSE(parse_lock(https, "x.lock.json").value_or_throw().destination_plain_http);
  l.destination_plain_http = true;
  const std::string http = lock_to_json(l);
  CHECK(parse_lock(http, "x.lock.json").value_or_throw().destination_plain_http);
  CHECK(lock_error(replaced(http, "\"plainHttp\": true", "\"plainHttp\": \"yes\"")).find("x.lock.json") == 0);
}

TEST_CASE("lock limits: schema number, shape, nesting, counts, size", "[hostile][lock]") {
  const std::string good = lock_to_json(sample_lock());
  CHECK(lock_error(replaced(good, "\"schemaVersion\": 1", "\"schemaVersion\": 1099511627776")).find("is newer") != std::string::npos);
  CHECK(lock_error(replaced(good, "\"schemaVersion\": 1", "\"schemaVersion\": 0")).find("schemaVersion must be") != std::string::npos);
  CHECK(lock_error(replaced(good, "\"schemaVersion\": 1", "\"schemaVersion\": -4294967295")).find("schemaVersion must be") !=
        std::string::npos);
  CHECK(lock_error("[1, 2]").find("not a lock") != std::string::npos);

  std::string deep = replaced(good, "\"spec\": {}", "\"spec\": {\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  CHECK(lock_error(deep).find("nested deeper than 32 levels") != std::string::npos);

  std::string images = "[";
  for (size_t i = 0; i <= k_lock_max_images; ++i) images += "{},";
  images.back() = ']';
  auto many = lock_error(replaced(good, "\"images\": [", "\"images\": " + images + ", \"x\": ["));
  CHECK(many.find("images: more than 10000 entries") != std::string::npos);

  CHECK(lock_error(std::string(k_lock_max_bytes + 1, ' ')).find("larger than 16777216 bytes") != std::string::npos);
}

TEST_CASE("read_file with a limit refuses a larger file", "[hostile][limits]") {
  gbtest::TempDir dir;
  gbtest::spit(dir / "f", std::string(1000, 'x'));
  CHECK(read_file(dir / "f", 1000).value() == std::string(1000, 'x'));
  auto over = read_file(dir / "f", 999);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message == (dir / "f").string() + ": larger than 999 bytes");
}

TEST_CASE("messages: values are quoted, escaped and bounded", "[hostile][messages]") {
  CHECK(quote("site-a") == "'site-a'");
  CHECK(quote(std::string("a\0b\n\x1b[2J", 8)) == "'a\\x00b\\n\\x1b[2J'");
  CHECK(quote(std::string(100000, 'r')) == "'" + std::string(200, 'r') + "\u2026' (100000 bytes)");
  CHECK(quote("\xc3\xa9\xc3\xa9", 3) == "'\xc3\xa9\u2026' (4 bytes)");  // never cut inside a character

  CHECK(bounded_line(std::string("realm=\"x\0y\"", 11)) == "realm=\"x\\x00y\"");
  CHECK(bounded_line("two\nlines") == "two\\nlines");
  std::string realm = bounded_line("401 from registry: realm=\"" + std::string(100000, 'R') + "\" scope=pull");
  CHECK(realm.size() < 400);
  CHECK(realm.find("(100008 bytes) scope=pull") != std::string::npos);
  std::string spaced;
  for (int i = 0; i < 100000; ++i) spaced += "GPU ";
  auto line = bounded_line(spaced);
  CHECK(line.size() < 4200);
  CHECK(line.find("(400000 bytes in all)") != std::string::npos);
}

TEST_CASE("a private key others can read gets a warning that says chmod 600", "[hostile][keys]") {
  gbtest::TempDir dir;
  auto key = PrivateKey::generate(KeyType::Ed25519).value_or_throw();
  gbtest::spit(dir / "site.key", key.to_pem().value_or_throw());
  ::chmod((dir / "site.key").c_str(), 0600);
  int before = warning_count();
  REQUIRE(PrivateKey::load(dir / "site.key").ok());
  CHECK(warning_count() == before);
  ::chmod((dir / "site.key").c_str(), 0644);
  REQUIRE(PrivateKey::load(dir / "site.key").ok());
  CHECK(warning_count() == before + 1);
}

TEST_CASE("progress lines escape and bound names from untrusted input", "[hostile][progress]") {
  gbtest::TempDir dir;
  const fs::path out = dir / "stderr";
  std::string hostile = "nvcr.io/x:\x1b]0;owned\x07\r" + std::string(100000, 'A') + "\nforged line";
  for (auto style : {ProgressStyle::Plain, ProgressStyle::Tty}) {
    std::fflush(stderr);
    int saved = dup(2);
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    dup2(fd, 2);
    ::close(fd);
    {
      auto progress = make_progress(style);
      progress->begin("mirror", 0);
      progress->item(hostile, "done");
      progress->end(hostile);
    }
    std::fflush(stderr);
    dup2(saved, 2);
    ::close(saved);
    std::string text = gbtest::slurp(out);
    CHECK(text.find('\x07') == std::string::npos);
    CHECK(text.find("\x1b]") == std::string::npos);  // only the TTY's own clear-line codes
    CHECK(text.find("\nforged") == std::string::npos);
    CHECK(text.size() < 12000);
    CHECK(text.find("done nvcr.io/x:") != std::string::npos);
  }
}

TEST_CASE("a lock written before built images were typed reads the same and writes back the same", "[lock]") {
  // As `build --installer` and `node-image bake --lock` wrote it: origin is the
  // only mark, the component says what was built.
  const std::string d = "sha256:" + std::string(64, 'd'), o = "sha256:" + std::string(64, 'e');
  const std::string old = R"({
  "chart": {"appVersion": "v24.9.2", "name": "gpu-operator", "sha256": "", "source": "", "version": "v24.9.2"},
  "destination": null,
  "driver": {"branch": "550", "kernelModuleType": "open", "mode": "precompiled", "usePrecompiled": true, "version": ""},
  "generator": "gpubundle 0.1.0",
  "images": [
    {"components": ["nodeOverlay"], "destination": "", "digest": ")" + o + R"(", "origin": "built",
     "platforms": ["linux/amd64"], "source": "localhost/gpubundle/node-overlay:550.127.08-ubuntu22.04"},
    {"components": ["driver"], "destination": "", "digest": ")" + d + R"(", "origin": "built",
     "platforms": ["linux/amd64"], "source": "nvcr.io/nvidia/driver:550-5.15.0-122-generic-ubuntu22.04"},
    {"components": ["devicePlugin"], "destination": "", "digest": "", "origin": "upstream",
     "platforms": ["linux/amd64"], "source": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}
  ],
  "operator": {"version": "v24.9.2"},
  "recipe": {"file": "", "name": "site-a", "sha256": "", "spec": {}},
  "schemaVersion": 1,
  "target": {"gpus": [], "kernels": ["5.15.0-122-generic"], "os": "ubuntu22.04", "osTag": "ubuntu22.04",
             "platforms": ["linux/amd64"], "workloads": ["container"]},
  "warnings": []
})";
  Lock l = parse_lock(old, "old.lock.json").value_or_throw();
  REQUIRE(l.images.size() == 3);
  CHECK(l.images[0].built == BuiltKind::NodeOverlay);
  CHECK(l.images[1].built == BuiltKind::DriverImage);
  CHECK(l.images[2].upstream());
  auto drivers = l.precompiled_driver_images();
  REQUIRE(drivers.size() == 1);
  CHECK(drivers[0]->source == l.images[1].source);
  CHECK(lock_to_json(l) == lock_to_json(parse_lock(lock_to_json(l), "again").value_or_throw()));
  CHECK(lock_to_json(l).find("\"origin\": \"built\"") != std::string::npos);

  SECTION("record_built replaces an entry in place and adds a new one in order") {
    const std::string d2 = "sha256:" + std::string(64, 'f');
    record_built(l, {BuiltKind::DriverImage, l.images[1].source, d2, "linux/amd64"});
    CHECK(l.images.size() == 3);
    CHECK(l.images[1].digest == d2);
    CHECK(l.images[1].components == std::vector<std::string>{"driver"});
    record_built(l, {BuiltKind::DriverImage, "nvcr.io/nvidia/driver:550-6.1.0-9-amd64-ubuntu22.04", d2, "linux/arm64"});
    REQUIRE(l.images.size() == 4);
    CHECK(l.images[2].source == "nvcr.io/nvidia/driver:550-6.1.0-9-amd64-ubuntu22.04");  // sorted by source
    CHECK(l.images[2].built == BuiltKind::DriverImage);
    CHECK(l.images[2].platforms == std::vector<std::string>{"linux/arm64"});
    auto back = parse_lock(lock_to_json(l), "x").value_or_throw();
    CHECK(back.images[2].built == BuiltKind::DriverImage);
    // A new entry lands where the lock's destination rule puts every image.
    l.destination_registry = "registry.site:5000";
    l.destination_prefix = "gpu";
    record_built(l, {BuiltKind::PackageRepo, "localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab", d2, "linux/amd64"});
    const LockImage* repo = l.find("localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab");
    REQUIRE(repo);
    CHECK(repo->destination == "registry.site:5000/gpu/gpubundle/package-repo:ubuntu22.04-0123456789ab");
    // The tool image: its own component, and its kind comes back from the text.
    record_built(l, {BuiltKind::ToolImage, "localhost/gpubundle/gpubundle:0.1.0", d2, "linux/amd64"});
    const LockImage* tool = l.find("localhost/gpubundle/gpubundle:0.1.0");
    REQUIRE(tool);
    CHECK(tool->components == std::vector<std::string>{k_tool_image_component});
    CHECK(tool->destination == "registry.site:5000/gpu/gpubundle/gpubundle:0.1.0");
    auto again = parse_lock(lock_to_json(l), "y").value_or_throw();
    REQUIRE(again.find("localhost/gpubundle/gpubundle:0.1.0"));
    CHECK(again.find("localhost/gpubundle/gpubundle:0.1.0")->built == BuiltKind::ToolImage);
  }
  SECTION("built is only for a driver image or a node overlay") {
    auto odd = replaced(old, R"({"components": ["devicePlugin"], "destination": "", "digest": "", "origin": "upstream")",
                        R"({"components": ["devicePlugin"], "destination": "", "digest": "", "origin": "built")");
    CHECK(lock_error(odd).find("images[2].origin: \"built\" is for a driver image") != std::string::npos);
  }
  SECTION("no precompiled driver images outside precompiled mode") {
    l.driver.mode = "conventional";
    CHECK(l.precompiled_driver_images().empty());
  }
}
