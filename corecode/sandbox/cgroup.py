"""A memory cgroup per pool worker, where the host lets us make one (root, cgroup v1 or v2 memory controller).

RLIMIT_AS bounds each process; a sample may start up to ``max_processes`` of them, so without a cgroup a fork-and-
allocate attack could take ``max_processes x memory_limit_mb``. The worker's cgroup caps the whole jail (zygote,
candidate, its children, its tmpfs scratch pages) and the kernel's OOM killer picks the largest process in it -- the
candidate's, the zygote is tiny. Best effort: when no cgroup can be made the rlimits still hold, and ``available``
says so.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

_ids = itertools.count()


def _own_memory_cgroup() -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            base = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            if (base / "memory.limit_in_bytes").exists():
                return base
    for line in lines:  # cgroup v2: "0::/path"
        if line.startswith("0::"):
            base = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
            if (base / "cgroup.subtree_control").exists():
                return base
    return None


def _remove_stale(base: Path) -> None:
    """Remove empty cgroups left by pools whose host process died without closing them."""
    # Our own cgroup, and its siblings (some hosts give every command its own cgroup).
    for path in [*base.glob("corecode-sbx-*-*"), *base.parent.glob("*/corecode-sbx-*-*")]:
        try:
            pid = int(path.name.split("-")[2])
            os.kill(pid, 0)
        except ProcessLookupError:
            MemoryCgroup._remove(path)
        except (ValueError, IndexError, PermissionError):
            pass


class MemoryCgroup:
    """``MemoryCgroup(limit_bytes)``; ``add(pid)`` moves a process in (its future children follow); ``close()``."""

    def __init__(self, limit_bytes: int):
        self.path: Path | None = None
        base = _own_memory_cgroup()
        if base is None or os.geteuid() != 0:
            return
        _remove_stale(base)
        path = base / f"corecode-sbx-{os.getpid()}-{next(_ids)}"
        try:
            path.mkdir()
            if (path / "memory.limit_in_bytes").exists():  # v1
                (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                swap = path / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    try:
                        swap.write_text(str(limit_bytes))
                    except OSError:
                        pass
            else:  # v2
                (path / "memory.max").write_text(str(limit_bytes))
                if (path / "memory.swap.max").exists():
                    (path / "memory.swap.max").write_text("0")
        except OSError:
            self._remove(path)
            return
        self.path = path

    @property
    def available(self) -> bool:
        return self.path is not None

    def add(self, pid: int) -> bool:
        if self.path is None:
            return False
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
            return True
        except OSError:
            return False

    def close(self) -> None:
        """Remove the cgroup; ``available`` stays True while it still has processes (call again)."""
        if self.path is not None and self._remove(self.path):
            self.path = None

    @staticmethod
    def _remove(path: Path) -> bool:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False
