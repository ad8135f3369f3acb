#!/usr/bin/env python3
"""Tuned GPU kernels against the vendor's, on one GPU, timed interleaved.

For each task tuned on the cuda backend into a results database, the best
configuration is emitted (`tune-engine emit --backend cuda`: the kernel source
and its launch), compiled with NVRTC for this GPU, launched through the CUDA
driver on PyTorch's stream, checked against PyTorch's answer, and timed in
rounds alternated with the vendor kernel that PyTorch calls for the same
problem: cuBLAS for MatMul and BatchMatMul (fp32, TF32 off), cuDNN for Conv2D
(fp32, TF32 off, cudnn.benchmark on so it picks its fastest algorithm). Both
are timed the same way: CUDA events around a batch of back-to-back launches
of about --batch-ms, after a warm-up; the figure of each round is the batch
mean, the reported time the median over --rounds rounds.

It also reads the tuning runs' summaries (`tune --summary-json LABEL.json`
beside the database) and the database for the pipeline's figures: trials,
wall time, trials/s, the GPU's busy fraction, the fraction of the wall time
the GPU spent running kernels being timed (useful), and the compile pool's
busy fraction.

  gpu_vendor.py --tune-engine PATH --db runs.db --out DIR LABEL=TASK ...

Writes DIR/vendor.json and DIR/vendor.md (a Markdown table) and prints the
table. Exit 1 when a tuned kernel gives a wrong answer or a task could not be
timed, 2 on bad arguments, 3 when PyTorch or CUDA is missing.
"""
import argparse
import ctypes
import glob
import json
import os
import sqlite3
import statistics
import subprocess
import sys


def load_library(names, globs):
    tried = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            tried.append(f"{name}: {e}")
    for pattern in globs:
        for path in sorted(glob.glob(pattern), reverse=True):
            try:
                return ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path}: {e}")
    raise RuntimeError("cannot load any of " + "; ".join(tried))


class Cuda:
    """The few driver and NVRTC calls needed to run an emitted kernel."""

    def __init__(self, torch):
        self.torch = torch
        self.driver = load_library(["libcuda.so.1", "libcuda.so"], [])
        site = os.path.dirname(os.path.dirname(torch.__file__))
        homes = [os.environ.get("CUDA_HOME", "/usr/local/cuda"), "/usr/local/cuda", "/usr/local/cuda-*"]
        self.nvrtc = load_library(
            ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"],
            [f"{h}/lib64/libnvrtc.so*" for h in homes] + [f"{site}/nvidia/*/lib/libnvrtc.so*"])
        self.driver.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.driver.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.driver.cuModuleGetFunction.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
        self.driver.cuModuleLoadData.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(self, rc, what):
        if rc != 0:
            text = ctypes.c_char_p()
            self.driver.cuGetErrorString(rc, ctypes.byref(text))
            raise RuntimeError(f"{what}: {text.value.decode() if text.value else rc}")

    def compile(self, source, arch):
        program = ctypes.c_void_p()
        rc = self.nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"tuned.cu", 0, None, None)
        if rc != 0:
            raise RuntimeError("nvrtcCreateProgram: " + self.nvrtc.nvrtcGetErrorString(rc).decode())
        options = [f"--gpu-architecture=sm_{arch}".encode(), b"--std=c++17", b"-default-device"]
        rc = self.nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
        if rc != 0:
            size = ctypes.c_size_t()
            self.nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            self.nvrtc.nvrtcGetProgramLog(program, log)
            raise RuntimeError("NVRTC: " + log.value.decode(errors="replace"))
        size = ctypes.c_size_t()
        self.nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        self.nvrtc.nvrtcGetCUBIN(program, cubin)
        self.nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
        return cubin.raw

    def function(self, cubin, entry):
        self.torch.cuda.current_stream().synchronize()  # PyTorch's context is current from here on
        context = ctypes.c_void_p()
        self.check(self.driver.cuCtxGetCurrent(ctypes.byref(context)), "cuCtxGetCurrent")
        if not context.value:
            raise RuntimeError("no current CUDA context after PyTorch's first launch")
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.driver.cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
        self.check(self.driver.cuModuleGetFunction(ctypes.byref(function), module, entry.encode()),
                   "cuModuleGetFunction")
        return function

    def launcher(self, function, grid, block, tensors):
        pointers = [ctypes.c_void_p(t.data_ptr()) for t in tensors]
        params = (ctypes.c_void_p * len(pointers))(*[ctypes.addressof(p) for p in pointers])
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)

        def launch():
            self.check(self.driver.cuLaunchKernel(function, *grid, *block, 0, stream, params, None), "cuLaunchKernel")

        launch.keep = (pointers, params)  # alive as long as the launcher
        return launch


