"""tune_engine.kernel_tuner.tune_kernel: Kernel Tuner scripts run with their
import line changed, through tune-engine's pipeline (small sizes and budgets:
each test takes seconds)."""
import gzip
import json
import os
import pathlib
import runpy
import statistics

import numpy
import pytest

from tune_engine.kernel_tuner import STRATEGIES, run_kernel, tune_kernel

SCRIPTS = pathlib.Path(__file__).parent / "kernel_tuner_scripts"
RESULT_KEYS = {"time", "compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time",
               "timestamp"}


def run_script(name, **environment):
    """Runs one of the scripts as a program would; returns its globals."""
    saved = {k: os.environ.get(k) for k in environment}
    os.environ.update({k: str(v) for k, v in environment.items()})
    try:
        return runpy.run_path(str(SCRIPTS / name), run_name="__main__")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def timed(results):
    return [r for r in results if isinstance(r["time"], float)]


def test_the_vector_add_script_runs_with_only_the_import_changed():
    text = (SCRIPTS / "vector_add.py").read_text()
    assert "from tune_engine.kernel_tuner import tune_kernel" in text
    assert "tune_engine" not in text.replace("from tune_engine.kernel_tuner import tune_kernel", "")
    script = run_script("vector_add.py", VECTOR_ADD_SIZE=1 << 16)
    results, env = script["results"], script["env"]
    # brute_force (the default): every configuration, each verified against answer
    assert len(results) == 20
    assert {(r["nthreads"], r["vecsize"]) for r in results} == {(t, v) for t in (1, 2, 4, 8)
                                                                 for v in (1, 2, 4, 8, 16)}
    for r in results:
        assert RESULT_KEYS <= set(r), r
        assert isinstance(r["time"], float) and r["time"] > 0, r
        assert len(r["times"]) == 7 and r["time"] == pytest.approx(statistics.median(r["times"]))
    assert env["strategy"] == "brute_force" and env["iterations"] == 7
    assert env["compiler_options"] == ["-fopenmp", "-O3"]


def test_a_kernel_returning_float_reports_its_own_time():
    source = 'extern "C" float fake(float* out, int n) { for (int i = 0; i < n; i++) out[i] = 1.0f; ' \
             "return 0.5f * level; }"
    out = numpy.zeros(64, dtype=numpy.float32)
    results, _ = tune_kernel("fake", source, 64, [out, numpy.int32(64)], {"level": [1, 3]},
                             answer=[numpy.ones(64, dtype=numpy.float32), None], quiet=True)
    assert sorted((r["level"], r["time"]) for r in results) == [(1, 0.5), (3, 1.5)]
    assert all(r["times"] == [r["time"]] * 7 for r in results)  # every run's returned value


def test_the_stencil_resumes_from_its_cache(tmp_path):
    cache = tmp_path / "smooth.json"
    first = run_script("stencil.py", STENCIL_CACHE=cache, STENCIL_FEVALS=10)
    results, env = first["results"], first["env"]
    assert len(results) == 10 and env["cached"] == 0
    assert env["strategy"] == "genetic_algorithm" and env["tune_engine_strategy"] == "ga"
    for r in results:
        assert r["tile_size"] % r["unroll"] == 0 and r["tile_size"] >= 4 * r["unroll"]  # the restrictions
    assert len(timed(results)) == 10
    doc = json.loads(cache.read_text())
    assert doc["kernel_name"] == "smooth" and doc["tune_params_keys"] == ["tile_size", "unroll"]
    assert len(doc["cache"]) == 10
    for key, entry in doc["cache"].items():
        assert key == f"{entry['tile_size']},{entry['unroll']}"
        assert len(entry["times"]) == 5 and isinstance(entry["time"], float)

    second = run_script("stencil.py", STENCIL_CACHE=cache, STENCIL_FEVALS=14)
    results, env = second["results"], second["env"]
    assert env["cached"] == 10
    assert env["tune_engine"]["trials"] == 4  # only the new ones were measured
    assert len(results) == 14
    assert len({(r["tile_size"], r["unroll"]) for r in results}) == 14
    assert len(json.loads(cache.read_text())["cache"]) == 14


