"""docs/results/dedicated_game.py: a profile's result is kept under its commit, so a stopped
sweep resumes; a checkout with changed files keeps nothing."""

from __future__ import annotations

import pytest

from gridemu.experiments import dedicated_game as game


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(game, "_cache", tmp_path / "kept")
    monkeypatch.setattr(game, "git_commit", lambda where: {"commit": "abc", "modified": False})
    return tmp_path / "kept"


def test_a_kept_profile_is_not_run_again(cache, monkeypatch):
    first = game.play("follow", {}, rounds=2)
    assert len(list(cache.glob("*.json"))) == 1
    monkeypatch.setattr(game.emulator, "run", lambda *a, **k: pytest.fail("ran again"))
    assert game.play("follow", {}, rounds=2) == first
    # another profile, seed or commit is another entry
    monkeypatch.setattr(game, "git_commit", lambda where: {"commit": "def", "modified": False})
    with pytest.raises(pytest.fail.Exception):
        game.play("follow", {}, rounds=2)


def test_a_changed_checkout_keeps_nothing(cache, monkeypatch):
    monkeypatch.setattr(game, "git_commit", lambda where: {"commit": "abc", "modified": True})
    game.play("follow", {}, rounds=2)
    assert not cache.exists()
