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
// carry it as wall_elapsed_s; elapsed_s is the backend's clock (simulated
// seconds for a scaled replay) and only used for events of a publisher older
// than wall_elapsed_s.
function wallOf(item) {
  if (!item) return null;
  if (typeof item.wall_elapsed_s === 'number') return item.wall_elapsed_s;
  return typeof item.elapsed_s === 'number' ? item.elapsed_s : null;
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
        y: { type: 'linear', title: { display: true, text: 'best time (ms)' } },
      },
    },
  });
}

const charts = {
  time: makeChart('chart-time', 'elapsed, wall clock (s)'),
  trials: makeChart('chart-trials', 'trials'),
  run: makeChart('chart-run', 'trials'),
  compare: makeChart('chart-compare', 'trials'),
};

function setLogScale() {
  const type = byId('log-scale').checked ? 'logarithmic' : 'linear';
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
function convergence(trials, xOf) {
  const points = [];
  let best = Infinity;
  for (const t of trials) {
    if (t.time_ms === null || t.time_ms === undefined || !(t.time_ms < best)) continue;
    best = t.time_ms;
    points.push({ x: xOf(t), y: best });
  }
  if (points.length && trials.length) points.push({ x: xOf(trials[trials.length - 1]), y: best });
  return points;
}

// ---- the live run ------------------------------------------------------------

let sources = [];
let sourceIndex = 0;
const live = { run: null, db: null, trials: new Map(), progress: null, finished: null };
let renderPending = false;

function resetLive(runStarted, db) {
  live.run = runStarted;
  live.db = db;
  live.trials = new Map();
  live.progress = null;
  live.finished = null;
}

function addTrial(t) {
  live.trials.set(t.seq, t);
}

async function catchUp() {
  if (!live.run || live.db === null || live.db === undefined) return;
  const run = live.run;
  try {
    const details = await getJson('/api/runs/' + live.db + '/' + run.run_id);
    if (live.run !== run) return;
    for (const t of details.trials) if (!live.trials.has(t.seq)) addTrial(t);
    scheduleRender();
  } catch (error) {
    console.warn('catch-up failed', error);
  }
}

function sortedTrials() {
  return Array.from(live.trials.values()).sort((a, b) => a.seq - b.seq);
}

function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  setTimeout(() => {
    renderPending = false;
    renderLive();
  }, 100);
}

function renderBusy(progress) {
  const bars = byId('busy');
  bars.replaceChildren();
  if (!progress) return;
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

function renderLive() {
  const run = live.run;
  const trials = sortedTrials();
  setText(byId('live-title'), run ? 'run ' + run.run_id + ': ' + run.task + ' · ' + run.strategy + ' · seed ' + run.seed : 'waiting for a run…');
  const count = byId('trials');
  setText(count, String(trials.length));
  count.dataset.count = String(trials.length);

  let best = null;
  for (const t of trials) if (t.time_ms !== null && t.time_ms !== undefined && (!best || t.time_ms < best.time_ms)) best = t;
  const bestElement = byId('best');
  setText(bestElement, best ? formatMs(best.time_ms) : '–');
  bestElement.dataset.ms = best ? String(best.time_ms) : '';
  bestElement.dataset.seq = best ? String(best.seq) : '';

  const p = live.progress;
  let now = wallOf(p);
  for (const t of trials) {
    const at = wallOf(t);
    if (at !== null && (now === null || at > now)) now = at;
  }
  const rate = recentRate(trials, now);
  setText(byId('rate'), rate === null ? '–' : rate.toFixed(2));
  const elapsed = byId('elapsed');
  setText(elapsed, formatSeconds(now));
  elapsed.dataset.s = now === null ? '' : String(now);
  const inFlight = byId('in-flight');
  const flying = p && typeof p.in_flight === 'number' && !live.finished ? p.in_flight : null;
  setText(inFlight, live.finished ? '0' : flying === null ? '–' : String(flying));
  inFlight.dataset.count = live.finished ? '0' : flying === null ? '' : String(flying);
  const state = byId('live-state');
  setText(state, live.finished ? 'finished (' + live.finished.reason + ')' : run ? 'running' : '–');
  state.dataset.finished = live.finished ? 'true' : 'false';
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

  const latest = byId('latest').tBodies[0];
  latest.replaceChildren();
  for (const t of trials.slice(-15).reverse()) {
    const row = document.createElement('tr');
    const at = wallOf(t);
    row.dataset.seq = String(t.seq);
    row.dataset.s = at === null ? '' : String(at);
    cell(row, String(t.seq));
    cell(row, at === null ? '–' : at.toFixed(2));
    cell(row, t.status, t.status === 'ok' ? 'status-ok' : 'status-failed');
    cell(row, t.device);
    cell(row, formatMs(t.time_ms));
    cell(row, t.compile_s.toFixed(3));
    cell(row, t.run_s.toFixed(3));
    cell(row, JSON.stringify(t.config), 'config');
    latest.appendChild(row);
  }

  if (charts.time) {
    charts.time.data.datasets = [lineDataset('best so far', convergence(trials, wallOf), 0)];
    charts.time.update();
  }
  if (charts.trials) {
    charts.trials.data.datasets = [lineDataset('best so far', convergence(trials, (t) => t.seq + 1), 1)];
    charts.trials.update();
  }
}

function showSource(index) {
  sourceIndex = index;
  const s = sources[index];
  resetLive(s && s.run_started, s ? s.db : null);
  if (s) {
    live.progress = s.progress;
    live.finished = s.run_finished;
  }
  renderLive();
  catchUp();
}

function onHello(hello) {
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
  const same = known && live.run && known.run_started && known.run_started.run_id === live.run.run_id &&
    known.run_started.task === live.run.task;
  if (same) {
    // Reconnected to the same run: keep what is shown and fill the gap.
    live.progress = known.progress || live.progress;
    live.finished = known.run_finished;
    catchUp();
    scheduleRender();
  } else {
    showSource(Math.min(sourceIndex, Math.max(0, sources.length - 1)));
  }
  picker.value = String(sourceIndex);
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
  if (event.source !== sourceIndex) return;
  switch (event.type) {
    case 'run_started':
      resetLive(event, event.db);
      if (sources[sourceIndex]) {
        sources[sourceIndex].run_started = event;
        sources[sourceIndex].db = event.db;
      }
      catchUp();
      break;
    case 'trial_finished':
      addTrial(event);
      break;
    case 'progress':
      live.progress = event;
      break;
    case 'run_finished':
      live.finished = event;
      refreshRuns();
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
    setText(badge, 'live');
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

// ---- finished runs -----------------------------------------------------------

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

async function refreshRuns() {
  let runs;
  try {
    runs = await getJson('/api/runs');
  } catch (error) {
    console.warn(error);
    return;
  }
  const body = byId('runs').tBodies[0];
  body.replaceChildren();
  for (const r of runs) {
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
    cell(row, r.state);
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
byId('refresh').addEventListener('click', refreshRuns);

if (!haveCharts) setText(byId('live-title'), 'charts unavailable: chart.js did not load');
refreshRuns();
// The live state over HTTP first (what the WebSocket's hello repeats), so
// the page shows the run even before the socket is open.
getJson('/api/live').then(onHello).catch((error) => console.warn(error)).finally(connect);
