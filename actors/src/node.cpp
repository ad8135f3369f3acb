// The node: one untyped actor published over the middleman that opens one
// session at a time and hands the coordinator its measurers. See nodes.hpp.
#include <unistd.h>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tune/actors/nodes.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/device_lease.hpp"
#include "tune/kernels/multi_task_backend.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/task.hpp"
#include "tune/storage/loopback.hpp"

#ifndef TUNE_ENGINE_VERSION
#error "TUNE_ENGINE_VERSION must be defined by the build"
#endif

namespace tune::actors {

std::string engine_version() {
  // For the refusal test only: a node that claims another version.
  if (const char* forced = std::getenv("TUNE_ENGINE_VERSION_OVERRIDE"); forced && *forced) return forced;
  return TUNE_ENGINE_VERSION;
}

std::string message_set_signature() {
  // Bump the leading number when a type below changes its fields.
  return "nodes-6 caf-" + std::to_string(CAF_VERSION) +
         " candidate(id,config,reference_ms,build_limit_s) compiled_candidate(cand,build,unbuilt,artifact_bytes) "
         "build_result(state,artifact,compile_s,message)"
         " run_result(state,time_ms,run_s,message,objectives,repeats,times_ms,stopped_early,kernel_s) "
         "measured_trial(candidate_id,config,state,time_ms,objectives,compile_s,run_s,device_id,message,finished_s,"
         "reused_from_run,abandoned,repeats,times_ms,stopped_early,kernel_s,drift_flagged,drift_suspects,probe_s,drift,"
         "duel_ms,duel_best_ms,duel_s,duel_skipped,built_idle) "
         "stage_stats(workers,busy_s,window_s,cpu_s,background_workers,background_busy_s,background_build_s) "
         "measurer(measure,stats) build_worker(build) open(json,measurers,builders)";
}

namespace {
caf::timespan to_timespan(double seconds) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(seconds));
}
}  // namespace

void configure_network(caf::actor_system_config& config, const network_options& network) {
  config.load<caf::io::middleman>();
  config.set("middleman.heartbeat-interval", to_timespan(network.heartbeat_s));
  config.set("middleman.connection-timeout", to_timespan(network.connection_timeout_s));
  if (network.tls()) {
    config.load<caf::openssl::manager>();
    config.set("openssl.certificate", network.certificate);
    config.set("openssl.key", network.key);
    config.set("openssl.cafile", network.cafile);
  }
}

