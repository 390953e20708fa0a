"""The benchmarks' harness (benchmarks/_harness.py): its results store, its markdown tables and
layout, and that every benchmark and every results file goes through it."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
RESULTS = BENCH / "results"
sys.path.insert(0, str(BENCH))
import _harness  # noqa: E402

SCRIPTS = sorted(BENCH.glob("bench_*.py"))
#: git-ignored smoke-test outputs (.gitignore: benchmarks/results/*_quick.*) are not part of the results
TRACKED = [p for p in sorted(RESULTS.iterdir()) if not p.stem.endswith("_quick")]


def make_store(tmp_path):
    class T(_harness.Store):
        prefix = "t"
        directory = tmp_path
        count = 0

        def run_record(self):
            T.count += 1
            return {"date": f"2026-01-0{T.count}", "command": f"python benchmarks/bench_t.py --run {T.count}"}
    return T


# ======================================================================================== store
def test_store_round_trip(tmp_path):
    T = make_store(tmp_path)
    store = T("part")
    config = {"C": np.float64(1.0), "grid": (1, 2), "n": np.int64(3)}
    store.put("a", config, {"time": np.float64(0.5), "iters": np.arange(3)})
    assert store.json_path == tmp_path / "t_part.json" and store.json_path.exists()
    assert store.get("a", {"C": 1.0, "grid": [1, 2], "n": 3}) == {"time": 0.5, "iters": [0, 1, 2]}
    assert store.done("a", config)
    assert not store.done("a", {**config, "C": 2.0})          # another config: not done
    assert store.get("a", {**config, "C": 2.0}) is None
    assert not store.done("b", config)

    store.put("b", config, {"error": "MemoryError()"})
    assert not store.done("b", config)                          # errors are retried
    assert not T("part", force=True).done("a", config)          # --force redoes every unit

    again = T("part")                                           # a rerun: the entries are reused
    assert again.done("a", config) and again.entries["a"]["run"] == 0
    assert len(again.runs) == 2 and again.run_index == 1
    loaded = T.load("part")
    assert loaded.run_index is None and loaded.entries == store.entries
    assert T.load("other") is None
    data = json.loads(store.json_path.read_text())
    assert set(data) == {"part", "quick", "runs", "summary", "entries"}
    assert set(data["entries"]["a"]) == {"config", "result", "run", "date"}


def test_store_stems(tmp_path):
    T = make_store(tmp_path)
    assert T.stem(None, False) == "t" and T.stem("x", True) == "t_x_quick"
    assert T(None, quick=True, register_run=False).md_path == tmp_path / "t_quick.md"


def test_store_header_and_markdown(tmp_path):
    T = make_store(tmp_path)
    first = T("p")
    first.put("a", {"k": 1}, {"v": 1})
    first.put("old", {"k": 0}, {"v": 0})
    second = T("p")
    second.put("b", {"k": 1}, {"v": 2})
    header = second.header({"k": 1})
    assert header[:2] == ["- date: 2026-01-02", "- command: `python benchmarks/bench_t.py --run 2`"]
    assert "entries from earlier runs" in header[2] and "--run 1" in header[2]
    assert header[3].startswith("- 1 stored entry with other settings")
    assert len(second.header()) == 3                            # no config: every entry is shown
    assert len(T.load("p").header({"k": 0})) == 4               # rendering: the last run's record, run 1's entry

    second.write_md("A title", ["body", "", *_harness.md_table(["x"], [[1]])], complete=False, config={"k": 1})
    text = second.md_path.read_text()
    assert text.startswith("# A title\n\n" + _harness.PARTIAL_BANNER + "\n\n- date: 2026-01-02\n")
    assert text.endswith("| x |\n| --- |\n| 1 |\n")
    assert _harness.layout_problems(text) == []
    assert json.loads(second.json_path.read_text())["entries"]["b"]["result"] == {"v": 2}

    quick = T("p", quick=True)
    quick.write_md("Quick", ["body"])
    assert quick.md_path.name == "t_p_quick.md"
    assert quick.md_path.read_text().startswith("# Quick\n\n" + _harness.QUICK_BANNER + "\n\n- date: ")


# ======================================================================================== markdown
def test_md_table_and_fmt():
    assert _harness.md_table(["a", "b c"], [[1, None], ["x", 2.5]]) == [
        "| a | b c |", "| --- | --- |", "| 1 | None |", "| x | 2.5 |"]
    assert _harness.md_table(["a"], []) == ["| a |", "| --- |"]
    assert _harness.md_row(["-", 3]) == "| - | 3 |"
    assert [_harness.fmt(v) for v in (None, float("nan"), float("inf"), 1.23456, np.float64(2.0))] == [
        "-", "-", "-", "1.235", "2.000"]
    assert _harness.fmt(12, "d") == "12" and _harness.fmt(0.000123, ".1e") == "1.2e-04"


def test_document_and_section():
    text = _harness.document("T", _harness.record({"date": "d", "command": "python benchmarks/bench_x.py --y"}),
                             ["## Part", "", "text"], quick=True)
    assert text == ("# T\n\n" + _harness.QUICK_BANNER + "\n\n- date: d\n- command: `python benchmarks/bench_x.py --y`"
                    "\n\n## Part\n\ntext\n")
    assert _harness.section("# T\n\n## S\n\n```\n# code\n```\n") == "## T\n\n### S\n\n```\n# code\n```\n"


@pytest.mark.parametrize("text", [
    "## T\n\n- date: d\n- command: `python benchmarks/bench_x.py`\n\nbody\n",      # not a top-level title
    "# T\nx\n",                                                                      # no blank line
    "# T\n\nbody without a record\n",
    "# T\n\n- date: d\n- command: `make bench`\n\nbody\n",                            # not a benchmark command
    "# T\n\n- date: d\n- command: `python benchmarks/bench_x.py`\n",                 # no body
    "# T\n\n- date: d\n- command: `python benchmarks/bench_x.py`\n\n# Another\n",    # two titles
])
def test_layout_problems_finds_departures(text):
    assert _harness.layout_problems(text)


def test_layout_accepts_environment_prefixes():
    text = "# T\n\n- date: d\n- command: `OMP_NUM_THREADS=1 python benchmarks/bench_x.py`\n\nbody\n"
    assert _harness.layout_problems(text) == []


# ======================================================================================== measurement
def test_peak_rss_and_pin():
    with _harness.PeakRSS(sample_seconds=None) as rss:
        block = b"x" * (64 << 20)
    del block
    assert rss.growth_mb >= 48 and rss.baseline_mb > 0
    with pytest.raises(ValueError, match="not within"):
        _harness.pin({max(os.sched_getaffinity(0)) + 4096})


def test_harness_and_pinning_scripts_import_no_numerics():
    """bench_scaling & co. pin their cores before numpy is imported: their module level and the
    harness must stay on the standard library."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import _harness, bench_scaling, bench_large_c, bench_small, "
            "bench_nusvm, bench_large; heavy = {'numpy', 'scipy', 'sklearn', 'sparsekernel'} & set(sys.modules); "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code, str(BENCH)], check=True, timeout=60)


