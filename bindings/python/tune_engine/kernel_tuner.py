"""Kernel Tuner's ``tune_kernel`` on tune-engine's pipeline.

A Kernel Tuner script switches by changing its import line::

    from tune_engine.kernel_tuner import tune_kernel   # was: from kernel_tuner import tune_kernel

``tune_kernel`` takes Kernel Tuner's arguments and returns what it returns,
``(results, env)``: one dict per configuration tried (the tunable values,
``time`` in milliseconds and the other keys Kernel Tuner fills) and a dict
describing the run. Underneath, the kernel becomes a tune-engine user kernel
(a source, a search-space file and a launch description, docs/kernels.md)
tuned by ``tune_engine.Session``: the compile pool builds configurations while
the devices of the topology measure others. docs/kernel-tuner.md says what maps
to what and what differs.
"""

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import time

import numpy as np

import tune_engine as _engine

__all__ = ["tune_kernel", "run_kernel", "STRATEGIES", "SUPPORTED_LANGUAGES"]

# Kernel Tuner's strategy names and the tune-engine strategy doing the same
# job (docs/kernel-tuner.md has the table and why).
STRATEGIES = {
    "brute_force": "random",  # with a budget of every valid configuration: all of them
    "random_sample": "random",
    "bayes_opt": "bo",
    "genetic_algorithm": "ga",
    "diff_evo": "opevo",
    "pso": "opevo",
    "firefly_algorithm": "opevo",
    "minimize": "opevo+knn",
    "basinhopping": "opevo+knn",
    "dual_annealing": "opevo+knn",
    "simulated_annealing": "opevo+knn",
    "greedy_mls": "opevo+knn",
    "greedy_ils": "opevo+knn",
    "mls": "opevo+knn",
    "ordered_greedy_mls": "opevo+knn",
}

SUPPORTED_LANGUAGES = ("C", "CUDA", "HIP")
STRATEGY_OPTIONS = ("max_fevals", "time_limit", "fraction", "x0")
# Strategies that do not search from a point: x0 means nothing to them.
_NO_START = ("brute_force", "random_sample")
DEFAULT_MAX_FEVALS = 100  # strategies other than brute_force, without max_fevals

# numpy dtypes and the launch description's types: (array, scalar).
_TYPES = {
    "float32": ("float*", "float"),
    "float64": ("double*", "double"),
    "int32": ("int*", "int"),
    "int64": (None, "long"),
}
# Objectives besides time that runs here can fill; Kernel Tuner's direction.
_OBJECTIVES = {"time": False}


def _fail(argument, problem, fix, kind=ValueError):
    raise kind(f"tune_kernel: {argument}: {problem}; {fix}")


def _refuse(name, value, why):
    if value not in (None, False, {}, []):
        _fail(name, f"{why} is not supported here", f"leave {name} out")


def _launch_arguments(arguments):
    """The launch description's arguments and the arrays' bytes."""
    if not isinstance(arguments, (list, tuple)) or not arguments:
        _fail("arguments", f"got {type(arguments).__name__}", "pass a list of numpy arrays and numpy scalars",
              TypeError)
    described, blobs = [], []
    for i, arg in enumerate(arguments):
        where = f"arguments[{i}]"
        if isinstance(arg, np.ndarray):
            kind = _TYPES.get(str(arg.dtype), (None, None))[0]
            if kind is None:
                _fail(where, f"an array of dtype {arg.dtype} has no C type here",
                      "use float32, float64 or int32 (numpy's astype)", TypeError)
            if arg.size == 0:
                _fail(where, "an empty array", "pass at least one element")
            described.append({"name": f"arg{i}", "type": kind, "size": int(arg.size)})
            blobs.append(np.ascontiguousarray(arg).tobytes())
        elif isinstance(arg, np.generic):
            kind = _TYPES.get(str(arg.dtype), (None, None))[1]
            if kind is None:
                _fail(where, f"a scalar of dtype {arg.dtype} has no C type here",
                      "use numpy.int32, numpy.int64, numpy.float32 or numpy.float64", TypeError)
            described.append({"name": f"arg{i}", "type": kind, "value": arg.item()})
            blobs.append(None)
        else:
            _fail(where, f"a {type(arg).__name__} is neither a numpy array nor a numpy scalar",
                  "wrap it, e.g. numpy.int32(n) or numpy.asarray(x, dtype=numpy.float32)", TypeError)
    return described, blobs


def _expected_outputs(answer, arguments, described):
    """Marks the answered arrays as outputs; returns their expected bytes."""
    if answer is None:
        return b""
    _check_answer_length(answer, arguments)
    blobs = []
    for i, (expected, arg) in enumerate(zip(answer, arguments)):
        if expected is None:
            continue
        where = f"answer[{i}]"
        if not isinstance(arg, np.ndarray):
            _fail(where, f"argument {i} is a scalar, which the kernel cannot write", "put None there")
        if not isinstance(expected, np.ndarray):
            _fail(where, f"a {type(expected).__name__}", "give a numpy array like the argument", TypeError)
        if expected.shape != arg.shape and expected.size != arg.size:
            _fail(where, f"has shape {expected.shape}, the argument {arg.shape}",
                  "give the expected output with the argument's shape")
        if expected.dtype != arg.dtype:
            _fail(where, f"has dtype {expected.dtype}, the argument {arg.dtype}",
                  f"convert it with .astype(numpy.{arg.dtype})", TypeError)
        described[i]["output"] = True
        described[i].pop("data", None)
        blobs.append(np.ascontiguousarray(expected).tobytes())
    return b"".join(blobs)


