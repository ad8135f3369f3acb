// The dashboard page: a live run from the WebSocket (caught up from the
// results database) and finished runs from /api. Every value that comes from
// a run is put on the page with textContent, never as HTML.
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';
const query = token ? '?token=' + encodeURIComponent(token) : '';
const byId = (id) => document.getElementById(id);
const palette = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#db2777', '#0891b2', '#4b5563'];

function setText(element, value) {
  element.textContent = value;
}

function cell(row, value, className) {
  const td = document.createElement('td');
  td.textContent = value;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function formatMs(ms) {
  if (ms === null || ms === undefined) return '–';
  return (ms < 0.01 ? ms.toExponential(3) : ms.toPrecision(5)) + ' ms';
}

function formatSeconds(s) {
  if (s === null || s === undefined) return '–';
  return s < 100 ? s.toFixed(1) + ' s' : Math.round(s) + ' s';
}

// One clock on the whole page: wall-clock seconds since the run's start in its
// database (runs.started_at). The database's trials and the live events both
// carry it as wall_elapsed_s. The events' elapsed_s (the backend's clock:
// simulated seconds for a scaled replay) is never shown: an item without
// wall_elapsed_s has no place on the time axis.
function wallOf(item) {
  return item && typeof item.wall_elapsed_s === 'number' ? item.wall_elapsed_s : null;
}

// One state for one run, in the same words in the run panel and the runs
// table: "running" only while a stream shows the run running; else why it
// ended (an end reason: budget, time, exhausted, stopped, failed) or, when the
// database records no end, "unfinished" (running where no stream of this
// dashboard shows it, or killed). "(resumable)" marks what tune --resume
// continues: a stopped run and one with no end recorded
// (storage::run_record::resumable).
function stateText(reason, running) {
  if (running) return 'running';
  if (reason === null || reason === undefined || reason === 'running') return 'unfinished (resumable)';
  return reason === 'stopped' ? 'stopped (resumable)' : reason;
}

const rateWindow = 10;  // seconds of wall clock the trials/s figure looks back

/// Trials per wall-clock second over the last rateWindow seconds up to `now`.
function recentRate(trials, now) {
  if (now === null || !(now > 0)) return null;
  const window = Math.min(rateWindow, now);
  let count = 0;
  for (const t of trials) {
    const at = wallOf(t);
    if (at !== null && at > now - window && at <= now) ++count;
  }
  return count / window;
}

async function getJson(path) {
  const response = await fetch(path + query, { cache: 'no-store' });
  if (!response.ok) throw new Error(path + ': HTTP ' + response.status);
  return response.json();
}

// ---- charts ------------------------------------------------------------------

const haveCharts = typeof Chart !== 'undefined';

// Best times of a search span orders of magnitude (the first configurations
// are often 10-100 times the best), so the charts start on a log scale.
function yScaleType() {
  return byId('log-scale').checked ? 'logarithmic' : 'linear';
}

function makeChart(canvasId, xTitle) {
  if (!haveCharts) return null;
  return new Chart(byId(canvasId), {
    type: 'line',
    data: { datasets: [] },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      normalized: true,
      plugins: { legend: { display: true, labels: { boxWidth: 12 } } },
      scales: {
        x: { type: 'linear', title: { display: true, text: xTitle } },
        y: { type: yScaleType(), title: { display: true, text: 'best time (ms)' } },
      },
    },
  });
}

const charts = {
  model: makeChart('chart-model', 'trials of all tasks'),
  time: makeChart('chart-time', 'wall-clock seconds since the run started'),
  trials: makeChart('chart-trials', 'trials'),
  run: makeChart('chart-run', 'trials'),
  compare: makeChart('chart-compare', 'trials'),
};

if (charts.model) charts.model.options.scales.y.title.text = 'model latency (ms)';

