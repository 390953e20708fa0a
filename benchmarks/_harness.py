"""The benchmarks' harness: the results store, the markdown layout and tables, the environment
record, peak RSS, core pinning and the command-line helpers.  Every ``bench_*.py`` writes its
results through this module.

Standard library only at module level: bench_scaling, bench_large, bench_large_c, bench_small and
bench_nusvm pin their process to its cores (``pin``) before numpy or any SVC library is imported.

Layout of every ``benchmarks/results/*.md`` (``document`` writes it, ``layout_problems`` checks it)::

    # <title>

    **QUICK smoke test ...**                        banners, only when they apply
    **Partial results ...**

    - date: <ISO 8601 date of the run>              the run record: date and command first,
    - command: `python benchmarks/bench_<x>.py ...`   then the machine and the software
    - ...

    <body: paragraphs, tables, "## " sections>

A report assembled from part files (``--part assemble``) has the same head, its record being the
assemble run, and embeds each part's file one heading level down (``section``).

Store files (``<prefix>[_<part>][_quick].json``, next to the markdown) hold ``runs`` (one
environment record per run), ``entries`` (one per unit of work: ``config``, ``result``, ``run``,
``date``) and ``summary``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
RESULTS = HERE / "results"

QUICK_BANNER = "**QUICK smoke test (tiny subsamples, reduced grid): the numbers are not meaningful.**"
PARTIAL_BANNER = "**Partial results: the run has not finished (or was interrupted).**"
ASSEMBLED_QUICK_BANNER = "**Assembled from QUICK smoke-test sections: not meaningful.**"


# ======================================================================================== environment
def now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def command_line() -> str:
    """This process's command line, the script named relative to the repository root."""
    argv = list(sys.argv)
    script = Path(argv[0]).resolve() if argv and argv[0] else None
    if script is not None and script.is_file() and script.is_relative_to(REPO_ROOT):
        argv[0] = str(script.relative_to(REPO_ROOT))
    return shlex.join([Path(sys.executable).name, *argv])


def invocation() -> dict[str, str]:
    """The head of every run record: when, and the command."""
    return {"date": now(), "command": command_line()}


def daal4py():
    """The daal4py module (oneDAL's thread control), or None."""
    try:
        import daal4py as module
    except Exception:
        return None
    return module


def package_version(name: str) -> str:
    """Installed version of distribution ``name`` (or of an importable module ``name``)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:  # e.g. sparsekernel used from a build tree / PYTHONPATH
        return str(getattr(importlib.import_module(name), "__version__", "unknown"))
    except Exception:
        return "not installed"


def cpu_model() -> str:
    """'model name' of /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no commit yet?)"
    return rev + (" (with uncommitted changes)" if dirty else "")


def environment() -> dict[str, str]:
    """The run record: invocation, machine, software and repository revision."""
    dal = daal4py()
    return {
        **invocation(),
        "nproc": f"{len(os.sched_getaffinity(0))} (os.cpu_count()={os.cpu_count()})",
        "cpu": cpu_model(),
        "oneDAL threads (default)": str(dal.num_threads()) if dal else "n/a",
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": ", ".join(
            f"{pkg} {package_version(pkg)}"
            for pkg in ("sparsekernel", "scikit-learn", "scikit-learn-intelex", "daal",
                        "numpy", "scipy", "threadpoolctl")),
        "repo revision": git_revision(),
    }


# ======================================================================================== peak RSS
def proc_status_kb(*keys: str) -> dict[str, int]:
    """Selected ``/proc/self/status`` fields (e.g. ``VmRSS``, ``VmHWM``) in kB."""
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in keys:
                values[key] = int(rest.split()[0])
    return values


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark VmHWM to the current RSS (False where not allowed)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


class PeakRSS:
    """Context manager measuring the peak RSS growth (MB) over the RSS at entry.

    A background thread samples ``VmRSS`` every ``sample_seconds`` (None: no thread).  It needs the
    GIL, so it misses peaks inside native code that keeps the GIL; when the kernel lets us reset the
    high-water mark (``reset_peak_rss``), ``VmHWM`` at exit is used as well, which catches every peak.
    """

    def __init__(self, sample_seconds: float | None = 0.005):
        self.sample_seconds = sample_seconds

    def __enter__(self) -> PeakRSS:
        self.hwm_reset = reset_peak_rss()
        self.baseline_kb = proc_status_kb("VmRSS")["VmRSS"]
        self._peak_kb = self.baseline_kb
        self._stop = threading.Event()
        self._thread = None
        if self.sample_seconds is not None:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        status = proc_status_kb("VmRSS", "VmHWM")
        self._peak_kb = max(self._peak_kb, status["VmRSS"])
        if self.hwm_reset:
            self._peak_kb = max(self._peak_kb, status["VmHWM"])

    @property
    def baseline_mb(self) -> float:
        return self.baseline_kb / 1024

    @property
    def growth_mb(self) -> float:
        return (self._peak_kb - self.baseline_kb) / 1024

    def _sample(self) -> None:
        while not self._stop.wait(self.sample_seconds):
            self._peak_kb = max(self._peak_kb, proc_status_kb("VmRSS")["VmRSS"])


