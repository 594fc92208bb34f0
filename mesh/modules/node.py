"""The ``node`` module: the host facts every machine answers for itself (a node seat, SPEC §6).

Every tool reads, none changes anything, and each answers about this machine only, so all carry
the same annotations: read-only, not destructive, idempotent, closed world. The answers are
pydantic models, so each tool advertises an ``outputSchema`` and an agent can read fields rather
than parse text. psutil does the reading; its calls are quick but synchronous, so the tools are
plain functions, which FastMCP runs in a worker thread.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from datetime import UTC, datetime
from typing import Literal

import psutil
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel

__all__ = ["build_node_module"]

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

#: Filesystems that hold no disk: kernel interfaces, memory, and read-only package images.
#: ``disk_partitions(all=False)`` would drop overlay and ZFS roots too, so the list is ours.
PSEUDO_FILESYSTEMS = frozenset(
    {
        "autofs", "binfmt_misc", "bpf", "cgroup", "cgroup2", "configfs", "debugfs", "devpts",
        "devtmpfs", "efivarfs", "fusectl", "hugetlbfs", "mqueue", "nsfs", "proc", "pstore",
        "ramfs", "rpc_pipefs", "securityfs", "selinuxfs", "squashfs", "sysfs", "tmpfs",
        "tracefs", "fuse.lxcfs", "fuse.gvfsd-fuse", "fuse.portal",
    }
)  # fmt: skip


class HostName(BaseModel):
    hostname: str
    os: str
    kernel: str
    architecture: str


class Uptime(BaseModel):
    boot_time: datetime
    uptime_seconds: int


class Load(BaseModel):
    load_1m: float
    load_5m: float
    load_15m: float
    cpu_count: int
    physical_cpu_count: int | None


class Swap(BaseModel):
    total_bytes: int
    used_bytes: int
    free_bytes: int
    percent: float


class Memory(BaseModel):
    total_bytes: int
    available_bytes: int
    used_bytes: int
    percent: float
    swap: Swap


class Filesystem(BaseModel):
    mountpoint: str
    device: str
    fstype: str
    total_bytes: int
    used_bytes: int
    free_bytes: int
    percent: float


class DiskUsage(BaseModel):
    filesystems: list[Filesystem]


class ListeningPort(BaseModel):
    protocol: Literal["tcp", "udp"]
    address: str
    port: int
    pid: int | None
    process: str | None


class ListeningPorts(BaseModel):
    ports: list[ListeningPort]


def build_node_module() -> FastMCP:
    """The ``node`` module's server: hostname, uptime, load, memory, disk usage, listening ports."""
    mcp = FastMCP("node", mask_error_details=True)

    @mcp.tool(title="Host name and OS", annotations=READ_ONLY)
    def hostname() -> HostName:
        """This machine's host name, operating system, kernel release and CPU architecture."""
        return HostName(
            hostname=socket.gethostname(),
            os=platform.system(),
            kernel=platform.release(),
            architecture=platform.machine(),
        )

    @mcp.tool(title="Uptime", annotations=READ_ONLY)
    def uptime() -> Uptime:
        """How long this machine has been up, in seconds, and when it booted (UTC)."""
        booted = psutil.boot_time()
        return Uptime(
            boot_time=datetime.fromtimestamp(booted, UTC),
            uptime_seconds=max(0, int(time.time() - booted)),
        )

    @mcp.tool(title="CPU load average", annotations=READ_ONLY)
    def load() -> Load:
        """Load average over 1, 5 and 15 minutes with the CPU count, to judge how busy it is."""
        one, five, fifteen = psutil.getloadavg()
        return Load(
            load_1m=round(one, 2),
            load_5m=round(five, 2),
            load_15m=round(fifteen, 2),
            cpu_count=psutil.cpu_count() or 1,
            physical_cpu_count=psutil.cpu_count(logical=False),
        )

    @mcp.tool(title="Memory and swap", annotations=READ_ONLY)
    def memory() -> Memory:
        """RAM total, available, used and percent used, and the same for swap, in bytes."""
        ram, swap = psutil.virtual_memory(), psutil.swap_memory()
        return Memory(
            total_bytes=ram.total,
            available_bytes=ram.available,
            used_bytes=ram.used,
            percent=ram.percent,
            swap=Swap(
                total_bytes=swap.total,
                used_bytes=swap.used,
                free_bytes=swap.free,
                percent=swap.percent,
            ),
        )

    @mcp.tool(title="Disk usage", annotations=READ_ONLY)
    def disk_usage() -> DiskUsage:
        """Size, used and free space of each mounted disk filesystem (free space, full disks)."""
        return DiskUsage(filesystems=_filesystems())

    @mcp.tool(title="Listening ports", annotations=READ_ONLY)
    def listening_ports() -> ListeningPorts:
        """TCP and UDP ports this machine listens on, with the owning process when visible."""
        return ListeningPorts(ports=_listening_ports())

    return mcp


def _filesystems() -> list[Filesystem]:
    found: dict[str, Filesystem] = {}
    for part in psutil.disk_partitions(all=True):
        if part.fstype in PSEUDO_FILESYSTEMS or part.mountpoint in found:
            continue
        if not os.path.isdir(part.mountpoint):  # bind-mounted files (/etc/hosts in containers)
            continue
        try:
            usage = psutil.disk_usage(part.mountpoint)
        except OSError:  # not ours to read, or gone since listed
            continue
        found[part.mountpoint] = Filesystem(
            mountpoint=part.mountpoint,
            device=part.device,
            fstype=part.fstype,
            total_bytes=usage.total,
            used_bytes=usage.used,
            free_bytes=usage.free,
            percent=usage.percent,
        )
    return sorted(found.values(), key=lambda fs: fs.mountpoint)


def _listening_ports() -> list[ListeningPort]:
    try:
        sockets = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:  # macOS lists sockets to root only
        raise ToolError("this node may not list the machine's sockets") from None
    ports: set[tuple[int, Literal["tcp", "udp"], str, int]] = set()
    for conn in sockets:
        if not conn.laddr or conn.raddr:  # UDP "listens" by being bound and unconnected
            continue
        if conn.type == socket.SOCK_STREAM and conn.status == psutil.CONN_LISTEN:
            ports.add((conn.laddr.port, "tcp", conn.laddr.ip, conn.pid or 0))
        elif conn.type == socket.SOCK_DGRAM:
            ports.add((conn.laddr.port, "udp", conn.laddr.ip, conn.pid or 0))
    names = {pid: _process_name(pid) for *_, pid in ports if pid}
    return [
        ListeningPort(
            protocol=protocol, address=address, port=port, pid=pid or None, process=names.get(pid)
        )
        for port, protocol, address, pid in sorted(ports)
    ]


def _process_name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
