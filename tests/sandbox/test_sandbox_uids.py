"""As root, each live pool runs its workers as its own block of host uids (isolation.claim_uid_block), so pools at once
on one host do not share RLIMIT_NPROC budgets."""

from __future__ import annotations

import os

import psutil
import pytest
from sandbox_helpers import MIX_REFERENCE

from corecode.sandbox import Sandbox, SandboxParams
from corecode.sandbox.isolation import UID_BLOCK, UID_BLOCKS, claim_uid_block


def test_a_block_is_held_until_its_descriptor_closes(tmp_path):
    first, fd1 = claim_uid_block(61000, str(tmp_path))
    second, fd2 = claim_uid_block(61000, str(tmp_path))
    assert (first, second) == (61000, 61000 + UID_BLOCK)
    os.close(fd1)
    again, fd3 = claim_uid_block(61000, str(tmp_path))
    assert again == 61000
    os.close(fd2)
    os.close(fd3)


def test_every_block_held_shares_the_base_with_a_warning(tmp_path):
    held = [claim_uid_block(61000, str(tmp_path))[1] for _ in range(UID_BLOCKS)]
    with pytest.warns(RuntimeWarning, match="uid blocks are held"):
        assert claim_uid_block(61000, str(tmp_path)) == (61000, None)
    for fd in held:
        os.close(fd)


def _uids_of_jails(sb: Sandbox) -> set[int]:
    return {psutil.Process(w.proc.pid).uids().real for w in sb._all_workers}


@pytest.mark.skipif(
    os.geteuid() != 0, reason="the uid drop happens only when started as root (CI and make test run as root)"
)
def test_two_live_pools_run_as_disjoint_uids(mix_problem):
    params = SandboxParams(workers=2, cache_dir=None)
    with Sandbox(params) as one, Sandbox(params) as two:
        assert one.run(mix_problem, MIX_REFERENCE).passed and two.run(mix_problem, MIX_REFERENCE).passed
        assert not one.worker_uids & two.worker_uids
        assert _uids_of_jails(one) <= one.worker_uids and _uids_of_jails(two) <= two.worker_uids
        taken = one.worker_uids
    with Sandbox(params) as three:  # the closed pools gave their blocks back
        assert three.run(mix_problem, MIX_REFERENCE).passed
        assert min(three.worker_uids) <= min(taken)
