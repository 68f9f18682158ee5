// The kit's systemd unit for `gpubundle serve` (docs/serve.md).
#include "kit/kit_detail.hpp"

namespace gb::kit::detail {

namespace {

// The port of "host:port" or "[v6]:port", else the scheme's.
std::string port_of(const SiteRegistry& r) {
  auto colon = r.host.rfind(':');
  if (colon != std::string::npos && r.host.find(']', colon) == std::string::npos) return r.host.substr(colon + 1);
  return r.plain_http ? "80" : "443";
}

}  // namespace

Result<KitFile> serve_unit(const KitOptions& o) {
  std::vector<std::string> bundles = o.serve_bundles.empty() ? std::vector<std::string>{"site.bundle"} : o.serve_bundles;
  // The names land in ExecStart as words: no quoting to get wrong.
  for (const auto& b : bundles)
    if (!is_word(b, "._-")) return input_error("bundle file name " + quote(b) + ": serve's unit takes letters, digits, '.', '_' and '-' only");
  std::string port = port_of(o.registry);
  std::string args = "serve";
  for (const auto& b : bundles) args += " /var/lib/gpubundle/" + b;
  args += " --pubkey /etc/gpubundle/release.pub --listen :" + port;
  if (!o.registry.prefix.empty()) args += " --prefix " + o.registry.prefix;
  if (o.layout == Layout::KeepHost) args += " --layout keep-host";
  args += " --ready-file /run/gpubundle-serve/ready";
  std::string creds;
  if (!o.registry.plain_http) {
    args += " --tls-cert ${CREDENTIALS_DIRECTORY}/serve.crt --tls-key ${CREDENTIALS_DIRECTORY}/serve.key";
    creds = "LoadCredential=serve.crt:/etc/gpubundle/serve.crt\nLoadCredential=serve.key:/etc/gpubundle/serve.key\n";
  }
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
  return KitFile{"serve/gpubundle-serve.service", s, 0644};
}

}  // namespace gb::kit::detail
