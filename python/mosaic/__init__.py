"""mosaic: plan, size and decide how to train sparse Mixture-of-Experts language models.

The C++ library of the ``mosaic`` command line, for notebooks: exact model accounting, the
performance model (step time, MFU, memory, best layout), scaling-law fits with bootstrap
intervals, training-log reading into pandas, and the decision and co-design jobs.

Every function raises :class:`InputError` (a ``ValueError``) with the command line's message on
bad input (the messages of fit and the run readers name their keyword arguments where the command
line names flags, and a DataFrame's rows by position: ``DataFrame row 2``). Long computations (layout search, multi-start fits, log reading, the jobs) release the
GIL, so threads run them in parallel.
"""

from __future__ import annotations

import collections.abc
import contextlib
import json
import math
import os
import re
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import _mosaic
from ._mosaic import InputError

__all__ = [
    "InputError",
    "Model",
    "model",
    "perf",
    "search",
    "Plan",
    "plan",
    "Fit",
    "fit",
    "Runs",
    "read_runs",
    "RunsSummary",
    "summarize_runs",
    "Decision",
    "decide",
    "Codesign",
    "codesign",
]


def _integer(name: str, value, low: int, high: int) -> int:
    """``value`` as an int in [low, high] (a Python or numpy integer, or a float that is one), or
    InputError naming it and the rule; booleans and text are refused, as the command line does."""
    ok = False
    if not isinstance(value, (bool, np.bool_)):
        if isinstance(value, (int, np.integer)):
            ok = True
        elif isinstance(value, (float, np.floating)) and math.isfinite(value):
            ok = float(value).is_integer()
    if not ok or not low <= int(value) <= high:
        raise InputError(f"{name} = {value!r}. Violated constraint: an integer, "
                         f"{low} <= {name} <= {high}")
    return int(value)


def _flag(name: str, value) -> bool:
    """``value`` as a bool (True or False, or numpy's), or InputError naming it: a 0, 1 or text
    is refused rather than read as its truth."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} = {value!r}. Violated constraint: True or False")
    return bool(value)


def _number(name: str, value, low: float, high: float, *, low_open: bool = False,
            high_open: bool = False) -> float:
    """``value`` as a finite float in the range (bounds open where asked), or InputError."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))
    v = float(value) if ok else math.nan
    inside = (math.isfinite(v) and (v > low if low_open else v >= low)
              and (v < high if high_open else v <= high))
    if not inside:
        rule = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise InputError(f"{name} = {value!r}. Violated constraint: a number in {rule}")
    return v


_MAX_THREADS = _mosaic.MAX_THREADS


def _text(name: str, value) -> str:
    """``value`` as a str, or InputError naming the argument (pybind11's TypeError lists the
    binding's internals instead)."""
    if not isinstance(value, str):
        raise InputError(f"{name} = {value!r}. Violated constraint: a str")
    return value


def _path(name: str, value) -> str:
    """``value`` (a str or os.PathLike naming a file, a folder or an embedded name) as a str."""
    if not isinstance(value, (str, os.PathLike)) or isinstance(os.fspath(value), bytes):
        raise InputError(f"{name} = {value!r}. Violated constraint: a path (str or os.PathLike)")
    return os.fspath(value)


def _numbers(name: str, value) -> np.ndarray:
    """``value`` (a number, a sequence or array of numbers, a pandas Series or extension array
    with missing values as NaN) as a float array of its shape; InputError for booleans, text,
    complex numbers and ragged sequences."""
    if isinstance(value, (pd.Series, pd.Index, pd.api.extensions.ExtensionArray)):
        if (pd.api.types.is_numeric_dtype(value.dtype) and not pd.api.types.is_bool_dtype(value.dtype)
                and not pd.api.types.is_complex_dtype(value.dtype)):
            return pd.Series(value).to_numpy(dtype=float, na_value=np.nan)
        value = np.asarray(value, dtype=object)
    try:
        array = np.asarray(value)
    except ValueError:  # a ragged sequence
        array = np.asarray(value, dtype=object)
    if array.dtype.kind == "O" and all(
            isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_)) for v in array.flat):
        # Python ints past 64 bits (C = 10**24) are numbers as any other.
        array = np.array([float(v) for v in array.flat]).reshape(array.shape)
    if array.dtype.kind not in "iuf":
        raise InputError(f"{name} = {value!r}. Violated constraint: numbers (an int or float, or "
                         "an array of them; not bool, complex or text)")
    return array.astype(float)


