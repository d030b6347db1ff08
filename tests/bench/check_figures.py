#!/usr/bin/env python3
"""Runs a benchmark's smoke run and checks what it printed: the command must exit with 0 and print
one JSON report whose figures are all there and sane (finite; times, rates and sizes positive;
ratios inside a broad range that only a broken measurement leaves, such as a zero time, a unit
mistake or a run that did nothing; echoed settings equal to what was asked). Sanity, not speed:
the speed goals stay in the benchmarks' own output.

  check_figures.py BENCH -- COMMAND [ARG ...]     BENCH: engine, compare, visualize, record, gui, job,
                                                  attention, exported, sae, sae_scale, dissect
  check_figures.py --self-test                    the checks themselves fail on broken reports
"""
import copy
import json
import math
import subprocess
import sys

# Ratios of two timings taken on a shared 2-core machine from a single repeat: a factor of 50 either
# way is noise; beyond it the measurement is broken.
RATIO = (0.02, 50.0)
SECONDS = (1e-7, 3600.0)
RSS_MIB = (8.0, 65536.0)
RSS_GROWTH = (-0.5, 1.0)  # the smoke runs measure the same image count twice: about 0


def value_at(report, path):
    """report["a"]["b"][0]... for the path "a.b.0"; ValueError when it is not there."""
    value = report
    for key in path.split("."):
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            raise ValueError(f"{path}: missing")
    return value


def number(report, path):
    value = value_at(report, path)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{path}: {value!r} is not a number")
    if not math.isfinite(value):
        raise ValueError(f"{path}: {value} is not finite")
    return value


def within(low, high):
    def check(report, path):
        value = number(report, path)
        if not low <= value <= high:
            raise ValueError(f"{path}: {value} is outside [{low}, {high}]")
    return check


def equals(expected):
    def check(report, path):
        value = value_at(report, path)
        if value != expected:
            raise ValueError(f"{path}: {value!r}, but the run asked for {expected!r}")
    return check


def engine_rules(report):
    rules = {"model": equals("resnet18"), "batch": equals(1), "size": equals(64), "repeats": equals(1),
             "device": equals("cpu")}
    for key in ("plain_forward_seconds", "grab_4_blocks_seconds", "python_eager_seconds",
                "python_hooks_4_blocks_seconds", "minimum_seconds.plain", "minimum_seconds.grab_4_blocks",
                "minimum_seconds.python_eager", "minimum_seconds.python_hooks"):
        rules[key] = within(*SECONDS)
    for key in ("grab_ratio_to_plain", "grab_ratio_to_plain_of_minimums", "grab_ours_over_python_hooks",
                "plain_ours_over_python_eager"):
        rules[key] = within(*RATIO)
    for key in ("graph_build_ms.grab_4_blocks", "graph_build_ms.truncate_layer4"):
        rules[key] = within(1e-4, 60000)
    for i, block in enumerate(["layer1", "layer2", "layer3", "layer4"]):
        rules[f"truncation.{i}.at"] = equals(block)
        rules[f"truncation.{i}.seconds"] = within(*SECONDS)
        rules[f"truncation.{i}.python_hook_seconds"] = within(*SECONDS)
        rules[f"truncation.{i}.flop_share"] = within(1e-6, 1.0)
        for key in ("time_ratio_to_full", "time_ratio_of_minimums", "ours_over_python"):
            rules[f"truncation.{i}.{key}"] = within(*RATIO)
    return rules


def engine_whole(report):
    """The FLOPs up to a cut grow with the cut's depth; a difference is the difference of its parts."""
    cuts = report["truncation"]
    shares = [c["flop_share"] for c in cuts]
    if shares != sorted(shares) or len(set(shares)) != len(shares):
        raise ValueError(f"truncation flop_share {shares} does not grow from layer1 to layer4")
    for c in cuts:
        if abs(c["time_ratio_minus_flop_share"] - (c["time_ratio_to_full"] - c["flop_share"])) > 1e-9:
            raise ValueError(f"truncation at {c['at']}: time_ratio_minus_flop_share is not the difference")


