"""Every relative link of the README and of docs/ leads somewhere: the file exists, and a
``#fragment`` names a heading of that file (GitHub's anchors: the heading's text in lower
case, its punctuation dropped, spaces as hyphens, ``-1``, ``-2`` after repeats). A page that
moves a section or renames a heading breaks the links to it without any other sign."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_LINK = re.compile(r"\]\(([^()\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _FENCE.sub("", page.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_slug_is_githubs():
    assert slug("Talking sites (`bench/protocols.py`)") == "talking-sites-benchprotocolspy"
    assert (
        slug("Issue 40's 2-core targets, 2026-11-27 at `b1e6afe`") == "issue-40s-2-core-targets-2026-11-27-at-b1e6afe"
    )
    assert slug("Price × cost: µs a site") == "price--cost-µs-a-site"


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    out = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        name = dest.relative_to(root) if dest.is_relative_to(root) else dest
        if not dest.exists():
            out.append(f"{target}: no file {name}")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            out.append(f"{target}: no heading with anchor #{fragment} in {name}")
    return out


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Two words\n\n[ok](#two-words) [ok](b.md#b) `[no](x.md)`\n")
    (tmp_path / "b.md").write_text("# B\n\n[gone](c.md) [moved](a.md#three-words) [web](https://x.org/y.md)\n")
    assert broken_links(tmp_path / "a.md", tmp_path) == []
    assert broken_links(tmp_path / "b.md", tmp_path) == [
        "c.md: no file c.md",
        "a.md#three-words: no heading with anchor #three-words in a.md",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path):
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
