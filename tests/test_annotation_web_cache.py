"""The admin page's statistics cache: keyed by the ratings' version, stale values served while a
background refresh runs (real threads, no timing assertions)."""

from __future__ import annotations

import threading

from evalpipe.annotation.web.review import VersionCache


def test_values_are_reused_until_the_version_changes():
    version = [1]
    calls = []
    cache = VersionCache(lambda: version[0])
    compute = lambda: calls.append(version[0]) or len(calls)  # noqa: E731
    assert cache.get("a", compute) == 1
    assert cache.get("a", compute) == 1
    version[0] = 2
    assert cache.get("a", compute) == 2
    assert calls == [1, 2]


def test_a_stale_value_is_served_at_once_and_refreshed_in_the_background():
    version = [1]
    release = threading.Event()
    started = threading.Event()

    def slow() -> str:
        if version[0] == 2:
            started.set()
            assert release.wait(10)
        return f"v{version[0]}"

    cache = VersionCache(lambda: version[0])
    assert cache.get_stale_ok("agreement", slow) == ("v1", True)
    version[0] = 2
    # The old value comes back immediately, marked stale, while the refresh is blocked.
    assert cache.get_stale_ok("agreement", slow) == ("v1", False)
    assert started.wait(10)
    assert cache.get_stale_ok("agreement", slow) == ("v1", False)  # still one refresh only
    release.set()
    cache.wait()
    assert cache.get_stale_ok("agreement", slow) == ("v2", True)
