// The coordinator's side of nodes: connects at the start (every node must
// answer), then a keeper actor monitors each node and reconnects a lost one
// with backoff; its measurers rejoin the compile pool.
#include "node_link.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace tune::actors::detail {
namespace {

constexpr auto hello_timeout = std::chrono::seconds(5);
constexpr auto open_timeout = std::chrono::seconds(60);

std::string label(const remote_node& spec) { return spec.host + ":" + std::to_string(spec.port); }

/// Checks a node's answer to hello; returns the problem, empty when fine.
std::string check_offer(const remote_node& spec, const std::string& text, nlohmann::json& offer) {
  offer = nlohmann::json::parse(text, nullptr, false);
  if (!offer.is_object()) return "node " + label(spec) + " gave an answer that is not JSON";
  std::string version = offer.value("version", std::string("?"));
  if (!offer.value("ok", false))
    return "node " + label(spec) + " refused: " + offer.value("error", std::string("no reason given"));
  if (version != engine_version())
    return "node " + label(spec) + ": version mismatch: the node runs tune-engine " + version + ", this coordinator " +
           engine_version() + "; run the same version on both";
  if (offer.value("types", std::string()) != message_set_signature())
    return "node " + label(spec) + ": message types differ (both run tune-engine " + version +
           "); rebuild both from the same sources";
  if (!offer.contains("devices") || !offer["devices"].is_array() || offer["devices"].empty())
    return "node " + label(spec) + " offers no device";
  return {};
}

/// Checks the answer to open; returns the problem, empty when fine.
std::string check_open(const remote_node& spec, const std::string& text, const std::vector<caf::actor>& measurers,
                       std::size_t wanted) {
  // (the node's compile workers, if any, come with the measurers)
  auto reply = nlohmann::json::parse(text, nullptr, false);
  if (!reply.is_object()) return "node " + label(spec) + " gave an answer that is not JSON";
  if (!reply.value("ok", false))
    return "node " + label(spec) + " refused the run: " + reply.value("error", std::string("no reason given"));
  if (measurers.size() < wanted)
    return "node " + label(spec) + " opened " + std::to_string(measurers.size()) + " measurers, " +
           std::to_string(wanted) + " wanted";
  return {};
}

/// The node's devices the topology picks (indices into what it offers): by
/// index or name, the first N, or all. Throws std::invalid_argument naming
/// the node when one is not offered.
std::vector<std::size_t> choose_devices(const remote_node& spec, const nlohmann::json& offered) {
  std::vector<std::size_t> out;
  auto listing = [&] {
    std::string names;
    for (std::size_t d = 0; d < offered.size(); ++d)
      names += (d ? ", " : "") + std::to_string(d) + " " + offered[d].get<std::string>();
    return names;
  };
  for (auto index : spec.device_indices) {
    if (index >= offered.size())
      throw std::invalid_argument("node " + label(spec) + " has no device " + std::to_string(index) + " (it offers " +
                                  listing() + "); fix nodes[].devices");
    out.push_back(index);
  }
  for (const auto& name : spec.device_names) {
    std::size_t found = offered.size();
    for (std::size_t d = 0; d < offered.size(); ++d)
      if (offered[d].get<std::string>() == name) found = d;
    if (found == offered.size())
      throw std::invalid_argument("node " + label(spec) + " has no device named '" + name + "' (it offers " +
                                  listing() + "); fix nodes[].devices");
    out.push_back(found);
  }
  if (!out.empty()) return out;
  if (spec.devices > offered.size())
    throw std::invalid_argument("node " + label(spec) + " offers " + std::to_string(offered.size()) +
                                " devices, the topology asks for " + std::to_string(spec.devices) +
                                "; lower nodes[].devices");
  std::size_t used = spec.devices ? spec.devices : offered.size();
  for (std::size_t d = 0; d < used; ++d) out.push_back(d);
  return out;
}

struct keeper_state {
  std::shared_ptr<keeper_setup> setup;
  std::vector<node_link> links;
  compile_pool_actor pool;
  std::string payload;
  bool tls = false;
  std::vector<double> backoff_s;
  bool closing = false;
  static inline const char* name = "node_keeper";
};

using keeper_pointer = caf::stateful_actor<keeper_state>*;

void schedule_reconnect(keeper_pointer self, std::size_t k) {
  auto& st = self->state;
  if (st.closing) return;
  auto wait = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(st.backoff_s[k]));
  st.backoff_s[k] = std::min(8.0, st.backoff_s[k] * 2);
  self->delayed_send(self, wait, reconnect_atom::value, static_cast<std::uint64_t>(k));
}

void opened(keeper_pointer self, std::size_t k, caf::actor node, std::vector<caf::actor> measurers,
            std::vector<caf::actor> builders) {
  auto& st = self->state;
  auto& link = st.links[k];
  link.handle = node;
  self->monitor(node);
  st.backoff_s[k] = 0.5;
  measurers.resize(link.device_ids.size());
  std::fprintf(stderr, "\nnodes: node %s is back; its %zu devices rejoin the run\n", label(link.spec).c_str(),
               measurers.size());
  self->send(st.pool, join_atom::value, std::move(measurers), link.device_ids, link.spec.prefetch, std::move(builders));
}