function setLogScale() {
  const type = yScaleType();
  for (const chart of Object.values(charts)) {
    if (!chart) continue;
    chart.options.scales.y.type = type;
    chart.update();
  }
}
byId('log-scale').addEventListener('change', setLogScale);

function lineDataset(label, points, index) {
  return {
    label: label,
    data: points,
    stepped: 'before',
    borderColor: palette[index % palette.length],
    backgroundColor: palette[index % palette.length],
    pointRadius: 0,
    borderWidth: 2,
  };
}

/// Best-so-far curve of trials sorted by seq: [{x: seq + 1 or elapsed, y: best}].
/// Trials whose x is null (no wall clock) are left out.
/// The time a trial counts for as the best, as the engine judges it: none
/// for a failed trial, one whose timing stopped early (clearly slower) or one
/// that lost its duel against the best before it; its duel's median when it
/// had one, else its own time.
function judgedMs(t) {
  if (t.time_ms === null || t.time_ms === undefined || t.stopped_early) return null;
  if (typeof t.duel_ms === 'number') return t.duel_ms < t.duel_best_ms ? t.duel_ms : null;
  return t.time_ms;
}

function bestTrial(trials) {
  let best = null;
  for (const t of trials) {
    const ms = judgedMs(t);
    if (ms !== null && (!best || ms < judgedMs(best))) best = t;
  }
  return best;
}

function convergence(trials, xOf) {
  const points = [];
  let best = Infinity;
  let last = null;
  for (const t of trials) {
    const x = xOf(t);
    if (x === null) continue;
    last = x;
    const ms = judgedMs(t);
    if (ms === null || !(ms < best)) continue;
    best = ms;
    points.push({ x: x, y: best });
  }
  if (points.length && last !== null && last !== points[points.length - 1].x) points.push({ x: last, y: best });
  return points;
}

/// Draws `points` on the chart and writes the last point's x on its canvas
/// (data-x-last), so a test reading the page sees which clock the chart used.
function plot(chart, canvasId, label, points, index) {
  const canvas = byId(canvasId);
  canvas.dataset.xLast = points.length ? String(points[points.length - 1].x) : '';
  if (!chart) return;
  chart.data.datasets = points.length ? [lineDataset(label, points, index)] : [];
  chart.update();
}

// ---- the run panel: the live run, or else the latest run of the databases -----

let sources = [];
let sourceIndex = 0;
let runsList = null;  // the last /api/runs answer
// mode: 'live' (a stream's run), 'database' (the latest run of the --db files:
// no stream is on a run) or 'waiting' (neither).
const panel = {
  mode: 'waiting', run: null, db: null, trials: new Map(), progress: null, finished: null, row: null, details: null,
};
let panelTicket = 0;  // bumped whenever the panel changes run, so a late answer for the old one is dropped
let renderPending = false;
// Whether /api/live (or the WebSocket's hello) has answered: until then the
// page does not know whether a stream is on a run, so it shows no latest run.
let liveKnown = false;

function resetPanel(mode, run, db) {
  ++panelTicket;
  panel.mode = mode;
  panel.run = run;
  panel.db = db === undefined ? null : db;
  panel.trials = new Map();
  panel.progress = null;
  panel.finished = null;
  panel.drift = null;  // live mode: the latest drift event
  panel.row = null;  // database mode: the run's /api/runs row
  panel.details = null;  // database mode: its /api/runs/D/I answer
}

function addTrial(t) {
  panel.trials.set(t.seq, t);
}

async function catchUp() {
  if (panel.mode !== 'live' || !panel.run || panel.db === null) return;
  const ticket = panelTicket;
  try {
    const details = await getJson('/api/runs/' + panel.db + '/' + panel.run.run_id);
    if (ticket !== panelTicket) return;
    for (const t of details.trials) if (!panel.trials.has(t.seq)) addTrial(t);
    scheduleRender();
  } catch (error) {
    console.warn('catch-up failed', error);
  }
}