# ======================================================================================== pinning
def pin(cores: set[int]) -> None:
    """Set the CPU affinity of every thread of this process to ``cores`` (call it before numpy and
    the libraries start their thread pools: threads started later inherit the affinity).
    ValueError if ``cores`` is not within the CPUs this process may use."""
    allowed = os.sched_getaffinity(0)
    if not cores or not set(cores) <= allowed:
        raise ValueError(f"--cores {sorted(cores)} not within the CPUs this process may use {sorted(allowed)}")
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:   # a thread that ended meanwhile
            pass
    os.sched_setaffinity(0, cores)


def thread_cpus() -> dict[str, int]:
    """This process's threads counted by their allowed CPUs (``Cpus_allowed_list``)."""
    counts: dict[str, int] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        cpus = line.split(":", 1)[1].strip()
                        counts[cpus] = counts.get(cpus, 0) + 1
        except OSError:
            continue
    return counts


# ======================================================================================== command line
def csv_list(kind: Callable[[str], object], allowed=None):
    """An argparse type: a comma-separated list of ``kind`` values, each in ``allowed`` if given."""
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if allowed is not None:
            unknown = sorted(set(items) - set(allowed))
            if unknown:
                raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {list(allowed)}")
        return [kind(t) for t in items]
    return parse


def add_store_options(p: argparse.ArgumentParser, quick_help: str) -> None:
    """The options every benchmark with a results store takes: --force, --quick, --data-dir."""
    p.add_argument("--force", action="store_true", help="redo cells already stored")
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data directory (default: $SPARSEKERNEL_DATA or /work/shared/data)")


def add_render_option(p: argparse.ArgumentParser) -> None:
    """--render-only (alias --report-only): rewrite the markdown from the stored JSON, run nothing."""
    p.add_argument("--render-only", "--report-only", dest="render_only", action="store_true",
                   help="rewrite the markdown from the stored JSON, run nothing")


def parse_cores(text: str) -> set[int]:
    """An argparse type: --cores "0,1" as a set of CPU ids."""
    try:
        cores = {int(t) for t in text.split(",") if t.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad --cores {text!r}: use CPU ids like 0 or 0,1") from None
    if not cores:
        raise argparse.ArgumentTypeError("--cores is empty")
    return cores


# ======================================================================================== markdown
def fmt(value, spec: str = ".3f") -> str:
    """A table cell: ``value`` formatted, '-' for None, NaN and infinities."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, spec)


def md_row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def md_table(headers, rows) -> list[str]:
    """A markdown table: the header row, the separator, one line per row (cells through str)."""
    return [md_row(headers), md_row(["---"] * len(headers)), *[md_row(row) for row in rows]]


def record(env: dict) -> list[str]:
    """A run record as the layout's list (the command in backticks)."""
    return [f"- {k}: `{v}`" if k == "command" else f"- {k}: {v}" for k, v in env.items()]


def document(title: str, record_lines: list[str], body: list[str], *, quick: bool = False,
             complete: bool = True, quick_banner: str = QUICK_BANNER) -> str:
    """A results file in the layout (module docstring)."""
    lines = [f"# {title}", ""]
    if quick:
        lines += [quick_banner, ""]
    if not complete:
        lines += [PARTIAL_BANNER, ""]
    lines += [*record_lines, "", *body]
    return "\n".join(lines).rstrip() + "\n"


def section(text: str) -> str:
    """A results file as a section of an assembled report: every heading one level down."""
    out, fenced = [], False
    for line in text.rstrip().splitlines():
        fenced ^= line.startswith("```")
        out.append("#" + line if not fenced and re.match(r"#+ ", line) else line)
    return "\n".join(out) + "\n"


def write_assembled(path: Path, title: str, body: list[str], parts: list[str], quick: bool = False) -> None:
    """An assembled report: the assemble run's record, ``body`` (introduction, summary, bars), then
    the text of every part file in ``parts`` as a section."""
    env = {**invocation(), "repo revision": git_revision()}
    write_md(path, document(title, record(env), [*body, *map(section, parts)], quick=quick,
                            quick_banner=ASSEMBLED_QUICK_BANNER))
    print(f"wrote {path}", flush=True)


#: the second line of a run record (environment variables may precede the command)
COMMAND_RECORD = re.compile(r"- command: `([A-Z_]+=\S* )*python\S* benchmarks/bench_\w+\.py")


def layout_problems(text: str) -> list[str]:
    """How ``text`` departs from the layout of the results files (empty: it follows it)."""
    lines = text.splitlines()
    if len(lines) < 2 or not re.match(r"# \S", lines[0]) or lines[1] != "":
        return ["the first line is not '# <title>' followed by a blank line"]
    i = 2
    while i < len(lines) and (lines[i].startswith("**") or lines[i] == ""):
        i += 1
    problems = []
    if i >= len(lines) or not re.match(r"- date: \S", lines[i]):
        problems.append("the run record does not open with '- date: ...' after the title and banners")
    elif i + 1 >= len(lines) or not COMMAND_RECORD.match(lines[i + 1]):
        problems.append("the run record's second line is not '- command: `python benchmarks/bench_<x>.py ...`'")
    while i < len(lines) and lines[i].startswith("- "):
        i += 1
    if i >= len(lines) or lines[i] != "" or not "".join(lines[i:]).strip():
        problems.append("no blank line and body after the run record")
    fenced = False
    for n, line in enumerate(lines[1:], 2):
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("# "):
            problems.append(f"line {n}: a second top-level heading")
    return problems


# ======================================================================================== files
def _json_default(o):
    if hasattr(o, "tolist"):       # numpy arrays and scalars (numpy is not imported here)
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o)}")