def test_a_kernel_tuner_cache_left_open_resumes(tmp_path):
    # Kernel Tuner writes its cache append-only and closes it at the end; this
    # one is as a stopped Kernel Tuner run leaves it (its C device name is the
    # processor's, often empty).
    entries = {f"{t},{u}": {"tile_size": t, "unroll": u, "time": 1.5 + t / 1e4, "times": [1.5] * 5,
                            "compile_time": 140.0, "verification_time": 1.0, "benchmark_time": 8.0,
                            "strategy_time": 0.1, "framework_time": 0.2, "timestamp": "2026-11-27 10:00:00+00:00"}
               for t, u in ((64, 4), (128, 8), (1024, 1))}
    header = {"device_name": "", "kernel_name": "smooth", "problem_size": 65536,
              "tune_params_keys": ["tile_size", "unroll"],
              "tune_params": {"tile_size": [16, 32, 64, 128, 256, 512, 1024], "unroll": [1, 2, 4, 8, 16]},
              "objective": "time", "cache": {}}
    text = json.dumps(header, indent="")[:-3] + "".join(f"\n{json.dumps(k)}: {json.dumps(v)}," for k, v in
                                                        entries.items())
    cache = tmp_path / "kernel_tuner_cache.json"
    cache.write_text(text)
    script = run_script("stencil.py", STENCIL_CACHE=cache, STENCIL_FEVALS=7)
    results, env = script["results"], script["env"]
    assert env["cached"] == 3 and env["tune_engine"]["trials"] == 4
    assert results[:3] == list(entries.values())  # returned as Kernel Tuner recorded them
    assert len({(r["tile_size"], r["unroll"]) for r in results}) == 7
    written = json.loads(cache.read_text())["cache"]
    assert len(written) == 7 and all(written[k] == v for k, v in entries.items())


def test_the_transpose_keeps_its_restriction_function_and_computes_the_metric():
    script = run_script("transpose.py")
    results, env = script["results"], script["env"]
    assert len(results) == 12 and env["tune_engine_strategy"] == "bo" and env["seed"] == 7
    for r in results:
        assert r["block_rows"] * r["block_cols"] * 8 <= 16 * 1024
        assert r["index_type"] in ("int", "long")
        assert r["GB/s"] == pytest.approx(2 * 300 * 200 * 8 / (r["time"] / 1e3) / 1e9)


def test_a_wrong_answer_is_a_failed_configuration_with_the_reason():
    source = "void scale(float* out, const float* in, int n) { for (int i = 0; i < n; i++) out[i] = factor * in[i]; }"
    x = numpy.arange(32, dtype=numpy.float32)
    results, _ = tune_kernel("scale", source, 32, [numpy.zeros_like(x), x, numpy.int32(32)], {"factor": [2, 3]},
                             answer=[2 * x, None, None], quiet=True)
    by_factor = {r["factor"]: r for r in results}
    assert isinstance(by_factor[2]["time"], float)
    assert by_factor[3]["time"] == "RuntimeFailedConfig" and by_factor[3]["status"] == "wrong_answer"
    assert "expected" in by_factor[3]["message"]