/// Shows the newest run of the databases (runsList[0]) when no stream is on
/// a run; reloads it only when its trial count or state changed.
async function showLatest() {
  if (panel.mode === 'live') return;
  const latest = runsList && runsList.length ? runsList[0] : null;
  if (!latest) {
    if (panel.mode !== 'waiting') resetPanel('waiting', null, null);
    renderPanel();
    return;
  }
  const shown = panel.mode === 'database' && panel.row;
  if (shown && shown.db === latest.db && shown.id === latest.id && shown.trials === latest.trials &&
      shown.state === latest.state) {
    panel.row = latest;
    renderPanel();
    return;
  }
  const ticket = ++panelTicket;
  let details;
  try {
    details = await getJson('/api/runs/' + latest.db + '/' + latest.id);
  } catch (error) {
    console.warn(error);
    return;
  }
  if (ticket !== panelTicket || panel.mode === 'live') return;
  resetPanel('database', { run_id: details.id, task: details.task, strategy: details.strategy, seed: details.seed },
    latest.db);
  panel.row = latest;
  panel.details = details;
  for (const t of details.trials) addTrial(t);
  renderPanel();
}

function sortedTrials() {
  return Array.from(panel.trials.values()).sort((a, b) => a.seq - b.seq);
}

function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  setTimeout(() => {
    renderPending = false;
    renderPanel();
  }, 100);
}

function renderBusy(progress) {
  const bars = byId('busy');
  bars.replaceChildren();
  if (!progress || panel.mode !== 'live') return;
  const items = [['compile pool', progress.busy.compile_pool]];
  for (const [name, fraction] of Object.entries(progress.busy.devices)) items.push([name, fraction]);
  for (const [name, fraction] of items) {
    const row = document.createElement('div');
    row.className = 'bar';
    const label = document.createElement('span');
    label.textContent = name;
    const track = document.createElement('div');
    track.className = 'track';
    const fill = document.createElement('div');
    fill.className = 'fill';
    fill.style.width = Math.max(0, Math.min(100, 100 * fraction)).toFixed(1) + '%';
    track.appendChild(fill);
    const value = document.createElement('span');
    value.textContent = Math.round(100 * fraction) + '%';
    row.append(label, track, value);
    bars.appendChild(row);
  }
}

/// The runs that streams are on, by "db/id": {finished: run_finished or null}.
function streamedRuns() {
  const runs = new Map();
  for (const s of sources) {
    if (!s || !s.run_started || s.db === null || s.db === undefined) continue;
    runs.set(s.db + '/' + s.run_started.run_id, { finished: s.run_finished || null });
  }
  return runs;
}

/// A runs-table row's state: what a stream on the run says, else the database's.
function rowState(r) {
  const streamed = streamedRuns().get(r.db + '/' + r.id);
  if (streamed) return streamed.finished ? stateText(streamed.finished.reason, false) : stateText(null, true);
  return stateText(r.state, false);
}

function panelState() {
  if (panel.mode === 'live') return panel.finished ? stateText(panel.finished.reason, false) : stateText(null, true);
  if (panel.mode === 'database' && panel.row) return rowState(panel.row);
  return '–';
}