def _check_answer_length(answer, arguments):
    if not isinstance(answer, (list, tuple)) or len(answer) != len(arguments):
        _fail("answer", f"has {len(answer) if isinstance(answer, (list, tuple)) else type(answer).__name__} "
              f"entries for {len(arguments)} arguments", "give one entry per argument, None where nothing is checked")


def _restriction_list(restrictions):
    if restrictions is None:
        return []
    if isinstance(restrictions, str) or callable(restrictions):
        return [restrictions]
    if isinstance(restrictions, (list, tuple)):
        return list(restrictions)
    _fail("restrictions", f"got {type(restrictions).__name__}",
          "give a string such as \"bx * by <= 1024\", a function of the configuration dict, or a list of them",
          TypeError)


def _literal(value):
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _build_space(tune_params, restrictions):
    """The space (string restrictions as constraints, functions applied to
    each valid configuration) and its constraint expressions."""
    if not isinstance(tune_params, dict) or not tune_params:
        _fail("tune_params", f"got {type(tune_params).__name__}",
              "give a dict of parameter names to lists of values, e.g. {\"block_size_x\": [32, 64]}", TypeError)
    params = {}
    for name, values in tune_params.items():
        if not isinstance(name, str) or not name.isidentifier():
            _fail(f"tune_params[{name!r}]", "the name is not an identifier", "use a C identifier")
        values = list(values) if isinstance(values, (list, tuple, np.ndarray, range)) else None
        if not values:
            _fail(f"tune_params[{name!r}]", "not a non-empty list", "list the values, e.g. [1, 2, 4]")
        cleaned = []
        for v in values:
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                _fail(f"tune_params[{name!r}]", f"the value {v!r} is neither a number nor a string",
                      "use numbers or strings")
            cleaned.append(v)
        params[name] = cleaned
    expressions, functions = [], []
    for i, r in enumerate(_restriction_list(restrictions)):
        if isinstance(r, str):
            try:
                _engine.Space(params, constraints=[r])
            except ValueError as e:
                _fail(f"restrictions[{i}]", f"'{r}' does not parse ({e})",
                      "write a Python expression over the tunable parameters, e.g. \"bx * by <= 1024\"")
            expressions.append(r)
        elif callable(r):
            functions.append(r)
        else:
            _fail(f"restrictions[{i}]", f"a {type(r).__name__}", "give a string or a function", TypeError)
    space = _engine.Space(params, constraints=expressions)
    if functions:
        valid = _valid_configurations(space, params)
        if valid is None:
            _fail("restrictions", "functions are applied to every configuration, and the space has more than 200000",
                  "write the restriction as a string")
        excluded = []
        for config in valid:
            for f in functions:
                try:
                    ok = f(dict(config))
                except Exception as e:  # the user's function failing is their input being wrong
                    _fail("restrictions", f"{getattr(f, '__name__', f)} raised {type(e).__name__}: {e} on {config}",
                          "make it return True or False for every configuration dict")
                if not ok:
                    excluded.append(config)
                    break
        expressions += _exclusions(excluded)
        space = _engine.Space(params, constraints=expressions)
    return params, expressions, space


def _valid_configurations(space, params, limit=200000):
    """Every configuration satisfying the space's constraints, in
    tune_params order; None when the product exceeds `limit`."""
    import itertools
    product = 1
    for values in params.values():
        product *= len(values)
    if product > limit:
        return None
    names = list(params)
    configs = (dict(zip(names, values)) for values in itertools.product(*params.values()))
    return [c for c in configs if space.is_valid(c)]


def _exclusions(configs):
    """Constraints leaving out exactly these configurations."""
    return ["not (" + " and ".join(f"{k} == {_literal(v)}" for k, v in c.items()) + ")" for c in configs]


def _config_key(config, keys):
    return ",".join(str(config[k]) for k in keys)


def _load_cache(path):
    """A Kernel Tuner cache file (.json, or .json.gz) as a dict."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read().strip()
    # Kernel Tuner writes its cache append-only and closes it at the end: an
    # unclosed one (a run that was stopped) is read as if it were closed.
    if text and not text.endswith("}}") and not text.endswith("}\n}"):
        text = text.rstrip(",") + "}\n}"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        _fail("cache", f"{path} is not a Kernel Tuner cache ({e})", "give another file name or remove the file")
    if not isinstance(doc, dict) or not isinstance(doc.get("cache"), dict):
        _fail("cache", f"{path} has no \"cache\" object", "give a Kernel Tuner cache file")
    return doc


def _read_cache(path, kernel_name, keys):
    """The entries of a Kernel Tuner cache file; {} when there is none."""
    if not os.path.isfile(path):
        return {}
    doc = _load_cache(path)
    if doc.get("kernel_name") != kernel_name:
        _fail("cache", f"{path} holds kernel {doc.get('kernel_name')!r}, not {kernel_name!r}",
              "give a cache file of this kernel")
    if doc.get("tune_params_keys") != keys:
        _fail("cache", f"{path} has the tunable parameters {doc.get('tune_params_keys')}, not {keys}",
              "give a cache file made with the same tune_params (same order)")
    return doc.get("cache", {})


def _cached_configurations(cached, keys, space):
    """The configurations of the search space that the cache's entries hold."""
    configs = []
    for entry in cached.values():
        if isinstance(entry, dict) and all(k in entry for k in keys):
            config = {k: entry[k] for k in keys}
            try:
                if space.is_valid(config):
                    configs.append(config)
            except (ValueError, TypeError, KeyError):
                pass  # a value the space does not have: not one of its configurations
    return configs


