"""The statements in README.md and docs/ that the code can make itself: which drivers there are,
which ones a plain run takes, what each experiment costs. Each sits between two markers,

    <!-- generated:NAME -->
    …
    <!-- /generated:NAME -->

and `clientlab docs` writes it anew from the manifests and experiment files; `clientlab docs
--check` says which are stale (a test runs it), so no figure in the docs drifts from the code.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

from clientlab import paths
from clientlab.drivers import manifest, runtimes

LANGUAGE_ORDER = ("c", "cpp", "cli", "python", "php", "perl", "go", "rust", "node", "java", "kotlin", "ruby")
LANGUAGE_NAMES = {"c": "C", "cli": "the curl command", "python": "Python", "php": "PHP", "perl": "Perl",
                  "go": "Go", "rust": "Rust", "node": "Node.js", "java": "Java", "ruby": "Ruby",
                  "cpp": "C++", "kotlin": "Kotlin", "bun": "Bun", "deno": "Deno"}
FILES = ("README.md", "docs/experiments.md", "docs/driver-protocol.md")
_BLOCK = re.compile(r"(<!-- generated:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /generated:(?P=name) -->)", re.S)


def _drivers() -> list[manifest.Driver]:
    return manifest.discover()[0]


def _language_name(language: str) -> str:
    return LANGUAGE_NAMES.get(language, language)


def _by_language(drivers: list[manifest.Driver]) -> dict[str, list[manifest.Driver]]:
    languages = sorted({d.manifest.language for d in drivers},
                       key=lambda lang: (LANGUAGE_ORDER.index(lang) if lang in LANGUAGE_ORDER else 99, lang))
    return {lang: sorted((d for d in drivers if d.manifest.language == lang), key=lambda d: d.id)
            for lang in languages}


WIDTH = 80   # the docs read in a terminal of 80 columns too


def _item(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent="- ", subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


def drivers_by_language() -> str:
    """How many drivers in how many languages, and each language's clients by id."""
    drivers = _drivers()
    groups = _by_language(drivers)
    languages = [lang for lang in groups if lang != "cli"]
    lines = [f"{len(drivers)} drivers in {len(languages)} languages"
             + (" plus the curl command" if "cli" in groups else "") + ":", ""]
    for lang, ds in groups.items():
        lines += _item(f"**{_language_name(lang)}**: " + ", ".join(d.id.split("-", 1)[1] + _also_on(d) for d in ds))
    return "\n".join(lines) + "\n"


def _also_on(d: manifest.Driver) -> str:
    """` (also on Bun, Deno)` for a driver that runs on other runtimes' lines too."""
    names = [runtimes.NAMES.get(kind, kind) for kind in d.manifest.also_on]
    return f" (also on {', '.join(names)})" if names else ""


def default_drivers() -> str:
    """The drivers a plain `clientlab run` takes."""
    chosen = [d.id for d in manifest.select(_drivers(), None)]
    text = (f"A plain `clientlab run` takes {len(chosen)} drivers, the most-used client of each language: "
            + ", ".join(f"`{d}`" for d in chosen) + ".")
    return "\n".join(textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False)) + "\n"


def experiments_table() -> str:
    """Each shipped experiment: its question, cells and time budgets, full and quick form."""
    from clientlab.experiment import spec
    from clientlab.experiment.plan import plan

    lines: list[str] = []
    for e in spec.discover().found:
        full, quick = len(plan(e, quick=False)), len(plan(e, quick=True))
        budget = (f"{(e.time_budget or 0) / 60:g} min budget ({(e.quick_time_budget or 0) / 60:g} quick)"
                  if e.time_budget else "no budget")
        where = "" if e.in_all else "; by name only, not in `experiment all`"
        lines += _item(f"`{e.name}`: {e.title} — {full} cells ({quick} quick), {budget}{where}.")
    everything = [e for e in spec.discover().found if e.in_all]
    total = sum(e.time_budget or 0 for e in everything) / 60
    quick_total = sum(e.quick_time_budget or 0 for e in everything) / 60
    lines += [""] + textwrap.wrap(
        f"`experiment all` runs {len(everything)} of them within {total:g} minutes of budgets ({quick_total:g} "
        "quick); a cell past the budget stops at its minimum of trials.", WIDTH)
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "drivers-by-language": drivers_by_language,
    "default-drivers": default_drivers,
    "experiments": experiments_table,
}


def rewrite(text: str) -> tuple[str, list[str]]:
    """The text with every generated block written anew; the names of the blocks that changed.
    A block whose name no generator has is an error, named."""
    changed: list[str] = []

    def fill(m: re.Match) -> str:
        name = m["name"]
        if name not in GENERATORS:
            raise KeyError(f"no generator for the block 'generated:{name}' (known: {', '.join(GENERATORS)})")
        body = GENERATORS[name]()
        if body != m["body"]:
            changed.append(name)
        return m.group(1) + body + m.group(4)

    return _BLOCK.sub(fill, text), changed


def update(check: bool) -> list[tuple[Path, list[str]]]:
    """Every file's stale blocks (rewritten unless `check`), as (file, block names)."""
    stale = []
    for rel in FILES:
        path = paths.ROOT / rel
        if not path.exists():
            continue
        text = path.read_text()
        new, changed = rewrite(text)
        if changed:
            stale.append((path, changed))
            if not check:
                path.write_text(new)
    return stale