def test_simulation_mode_replays_a_kernel_tuner_cache(data_dir):
    path = data_dir / "replay" / "conv_a100_slice.json.gz"
    doc = json.load(gzip.open(path, "rt"))
    tune_params = {k: doc["tune_params"][k] for k in doc["tune_params_keys"]}
    results, env = tune_kernel(doc["kernel_name"], "", doc["problem_size"], [], tune_params, cache=str(path),
                               simulation_mode=True, strategy="random_sample", strategy_options={"max_fevals": 20},
                               seed=3, quiet=True)
    assert len(results) == 20 and env["simulation_mode"] and env["seed"] == 3
    assert env["device_name"] == doc["device_name"]
    recorded = list(doc["cache"].values())
    for r in results:
        key = ",".join(str(r[k]) for k in doc["tune_params_keys"])
        assert r == doc["cache"][key]  # Kernel Tuner's own entry: same keys (times, GFLOP/s, ...) and values
    assert set(results[0]) == set(recorded[0])
    again, _ = tune_kernel(doc["kernel_name"], "", doc["problem_size"], [], tune_params, cache=str(path),
                           simulation_mode=True, strategy="random_sample", strategy_options={"max_fevals": 20},
                           seed=3, quiet=True)
    # The seed decides which configurations are tried (they may arrive in another order).
    assert sorted(map(json.dumps, again)) == sorted(map(json.dumps, results))


def test_our_cache_replays_in_simulation_mode(tmp_path):
    cache = tmp_path / "smooth.json"
    measured = run_script("stencil.py", STENCIL_CACHE=cache, STENCIL_FEVALS=8)["results"]
    tune_params = {"tile_size": [16, 32, 64, 128, 256, 512, 1024], "unroll": [1, 2, 4, 8, 16]}
    replayed, _ = tune_kernel("smooth", "", 1 << 16, [], tune_params, cache=str(cache), simulation_mode=True,
                              strategy="brute_force", quiet=True)
    assert sorted(r["time"] for r in replayed) == sorted(r["time"] for r in measured)


SCALE = "void scale(float* out, const float* in, int n) { for (int i = 0; i < n; i++) out[i] = 2 * in[i]; }"


def scale_arguments(n=16):
    x = numpy.arange(n, dtype=numpy.float32)
    return [numpy.zeros_like(x), x, numpy.int32(n)], [2 * x, None, None]


def test_a_wrong_argument_type_names_the_argument():
    args, _ = scale_arguments()
    args[1] = list(range(16))
    with pytest.raises(TypeError, match=r"arguments\[1\]: a list is neither a numpy array nor a numpy scalar"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, quiet=True)
    args, _ = scale_arguments()
    args[2] = 16
    with pytest.raises(TypeError, match=r"arguments\[2\].*numpy.int32"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, quiet=True)
    args, _ = scale_arguments()
    args[1] = args[1].astype(numpy.float16)
    with pytest.raises(TypeError, match=r"arguments\[1\]: an array of dtype float16"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, quiet=True)


def test_an_answer_of_the_wrong_shape_names_the_entry():
    args, answer = scale_arguments()
    answer[0] = numpy.zeros(15, dtype=numpy.float32)
    with pytest.raises(ValueError, match=r"answer\[0\]: has shape \(15,\), the argument \(16,\)"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, answer=answer, quiet=True)
    with pytest.raises(ValueError, match=r"answer: has 2 entries for 3 arguments"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, answer=answer[:2], quiet=True)
    with pytest.raises(ValueError, match=r"answer\[2\]: argument 2 is a scalar, which the kernel cannot write"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, answer=[None, None, numpy.int32(3)], quiet=True)
    answer = [numpy.zeros(16), None, None]
    with pytest.raises(TypeError, match=r"answer\[0\]: has dtype float64, the argument float32"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, answer=answer, quiet=True)


def test_a_restriction_that_does_not_parse_names_it():
    args, answer = scale_arguments()
    with pytest.raises(ValueError, match=r"restrictions\[1\]: 'x >>> 2' does not parse"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1, 2]}, restrictions=["x > 0", "x >>> 2"], quiet=True)
    with pytest.raises(TypeError, match=r"restrictions\[0\]: a int"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1, 2]}, restrictions=[3], quiet=True)