function renderPanel() {
  const run = panel.run;
  const isLive = panel.mode === 'live';
  const trials = sortedTrials();
  const section = byId('live');
  section.dataset.mode = panel.mode;
  setText(byId('panel-kind'), panel.mode === 'database' ? 'Latest run' : 'Live run');
  setText(byId('panel-note'), panel.mode === 'database' ? 'from the database: no stream is on a run' : '');
  setText(byId('live-title'), run ? 'run ' + run.run_id + ': ' + run.task + ' · ' + run.strategy + ' · seed ' + run.seed : 'waiting for a run…');
  for (const id of ['stat-in-flight', 'stat-rate', 'busy']) byId(id).hidden = !isLive;
  const count = byId('trials');
  setText(count, String(trials.length));
  count.dataset.count = String(trials.length);

  const best = bestTrial(trials);
  const bestElement = byId('best');
  setText(bestElement, best ? formatMs(judgedMs(best)) : '–');
  bestElement.dataset.ms = best ? String(judgedMs(best)) : '';
  bestElement.dataset.seq = best ? String(best.seq) : '';

  // Drift: the trials a probe flagged, and how far the latest probe out of
  // its band had moved; duels: would-be bests measured against the best.
  const flagged = trials.filter((t) => t.drift_flagged).length;
  const driftElement = byId('drift');
  const probe = isLive && panel.drift ? ' · probe ' + panel.drift.ratio.toFixed(2) + 'x on ' + panel.drift.device : '';
  setText(driftElement, flagged + ' flagged' + probe);
  driftElement.dataset.flagged = String(flagged);
  const duels = trials.filter((t) => typeof t.duel_ms === 'number');
  const lost = duels.filter((t) => judgedMs(t) === null).length;
  const duelElement = byId('duels');
  setText(duelElement, duels.length ? duels.length + ' (' + lost + ' lost)' : '–');
  duelElement.dataset.count = String(duels.length);
  duelElement.dataset.lost = String(lost);

  // Elapsed: the run's end in the database when it has one, else the latest
  // wall clock heard (a progress event or a trial).
  const p = isLive ? panel.progress : null;
  let now = wallOf(p);
  for (const t of trials) {
    const at = wallOf(t);
    if (at !== null && (now === null || at > now)) now = at;
  }
  const details = panel.mode === 'database' ? panel.details : null;
  if (details && typeof details.finished_at === 'number') now = Math.max(0, details.finished_at - details.started_at);
  const rate = isLive ? recentRate(trials, now) : null;
  setText(byId('rate'), rate === null ? '–' : rate.toFixed(2));
  const elapsed = byId('elapsed');
  setText(elapsed, formatSeconds(now));
  elapsed.dataset.s = now === null ? '' : String(now);
  const inFlight = byId('in-flight');
  const flying = isLive && p && typeof p.in_flight === 'number' && !panel.finished ? p.in_flight : null;
  const flyingText = isLive && panel.finished ? '0' : flying === null ? '' : String(flying);
  setText(inFlight, flyingText || '–');
  inFlight.dataset.count = flyingText;
  const state = byId('live-state');
  const stateValue = panelState();
  setText(state, stateValue);
  state.dataset.state = stateValue;
  state.dataset.finished = (isLive && panel.finished) || (panel.mode === 'database' && panel.row && panel.row.state !== 'running') ? 'true' : 'false';
  renderBusy(p);

  const configBody = byId('best-config').tBodies[0];
  configBody.replaceChildren();
  if (best && best.config && typeof best.config === 'object') {
    for (const [name, value] of Object.entries(best.config)) {
      const row = document.createElement('tr');
      cell(row, name);
      cell(row, typeof value === 'string' ? value : JSON.stringify(value), 'config');
      configBody.appendChild(row);
    }
  }

  const counts = new Map();
  for (const t of trials) counts.set(t.status, (counts.get(t.status) || 0) + 1);
  const countsBody = byId('panel-counts').tBodies[0];
  countsBody.replaceChildren();
  for (const [status, n] of counts) {
    const row = document.createElement('tr');
    row.dataset.status = status;
    row.dataset.count = String(n);
    cell(row, status, status === 'ok' ? 'status-ok' : 'status-failed');
    cell(row, String(n));
    countsBody.appendChild(row);
  }

  const latest = byId('latest').tBodies[0];
  latest.replaceChildren();
  for (const t of trials.slice(-15).reverse()) {
    const row = document.createElement('tr');
    const at = wallOf(t);
    row.dataset.seq = String(t.seq);
    row.dataset.s = at === null ? '' : String(at);
    row.dataset.drift = t.drift_flagged ? 'true' : 'false';
    if (t.drift_flagged) row.className = 'drift';
    cell(row, String(t.seq));
    cell(row, at === null ? '–' : at.toFixed(2));
    cell(row, t.status, t.status === 'ok' ? 'status-ok' : 'status-failed');
    cell(row, t.device);
    let time = formatMs(t.time_ms);
    if (typeof t.duel_ms === 'number')
      time += ' · duel ' + formatMs(t.duel_ms) + ' vs ' + formatMs(t.duel_best_ms) + (t.duel_ms < t.duel_best_ms ? ' won' : ' lost');
    if (t.drift_flagged) time += ' · drift';
    cell(row, time);
    cell(row, t.compile_s.toFixed(3));
    cell(row, t.run_s.toFixed(3));
    cell(row, JSON.stringify(t.config), 'config');
    latest.appendChild(row);
  }

  plot(charts.time, 'chart-time', 'best so far', convergence(trials, wallOf), 0);
  plot(charts.trials, 'chart-trials', 'best so far', convergence(trials, (t) => t.seq + 1), 1);
}