def _in_python_terms(text: str, keywords: Mapping[str, str]) -> str:
    """A library message with each command-line flag named as the Python argument for it
    (``--step-column`` as ``step_column``): ``--column N=COLUMN`` as ``columns=['N=COLUMN']`` and
    ``--pin E=VALUE`` as ``pins={'E': VALUE}`` where those are arguments."""
    if "column" in keywords:
        text = re.sub(r"--column (\w+)=COLUMN", r"columns=['\1=COLUMN']", text)
    if "pin" in keywords:
        text = re.sub(r"--pin (\w+)=VALUE", r"pins={'\1': VALUE}", text)
    return re.sub(r"--([a-z]+(?:-[a-z]+)*)", lambda m: keywords.get(m.group(1), m.group(0)), text)


@contextlib.contextmanager
def _python_terms(keywords: Mapping[str, str]):
    """Re-raises the library's InputError with its flags named as Python arguments."""
    try:
        yield
    except InputError as error:
        raise InputError(_in_python_terms(str(error), keywords)) from None


def _text_overrides(overrides: Mapping[str, object]) -> dict[str, str]:
    """Model and device overrides as ``--set`` writes them: a bool as true/false, a whole float
    as its integer (``top_k=3.0`` is ``--set top_k=3``; an integer field refuses "3.0"), any
    other value as its text."""
    out = {}
    for name, value in overrides.items():
        if isinstance(value, (bool, np.bool_)):
            out[name] = "true" if value else "false"
        elif (isinstance(value, (float, np.floating)) and float(value).is_integer()
              and abs(value) < 2**53):  # an integer a double holds exactly; larger, as written
            out[name] = str(int(value))
        else:
            out[name] = str(value)
    return out