def compare_rules(report):
    rules = {"images": equals(16), "batch": equals(8), "size": equals(64), "layer_pairs": equals(64),
             "two_forward_passes_seconds": within(*SECONDS), "cka_seconds": within(*SECONDS),
             "cka_over_two_forward_passes": within(*RATIO), "peak_rss_mib_100_images": within(*RSS_MIB),
             "peak_rss_mib_all_images": within(*RSS_MIB), "peak_rss_growth": within(*RSS_GROWTH)}
    return rules


def compare_whole(report):
    if len(report["layers_a"]) != 8:
        raise ValueError(f"layers_a: {report['layers_a']}, not the 8 default layers")


def visualize_rules(report):
    return {"model": equals("resnet18"), "layer": equals("layer2"), "size": equals(64), "steps_per_run": equals(2),
            "rounds": equals(1), "torchscope_steps_per_second": within(1e-4, 1e6),
            "python_whole_forward_steps_per_second": within(1e-4, 1e6),
            "python_cut_at_layer_steps_per_second": within(1e-4, 1e6),
            "ratio_to_python_whole_forward": within(*RATIO), "ratio_to_python_cut_at_layer": within(*RATIO)}


def record_rules(report):
    return {"images": equals(32), "batch": equals(8), "reduction": equals("stats"),
            "grabs": equals(["features.0", "features.2"]), "threads": within(1, 4096),
            "forward_only_images_per_second": within(1e-3, 1e7), "folder_run_images_per_second": within(1e-3, 1e7),
            "folder_run_over_forward_only": within(*RATIO), "peak_rss_mib_100_images": within(*RSS_MIB),
            "peak_rss_mib_1000_images": within(*RSS_MIB), "peak_rss_growth_100_to_1000": within(*RSS_GROWTH)}


def gui_rules(report):
    return {"images": equals(16), "images_run": equals(16), "failures": equals(0), "cancelled": equals(False),
            "grabs": equals("features.0 features.2 features.2:grad"), "run_seconds": within(*SECONDS),
            "wall_seconds": within(*SECONDS), "gui_ticks": within(1, 1e9), "max_gui_stall_ms": within(1e-3, 600000),
            "p99_tick_gap_ms": within(1e-3, 600000), "results_drawn_at_s": within(*SECONDS),
            "worst_stall_ended_at_s": within(0, 3600)}


def gui_whole(report):
    if not report["p99_tick_gap_ms"] <= report["max_gui_stall_ms"]:
        raise ValueError("p99_tick_gap_ms is above max_gui_stall_ms")
    if not report["results_drawn_at_s"] <= report["wall_seconds"]:
        raise ValueError("results_drawn_at_s is after the end of the run (wall_seconds)")
    if not report["run_seconds"] <= report["wall_seconds"]:
        raise ValueError("run_seconds is longer than the whole run (wall_seconds)")


def job_rules(report):
    return {"images": equals(64), "repeats": equals(1), "grabs": equals(["features.1"]),
            "one_process_images_per_second": within(1e-3, 1e7), "two_ranks_images_per_second": within(1e-3, 1e7),
            "two_ranks_to_one_process": within(*RATIO),
            "recording_loop_only.one_process_images_per_second": within(1e-3, 1e7),
            "recording_loop_only.two_ranks_images_per_second": within(1e-3, 1e7),
            "recording_loop_only.two_ranks_to_one_process": within(*RATIO),
            "merge_bytes": within(1, 1e12), "merge_seconds_median": within(0, 600)}


def attention_rules(report):
    rules = {"model": equals("vit_b_16"), "batch": equals(1), "repeats": equals(1), "layers": equals(12)}
    for key in ("plain_forward_seconds", "engine_without_grabs_seconds", "attention_12_layers_seconds",
                "python_eager_seconds",
                "python_need_weights_hooks_seconds"):
        rules[key] = within(*SECONDS)
    for key in ("attention_ratio_to_plain", "python_need_weights_ratio_to_eager",
                "attention_ours_over_python_need_weights"):
        rules[key] = within(*RATIO)
    return rules