function showSource(index) {
  sourceIndex = index;
  renderModel();
  const s = sources[index];
  if (s && s.run_started) {
    resetPanel('live', s.run_started, s.db);
    panel.progress = s.progress;
    panel.finished = s.run_finished;
    renderPanel();
    catchUp();
  } else {
    if (panel.mode === 'live') resetPanel('waiting', null, null);
    showLatest();
  }
}

function onHello(hello) {
  liveKnown = true;
  sources = hello.sources;
  const picker = byId('source');
  picker.replaceChildren();
  for (const s of sources) {
    const option = document.createElement('option');
    option.value = String(s.source);
    option.textContent = s.endpoint || 'stream ' + s.source;
    picker.appendChild(option);
  }
  byId('source-picker').hidden = sources.length < 2;
  const known = sources[sourceIndex];
  const same = panel.mode === 'live' && known && known.run_started && known.run_started.run_id === panel.run.run_id &&
    known.run_started.task === panel.run.task;
  if (same) {
    // Reconnected to the same run: keep what is shown and fill the gap.
    panel.progress = known.progress || panel.progress;
    panel.finished = known.run_finished;
    renderModel();
    catchUp();
    scheduleRender();
  } else {
    // The chosen stream if it is on a run, else the first one that is.
    let index = Math.min(sourceIndex, Math.max(0, sources.length - 1));
    if (!(sources[index] && sources[index].run_started)) {
      const onRun = sources.findIndex((s) => s.run_started);
      if (onRun >= 0) index = onRun;
    }
    showSource(index);
  }
  picker.value = String(sourceIndex);
  renderRuns();
}

/// Keeps each stream's latest run, progress and end as the hello gives them.
function trackSource(event) {
  const s = sources[event.source];
  if (!s) return;
  if (event.type === 'run_started') {
    s.run_started = event;
    s.db = event.db;
    s.progress = null;
    s.run_finished = null;
  } else if (event.type === 'progress') {
    s.progress = event;
  } else if (event.type === 'run_finished') {
    s.run_finished = event;
  } else if (event.type === 'model_progress') {
    // A model's last event has its end reason: what follows is another model run's.
    if (!s.model || (s.model.length && s.model[s.model.length - 1].reason !== null)) s.model = [];
    s.model.push(event);
  }
}

// ---- the model run on the chosen stream (tune --model) --------------------------

