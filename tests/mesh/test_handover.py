"""``mesh.handover``: a process runs itself anew in place, its secrets on a pipe, none of them in
its environment block. The node itself, with a stdio module reading ``/proc``:
``tests/security/test_node_secrets.py``."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from mesh import handover

ROOT = Path(__file__).resolve().parents[2]

#: Run twice in one process: first with the secrets in its environment, then anew without them.
PROGRAM = """
import json, os, sys
from mesh import handover
got = handover.take_over()
if not got:
    print(os.getpid(), file=sys.stderr, flush=True)
    wanted = {name: os.environ[name] for name in ("BIG_SECRET", "SMALL_SECRET")}
    handover.keep_out_of_environment(wanted, sys.orig_argv, reexecute=True)
    raise SystemExit("not run anew")
block = open(f"/proc/{os.getpid()}/environ", "rb").read().decode()
print(json.dumps({
    "pid": os.getpid(),
    "got": got,
    "in_block": [name for name, value in got.items() if value in block],
    "kept": os.environ.get("KEPT"),
}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_secrets_reach_the_new_image_and_leave_the_block() -> None:
    given = {"BIG_SECRET": secrets.token_hex(60_000), "SMALL_SECRET": secrets.token_hex(16)}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env={"PATH": os.environ.get("PATH", ""), "KEPT": "yes", **given},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["pid"] == int(done.stderr.split()[0])  # the same process, run anew
    assert seen["got"] == given  # 120 KB: past a pipe's first 64 KiB
    assert seen["in_block"] == []
    assert seen["kept"] == "yes"  # the rest of the environment stays


def test_without_running_anew_the_variables_leave_os_environ() -> None:
    environ = {"A_SECRET": "x", "OTHER": "y"}
    handover.keep_out_of_environment({"A_SECRET": "x"}, [], reexecute=False, environ=environ)
    assert environ == {"OTHER": "y"}


@pytest.mark.parametrize("named", ["nonsense", "a file", "999999"])
def test_a_descriptor_that_is_no_pipe_is_refused(named: str, tmp_path: Path) -> None:
    with (tmp_path / "f").open("w") as file:
        fd = str(file.fileno()) if named == "a file" else named
        with pytest.raises(handover.HandoverFailed, match="names no pipe"):
            handover._read({handover.SECRETS_FD: fd})