def _write_cache(path, header, entries):
    doc = dict(header)
    doc["cache"] = entries
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent="")
    os.replace(tmp, path)


def _write_if_changed(path, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    if os.path.isfile(path):
        with open(path, "rb" if mode == "wb" else "r") as f:
            if f.read() == data:
                return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, mode) as f:
        f.write(data)
    os.replace(tmp, path)


def _digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _kernel_folder(kernel_name, source, lang, params, expressions, described, blobs, expected, options, derived):
    """Writes the user kernel (source, space, launch.json, data and the
    per-configuration values, if any) into a folder named by its contents, so
    that the same kernel and data are the same task every time (its
    measurements reusable from a results database)."""
    derived_text = json.dumps(derived) if derived is not None else ""
    key = _digest(kernel_name, source, lang, json.dumps(params), json.dumps(expressions), json.dumps(described),
                  *(b for b in blobs if b is not None), expected, json.dumps(options, sort_keys=True), derived_text)
    folder = os.path.join(_cache_dir(), "kernel_tuner", key)
    os.makedirs(folder, exist_ok=True)
    for arg, blob in zip(described, blobs):
        if blob is not None and not arg.get("output"):
            name = f"{arg['name']}.bin"
            _write_if_changed(os.path.join(folder, name), blob)
            arg["data"] = name
    _write_if_changed(os.path.join(folder, "expected.bin"), expected)
    spec = {"ConfigurationSpace": {
        "TuningParameters": [{"Name": n, "Type": "string" if isinstance(v[0], str) else
                              ("int" if all(isinstance(x, int) for x in v) else "float"), "Values": v}
                             for n, v in params.items()],
        "Conditions": [{"Expression": e, "Parameters": list(params)} for e in expressions]}}
    _write_if_changed(os.path.join(folder, "space.json"), json.dumps(spec))
    _write_if_changed(os.path.join(folder, "kernel.cpp"), source)
    launch = dict(options, source="kernel.cpp", entry=kernel_name, space="space.json", arguments=described,
                  expected="expected.bin", constants="define", untyped_pointers=lang == "C")
    if derived is not None:
        _write_if_changed(os.path.join(folder, "derived.json"), derived_text)
        launch["derived"] = "derived.json"
    _write_if_changed(os.path.join(folder, "launch.json"), json.dumps(launch, indent=1))
    return folder


def _cache_dir():
    """Where the kernel backends keep their builds (the same rule as theirs)."""
    for variable, suffix in (("TUNE_CACHE_DIR", ""), ("XDG_CACHE_HOME", "tune-engine"), ("HOME", ".cache/tune-engine")):
        if os.environ.get(variable):
            return os.path.join(os.environ[variable], suffix) if suffix else os.environ[variable]
    return os.path.join(tempfile.gettempdir(), "tune-engine-cache")


def _source_text(kernel_source):
    if isinstance(kernel_source, (list, tuple)):
        _fail("kernel_source", "several files", "give one source string or file name")
    if not isinstance(kernel_source, str):
        _fail("kernel_source", f"got {type(kernel_source).__name__}", "give the source as a string or a file name",
              TypeError)
    if "\n" not in kernel_source and os.path.isfile(kernel_source):
        with open(kernel_source) as f:
            return f.read()
    return kernel_source


def _defines_text(defines):
    if defines is None:
        return ""
    if not isinstance(defines, dict):
        _fail("defines", f"got {type(defines).__name__}", "give a dict of names to values", TypeError)
    text = ""
    for name, value in defines.items():
        if not str(name).isidentifier():
            _fail(f"defines[{name!r}]", "the name is not an identifier", "use a C identifier")
        if not callable(value):  # a function's values are each configuration's (_derived_table)
            text += f"#define {name} {_define_line(value)}\n"
    return text


def _define_line(value):
    """A #define's text on one line (Kernel Tuner continues a value's lines
    with a backslash, which the preprocessor joins)."""
    return str(value).replace("\n", "")


_AXES = "xyz"


def _check_grid_div(axis, div):
    """Kernel Tuner's grid_div_x/y/z: None, a number, an expression over the
    tunable parameters, a function of the configuration dict, or a list of
    them (their product)."""
    items = div if isinstance(div, (list, tuple)) else [div]
    for item in items:
        if item is None and div is None:
            continue
        if isinstance(item, bool) or not (isinstance(item, (int, np.integer, str)) or callable(item)):
            _fail(f"grid_div_{axis}", f"holds a {type(item).__name__}",
                  "give parameter names or expressions (their product divides the grid), e.g. [\"block_size_x\"], "
                  "or a function of the configuration dict", TypeError)


