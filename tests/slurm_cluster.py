"""A single-node Slurm for the shard tests: munged, slurmctld and slurmd in a temporary directory.

Debian's ``slurm-wlm`` and ``munge``, configured from scratch: a munge key and socket of
their own (``AuthInfo=socket=…``), free loopback ports, state and logs in the directory,
``proctrack/linuxproc`` and ``task/none`` (no cgroups needed). ``slurmd`` must run as root
to start jobs, as CI does; munged runs as the ``munge`` user, which the package creates.
Clients find the cluster through ``SLURM_CONF`` (:attr:`SlurmCluster.env`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .processes import alive, wait_until

__all__ = ["SLURM_REASON", "SlurmCluster", "slurm_missing"]

SLURM_REASON = "needs Debian's slurm-wlm and munge (apt-get install slurm-wlm munge) and root"
_BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")


def slurm_missing() -> str | None:
    """Why a Slurm cannot be started here, or ``None``."""
    lacking = [name for name in _BINARIES if shutil.which(name) is None]
    if lacking:
        return f"{', '.join(lacking)} not found: {SLURM_REASON}"
    if os.geteuid() != 0:
        return f"slurmd runs jobs as their users only as root: {SLURM_REASON}"
    import pwd

    try:
        pwd.getpwnam("munge")
    except KeyError:
        return f"no munge user (the munge package creates it): {SLURM_REASON}"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_CONF = """\
ClusterName=legaleval
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """munged + slurmctld + slurmd; :meth:`stop` ends exactly the processes it started."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="legaleval-slurm-"))
        self.root.chmod(0o755)
        self.conf = self.root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.pid_files = [self.root / "munge" / "munged.pid", self.root / "slurmctld.pid",
                          self.root / "slurmd.pid"]  # fmt: skip

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr[-1500:]}")

    def start(self) -> SlurmCluster:
        munge = self.root / "munge"
        for folder in (munge, self.root / "state", self.root / "spool"):
            folder.mkdir(mode=0o755)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        shutil.chown(key, "munge", "munge")
        shutil.chown(munge, "munge", "munge")
        self._run(["runuser", "-u", "munge", "--", "munged", f"--socket={munge}/munge.sock",
                   f"--key-file={key}", f"--pid-file={munge}/munged.pid",
                   f"--log-file={munge}/munged.log", f"--seed-file={munge}/seed"])  # fmt: skip
        conf = _CONF.format(
            host=socket.gethostname(), root=self.root, ctld_port=_free_port(),
            d_port=_free_port(), cpus=os.cpu_count() or 1,
        )  # fmt: skip
        self.conf.write_text(conf, encoding="utf-8")
        self._run(["slurmctld", "-f", str(self.conf)])
        self._run(["slurmd", "-f", str(self.conf)])

        def idle() -> bool:
            shown = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                                   env=self.env, timeout=30)  # fmt: skip
            return shown.returncode == 0 and shown.stdout.strip() in ("idle", "mix")

        if not wait_until(idle, 60):
            logs = "".join(p.read_text(errors="replace")[-1500:] for p in
                           (self.root / "slurmctld.log", self.root / "slurmd.log") if p.exists())
            self.stop()
            raise RuntimeError(f"the Slurm node did not become idle:\n{logs}")
        return self

    def stop(self) -> None:
        pids = []
        for pid_file in self.pid_files:
            try:
                pids.append(int(pid_file.read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