void reconnect(keeper_pointer self, std::size_t k) {
  auto& st = self->state;
  if (st.closing || st.links[k].handle) return;
  auto spec = st.links[k].spec;
  auto mm = st.tls ? self->system().openssl_manager().actor_handle() : self->system().middleman().actor_handle();
  self->request(mm, hello_timeout, caf::connect_atom::value, spec.host, spec.port)
      .then(
          [self, k](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>&) {
            if (!ptr) return schedule_reconnect(self, k);
            auto node = caf::actor_cast<caf::actor>(ptr);
            self->request(node, hello_timeout, hello_atom::value, engine_version(), message_set_signature())
                .then(
                    [self, k, node](std::string& text) {
                      auto& st = self->state;
                      nlohmann::json offer;
                      if (auto problem = check_offer(st.links[k].spec, text, offer); !problem.empty()) {
                        std::fprintf(stderr, "\nnodes: %s\n", problem.c_str());
                        return schedule_reconnect(self, k);
                      }
                      self->request(node, open_timeout, open_atom::value, st.links[k].task, st.payload,
                                    caf::actor_cast<caf::actor>(self))
                          .then(
                              [self, k, node](std::string& text, std::vector<caf::actor>& measurers,
                                              std::vector<caf::actor>& builders) {
                                auto& st = self->state;
                                auto problem =
                                    check_open(st.links[k].spec, text, measurers, st.links[k].device_ids.size());
                                if (!problem.empty()) {
                                  std::fprintf(stderr, "\nnodes: %s\n", problem.c_str());
                                  return schedule_reconnect(self, k);
                                }
                                opened(self, k, node, std::move(measurers), std::move(builders));
                              },
                              [self, k](caf::error&) { schedule_reconnect(self, k); });
                    },
                    [self, k](caf::error&) { schedule_reconnect(self, k); });
          },
          [self, k](caf::error&) { schedule_reconnect(self, k); });
}

caf::behavior keeper(keeper_pointer self, std::shared_ptr<keeper_setup> setup) {
  self->state.setup = std::move(setup);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    for (std::size_t k = 0; k < st.links.size(); ++k) {
      if (!st.links[k].handle || st.links[k].handle.address() != down.source) continue;
      st.links[k].handle = caf::actor{};
      if (st.closing) continue;
      std::fprintf(stderr, "\nnodes: lost node %s (%s); reconnecting with backoff\n", label(st.links[k].spec).c_str(),
                   self->system().render(down.reason).c_str());
      schedule_reconnect(self, k);
    }
  });
  return {
      [self](start_atom) {
        auto& st = self->state;
        st.links = std::move(st.setup->links);
        st.pool = st.setup->pool;
        st.payload = st.setup->payload;
        st.tls = st.setup->tls;
        st.backoff_s.assign(st.links.size(), 0.5);
        for (auto& link : st.links) self->monitor(link.handle);
      },
      [self](reconnect_atom, std::uint64_t k) {
        if (k < self->state.links.size()) reconnect(self, static_cast<std::size_t>(k));
      },
      [self](close_atom) {
        auto& st = self->state;
        st.closing = true;
        for (auto& link : st.links)
          if (link.handle) self->send(link.handle, close_atom::value);
        return true;
      },
  };
}

}  // namespace

std::vector<node_link> connect_nodes(caf::actor_system& system, const std::vector<remote_node>& nodes, bool tls,
                                     const node_task& task, const std::string& payload, std::int32_t first_id,
                                     const caf::actor& owner) {
  std::vector<node_link> links;
  caf::scoped_actor self{system};
  std::int32_t next_id = first_id;
  for (const auto& spec : nodes) {
    auto handle = tls ? caf::openssl::remote_actor<caf::actor>(system, spec.host, spec.port)
                      : system.middleman().remote_actor(spec.host, spec.port);
    if (!handle)
      throw std::invalid_argument("node " + label(spec) + ": cannot connect (" + system.render(handle.error()) +
                                  "); is a node (tune-engine node) listening on " + label(spec) +
                                  " there, the host and port in the topology right, and do both use TLS "
                                  "with certificates of one CA or both not?");
    std::string problem;
    nlohmann::json offer;
    self->request(*handle, hello_timeout, hello_atom::value, engine_version(), message_set_signature())
        .receive(
            [&](std::string& text) { problem = check_offer(spec, text, offer); },
            [&](caf::error& err) { problem = "node " + label(spec) + " did not answer hello: " + system.render(err); });
    if (!problem.empty()) throw std::invalid_argument(problem);
    node_link link;
    link.spec = spec;
    auto indices = choose_devices(spec, offer["devices"]);
    for (auto d : indices) {
      link.device_ids.push_back(next_id++);
      link.device_names.push_back(label(spec) + "/" + offer["devices"][d].get<std::string>());
    }
    auto own = task;
    own.devices.assign(indices.begin(), indices.end());
    link.task = own.to_json();
    link.handle = *handle;
    links.push_back(std::move(link));
  }
  // Every node reads the dataset it is sent: open them at once.
  std::vector<std::string> problems(links.size());
  std::vector<std::thread> openers;
  for (std::size_t k = 0; k < links.size(); ++k) {
    openers.emplace_back([&, k] {
      auto& link = links[k];
      caf::scoped_actor opener{system};
      opener->request(link.handle, open_timeout, open_atom::value, link.task, payload, owner)
          .receive(
              [&](std::string& text, std::vector<caf::actor>& measurers, std::vector<caf::actor>& builders) {
                problems[k] = check_open(link.spec, text, measurers, link.device_ids.size());
                measurers.resize(link.device_ids.size());
                link.measurers = std::move(measurers);
                link.builders = std::move(builders);
              },
              [&](caf::error& err) {
                problems[k] = "node " + label(link.spec) + " did not open the run: " + system.render(err);
              });
    });
  }
  for (auto& t : openers) t.join();
  for (const auto& problem : problems)
    if (!problem.empty()) throw std::invalid_argument(problem);
  return links;
}

caf::actor spawn_node_keeper(caf::actor_system& system, std::shared_ptr<keeper_setup> setup) {
  return system.spawn(keeper, std::move(setup));
}

}  // namespace tune::actors::detail
