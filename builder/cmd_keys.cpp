#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "signing/keys.hpp"
#include "signing/module_sign.hpp"
#include "signing/signature.hpp"

namespace gb::cli {

namespace {

struct PassphraseSource {
  std::string env;
  std::string file;

  void declare(CLI::App& app) {
    auto* e = app.add_option("--passphrase-env", env, "Read the key's passphrase from this environment variable");
    auto* f = app.add_option("--passphrase-file", file, "Read the key's passphrase from the first line of this file");
    e->excludes(f);
  }
  signing::Passphrase get() const {
    if (!env.empty()) return signing::Passphrase::from_env(env).value_or_throw();
    if (!file.empty()) return signing::Passphrase::from_file(file).value_or_throw();
    return {};
  }
};

void print_json(const nlohmann::json& j) { std::printf("%s\n", j.dump(2).c_str()); }

bool path_taken(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(p, ec));
}

}  // namespace

CommandSpec keys_command() {
  return {
      "keys",
      "Make signing keys, show key ids, sign and verify files, sign kernel modules",
      "`keys generate` writes NAME.key (PEM PKCS#8, mode 0600, AES-256 encrypted with a passphrase) and NAME.pub "
      "(PEM SubjectPublicKeyInfo) and prints the key id, the sha256 of the public key's DER. Ed25519 by default, "
      "ECDSA P-256 with --type ecdsa-p256. `keys id` prints a public key's id. `keys sign` and `keys verify` "
      "make and check detached signature files (format in docs/keys.md); verify trusts only the keys given with "
      "--pubkey or --keyring. `keys sign-module` is a utility that signs one kernel module the way the driver "
      "build does (CMS appended signature, byte-compatible with the kernel's scripts/sign-file): it needs an "
      "RSA or ECDSA key and its certificate. Private keys never leave the machine they are used on.",
      "gpubundle keys generate --out site-a --passphrase-env GB_KEY_PASS",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);

        // keys generate
        struct Gen {
          std::string out, type = "ed25519";
          PassphraseSource pass;
          bool force = false;
        };
        auto gen = std::make_shared<Gen>();
        CLI::App* gen_cmd = app.add_subcommand("generate", "Generate a key pair NAME.key / NAME.pub");
        gen_cmd->add_option("--out", gen->out, "Base name NAME of the files to write")->required();
        gen_cmd->add_option("--type", gen->type, "ed25519 (default) or ecdsa-p256");
        gen->pass.declare(*gen_cmd);
        gen_cmd->add_flag("--force", gen->force, "Replace existing NAME.key / NAME.pub");
        gen_cmd->footer("Example:\n  gpubundle keys generate --out site-a --passphrase-env GB_KEY_PASS");

        // keys id
        auto id_path = std::make_shared<std::string>();
        CLI::App* id_cmd = app.add_subcommand("id", "Print the key id of a public key (NAME.pub)");
        id_cmd->add_option("pubkey", *id_path, "Public key, PEM")->required();
        id_cmd->footer("Example:\n  gpubundle keys id release.pub");

        // keys sign
        struct Sign {
          std::string file, key, out;
          PassphraseSource pass;
        };
        auto sign = std::make_shared<Sign>();
        CLI::App* sign_cmd = app.add_subcommand("sign", "Write a detached signature of a file (FILE.sig)");
        sign_cmd->add_option("file", sign->file, "File to sign")->required();
        sign_cmd->add_option("--key", sign->key, "Private key (NAME.key)")->required();
        sign_cmd->add_option("-o,--output", sign->out, "Signature file (default FILE.sig)");
        sign->pass.declare(*sign_cmd);
        sign_cmd->footer("Example:\n  gpubundle keys sign site-a.lock.json --key release.key");

        // keys verify
        struct Verify {
          std::string file, sig, keyring;
          std::vector<std::string> pubkeys;
        };
        auto verify = std::make_shared<Verify>();
        CLI::App* verify_cmd = app.add_subcommand("verify", "Check a detached signature against trusted keys");
        verify_cmd->add_option("file", verify->file, "Signed file")->required();
        verify_cmd->add_option("--sig", verify->sig, "Signature file (default FILE.sig)");
        verify_cmd->add_option("--pubkey", verify->pubkeys, "Trusted public key (repeatable)");
        verify_cmd->add_option("--keyring", verify->keyring, "Folder of trusted *.pub keys");
        verify_cmd->footer("Example:\n  gpubundle keys verify site-a.lock.json --pubkey release.pub");

        // keys sign-module
        struct SignModule {
          std::string module, key, cert, out, hash = "sha256", strip = "strip";
          bool no_strip = false;
          PassphraseSource pass;
        };
        auto sm = std::make_shared<SignModule>();
        CLI::App* sm_cmd = app.add_subcommand(
            "sign-module", "Utility: sign one kernel module (.ko) with an RSA/ECDSA key and its X.509 certificate");
        sm_cmd->add_option("module", sm->module, "Kernel module, uncompressed ELF .ko")->required();
        sm_cmd->add_option("--sign-key", sm->key, "Private key, PEM (RSA or ECDSA)");
        sm_cmd->add_option("--sign-cert", sm->cert, "The key's X.509 certificate, PEM or DER");
        sm_cmd->add_option("-o,--output", sm->out, "Write the signed module here (default: in place)");
        sm_cmd->add_option("--hash", sm->hash, "sha256 (default), sha384 or sha512");
        sm_cmd->add_flag("--no-strip", sm->no_strip, "Keep debug info (default: strip --strip-debug first)");
        sm_cmd->add_option("--strip-program", sm->strip, "The binutils strip to run (default: strip from PATH)");
        sm->pass.declare(*sm_cmd);
        sm_cmd->footer("Example:\n  gpubundle keys sign-module nvidia.ko --sign-key mok.key --sign-cert mok.crt");

        // keys verify-module
        auto vm = std::make_shared<std::pair<std::string, std::string>>();
        CLI::App* vm_cmd =
            app.add_subcommand("verify-module", "Utility: check a signed module's signature against a certificate");
        vm_cmd->add_option("module", vm->first, "Signed kernel module")->required();
        vm_cmd->add_option("--cert", vm->second, "The signer's X.509 certificate, PEM or DER")->required();
        vm_cmd->footer("Example:\n  gpubundle keys verify-module nvidia.ko --cert mok.crt");

        return [&g, gen, gen_cmd, id_path, id_cmd, sign, sign_cmd, verify, verify_cmd, sm, sm_cmd, vm,
                vm_cmd]() -> int {
          if (vm_cmd->parsed()) {
            std::string data = read_file(vm->first).value_or_throw();
            signing::verify_module_signature(data, vm->first, vm->second).value_or_throw();
            log_info(vm->first + ": good signature by the key of " + vm->second);
            return 0;
          }
          if (gen_cmd->parsed()) {
            auto type = signing::parse_key_type(gen->type);
            if (!type || (*type != signing::KeyType::Ed25519 && *type != signing::KeyType::EcdsaP256))
              throw Error(input_error("--type " + gen->type + ": use ed25519 or ecdsa-p256"));
            std::filesystem::path key_path = gen->out + ".key", pub_path = gen->out + ".pub";
            if (!gen->force)
              for (const auto& p : {key_path, pub_path})
                if (path_taken(p)) throw Error(input_error(p.string() + " exists; use --force to replace it"));
            signing::Passphrase pass = gen->pass.get();
            signing::PrivateKey key = signing::PrivateKey::generate(*type).value_or_throw();
            std::string pem = key.to_pem(pass).value_or_throw();
            auto written = write_atomic(key_path, pem, 0600);
            signing::wipe_secret(pem);
            written.value_or_throw();
            write_atomic(pub_path, key.public_key().to_pem(), 0644).value_or_throw();
            std::string id = key.id();
            log_info("wrote " + key_path.string() + " (" + std::string(signing::key_type_name(*type)) +
                      (pass.set() ? ", encrypted" : ", not encrypted") + ") and " + pub_path.string());
            if (g.json)
              print_json({{"keyId", id}, {"type", signing::key_type_name(*type)}, {"privateKey", key_path.string()},
                          {"publicKey", pub_path.string()}, {"encrypted", pass.set()}});
            else
              std::printf("%s\n", id.c_str());
            return 0;
          }
          if (id_cmd->parsed()) {
            signing::PublicKey key = signing::PublicKey::load(*id_path).value_or_throw();
            if (g.json) print_json({{"keyId", key.id()}, {"type", signing::key_type_name(key.type())}});
            else std::printf("%s\n", key.id().c_str());
            return 0;
          }
          if (sign_cmd->parsed()) {
            signing::PrivateKey key = signing::PrivateKey::load(sign->key, sign->pass.get()).value_or_throw();
            std::string sig = signing::sign_file(key, sign->file).value_or_throw();
            std::string out = sign->out.empty() ? sign->file + ".sig" : sign->out;
            write_atomic(out, sig).value_or_throw();
            log_info("wrote " + out + " (key " + key.id() + ")");
            return 0;
          }
          if (verify_cmd->parsed()) {
            if (verify->pubkeys.empty() && verify->keyring.empty())
              throw Error(input_error("keys verify: give the trusted keys with --pubkey or --keyring"));
            signing::Keyring ring;
            if (!verify->keyring.empty()) ring = signing::Keyring::load_dir(verify->keyring).value_or_throw();
            for (const auto& p : verify->pubkeys) ring.add(signing::PublicKey::load(p).value_or_throw());
            std::string sig = verify->sig.empty() ? verify->file + ".sig" : verify->sig;
            std::string id = signing::verify_file(ring, verify->file, sig).value_or_throw();
            if (g.json) print_json({{"verified", true}, {"keyId", id}});
            else std::printf("%s\n", id.c_str());
            log_info(verify->file + ": good signature by key " + id);
            return 0;
          }
          if (sm_cmd->parsed()) {
            if (sm->key.empty()) throw Error(input_error("keys sign-module: --sign-key is required"));
            signing::ModuleSigner signer = signing::ModuleSigner::load(sm->key, sm->cert, sm->pass.get()).value_or_throw();
            signing::ModuleSignOptions opts;
            opts.hash = sm->hash;
            opts.strip_debug = !sm->no_strip;
            opts.strip_program = sm->strip;
            std::string out = sm->out.empty() ? sm->module : sm->out;
            signing::ModuleSignReport r = signing::sign_module_file(signer, sm->module, out, opts).value_or_throw();
            log_info("signed " + out + (r.had_signature ? " (old signature replaced)" : "") + " by \"" +
                      signer.subject() + "\", certificate sha256 " + signer.fingerprint());
            if (g.json)
              print_json({{"module", out},
                          {"signer", signer.common_name()},
                          {"subject", signer.subject()},
                          {"fingerprint", "sha256:" + signer.fingerprint()},
                          {"keyType", signing::key_type_name(signer.key_type())},
                          {"replacedSignature", r.had_signature},
                          {"stripped", opts.strip_debug},
                          {"size", r.signed_size}});
            return 0;
          }
          return 2;
        };
      },
  };
}

}  // namespace gb::cli
