"""The PEP 517 build backend of the `spool` Python package: no dependency but cargo.

`pip install ./python` (in a checkout of the Spool repository) runs this in-tree backend
(`backend-path` in pyproject.toml): it builds the extension module with
`cargo build -p spool-python` in the repository's workspace and target directory, then
writes the wheel itself (a zip with the Python package, the module and its metadata).
Nothing is fetched from PyPI, so the install works offline with the Rust toolchain
present (the crates come from Cargo.lock, as for any build of the workspace).

Settings, from the environment:

- `SPOOL_PYTHON_PROFILE`: the cargo profile (default `release`). `dev` reuses the
  workspace's debug build (its dependencies, wasmtime among them, are built optimised:
  `[profile.dev.package."*"]`), which is what the tests use.
- `CARGO`: the cargo to run (default `cargo` on PATH); `CARGO_TARGET_DIR` as for cargo.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

NAME = "spool"
VERSION = "0.1.0"
HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE.parent  # python/
WORKSPACE = PACKAGE_DIR.parent  # the repository
CRATE = "spool-python"
LIB = "spool_native"


def _tag() -> str:
    """The wheel tag: CPython 3.9+ stable ABI on this platform."""
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"cp39-abi3-{platform}"


def _build_module() -> Path:
    """Runs cargo and returns the path of the built extension module."""
    profile = os.environ.get("SPOOL_PYTHON_PROFILE", "release")
    cargo = os.environ.get("CARGO", "cargo")
    command = [
        cargo,
        "build",
        "--package",
        CRATE,
        "--profile",
        profile,
        "--message-format",
        "json-render-diagnostics",
    ]
    print(f"spool build: {' '.join(command)} (in {WORKSPACE})", file=sys.stderr, flush=True)
    try:
        run = subprocess.run(
            command, cwd=WORKSPACE, stdout=subprocess.PIPE, text=True, check=False
        )
    except FileNotFoundError:
        raise RuntimeError(
            f"`{cargo}` was not found: building the spool package needs the Rust toolchain "
            "(https://rustup.rs)"
        ) from None
    if run.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed (exit {run.returncode})")
    module = None
    for line in run.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") != "compiler-artifact":
            continue
        if message.get("target", {}).get("name") != LIB:
            continue
        for filename in message.get("filenames", []):
            if filename.endswith((".so", ".dylib", ".dll")):
                module = Path(filename)
    if module is None:
        raise RuntimeError(f"cargo built no {LIB} library")
    return module


def _module_name() -> str:
    suffix = ".pyd" if sys.platform == "win32" else ".abi3.so"
    return f"spool/_native{suffix}"


def _metadata() -> str:
    readme = (PACKAGE_DIR / "README.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {VERSION}\n"
        "Summary: Spool: sessions and transcripts of AI agents, in Python\n"
        "License: MIT OR Apache-2.0\n"
        "Requires-Python: >=3.9\n"
        "Provides-Extra: agents\n"
        "Requires-Dist: openai-agents; extra == 'agents'\n"
        "Description-Content-Type: text/markdown\n"
        "\n"
        f"{readme}"
    )


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: dict[str, bytes]) -> str:
    tag = _tag()
    wheel_name = f"{NAME}-{VERSION}-{tag}.whl"
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\n"
        "Generator: spool_build\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    ).encode()
    files[f"{dist_info}/top_level.txt"] = f"{NAME}\n".encode()
    record = [_record_line(path, data) for path, data in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = Path(directory) / wheel_name
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith((".so", ".pyd")) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return wheel_name


def _python_files() -> dict[str, bytes]:
    files = {}
    for path in sorted((PACKAGE_DIR / NAME).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
            files[path.relative_to(PACKAGE_DIR).as_posix()] = path.read_bytes()
    return files


# -- PEP 517 hooks --------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = Path(metadata_directory) / f"{NAME}-{VERSION}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(_metadata(), encoding="utf-8")
    return dist_info.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    module = _build_module()
    files = _python_files()
    files[_module_name()] = module.read_bytes()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: the package directory on the path, the module built into it."""
    module = _build_module()
    target = PACKAGE_DIR / _module_name()
    target.write_bytes(module.read_bytes())
    files = {f"_{NAME}_editable.pth": f"{PACKAGE_DIR}\n".encode()}
    return _write_wheel(wheel_directory, files)