class _Document:
    """A JSON document with attribute access to its top-level fields."""

    def __init__(self, document: dict):
        self._document = document

    def __getattr__(self, name: str):
        try:
            return self._document[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_dict(self) -> dict:
        """Every field, as the command line's ``--json`` prints it."""
        return self._document

    def __repr__(self) -> str:
        return f"{type(self).__name__}({json.dumps(self._document)[:200]}...)"


class Model(_Document):
    """Exact parameter and FLOP accounting of a model (``mosaic model --json``).

    Attributes: ``total_params``, ``active_params``, ``active_params_no_embedding``,
    ``active_params_matmul_no_embedding``, ``embedding_params`` (parameters, exact integers),
    ``sparsity`` (1 − active/total), ``components`` (per-component counts and formulas),
    ``flops`` (``{"physical": {...}, "causal": {...}, "levanter_table": {...}}``, FLOPs per token,
    exact; "physical" is the full-square count).
    """

    def components_frame(self) -> pd.DataFrame:
        """Parameters per component as a DataFrame (name, category, total_params, active_params)."""
        return pd.DataFrame(self._document["components"])


def model(name_or_path: str | os.PathLike, *, seq: int = 4096, tokens: float = 0,
          **overrides) -> Model:
    """Parameter and FLOP breakdown of a preset or a model TOML file.

    ``overrides`` set model fields as ``--set`` does, e.g. ``model("marin-ladder", d_model=1024)``.
    ``seq`` (tokens) is the attention span of the FLOP counts; ``tokens`` > 0 adds the training
    FLOPs for that many tokens.
    """
    seq = _integer("seq", seq, 1, _mosaic.MAX_SEQ_LEN)
    tokens = _number("tokens", tokens, 0, 1e30)
    return Model(json.loads(_mosaic.model_json(_path("name_or_path", name_or_path),
                                               _text_overrides(overrides), seq, tokens)))


def _perf_args(model, hardware, gpus, batch, seq, format, routing, capacity_factor,
               capacity_padding, profile, profiles, overrides):
    cf = 0.0 if capacity_factor is None else _number("capacity_factor", capacity_factor, 0.01,
                                                      _mosaic.MAX_CAPACITY_FACTOR)
    return (_path("model", model), _text_overrides(overrides), _path("hardware", hardware),
            _integer("gpus", gpus, 1, _mosaic.MAX_GPUS),
            _integer("batch", batch, 1, _mosaic.MAX_BATCH),
            _integer("seq", seq, 1, _mosaic.MAX_SEQ_LEN), _text("format", format),
            _text("routing", routing), cf, _flag("capacity_padding", capacity_padding),
            "" if profile is None else _text("profile", profile),
            "" if profiles is None else _path("profiles", profiles))


def perf(model: str, *, hardware: str, gpus: int, layout: str, batch: int, seq: int = 4096,
         format: str = "bf16", routing: str = "auto", capacity_factor: float | None = None,
         capacity_padding: bool = True, profile: str | None = None, profiles: str | None = None,
         **overrides) -> dict:
    """The step estimate of one layout (``mosaic perf --json``).

    ``batch`` is the global batch in sequences, ``seq`` the sequence length in tokens, ``layout``
    the layout string (``"tp=1,pp=1,ep=64,fsdp=64,mbs=16,recompute=full"``);
    ``capacity_padding=False`` is ``--no-capacity-padding``. Returns a dict with
    ``step_seconds``, ``tokens_per_s_per_gpu``, ``mfu`` (fraction), ``peak_memory_bytes``,
    ``dropped_fraction``, and the ``time`` (seconds) and ``memory`` (bytes per GPU) breakdowns.
    """
    (m, sets, hw, g, b, s, f, r, cf, pad, p, pf) = _perf_args(
        model, hardware, gpus, batch, seq, format, routing, capacity_factor, capacity_padding,
        profile, profiles, overrides)
    return json.loads(_mosaic.perf_json(m, sets, hw, g, _text("layout", layout), b, s, f, r, cf,
                                        pad, p, pf))


def search(model: str, *, hardware: str, gpus: int, batch: int, seq: int = 4096,
           format: str = "bf16", routing: str = "auto", capacity_factor: float | None = None,
           capacity_padding: bool = True, profile: str | None = None,
           profiles: str | None = None, top: int = 100, offload: str = "none",
           dispatch: str | None = None, **overrides) -> pd.DataFrame:
    """Every feasible layout ranked by tokens/s per GPU (``mosaic perf --search``).

    Returns a DataFrame of the ``top`` fastest layouts, best first: ``rank``, ``layout``,
    ``tokens_per_s_per_gpu``, ``mfu``, ``step_seconds``, ``peak_memory_bytes``,
    ``dropped_fraction``, ``micro_batches``. ``DataFrame.attrs`` holds the counts of layouts
    evaluated, feasible and rejected by reason, and the all-to-all's path across scale-up domains
    (``expert_dispatch``, ``expert_dispatch_from``; None where none can leave one). ``offload`` (``"none"``, ``"modules"``,
    ``"layers"``) is ``--offload``: what is tried for a layout no recompute policy fits.
    ``dispatch`` (``"flat"``, ``"hierarchical"``; None: the profile's default) is ``--dispatch``:
    how the EP all-to-all crosses nodes in every layout tried.
    """
    if "layout" in overrides:
        raise InputError("search: layout is not an argument of search, which ranks every layout "
                         "(perf(..., layout=...) evaluates one)")
    (m, sets, hw, g, b, s, f, r, cf, pad, p, pf) = _perf_args(
        model, hardware, gpus, batch, seq, format, routing, capacity_factor, capacity_padding,
        profile, profiles, overrides)
    top = _integer("top", top, 1, 2**30)
    if dispatch is not None and _text("dispatch", dispatch) == "":
        raise InputError("dispatch = ''. Violated constraint: flat, hierarchical or None (the "
                         "profile's default)")
    result = json.loads(_mosaic.search_json(m, sets, hw, g, b, s, f, r, cf, pad, p, pf, top,
                                            _text("offload", offload),
                                            "" if dispatch is None
                                            else _text("dispatch", dispatch)))
    columns = ["rank", "layout", "tokens_per_s_per_gpu", "mfu", "step_seconds",
               "peak_memory_bytes", "dropped_fraction", "micro_batches"]
    frame = pd.DataFrame([{c: row[c] for c in columns} for row in result["ranked"]],
                         columns=columns)
    frame.attrs.update({k: result[k] for k in ("evaluated", "feasible", "rejected",
                                               "expert_dispatch", "expert_dispatch_from")})
    return frame


class Fit(_Document):
    """A fitted scaling law (``mosaic fit --json``): ``law``, ``params`` (paper names),
    ``intervals`` (bootstrap percentile intervals, when asked), ``objective``, ``points``,
    ``runs``, ``recipe``."""

    def __init__(self, handle):
        super().__init__(json.loads(handle.json()))
        self._handle = handle

    @property
    def intervals(self) -> dict | None:
        """Bootstrap percentile intervals per parameter, or None without a bootstrap."""
        return self._document.get("intervals")

    def predict(self, **inputs) -> pd.DataFrame:
        """Loss at the law's inputs, given as equal-length arrays or scalars by name (a scalar
        goes with every element of the arrays), as ``mosaic fit --predict`` takes them: ``N=...,
        D=...``; for a law in N and D also ``C=...`` alone (the compute-optimal N and D at that
        budget) or ``C`` with one of ``N``, ``D`` (C = 6·N·D gives the other). Returns a DataFrame
        with the inputs given, the law's inputs they resolve to, ``loss`` and, with a bootstrap,
        ``low`` and ``high`` (a budget is re-allocated per resample)."""
        # Numbers only: no text, bool or complex read as a number.
        arrays = {k: _numbers(f"predict: {k}", v) for k, v in inputs.items()}
        try:
            shaped = np.broadcast_arrays(*arrays.values())
        except ValueError:
            lengths = {k: np.shape(v) for k, v in arrays.items()}
            raise InputError(f"predict: the inputs are scalars or arrays of one length {lengths}"
                             ) from None
        if any(a.ndim > 1 for a in shaped):
            raise InputError("predict: the inputs are scalars or one-dimensional arrays")
        arrays = {k: np.atleast_1d(np.ascontiguousarray(a)) for k, a in zip(arrays, shaped)}
        resolved, loss, low, high = self._handle.predict(arrays)
        frame = pd.DataFrame(arrays)
        for name, values in resolved.items():
            if name not in frame:
                frame[name] = values
        frame["loss"] = loss
        if "intervals" in self._document:
            frame["low"] = low
            frame["high"] = high
        return frame

    def frontier(self, compute_flops):
        """The compute-optimal parameters, tokens and loss at budget C (FLOPs, C = 6·N·D), for a
        law in N and D (chinchilla), as ``mosaic fit --frontier`` gives them: a dict
        (``compute_flops``, ``params``, ``tokens``, ``loss``) for one budget, a DataFrame with
        those columns, one row per budget, for a list or array of budgets."""
        budgets = _numbers("compute_flops", compute_flops)
        if budgets.size == 0:
            raise InputError("compute_flops = []. Violated constraint: at least one budget")
        if budgets.ndim > 1:
            raise InputError("frontier: compute_flops is a number or a one-dimensional array")
        for i, c in enumerate(np.atleast_1d(budgets)):
            if not 0 < c <= 1e300:
                where = "compute_flops" if budgets.ndim == 0 else f"compute_flops[{i}]"
                raise InputError(f"{where} = {c!r}. Violated constraint: a number in (0, 1e+300]")
        with _python_terms({"frontier": "frontier"}):
            if budgets.ndim == 0:
                return self._handle.frontier(float(budgets))
            return pd.DataFrame([self._handle.frontier(float(c)) for c in budgets],
                                columns=["compute_flops", "params", "tokens", "loss"])


# The command line's flags that fit's messages name, as fit's keyword arguments.
_FIT_KEYWORDS = {"column": "columns", "pin": "pins", "where": "where",
                 "drop-highest-loss": "drop_highest_loss", "objective": "objective",
                 "space": "space", "delta": "delta", "bootstrap": "bootstrap", "seed": "seed",
                 "confidence": "confidence", "law": "law", "threads": "threads", "logs": "logs",
                 "tag": "tag", "last-k": "last_k", "run-column": "run_column",
                 "loss-column": "loss_column"}


# The command line's flags that the run reader's messages name, as its keyword arguments.
_RUNS_KEYWORDS = {"restarts": "restarts", "tags": "tags", "step-column": "step_column",
                  "last-k": "last_k"}


def fit(data, *, law: str = "chinchilla", columns: Sequence[str] = (), where: str = "",
        drop_highest_loss: int = 0, pins: Mapping[str, float] | None = None,
        objective: str = "huber", space: str = "log", delta: float | None = None, bootstrap: int = 0,
        seed: int = 0, confidence: float = 0.95, threads: int = 2, loss_column: str = "loss",
        run_column: str = "run", logs=None, tag: str | None = None, last_k: int = 1) -> Fit:
    """Fit a scaling law (``mosaic fit``), by default Hoffmann et al.'s Approach 3 (Huber δ=1e-3 on
    log loss from the full start grid).

    ``data`` is a CSV path or a DataFrame with columns named after the law's inputs and ``loss``
    (optionally ``run`` and ``weight``); ``columns`` maps or derives columns first
    (``"N=Model Size"``, ``"D=C/(6*N)"``), ``where`` keeps rows (``"C < 1e21"``). ``pins`` fixes
    parameters by name. ``delta`` is the Huber threshold (1e-3 when not given; only with
    ``objective="huber"``). ``bootstrap`` resamples runs for percentile intervals.

    ``logs`` (a directory or several, with ``tag``) reads each row's loss from its run's training
    logs instead of a loss column, as ``mosaic fit --logs DIR --tag TAG`` does: the mean of the
    tag's last ``last_k`` values, the run named by the row's ``run`` column.
    """
    _check_text("tag", tag)
    if delta is not None and objective != "huber":
        raise InputError(f"fit: delta = {delta!r} is the Huber threshold: it needs "
                         f"objective='huber', not {objective!r}")
    if logs is None and (tag is not None or last_k != 1):
        raise InputError("fit: tag and last_k read losses from logs; give logs= as well")
    if pins is not None and not isinstance(pins, collections.abc.Mapping):
        raise InputError(f"pins = {pins!r}. Violated constraint: a mapping of parameter names to "
                         "values, e.g. {'E': 1.6}")
    pins = {str(name): _number(f"pins[{name!r}]", value, -1e300, 1e300)
            for name, value in dict(pins or {}).items()}
    if isinstance(columns, str):  # one mapping, not its characters
        columns = [columns]
    if not isinstance(columns, collections.abc.Iterable):
        raise InputError(f"columns = {columns!r}. Violated constraint: a mapping 'NAME=COLUMN' "
                         "(str) or a list of them")
    columns = [_text(f"columns[{i}]", c) for i, c in enumerate(columns)]
    args = (_text("law", law), columns, _text("where", where),
            _integer("drop_highest_loss", drop_highest_loss, 0, 10**6),
            pins, _text("objective", objective), _text("space", space),
            _number("delta", 1e-3 if delta is None else delta, 0, 1e6, low_open=True),
            _integer("bootstrap", bootstrap, 0, 10**6), _integer("seed", seed, 0, 2**64 - 1),
            _number("confidence", confidence, 0, 1, low_open=True, high_open=True),
            _integer("threads", threads, 1, _MAX_THREADS), _text("loss_column", loss_column),
            _text("run_column", run_column),
            _log_directories(logs, "logs") if logs is not None else [], tag or "",
            _integer("last_k", last_k, 1, 10**6))
    if isinstance(data, (str, os.PathLike)):
        with _python_terms(_FIT_KEYWORDS):
            return Fit(_mosaic.fit_csv(os.fspath(data), *args))
    if not isinstance(data, pd.DataFrame):
        raise InputError("fit: data is a CSV path or a pandas DataFrame")
    # Columns by name as a CSV header names them: two that print alike are one name twice.
    names = [str(name) for name in data.columns]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(f"DataFrame: column '{name}' appears twice (columns "
                             f"{names.index(name)} and {i}). Violated constraint: column names "
                             "are unique")
    numeric, text = {}, {}
    for i, name in enumerate(names):
        series = data.iloc[:, i]
        if pd.api.types.is_complex_dtype(series.dtype):
            raise InputError(f"DataFrame: column '{name}' is complex ({series.dtype}). Violated "
                             "constraint: real numbers or text")
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            # Nullable dtypes (Float64, Int64) hold missing values as pd.NA: NaN here.
            numeric[name] = series.to_numpy(dtype=float, na_value=np.nan)
        else:
            text[name] = ["" if pd.isna(v) else str(v) for v in series]
    with _python_terms(_FIT_KEYWORDS):
        return Fit(_mosaic.fit_columns(numeric, text, *args))


def _log_directories(logdirs, name: str = "logdirs") -> list[str]:
    """``logdirs`` as a list of paths: one path, or an iterable of them; at least one."""
    if isinstance(logdirs, (str, os.PathLike)):
        logdirs = [logdirs]
    elif isinstance(logdirs, bytes) or not isinstance(logdirs, collections.abc.Iterable):
        raise InputError(f"{name} = {logdirs!r}. Violated constraint: a path or a list of paths "
                         "(str or os.PathLike)")
    paths = [_path(f"{name}[{i}]", d) for i, d in enumerate(logdirs)]
    if not paths:
        raise InputError(f"{name} = []. Violated constraint: at least one log directory or file")
    return paths


def _check_tags(tags) -> None:
    if tags is not None and not isinstance(tags, str):
        raise InputError(
            f"tags = {tags!r}. Violated constraint: a regular expression (str) or None")


def _check_text(name: str, value) -> None:
    if value is not None and not isinstance(value, str):
        raise InputError(f"{name} = {value!r}. Violated constraint: a str or None")


class Runs:
    """Training logs read by the run reader (``mosaic runs``).

    ``scalars``: a long DataFrame with columns ``run``, ``tag``, ``step``, ``wall_time``
    (seconds), ``value``, ``pass`` (1 for the first pass over a step; restarts add passes).
    ``findings``: a DataFrame of health findings (``run``, ``kind``, ``tag``, ``steps``,
    ``message``). ``notes``: what the reader left out or doubted, as ``mosaic runs`` prints it
    (``run``, ``note``: skipped files, rows and cells, a truncated last line, file order).
    ``summary``: one row per run and tag (``points``, ``first_step``, ``last_step``, ``final``:
    the columns of the same names in :class:`RunsSummary` ``.tags``).
    """

    def __init__(self, scalars: pd.DataFrame, findings: pd.DataFrame, notes: pd.DataFrame):
        self.scalars = scalars
        self.findings = findings
        self.notes = notes

    @property
    def summary(self) -> pd.DataFrame:
        # The final value is the last one written: the last pass's last step (with
        # restarts="all", a step logged again after a restart is a later pass), as
        # ``mosaic runs`` and summarize_runs report it.
        s = self.scalars.sort_values(["run", "tag", "pass", "step"], kind="stable")
        grouped = s.groupby(["run", "tag"], observed=True, sort=True)
        # GroupBy.last() skips NaN: a run that ended in NaN would show its last finite value.
        final = s.drop_duplicates(["run", "tag"], keep="last").set_index(["run", "tag"])["value"]
        return pd.DataFrame({
            "points": grouped.size(),
            "first_step": grouped["step"].min(),
            "last_step": grouped["step"].max(),
            "final": final,
        }).reset_index()

    def __repr__(self) -> str:
        runs = self.scalars["run"].nunique() if len(self.scalars) else 0
        return (f"Runs({runs} runs, {len(self.scalars)} points, {len(self.findings)} findings, "
                f"{len(self.notes)} notes)")


def read_runs(logdirs: str | os.PathLike | Iterable[str | os.PathLike], *, restarts: str = "first",
              tags: str | None = None, step_column: str | None = None) -> Runs:
    """Read TensorBoard event files, CSV and JSONL logs under ``logdirs`` (searched recursively),
    as ``mosaic runs`` does. ``restarts`` is ``first``, ``last`` or ``all`` (which pass of a step
    written twice to keep); ``tags`` keeps tags matching a regular expression; ``step_column``
    names the step column of CSV and JSONL logs (``--step-column``; None finds it)."""
    logdirs = _log_directories(logdirs)
    _check_tags(tags)
    _check_text("step_column", step_column)
    with _python_terms(_RUNS_KEYWORDS):
        (run_names, tag_names, run, tag, step, wall, value, passes, findings,
         notes) = _mosaic.read_runs(logdirs, _text("restarts", restarts), tags or "",
                                    step_column or "")
    scalars = pd.DataFrame({
        # Categorical even when empty (from_codes needs the categories it indexes).
        "run": pd.Categorical.from_codes(run, categories=run_names) if run_names
        else pd.Categorical([], categories=[]),
        "tag": pd.Categorical.from_codes(tag, categories=tag_names) if tag_names
        else pd.Categorical([], categories=[]),
        "step": step,
        "wall_time": wall,
        "value": value,
        "pass": passes,
    })
    return Runs(scalars, pd.DataFrame(findings, columns=["run", "kind", "tag", "steps", "message"]),
                pd.DataFrame(notes, columns=["run", "note"]))


class RunsSummary:
    """What ``mosaic runs --json`` reports of training logs, read without keeping their points.

    ``runs``: the JSON document, one dict per run (its files, tags, restarts, findings, record
    issues and notes). ``tags``: a DataFrame with one row per run and tag (``run``, ``tag``,
    ``points``, ``first_step``, ``last_step``, ``final``, ``mean_last_k``, ``k``,
    ``mean_last_k_points``, ``min``, ``non_finite``; non-finite figures as NaN). ``findings``: a
    DataFrame of health findings (``run``, ``kind``, ``tag``, ``steps``, ``message``).
    """

    def __init__(self, runs: list):
        self.runs = runs
        self.tags = pd.DataFrame(
            [{"run": r["run"], **t} for r in runs for t in r["tags"]],
            columns=["run", "tag", "points", "first_step", "last_step", "final", "mean_last_k",
                     "k", "mean_last_k_points", "min", "non_finite"],
        ).astype({"final": float, "mean_last_k": float, "min": float})
        if self.tags.empty:  # the counts' dtypes, which pandas cannot infer from no rows
            self.tags = self.tags.astype({c: "int64" for c in (
                "points", "first_step", "last_step", "k", "mean_last_k_points", "non_finite")})
        self.findings = pd.DataFrame(
            [{"run": r["run"], **f} for r in runs for f in r["findings"]],
            columns=["run", "kind", "tag", "steps", "message"],
        )

    def __repr__(self) -> str:
        return (f"RunsSummary({len(self.runs)} runs, {len(self.tags)} tags, "
                f"{len(self.findings)} findings)")


def summarize_runs(logdirs: str | os.PathLike | Iterable[str | os.PathLike], *,
                   restarts: str = "first", tags: str | None = None,
                   step_column: str | None = None, last_k: int = 10) -> RunsSummary:
    """Summarize the logs under ``logdirs`` as ``mosaic runs --json`` does (``last_k``: values in
    each tag's final mean), reading them in batches without keeping their points: for log
    directories too large for :func:`read_runs`. ``restarts``, ``tags`` and ``step_column`` as
    there."""
    logdirs = _log_directories(logdirs)
    _check_tags(tags)
    _check_text("step_column", step_column)
    last_k = _integer("last_k", last_k, 1, 2**30)  # as `mosaic runs --last-k`
    with _python_terms(_RUNS_KEYWORDS):
        return RunsSummary(json.loads(_mosaic.summarize_runs(
            logdirs, _text("restarts", restarts), tags or "", step_column or "", last_k)))


class Plan(_Document):
    """The experiment ladder of a study (``mosaic plan --json``): ``study`` (its settings) and
    ``rows`` (one per arm and rung: depth, active params, token budget, steps, train FLOPs by
    convention, racks, estimated hours, evals). ``str()`` is the command line's text table."""

    def __init__(self, document: dict, text: str):
        super().__init__(document)
        self._text = text

    @property
    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame, in the order of ``mosaic plan --csv``."""
        return pd.DataFrame(self._document["rows"])

    def __str__(self) -> str:
        return self._text


def plan(study: str | os.PathLike = "fsdp-vs-ep") -> Plan:
    """The experiment ladder of a study file or embedded study name (``mosaic plan``)."""
    document, text = _mosaic.plan(_path("study", study))
    return Plan(json.loads(document), text)


class Decision(_Document):
    """The decision report of a study (``mosaic decide --json``); in a notebook it shows as the
    HTML report. ``verdict`` is the first throughput scenario's verdict."""

    def __init__(self, document: dict, html: str):
        super().__init__(document)
        self._html = html

    @property
    def verdict(self) -> dict:
        return self._document["scenarios"][0]["verdict"]

    def criteria(self) -> pd.DataFrame:
        """Every scenario's criteria: throughput, name, status, reason, settle."""
        rows = [dict(throughput=s["throughput"], **c) for s in self._document["scenarios"]
                for c in s["criteria"]]
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        return self._html


def decide(study: str | os.PathLike = "fsdp-vs-ep", *, threads: int = 2) -> Decision:
    """Run the decision job on a study file or embedded study name (``mosaic decide``)."""
    document, html = _mosaic.decide(_path("study", study), _integer("threads", threads, 1,
                                                                _MAX_THREADS))
    return Decision(json.loads(document), html)


class Codesign(_Document):
    """The co-design result of a space (``mosaic codesign --json``); in a notebook it shows as the
    HTML report."""

    def __init__(self, document: dict, html: str):
        super().__init__(document)
        self._html = html

    # The layout estimate's columns the CSV export has (``mosaic codesign --csv``).
    _ESTIMATE_COLUMNS = ("layout", "tokens_per_s_per_gpu", "mfu", "peak_memory_bytes",
                         "dropped_fraction")

    def architectures_frame(self) -> pd.DataFrame:
        """One row per architecture: its fields, and of its best layout's estimate the columns
        ``mosaic codesign --csv`` writes (layout, tokens/s per GPU, MFU, peak memory in bytes,
        dropped share); those are absent (NaN) for an architecture that fits no layout."""
        rows = [{k: v for k, v in a.items() if k != "estimate"}
                | ({c: a["estimate"][c] for c in self._ESTIMATE_COLUMNS}
                   if "estimate" in a else {})
                for a in self._document["architectures"]]
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        return self._html


def codesign(space: str | os.PathLike, *, threads: int = 2) -> Codesign:
    """Run the co-design job on a space file or embedded space name (``mosaic codesign``)."""
    document, html = _mosaic.codesign(_path("space", space), _integer("threads", threads, 1,
                                                                  _MAX_THREADS))
    return Codesign(json.loads(document), html)
