"""setup.py's console scripts ``alf-train`` / ``alf-play`` and extras, read without installing.

The metadata comes from running setup.py up to its ``setup()`` call (no build, nothing
written); each console script is then loaded and called as an installed one would be.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_READ_SETUP = """\
import json

import setuptools  # noqa: F401 (provides distutils on Python >= 3.12)
from distutils.core import run_setup

dist = run_setup("setup.py", stop_after="init")
print(json.dumps({
    "console_scripts": dist.entry_points["console_scripts"],
    "extras": dist.extras_require,
    "requires": dist.install_requires,
}))
"""

_CALL_SCRIPT = """\
import sys
from importlib.metadata import EntryPoint

name, value = sys.argv[1].split(" = ")
run = EntryPoint(name, value, "console_scripts").load()
sys.argv = [name, *sys.argv[2:]]
sys.exit(run())
"""


def _subprocess(args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


@pytest.fixture(scope="module")
def metadata():
    result = _subprocess(["-c", _READ_SETUP], cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_setup_declares_console_scripts_and_dev_extra(metadata):
    assert metadata["console_scripts"] == [
        "alf-train = alf.bin.train:run",
        "alf-play = alf.bin.play:run",
        "alf-export = alf.bin.export:run",
        "alf-plot = alf.bin.plot:run",
    ]
    assert metadata["extras"]["dev"] == ["py-spy>=0.3.14"]
    assert metadata["extras"]["wandb"] == ["wandb>=0.17"]
    assert metadata["extras"]["onnx"] == ["onnx>=1.16", "onnxscript>=0.2", "onnxruntime>=1.18"]
    assert metadata["extras"]["plot"] == ["matplotlib>=3.7"]
    assert "torch>=2.2" in metadata["requires"]


@pytest.mark.parametrize("script", [0, 1, 2])
def test_console_scripts_run_their_cli(metadata, script, tmp_path):
    entry = metadata["console_scripts"][script]
    name, module = entry.split(" = ")[0], entry.split(" = ")[1].split(":")[0]
    # absl prints the flags of every module and exits with status 1 on --helpfull
    shown = _subprocess(["-c", _CALL_SCRIPT, entry, "--helpfull"], cwd=str(tmp_path))
    assert shown.returncode == 1, shown.stderr[-3000:]
    assert f"USAGE: {name} [flags]" in shown.stdout
    assert f"\n{module}:\n" in shown.stdout and "--root_dir:" in shown.stdout
    missing = _subprocess(["-c", _CALL_SCRIPT, entry], cwd=str(tmp_path))
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [f"{module}: error: --root_dir is required"]


def test_alf_plot_console_script(metadata, tmp_path):
    entry = metadata["console_scripts"][3]
    shown = _subprocess(["-c", _CALL_SCRIPT, entry, "--help"], cwd=str(tmp_path))
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "usage: alf.bin.plot" in shown.stdout and "--root_dirs DIR [DIR ...]" in shown.stdout
    missing = _subprocess(["-c", _CALL_SCRIPT, entry], cwd=str(tmp_path))
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "alf.bin.plot: error: the following arguments are required: --root_dirs, --output"
    ]