def _divisor(div, default, config):
    if div is None:
        return default
    if callable(div):
        return div(dict(config))
    if isinstance(div, str):
        return int(eval(div, {}, dict(config)))  # as Kernel Tuner evaluates them: with the parameters' values
    if isinstance(div, (int, np.integer)):
        return int(div)
    product = 1
    for d in div:
        product *= _divisor(d, 1, config)
    return product


def _derived_table(configs, defines, grid_div, block):
    """The values each configuration has that Python computes: defines that
    are functions of the configuration, and (for a GPU kernel) the grid's
    divisors; None when there are none. `block` is the launch's block
    extents (numbers or parameter names), the divisor of an axis without
    grid_div."""
    functions = {name: f for name, f in (defines or {}).items() if callable(f)}
    divided = any(d is not None for d in grid_div)
    if not functions and not divided:
        return None
    if configs is None:
        _fail(f"defines[{next(iter(functions))!r}]" if functions else
              "grid_div_" + next(a for a, d in zip(_AXES, grid_div) if d is not None),
              "a function of the configuration is evaluated for every configuration, and the space has more than "
              "200000", "give a fixed value, or fewer tunable values")
    table = []
    for config in configs:
        entry = {"config": config}
        if functions:
            entry["defines"] = {}
            for name, f in functions.items():
                try:
                    entry["defines"][name] = _define_line(f(dict(config)))
                except Exception as e:  # the user's function failing is their input being wrong
                    _fail(f"defines[{name!r}]", f"raised {type(e).__name__}: {e} on {config}",
                          "make it return the value for every configuration dict")
        if divided:
            entry["grid_divisor"] = []
            for axis, div, extent in zip(_AXES, grid_div, block):
                default = config[extent] if isinstance(extent, str) else extent
                try:
                    value = _divisor(div, default, config)
                except Exception as e:
                    _fail(f"grid_div_{axis}", f"{div!r} raised {type(e).__name__}: {e} on {config}",
                          "use the tunable parameters' names, numbers, or a function of the configuration dict")
                if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or value < 1 \
                        or value != int(value):
                    _fail(f"grid_div_{axis}", f"{div!r} gives {value!r} for {config}",
                          "make the grid's divisor a positive whole number for every configuration")
                entry["grid_divisor"].append(int(value))
        table.append(entry)
    return {"configurations": table}


def _strategy_plan(strategy, strategy_options, valid_count):
    """(tune-engine strategy, trial budget, seconds or 0)."""
    name = strategy or "brute_force"
    if name not in STRATEGIES:
        _fail("strategy", f"'{name}' is not a Kernel Tuner strategy known here",
              "use one of " + ", ".join(sorted(STRATEGIES)))
    options = dict(strategy_options or {})
    for key in options:
        if key not in STRATEGY_OPTIONS:
            _fail(f"strategy_options[{key!r}]", "not supported here",
                  "the supported options are " + ", ".join(STRATEGY_OPTIONS) + " (the strategies' own settings "
                  "have no equivalent)")
    if "x0" in options and name in _NO_START:
        _fail("strategy_options['x0']", f"{name} samples the space and does not search from a starting point",
              "leave x0 out, or choose a strategy that searches, e.g. greedy_ils or simulated_annealing")
    budget = valid_count
    if name == "random_sample":
        fraction = float(options.get("fraction", 0.1))
        if not 0 < fraction <= 1:
            _fail("strategy_options['fraction']", f"{fraction} is not in (0, 1]", "give a share of the space")
        budget = max(1, int(round(fraction * valid_count)))
    elif name != "brute_force":
        budget = min(valid_count, DEFAULT_MAX_FEVALS)
    if "max_fevals" in options:
        fevals = options["max_fevals"]
        if isinstance(fevals, bool) or not isinstance(fevals, (int, np.integer)) or fevals < 1:
            _fail("strategy_options['max_fevals']", f"{fevals!r}", "give a positive integer")
        budget = min(int(fevals), valid_count)
    seconds = float(options.get("time_limit", 0) or 0)
    if seconds < 0:
        _fail("strategy_options['time_limit']", f"{seconds} is negative", "give seconds")
    return STRATEGIES[name], budget, seconds


def _start(strategy_options, params, space):
    """Kernel Tuner's x0 (one value per tunable parameter, in tune_params
    order) as the configuration dict handed out first; None without one."""
    x0 = (strategy_options or {}).get("x0")
    if x0 is None:
        return None
    if not isinstance(x0, (list, tuple, np.ndarray)) or len(x0) != len(params):
        _fail("strategy_options['x0']", f"{x0!r} is not a list of {len(params)} values",
              "give one value per tunable parameter, in the order of tune_params: " + ", ".join(params))
    config = {}
    for (name, values), value in zip(params.items(), x0):
        value = value.item() if isinstance(value, np.generic) else value
        if value not in values:
            _fail("strategy_options['x0']", f"{name} = {value!r} is not one of its values {values}",
                  "give values from tune_params")
        config[name] = value
    if not space.is_valid(config):
        _fail("strategy_options['x0']", f"{config} breaks the restrictions", "start from a configuration they allow")
    return config