def test_an_unknown_strategy_lists_the_known_ones():
    args, _ = scale_arguments()
    with pytest.raises(ValueError, match=r"strategy: 'hill_climb' is not a Kernel Tuner strategy known here; use one "
                                         r"of basinhopping, bayes_opt, brute_force"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1, 2]}, strategy="hill_climb", quiet=True)
    with pytest.raises(ValueError, match=r"strategy_options\['popsize'\]: not supported here"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1, 2]}, strategy="genetic_algorithm",
                    strategy_options={"popsize": 4}, quiet=True)
    assert STRATEGIES["brute_force"] == "random" and STRATEGIES["bayes_opt"] == "bo"


def test_what_is_not_supported_is_refused():
    args, answer = scale_arguments()
    with pytest.raises(ValueError, match=r"lang: 'OpenCL' is not supported"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, lang="OpenCL", quiet=True)
    with pytest.raises(ValueError, match=r"lang: 'Fortran' is not supported"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, lang="Fortran", quiet=True)
    with pytest.raises(ValueError, match=r"observers: "):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, observers=[object()], quiet=True)
    with pytest.raises(ValueError, match=r"device: 1; leave it out and give a topology file"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, device=1, quiet=True)
    with pytest.raises(ValueError, match=r"lang: 'OpenCL' is not supported"):
        tune_kernel("scale", "__kernel void scale(__global float* x) {}", 16, args, {"x": [1]}, quiet=True)
    with pytest.raises(ValueError, match=r"objective: 'GFLOP/s'"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, objective="GFLOP/s", objective_higher_is_better=True,
                    metrics={"GFLOP/s": lambda p: 1.0 / p["time"]}, quiet=True)


NEARLY = "void nearly(float* out, const float* in, int n) { for (int i = 0; i < n; i++) out[i] = factor * in[i] " \
         "* (1.0f + slack * 1e-4f); }"


def test_verify_judges_the_outputs_and_a_false_is_a_wrong_answer(tmp_path):
    x = numpy.arange(1, 33, dtype=numpy.float32)
    args = [numpy.zeros_like(x), x, numpy.int32(32)]
    seen = []

    def within_a_thousandth(answer, result_host, atol=None):
        seen.append((result_host, atol))
        return numpy.allclose(result_host[0], answer[0], rtol=1e-3, atol=atol)

    cache = tmp_path / "nearly.json"
    results, _ = tune_kernel("nearly", NEARLY, 32, args, {"factor": [2, 3], "slack": [0, 1]},
                             answer=[2 * x, None, None], atol=1e-6, verify=within_a_thousandth, cache=str(cache),
                             quiet=True)
    by = {(r["factor"], r["slack"]): r for r in results}
    assert len(by) == 4 and len(seen) == 4  # every configuration measured ok was verified once
    # slack 1 is off by 1e-4 relative, which verify accepts
    for slack in (0, 1):
        assert isinstance(by[2, slack]["time"], float), by[2, slack]
        assert by[2, slack]["verification_time"] > 0
        assert by[3, slack]["time"] == "RuntimeFailedConfig" and by[3, slack]["status"] == "wrong_answer"
        assert by[3, slack]["message"] == "verify returned False for the outputs"
        assert "times" not in by[3, slack]
    for result_host, atol in seen:
        assert atol == 1e-6
        assert result_host[1] is None and result_host[2] is None  # what answer leaves unchecked
        assert result_host[0].dtype == numpy.float32 and result_host[0].shape == (32,)
    assert (args[0] == 0).all()  # the caller's arrays are left as they were
    written = json.loads(cache.read_text())["cache"]
    assert isinstance(written["2,1"]["time"], float)
    assert written["3,0"]["time"] == written["3,1"]["time"] == "RuntimeFailedConfig"
    # the answer check alone (|out - answer| <= atol) refuses slack 1, which verify accepted
    alone, _ = tune_kernel("nearly", NEARLY, 32, args, {"factor": [2], "slack": [1]}, answer=[2 * x, None, None],
                           atol=1e-6, quiet=True)
    assert alone[0]["status"] == "wrong_answer"


