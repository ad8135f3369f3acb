#include "tune/actors/pipeline.hpp"

#include <algorithm>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "node_link.hpp"

namespace tune::actors {

std::uint32_t pipeline_capacity(const pipeline_options& options) {
  std::uint32_t capacity = options.compile_workers;
  for (const auto& slot : options.devices) capacity += 1 + slot.prefetch;
  return capacity;
}

namespace {

/// Where the compile workers build: off the cores the local devices measure
/// on, and, with background_builds, one background worker on each of them.
void place_builds(const backend& be, const pipeline_options& options, compile_pool_options& pool) {
  std::vector<int> measuring;
  for (const auto& slot : options.devices) {
    auto cores = be.measuring_cores(slot.device);
    measuring.insert(measuring.end(), cores.begin(), cores.end());
  }
  auto plan = plan_builds(measuring, thread_cpu_set(), options.background_builds);
  pool.worker_cores = std::move(plan.worker_cores);
  pool.background_cores = std::move(plan.background_cores);
}

}  // namespace

run_summary run_pipeline(backend_ptr backend, std::unique_ptr<strategy> search, const pipeline_options& options) {
  if (!backend || !search) throw std::invalid_argument("run_pipeline: a backend and a strategy are needed");
  if (options.compile_workers == 0)
    throw std::invalid_argument("pipeline: compile_workers is 0; at least one compile worker is needed");
  if (options.devices.empty() && options.nodes.empty())
    throw std::invalid_argument("pipeline: no device; at least one measurer is needed");
  if (!(options.timing.time_scale > 0)) throw std::invalid_argument("pipeline: time scale must be > 0");
  if (options.multi_task && !options.nodes.empty() && options.node_task.kind != node_task::kind_t::multi)
    throw std::invalid_argument("pipeline: a run of many tasks sends its nodes a task of kind multi");

  caf::actor_system_config config;
  register_message_types(config);
  config.set("scheduler.max-threads", options.scheduler_threads);
  // Work sharing sleeps on a condition variable when there is nothing to do;
  // work stealing polls, which would take the cores the measured kernels
  // and the simulated devices need.
  config.set("scheduler.policy", caf::atom("sharing"));
  config.set("logger.verbosity", caf::atom("quiet"));
  if (!options.nodes.empty()) configure_network(config, options.network);
  caf::actor_system system{config};

  std::vector<detail::node_link> links;
  auto keeper_setup = std::make_shared<detail::keeper_setup>();
  caf::actor keeper;
  if (!options.nodes.empty()) {
    keeper = detail::spawn_node_keeper(system, keeper_setup);
    std::int32_t first_id = 0;
    for (const auto& slot : options.devices) first_id = std::max(first_id, slot.device + 1);
    try {
      links = detail::connect_nodes(system, options.nodes, options.network.tls(), options.node_task,
                                    options.node_payload, first_id, keeper);
    } catch (...) {
      caf::anon_send_exit(keeper, caf::exit_reason::user_shutdown);
      throw;
    }
    std::vector<remote_device> remote;
    for (const auto& link : links)
      for (std::size_t d = 0; d < link.device_ids.size(); ++d)
        remote.push_back({link.device_ids[d], link.device_names[d]});
    if (options.on_remote_devices) options.on_remote_devices(remote);
  }

  auto space = backend->space();
  auto generator = spawn_generator(system, space, std::move(search), options.prior);

  compile_pool_options pool_options;
  pool_options.workers = options.compile_workers;
  pool_options.timing = options.timing;
  pool_options.early_stop = options.early_stop;
  pool_options.multi_task = options.multi_task;
  for (const auto& slot : options.devices) {
    measurer_options m;
    m.device = slot.device;
    m.timing = options.timing;
    m.early_stop = options.early_stop;
    m.drift = options.drift;
    m.duel = options.duel;
    m.multi_task = options.multi_task;
    // The end-of-run confirmation measures on the first device only.
    if (&slot != &options.devices.front()) m.duel.reserved_runs = 0;
    pool_options.measurers.push_back(spawn_measurer(system, backend, m));
    pool_options.prefetch.push_back(slot.prefetch);
  }
  place_builds(*backend, options, pool_options);
  std::uint32_t capacity =
      pipeline_capacity(options) + static_cast<std::uint32_t>(pool_options.background_cores.size());
  pool_options.weight.assign(options.devices.size(), 1.0);
  for (const auto& link : links) {
    for (std::size_t d = 0; d < link.measurers.size(); ++d) {
      pool_options.measurers.push_back(caf::actor_cast<measurer_actor>(link.measurers[d]));
      pool_options.prefetch.push_back(link.spec.prefetch);
      pool_options.weight.push_back(link.spec.weight);
      capacity += 1 + link.spec.prefetch;
    }
    for (const auto& builder : link.builders) {
      pool_options.remote_workers.push_back(caf::actor_cast<build_worker_actor>(builder));
      capacity += 1;
    }
  }
  pool_options.remote_builds = options.nodes_build;
  pool_options.remote.assign(options.devices.size(), false);
  pool_options.remote.resize(pool_options.measurers.size(), true);
  pool_options.device_ids.assign(options.devices.size(), -1);
  for (const auto& link : links)
    pool_options.device_ids.insert(pool_options.device_ids.end(), link.device_ids.begin(), link.device_ids.end());
  pool_options.lost_timeout_s = options.network.lost_timeout_s;
  auto pool = spawn_compile_pool(system, backend, pool_options);
  if (keeper) {
    keeper_setup->links = links;
    keeper_setup->pool = pool;
    keeper_setup->payload = options.node_payload;
    keeper_setup->tls = options.network.tls();
    caf::anon_send(keeper, start_atom::value);
  }

  population_options pop;
  pop.budget = options.budget;
  pop.timing = options.timing;
  pop.capacity = capacity;
  pop.mode = options.mode;
  pop.batch = options.batch;
  pop.prior = options.prior;
  pop.progress_line = options.progress_line;
  pop.listener = options.listener;
  pop.stop_requested = options.stop_requested;
  pop.hand_out_limit = options.hand_out_limit;
  pop.cache = options.cache;
  pop.measurers = pool_options.measurers;
  pop.demand_notice_s = options.demand_notice_s;
  pop.multi_task = options.multi_task;
  // A candidate may wait behind every other one in flight, each taking up to
  // both timeouts: the bound is finite and never hit by a working backend.
  pop.evaluate_timeout_s = (options.timing.timeouts.compile_s + options.timing.timeouts.run_s) *
                               options.timing.time_scale * (pop.capacity + 2) +
                           30.0;
  // With nodes, a candidate may also wait out lost nodes: each time its
  // measurer is lost (at most max_requeues + 1 times) up to the lost timeout.
  if (!links.empty())
    pop.evaluate_timeout_s +=
        (pool_options.max_requeues + 1) * (options.network.lost_timeout_s + options.network.connection_timeout_s);

  run_summary summary;
  std::string failure;
  {
    caf::scoped_actor self{system};
    auto population = spawn_population(system, generator, pool, pop, caf::actor_cast<caf::actor>(self));
    self->monitor(population);
    caf::anon_send(population, start_atom::value);
    bool done = false;
    bool stop_sent = false;
    while (!done) {
      self->receive(
          [&](done_atom, run_summary& s) {
            summary = std::move(s);
            done = true;
          },
          [&](caf::down_msg& down) {
            failure = "the population stopped unexpectedly: " + system.render(down.reason);
            done = true;
          },
          caf::after(std::chrono::milliseconds(100)) >>
              [&] {
                if (!stop_sent && options.stop_requested && options.stop_requested()) {
                  caf::anon_send(population, stop_atom::value);
                  stop_sent = true;
                }
              });
    }
    self->demonitor(caf::actor_cast<caf::actor_addr>(population));
    caf::anon_send_exit(population, caf::exit_reason::user_shutdown);
    if (keeper) {
      // The pool first (a measurer closing is no loss then); then tell the
      // nodes the run ended (their sessions end with the connection anyway).
      self->send_exit(pool, caf::exit_reason::user_shutdown);
      self->request(keeper, std::chrono::seconds(2), close_atom::value).receive([](bool) {}, [](caf::error&) {});
      self->send_exit(keeper, caf::exit_reason::user_shutdown);
    }
  }
  caf::anon_send_exit(generator, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  for (auto& m : pool_options.measurers) caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  if (!failure.empty()) throw std::runtime_error(failure);
  return summary;
}

}  // namespace tune::actors