def _result_entry(trial, keys, now):
    """A Kernel Tuner result dict of one trial."""
    entry = {k: trial["config"][k] for k in keys}
    ok = trial["status"] == "ok"
    entry["time"] = trial["time_ms"] if ok else (
        "InvalidConfig" if trial["status"] == "instantiation_error" else
        "CompilationFailedConfig" if trial["status"].startswith("compile") or trial["status"] == "build_timeout"
        else "RuntimeFailedConfig")
    if ok and trial["times_ms"]:
        entry["times"] = trial["times_ms"]
    entry["compile_time"] = trial["compile_s"] * 1e3
    entry["verification_time"] = 0
    entry["benchmark_time"] = trial["run_s"] * 1e3
    entry["strategy_time"] = 0
    entry["framework_time"] = 0
    entry["timestamp"] = now
    if not ok:
        entry["status"] = trial["status"]
        entry["message"] = trial["message"]
    return entry


def _apply_metrics(entry, metrics):
    if not metrics or not isinstance(entry.get("time"), float):
        return
    for name, metric in metrics.items():
        entry[name] = metric(entry) if callable(metric) else eval(metric, {}, dict(entry))  # Kernel Tuner's way


def _simulate(cache, keys, strategy, budget, seconds, seed, start_config):
    """Replays a Kernel Tuner cache through the replay backend."""
    if not cache or not os.path.isfile(cache):
        _fail("cache", f"simulation_mode needs an existing cache file, {cache!r} is none",
              "give the cache of an earlier run")
    doc = _load_cache(cache)
    if doc.get("tune_params_keys") != keys:
        _fail("cache", f"{cache} has the tunable parameters {doc.get('tune_params_keys')}, not {keys}",
              "give the same tune_params (same order)")
    recorded = doc.get("cache", {})
    trials = []
    report = _engine.tune(dataset=cache, strategy=strategy, budget=min(budget, len(recorded)), seed=seed,
                          time_scale=0.0001, time_budget_s=seconds, on_trial=trials.append,
                          start=[start_config] if start_config else None)
    results = []
    for t in trials:
        key = _config_key(t["config"], keys)
        if key in recorded:
            results.append(dict(recorded[key]))
    return results, report, doc


def _language(lang, source):
    """Kernel Tuner's lang (guessed from the source when None), checked."""
    lang = lang or _detect_language(source)
    if not isinstance(lang, str) or lang.upper() not in ("C", "CUDA", "HIP", "OPENCL", "FORTRAN", "CUPY", "NVCUDA"):
        _fail("lang", f"'{lang}' is unknown", "use \"C\", \"CUDA\" or \"HIP\"")
    lang = {"C": "C", "CUDA": "CUDA", "HIP": "HIP"}.get(lang.upper(), lang)
    if lang not in SUPPORTED_LANGUAGES:
        _fail("lang", f"'{lang}' is not supported: tune-engine's user kernels are C/C++ on the CPU, CUDA "
              "(NVRTC) and HIP (hipcc); there is no OpenCL or Fortran backend",
              "use \"C\", \"CUDA\" or \"HIP\"")
    return lang


def _refuse_unsupported(kernel_name, device, platform, compiler, smem_args, cmem_args, texmem_args, log):
    """The arguments tune_kernel and run_kernel share that have no equivalent here."""
    if not isinstance(kernel_name, str) or not kernel_name.isidentifier():
        _fail("kernel_name", f"{kernel_name!r} is not a function name", "give the kernel's C name")
    _refuse("smem_args", smem_args, "dynamic shared memory")
    _refuse("cmem_args", cmem_args, "constant memory")
    _refuse("texmem_args", texmem_args, "texture memory")
    _refuse("log", log, "a log level")
    if device != 0 or platform != 0:
        _fail("device" if device != 0 else "platform", f"{device if device != 0 else platform!r}",
              "leave it out and give a topology file naming the devices to measure on")
    if compiler not in (None, "g++", "c++"):
        _fail("compiler", f"'{compiler}'", "leave it out: kernels are built with the system's C++ compiler (c++)")


def _write_kernel(kernel_name, source_text, lang, defines, atol, compiler_options, problem_size, params, expressions,
                  described, blobs, expected, grid_div, block_size_names, topology, configs):
    """The user kernel's folder (source with its #defines, space, launch.json,
    data, the values of `configs` that Python computes) and the backend that
    runs it."""
    for axis, div in zip(_AXES, grid_div):
        _check_grid_div(axis, div)
    if atol is None or not (float(atol) >= 0):
        _fail("atol", f"{atol!r}", "give a non-negative tolerance")
    source = _defines_text(defines) + "#define kernel_tuner 1\n" + source_text
    options = {"tolerance": float(atol) if float(atol) > 0 else 1e-30, "absolute_tolerance": True,
               "flags": [str(f) for f in (compiler_options or [])]}
    backend = "cpu"
    block = (1, 1, 1)
    if lang == "C":
        grid_div = (None, None, None)  # a C function has no grid (Kernel Tuner's C backend has none either)
        if _c_return_type(source, kernel_name) in ("float", "double"):
            options["returns_time"] = True
        if "extern \"C\"" not in source:
            source = "extern \"C\" {\n" + source + "\n}\n"
    else:
        backend = lang.lower()  # cuda or hip: the same launch conventions
        options.update(_cuda_launch(problem_size, params, block_size_names))
        options["language"] = backend
        options.pop("flags")
        block = options["block_size"]
        if topology is None:
            _require_gpu(backend)
    derived = _derived_table(configs, defines, grid_div, block)
    return _kernel_folder(kernel_name, source, lang, params, expressions, described, blobs, expected, options,
                          derived), backend