# ======================================================================================== the benchmarks
#: one place per concept: a benchmark defines none of these itself
HARNESS_NAMES = {"Store", "md_table", "md_row", "markdown_row", "fmt", "record", "document", "section", "write_md",
                 "write_assembled", "save_json", "canonical", "environment", "invocation", "cpu_model", "git_revision",
                 "package_version", "daal4py", "PeakRSS", "proc_status_kb", "reset_peak_rss", "pin", "thread_cpus",
                 "csv_list", "parse_cores", "add_store_options", "add_render_option"}


def _is_harness_store(base: ast.expr) -> bool:
    return isinstance(base, ast.Attribute) and base.attr == "Store" and getattr(base.value, "id", "") == "_harness"


def departures(source: str) -> list[str]:
    """How a benchmark script departs from writing its results through the harness."""
    tree = ast.parse(source)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    out = [] if "_harness" in imported else ["does not import _harness"]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Store":
            # a results store is the harness's, at most with its own prefix / file stem
            if not any(_is_harness_store(b) for b in node.bases) or any(
                    isinstance(n, ast.FunctionDef) and n.name != "stem" for n in node.body):
                out.append(f"line {node.lineno}: its own Store")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.col_offset == 0 and node.name in HARNESS_NAMES:
            out.append(f"line {node.lineno}: its own {node.name}")
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            modes = [a.value for a in [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
                     if isinstance(a, ast.Constant)]
            if name in ("write_text", "write_bytes", "dump") or (
                    name == "open" and any(set(str(m)) & set("wax") for m in modes)):
                out.append(f"line {node.lineno}: writes a file itself")
    return out


def test_departures_are_found():
    bad = ("import json\nfrom pathlib import Path\n\n\nclass Store:\n    def save(self):\n"
           "        open('r.json', 'w').write(json.dumps({}))\n        Path('r.md').write_text('')\n\n\n"
           "def md_table(headers, rows):\n    return []\n")
    assert sorted(departures(bad)) == ["does not import _harness", "line 11: its own md_table",
                                       "line 5: its own Store", "line 7: writes a file itself",
                                       "line 8: writes a file itself"]
    assert departures("import _harness\n\n\nclass Store(_harness.Store):\n    prefix = 'x'\n") == []


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_writes_through_the_harness(script):
    assert departures(script.read_text()) == []


# ======================================================================================== results/
@pytest.mark.parametrize("path", [p for p in TRACKED if p.suffix == ".md"], ids=lambda p: p.name)
def test_results_markdown_layout(path):
    assert _harness.layout_problems(path.read_text()) == []


@pytest.mark.parametrize("path", [p for p in TRACKED if p.suffix == ".json"], ids=lambda p: p.name)
def test_results_json_layout(path):
    data = json.loads(path.read_text())
    assert set(data) == {"part", "quick", "runs", "summary", "entries"}
    assert isinstance(data["runs"], list) and all("date" in r and "command" in r for r in data["runs"])
    for e in data["entries"].values():
        assert {"config", "result", "run"} <= set(e)
        assert e["run"] is None or 0 <= e["run"] < len(data["runs"])


def test_results_only_hold_reports_and_stores():
    assert {p.suffix for p in TRACKED} <= {".md", ".json", ".png"}
    assert [p for p in TRACKED if p.suffix == ".md"]