def test_verify_without_answer_sees_every_array():
    x = numpy.arange(8, dtype=numpy.float32)
    seen = []

    def doubled(answer, result_host, atol=None):
        seen.append(answer)
        return bool((result_host[0] == 2 * result_host[1]).all()) and result_host[2] is None

    results, _ = tune_kernel("scale", SCALE, 8, [numpy.zeros_like(x), x, numpy.int32(8)], {"x": [1]},
                             verify=doubled, quiet=True)
    assert seen == [None] and isinstance(results[0]["time"], float), results


def test_a_bad_verify_names_it():
    args, answer = scale_arguments()
    with pytest.raises(TypeError, match=r"verify: a str is not a function; give a function verify\(answer, "):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, answer=answer, verify="allclose", quiet=True)
    with pytest.raises(ValueError, match=r"verify: raised KeyError: 'x' on \{'x': 1\}; make it return True or False"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, answer=answer, verify=lambda a, r, atol: {}["x"],
                    quiet=True)
    with pytest.raises(ValueError, match=r"answer: has 2 entries for 3 arguments"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, answer=answer[:2], verify=lambda *a, **k: True, quiet=True)
    cuda_args, cuda_answer = cuda_arguments(64)
    with pytest.raises(ValueError, match=r'verify: with lang="CUDA" the outputs stay on the GPU .*; give the '
                                         r'expected outputs as answer'):
        tune_kernel("vector_add", CUDA_ADD, 64, cuda_args, {"block_size_x": [32]}, answer=cuda_answer,
                    verify=lambda *a, **k: True, lang="CUDA", quiet=True)


PER_HALF = "void scale(float* out, const float* in, int n) { for (int i = 0; i < n; i++) " \
           "out[i] = in[i] * (SCALE_BY / half) + OFFSET; }"


def test_a_define_may_be_a_function_of_the_configuration():
    x = numpy.arange(16, dtype=numpy.float32)
    defines = {"SCALE_BY": lambda p: 2 * p["half"], "OFFSET": 0}
    results, env = tune_kernel("scale", PER_HALF, 16, [numpy.zeros_like(x), x, numpy.int32(16)], {"half": [1, 2, 4]},
                               answer=[2 * x, None, None], defines=defines, quiet=True)
    # each configuration compiled with its own value (a wrong one would not give 2 * x)
    assert sorted(r["half"] for r in results) == [1, 2, 4]
    assert all(isinstance(r["time"], float) for r in results), results
    derived = json.loads((pathlib.Path(env["kernel_folder"]) / "derived.json").read_text())
    assert sorted((e["config"]["half"], e["defines"]["SCALE_BY"]) for e in derived["configurations"]) == \
        [(1, "2"), (2, "4"), (4, "8")]
    out = run_kernel("scale", PER_HALF, 16, [numpy.zeros_like(x), x, numpy.int32(16)], {"half": 4},
                     defines={"SCALE_BY": lambda p: 3 * p["half"], "OFFSET": 1})
    numpy.testing.assert_array_equal(out[0], 3 * x + 1)