def run_kernel(kernel_name, kernel_source, problem_size, arguments, params, grid_div_x=None, grid_div_y=None,
               grid_div_z=None, lang=None, device=0, platform=0, smem_args=None, cmem_args=None, texmem_args=None,
               compiler=None, compiler_options=None, defines=None, block_size_names=None, quiet=False, log=None):
    """Runs one configuration of a C kernel once, as Kernel Tuner's
    run_kernel does; returns the arguments as they are afterwards (new numpy
    arrays; the ones passed in are not changed) in a list."""
    source_text = _source_text(kernel_source)
    lang = _language(lang, source_text)
    if lang != "C":
        _fail("lang", f"run_kernel runs C kernels on the CPU here, not {lang}", "use lang=\"C\"")
    _refuse_unsupported(kernel_name, device, platform, compiler, smem_args, cmem_args, texmem_args, log)
    if not isinstance(params, dict) or not params:
        _fail("params", f"got {type(params).__name__}", "give a dict of the tunable parameters' values", TypeError)
    config = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in params.items()}
    space_params, expressions, _ = _build_space({k: [v] for k, v in config.items()}, None)
    described, blobs = _launch_arguments(arguments)
    folder, _ = _write_kernel(kernel_name, source_text, lang, defines, 0, compiler_options, problem_size,
                              space_params, expressions, described, blobs, b"", (grid_div_x, grid_div_y, grid_div_z),
                              block_size_names, None, [config])
    outcome, results = _run_once(folder, config, arguments)
    if outcome["status"] != "ok":
        raise RuntimeError(f"run_kernel: {kernel_name} {config}: {outcome['status']}: {outcome['message']}")
    return results


