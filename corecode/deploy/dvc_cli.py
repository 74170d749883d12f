"""DVC with the SSH remote's host key checked: ``python -m corecode.deploy.dvc_cli ARGS`` is ``dvc ARGS`` in which
every connection to the DVC remote verifies the server's host key against ``CORECODE_DVC_REMOTE_KNOWN_HOSTS`` (an
OpenSSH known_hosts file; deploy/services.sh writes one). Workers run DVC through it, and call
:func:`check_remote_host_key` before they open the remote's filesystem in their own process.

Written here because neither DVC nor its plugin offers it: dvc-ssh's remote options have no known_hosts, and sshfs,
which it connects with, passes ``known_hosts=None`` to asyncssh (host key check off) unless it is given one. The
plugin builds sshfs's arguments in ``SSHFileSystem._prepare_credentials``; :func:`check_remote_host_key` wraps that
method to add the file. Without the variable nothing changes (the local remote of ``make run`` has no SSH).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

KNOWN_HOSTS_ENV = "CORECODE_DVC_REMOTE_KNOWN_HOSTS"
HOST_KEY_ERRORS = ("host key is not trusted", "host key not verifiable", "hostkeynotverifiable")


def check_remote_host_key() -> str | None:
    """Make DVC's SSH remotes in this process verify the server's host key against ``$CORECODE_DVC_REMOTE_KNOWN_HOSTS``;
    returns the file, or None where the variable is not set. A file that does not exist is an error naming it."""
    path = os.environ.get(KNOWN_HOSTS_ENV)
    if not path:
        return None
    if not Path(path).is_file():
        raise FileNotFoundError(f"{KNOWN_HOSTS_ENV}={path}: no such known_hosts file")
    import dvc_ssh

    prepare = dvc_ssh.SSHFileSystem._prepare_credentials
    if not getattr(prepare, "checks_host_key", False):

        def with_known_hosts(self, **config):
            login = prepare(self, **config)
            login["known_hosts"] = os.environ.get(KNOWN_HOSTS_ENV) or path
            return login

        with_known_hosts.checks_host_key = True
        dvc_ssh.SSHFileSystem._prepare_credentials = with_known_hosts
    return path


def is_host_key_error(text: str) -> bool:
    """Whether DVC's or asyncssh's message says the server's host key was refused."""
    low = text.lower()
    return any(e in low for e in HOST_KEY_ERRORS)


def main() -> int:
    try:
        check_remote_host_key()
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from dvc.cli import main as dvc_main

    return dvc_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