def test_a_define_function_that_fails_names_it():
    args, answer = scale_arguments()
    with pytest.raises(ValueError, match=r"defines\['W'\]: raised ZeroDivisionError: .* on \{'x': 0\}; make it return"):
        tune_kernel("scale", SCALE, 16, args, {"x": [0, 1]}, defines={"W": lambda p: 1 // p["x"]}, quiet=True)
    big = {f"p{i}": list(range(100)) for i in range(3)}
    with pytest.raises(ValueError, match=r"defines\['W'\]: a function of the configuration is evaluated for every "
                                         r"configuration, and the space has more than 200000"):
        tune_kernel("scale", SCALE, 16, args, big, defines={"W": lambda p: 1}, quiet=True)


def cuda_topology(tmp_path):
    topology = tmp_path / "cuda.yaml"
    topology.write_text("compile_workers: 1\ndevices:\n  - {backend: cuda, id: 0, name: gpu}\n")
    return str(topology)


GRID_ADD = """
extern "C" __global__ void vector_add(float* c, const float* a, const float* b, int n) {
    for (int k = 0; k < per_thread; k++) {
        int i = (blockIdx.x * per_thread + k) * block_size_x + threadIdx.x;
        if (i < n) c[i] = a[i] + b[i];
    }
}
"""


def test_grid_div_gives_each_cuda_configuration_its_grid(tmp_path):
    # Without a GPU the trials fail, and the launch each would have had is in
    # the kernel folder (tests/kernels/test_user_kernel.cpp checks that the
    # CUDA launch divides the grid by it).
    args, answer = cuda_arguments(10000)
    tune_params = {"block_size_x": [64, 128], "per_thread": [1, 4]}
    results, env = tune_kernel("vector_add", GRID_ADD, 10000, args, tune_params, answer=answer, lang="CUDA",
                               grid_div_x=["block_size_x", "per_thread"], topology=cuda_topology(tmp_path),
                               quiet=True)
    assert len(results) == 4
    folder = pathlib.Path(env["kernel_folder"])
    assert json.loads((folder / "launch.json").read_text())["derived"] == "derived.json"
    derived = json.loads((folder / "derived.json").read_text())["configurations"]
    assert sorted((e["config"]["block_size_x"], e["config"]["per_thread"], e["grid_divisor"][0]) for e in derived) \
        == [(64, 1, 64), (64, 4, 256), (128, 1, 128), (128, 4, 512)]
    assert all(e["grid_divisor"][1:] == [1, 1] for e in derived)
    # an expression and a function, as Kernel Tuner takes them
    _, env = tune_kernel("vector_add", GRID_ADD, 10000, args, tune_params, answer=answer, lang="CUDA",
                         grid_div_x="block_size_x * per_thread", grid_div_y=lambda p: 1,
                         topology=cuda_topology(tmp_path), quiet=True)
    again = json.loads((pathlib.Path(env["kernel_folder"]) / "derived.json").read_text())["configurations"]
    assert sorted(e["grid_divisor"][0] for e in again) == [64, 128, 256, 512]


def test_grid_div_for_a_c_kernel_is_accepted_and_a_bad_one_named(tmp_path):
    args, answer = scale_arguments()
    results, env = tune_kernel("scale", SCALE, 16, args, {"block_size_x": [1, 2]}, answer=answer,
                               grid_div_x=["block_size_x"], quiet=True)
    assert all(isinstance(r["time"], float) for r in results)  # a C function has no grid
    assert not (pathlib.Path(env["kernel_folder"]) / "derived.json").exists()
    with pytest.raises(TypeError, match=r"grid_div_x: holds a dict; give parameter names or expressions"):
        tune_kernel("scale", SCALE, 16, args, {"x": [1]}, grid_div_x={"x": 1}, quiet=True)
    cuda_args, cuda_answer = cuda_arguments(64)
    with pytest.raises(ValueError, match=r"grid_div_y: \['tile'\] raised NameError: .*; use the tunable"):
        tune_kernel("vector_add", CUDA_ADD, 64, cuda_args, {"block_size_x": [32]}, answer=cuda_answer, lang="CUDA",
                    grid_div_y=["tile"], topology=cuda_topology(tmp_path), quiet=True)
    with pytest.raises(ValueError, match=r"grid_div_x: <function .*> gives 0 for \{'block_size_x': 32\}"):
        tune_kernel("vector_add", CUDA_ADD, 64, cuda_args, {"block_size_x": [32]}, answer=cuda_answer, lang="CUDA",
                    grid_div_x=lambda p: 0, topology=cuda_topology(tmp_path), quiet=True)


def test_x0_is_measured_first(tmp_path):
    args, answer = scale_arguments()
    tune_params = {"x": list(range(1, 33)), "y": [1, 2]}
    # One compile worker and no background builder (a second builder may
    # finish first): what is handed out first is measured first.
    topology = tmp_path / "one_worker.yaml"
    topology.write_text("compile_workers: 1\nbackground_builds: false\ndevices:\n  - {backend: cpu, id: 0, name: cpu0}\n")
    for seed in (1, 2):
        results, env = tune_kernel("scale", SCALE, 16, args, tune_params, answer=answer, strategy="greedy_ils",
                                   strategy_options={"x0": [21, 2], "max_fevals": 4}, seed=seed,
                                   topology=str(topology), quiet=True)
        assert len(results) == 4 and env["tune_engine_strategy"] == "opevo+knn"
        assert (results[0]["x"], results[0]["y"]) == (21, 2)  # the first measured
        assert len({(r["x"], r["y"]) for r in results}) == 4


def test_x0_starts_a_replayed_search(data_dir):
    path = data_dir / "replay" / "conv_a100_slice.json.gz"
    doc = json.load(gzip.open(path, "rt"))
    keys = doc["tune_params_keys"]
    tune_params = {k: doc["tune_params"][k] for k in keys}
    # the slowest: not where a search of 5 evaluations goes by itself
    entry = max((e for e in doc["cache"].values() if isinstance(e["time"], float)), key=lambda e: e["time"])
    x0 = [entry[k] for k in keys]
    results, _ = tune_kernel(doc["kernel_name"], "", doc["problem_size"], [], tune_params, cache=str(path),
                             simulation_mode=True, strategy="simulated_annealing",
                             strategy_options={"x0": x0, "max_fevals": 5}, seed=4, quiet=True)
    assert len(results) == 5
    assert x0 in [[r[k] for k in keys] for r in results]


def test_a_bad_x0_is_named():
    args, answer = scale_arguments()
    tune_params = {"x": [1, 2, 4], "y": [1, 2]}

    def run(options, strategy="greedy_mls", **kwargs):
        tune_kernel("scale", SCALE, 16, args, tune_params, strategy=strategy, strategy_options=options, quiet=True,
                    **kwargs)

    with pytest.raises(ValueError, match=r"strategy_options\['x0'\]: \[1\] is not a list of 2 values; give one value "
                                         r"per tunable parameter, in the order of tune_params: x, y"):
        run({"x0": [1]})
    with pytest.raises(ValueError, match=r"strategy_options\['x0'\]: x = 3 is not one of its values \[1, 2, 4\]"):
        run({"x0": [3, 1]})
    with pytest.raises(ValueError, match=r"strategy_options\['x0'\]: \{'x': 4, 'y': 2\} breaks the restrictions"):
        run({"x0": [4, 2]}, restrictions=["x * y <= 4"])
    with pytest.raises(ValueError, match=r"strategy_options\['x0'\]: brute_force samples the space and does not "
                                         r"search from a starting point; leave x0 out"):
        run({"x0": [1, 1]}, strategy="brute_force")


def test_run_kernel_returns_the_arguments_after_one_run():
    source = "void axpy(float* y, const double* x, int n) { for (int i = 0; i < n; i++) y[i] += factor * x[i]; }"
    x = numpy.linspace(-1, 1, 50)
    y = numpy.ones(50, dtype=numpy.float32)
    out = run_kernel("axpy", source, 50, [y, x, numpy.int32(50)], {"factor": 3})
    assert out[0].dtype == numpy.float32 and out[0].shape == (50,)
    numpy.testing.assert_allclose(out[0], 1 + 3 * x, rtol=1e-6)  # an in/out array starts from its data
    numpy.testing.assert_array_equal(out[1], x)
    assert out[2] == 50
    assert (y == 1).all()  # the caller's arrays are left as they were
    matrix = numpy.arange(12, dtype=numpy.int32).reshape(3, 4)
    negate = "void negate(int* m, int n) { for (int i = 0; i < n; i++) m[i] = -m[i] * k; }"
    numpy.testing.assert_array_equal(run_kernel("negate", negate, 12, [matrix, numpy.int32(12)], {"k": 2})[0],
                                     -2 * matrix)


def test_run_kernel_says_why_a_kernel_did_not_run():
    with pytest.raises(RuntimeError, match=r"(?s)run_kernel: broken \{'k': 1\}: compile_error: .*error"):
        run_kernel("broken", "void broken(float* a) { this is not C; }", 4, [numpy.zeros(4, numpy.float32)], {"k": 1})
    with pytest.raises(ValueError, match=r"lang: run_kernel runs C kernels"):
        run_kernel("vector_add", CUDA_ADD, 4, [numpy.zeros(4, numpy.float32)], {"block_size_x": 32})


def cuda_available():
    import tune_engine
    return any(e["backend"] == "cuda" and e["available"] for e in tune_engine.devices())


CUDA_ADD = """
extern "C" __global__ void vector_add(float* c, const float* a, const float* b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def cuda_arguments(n=10000):
    a = numpy.random.rand(n).astype(numpy.float32)
    b = numpy.random.rand(n).astype(numpy.float32)
    return [numpy.zeros_like(a), a, b, numpy.int32(n)], [a + b, None, None, None]


def test_cuda_without_a_gpu_says_so():
    if cuda_available():
        pytest.skip("this machine has a CUDA GPU")
    args, answer = cuda_arguments()
    with pytest.raises(RuntimeError, match=r'lang="CUDA" needs an NVIDIA GPU and none is usable here'):
        tune_kernel("vector_add", CUDA_ADD, 10000, args, {"block_size_x": [64, 128]}, answer=answer, lang="CUDA",
                    quiet=True)
    # Without lang, a __global__ function is CUDA, as Kernel Tuner guesses.
    with pytest.raises(RuntimeError, match=r'lang="CUDA" needs an NVIDIA GPU'):
        tune_kernel("vector_add", CUDA_ADD, 10000, args, {"block_size_x": [64, 128]}, answer=answer, quiet=True)


def hip_state():
    import tune_engine
    return next((e for e in tune_engine.devices() if e["backend"] == "hip"), None)


def test_hip_without_an_amd_gpu_says_so(tmp_path):
    hip = hip_state()
    if hip is not None and hip["available"]:
        pytest.skip("this machine has an AMD GPU")
    args, answer = cuda_arguments()
    with pytest.raises(RuntimeError, match=r'lang="HIP" needs an AMD GPU and none is usable here'):
        tune_kernel("vector_add", CUDA_ADD, 10000, args, {"block_size_x": [64, 128]}, answer=answer, lang="HIP",
                    quiet=True)
    if hip is None or not hip["built"]:
        return
    # Through a topology naming a HIP device the kernel is built with hipcc,
    # and each run says that there is no AMD GPU: what a HIP user gets here.
    topology = tmp_path / "hip.yaml"
    topology.write_text("compile_workers: 1\ndevices:\n  - {backend: hip, id: 0, name: gfx}\n")
    results, env = tune_kernel("vector_add", CUDA_ADD, 10000, args, {"block_size_x": [64, 128]}, answer=answer,
                               lang="HIP", topology=str(topology), quiet=True)
    assert env["lang"] == "HIP"
    assert sorted(r["block_size_x"] for r in results) == [64, 128]
    for r in results:
        assert r["time"] == "RuntimeFailedConfig", r
        assert r["message"].startswith("no AMD GPU found"), r
        assert r["compile_time"] > 0, r  # hipcc built it
    launch = json.loads((pathlib.Path(env["kernel_folder"]) / "launch.json").read_text())
    assert launch["language"] == "hip"


def test_cuda_tunes_the_block_size_on_a_gpu():
    if not cuda_available():
        pytest.skip("no CUDA GPU on this machine")
    args, answer = cuda_arguments()
    results, _ = tune_kernel("vector_add", CUDA_ADD, 10000, args, {"block_size_x": [32, 64, 128, 256]},
                             answer=answer, lang="CUDA", quiet=True)
    assert sorted(r["block_size_x"] for r in results) == [32, 64, 128, 256]
    assert all(isinstance(r["time"], float) for r in results), results
