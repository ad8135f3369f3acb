// tune-engine keys: makes the CURVE key pair of an event stream off loopback.
#include <fmt/core.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "commands.hpp"
#include "tune/storage/event_stream.hpp"

namespace tune::cli {
namespace {

struct keys_options {
  std::string out;
  bool force = false;
};

void write_key(const std::filesystem::path& file, const std::string& key, mode_t mode) {
  {
    std::ofstream out(file, std::ios::trunc);
    out << key << "\n";
    if (!out) throw std::runtime_error("cannot write " + file.string());
  }
  if (::chmod(file.c_str(), mode) != 0) throw std::runtime_error("cannot set the permissions of " + file.string());
}

int run_keys(const keys_options& o) {
  std::filesystem::path dir(o.out);
  auto secret = dir / "events.key";
  auto pub = dir / "events.pub";
  std::error_code ec;
  if (!o.force && (std::filesystem::exists(secret, ec) || std::filesystem::exists(pub, ec)))
    throw input_error("--out " + o.out +
                      ": events.key or events.pub exists already; choose another folder or add "
                      "--force to replace them");
  std::filesystem::create_directories(dir, ec);
  if (ec) throw input_error("--out " + o.out + ": cannot create the folder (" + ec.message() + ")");
  auto keys = storage::make_curve_keypair();
  write_key(secret, keys.secret_key, 0600);  // stays with the publisher
  write_key(pub, keys.public_key, 0644);     // given to the readers
  fmt::print("{}\n", keys.public_key);
  fmt::print(stderr,
             "wrote {} (secret: 'tune-engine tune --publish tcp://HOST:PORT --publish-key {}') and {} (public: "
             "'tune-engine watch tcp://HOST:PORT --server-key {}')\n",
             secret.string(), secret.string(), pub.string(), pub.string());
  return exit_ok;
}

}  // namespace

void add_keys_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<keys_options>();
  auto* sub = app.add_subcommand("keys", "Make the CURVE key pair of an event stream off loopback");
  sub->add_option("--out", options->out, "Folder for events.key (secret) and events.pub (public)")->required();
  sub->add_flag("--force", options->force, "Replace keys that exist");
  commands.emplace_back(sub, [options] { return run_keys(*options); });
}

}  // namespace tune::cli
