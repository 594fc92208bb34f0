"""Any benchmark of this tree beside the same benchmark of another git revision, in turns.

The machines are shared and noisy: a figure means something only next to its baseline measured
at the same time. This runs the benchmark of this tree and of ``--baseline REV`` (extracted with
``git archive`` into a temporary folder, with ``../shared`` beside it, so each imports its own
code) one after the other, ``--rounds`` times, swapping which goes first each round. It then prints
each line of this tree's output with the median of every figure over the rounds, followed by
``×R`` — the ratio of this tree's median to the baseline's — for each figure whose line reads
the same in both outputs but for its figures. A line that differs otherwise is printed from both.

Usage: python benchmarks/side_by_side.py --baseline REV [--rounds N] -- SCRIPT [ARGS...]
e.g.   python benchmarks/side_by_side.py --baseline HEAD~3 -- benchmarks/search_scale.py \\
           --sizes 100000 --no-peer --no-mcp
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A figure in a benchmark's output: a decimal number, possibly signed, with thousands commas,
#: standing alone or as a ratio (``1.68x``).
FIGURE = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?!(?!x\b)[\w.])")


def _figures(line: str) -> tuple[str, list[float]]:
    """A line's shape (its figures replaced by ``#``) and its figures."""
    figures = [float(found.replace(",", "")) for found in FIGURE.findall(line)]
    return FIGURE.sub("#", line), figures


def _same(shape: str, other: str) -> bool:
    """Whether two shapes read alike: figures padded to a width move the spaces around them."""
    return shape.split() == other.split()


def _median_lines(outputs: list[list[str]]) -> list[tuple[str, list[float] | None]]:
    """Each line of the first output, with the median of each figure over every output whose
    line there has the same shape; None where the outputs' lines differ in shape."""
    lines: list[tuple[str, list[float] | None]] = []
    for number, line in enumerate(outputs[0]):
        shape, _ = _figures(line)
        parsed = [_figures(out[number]) for out in outputs if number < len(out)]
        if len(parsed) != len(outputs) or any(not _same(other, shape) for other, _ in parsed):
            lines.append((line, None))
            continue
        lines.append(
            (
                shape,
                [statistics.median(column) for column in zip(*(f for _, f in parsed), strict=True)],
            )
        )
    return lines


def _filled(shape: str, figures: list[float], ratios: list[float | None] | None = None) -> str:
    """``shape`` with its ``#`` replaced by ``figures`` (and, given, each ratio after it)."""
    pieces = shape.split("#")
    text = pieces[0]
    for index, piece in enumerate(pieces[1:]):
        value = figures[index]
        text += f"{value:,.0f}" if value.is_integer() and abs(value) >= 1000 else f"{value:g}"
        if ratios is not None and ratios[index] is not None:
            text += f" (×{ratios[index]:.2f})"
        text += piece
    return text


def _run(tree: Path, script: str, arguments: list[str]) -> list[str]:
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(tree / script), *arguments],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"{script} of {tree} exited {done.returncode}")
    return [line for line in done.stdout.splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to run beside this")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("script", help="the benchmark, relative to the tree: benchmarks/X.py")
    parser.add_argument("arguments", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    revision = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", options.baseline],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="meshnav-baseline-") as folder:
        baseline = Path(folder) / "tree"
        baseline.mkdir()
        (Path(folder) / "shared").symlink_to(
            os.environ.get("MESHNAV_SHARED") or ROOT.parent / "shared"
        )
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
        ours: list[list[str]] = []
        theirs: list[list[str]] = []
        for turn in range(options.rounds):
            order = [(ROOT, ours), (baseline, theirs)]
            for tree, outputs in order if turn % 2 == 0 else reversed(order):
                outputs.append(_run(tree, options.script, options.arguments))
    print(f"{options.script} {' '.join(options.arguments)}")
    print(
        f"this tree beside {revision}, medians of {options.rounds} rounds; (×R) = this / {revision}"
    )
    for (shape, figures), (their_shape, before) in zip(
        _median_lines(ours), _median_lines(theirs), strict=False
    ):
        if figures is None or before is None or not _same(their_shape, shape):
            print(f"  this: {shape if figures is None else _filled(shape, figures)}")
            print(
                f"  {revision}: {their_shape if before is None else _filled(their_shape, before)}"
            )
            continue
        ratios = [None if b == 0 else f / b for f, b in zip(figures, before, strict=True)]
        print(_filled(shape, figures, ratios))


if __name__ == "__main__":
    main()