/// The model section: the model's latency against trials from its
/// model_progress events, and its tasks as the latest event gives them.
function renderModel() {
  const s = sources[sourceIndex];
  const events = s && Array.isArray(s.model) ? s.model : [];
  const section = byId('model');
  section.hidden = events.length === 0;
  if (!events.length) return;
  const last = events[events.length - 1];
  section.dataset.model = last.model;
  setText(byId('model-title'), last.model + ' · ' + last.tasks.length + ' tasks · scheduler ' + last.scheduler + ' · seed ' + last.seed);
  const trials = byId('model-trials');
  setText(trials, last.trials + ' of ' + last.budget_trials);
  trials.dataset.count = String(last.trials);
  const latency = byId('model-latency');
  setText(latency, formatMs(last.latency_ms));
  latency.dataset.ms = last.latency_ms === null ? '' : String(last.latency_ms);
  setText(byId('model-elapsed'), formatSeconds(last.wall_s));
  const state = byId('model-state');
  const stateValue = last.reason === null ? 'running' : last.reason;
  setText(state, stateValue);
  state.dataset.state = stateValue;

  const body = byId('model-tasks').tBodies[0];
  body.replaceChildren();
  last.tasks.forEach((t, i) => {
    const row = document.createElement('tr');
    row.dataset.target = t.target;
    row.dataset.trials = String(t.trials);
    row.dataset.bestMs = t.best_ms === null ? '' : String(t.best_ms);
    if (last.task === i) row.classList.add('selected');  // the round that just ended
    cell(row, String(t.count));
    cell(row, t.label + ' (' + t.target + ')', 'config');
    cell(row, String(t.trials));
    cell(row, formatMs(t.best_ms));
    cell(row, formatMs(t.best_ms === null ? null : t.count * t.best_ms));
    cell(row, t.run_id ? String(t.run_id) : '–');
    cell(row, t.done ? 'done' : '');
    body.appendChild(row);
  });
  const points = [];
  for (const e of events) if (typeof e.latency_ms === 'number') points.push({ x: e.trials, y: e.latency_ms });
  plot(charts.model, 'chart-model', 'model latency (ms)', points, 2);
}

function onEvent(event) {
  if (event.type === 'hello') return onHello(event);
  if (event.type === 'dropped') {
    const drops = byId('drops');
    drops.hidden = false;
    setText(drops, event.dropped + ' events dropped (this browser fell behind); reloaded from the database');
    drops.dataset.dropped = String(event.dropped);
    catchUp();
    return;
  }
  trackSource(event);
  if (event.type === 'model_progress') {
    if (event.source === sourceIndex) renderModel();
    return;
  }
  if (event.type === 'run_started' || event.type === 'run_finished') {
    // The runs table shows the new run, or the run's end, at once.
    renderRuns();
    refreshRuns();
  }
  if (event.source !== sourceIndex) {
    if (event.type === 'run_started' && panel.mode !== 'live') showSource(event.source);
    return;
  }
  switch (event.type) {
    case 'run_started':
      showSource(sourceIndex);
      return;
    case 'trial_finished':
      if (panel.mode === 'live') addTrial(event);
      break;
    case 'progress':
      if (panel.mode === 'live') panel.progress = event;
      break;
    case 'drift':
      if (panel.mode === 'live') {
        panel.drift = event;
        for (const seq of event.flagged) {
          const t = panel.trials.get(seq);
          if (t) t.drift_flagged = true;
        }
      }
      break;
    case 'run_finished':
      if (panel.mode === 'live') panel.finished = event;
      break;
  }
  scheduleRender();
}

let reconnectDelay = 500;

function connect() {
  const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
  const socket = new WebSocket(scheme + location.host + '/ws' + query);
  const badge = byId('connection');
  socket.onopen = () => {
    reconnectDelay = 500;
    badge.className = 'badge ok';
    setText(badge, 'connected');
  };
  // A frame holds one or more events, one JSON object per line.
  socket.onmessage = (message) => {
    for (const line of String(message.data).split('\n')) {
      try {
        onEvent(JSON.parse(line));
      } catch (error) {
        console.warn('bad message', error);
      }
    }
  };
  socket.onclose = () => {
    badge.className = 'badge bad';
    setText(badge, 'disconnected, reconnecting…');
    setTimeout(connect, reconnectDelay);
    reconnectDelay = Math.min(5000, reconnectDelay * 2);
  };
}

