"""What the benchmarks that measure two trees side by side share (``client_cycle.py --peer``,
``generate_share.py --peer``): one measurement run as a fresh process in a tree, its figures
read from the JSON object on its last line of output."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def run_json(command: list[str], tree: Path, env: Mapping[str, str] | None = None) -> Any:
    """Run ``command`` in ``tree`` (its working directory) and return the JSON value of its
    last line of output; a failed run raises ``CalledProcessError`` with its output."""
    out = subprocess.run(
        command, cwd=tree, env=env, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])