backend_ptr make_node_backend(const node_task& task, const std::string& payload, const std::string& node_backend) {
  if (task.kind == node_task::kind_t::multi) {
    std::uint64_t total = 0;
    for (auto bytes : task.part_bytes) total += bytes;
    if (task.parts.empty() || task.part_bytes.size() != task.parts.size() || total != payload.size())
      throw std::invalid_argument("the parts' byte counts add up to " + std::to_string(total) + ", the payload has " +
                                  std::to_string(payload.size()));
    std::vector<backend_ptr> parts;
    std::size_t at = 0;
    for (std::size_t i = 0; i < task.parts.size(); ++i) {
      auto part = task.parts[i];
      if (part.kind == node_task::kind_t::multi) throw std::invalid_argument("a multi task's part is a multi task");
      part.seed = task.seed;
      part.time_scale = task.time_scale;
      parts.push_back(make_node_backend(part, payload.substr(at, task.part_bytes[i]), node_backend));
      at += task.part_bytes[i];
    }
    return std::make_shared<multi_task_backend>(std::move(parts));
  }
  if (task.kind == node_task::kind_t::task) {
    if (node_backend == "replay")
      throw std::invalid_argument("this node offers replay devices; a built-in task needs cpu, cuda or hip devices");
    task_backend_options ko;
    ko.first_core = 0;
    ko.threads = task.threads;
    if (task.measurement) ko.measurement = *task.measurement;
    return make_task_backend(task.task, node_backend, ko);
  }
  if (node_backend != "replay")
    throw std::invalid_argument("this node offers " + node_backend +
                                " devices; a replayed dataset needs replay devices");
  const auto& name = task.dataset_name;
  kind_overrides overrides(task.kinds.begin(), task.kinds.end());
  // The reader picks the format from the name and content: keep the name.
  auto dir = std::filesystem::temp_directory_path() /
             ("tune-node-" + std::to_string(::getpid()) + "-" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  auto file = dir / name;
  {
    std::ofstream out(file, std::ios::binary);
    out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    if (!out) throw std::runtime_error("cannot write the dataset to " + file.string());
  }
  std::shared_ptr<const replay_dataset> dataset;
  try {
    dataset = std::make_shared<const replay_dataset>(read_replay_dataset(file.string(), overrides));
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  std::filesystem::remove_all(dir);
  replay_backend_options ro;
  ro.time_scale = task.time_scale;
  ro.seed = task.seed;
  return make_replay_backend(dataset, ro);
}

namespace {

/// A plain file name of the compile cache: letters, digits, '.', '_', '-'.
bool plain_file_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name[0] == '.') return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

}  // namespace

std::string materialize_artifact(compiled_candidate& compiled) {
  const auto& name = compiled.build.artifact;
  if (!plain_file_name(name)) return "the artifact's name '" + name + "' is not a plain file name";
  auto file = std::filesystem::path(kernel_cache_dir({})) / "received" / name;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return "cannot create " + file.parent_path().string() + ": " + ec.message();
  if (auto problem = compile_cache::write_file(file, compiled.artifact_bytes); !problem.empty()) return problem;
  compiled.build.artifact = file.string();
  compiled.artifact_bytes.clear();
  compiled.artifact_bytes.shrink_to_fit();
  return {};
}

std::string pack_artifact(compiled_candidate& compiled) {
  if (compiled.build.artifact.empty()) return {};
  std::filesystem::path file(compiled.build.artifact);
  std::ifstream in(file, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) return "cannot read the artifact " + file.string();
  compiled.artifact_bytes = bytes.str();
  compiled.build.artifact = file.filename().string();
  return {};
}

namespace {

using trial_promise = caf::typed_response_promise<measured_trial>;

measured_trial failed(const compiled_candidate& compiled, status state, std::string message, std::int32_t device) {
  measured_trial trial;
  trial.candidate_id = compiled.cand.id;
  trial.config = compiled.cand.config;
  trial.state = state;
  trial.compile_s = compiled.build.compile_s;
  trial.device_id = device;
  trial.message = std::move(message);
  return trial;
}

/// A node's compile worker for the coordinator's pool: builds, then sends the
/// artifact's bytes (the measuring machine writes them to its cache).
build_worker_actor::behavior_type packing_build_worker(build_worker_actor::pointer, backend_ptr backend,
                                                       double timeout_s, build_placement placement) {
  return {
      [backend, timeout_s, placement](build_atom, candidate& cand) {
        apply_build_placement(placement);
        auto out = build_candidate(*backend, std::move(cand), timeout_s);
        if (out.build.state == status::ok)
          if (auto problem = pack_artifact(out); !problem.empty()) {
            out.build.state = status::unknown;
            out.build.message = problem;
          }
        return out;
      },
  };
}

struct node_measurer_state {
  measurer_actor inner;
  build_worker_actor builder;
  std::int32_t device = 0;
  /// The builder runs at idle priority on the device's own cores: its builds
  /// wait for the measuring, so none is held to the pool's build limit.
  bool idle_builds = false;
  static inline const char* name = "node_measurer";
};

using node_measurer_pointer = measurer_actor::stateful_pointer<node_measurer_state>;

void measure_built(node_measurer_pointer self, compiled_candidate compiled, trial_promise promise,
                   bool built_idle = false) {
  // The local measurer answers every request (its own timeouts make failed
  // runs trials); the coordinator's request bounds the wait.
  self->request(self->state.inner, caf::infinite, measure_atom::value, compiled)
      .then(
          [promise, built_idle](measured_trial& trial) mutable {
            trial.built_idle = built_idle;
            promise.deliver(std::move(trial));
          },
          [self, promise, compiled](caf::error& err) mutable {
            promise.deliver(failed(compiled, status::unknown, "measurer gave no answer: " + self->system().render(err),
                                   self->state.device));
          });
}

/// A node's measurer for real kernels: builds what arrives unbuilt on a build
/// thread of its own (the next candidates build while one runs), writes an
/// artifact that arrives as bytes into the cache, then measures on the
/// device with the pipeline's measurer.
measurer_actor::behavior_type node_measurer(node_measurer_pointer self, backend_ptr backend, measurer_options options,
                                            double compile_timeout_s, build_placement builder_placement) {
  auto& st = self->state;
  st.device = options.device;
  st.inner = spawn_measurer(self->system(), backend, options);
  st.idle_builds = builder_placement.idle_priority;
  st.builder = spawn_build_worker(self->system(), backend, compile_timeout_s, std::move(builder_placement));
  self->link_to(st.inner);
  self->link_to(st.builder);
  return {
      [self](measure_atom, compiled_candidate& compiled) {
        auto promise = self->make_response_promise<measured_trial>();
        if (!compiled.unbuilt) {
          if (!compiled.artifact_bytes.empty())
            if (auto problem = materialize_artifact(compiled); !problem.empty()) {
              promise.deliver(
                  failed(compiled, status::unknown, "cannot store the artifact: " + problem, self->state.device));
              return promise;
            }
          measure_built(self, std::move(compiled), promise);
          return promise;
        }
        auto cand = compiled.cand;
        if (self->state.idle_builds) cand.build_limit_s = std::nan("");
        self->request(self->state.builder, caf::infinite, build_atom::value, std::move(cand))
            .then(
                [self, promise](compiled_candidate& built) mutable {
                  const bool idle = self->state.idle_builds;
                  if (built.build.state != status::ok) {
                    auto state = built.build.state;
                    auto message = built.build.message;
                    auto trial = failed(built, state, std::move(message), self->state.device);
                    trial.built_idle = idle;
                    promise.deliver(std::move(trial));
                    return;
                  }
                  measure_built(self, std::move(built), promise, idle);
                },
                [self, promise, compiled](caf::error& err) mutable {
                  promise.deliver(failed(compiled, status::unknown,
                                         "build worker gave no answer: " + self->system().render(err),
                                         self->state.device));
                });
        return promise;
      },
      [self](stats_atom, double from, double to) {
        return self->delegate(self->state.inner, stats_atom::value, from, to);
      },
      [](tick_atom) {},  // the timer of the measurer inside; this one sets none
  };
}

struct node_state {
  node_server_options options;
  caf::actor_addr owner;  ///< the actor that opened the session
  caf::node_id owner_node;
  std::vector<caf::actor> measurers;
  std::vector<caf::actor> builders;
  device_lease lease;  ///< the session's devices' cores or GPUs (device_lease.hpp)
  std::string since;
  static inline const char* name = "tune_node";
};

using node_pointer = caf::stateful_actor<node_state>*;

nlohmann::json offer(const node_state& st) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : st.options.devices) devices.push_back(d.name);
  return {{"ok", true},
          {"version", engine_version()},
          {"types", message_set_signature()},
          {"backend", st.options.backend},
          {"devices", devices},
          {"compile_workers", st.options.backend == "replay" ? 0u : st.options.compile_workers},
          {"busy", static_cast<bool>(st.owner)}};
}

