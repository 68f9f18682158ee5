// The kit's files for `gpubundle serve` (docs/serve.md): a systemd unit for
// the first serving host, and a DaemonSet for more inside the cluster.
#include <yaml-cpp/yaml.h>

#include "kit/kit_detail.hpp"

namespace gb::kit::detail {

namespace {

// The port of "host:port" or "[v6]:port", else the scheme's.
std::string port_of(const SiteRegistry& r) {
  auto colon = r.host.rfind(':');
  if (colon != std::string::npos && r.host.find(']', colon) == std::string::npos) return r.host.substr(colon + 1);
  return r.plain_http ? "80" : "443";
}

// serve's arguments with the files below `root` and TLS files in `tls_dir`.
std::vector<std::string> serve_args(const KitOptions& o, const std::vector<std::string>& bundles, const std::string& root,
                                    const std::string& tls_dir) {
  std::vector<std::string> args{"serve"};
  for (const auto& b : bundles) args.push_back(root + "/var/lib/gpubundle/" + b);
  args.insert(args.end(), {"--pubkey", root + "/etc/gpubundle/release.pub", "--listen", ":" + port_of(o.registry)});
  if (!o.registry.prefix.empty()) args.insert(args.end(), {"--prefix", o.registry.prefix});
  if (o.layout == Layout::KeepHost) args.insert(args.end(), {"--layout", "keep-host"});
  if (!o.registry.plain_http) args.insert(args.end(), {"--tls-cert", tls_dir + "/serve.crt", "--tls-key", tls_dir + "/serve.key"});
  return args;
}

// Debian's dynamic loader and library folder for an architecture: the
// DaemonSet runs the host's binary through them (docs/serve.md).
struct HostLoader {
  const char* arch;
  const char* loader;
  const char* libs;
};
constexpr HostLoader k_loaders[] = {
    {"amd64", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu"},
    {"arm64", "/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", "/usr/lib/aarch64-linux-gnu"},
};

void map_entry(YAML::Emitter& out, const char* key, const std::string& value) { out << YAML::Key << key << YAML::Value << value; }

std::string daemon_set(const KitOptions& o, const std::vector<std::string>& bundles, const HostLoader& l) {
  const std::string name = std::string("gpubundle-serve-") + l.arch;
  std::vector<std::string> command{std::string("/host") + l.loader, "--library-path", std::string("/host") + l.libs, "/host/usr/local/bin/gpubundle"};
  for (auto& a : serve_args(o, bundles, "/host", "/host/etc/gpubundle")) command.push_back(std::move(a));
  YAML::Emitter out;
  out << YAML::BeginMap;
  map_entry(out, "apiVersion", "apps/v1");
  map_entry(out, "kind", "DaemonSet");
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  map_entry(out, "name", name);
  out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  map_entry(out, "app.kubernetes.io/name", "gpubundle-serve");
  map_entry(out, "app.kubernetes.io/managed-by", "gpubundle");
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "selector" << YAML::Value << YAML::BeginMap << YAML::Key << "matchLabels" << YAML::Value << YAML::BeginMap;
  map_entry(out, "app.kubernetes.io/instance", name);
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "template" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  map_entry(out, "app.kubernetes.io/name", "gpubundle-serve");
  map_entry(out, "app.kubernetes.io/instance", name);
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "hostNetwork" << YAML::Value << true;
  out << YAML::Key << "nodeSelector" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gpubundle.io/serve" << YAML::Value << YAML::DoubleQuoted << "true";  // a string, not YAML's boolean
  map_entry(out, "kubernetes.io/arch", l.arch);
  out << YAML::EndMap;
  out << YAML::Key << "tolerations" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  map_entry(out, "operator", "Exists");
  out << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  map_entry(out, "name", "serve");
  // Any image the node has serves: the container runs nothing of it. The
  // kubelet's own sandbox image is on every node; Never pulls nothing.
  map_entry(out, "image", "registry.k8s.io/pause:3.9");
  map_entry(out, "imagePullPolicy", "Never");
  out << YAML::Key << "command" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : command) out << c;
  out << YAML::EndSeq;
  out << YAML::Key << "readinessProbe" << YAML::Value << YAML::BeginMap << YAML::Key << "tcpSocket" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "port" << YAML::Value << std::stoi(port_of(o.registry)) << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "securityContext" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "allowPrivilegeEscalation" << YAML::Value << false;
  out << YAML::Key << "readOnlyRootFilesystem" << YAML::Value << true;
  out << YAML::Key << "capabilities" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "drop" << YAML::Value << YAML::Flow << YAML::BeginSeq << "ALL" << YAML::EndSeq;
  out << YAML::Key << "add" << YAML::Value << YAML::Flow << YAML::BeginSeq << "NET_BIND_SERVICE" << YAML::EndSeq << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq;
  for (const char* v : {"usr", "bundles", "keys"}) {
    out << YAML::BeginMap;
    map_entry(out, "name", v);
    map_entry(out, "mountPath", std::string(v) == "usr" ? "/host/usr" : std::string(v) == "bundles" ? "/host/var/lib/gpubundle" : "/host/etc/gpubundle");
    out << YAML::Key << "readOnly" << YAML::Value << true << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndSeq;  // containers
  out << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq;
  for (const char* v : {"usr", "bundles", "keys"}) {
    out << YAML::BeginMap;
    map_entry(out, "name", v);
    out << YAML::Key << "hostPath" << YAML::Value << YAML::BeginMap;
    map_entry(out, "path", std::string(v) == "usr" ? "/usr" : std::string(v) == "bundles" ? "/var/lib/gpubundle" : "/etc/gpubundle");
    map_entry(out, "type", "Directory");
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

Result<std::vector<KitFile>> serve_files(const recipes::Lock& lock, const KitOptions& o) {
  std::vector<std::string> bundles = o.serve_bundles.empty() ? std::vector<std::string>{"site.bundle"} : o.serve_bundles;
  // The names land in ExecStart and the DaemonSet's command as words: no quoting to get wrong.
  for (const auto& b : bundles)
    if (!is_word(b, "._-")) return input_error("bundle file name " + quote(b) + ": serve's unit takes letters, digits, '.', '_' and '-' only");
  std::string args = join(serve_args(o, bundles, "", "${CREDENTIALS_DIRECTORY}"), " ") + " --ready-file /run/gpubundle-serve/ready";
  std::string creds;
  if (!o.registry.plain_http)
    creds = "LoadCredential=serve.crt:/etc/gpubundle/serve.crt\nLoadCredential=serve.key:/etc/gpubundle/serve.key\n";
  std::string s =
      "# gpubundle serve for " + o.registry.str() + ": the GPU Operator's images, read-only, straight from the bundle\n"
      "# (docs/serve.md). Install on the serving host, outside the cluster's image pulls:\n"
      "#   install -m 0755 gpubundle /usr/local/bin/gpubundle\n"
      "#   install -d /var/lib/gpubundle /etc/gpubundle\n"
      "#   cp " + join(bundles, " ") + " /var/lib/gpubundle/    # every volume\n"
      "#   cp release.pub /etc/gpubundle/                          # the key the bundle is signed with\n" +
      (o.registry.plain_http ? "" : "#   cp serve.crt serve.key /etc/gpubundle/                  # its TLS certificate (chain) and key\n") +
      "#   cp gpubundle-serve.service /etc/systemd/system/\n"
      "#   systemctl daemon-reload && systemctl enable --now gpubundle-serve\n"
      "# Basic auth: add --htpasswd ${CREDENTIALS_DIRECTORY}/htpasswd to ExecStart and\n"
      "# LoadCredential=htpasswd:/etc/gpubundle/htpasswd below.\n"
      "[Unit]\n"
      "Description=gpubundle serve: read-only OCI registry from verified bundles\n"
      "After=network-online.target\n"
      "Wants=network-online.target\n"
      "\n"
      "[Service]\n"
      "Type=exec\n"
      "ExecStart=/usr/local/bin/gpubundle " + args + "\n" + creds +
      "RuntimeDirectory=gpubundle-serve\n"
      "DynamicUser=yes\n"
      "ReadOnlyPaths=/var/lib/gpubundle /etc/gpubundle\n"
      "ProtectSystem=strict\n"
      "ProtectHome=yes\n"
      "PrivateTmp=yes\n"
      "PrivateDevices=yes\n"
      "NoNewPrivileges=yes\n"
      "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n"
      "AmbientCapabilities=CAP_NET_BIND_SERVICE\n"
      "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n"
      "LimitNOFILE=65536\n"
      "KillSignal=SIGTERM\n"
      "Restart=on-failure\n"
      "\n"
      "[Install]\n"
      "WantedBy=multi-user.target\n";
  std::vector<KitFile> files{{"serve/gpubundle-serve.service", s, 0644}};
  std::string yaml = yaml_header(lock, o, "gpubundle serve inside the cluster, on nodes labelled gpubundle.io/serve=true (docs/serve.md)") +
                     "# Bootstrap order: serve is not an image. Its first instance runs outside the\n"
                     "# cluster's pulls (gpubundle-serve.service on a host); this DaemonSet adds more.\n"
                     "# Each runs the node's own /usr/local/bin/gpubundle (Debian 12's libraries, through\n"
                     "# the node's loader) against the bundles in its /var/lib/gpubundle and the key\n"
                     "# (and TLS files) in its /etc/gpubundle; its image is the kubelet's pause image,\n"
                     "# already on the node and never pulled (set it to your nodes' sandbox image).\n"
                     "# Apply with: kubectl apply -n NAMESPACE -f gpubundle-serve.yaml\n";
  bool first = true;
  for (const auto& l : k_loaders) {
    bool wanted = false;
    for (const auto& p : lock.platforms) wanted = wanted || p == std::string("linux/") + l.arch || starts_with(p, std::string("linux/") + l.arch + "/");
    if (!wanted) continue;
    yaml += (first ? "" : "---\n") + daemon_set(o, bundles, l);
    first = false;
  }
  if (!first) files.push_back({"serve/gpubundle-serve.yaml", yaml, 0644});
  return files;
}

}  // namespace gb::kit::detail