def exported_rules(report):
    rules = {"batch": equals(1), "repeats": equals(1), "models.0.model": equals("resnet18"),
             "models.0.nodes": within(10, 100000)}
    for key in ("pt2_forward_seconds", "torchscript_forward_seconds", "python_eager_seconds",
                "python_exported_module_seconds", "pt2_engine_seconds", "pt2_grab_4_blocks_seconds",
                "torchscript_engine_seconds", "torchscript_grab_4_blocks_seconds"):
        rules[f"models.0.{key}"] = within(*SECONDS)
    for key in ("pt2_over_torchscript", "pt2_over_python_eager", "pt2_over_python_exported_module",
                "pt2_grab_ratio_to_engine", "torchscript_grab_ratio_to_engine"):
        rules[f"models.0.{key}"] = within(*RATIO)
    return rules


def sae_rules(report):
    return {"d_in": equals(32), "d_sae": equals(128), "k": equals(8), "batch": equals(256), "steps": equals(2),
            "rounds": equals(1), "threads": within(1, 4096), "torchscope_vectors_per_second": within(1e-3, 1e9),
            "eager_vectors_per_second": within(1e-3, 1e9), "ratio_to_eager": within(*RATIO),
            "last_step_fvu": within(1e-6, 10.0)}


def sae_scale_rules(report):
    return {"threads": within(1, 4096), "batch": equals(256), "memory.images": equals([20, 200]), "memory.peak_rss_mib.0": within(*RSS_MIB),
            "memory.peak_rss_mib.1": within(*RSS_MIB), "memory.seconds.0": within(*SECONDS),
            "memory.seconds.1": within(*SECONDS), "memory.vectors_trained.0": within(1, 1e12),
            "memory.vectors_trained.1": within(1, 1e12), "memory.peak_rss_growth": within(*RSS_GROWTH)}


def dissect_rules(report):
    # The IoU tables of two float32 computations (TorchScript and eager PyTorch with PIL) may differ where
    # a pixel lies at a unit's threshold: a pixel in a union of 100 moves an IoU by 0.01. cli_dissect holds
    # every count to the transcription exactly, pixels at the threshold aside.
    return {"threads": within(1, 4096), "images": equals(16), "units": equals(512),
            "torchscope.seconds": within(*SECONDS), "numpy.seconds": within(*SECONDS), "speedup": within(*RATIO),
            "torchscope.peak_rss_mib": within(*RSS_MIB), "numpy.peak_rss_mib": within(*RSS_MIB),
            "memory.peak_rss_mib.0": within(*RSS_MIB), "memory.peak_rss_mib.1": within(*RSS_MIB),
            "memory.peak_rss_growth": within(-0.5, 1.0), "all_stages.seconds": within(*SECONDS),
            "all_stages.against_layer4_alone": within(*RATIO), "iou_max_abs_difference": within(0.0, 0.01),
            # The maps fit the temporary folder: the second pass read them from disk (at least 1 MiB, rounded up).
            "torchscope.spilled_mib": within(1, 1e7), "all_stages.spilled_mib": within(1, 1e7),
            "numpy.forward_seconds": within(*SECONDS), "speedup_after_forward": within(*RATIO),
            "torchscope.dissect_seconds": within(*SECONDS), "torchscope.model_seconds": within(*SECONDS),
            "model_against_eager_forward": within(*RATIO)}


BENCHES = {"engine": (engine_rules, engine_whole), "compare": (compare_rules, compare_whole),
           "visualize": (visualize_rules, None), "record": (record_rules, None), "gui": (gui_rules, gui_whole),
           "job": (job_rules, None), "attention": (attention_rules, None), "exported": (exported_rules, None), "sae": (sae_rules, None),
           "sae_scale": (sae_scale_rules, None), "dissect": (dissect_rules, None)}


def problems(bench, report):
    if not isinstance(report, dict):
        return ["the report is not a JSON object"]
    rules, whole = BENCHES[bench]
    found = []
    for path, rule in rules(report).items():
        try:
            rule(report, path)
        except ValueError as e:
            found.append(str(e))
    if not found and whole:
        try:
            whole(report)
        except (ValueError, KeyError, TypeError) as e:
            found.append(str(e))
    return found


