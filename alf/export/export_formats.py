"""The file formats of exported policies (``alf.export.policy_export``), importable without
torch, so that ``alf.bin.export`` checks its flags at once."""

from __future__ import annotations

import os

FORMATS = ("onnx", "torchscript", "torch_export")
#: the name of the metadata embedded in an exported file (a JSON text: ``alf.export.runtime``)
METADATA_KEY = "alf_export.json"
METADATA_VERSION = 1
EXTENSIONS = {".onnx": "onnx", ".pt": "torchscript", ".ts": "torchscript", ".pt2": "torch_export"}


class ExportError(ValueError):
    """The policy cannot be exported (one line saying why)."""


def format_of(path: str, fmt: str | None = None) -> str:
    """The export format: ``fmt`` when given, else from ``path``'s extension."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise ExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        return fmt
    ext = os.path.splitext(path)[1].lower()
    if ext not in EXTENSIONS:
        raise ExportError(
            f"cannot tell the format of --output {path}: use an extension of "
            f"{', '.join(EXTENSIONS)} or give --format"
        )
    return EXTENSIONS[ext]
