"""``marketsim gavel-sim``: a drop-in for Gavel's ``scripts/drivers/simulate_scheduler_with_trace.py``.

It takes that driver's flags (``-t/--trace_file``, ``-p/--policy`` with Gavel's policy names,
``-c/--cluster_spec`` as ``#v100:#p100:#k80``, ``--throughputs_file`` in Gavel's JSON format,
``--num_gpus_per_server``, ``--seed``, ``--time_per_iteration``, ``--solver``, ``-s/-e`` for a
measurement window), runs the trace on marketsim's round engine with the policy that corresponds
to Gavel's (:data:`POLICIES`), and prints what Gavel's driver prints that marketsim can compute, in
Gavel's format: the per-job ``Job <id>: <JCT>`` lines, ``Average job completion time: ... seconds
(... hours)`` (and its low / high priority lines) and ``Cluster utilization: ...``. Gavel's last
line, the share of lease extensions, is a property of Gavel's worker-assignment loop that marketsim
does not model; it is not printed. A Gavel policy without a marketsim counterpart is an error naming
it (exit 2). Nothing is written to disk.

Semantics (docs/gavel_comparison.md, "Switching from Gavel"): one tenant per job, Gavel's 1,920 s
reallocation interval, ``--time_per_iteration`` s rounds, consolidated throughputs (Gavel's simulator
uses the same table whatever ``--num_gpus_per_server``; that flag only groups GPUs into servers, and
as in Gavel a type's GPUs beyond a whole number of servers are not registered). Gavel's
heterogeneity-agnostic ``max_min_fairness`` and ``isolated`` reshuffle the GPU-type order every round
with ``--seed``; ours do too (``lease_order = "shuffle"``), from our own seeded generator, so single
jobs differ between the two simulators while means agree (docs/gavel_comparison.md).
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from marketsim.analysis.frontends.args import int_arg
from marketsim.market.errors import InputError

__all__ = ["POLICIES", "UNSUPPORTED", "GPU_ORDER", "build_parser", "main", "read_throughputs_json", "simulate"]

PROG = "marketsim gavel-sim"

#: Gavel policy name -> (marketsim policy, per-round GPU-type shuffle as Gavel does for it)
POLICIES: dict[str, tuple[str, bool]] = {
    "max_min_fairness_perf": ("gavel-max-min-perf", False),
    "max_sum_throughput_perf": ("gavel-max-sum-throughput", False),
    "max_min_fairness": ("maxmin", True),
    "isolated": ("gavel-isolated", True),
    "fifo_perf": ("gavel-fifo", False),
}

#: Gavel's other policies (``utils.get_available_policies()`` at commit c4fa400): recognised, refused
UNSUPPORTED = (
    "allox", "fifo", "fifo_packed", "finish_time_fairness", "finish_time_fairness_perf",
    "finish_time_fairness_packed", "gandiva", "max_min_fairness_packed", "max_min_fairness_water_filling",
    "max_min_fairness_water_filling_perf", "max_min_fairness_water_filling_packed",
    "max_sum_throughput_normalized_by_cost_perf", "max_sum_throughput_normalized_by_cost_perf_SLOs",
    "max_sum_throughput_normalized_by_cost_packed_SLOs", "min_total_duration", "min_total_duration_perf",
    "min_total_duration_packed",
)  # fmt: skip

#: the GPU types of Gavel's ``-c`` and ``--num_gpus_per_server`` (``#v100:#p100:#k80``), in that order
GPU_ORDER = ("v100", "p100", "k80")
GAVEL_SOLVERS = ("ECOS", "GUROBI", "SCS")
#: Gavel's ``Scheduler`` default reallocation interval (s)
REALLOCATION_S = 1920.0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """Gavel's driver flags (same names, defaults and meanings)."""
    p = _Parser(prog=prog, description="Gavel's simulate_scheduler_with_trace.py on marketsim's round engine: the "
                "same flags, Gavel's summary lines.")  # fmt: skip
    p.add_argument("-t", "--trace_file", type=str, required=True, help="Gavel trace file (tab-separated)")
    p.add_argument("-p", "--policy", type=str, default="fifo",
                   help=f"Gavel policy name; supported: {', '.join(POLICIES)}")  # fmt: skip
    p.add_argument("--throughputs_file", type=str, default="simulation_throughputs.json",
                   help="Gavel's throughputs JSON (default simulation_throughputs.json; when absent, marketsim's "
                   "packaged copy of Gavel's table)")  # fmt: skip
    p.add_argument("-c", "--cluster_spec", type=str, default="25:0:0", help="#v100s:#p100s:#k80s")
    p.add_argument("--num_gpus_per_server", type=str, default="1:1:1", help="#v100s:#p100s:#k80s per server")
    p.add_argument("--seed", type=int_arg, default=None, help="seed of the per-round GPU-type shuffle (default 0)")
    p.add_argument("--solver", type=str, choices=GAVEL_SOLVERS, default="ECOS",
                   help="accepted and reported; marketsim solves the policy LPs with HiGHS")  # fmt: skip
    p.add_argument("-d", "--debug", action="store_true", default=False, help="accepted; no effect")
    p.add_argument("--checkpoint_threshold", type=int_arg, default=None, help="not supported (an error if given)")
    p.add_argument("--checkpoint_file", default=None, help="not supported (an error if given)")
    p.add_argument("--time_per_iteration", type=int_arg, default=360, help="round length (s)")
    p.add_argument("-s", "--window-start", type=int_arg, default=None, help="measurement window start (job id)")
    p.add_argument("-e", "--window-end", type=int_arg, default=None, help="measurement window end (job id)")
    return p