def canonical(obj):
    """JSON round trip (tuples -> lists, numpy scalars -> Python) so stored configs compare equal."""
    return json.loads(json.dumps(obj, default=_json_default))


def _write_atomic(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def save_json(path: Path, data) -> None:
    _write_atomic(path, json.dumps(data, indent=1, default=_json_default))


def load_json(path: Path, default=None):
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else default


def write_md(path: Path, text: str) -> None:
    _write_atomic(path, text if text.endswith("\n") else text + "\n")


# ======================================================================================== store
class Store:
    """One results file pair ``<stem>.{json,md}``: the runs (environment records), the entries
    keyed by unit of work, and a summary.  A subclass sets ``prefix``; the stem is
    ``<prefix>[_<part>][_quick]`` (``stem`` may be overridden).

    An entry is reused (``done``) when its ``config`` (every setting that changes the result)
    equals the current one and its result holds no ``error`` (errors are retried); ``force``
    redoes every unit.  The JSON is rewritten atomically after every ``put``.
    """

    prefix = "bench"
    directory = RESULTS

    @classmethod
    def stem(cls, part: str | None, quick: bool) -> str:
        return (cls.prefix if part is None else f"{cls.prefix}_{part}") + ("_quick" if quick else "")

    def __init__(self, part: str | None = None, quick: bool = False, force: bool = False,
                 register_run: bool = True):
        self.part, self.quick, self.force = part, quick, force
        stem = self.stem(part, quick)
        self.md_path = Path(self.directory) / f"{stem}.md"
        self.json_path = Path(self.directory) / f"{stem}.json"
        data = load_json(self.json_path, {})
        self.runs: list[dict] = data.get("runs", [])
        self.entries: dict[str, dict] = data.get("entries", {})
        self.summary: dict = data.get("summary", {})
        self.run_index = None
        if register_run:
            self.runs.append(self.run_record())
            self.run_index = len(self.runs) - 1

    @classmethod
    def load(cls, part: str | None = None, quick: bool = False) -> Store | None:
        """The stored file (no run registered), or None if there is none."""
        if not (Path(cls.directory) / f"{cls.stem(part, quick)}.json").exists():
            return None
        return cls(part, quick, register_run=False)

    def run_record(self) -> dict:
        return environment()

    def get(self, key: str, config: dict):
        e = self.entries.get(key)
        if e is None or e["config"] != canonical(config):
            return None
        return e["result"]

    def done(self, key: str, config: dict) -> bool:
        """Stored with the same config and without an error (errors are retried)."""
        r = None if self.force else self.get(key, config)
        return r is not None and not (isinstance(r, dict) and r.get("error"))

    def put(self, key: str, config: dict, result) -> None:
        self.entries[key] = {"config": canonical(config), "result": canonical(result),
                             "run": self.run_index, "date": now()}
        self.save()

    def matching(self, config: dict) -> dict:
        """The results computed with ``config`` (the other entries are kept but not shown)."""
        c = canonical(config)
        return {k: e["result"] for k, e in self.entries.items() if e["config"] == c}

    def save(self) -> None:
        save_json(self.json_path, dict(part=self.part, quick=self.quick, runs=self.runs, summary=self.summary,
                                       entries=self.entries))

    def header(self, config: dict | None = None) -> list[str]:
        """The run record of this run (of the last one, when rendering), and the earlier runs whose
        entries are shown (those with ``config``, if given)."""
        shown_run = self.run_index if self.run_index is not None else len(self.runs) - 1
        lines = record(self.runs[shown_run]) if self.runs else []
        c = None if config is None else canonical(config)
        shown = [e for e in self.entries.values() if c is None or e["config"] == c]
        used = sorted({e.get("run") for e in shown if e.get("run") is not None} - {shown_run})
        if used:
            lines.append("- entries from earlier runs (restarts): " + "; ".join(
                f"{self.runs[i].get('date')} `{self.runs[i].get('command')}` at {self.runs[i].get('repo revision')}"
                for i in used if i < len(self.runs)))
        ignored = len(self.entries) - len(shown)
        if ignored:
            lines.append(f"- {ignored} stored entr{'y' if ignored == 1 else 'ies'} with other settings "
                         "(another grid or tolerance) are kept in the JSON but not shown")
        return lines

    def write_md(self, title: str, body: list[str], complete: bool = True, config: dict | None = None) -> None:
        """The markdown in the layout (this run's record, then ``body``), and the JSON."""
        write_md(self.md_path, document(title, self.header(config), body, quick=self.quick, complete=complete))
        self.save()