using open_result = caf::result<std::string, std::vector<caf::actor>, std::vector<caf::actor>>;

/// The largest dataset a node takes (the vendored ones are a few MB).
constexpr std::size_t max_payload_bytes = std::size_t{1} << 30;

open_result refusal(const std::string& error) {
  return open_result(nlohmann::json{{"ok", false}, {"error", error}}.dump(), std::vector<caf::actor>{},
                     std::vector<caf::actor>{});
}

void end_session(node_pointer self, const char* why) {
  auto& st = self->state;
  for (auto* group : {&st.measurers, &st.builders})
    for (auto& m : *group) {
      self->unlink_from(m);
      self->send_exit(m, caf::exit_reason::user_shutdown);
    }
  st.lease.release();  // before it is said: a reader of the message may lease at once
  if (st.owner) std::fprintf(stderr, "node: session ended (%s)\n", why);
  st.measurers.clear();
  st.builders.clear();
  st.owner = caf::actor_addr{};
  st.owner_node = caf::node_id{};
}

caf::behavior node_actor(node_pointer self, node_server_options options) {
  self->state.options = std::move(options);
  self->set_down_handler([self](caf::down_msg& down) {
    if (down.source == self->state.owner) end_session(self, "the coordinator is gone");
  });
  return {
      [self](hello_atom, const std::string& version, const std::string& types) {
        auto reply = offer(self->state);
        if (version != engine_version() || types != message_set_signature()) {
          reply["ok"] = false;
          reply["error"] = version != engine_version()
                               ? "version mismatch: this node runs tune-engine " + engine_version() +
                                     ", the coordinator " + version + "; run the same version on both"
                               : "message types differ although both run tune-engine " + version +
                                     "; rebuild both from the same sources";
        }
        return reply.dump();
      },
      [self](open_atom, const std::string& task, const std::string& payload, const caf::actor& owner) -> open_result {
        auto& st = self->state;
        auto sender = caf::actor_cast<caf::strong_actor_ptr>(owner);
        if (!sender) return refusal("open needs the coordinator's actor that owns the session");
        if (st.owner && sender->node() != st.owner_node)
          return refusal("busy: node " + st.options.host + ":" + std::to_string(st.options.port) +
                         " serves the run of another coordinator since " + st.since +
                         "; a node serves one run at a time, try again when it ends");
        if (payload.size() > max_payload_bytes)
          return refusal("the task's data is " + std::to_string(payload.size()) + " bytes; a node takes at most " +
                         std::to_string(max_payload_bytes));
        end_session(self, "the coordinator opened a new session");
        node_task job;
        backend_ptr backend;
        try {
          job = node_task::from_json(task);
          backend = make_node_backend(job, payload, st.options.backend);
        } catch (const std::exception& e) {
          return refusal(std::string("cannot build the task here: ") + e.what());
        }
        std::vector<std::size_t> chosen;
        for (auto index : job.devices) {
          if (index >= st.options.devices.size())
            return refusal("devices: " + std::to_string(index) + " is not one of this node's " +
                           std::to_string(st.options.devices.size()) + " devices (indices from 0)");
          chosen.push_back(index);
        }
        if (job.devices.empty())
          for (std::size_t d = 0; d < st.options.devices.size(); ++d) chosen.push_back(d);
        bool real = job.builds_kernels();
        // The devices' cores or GPUs, leased for the session as a local run
        // leases them: another run on this machine holding one is a refusal,
        // which the coordinator retries as it retries a busy node.
        device_lease lease;
        if (real) {
          std::vector<std::string> resources;
          for (auto index : chosen) {
            auto r = backend->device_resources(st.options.devices[index].id);
            resources.insert(resources.end(), r.begin(), r.end());
          }
          std::string taken;
          lease_holder holder;
          try {
            auto got = try_lease(resources, &taken, &holder);
            if (!got)
              return refusal("busy: " + taken + " is leased by " + holder.describe() +
                             " (another run on the node's machine); try again when it ends");
            lease = std::move(*got);
          } catch (const std::exception& e) {
            return refusal(std::string("cannot lease the devices here: ") + e.what());
          }
        }
        auto limits = job.timeouts.value_or(st.options.timeouts);
        double compile_timeout_s = limits.compile_s;
        // Builds stay off the cores the devices measure on; where no other
        // core is left, a device's own builder builds on its cores at idle
        // priority (its runs take them back at once).
        std::vector<int> measuring;
        std::vector<std::vector<int>> cores_of;  // each chosen device's, in turn
        for (auto index : chosen) {
          cores_of.push_back(backend->measuring_cores(st.options.devices[index].id));
          measuring.insert(measuring.end(), cores_of.back().begin(), cores_of.back().end());
        }
        const auto plan = plan_builds(measuring, thread_cpu_set(), false);
        for (std::size_t i = 0; i < chosen.size(); ++i) {
          const auto index = chosen[i];
          measurer_options m;
          m.device = st.options.devices[index].id;
          m.timing.timeouts = limits;
          m.timing.time_scale = job.time_scale > 0 ? job.time_scale : 1.0;
          m.early_stop = job.early_stop;
          m.duel.rounds = 0;  // a node's devices neither probe their drift nor duel
          m.multi_task = job.kind == node_task::kind_t::multi;
          build_placement builder{plan.worker_cores, false};
          if (builder.cores.empty()) builder = {cores_of[i], true};
          auto measurer = real ? self->system().spawn(node_measurer, backend, m, compile_timeout_s, builder)
                               : spawn_measurer(self->system(), backend, m);
          st.measurers.push_back(caf::actor_cast<caf::actor>(measurer));
          // Linked: a node that is stopped ends its session's measurers too.
          self->link_to(st.measurers.back());
        }
        for (std::uint32_t w = 0; real && w < st.options.compile_workers; ++w) {
          st.builders.push_back(caf::actor_cast<caf::actor>(self->system().spawn<caf::detached>(
              packing_build_worker, backend, compile_timeout_s, build_placement{plan.worker_cores, false})));
          self->link_to(st.builders.back());
        }
        st.lease = std::move(lease);
        st.owner = caf::actor_cast<caf::actor_addr>(sender);
        st.owner_node = sender->node();
        self->monitor(sender);
        auto now = std::time(nullptr);
        char stamp[32];
        std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
        st.since = stamp;
        std::fprintf(stderr, "node: session opened by %s (%zu measurers, %zu compile workers)\n",
                     caf::to_string(sender->node()).c_str(), st.measurers.size(), st.builders.size());
        return open_result(offer(st).dump(), st.measurers, st.builders);
      },
      [self](close_atom) {
        auto sender = self->current_sender();
        if (sender && self->state.owner && sender->node() == self->state.owner_node) end_session(self, "the run ended");
      },
  };
}

}  // namespace

