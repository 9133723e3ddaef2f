"""The scripts behind docs/results/*.md, installed as ``gridemu.experiments`` (pyproject.toml
maps this folder): each runs from any folder as ``python -m gridemu.experiments.NAME`` and
imports its siblings by that package path. They write next to themselves (the .md pages and
img/), so run them from a checkout installed with ``pip install -e .``."""