def report_of(stdout):
    """The JSON object the benchmark printed (it may print other lines before it)."""
    start, end = stdout.find("{"), stdout.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in its output")
    return json.loads(stdout[start:end + 1])


def run(bench, command):
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    print(result.stdout, end="")
    if result.returncode != 0:
        return [f"{command[0]} exited with {result.returncode}"]
    try:
        report = report_of(result.stdout)
    except ValueError as e:
        return [f"{command[0]} printed no report: {e}"]
    return problems(bench, report)


def self_test():
    """Each check on a good report of its benchmark passes, and fails once the report is broken."""
    good = {
        "engine": {"model": "resnet18", "batch": 1, "size": 64, "repeats": 1, "device": "cpu",
                   "plain_forward_seconds": 0.01, "grab_4_blocks_seconds": 0.012, "python_eager_seconds": 0.011,
                   "python_hooks_4_blocks_seconds": 0.013,
                   "minimum_seconds": {"plain": 0.01, "grab_4_blocks": 0.012, "python_eager": 0.011,
                                       "python_hooks": 0.013},
                   "grab_ratio_to_plain": 1.2, "grab_ratio_to_plain_of_minimums": 1.2,
                   "grab_ours_over_python_hooks": 0.9, "plain_ours_over_python_eager": 0.9,
                   "graph_build_ms": {"grab_4_blocks": 3.0, "truncate_layer4": 2.0},
                   "truncation": [{"at": b, "seconds": 0.002 * (i + 1), "python_hook_seconds": 0.002 * (i + 1),
                                   "flop_share": 0.2 * (i + 1), "time_ratio_to_full": 0.25 * (i + 1),
                                   "time_ratio_minus_flop_share": 0.05 * (i + 1), "time_ratio_of_minimums": 0.25,
                                   "ours_over_python": 1.0}
                                  for i, b in enumerate(["layer1", "layer2", "layer3", "layer4"])]},
        "gui": {"images": 16, "images_run": 16, "failures": 0, "cancelled": False,
                "grabs": "features.0 features.2 features.2:grad", "run_seconds": 0.5, "wall_seconds": 1.2,
                "gui_ticks": 100, "max_gui_stall_ms": 30.0, "p99_tick_gap_ms": 12.0, "results_drawn_at_s": 0.8,
                "worst_stall_ended_at_s": 0.3},
        "attention": {"model": "vit_b_16", "batch": 1, "repeats": 1, "layers": 12, "plain_forward_seconds": 0.2,
                      "attention_12_layers_seconds": 0.23, "engine_without_grabs_seconds": 0.2, "python_eager_seconds": 0.21,
                      "python_need_weights_hooks_seconds": 0.25, "attention_ratio_to_plain": 1.15,
                      "python_need_weights_ratio_to_eager": 1.2, "attention_ours_over_python_need_weights": 0.92},
        "exported": {"batch": 1, "repeats": 1, "models": [
            {"model": "resnet18", "nodes": 60, "pt2_forward_seconds": 0.02, "torchscript_forward_seconds": 0.02,
             "python_eager_seconds": 0.025, "python_exported_module_seconds": 0.03, "pt2_engine_seconds": 0.02,
             "pt2_grab_4_blocks_seconds": 0.021, "torchscript_engine_seconds": 0.02,
             "torchscript_grab_4_blocks_seconds": 0.021, "pt2_over_torchscript": 1.0, "pt2_over_python_eager": 0.8,
             "pt2_over_python_exported_module": 0.7, "pt2_grab_ratio_to_engine": 1.05,
             "torchscript_grab_ratio_to_engine": 1.05}]},
        "sae": {"d_in": 32, "d_sae": 128, "k": 8, "batch": 256, "steps": 2, "rounds": 1, "threads": 2,
                "torchscope_vectors_per_second": 9e4, "eager_vectors_per_second": 5e4, "ratio_to_eager": 1.8,
                "last_step_fvu": 0.9},
        "sae_scale": {"threads": 2, "batch": 256, "memory": {"images": [20, 200], "peak_rss_mib": [600.0, 640.0],
                                               "seconds": [1.5, 2.0], "vectors_trained": [4096, 8192],
                                               "peak_rss_growth": 0.07}},
        "dissect": {"model": "resnet18", "size": 64, "images": 16, "threads": 2, "batch": 8, "units": 512,
                    "torchscope": {"seconds": 1.4, "peak_rss_mib": 720.0, "spilled_mib": 1, "dissect_seconds": 1.2,
                                   "model_seconds": 0.9},
                    "numpy": {"seconds": 4.8, "peak_rss_mib": 850.0, "forward_seconds": 1.0,
                              "after_forward_seconds": 3.0},
                    "speedup": 3.4, "speedup_after_forward": 10.0, "model_against_eager_forward": 0.9,
                    "memory": {"images": [4, 16], "peak_rss_mib": [720.0, 725.0], "peak_rss_growth": 0.007},
                    "all_stages": {"layers": ["layer1", "layer2", "layer3", "layer4"], "seconds": 1.7,
                                   "peak_rss_mib": 725.0, "spilled_mib": 2, "against_layer4_alone": 1.2},
                    "iou_max_abs_difference": 0.0, "interpretable_units": 50},
    }
    for bench, report in good.items():
        assert not problems(bench, report), (bench, problems(bench, report))
    broken = [
        ("engine", "plain_forward_seconds", 0.0), ("engine", "grab_ratio_to_plain", float("nan")),
        ("engine", "grab_ratio_to_plain", 1e5), ("engine", "batch", 8), ("engine", "python_eager_seconds", None),
        ("engine", "truncation", []), ("gui", "failures", 3), ("gui", "cancelled", True),
        ("gui", "results_drawn_at_s", 9.0), ("gui", "max_gui_stall_ms", float("inf")), ("gui", "images_run", 0),
        ("gui", "gui_ticks", "many"), ("attention", "attention_ratio_to_plain", 0.0),
        ("attention", "layers", 11), ("attention", "attention_12_layers_seconds", None),
        ("exported", "models", []), ("exported", "batch", 8),
        ("sae", "ratio_to_eager", 0.0), ("sae", "last_step_fvu", float("nan")), ("sae", "d_sae", 64),
        ("sae_scale", "memory", {"images": [20, 200], "peak_rss_mib": [600.0, 1800.0], "seconds": [1.5, 2.0],
                                 "vectors_trained": [4096, 8192], "peak_rss_growth": 2.0}),
        ("sae_scale", "memory", {"images": [20, 20], "peak_rss_mib": [600.0, 600.0], "seconds": [1.5, 2.0],
                                 "vectors_trained": [4096, 8192], "peak_rss_growth": 0.0}),
        ("dissect", "iou_max_abs_difference", 0.5), ("dissect", "images", 8), ("dissect", "speedup", 0.0),
        ("dissect", "iou_max_abs_difference", float("nan")), ("dissect", "model_against_eager_forward", float("nan")),
    ]
    for bench, key, value in broken:
        report = copy.deepcopy(good[bench])
        if value is None:
            del report[key]
        else:
            report[key] = value
        assert problems(bench, report), f"{bench}: {key} = {value!r} passed"
    shares = copy.deepcopy(good["engine"])
    shares["truncation"][3]["flop_share"] = 0.1
    assert problems("engine", shares), "falling FLOP shares passed"
    assert run("gui", [sys.executable, "-c", "print('{}')"]), "an empty report passed"
    assert run("gui", [sys.executable, "-c", f"print({json.dumps(json.dumps(good['gui']))}); exit(3)"]), \
        "a failed command passed"
    assert not run("gui", [sys.executable, "-c", f"print('note'); print({json.dumps(json.dumps(good['gui']))})"])
    print(f"check_figures: {len(broken) + 3} broken reports refused, good ones passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) < 4 or sys.argv[2] != "--" or sys.argv[1] not in BENCHES:
        sys.exit(__doc__)
    found = run(sys.argv[1], sys.argv[3:])
    for problem in found:
        print(f"check_figures: {sys.argv[1]}: {problem}", file=sys.stderr)
    if not found:
        print(f"check_figures: {sys.argv[1]}: exit code 0, every figure present and sane")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
