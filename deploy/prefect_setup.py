"""The Prefect objects a share-nothing deployment needs, created (or updated) idempotently on the server of
``PREFECT_API_URL``; deploy/services.sh runs it after the server is up.

- work pools ``cpu`` and ``gpu`` (process pools), ``gpu`` with a concurrency limit (the
  number of GPU workers: each worker runs one flow at a time, ``prefect worker start --limit 1``);
- the task tag limit ``gpu`` (training stages carry that tag), the same number;
- the automation ``corecode: crash flow runs of a lost worker``: a flow run that sends no heartbeat
  (``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``) for ``--lost-after`` seconds is set Crashed, so the flow that submitted it
  resubmits it to another worker (Prefect's recipe for "zombie" flow runs: a worker host that dies reports nothing);
- the result storage block ``remote-file-system/corecode-results``: persisted task and flow results on the DVC
  remote's SSH server (``prefect-results/`` beside the remote directory), readable from every host. Workers select it
  with ``PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK`` (services.env).

Hand-written because Prefect's CLI has no idempotent "create or update" for pools, limits and automations.
"""

from __future__ import annotations

import argparse
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

POOLS = ("cpu", "gpu")
LOST_WORKER_AUTOMATION = "corecode: crash flow runs of a lost worker"
RESULTS_BLOCK = "corecode-results"


def setup_pools(gpu_limit: int) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate, WorkPoolUpdate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        for name in POOLS:
            limit = gpu_limit if name == "gpu" else None
            try:
                client.read_work_pool(name)
                client.update_work_pool(name, WorkPoolUpdate(concurrency_limit=limit))
            except ObjectNotFound:
                client.create_work_pool(WorkPoolCreate(name=name, type="process", concurrency_limit=limit))
        client.create_concurrency_limit(tag="gpu", concurrency_limit=gpu_limit)  # upsert by tag


def setup_lost_worker_automation(lost_after_s: int) -> None:
    from prefect.automations import Automation
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    wanted = Automation(
        name=LOST_WORKER_AUTOMATION,
        description="A flow run without a heartbeat for a while lost its worker: mark it Crashed.",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={
                "prefect.flow-run.heartbeat",
                "prefect.flow-run.Completed",
                "prefect.flow-run.Failed",
                "prefect.flow-run.Cancelled",
                "prefect.flow-run.Crashed",
            },
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=lost_after_s),
        ),
        actions=[ChangeFlowRunState(state=StateType.CRASHED, message="no heartbeat: its worker was lost")],
    )
    try:
        current = Automation.read(name=LOST_WORKER_AUTOMATION)
    except ValueError:
        current = None
    if current is None:
        wanted.create()
    else:
        wanted.id = current.id
        wanted.update()


def setup_results_block() -> None:
    """Persisted results on the DVC remote's SSH server (fsspec's ssh filesystem, sshfs, as dvc-ssh uses)."""
    from prefect.filesystems import RemoteFileSystem

    remote = urlsplit(os.environ["CORECODE_DVC_REMOTE_URL"])
    base = f"ssh://{remote.username}@{remote.hostname}:{remote.port or 22}{Path(remote.path).parent}/prefect-results"
    settings = {  # fsspec builds the filesystem from these alone: the host is not read from the base path
        "host": remote.hostname,
        "port": remote.port or 22,
        "username": remote.username,
        "client_keys": [os.environ["CORECODE_DVC_REMOTE_KEYFILE"]],
        "known_hosts": os.environ["CORECODE_DVC_REMOTE_KNOWN_HOSTS"],
    }
    RemoteFileSystem(basepath=base, settings=settings).save(RESULTS_BLOCK, overwrite=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu-pool-limit", type=int, default=2, help="flow runs at once in the gpu pool (GPU workers)")
    ap.add_argument("--lost-after", type=int, default=90, help="seconds without a heartbeat before Crashed")
    args = ap.parse_args()
    setup_pools(args.gpu_pool_limit)
    setup_lost_worker_automation(args.lost_after)
    setup_results_block()


if __name__ == "__main__":
    main()
