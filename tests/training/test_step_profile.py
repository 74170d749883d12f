"""benchmarks/step_profile.py: per-phase host time, launches and GPU busy time from a chrome trace (Kineto's keys)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "step_profile.py"


def _module():
    spec = importlib.util.spec_from_file_location("step_profile", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _x(cat, name, ts, dur, corr=None):
    event = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur}
    if corr is not None:
        event["args"] = {"correlation": corr}
    return event


def test_phase_table_assigns_gpu_ops_to_the_phase_that_launched_them():
    ms = 1000.0  # trace times are microseconds
    trace = {
        "traceEvents": [
            # phase a twice (two occurrences), phase b once; a's first launch is a graph replay with two kernels
            _x("user_annotation", "phase/a", 0, 100 * ms),
            _x("user_annotation", "phase/a", 1000 * ms, 100 * ms),
            _x("user_annotation", "phase/b", 200 * ms, 100 * ms),
            _x("cuda_runtime", "cudaGraphLaunch", 10 * ms, 1, corr=1),
            _x("kernel", "k1", 50 * ms, 10 * ms, corr=1),
            _x("kernel", "k2", 80 * ms, 10 * ms, corr=1),
            _x("cuda_driver", "cuLaunchKernel", 1010 * ms, 1, corr=2),
            _x("kernel", "k3", 1050 * ms, 20 * ms, corr=2),
            # b's kernel runs after the host left b: it still counts in b
            _x("cuda_runtime", "cudaLaunchKernel", 210 * ms, 1, corr=3),
            _x("kernel", "k4", 400 * ms, 100 * ms, corr=3),
            _x("cuda_runtime", "cudaMemcpyAsync", 600 * ms, 1, corr=4),
            _x("gpu_memcpy", "Memcpy HtoD", 600 * ms, 10 * ms, corr=4),
            {"ph": "i", "cat": "kernel", "name": "instant", "ts": 0},  # not a complete event: ignored
        ]
    }
    table = _module().phase_table(trace, steps=1)
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if line.startswith("| ")}
    # host ms, launches, GPU ops, busy ms, span ms, busy / span
    assert rows["a"] == "| a | 200.0 | 2 | 3 | 40.0 | 60.0 | 67% |"
    assert rows["b"] == "| b | 100.0 | 1 | 1 | 100.0 | 100.0 | 100% |"
    assert rows["(outside phases)"] == "| (outside phases) | 0.0 | 1 | 1 | 10.0 | 10.0 | 100% |"
    assert "GPU busy 150.0 ms of 1020.0 ms a step between its first and last GPU op (15%)" in table


def test_phase_table_without_gpu_ops():
    trace = {"traceEvents": [_x("user_annotation", "phase/a", 0, 2000)]}
    table = _module().phase_table(trace, steps=2)
    assert "| a | 1.0 | 0 | 0 | 0.0 | 0.0 | - |" in table
    assert "no GPU ops recorded" in table


def test_busy_ms_is_the_union_of_intervals():
    assert _module().busy_ms([(0, 1000), (500, 1500), (3000, 4000), (3100, 3200)]) == 2.5
