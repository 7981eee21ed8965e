"""Cached numba kernels are dropped when any module of the package changes."""

from __future__ import annotations

import os

from neardup._kernels.cache import drop_stale_kernels


def test_cached_kernels_are_dropped_after_a_module_changes(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "b.py").write_text("y = 2\n")
    kernels = [pkg / "__pycache__" / name for name in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc")]
    for k in kernels:
        k.write_bytes(b"cached")
    assert drop_stale_kernels(pkg)  # no stamp yet: drop, then stamp
    assert not any(k.exists() for k in kernels)
    for k in kernels:
        k.write_bytes(b"cached")
    assert not drop_stale_kernels(pkg)  # nothing changed: keep
    assert all(k.exists() for k in kernels)
    st = (pkg / "b.py").stat()  # another module changes
    (pkg / "b.py").write_text("y = 3\n")
    os.utime(pkg / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert drop_stale_kernels(pkg)
    assert not any(k.exists() for k in kernels)


def test_unwritable_or_missing_places_are_ignored(tmp_path):
    assert not drop_stale_kernels(tmp_path / "does-not-exist")


def test_read_only_install_gets_a_temporary_cache(tmp_path):
    from neardup._kernels.cache import choose_cache_dir

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    env: dict = {}
    assert choose_cache_dir(pkg, env, str(tmp_path)) is None and env == {}  # writable package: numba's default
    # unwritable stands for missing here (root ignores permission bits): no package dir, no user cache
    gone = tmp_path / "gone"
    assert choose_cache_dir(gone / "pkg", env, str(gone / "home" / ".cache")) is not None
    assert os.access(env["NUMBA_CACHE_DIR"], os.W_OK)
    user = {"NUMBA_CACHE_DIR": "/somewhere"}  # the user's choice is honoured
    assert choose_cache_dir(gone / "pkg", user, str(gone)) is None and user["NUMBA_CACHE_DIR"] == "/somewhere"