def problem(torch, launch_info):
    """The tensors in the kernel's argument order, and the vendor call that computes the same output."""
    shape = launch_info["shape"]
    gen = torch.Generator(device="cuda").manual_seed(1)
    rand = lambda *dims: torch.rand(*dims, device="cuda", generator=gen) * 2 - 1
    if launch_info["operator"] == "conv2d":
        b, c, h, w = shape["batch"], shape["in_channels"], shape["height"], shape["width"]
        f, kh, kw = shape["out_channels"], shape["kernel_h"], shape["kernel_w"]
        image, weights = rand(b, c, h, w), rand(f, c, kh, kw)
        out = torch.empty(b, f, shape["out_height"], shape["out_width"], device="cuda")
        conv = torch.nn.functional.conv2d
        vendor = lambda: conv(image, weights, stride=shape["stride"], padding=shape["pad"])
        return [out, image, weights], out, vendor, "cuDNN"
    b, n, k, m = shape["batch"], shape["n"], shape["k"], shape["m"]
    a_stored = rand(b, k, n) if shape["transpose_a"] else rand(b, n, k)
    b_stored = rand(b, m, k) if shape["transpose_b"] else rand(b, k, m)
    a = a_stored.transpose(1, 2) if shape["transpose_a"] else a_stored
    bm = b_stored.transpose(1, 2) if shape["transpose_b"] else b_stored
    out = torch.empty(b, n, m, device="cuda")
    if launch_info["operator"] == "matmul":
        a2, b2, out2 = a[0], bm[0], torch.empty(n, m, device="cuda")
        return [out, a_stored, b_stored], out, (lambda: torch.mm(a2, b2, out=out2)), "cuBLAS"
    out2 = torch.empty(b, n, m, device="cuda")
    return [out, a_stored, b_stored], out, (lambda: torch.bmm(a, bm, out=out2)), "cuBLAS"


def batch_ms(torch, fn, reps):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / reps


def repetitions(torch, fn, target_ms):
    for _ in range(3):
        fn()
    once = batch_ms(torch, fn, 3)
    return max(3, min(2000, int(target_ms / max(once, 1e-3))))


def pipeline_figures(db, summary_path, program):
    figures = {}
    if os.path.exists(summary_path):
        s = json.load(open(summary_path))
        figures.update(trials=s.get("trials"), wall_s=s.get("wall_s"), reason=s.get("reason"))
        if s.get("wall_s"):
            figures["trials_per_s"] = s["trials"] / s["wall_s"]
        busy = s.get("busy", {})
        figures["compile_busy"] = busy.get("compile")
        devices = busy.get("devices", {})
        if devices:
            figures["gpu_busy"] = max(devices.values())
        compile_time = s.get("time", {}).get("compile", {})
        figures["compile_workers"] = compile_time.get("workers")
        figures["build_s"] = compile_time.get("build_s")
        figures["device_time"] = s.get("time", {}).get("devices")
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        row = con.execute(
            "SELECT r.id, COUNT(t.id), SUM(t.kernel_s), SUM(t.status = 'ok'), SUM(t.stopped_early) FROM runs r "
            "JOIN trials t ON t.run_id = r.id WHERE r.task_key = ? GROUP BY r.id ORDER BY r.id DESC LIMIT 1",
            (program,)).fetchone()
        if row:
            figures.update(run=row[0], kernel_s=row[2] or 0.0, ok_trials=row[3], stopped_early=row[4])
            statuses = con.execute("SELECT status, COUNT(*) FROM trials WHERE run_id = ? GROUP BY status",
                                   (row[0],)).fetchall()
            figures["statuses"] = dict(statuses)
            if figures.get("wall_s"):
                figures["gpu_useful"] = figures["kernel_s"] / figures["wall_s"]
    return figures