void serve_node(const node_server_options& options) {
  if (options.devices.empty()) throw std::invalid_argument("a node needs at least one device");
  if (!storage::is_loopback_host(options.host) && !options.network.tls())
    throw std::invalid_argument(
        options.listen_option + " " + options.host +
        ": a node off loopback needs TLS; add a 'tls:' section (certificate, key, "
        "cafile) to the node's topology — scripts/make_certs.sh makes a test CA and certificates (docs/nodes.md)");
  caf::actor_system_config config;
  register_message_types(config);
  config.set("scheduler.max-threads", options.scheduler_threads);
  config.set("scheduler.policy", caf::atom("sharing"));
  config.set("logger.verbosity", caf::atom("quiet"));
  configure_network(config, options.network);
  caf::actor_system system{config};
  auto node = system.spawn(node_actor, options);
  auto port = options.network.tls() ? caf::openssl::publish(node, options.port, options.host.c_str(), true)
                                    : system.middleman().publish(node, options.port, options.host.c_str(), true);
  if (!port) {
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    throw std::invalid_argument(options.listen_option + " " + options.host + ":" + std::to_string(options.port) +
                                ": cannot listen (" + system.render(port.error()) +
                                "); is the port taken or the address not of this machine?");
  }
  if (options.on_listening) options.on_listening(*port);
  while (!(options.stop_requested && options.stop_requested()))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
}

}  // namespace tune::actors