def _run_once(folder, config, arguments):
    """Runs one configuration of the C user kernel in `folder` once, every
    array starting from the caller's data; (outcome, the arguments after
    the run as new numpy arrays, scalars as given; None unless ok)."""
    workdir = tempfile.mkdtemp(prefix="run_kernel_")
    try:
        out = os.path.join(workdir, "arrays.bin")
        outcome = _engine.run_user_kernel(os.path.join(folder, "launch.json"), config, out)
        if outcome["status"] != "ok":
            return outcome, None
        data = np.fromfile(out, dtype=np.uint8)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results, offset = [], 0
    for arg in arguments:
        if isinstance(arg, np.ndarray):
            size = arg.size * arg.dtype.itemsize
            results.append(data[offset:offset + size].view(arg.dtype).reshape(arg.shape).copy())
            offset += size
        else:
            results.append(arg)
    return outcome, results


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params, grid_div_x=None, grid_div_y=None,
                grid_div_z=None, restrictions=None, answer=None, atol=1e-6, verify=None, verbose=False, lang=None,
                device=0, platform=0, smem_args=None, cmem_args=None, texmem_args=None, compiler=None,
                compiler_options=None, defines=None, log=None, iterations=7, block_size_names=None, quiet=False,
                strategy=None, strategy_options=None, cache=None, metrics=None, simulation_mode=False,
                observers=None, objective=None, objective_higher_is_better=None, *, seed=None, db=None,
                topology=None):
    """Tunes a kernel as Kernel Tuner's tune_kernel does; returns (results, env).

    Beyond Kernel Tuner's arguments: ``seed`` (every random choice of the
    strategy; None draws one, reported as env["seed"]), ``db`` (a results
    database recording the run; measurements of the same kernel in it are
    reused) and ``topology`` (a topology file: the compile workers and
    devices; default this machine: one device, a compile worker on every
    other core).
    """
    start = time.time()
    source_text = _source_text(kernel_source)
    lang = _language(lang, source_text)
    _check_verify(verify, answer, arguments, lang)
    _refuse("observers", observers, "observers (power and energy sensors)")
    _refuse_unsupported(kernel_name, device, platform, compiler, smem_args, cmem_args, texmem_args, log)
    objective = objective or "time"
    if objective not in _OBJECTIVES and objective not in (metrics or {}):
        _fail("objective", f"'{objective}' is neither time nor one of the metrics",
              "use \"time\" or name a metric")
    if objective_higher_is_better is None:
        if objective not in _OBJECTIVES:
            _fail("objective_higher_is_better", f"unknown for the metric '{objective}'", "give True or False")
        objective_higher_is_better = _OBJECTIVES[objective]
    if objective != "time" or objective_higher_is_better:
        _fail("objective", f"'{objective}' (higher is better: {objective_higher_is_better}); the search here "
              "minimises the kernel's time", "use objective=\"time\"; metrics are still computed for every result")
    if not isinstance(iterations, (int, np.integer)) or isinstance(iterations, bool) or iterations < 1:
        _fail("iterations", f"{iterations!r}", "give a positive number of timed runs")

    params, expressions, space = _build_space(tune_params, restrictions)
    keys = list(params)
    valid = _valid_configurations(space, params)
    valid_count = len(valid) if valid is not None else space.count_valid()
    if valid_count is None:
        _fail("tune_params", "the space is too large to count", "use fewer values")
    if valid_count == 0:
        _fail("restrictions", "no configuration satisfies them", "loosen them")
    engine_strategy, budget, seconds = _strategy_plan(strategy, strategy_options, valid_count)
    start_config = _start(strategy_options, params, space)

    if simulation_mode:
        results, report, doc = _simulate(cache, keys, engine_strategy, budget, seconds, seed, start_config)
        env = {"device_name": doc.get("device_name"), "simulation_mode": True, "strategy": strategy or "brute_force",
               "tune_engine_strategy": engine_strategy, "seed": report["seed"], "tune_engine": report}
        return results, env

    described, blobs = _launch_arguments(arguments)
    # With verify, the function judges the outputs (as in Kernel Tuner, in
    # place of the answer check): every array starts from its data.
    expected = _expected_outputs(answer, arguments, described) if verify is None else b""
    folder, backend = _write_kernel(kernel_name, source_text, lang, defines, atol, compiler_options, problem_size,
                                    params, expressions, described, blobs, expected,
                                    (grid_div_x, grid_div_y, grid_div_z), block_size_names, topology, valid)

    # The cache: what it holds is not measured again (and counts towards
    # max_fevals, as in Kernel Tuner); what this run measures is added.
    cached = _read_cache(cache, kernel_name, keys) if cache else {}
    cached_in_space = _cached_configurations(cached, keys, space)
    remaining = budget - len(cached_in_space)
    results = [dict(cached[_config_key(c, keys)]) for c in cached_in_space][:budget]
    report = None
    if remaining > 0 and len(cached_in_space) < valid_count:
        if cached_in_space:
            # Leave the cached configurations out of the search space.
            _rewrite_space(folder, params, expressions + _exclusions(cached_in_space))
        workdir = None if db is not None else tempfile.mkdtemp(prefix="tune_kernel_")
        run_db = db if db is not None else os.path.join(workdir, "runs.db")
        try:
            # x0 comes from the cache when it holds it (left out of the space, then).
            first = [start_config] if start_config and start_config not in cached_in_space else None
            report, trials = _run_session(folder, engine_strategy, remaining, seed, run_db, topology, backend,
                                          seconds, iterations, kernel_name, quiet, verbose, valid_count, first)
            now = time.strftime("%Y-%m-%d %H:%M:%S+00:00", time.gmtime())
            rejected = set()  # measured ok, then failed or refused by the verification
            for t in trials:
                was_ok = t["status"] == "ok"
                verify_ms = _verify_trial(t, verify, folder, arguments, answer, atol) if verify else 0
                if was_ok and t["status"] != "ok":
                    rejected.add(_config_key(t["config"], keys))
                entry = _result_entry(t, keys, now)
                entry["verification_time"] = verify_ms
                _apply_metrics(entry, metrics)
                results.append(entry)
                if not quiet and (verbose or t["status"] == "ok"):
                    print(", ".join(f"{k}={entry[k]}" for k in keys) + f", time={entry['time']}"
                          + ("" if t["status"] == "ok" else f" ({t['status']}: {t['message'][:200]})"))
            if cache:
                exported = _engine.export_run(run_db, report["run_id"], "kernel-tuner")
                header = {k: v for k, v in exported.items() if k != "cache"}
                header.update(kernel_name=kernel_name, problem_size=problem_size if not callable(problem_size)
                              else "callable", tune_params_keys=keys, tune_params=params, objective=objective)
                # The results database keeps each trial's time, not its runs: add them.
                times = {_config_key(r, keys): r["times"] for r in results[len(cached_in_space):] if "times" in r}
                for key, entry in exported["cache"].items():
                    if key in times:
                        entry["times"] = times[key]
                    if key in rejected and isinstance(entry.get("time"), (int, float)):  # measured, then not verified
                        entry["time"] = "RuntimeFailedConfig"
                        entry.pop("times", None)
                entries = dict(cached)
                entries.update(exported["cache"])
                _write_cache(cache, header, entries)
        finally:
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
    best = min((r for r in results if isinstance(r.get("time"), float)), key=lambda r: r["time"], default=None)
    if not quiet and best is not None:
        print("best performing configuration:", ", ".join(f"{k}={best[k]}" for k in keys) + f", time={best['time']}")
    env = {
        "device_name": _device_name(backend),
        "iterations": int(iterations),
        "compiler_options": compiler_options,
        "lang": lang,
        "strategy": strategy or "brute_force",
        "tune_engine_strategy": engine_strategy,
        "max_fevals": budget,
        "seed": report["seed"] if report else seed,
        "cached": len(cached_in_space),
        "wall_s": time.time() - start,
        "kernel_folder": folder,
        "tune_engine": report,
    }
    return results, env