def bound_by(f):
    compile_busy, gpu_busy = f.get("compile_busy") or 0, f.get("gpu_busy") or 0
    if compile_busy >= 0.85 and compile_busy >= gpu_busy:
        return "compile pool"
    if gpu_busy >= 0.85:
        return "GPU measurer"
    return "neither saturated (generator/search or start-up)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune-engine", required=True, help="tune-engine program (or the bundle's run.sh)")
    parser.add_argument("--db", required=True, help="results database of the cuda tuning runs")
    parser.add_argument("--summaries", help="folder of LABEL.json summaries (default: the database's folder)")
    parser.add_argument("--out", required=True, help="folder to write vendor.json, vendor.md and the kernels to")
    parser.add_argument("--rounds", type=int, default=9, help="alternated rounds per task (default 9)")
    parser.add_argument("--batch-ms", type=float, default=40.0, help="length of one timed batch (default 40 ms)")
    parser.add_argument("tasks", nargs="+", help="LABEL=TASK, e.g. MM1=matmul:512x1024x1024")
    args = parser.parse_args()
    pairs = []
    for item in args.tasks:
        if "=" not in item:
            parser.error(f"task '{item}': give LABEL=TASK, e.g. MM1=matmul:512x1024x1024")
        pairs.append(item.split("=", 1))
    if not os.path.exists(args.db):
        parser.error(f"--db {args.db} does not exist; tune the tasks first")
    summaries = args.summaries or os.path.dirname(os.path.abspath(args.db))
    os.makedirs(args.out, exist_ok=True)

    try:
        import torch
    except ImportError as e:
        print(f"gpu_vendor.py: PyTorch is not importable ({e}); the vendor timings need it", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("gpu_vendor.py: PyTorch sees no CUDA device", file=sys.stderr)
        return 3
    torch.zeros(1, device="cuda")  # PyTorch's context, current on this thread from here on
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("highest")
    major, minor = torch.cuda.get_device_capability(0)
    arch = major * 10 + minor
    cuda = Cuda(torch)
    device_name = torch.cuda.get_device_name(0)
    print(f"{device_name} (sm_{arch}); PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}; TF32 off; {args.rounds} rounds alternated, "
          f"batches of ~{args.batch_ms:g} ms", flush=True)

    rows, failed = [], False
    for label, task in pairs:
        row = {"label": label, "task": task}
        rows.append(row)
        source, launch_path = os.path.join(args.out, f"{label}.cu"), os.path.join(args.out, f"{label}.json")
        emit = subprocess.run([args.tune_engine, "emit", "--db", args.db, "--task", task, "--backend", "cuda",
                               "--name", label.lower(), "--source", source, "--launch", launch_path],
                              capture_output=True, text=True)
        if emit.returncode != 0:
            row["error"] = "emit: " + (emit.stderr.strip() or emit.stdout.strip())
            print(f"{label}: {row['error']}", flush=True)
            failed = True
            continue
        info = json.load(open(launch_path))
        row.update(program=info["program"], configuration=info["configuration"], tuned_recorded_ms=info["time_ms"],
                   flops=info["flops"])
        row["pipeline"] = pipeline_figures(args.db, os.path.join(summaries, f"{label}.json"), info["program"])
        try:
            function = cuda.function(cuda.compile(open(source).read(), arch), info["entry"])
            tensors, out, vendor, vendor_name = problem(torch, info)
            tuned = cuda.launcher(function, info["grid"], info["block"], tensors)
            row["vendor"] = vendor_name
            tuned()
            expected = vendor()
            torch.cuda.synchronize()
            scale = expected.abs().max().item()
            error = (out.view_as(expected) - expected).abs().max().item() / max(scale, 1e-30)
            row["max_relative_error"] = error
            if not error < 1e-3:
                row["error"] = f"tuned kernel's output differs from {vendor_name}'s: max error {error:.3g} of the largest"
                failed = True
            reps_tuned = repetitions(torch, tuned, args.batch_ms)
            reps_vendor = repetitions(torch, vendor, args.batch_ms)
            tuned_ms, vendor_ms = [], []
            for r in range(args.rounds):
                order = [("tuned", tuned, reps_tuned), ("vendor", vendor, reps_vendor)]
                if r % 2:
                    order.reverse()
                for which, fn, reps in order:
                    ms = batch_ms(torch, fn, reps)
                    (tuned_ms if which == "tuned" else vendor_ms).append(ms)
            ratios = [v / t for t, v in zip(tuned_ms, vendor_ms)]
            row.update(tuned_ms=statistics.median(tuned_ms), vendor_ms=statistics.median(vendor_ms),
                       tuned_rounds_ms=tuned_ms, vendor_rounds_ms=vendor_ms, ratio=statistics.median(ratios),
                       ratio_range=[min(ratios), max(ratios)], reps=[reps_tuned, reps_vendor])
            row["tuned_tflops"] = info["flops"] / row["tuned_ms"] / 1e9
            row["vendor_tflops"] = info["flops"] / row["vendor_ms"] / 1e9
        except Exception as e:  # one task's failure is reported, the others still run
            row["error"] = f"{type(e).__name__}: {e}"
            failed = True
        p = row["pipeline"]
        line = f"{label} {task}: "
        if "ratio" in row:
            line += (f"tuned {row['tuned_ms']:.4g} ms {row['tuned_tflops']:.2f} TFLOP/s, {row['vendor']} "
                     f"{row['vendor_ms']:.4g} ms {row['vendor_tflops']:.2f} TFLOP/s, tuned/vendor "
                     f"{row['ratio']:.2f}x ({row['ratio_range'][0]:.2f}-{row['ratio_range'][1]:.2f}); "
                     f"error {row['max_relative_error']:.2g}")
        if "error" in row:
            line += " ERROR " + row["error"]
        print(line, flush=True)
        if p.get("wall_s"):
            print(f"  pipeline: {p.get('trials')} trials in {p['wall_s']:.1f} s ({p.get('trials_per_s', 0):.2f}/s), "
                  f"statuses {p.get('statuses')}; GPU busy {100 * (p.get('gpu_busy') or 0):.1f}%, useful "
                  f"{100 * (p.get('gpu_useful') or 0):.2f}% (kernel time {p.get('kernel_s', 0):.2f} s); compile pool "
                  f"({p.get('compile_workers')} workers) busy {100 * (p.get('compile_busy') or 0):.1f}%; bound by "
                  f"{bound_by(p)}", flush=True)

    table = ["| task | tuned ms | tuned TFLOP/s | vendor | vendor TFLOP/s | tuned / vendor | trials | wall s | "
             "trials/s | GPU busy | GPU useful | compile busy |", "|" + "---|" * 12]
    for row in rows:
        p = row.get("pipeline", {})
        if "ratio" in row:
            timing = (f"{row['tuned_ms']:.4g} | {row['tuned_tflops']:.2f} | {row['vendor']} | "
                      f"{row['vendor_tflops']:.2f} | {row['ratio']:.2f}x ({row['ratio_range'][0]:.2f}–"
                      f"{row['ratio_range'][1]:.2f})")
        else:
            timing = "– | – | – | – | " + row.get("error", "not timed").replace("|", "/")[:120]
        pct = lambda key: f"{100 * p[key]:.1f}%" if p.get(key) is not None else "–"
        table.append(f"| {row['label']} `{row['task']}` | {timing} | {p.get('trials', '–')} | "
                     f"{p['wall_s']:.1f} | {p.get('trials_per_s', 0):.2f} | {pct('gpu_busy')} | {pct('gpu_useful')} | "
                     f"{pct('compile_busy')} |" if p.get("wall_s") else
                     f"| {row['label']} `{row['task']}` | {timing} | – | – | – | – | – | – |")
    header = (f"{device_name} (sm_{arch}), PyTorch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
              f"{torch.backends.cudnn.version()}, fp32 with TF32 off; median of {args.rounds} alternated rounds")
    open(os.path.join(args.out, "vendor.md"), "w").write(header + "\n\n" + "\n".join(table) + "\n")
    json.dump({"device": device_name, "arch": arch, "torch": torch.__version__, "cuda": torch.version.cuda,
               "cudnn": torch.backends.cudnn.version(), "rounds": args.rounds, "rows": rows},
              open(os.path.join(args.out, "vendor.json"), "w"), indent=1, default=str)
    print("\n" + header + "\n\n" + "\n".join(table), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
