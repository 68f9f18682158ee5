// gpubundle serve: a read-only OCI registry over verified bundles or a store.
#include <pthread.h>
#include <unistd.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "serve/content.hpp"
#include "serve/http_server.hpp"
#include "signing/keys.hpp"

namespace gb::cli {

namespace {

struct ServeArgs {
  std::vector<std::string> bundles, pubkeys;
  std::string keyring, listen, prefix, layout = "strip-host", tls_cert, tls_key, htpasswd, access_log = "-", ready_file;
  bool skip_signature = false;
  bool verify_all = false;
  unsigned threads = 0;
  unsigned max_connections = 1024;
  unsigned max_per_client = 128;
  int idle_timeout = 30;
};

// "HOST:PORT", "[V6]:PORT" or ":PORT" (every IPv4 address).
std::pair<std::string, int> parse_listen(const std::string& text) {
  auto colon = text.rfind(':');
  std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
  std::string port = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || !is_digits(port) || std::stoi(port) > 65535)
    throw Error(ErrorKind::Input, "--listen " + quote(text) + ": not HOST:PORT (a port 0-65535)");
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host.empty() ? "0.0.0.0" : host, std::stoi(port)};
}

// Blocks SIGTERM and SIGINT in this thread and every thread it starts after,
// so that only sigwait() sees them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int run_serve(Globals& g, const ServeArgs& a) {
  serve::ContentOptions co;
  co.prefix = a.prefix;
  co.layout = kit::parse_layout(a.layout).value_or_throw();
  co.verify_all = a.verify_all;
  if (!a.prefix.empty() && !kit::SiteRegistry::parse("serve/" + a.prefix))
    throw Error(ErrorKind::Input, "--prefix " + quote(a.prefix) + ": not a repository path");
  auto [address, port] = parse_listen(a.listen);
  serve::ServerOptions so;
  so.address = address;
  so.port = port;
  so.threads = a.threads ? a.threads : std::max(4u, 2 * std::thread::hardware_concurrency());
  so.max_connections = a.max_connections;
  so.max_connections_per_client = a.max_per_client;
  so.idle_timeout = std::chrono::seconds(a.idle_timeout);
  if (a.tls_cert.empty() != a.tls_key.empty()) throw Error(ErrorKind::Input, "serve needs --tls-cert and --tls-key together");
  if (!a.tls_cert.empty()) {
    so.tls_cert_pem = read_file(a.tls_cert, 1 << 20).value_or_throw();
    so.tls_key_pem = read_file(a.tls_key, 1 << 20).value_or_throw();
  }
  std::optional<serve::Users> users;
  if (!a.htpasswd.empty()) {
    users = serve::Users::parse(read_file(a.htpasswd, 16 << 20).value_or_throw(), a.htpasswd).value_or_throw();
    if (so.tls_cert_pem.empty()) log_warn("serve: --htpasswd without TLS: clients send their passwords in the clear");
  }

  std::unique_ptr<serve::Content> content;
  if (!a.bundles.empty()) {
    if (g.store_flag) throw Error(ErrorKind::Input, "serve takes bundles or --store, not both");
    signing::Keyring keys;
    co.trusted = bundle_trust(keys, a.pubkeys, a.keyring, a.skip_signature, "serve");
    std::vector<std::filesystem::path> volumes(a.bundles.begin(), a.bundles.end());
    content = serve::Content::from_bundles(volumes, co).value_or_throw();
  } else if (g.store_given) {
    content = serve::Content::from_store(g.store, co).value_or_throw();
  } else {
    throw Error(ErrorKind::Input, "serve needs BUNDLE... (its volumes) or --store DIR");
  }

  std::FILE* log_file = stdout;
  if (a.access_log != "-") {
    log_file = std::fopen(a.access_log.c_str(), "ae");
    if (!log_file) throw Error(ErrorKind::Input, "--access-log " + a.access_log + ": cannot open it for appending");
  }
  std::mutex log_mu;
  auto access = [&](const serve::AccessRecord& r) {
    std::string line = serve::to_json_line(r) + "\n";
    std::lock_guard lock(log_mu);
    std::fwrite(line.data(), 1, line.size(), log_file);
    std::fflush(log_file);
  };

  // Every connection is a descriptor: take the hard limit, so --max-connections
  // and not a default soft limit of 1024 is what bounds them.
  if (rlimit nofile{}; getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  sigset_t stop = block_stop_signals();
  serve::RegistryApi api(content->catalog(), *content, users ? &*users : nullptr);
  auto server = serve::HttpServer::start(so, [&api](const serve::HttpRequest& r) { return api.handle(r); }, access).value_or_throw();
  std::string scheme = so.tls_cert_pem.empty() ? "http" : "https";
  std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  std::string url = scheme + "://" + host + ":" + std::to_string(server.port());
  log_info("serve: " + std::to_string(content->images()) + " images in " + std::to_string(content->catalog().repositories.size()) +
            " repositories at " + url + "/v2/" + (users ? " (basic auth)" : "") + "; read-only; SIGTERM stops it");
  if (!a.ready_file.empty()) {
    nlohmann::json ready = {{"url", url}, {"port", server.port()}, {"images", content->images()}, {"pid", ::getpid()}};
    write_atomic(a.ready_file, ready.dump() + "\n").value_or_throw();
  }
  int sig = 0;
  sigwait(&stop, &sig);
  log_info(std::string("serve: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
  server.stop();
  if (!a.ready_file.empty()) std::filesystem::remove(a.ready_file);
  if (log_file != stdout) std::fclose(log_file);
  return 0;
}

}  // namespace

CommandSpec serve_command() {
  return {
      "serve",
      "Serve verified bundles (or a store) as a read-only OCI registry, for sites without one",
      "Verifies each bundle as import does (signature, every header, the manifests and the OCI closure; every volume of "
      "each, and a delta's base bundle too), then serves the OCI distribution pull API straight from the bundle files: "
      "blob bytes are read in place, each blob hashed on its first read (or all first, with --verify-all) and sent only "
      "once it matched. Images are served under the names a site registry with --prefix and --layout would give them, "
      "the names the install kit uses (`overrides --serve`, `import --serve`). Nothing can be written: push, delete and "
      "uploads are refused. TLS from --tls-cert/--tls-key, basic auth from an htpasswd file (bcrypt), access logs as JSON "
      "lines. Runs until SIGTERM or SIGINT. With --store instead of bundles it serves every image of that store. docs/serve.md.",
      "gpubundle serve site-a.bundle --pubkey release.pub --listen :5000 --tls-cert serve.crt --tls-key serve.key",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto a = std::make_shared<ServeArgs>();
        app.add_option("bundles", a->bundles, "Bundle volumes (every volume of each bundle; a delta with its base)");
        app.add_option("--listen", a->listen, "HOST:PORT to listen on (:PORT for every IPv4 address, [::]:PORT for IPv6)")->required();
        app.add_option("--pubkey", a->pubkeys, "Trusted public key (repeatable)");
        app.add_option("--keyring", a->keyring, "Folder of trusted *.pub keys");
        app.add_flag("--insecure-skip-signature", a->skip_signature, "Serve without checking the signature (loudly warned)");
        app.add_option("--prefix", a->prefix, "Repository prefix the images are served under, as import's --registry HOST/PREFIX");
        app.add_option("--layout", a->layout, "strip-host (default) or keep-host, as import's");
        app.add_option("--tls-cert", a->tls_cert, "Server certificate (PEM, chain included)");
        app.add_option("--tls-key", a->tls_key, "Its private key (PEM)");
        app.add_option("--htpasswd", a->htpasswd, "htpasswd file of bcrypt users (htpasswd -B): basic auth on every request");
        app.add_flag("--verify-all", a->verify_all, "Hash every blob before serving, instead of each on its first read");
        app.add_option("--access-log", a->access_log, "File to append JSON access lines to (default: stdout)");
        app.add_option("--ready-file", a->ready_file, "Written (JSON: url, port, images, pid) once serving; removed on stop");
        app.add_option("--threads", a->threads, "Server threads (default: twice the cores, at least 4)");
        app.add_option("--max-connections", a->max_connections, "Open connections in all (default 1024; more are closed at once)");
        app.add_option("--max-connections-per-client", a->max_per_client, "Open connections per client address (default 128)");
        app.add_option("--idle-timeout", a->idle_timeout, "Seconds an idle connection is kept (default 30)");
        return [&g, a] { return run_serve(g, *a); };
      },
  };
}

}  // namespace gb::cli