def _check_verify(verify, answer, arguments, lang):
    """Kernel Tuner's verify(answer, result_host, atol=None), checked."""
    if verify is None:
        return
    if not callable(verify):
        _fail("verify", f"a {type(verify).__name__} is not a function",
              "give a function verify(answer, result_host, atol=None) returning True or False", TypeError)
    if lang != "C":
        _fail("verify", f"with lang=\"{lang}\" the outputs stay on the GPU that measures them, out of this process's "
              "reach", "give the expected outputs as answer (with atol), checked there")
    if answer is not None:
        _check_answer_length(answer, arguments)


def _verify_trial(trial, verify, folder, arguments, answer, atol):
    """Runs a configuration measured ok once more, in this process's reach,
    and gives its outputs to verify: False makes the trial a wrong answer.
    Returns the milliseconds it took."""
    if trial["status"] != "ok":
        return 0
    start = time.perf_counter()
    outcome, after = _run_once(folder, trial["config"], arguments)
    if outcome["status"] != "ok":
        trial.update(status=outcome["status"], message=f"the verification run: {outcome['message']}", time_ms=None)
        return (time.perf_counter() - start) * 1e3
    # Kernel Tuner's result_host: the arrays answered (every array without
    # an answer), None elsewhere.
    result_host = [out if isinstance(arg, np.ndarray) and (answer is None or answer[i] is not None) else None
                   for i, (arg, out) in enumerate(zip(arguments, after))]
    try:
        correct = verify(answer, result_host, atol=atol)
    except Exception as e:  # the user's function failing is their input being wrong
        _fail("verify", f"raised {type(e).__name__}: {e} on {trial['config']}",
              "make it return True or False; it is called as verify(answer, result_host, atol=atol)")
    if not correct:
        trial.update(status="wrong_answer", message="verify returned False for the outputs", time_ms=None)
    return (time.perf_counter() - start) * 1e3


def _run_session(folder, strategy, budget, seed, db, topology, backend, seconds, iterations, kernel_name, quiet,
                 verbose, valid_count, start):
    """Tunes the kernel folder through tune_engine.Session; (report, trials)."""
    trials = []
    if not quiet and verbose:
        print(f"tune_kernel: {kernel_name}: {valid_count} valid configurations, strategy {strategy}, {budget} trials")
    session = _engine.Session(kernel=folder, strategy=strategy, budget=budget, seed=seed, db=db, topology=topology,
                              backend=None if topology else backend, time_budget_s=seconds,
                              measurement={"min_time_s": 0.0, "min_repeats": int(iterations),
                                           "max_repeats": int(iterations)},
                              confirm=0, early_stop=False, on_trial=trials.append, task_name=kernel_name,
                              start=start)
    return session.run(), trials


def _require_gpu(backend):
    """Raises RuntimeError unless this machine has a device of `backend`."""
    for entry in _engine.devices():
        if entry["backend"] == backend and not entry["available"]:
            why = entry["message"] if entry["built"] else f"this build has no {backend} backend"
            gpu = "an NVIDIA GPU" if backend == "cuda" else "an AMD GPU"
            raise RuntimeError(f"tune_kernel: lang=\"{backend.upper()}\" needs {gpu} and none is usable here: "
                               f"{why}; tune on a machine with one, or give a topology with a remote node that has one")


def _device_name(backend):
    """The first device of `backend` here, as `tune-engine devices` names it."""
    for entry in _engine.devices():
        if entry["backend"] == backend and entry["devices"]:
            return entry["devices"][0]["name"]
    return None


def _rewrite_space(folder, params, expressions):
    path = os.path.join(folder, "space.json")
    with open(path) as f:
        spec = json.load(f)
    spec["ConfigurationSpace"]["Conditions"] = [{"Expression": e, "Parameters": list(params)} for e in expressions]
    _write_if_changed(path, json.dumps(spec))


def _detect_language(source):
    """Kernel Tuner's guess when lang is None: CUDA for a __global__ function,
    OpenCL for a __kernel one, else C."""
    if "__global__" in source:
        return "CUDA"
    if "__kernel" in source:
        return "OpenCL"
    return "C"


def _c_return_type(source, name):
    """The text before `name(` in the source: the function's return type."""
    import re
    match = re.search(r"([A-Za-z_][A-Za-z_0-9\s\*]*?)\b" + re.escape(name) + r"\s*\(", source)
    return match.group(1).split()[-1] if match and match.group(1).split() else ""


def _cuda_launch(problem_size, params, block_size_names):
    """Kernel Tuner's thread-block conventions as the CUDA user kernel's
    problem_size and block_size (grid_div_x/y/z: _derived_table)."""
    names = list(block_size_names or ["block_size_x", "block_size_y", "block_size_z"])
    if isinstance(problem_size, (int, np.integer)):
        problem_size = [int(problem_size)]
    if callable(problem_size) or not isinstance(problem_size, (list, tuple)) or not 1 <= len(problem_size) <= 3 \
            or not all(isinstance(p, (int, np.integer)) for p in problem_size):
        _fail("problem_size", f"{problem_size!r}", "give 1 to 3 integers")
    block = []
    for i, name in enumerate(names[:3]):
        block.append(name if name in params else (256 if i == 0 else 1))
    return {"language": "cuda", "problem_size": [int(p) for p in problem_size], "block_size": block}
