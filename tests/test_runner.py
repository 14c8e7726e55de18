"""Monte Carlo runner: seeding with common random numbers, executor equivalence, error isolation,
Parquet output, paired statistics and plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.agents.model import MarketModel
from marketsim.analysis.engine.runner import (
    COLUMNS,
    LocalExecutor,
    make_executor,
    plan_runs,
    run_experiment,
    write_experiment,
)
from marketsim.analysis.engine.stats import gain_summary, paired_gains, t_interval
from marketsim.analysis.frontends.plots import plot_lying_gain, plot_throughput
from marketsim.analysis.frontends.report import render_report
from marketsim.market.errors import InputError
from marketsim.scenarios.loader import Scenario, parse_scenario

SMALL = """
name = "small"
policies = ["oef-noncoop", "gavel", "max-throughput"]
rounds = 5
replications = 3
seed = 5
[cluster]
gpu_types = ["RTX3070", "RTX3080", "RTX3090"]
gpus = [4, 4, 4]
[workload]
tenants = 4
job_type_choice = "cycle"
jobs_per_tenant = 3
backlogged = true
[[tenant]]
index = 0
job_types = ["LSTM"]
[[variant]]
name = "lying"
tenant = 0
strategy = "fast"
factor = 1.5
"""


@pytest.fixture(scope="module")
def small() -> Scenario:
    import tomllib

    return parse_scenario(tomllib.loads(SMALL), "small")


def test_plan_reuses_one_child_per_replication(small: Scenario) -> None:
    specs = plan_runs(small)
    assert len(specs) == 3 * 3 * 2
    assert specs[0].run_id == "small/oef-noncoop/truthful/r0"
    keys = {}
    for s in specs:
        keys.setdefault(s.replication, set()).add((s.entropy, s.spawn_key))
    assert all(len(v) == 1 for v in keys.values())  # same seed for every policy and variant
    assert len({next(iter(v)) for v in keys.values()}) == 3  # different across replications
    # rebuilding the seed never mutates shared state
    s0 = specs[0]
    a = np.random.default_rng(s0.seed_sequence()).random(3)
    b = np.random.default_rng(s0.seed_sequence()).random(3)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(InputError, match="policy"):
        plan_runs(small, policies=["maxmin"])


def test_local_and_process_executors_give_identical_results(small: Scenario) -> None:
    local = run_experiment(small, replications=2, executor="local", progress=False)
    proc = run_experiment(small, replications=2, executor="process", workers=2, progress=False)
    assert not local.errors and not proc.errors
    assert list(local.frame.columns) == COLUMNS
    pd.testing.assert_frame_equal(local.frame, proc.frame)
    assert set(local.frame["run_id"]) == {s.run_id for s in plan_runs(small, 2)}


def test_seeds_change_results_and_same_seed_repeats(small: Scenario) -> None:
    a = run_experiment(small, replications=1, seed=1, policies=["gavel"], progress=False).frame
    b = run_experiment(small, replications=1, seed=1, policies=["gavel"], progress=False).frame
    c = run_experiment(small, replications=1, seed=2, policies=["gavel"], progress=False).frame
    pd.testing.assert_frame_equal(a, b)
    assert not a["value"].equals(c["value"])


def test_a_failing_run_does_not_lose_the_others(small: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    original = MarketModel.run

    def flaky(self: MarketModel, rounds: int | None = None) -> MarketModel:
        if self.config.policy == "gavel":
            raise RuntimeError("solver exploded")
        return original(self, rounds)

    monkeypatch.setattr(MarketModel, "run", flaky)
    exp = run_experiment(small, replications=1, executor=LocalExecutor(), progress=False)
    assert sorted(rid for rid, _ in exp.errors) == ["small/gavel/lying/r0", "small/gavel/truthful/r0"]
    assert all("RuntimeError: solver exploded" in msg for _, msg in exp.errors)
    assert set(exp.frame["policy"]) == {"oef-noncoop", "max-throughput"}
    assert (exp.runs.set_index("run_id").loc["small/gavel/lying/r0", "error"]).startswith("RuntimeError")


def test_write_experiment_and_parquet_roundtrip(small: Scenario, tmp_path: Path) -> None:
    exp = run_experiment(small, replications=1, policies=["oef-noncoop"], progress=False)
    paths = write_experiment(exp, tmp_path / "out")
    back = pd.read_parquet(paths["results"])
    assert list(back.columns) == COLUMNS
    assert len(back) == len(exp.frame)
    np.testing.assert_array_equal(back["value"].to_numpy(), exp.frame["value"].to_numpy())
    assert "errors" not in paths
    with pytest.raises(InputError, match="executor"):
        make_executor("dask")


def test_paired_gain_statistics(small: Scenario, tmp_path: Path) -> None:
    exp = run_experiment(small, progress=False)
    pairs = paired_gains(exp.frame, exp.deviators, "est", small.cluster.round_seconds)
    assert len(pairs) == 3 * 3  # policies x replications
    # max-throughput hands every GPU type to its top reporter: inflating pays off every time
    mt = pairs[pairs.policy == "max-throughput"]
    assert (mt["diff"] > 0).all()
    # OEF non-cooperative: inflating never pays (claim C1); the lie lowers the liar's throughput
    oef = pairs[pairs.policy == "oef-noncoop"]
    assert (oef["diff"] < 0).all()
    summ = gain_summary(pairs).set_index("policy")
    assert summ.loc["max-throughput", "diff_low"] > 0
    assert summ.loc["oef-noncoop", "diff_high"] < 0
    assert summ.loc["oef-noncoop", "p_gain"] == 0.0
    # the report and plots are produced from the same frame
    text = render_report(exp.meta(), exp.frame, exp.deviators)
    assert "Gain from lying" in text and "oef-noncoop" in text
    p1 = plot_throughput(exp.frame, tmp_path / "thr.png", round_seconds=300)
    p2 = plot_lying_gain(exp.frame, exp.deviators, tmp_path / "gain.png", round_seconds=300)
    assert p1.stat().st_size > 10_000 and p2.stat().st_size > 10_000


def test_t_interval() -> None:
    m, lo, hi = t_interval(np.array([1.0, 2.0, 3.0]))
    assert m == pytest.approx(2.0)
    assert hi - m == pytest.approx(4.302652729911275 * 1.0 / np.sqrt(3))  # t_{0.975, 2} · s / sqrt(n)
    assert np.isnan(t_interval(np.array([1.0]))[1])


def test_frame_is_in_sort_key_order_without_a_sort(small: Scenario) -> None:
    """run_experiment concatenates runs in (policy, variant, replication) order instead of sorting the
    whole frame; the result must equal a full stable sort by SORT_KEYS."""
    from marketsim.analysis.engine.runner import SORT_KEYS

    exp = run_experiment(small, replications=2, progress=False)
    resorted = exp.frame.sort_values(SORT_KEYS, kind="mergesort").reset_index(drop=True)
    pd.testing.assert_frame_equal(exp.frame, resorted)
    assert exp.frame["policy"].iloc[0] == "gavel" and exp.frame["policy"].iloc[-1] == "oef-noncoop"


def test_long_runs_move_records_into_compact_storage(small: Scenario) -> None:
    """Every DRAIN_ROUNDS rounds the model empties Mesa's DataCollector into compact frames; tidy()
    is identical to keeping everything in the collector, which never holds more than DRAIN_ROUNDS
    rounds."""
    spec = plan_runs(small, 1)[0]

    def model(drain: int) -> MarketModel:
        m = small.build_model(spec.policy, spec.variant, spec.seed_sequence())
        m.DRAIN_ROUNDS = drain
        return m

    kept, drained = model(10**9), model(3)
    for m in (kept, drained):
        for _ in range(17):
            m.step()
            assert len(m.datacollector.get_model_vars_dataframe()) < (3 if m is drained else 10**9)
    a, b = kept.tidy(), drained.tidy()
    assert len(drained._drained) == 5 and a["round"].max() == 16
    pd.testing.assert_frame_equal(a, b)
    drained.step()  # round 18 drains everything: nothing left in the collector
    assert drained.datacollector.get_model_vars_dataframe().empty
    kept.step()
    pd.testing.assert_frame_equal(kept.tidy(), drained.tidy())


def test_a_sink_receives_every_record_in_tidy_order(small: Scenario) -> None:
    """With ``sink`` the drained blocks (and the jct_s rows) go out as they are drained, tenant and
    measure categorical; their concatenation, as strings, is exactly tidy() of a run that kept
    everything."""
    spec = plan_runs(small, 1)[0]
    kept = small.build_model(spec.policy, spec.variant, spec.seed_sequence()).run()
    m = small.build_model(spec.policy, spec.variant, spec.seed_sequence())
    chunks: list[pd.DataFrame] = []
    m.sink, m.DRAIN_ROUNDS = chunks.append, 2
    m.run()
    m.flush()
    assert len(chunks) >= 2 and len(m.tidy()) == 0
    assert all(isinstance(c[col].dtype, pd.CategoricalDtype) for c in chunks for col in ("tenant", "measure"))
    sent = pd.concat([c.astype({"tenant": str, "measure": str}) for c in chunks], ignore_index=True)
    pd.testing.assert_frame_equal(kept.tidy(), sent)


def test_spilled_runs_give_the_same_results_and_report_numbers(small: Scenario, tmp_path: Path) -> None:
    """spill_dir streams each run's records to parts (Arrow IPC files, what a killed run leaves) as it
    goes (the CLI's path); pandas reads the parts back as the in-memory rows; the consolidated
    results.parquet equals the in-memory frame, the parts are gone, and the report's reduced frame
    gives the same summary and paired gains as the full frame."""
    from marketsim.analysis.engine.runner import load_report_frame
    from marketsim.analysis.engine.stats import policy_summary

    mem = run_experiment(small, replications=2, progress=False)
    sp = run_experiment(small, replications=2, progress=False, executor="process", workers=2,
                        spill_dir=tmp_path / "parts")  # fmt: skip
    assert sp.frame.empty and sp.parts and all(Path(p).exists() for p in sp.parts)
    read = [pd.read_feather(p) for p in sp.parts]
    strings = {"run_id", "scenario", "policy", "variant", "tenant", "measure"}
    assert all({c for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)} == strings for f in read)
    back = pd.concat([f.astype(dict.fromkeys(strings, str)) for f in read], ignore_index=True)
    pd.testing.assert_frame_equal(back, mem.frame, check_dtype=False)
    paths = write_experiment(sp, tmp_path / "out")
    assert not any(Path(p).exists() for p in sp.parts)
    got = pd.read_parquet(paths["results"])
    pd.testing.assert_frame_equal(got, mem.frame, check_dtype=False)
    # the parts are built in Arrow (records_table); the file is the one the in-memory path writes
    import pyarrow.parquet as pq

    from marketsim.analysis.engine.runner import results_schema

    mem_paths = write_experiment(mem, tmp_path / "mem")
    assert pq.read_schema(paths["results"]).equals(results_schema(), check_metadata=True)
    assert pq.read_table(paths["results"]).equals(pq.read_table(mem_paths["results"]))
    red = load_report_frame(paths["results"], mem.deviators)
    assert len(red) < len(got)
    rs = small.cluster.round_seconds
    pd.testing.assert_frame_equal(policy_summary(red, rs), policy_summary(mem.frame, rs), check_dtype=False)
    for measure in ("act", "est"):
        pd.testing.assert_frame_equal(
            paired_gains(red, mem.deviators, measure, rs), paired_gains(mem.frame, mem.deviators, measure, rs)
        )


def _synthetic_frame(n_tenants: int = 12, policies: int = 6, rounds: int = 24, reps: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        ("r", "s", f"policy{p}", "truthful", r, k, f"t{t:02d}", "act", float(rng.uniform(0, 5)))
        for p in range(policies)
        for r in range(reps)
        for k in range(rounds)
        for t in range(n_tenants)
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _captured_figure(monkeypatch, draw) -> object:
    """Run ``draw()`` and return the matplotlib figure it saved (captured at ``savefig``)."""
    from matplotlib.figure import Figure

    seen: list[Figure] = []
    original = Figure.savefig

    def capture(self, *args, **kwargs):
        seen.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    draw()
    assert len(seen) == 1
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = seen[0]
    FigureCanvasAgg(fig).draw()  # closing the figure dropped its canvas: lay it out again
    return fig


def test_throughput_plot_reads_at_twelve_tenants(monkeypatch, tmp_path: Path) -> None:
    """Issue #20: the y labels of the two rows overlapped, neighbouring tenant colours looked the same
    and the title said "act"."""
    import itertools

    from matplotlib.colors import to_rgb

    frame = _synthetic_frame()
    fig = _captured_figure(monkeypatch, lambda: plot_throughput(frame, tmp_path / "thr.png", round_seconds=300))
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_text()
    assert "actual throughput" in title and " act " not in title and "3 replication" in title
    labels = [ax.yaxis.label for ax in fig.axes if ax.get_visible() and ax.yaxis.label.get_text()]
    if getattr(fig, "_supylabel", None) is not None:
        labels.append(fig._supylabel)
    assert labels, "no y label"
    boxes = [lab.get_window_extent(renderer) for lab in labels]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), "two y-axis labels overlap"
    for ax in fig.axes:  # a panel's own label must not run past the panel into the next row
        if ax.get_visible() and ax.yaxis.label.get_text():
            assert ax.yaxis.label.get_window_extent(renderer).height <= ax.get_window_extent(renderer).height
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
    assert len(panels) == 6
    for ax in panels:
        pairs = {(to_rgb(ln.get_color()), ln.get_linestyle()) for ln in ax.lines}
        assert len(pairs) == 12  # every tenant its own (colour, style)
        for (c1, s1), (c2, s2) in itertools.combinations(pairs, 2):
            if s1 == s2:  # same line style: the colours must be far apart (RGB distance)
                assert np.linalg.norm(np.subtract(c1, c2)) > 0.2, (c1, c2)
    legends = fig.legends or [lg for ax in fig.axes if (lg := ax.get_legend()) is not None]
    assert len(legends) == 1 and len(legends[0].get_texts()) == 12
    box = legends[0].get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in panels), "legend over a panel"


def test_report_and_stdout_give_the_same_run_time(capsys, tmp_path: Path) -> None:
    """Issue #20: report.md's "wall time" (the runs) and the time printed on stdout (runs plus
    writing) differed and neither said what it measured. Both now print one labelled quantity."""
    import json
    import re

    from marketsim.analysis.frontends.cli import main

    out = tmp_path / "out"
    assert main(["run", "default", "--reps", "1", "--policies", "gavel", "--out", str(out), "--quiet"]) == 0
    stdout = capsys.readouterr().out
    report = (out / "report.md").read_text()
    pattern = r"wall-clock time of the runs: (\d+\.\d\d) s"
    printed, written = re.findall(pattern, stdout), re.findall(pattern, report)
    assert len(printed) == 1 and printed == written, (stdout, report[:600])
    seconds = json.loads((out / "meta.json").read_text())["wall_seconds"]
    assert float(printed[0]) == pytest.approx(seconds, abs=0.006)
    total = re.findall(r"total including writing: (\d+\.\d\d) s", stdout)
    assert len(total) == 1 and float(total[0]) >= float(printed[0])
    assert "wall time" not in report


def test_tidy_is_sorted_as_the_strings_sort(small: Scenario) -> None:
    """tidy() sorts on integer codes into sorted categories; the order must be the one pandas gives
    for the strings themselves (round, tenant, measure; a stable sort), checked against pandas."""
    spec = plan_runs(small, 1)[0]
    m = small.build_model(spec.policy, spec.variant, spec.seed_sequence())
    m.DRAIN_ROUNDS = 3  # drained blocks and held rounds both take part
    t = m.run().tidy()
    assert t["tenant"].nunique() > 2 and t["measure"].nunique() > 5
    keys = t[["round", "tenant", "measure"]]
    pd.testing.assert_frame_equal(keys, keys.sort_values(["round", "tenant", "measure"], kind="mergesort"))
