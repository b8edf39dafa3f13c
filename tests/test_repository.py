"""Repository hygiene: no absolute path of a developer's machine in any committed file."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# a work, root or home/<user> folder at the top of the file system; written with [o] so that
# this line does not match itself
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:w[o]rk|r[o]ot|h[o]me/[a-z_][\w-]*)/[\w.-]")


def committed_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("kein Git-Checkout")
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_machine_paths_in_committed_files():
    found = []
    for path in committed_files():
        if not path.is_file() or path.suffix in {".png", ".pdf", ".docx", ".gguf", ".db"}:
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in MACHINE_PATH.finditer(text)]
    assert found == []