def _spec(field: str, text: str, minimum: int) -> dict[str, int]:
    parts = text.split(":")
    if len(parts) != 3:
        raise InputError(field, text, "must be three counts #v100:#p100:#k80, like 12:12:12")
    out = {}
    for name, part in zip(GPU_ORDER, parts, strict=True):
        try:
            v = int(part)
        except ValueError:
            raise InputError(f"{field} ({name})", part, "must be a whole number") from None
        if v < minimum:
            raise InputError(f"{field} ({name})", v, f"must be >= {minimum}")
        out[name] = v
    return out


def read_throughputs_json(path: str | Path) -> list[tuple[str, str, int, float]]:
    """Gavel's throughputs JSON -> rows ``(job_type, gpu_type, num_gpus, steps/s)`` of the consolidated
    (``null``: alone on the GPUs) throughputs of the types k80, p100 and v100, which is what Gavel's
    simulator reads. Raises :class:`InputError` naming the file and key of the first problem."""
    field = "--throughputs_file"
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(field, str(path), "does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(field, str(path), f"is not readable JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise InputError(field, str(path), "must hold a JSON object {gpu_type: {job_type: {...}}}")
    rows: list[tuple[str, str, int, float]] = []
    for gpu in ("k80", "p100", "v100"):
        table = raw.get(gpu)
        if not isinstance(table, dict):
            raise InputError(f"{field} {path}", gpu, "GPU type missing (Gavel's file has k80, p100 and v100)")
        for key, cell in table.items():
            where = f"{field} {path}: {gpu} / {key}"
            try:
                job, n = ast.literal_eval(key)
                n = int(n)
            except (ValueError, SyntaxError, TypeError):
                raise InputError(where, key, "must be a job type key like \"('A3C', 1)\"") from None
            thr = cell.get("null") if isinstance(cell, dict) else None
            if not isinstance(thr, (int, float)) or not math.isfinite(thr) or thr < 0:
                raise InputError(f"{where} / null", thr, "must be a finite throughput >= 0 (steps/s)")
            rows.append((str(job), gpu, n, float(thr)))
    return rows


def _trace_jobs(path: Path) -> list[float]:
    """Priority weight of every job of a Gavel trace (job id = line number from 0); checks the shape."""
    weights = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError("--trace_file", str(path), "does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("--trace_file", str(path), f"cannot be read ({exc})") from None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 10:
            raise InputError(
                f"--trace_file {path} line {i + 1}", line[:80], "must have Gavel's 10 tab-separated fields"
            )
        try:
            weights.append(float(parts[7]))
        except ValueError:
            raise InputError(
                f"--trace_file {path} line {i + 1} (priority_weight)", parts[7], "is not a number"
            ) from None
    if not weights:
        raise InputError("--trace_file", str(path), "holds no jobs")
    return weights


def simulate(args: argparse.Namespace) -> dict[str, Any]:
    """Run the trace; returns ``jct`` (job id -> s), ``weights``, ``utilization``, ``policy``, ``gpus``."""
    if args.policy not in POLICIES:
        if args.policy in UNSUPPORTED:
            why = "is a Gavel policy marketsim does not implement"
        else:
            why = "is not a Gavel policy name"
        raise InputError("--policy", args.policy, f"{why}; supported: {', '.join(POLICIES)}")
    for flag, val in (
        ("--checkpoint_threshold", args.checkpoint_threshold),
        ("--checkpoint_file", args.checkpoint_file),
    ):
        if val is not None:
            raise InputError(flag, val, "is not supported by marketsim gavel-sim (runs are not checkpointed)")
    if args.time_per_iteration <= 0:
        raise InputError("--time_per_iteration", args.time_per_iteration, "must be > 0 (seconds)")
    if (args.window_start is None) != (args.window_end is None):
        raise InputError("--window-start/--window-end", (args.window_start, args.window_end), "must be given together")
    cluster = _spec("--cluster_spec", args.cluster_spec, 0)
    per_server = _spec("--num_gpus_per_server", args.num_gpus_per_server, 1)
    # as in Gavel's simulator: cluster_spec[type] // num_gpus_per_server[type] servers of that many GPUs
    gpus = {g: (cluster[g] // per_server[g]) * per_server[g] for g in GPU_ORDER}
    if sum(gpus.values()) == 0:
        raise InputError("--cluster_spec", args.cluster_spec, "holds no whole server of GPUs")
    trace = Path(args.trace_file)
    weights = _trace_jobs(trace)
    ours, shuffle = POLICIES[args.policy]
    seed = 0 if args.seed is None else int(args.seed)
    if seed < 0:
        raise InputError("--seed", seed, "must be >= 0")

    import mesa  # noqa: F401  -- first, while the stack is shallow (see cli.cmd_run)

    from marketsim.scenarios.loader import parse_scenario

    data: dict[str, Any] = {
        "name": "gavel-sim",
        "policies": [ours],
        "replications": 1,
        "seed": seed,
        "cluster": {"gpu_types": ["k80", "p100", "v100"], "gpus": [gpus["k80"], gpus["p100"], gpus["v100"]],
                    "round_seconds": float(args.time_per_iteration), "reallocation_interval_s": REALLOCATION_S,
                    "lease_order": "shuffle" if shuffle else "fastest"},
        "workload": {"trace": str(trace.resolve()), "trace_format": "gavel", "tenancy": "job"},
    }  # fmt: skip
    tp = Path(args.throughputs_file)
    with tempfile.TemporaryDirectory(prefix="marketsim-gavel-sim-") as tmp:
        if tp.exists() or args.throughputs_file != "simulation_throughputs.json":
            table = Path(tmp) / "throughputs.csv"
            with table.open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(["job_type", "gpu_type", "num_gpus", "throughput_steps_per_s"])
                writer.writerows((j, g, n, repr(t)) for j, g, n, t in read_throughputs_json(tp))
            data["profiles"] = {"file": str(table)}
            source = str(tp)
        else:
            source = "marketsim's packaged copy of Gavel's simulation_throughputs.json (no such file here)"
        model = parse_scenario(data, "gavel-sim").build_model(ours, "truthful", seed)
        model.progress = False
        eng = model.auctioneer.trace
        used = [0.0]
        step = eng.step

        def counting(m: Any) -> Any:  # GPU-seconds leased, for Gavel's utilization line
            res = step(m)
            used[0] += float(getattr(res, "used_gpu_seconds", math.nan))
            return res

        eng.step = counting
        model.run()
    if getattr(model, "cap_reached", False):
        raise InputError("--trace_file", str(trace), "did not finish within the round cap (max_rounds)")
    comp = model.completions()
    jct = dict(zip((int(j) for j in comp["job_id"]), (float(x) for x in comp["jct_s"]), strict=True))
    end = float(eng.now)
    n_gpus = sum(gpus.values())
    util = used[0] / (n_gpus * end) if end > 0 and math.isfinite(used[0]) else math.nan
    return {"jct": jct, "weights": weights, "utilization": util, "policy": ours, "gpus": gpus, "source": source,
            "seed": seed, "end_s": end}  # fmt: skip


def report(args: argparse.Namespace, res: dict[str, Any], out: Any = None) -> None:
    """Print Gavel's summary lines (``get_average_jct``, ``get_cluster_utilization``) for ``res``."""
    out = out or sys.stdout
    jct: dict[int, float] = res["jct"]
    weights: list[float] = res["weights"]
    if args.window_start is not None:
        ids = [i for i in range(args.window_start, args.window_end) if i in jct]
    else:
        ids = sorted(jct)
    if not ids:
        return
    w = print
    w("Job completion times:", file=out)
    low, high = [], []
    for i in ids:
        if weights[i] == 1.0:
            w(f"Job {i}: {jct[i]:.3f}", file=out)
            low.append(jct[i])
        else:
            w(f"Job {i} (high priority): {jct[i]:.3f}", file=out)
            high.append(jct[i])
    for label, vals in (("", low + high), (" (low priority)", low), (" (high priority)", high)):
        if vals:
            mean = math.fsum(vals) / len(vals)
            w(f"Average job completion time{label}: {mean:.3f} seconds ({mean / 3600.0:.2f} hours)", file=out)
    if math.isfinite(res["utilization"]):
        w(f"Cluster utilization: {res['utilization']:.3f}", file=out)


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Entry point (``marketsim gavel-sim ...``); returns the exit status."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    try:
        res = simulate(args)
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    g = res["gpus"]
    print(f"marketsim gavel-sim: Gavel policy {args.policy} = marketsim {res['policy']}; cluster "
          f"{g['v100']} V100 + {g['p100']} P100 + {g['k80']} K80; throughputs: {res['source']}; solver {args.solver} "
          "requested, marketsim solves with HiGHS; seed " f"{res['seed']}", file=sys.stderr)  # fmt: skip
    report(args, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