byId('source').addEventListener('change', (e) => showSource(Number(e.target.value)));

// ---- runs of the databases ---------------------------------------------------

const compared = new Map();  // "db/id" -> details
let selectedRun = null;

function runLabel(r) {
  return '#' + r.id + ' ' + r.strategy + ' seed ' + r.seed;
}

async function showRun(r) {
  selectedRun = r.db + '/' + r.id;
  const details = await getJson('/api/runs/' + r.db + '/' + r.id);
  setText(byId('detail-title'), 'Run ' + r.id + ': ' + details.task + ' · ' + details.strategy + ' · seed ' + details.seed);
  const counts = byId('status-counts').tBodies[0];
  counts.replaceChildren();
  for (const [status, n] of Object.entries(details.status_counts)) {
    const row = document.createElement('tr');
    cell(row, status, status === 'ok' ? 'status-ok' : 'status-failed');
    cell(row, String(n));
    counts.appendChild(row);
  }
  if (charts.run) {
    charts.run.data.datasets = [lineDataset(runLabel(details), convergence(details.trials, (t) => t.seq + 1), 0)];
    charts.run.update();
  }
  for (const row of byId('runs').tBodies[0].rows) row.classList.toggle('selected', row.dataset.key === selectedRun);
}

async function toggleCompare(r, on) {
  const key = r.db + '/' + r.id;
  if (on) compared.set(key, await getJson('/api/runs/' + key));
  else compared.delete(key);
  if (!charts.compare) return;
  let index = 0;
  charts.compare.data.datasets = Array.from(compared.values()).map((d) =>
    lineDataset(runLabel(d), convergence(d.trials, (t) => t.seq + 1), index++));
  charts.compare.update();
}

function renderRuns() {
  if (!runsList) return;
  const body = byId('runs').tBodies[0];
  body.replaceChildren();
  for (const r of runsList) {
    const key = r.db + '/' + r.id;
    const row = document.createElement('tr');
    row.dataset.key = key;
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = compared.has(key);
    box.addEventListener('change', () => toggleCompare(r, box.checked));
    row.appendChild(document.createElement('td')).appendChild(box);
    cell(row, String(r.id));
    cell(row, r.task);
    cell(row, r.strategy);
    cell(row, r.seed);
    cell(row, new Date(r.started_at * 1000).toLocaleString());
    const state = rowState(r);
    row.dataset.state = state;
    cell(row, state);
    cell(row, String(r.trials));
    cell(row, formatMs(r.best_time_ms));
    const show = document.createElement('button');
    show.type = 'button';
    show.textContent = 'show';
    show.addEventListener('click', () => showRun(r));
    row.appendChild(document.createElement('td')).appendChild(show);
    if (key === selectedRun) row.classList.add('selected');
    body.appendChild(row);
  }
}

let runsTicket = 0;

async function refreshRuns() {
  const ticket = ++runsTicket;
  let runs;
  try {
    runs = await getJson('/api/runs');
  } catch (error) {
    console.warn(error);
    return;
  }
  if (ticket !== runsTicket) return;  // a later refresh is on its way
  runsList = runs;
  renderRuns();
  if (panel.mode !== 'live' && liveKnown) showLatest();
}
byId('refresh').addEventListener('click', refreshRuns);

if (!haveCharts) setText(byId('live-title'), 'charts unavailable: chart.js did not load');
refreshRuns();
// The runs table is reloaded every 5 s (one aggregate query per database),
// and with it, when no stream is on a run, the panel's latest run of the
// databases (a run another process is writing grows there).
setInterval(refreshRuns, 5000);
// The live state over HTTP first (what the WebSocket's hello repeats), so
// the page shows the run even before the socket is open.
getJson('/api/live')
  .then(onHello)
  .catch((error) => console.warn(error))
  .finally(connect);
