"""Tests of the Python package on the repository's fixtures, with parity against the command
line's --json output for the same inputs. Run by ctest (python.pytest) with PYTHONPATH pointing
at build/python, MOSAIC_BINARY at the built command line and MOSAIC_SOURCE_DIR at the checkout."""

import json
import os
import pathlib
import subprocess
import threading

import numpy as np
import pandas as pd
import pytest

import mosaic

SOURCE = os.environ.get("MOSAIC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("MOSAIC_BINARY", os.path.join(SOURCE, "build", "mosaic"))
EPOCH = os.path.join(SOURCE, "tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv")
EPOCH_COLUMNS = ["N=Model Size", "C=Training FLOP", "D=C/(6*N)"]
REL_TOL = 2e-3  # parameters of the flat Chinchilla surface (tests/fit_cli_test.cc)


def cli_json(*args):
    out = subprocess.run([BINARY, *args, "--json"], cwd=SOURCE, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def test_model_is_exact_and_matches_the_cli():
    m = mosaic.model("mixtral-8x7b")
    assert m.total_params == 46_702_792_704
    assert m.to_dict() == cli_json("model", "mixtral-8x7b")
    ladder = mosaic.model("marin-ladder", d_model=1024)
    assert ladder.to_dict() == cli_json("model", "marin-ladder", "--set", "d_model=1024")
    assert set(m.components_frame().columns) >= {"name", "total_params", "active_params"}


def test_perf_matches_the_cli():
    args = dict(hardware="gb200-nvl72", gpus=64, layout="tp=1,pp=1,ep=64,fsdp=64,mbs=16,recompute=full",
                batch=1024, seq=4096, capacity_factor=1.0, profile="marin-gb200")
    p = mosaic.perf("marin-hero-fsdp", **args)
    cli = cli_json("perf", "marin-hero-fsdp", "--hardware", "gb200-nvl72", "--gpus", "64",
                   "--layout", args["layout"], "--batch", "1024", "--seq", "4096",
                   "--capacity-factor", "1.0", "--profile", "marin-gb200")
    assert p == cli
    assert 0 < p["mfu"] < 1


def test_search_is_a_sorted_dataframe_matching_the_cli():
    frame = mosaic.search("mixtral-8x7b", hardware="h100", gpus=64, batch=512, seq=4096, top=20)
    assert list(frame["rank"]) == list(range(1, len(frame) + 1))
    # Speeds within the search's equal-speed class (2^-13 relative: 13 bits of the mantissa) rank
    # by memory left, so a later layout may be faster by less than that.
    speeds = frame["tokens_per_s_per_gpu"].tolist()
    assert all(b <= a * (1 + 2.0**-12) for a, b in zip(speeds, speeds[1:]))
    assert speeds[-1] < speeds[0]
    cli = cli_json("perf", "mixtral-8x7b", "--hardware", "h100", "--gpus", "64", "--batch", "512",
                   "--search", "--top", "20")
    assert frame["layout"].tolist() == [r["layout"] for r in cli["ranked"]]
    assert frame.attrs["evaluated"] == cli["evaluated"]


def test_fit_of_epochs_chinchilla_data_reaches_epochs_objective():
    f = mosaic.fit(EPOCH, law="chinchilla", columns=EPOCH_COLUMNS, drop_highest_loss=5)
    assert f.objective == pytest.approx(0.0010182740, abs=5e-11)
    assert f.params["E"] == pytest.approx(1.8172, rel=REL_TOL)
    assert f.points == 240
    cli = cli_json("fit", "tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv",
                   *sum((["--column", c] for c in EPOCH_COLUMNS), []), "--drop-highest-loss", "5")
    assert f.params == cli["params"]
    frontier = f.frontier(5.76e23)
    assert frontier["params"] * frontier["tokens"] * 6 == pytest.approx(5.76e23, rel=1e-12)
    # Several budgets, as `mosaic fit --frontier` takes them: the same points, one row each.
    budgets = [1e21, 5.76e23]
    several = f.frontier(budgets)
    cli_points = cli_json("fit", "tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv",
                          *sum((["--column", c] for c in EPOCH_COLUMNS), []),
                          "--drop-highest-loss", "5", "--frontier", "1e21",
                          "--frontier", "5.76e23")["frontier"]
    assert several.to_dict("records") == [
        {"compute_flops": p["C"], "params": p["N"], "tokens": p["D"], "loss": p["loss"]}
        for p in cli_points["points"]]
    assert several.iloc[1].to_dict() == frontier
    with pytest.raises(mosaic.InputError, match=r"compute_flops\[1\] = -1"):
        f.frontier(np.array([1e21, -1]))


def test_fit_of_a_dataframe_predicts_on_arrays_with_intervals():
    frame = pd.read_csv(os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv"))
    f = mosaic.fit(frame, law="compute", pins={"E": 1.6, "alpha": 0.0941}, bootstrap=200)
    from_file = mosaic.fit(os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv"),
                           law="compute", pins={"E": 1.6, "alpha": 0.0941}, bootstrap=200)
    assert f.params == from_file.params
    assert f.intervals == from_file.intervals
    c = np.array([1e18, 1e20, 1e22])
    p = f.predict(C=c)
    expected = 1.6 + f.params["A"] * c ** -0.0941
    np.testing.assert_allclose(p["loss"], expected, rtol=1e-12)
    assert (p["low"] <= p["loss"]).all() and (p["loss"] <= p["high"]).all()


def test_fit_of_a_dataframe_reads_text_cells_and_names_rows_and_arguments():
    frame = pd.read_csv(EPOCH)[["Model Size", "Training FLOP", "loss"]]
    frame.columns = ["N", "C", "loss"]
    frame["D"] = frame["C"] / (6 * frame["N"])
    numbers = mosaic.fit(frame, drop_highest_loss=5)
    # An object column of numbers is numbers, as a CSV's cells are.
    as_text = frame.assign(N=frame["N"].map(repr))
    assert mosaic.fit(as_text, drop_highest_loss=5).params == numbers.params
    missing = frame.copy()
    missing.loc[2, "loss"] = np.nan
    with pytest.raises(mosaic.InputError, match=r"^DataFrame row 2: loss = NaN \(a missing value\)"):
        mosaic.fit(missing)
    word = frame.astype({"loss": object})
    word.loc[3, "loss"] = "abc"
    with pytest.raises(mosaic.InputError, match=r"^DataFrame row 3: loss = 'abc'"):
        mosaic.fit(word)
    with pytest.raises(mosaic.InputError, match=r"Map one with columns=\['N=COLUMN'\]$"):
        mosaic.fit(frame.rename(columns={"N": "params"}))
    with pytest.raises(mosaic.InputError, match=r"^pins Q=1: law chinchilla has no parameter 'Q'"):
        mosaic.fit(frame, pins={"Q": 1})
    with pytest.raises(mosaic.InputError, match=r"^fit: delta = 5 is the Huber threshold: it "
                                                r"needs objective='huber', not 'squared'"):
        mosaic.fit(frame, objective="squared", delta=5)


def test_fit_reads_losses_from_logs_as_the_cli_does():
    logged = os.path.join(SOURCE, "tests/fixtures/scaling/logged_runs.csv")
    logs = os.path.join(SOURCE, "tests/fixtures/janosh__tensorboard-reducer/tests/runs")
    args = dict(law="compute", columns="C=6*N*D", pins={"E": 1})
    f = mosaic.fit(logged, logs=logs, tag="strict/foo", **args)
    cli = cli_json("fit", "tests/fixtures/scaling/logged_runs.csv", "--logs",
                   "tests/fixtures/janosh__tensorboard-reducer/tests/runs", "--tag", "strict/foo",
                   "--law", "compute", "--column", "C=6*N*D", "--pin", "E=1")
    assert f.points == cli["points"] == 3
    assert f.params == cli["params"]
    # A DataFrame of the same rows, and the mean of the last values.
    frame = mosaic.fit(pd.read_csv(logged), logs=[logs], tag="strict/foo", **args)
    assert frame.params == f.params
    renamed = pd.read_csv(logged).replace({"run": {"strict/run_2": "strict/run_9"}})
    with pytest.raises(mosaic.InputError,
                       match=r"^DataFrame row 1: run 'strict/run_9' is not in the logs"):
        mosaic.fit(renamed, logs=logs, tag="strict/foo", **args)
    last3 = mosaic.fit(logged, logs=logs, tag="strict/foo", last_k=3, **args)
    assert last3.params != f.params
    with pytest.raises(mosaic.InputError, match=r"^fit: logs needs tag"):
        mosaic.fit(logged, logs=logs, **args)
    with pytest.raises(mosaic.InputError, match=r"give logs= as well"):
        mosaic.fit(logged, tag="strict/foo", **args)


def test_arguments_of_the_wrong_kind_are_input_errors_naming_them(tmp_path):
    frame = pd.read_csv(os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv"))
    pins = {"E": 1.6, "alpha": 0.0941}
    for kwargs, message in [
            (dict(law=None), r"^law = None\. Violated constraint: a str$"),
            (dict(where=None), r"^where = None"),
            (dict(columns=None), r"^columns = None"),
            (dict(columns=[5]), r"^columns\[0\] = 5"),
            (dict(logs=5, tag="x"), r"^logs = 5"),
            (dict(logs=[None], tag="x"), r"^logs\[0\] = None")]:
        with pytest.raises(mosaic.InputError, match=message):
            mosaic.fit(frame, **{"law": "compute", "pins": pins, **kwargs})
    with pytest.raises(mosaic.InputError, match=r"^restarts = None"):
        mosaic.read_runs(str(tmp_path), restarts=None)
    with pytest.raises(mosaic.InputError, match=r"^logdirs = 3"):
        mosaic.read_runs(3)
    with pytest.raises(mosaic.InputError, match=r"^study = None"):
        mosaic.plan(None)
    # The reader's messages name its arguments, not the command line's flags.
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "m.csv").write_text("step,loss\n1,2.5\n")
    with pytest.raises(mosaic.InputError, match=r"^restarts = bogus"):
        mosaic.read_runs(str(tmp_path), restarts="bogus")
    with pytest.raises(mosaic.InputError, match=r"^tags = zzz.*without tags"):
        mosaic.read_runs(str(tmp_path), tags="zzz")
    with pytest.raises(mosaic.InputError, match=r"last_k = 2147483647"):
        mosaic.summarize_runs(str(tmp_path), last_k=2**31 - 1)


def test_dataframe_columns_of_every_dtype_are_read_or_refused_by_name():
    frame = pd.read_csv(os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv"))
    pins = {"E": 1.6, "alpha": 0.0941}
    nullable = frame.astype({"C": "Float64"})
    nullable.loc[2, "C"] = pd.NA
    with pytest.raises(mosaic.InputError, match=r"^DataFrame row 2: C = NaN \(a missing value\)"):
        mosaic.fit(nullable, law="compute", pins=pins)
    assert (mosaic.fit(frame.astype({"C": "Float64"}), law="compute", pins=pins).params
            == mosaic.fit(frame, law="compute", pins=pins).params)
    twice = pd.concat([frame, frame[["C"]]], axis=1)
    with pytest.raises(mosaic.InputError, match=r"column 'C' appears twice"):
        mosaic.fit(twice, law="compute", pins=pins)
    alike = frame.assign(**{"1": frame["C"]})
    alike[1] = frame["C"] * 2
    with pytest.raises(mosaic.InputError, match=r"column '1' appears twice"):
        mosaic.fit(alike, law="compute", pins=pins)
    with pytest.raises(mosaic.InputError, match=r"column 'C' is complex"):
        mosaic.fit(frame.assign(C=frame["C"] + 1j), law="compute", pins=pins)


def test_predict_and_frontier_take_numbers_of_any_container():
    f = mosaic.fit(EPOCH, columns=EPOCH_COLUMNS, drop_highest_loss=5)
    # The budget is named when it is bad, not the N derived from it; an element by its index.
    with pytest.raises(mosaic.InputError, match=r"^predict: C = 0\. Violated constraint: C > 0"):
        f.predict(C=0)
    with pytest.raises(mosaic.InputError, match=r"^predict\[2\]: C = nan"):
        f.predict(C=[1e21, 1e22, np.nan])
    with pytest.raises(mosaic.InputError, match=r"^predict: N = True"):
        f.predict(N=True, D=1e12)
    nullable = f.predict(C=pd.array([1e20, 1e21], dtype="Float64"))
    np.testing.assert_array_equal(nullable["loss"], f.predict(C=[1e20, 1e21])["loss"])
    assert f.frontier(np.array(5.76e23)) == f.frontier(5.76e23)
    with pytest.raises(mosaic.InputError, match="one-dimensional"):
        f.frontier([[1e21, 1e22], [1e23, 1e24]])
    with pytest.raises(mosaic.InputError, match=r"^compute_flops = "):
        f.frontier([1e21, [1e22, 1e23]])
    with pytest.raises(mosaic.InputError, match="at least one budget"):
        f.frontier([])


def test_read_runs_summary_ends_where_the_log_ends(tmp_path):
    (tmp_path / "r7").mkdir()
    (tmp_path / "r7" / "m.csv").write_text("step,loss\n1,3\n2,2.5\n3,nan\n")
    full = mosaic.read_runs(str(tmp_path)).summary
    digest = mosaic.summarize_runs(str(tmp_path)).tags
    assert np.isnan(full["final"].iloc[0]) and np.isnan(digest["final"].iloc[0])
    # Logs with no point yet keep the frames' dtypes.
    (tmp_path / "empty" / "r").mkdir(parents=True)
    (tmp_path / "empty" / "r" / "m.csv").write_text("step,loss\n")
    nothing = mosaic.read_runs(str(tmp_path / "empty")).scalars
    assert len(nothing) == 0 and nothing["tag"].dtype == "category"
    assert mosaic.summarize_runs(str(tmp_path / "empty")).tags["points"].dtype == np.int64


def test_plan_matches_the_cli():
    p = mosaic.plan()
    assert p.to_dict() == cli_json("plan")
    csv = subprocess.run([BINARY, "plan", "--csv"], cwd=SOURCE, check=True, capture_output=True,
                         text=True).stdout
    assert list(p.frame.columns) == csv.splitlines()[0].split(",")
    assert len(p.frame) == len(csv.splitlines()) - 1
    text = subprocess.run([BINARY, "plan"], cwd=SOURCE, check=True, capture_output=True,
                          text=True).stdout
    assert str(p) == text
    with pytest.raises(mosaic.InputError, match="unknown study 'nope'"):
        mosaic.plan("nope")


def test_read_runs_gives_a_long_dataframe():
    runs = mosaic.read_runs(os.path.join(SOURCE, "tests/fixtures/orktes__go-tensorboard"))
    s = runs.scalars
    assert list(s.columns) == ["run", "tag", "step", "wall_time", "value", "pass"]
    assert len(s) > 0
    # The fixture's TF2 scalar is 0.5 × step (tests/fixtures/README.md).
    np.testing.assert_allclose(s["value"], 0.5 * s["step"], rtol=1e-6)
    summary = runs.summary
    assert (summary["points"] > 0).all()


def test_read_runs_keeps_the_readers_notes(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "metrics.csv").write_text("step,loss\n1,2.5\n2,abc\n3,2.3\n")
    runs = mosaic.read_runs(tmp_path)
    assert list(runs.notes.columns) == ["run", "note"]
    assert list(runs.notes["run"]) == ["run1", "run1"]
    csv = str(tmp_path / "run1" / "metrics.csv")
    assert runs.notes["note"][0] == f"{csv}:3: loss = 'abc' is not a number; cell skipped"
    assert list(runs.scalars["step"]) == [1, 3]
    assert "2 notes" in repr(runs)
    # A truncated last record of an event file is a note too, as `mosaic runs` prints it.
    events = (pathlib.Path(SOURCE) / "tests/fixtures/orktes__go-tensorboard").rglob("events*")
    first = sorted(events)[0].read_bytes()
    (tmp_path / "run2").mkdir()
    (tmp_path / "run2" / "events.out.tfevents.1.host").write_bytes(first[:-3])
    cut = mosaic.read_runs(tmp_path / "run2")
    assert len(cut.notes) == 1 and "truncated last record" in cut.notes["note"][0], cut.notes


def test_read_runs_takes_a_step_column_as_mosaic_runs_does(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "log.csv").write_text("it,loss\n1,2.5\n2,2.25\n")
    with pytest.raises(mosaic.InputError, match="no step column"):
        mosaic.read_runs(tmp_path)
    runs = mosaic.read_runs(tmp_path, step_column="it")
    assert list(runs.scalars["step"]) == [1, 2]
    summary = mosaic.summarize_runs(tmp_path, step_column="it")
    cli = cli_json("runs", str(tmp_path), "--step-column", "it")
    assert summary.runs == cli
    with pytest.raises(mosaic.InputError, match="step_column = 3"):
        mosaic.read_runs(tmp_path, step_column=3)


def test_read_runs_restart_policies_keep_first_or_all_passes():
    path = os.path.join(SOURCE, "tests/fixtures/janosh__tensorboard-reducer/tests/runs/duplicate_steps")
    first = mosaic.read_runs(path, restarts="first").scalars
    every = mosaic.read_runs(path, restarts="all").scalars
    assert len(every) > len(first)
    assert not first.duplicated(["run", "tag", "step"]).any()


def test_summarize_runs_matches_the_cli_and_read_runs():
    path = os.path.join(SOURCE, "tests/fixtures/janosh__tensorboard-reducer/tests/runs")
    summary = mosaic.summarize_runs(path, last_k=5)
    assert summary.runs == cli_json("runs", path, "--last-k", "5")
    full = mosaic.read_runs(path).summary
    merged = summary.tags.merge(full, on=["run", "tag"], suffixes=("", "_read"))
    assert len(merged) == len(full) == len(summary.tags) > 0
    assert (merged["points"] == merged["points_read"]).all()
    assert (merged["first_step"] == merged["first_step_read"]).all()
    assert (merged["last_step"] == merged["last_step_read"]).all()
    np.testing.assert_array_equal(merged["final"], merged["final_read"])
    with pytest.raises(mosaic.InputError, match="last_k = 0"):
        mosaic.summarize_runs(path, last_k=0)


def test_runs_readers_agree_on_restarts_and_refuse_what_cannot_be_read(tmp_path):
    # A step logged again after a restart is a later pass: its value is the final one, for
    # read_runs' summary as for summarize_runs and `mosaic runs`.
    (tmp_path / "rs").mkdir()
    (tmp_path / "rs" / "log.csv").write_text("step,loss\n1,3.0\n2,2.0\n3,1.0\n2,9.0\n")
    path = str(tmp_path / "rs")
    full = mosaic.read_runs(path, restarts="all").summary
    digest = mosaic.summarize_runs(path, restarts="all").tags
    assert full["final"].tolist() == digest["final"].tolist() == [9.0]
    assert full["last_step"].tolist() == digest["last_step"].tolist() == [3]
    # Logs of which nothing could be read, and no logs at all, are errors, as for the CLI.
    (tmp_path / "nostep").mkdir()
    (tmp_path / "nostep" / "log.csv").write_text("loss,acc\n1,2\n")
    for read in (mosaic.read_runs, mosaic.summarize_runs):
        with pytest.raises(mosaic.InputError, match="nothing could be read"):
            read(str(tmp_path / "nostep"))
        with pytest.raises(mosaic.InputError, match="at least one log directory"):
            read([])
        with pytest.raises(mosaic.InputError, match="tags = 123"):
            read(path, tags=123)
    with pytest.raises(mosaic.InputError, match="last_k = 100000000000000000000"):
        mosaic.summarize_runs(path, last_k=10**20)
    # A run-level finding (a file that cannot be read beside one that can) has no tag: None in
    # both readers.
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "a.csv").write_text("step,loss\n1,3.0\n2,2.0\n")
    (tmp_path / "mixed" / "b.csv").write_text("loss,acc\n1,2\n")
    mixed = str(tmp_path / "mixed")
    for findings in (mosaic.read_runs(mixed).findings, mosaic.summarize_runs(mixed).findings):
        run_level = findings[findings["tag"].isna()]
        assert len(run_level) >= 1, findings
        assert (findings["tag"] != "").all()


def test_decide_has_the_verdict_and_an_html_view():
    d = mosaic.decide()
    assert d.verdict["chosen_arm"] == "fsdp-chunk1"
    assert d.target["effective_compute"] == pytest.approx(1.177, abs=5e-4)
    assert "<svg" in d._repr_html_()
    assert set(d.criteria()["status"]) == {"PASS", "UNKNOWN"}
    assert d.to_dict() == cli_json("decide")


def test_codesign_matches_the_cli():
    c = mosaic.codesign("h100-sparsity")
    assert len(c.architectures_frame()) == 18
    # The estimate's columns the CSV export has are in the frame too.
    for column in ("layout", "tokens_per_s_per_gpu", "mfu", "peak_memory_bytes",
                   "dropped_fraction"):
        assert column in c.architectures_frame().columns, column
    assert c.to_dict() == cli_json("codesign", "h100-sparsity")


def test_wrong_types_are_input_errors_and_big_ints_are_numbers():
    args = dict(hardware="h100", gpus=8, batch=8)
    for bad in (dict(layout=None), dict(layout="ep=8", format=None), dict(layout="ep=8", routing=1),
                dict(layout="ep=8", profile=123), dict(layout="ep=8", profiles=123),
                dict(layout="ep=8", hardware=None)):
        with pytest.raises(mosaic.InputError, match="Violated constraint: a (str|path)"):
            mosaic.perf("mixtral-8x7b", **{**args, **bad})
    for bad in (None, 123):
        with pytest.raises(mosaic.InputError, match="name_or_path = "):
            mosaic.model(bad)
    with pytest.raises(mosaic.InputError, match="search: layout is not an argument"):
        mosaic.search("mixtral-8x7b", layout="tp=1", **args)
    csv = os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv")
    with pytest.raises(mosaic.InputError, match="pins = 'E=1.6'. Violated constraint: a mapping"):
        mosaic.fit(csv, law="compute", pins="E=1.6")
    compute_fit = mosaic.fit(csv, law="compute", pins={"E": 1.6, "alpha": 0.0941})
    # A budget past 64 bits as a Python int is the same number as a float.
    assert (compute_fit.predict(C=10**24)["loss"][0]
            == compute_fit.predict(C=1e24)["loss"][0])
    assert (compute_fit.predict(C=[10**24, 10**25])["loss"].tolist()
            == compute_fit.predict(C=[1e24, 1e25])["loss"].tolist())
    with pytest.raises(mosaic.InputError, match="numbers"):
        compute_fit.predict(C=[10**24, True])


def test_bad_input_raises_input_error_with_the_cli_message():
    with pytest.raises(mosaic.InputError, match="unknown model preset 'mixtral-8x8b'"):
        mosaic.model("mixtral-8x8b")
    with pytest.raises(ValueError):  # InputError is a ValueError
        mosaic.perf("mixtral-8x7b", hardware="h100", gpus=8, layout="tp=3", batch=8)
    compute_fit = mosaic.fit(os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv"),
                             law="compute", pins={"E": 1.6, "alpha": 0.0941})
    with pytest.raises(mosaic.InputError, match="law compute has no input 'N'; inputs: C"):
        compute_fit.predict(N=[1e9])
    with pytest.raises(mosaic.InputError, match="predict: law compute needs input C"):
        compute_fit.predict()
    with pytest.raises(mosaic.InputError):
        mosaic.read_runs("/nonexistent/logdir")
    arm = os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv")
    with pytest.raises(mosaic.InputError, match="bootstrap = -1"):
        mosaic.fit(arm, law="compute", pins={"E": 1.6, "alpha": 0.0941}, bootstrap=-1)
    plain = mosaic.fit(arm, law="compute", pins={"E": 1.6, "alpha": 0.0941})
    assert plain.intervals is None
    with pytest.raises(mosaic.InputError, match="Violated constraint: numbers"):
        plain.predict(C=[1e20, "x"])
    with pytest.raises(mosaic.InputError, match="top = 0"):
        mosaic.search("mixtral-8x7b", hardware="h100", gpus=8, batch=8, top=0)


def test_threads_run_searches_concurrently():
    results = [None, None]

    def work(i):
        results[i] = mosaic.search("mixtral-8x7b", hardware="h100", gpus=64, batch=512, top=5)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0].equals(results[1])


def test_arguments_are_checked_as_the_cli_checks_its_flags():
    perf = dict(hardware="h100", layout="dp=8", batch=8)
    # Not truncated, not reinterpreted: a fraction, a bool or text is refused, naming the rule.
    for bad in (64.9, True, "64", float("nan"), 0, 2**70):
        with pytest.raises(mosaic.InputError, match=r"gpus = .*Violated constraint: an integer"):
            mosaic.perf("mixtral-8x7b", gpus=bad, **perf)
    assert mosaic.perf("mixtral-8x7b", gpus=8.0, **perf) == mosaic.perf("mixtral-8x7b", gpus=8,
                                                                        **perf)
    for bad in (0, 1e6, float("inf")):
        with pytest.raises(mosaic.InputError, match="capacity_factor = .*a number in"):
            mosaic.perf("mixtral-8x7b", gpus=8, capacity_factor=bad, **perf)
    with pytest.raises(mosaic.InputError, match="top = 1.5"):
        mosaic.search("mixtral-8x7b", hardware="h100", gpus=8, batch=8, top=1.5)
    with pytest.raises(mosaic.InputError, match="capacity_padding = 0. Violated constraint: True"):
        mosaic.perf("mixtral-8x7b", gpus=8, capacity_padding=0, **perf)


def test_capacity_padding_is_the_cli_flag():
    # Capacity 2 on 64 H100: padded, every expert computes twice its fair share; unpadded
    # (Megatron-Core's default), the tokens it keeps, charged as balanced routing is.
    args = dict(hardware="h100", gpus=64, layout="fsdp=64,ep=8,mbs=1", batch=256,
                capacity_factor=2.0)
    padded = mosaic.perf("mixtral-8x7b", **args)
    unpadded = mosaic.perf("mixtral-8x7b", capacity_padding=False, **args)
    balanced = mosaic.perf("mixtral-8x7b", hardware="h100", gpus=64, layout="fsdp=64,ep=8,mbs=1",
                           batch=256, routing="balanced")
    assert padded["capacity_padding"] is True and unpadded["capacity_padding"] is False
    assert unpadded["tokens_per_s_per_gpu"] > padded["tokens_per_s_per_gpu"]
    assert unpadded["tokens_per_s_per_gpu"] == balanced["tokens_per_s_per_gpu"]
    assert unpadded["dropped_fraction"] == padded["dropped_fraction"]
    with pytest.raises(mosaic.InputError, match="--no-capacity-padding with --routing balanced"):
        mosaic.perf("mixtral-8x7b", hardware="h100", gpus=64, layout="fsdp=64,ep=8,mbs=1",
                    batch=256, routing="balanced", capacity_padding=False)
    for bad in (float("nan"), -1e22, 0, float("inf")):
        with pytest.raises(mosaic.InputError, match="compute_flops = "):
            mosaic.fit(EPOCH, law="chinchilla", columns=EPOCH_COLUMNS).frontier(bad)
    for bad in (float("nan"), -1e12, float("inf")):
        with pytest.raises(mosaic.InputError, match="tokens = "):
            mosaic.model("deepseek-v3", tokens=bad)
    arm = os.path.join(SOURCE, "tests/fixtures/scaling/arm_base.csv")
    for name, bad in (("threads", 0), ("threads", 100000), ("bootstrap", 1.5),
                      ("drop_highest_loss", -1)):
        with pytest.raises(mosaic.InputError, match=f"{name} = "):
            mosaic.fit(arm, law="compute", **{name: bad})
    for bad in (0, -1, 100000):
        with pytest.raises(mosaic.InputError, match="threads = "):
            mosaic.codesign("h100-sparsity", threads=bad)
    # A numpy integer is an integer.
    runs = os.path.join(SOURCE, "tests/fixtures/janosh__tensorboard-reducer/tests/runs")
    assert (mosaic.summarize_runs(runs, last_k=np.int64(5)).runs
            == mosaic.summarize_runs(runs, last_k=5).runs)


def test_overrides_are_set_values_and_a_whole_float_is_an_integer():
    three = mosaic.model("mixtral-8x7b", top_k=3)
    assert mosaic.model("mixtral-8x7b", top_k=3.0).to_dict() == three.to_dict()
    assert mosaic.model("mixtral-8x7b", top_k=np.float64(3)).to_dict() == three.to_dict()
    assert mosaic.model("mixtral-8x7b", top_k="3").to_dict() == three.to_dict()
    assert three.to_dict() == cli_json("model", "mixtral-8x7b", "--set", "top_k=3")
    with pytest.raises(mosaic.InputError, match="top_k is an integer"):
        mosaic.model("mixtral-8x7b", top_k=3.5)


def test_search_offload_is_the_cli_flag():
    args = dict(hardware="h100", gpus=64, batch=64, seq=8192, top=3, offload="layers",
                **{"hardware.hbm_gb": 30})
    frame = mosaic.search("llama3-70b", **args)
    assert frame["layout"][0].endswith(",offload_layers=80")
    cli = cli_json("perf", "llama3-70b", "--hardware", "h100", "--gpus", "64", "--batch", "64",
                   "--seq", "8192", "--search", "--top", "3", "--offload", "layers", "--set",
                   "hardware.hbm_gb=30")
    assert frame["layout"].tolist() == [row["layout"] for row in cli["ranked"]]
    with pytest.raises(mosaic.InputError, match="offload = 'everything'"):
        mosaic.search("llama3-70b", **{**args, "offload": "everything"})


def test_search_dispatch_is_the_cli_flag():
    args = dict(hardware="h100", gpus=64, batch=512, top=3, dispatch="flat")
    frame = mosaic.search("mixtral-8x7b", **args)
    cli = cli_json("perf", "mixtral-8x7b", "--hardware", "h100", "--gpus", "64", "--batch", "512",
                   "--search", "--top", "3", "--dispatch", "flat")
    assert frame["layout"].tolist() == [row["layout"] for row in cli["ranked"]]
    assert all(",dispatch=flat" in l for l in frame["layout"] if ",ep=1," not in l)
    assert (frame.attrs["expert_dispatch"], frame.attrs["expert_dispatch_from"]) == ("flat", "search")
    for bad in ("alltoall", ""):
        with pytest.raises(mosaic.InputError, match=f"dispatch = '{bad}'"):
            mosaic.search("mixtral-8x7b", **{**args, "dispatch": bad})


def test_perf_sets_device_fields_as_set_does():
    args = dict(hardware="gb200-nvl72", gpus=64,
                layout="tp=1,pp=1,ep=64,fsdp=64,mbs=16,recompute=full", batch=1024,
                capacity_factor=1.0, profile="marin-gb200")
    p = mosaic.perf("marin-hero-fsdp", **args, **{"hardware.hbm_gb": 96})
    cli = cli_json("perf", "marin-hero-fsdp", "--hardware", "gb200-nvl72", "--gpus", "64",
                   "--layout", args["layout"], "--batch", "1024", "--capacity-factor", "1.0",
                   "--profile", "marin-gb200", "--set", "hardware.hbm_gb=96")
    assert p == cli
    assert p != mosaic.perf("marin-hero-fsdp", **args)


def test_predict_at_a_budget_is_the_cli_prediction_and_the_frontier_point():
    fit = mosaic.fit(EPOCH, law="chinchilla", columns=EPOCH_COLUMNS, drop_highest_loss=5)
    at_budget = fit.predict(C=[1e21, 1e23])
    cli = cli_json("fit", EPOCH, "--column", "N=Model Size", "--column", "C=Training FLOP",
                   "--column", "D=C/(6*N)", "--drop-highest-loss", "5", "--predict", "C=1e21",
                   "--predict", "C=1e23")
    assert list(at_budget["loss"]) == [p["loss"] for p in cli["predictions"]]
    assert list(at_budget["N"]) == [p["inputs"]["N"] for p in cli["predictions"]]
    frontier = fit.frontier(1e21)
    assert at_budget["N"][0] == frontier["params"] and at_budget["D"][0] == frontier["tokens"]
    one_given = fit.predict(C=6e21, N=1e10)
    assert one_given["D"][0] == pytest.approx(1e11, rel=1e-15)
    with pytest.raises(mosaic.InputError, match="predict: C = 1e\\+21 with both N"):
        fit.predict(C=1e21, N=1e9, D=1e10)
    with pytest.raises(mosaic.InputError, match="predict: law chinchilla has no input 'X'"):
        fit.predict(X=1.0)
    with pytest.raises(mosaic.InputError, match="predict: N = '1e9'. Violated constraint: numbers"):
        fit.predict(N="1e9", D=1e12)
    # A NaN given is a value out of range, not a missing input.
    with pytest.raises(mosaic.InputError, match="N = nan. Violated constraint: N > 0 and finite"):
        fit.predict(N=np.nan, D=1e12)
    # One column mapping may be given as a str (it was split into its characters).
    frame = pd.read_csv(EPOCH)
    frame["D"] = frame["Training FLOP"] / (6 * frame["Model Size"])
    frame = frame.rename(columns={"Model Size": "params"})[["params", "D", "loss"]]
    as_str = mosaic.fit(frame, columns="N=params", drop_highest_loss=5, pins={"E": 1.8172})
    as_list = mosaic.fit(frame, columns=["N=params"], drop_highest_loss=5, pins={"E": 1.8172})
    assert as_str.params == as_list.params


def test_predict_broadcasts_scalars_and_refuses_shapes_it_cannot_use():
    fit = mosaic.fit(EPOCH, law="chinchilla", columns=EPOCH_COLUMNS, drop_highest_loss=5)
    both = fit.predict(N=[7e9, 70e9], D=1.4e12)
    assert list(both["D"]) == [1.4e12, 1.4e12]
    assert list(both["loss"]) == [fit.predict(N=7e9, D=1.4e12)["loss"][0],
                                  fit.predict(N=70e9, D=1.4e12)["loss"][0]]
    with pytest.raises(mosaic.InputError, match="one-dimensional"):
        fit.predict(N=[[7e9, 7e9]], D=[[1e12, 1e12]])
    with pytest.raises(mosaic.InputError, match="of one length"):
        fit.predict(N=[7e9, 70e9, 1e9], D=[1e12, 2e12])
