#!/usr/bin/env bash
# The GPU check, one script for one GPU machine (meant to finish within 8 minutes on an H100
# with 16 cores): the machine and versions, every alf module imported, the CUDA tests
# (tests/cuda and the fake-device test), then the CPU-vs-CUDA throughput A/B
# (benchmarks/gpu_throughput.py).
# A summary is printed and written as one compact JSON file, gpu_check.json, in the folder
# given as the first argument, else $OUT, else benchmarks/results.
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]
#
# GPU_CHECK_CPU_ONLY=1 runs it without a GPU (the CUDA tests skip; a quick CPU-only
# throughput run). Without network, alf's missing dependencies (gymnasium, gin-config,
# optree, ...) are installed from the wheels in .whl/ (made by benchmarks/gpu_wheels.sh).
# Exit status: 0 when the tests and the throughput run passed.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
out_dir=${1:-${OUT:-benchmarks/results}}
mkdir -p "$out_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpu_only=${GPU_CHECK_CPU_ONLY:-0}

echo "== machine"
gpu="none"
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)
fi
echo "GPU: $gpu; $(nproc) CPU cores"
if ! python3 -c "import gymnasium, gin, optree" 2>/dev/null; then
  if ! ls .whl/*.whl >/dev/null 2>&1; then
    echo "gpu_check: error: gymnasium, gin-config or optree missing and no wheels in .whl/" \
      "(run benchmarks/gpu_wheels.sh where pip can download)" >&2
    exit 2
  fi
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
python3 - "$cpu_only" >"$work/versions.json" <<'EOF'
import json, platform, sys
import torch
versions = dict(python=platform.python_version(), torch=torch.__version__,
                cuda=torch.version.cuda, cuda_available=torch.cuda.is_available())
if torch.cuda.is_available():
    versions["device"] = torch.cuda.get_device_name(0)
json.dump(versions, sys.stdout)
if sys.argv[1] != "1" and not torch.cuda.is_available():
    print("gpu_check: error: torch sees no CUDA device (GPU_CHECK_CPU_ONLY=1 runs the CPU part)",
          file=sys.stderr)
    sys.exit(2)
EOF
cat "$work/versions.json"; echo

echo "== every alf module imported (but the command lines and the example confs)"
python3 - >"$work/imports.json" <<'EOF'
import importlib, json, pkgutil, sys
import alf
names = [m.name for m in pkgutil.walk_packages(alf.__path__, "alf.")
         if not m.name.startswith(("alf.bin.", "alf.examples."))]
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as e:  # an optional extra absent, or an API this torch lacks
        failed[name] = f"{type(e).__name__}: {e}"[:200]
json.dump(dict(modules=len(names), failed=failed), sys.stdout)
EOF
cat "$work/imports.json"; echo

echo "== CUDA tests"
set +e
timeout 240 python3 -m pytest -q -p no:cacheprovider --junitxml "$work/tests.xml" \
  tests/cuda tests/utils/test_fake_device.py
tests_rc=$?
echo "== throughput"
if [ "$cpu_only" = 1 ]; then devices=(--devices cpu --quick); else devices=(--devices cpu,cuda); fi
left=$((450 - ($(date +%s) - start)))  # of the 8 minutes, with 30 s to spare
budget=$((left > 120 ? left - 60 : 60))  # no repetition begun that would end past it
timeout $((left > 90 ? left : 90)) python3 -m benchmarks.gpu_throughput "${devices[@]}" \
  --budget "$budget" --json "$work/throughput.json"
throughput_rc=$?
set -e

python3 - "$work" "$out_dir/gpu_check.json" "$gpu" "$tests_rc" "$throughput_rc" \
  "$(($(date +%s) - start))" <<'EOF'
import json, os, sys
import xml.etree.ElementTree as ET
work, path, gpu, tests_rc, throughput_rc, wall = sys.argv[1:]
def load(name):
    p = os.path.join(work, name)
    return json.load(open(p)) if os.path.exists(p) else None
tests = dict(rc=int(tests_rc))
if os.path.exists(os.path.join(work, "tests.xml")):
    suite = ET.parse(os.path.join(work, "tests.xml")).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    tests.update(counts, seconds=round(float(suite.get("time")), 1))
    tests["failed"] = [c.get("name") for c in suite.iter("testcase")
                       if c.find("failure") is not None or c.find("error") is not None]
summary = dict(gpu=gpu, **load("versions.json"), imports=load("imports.json"), tests=tests,
               throughput=load("throughput.json"), throughput_rc=int(throughput_rc),
               wall_s=int(wall))
with open(path, "w") as f:
    json.dump(summary, f, separators=(",", ":"))
print("== summary")
print(f"GPU {gpu} | torch {summary['torch']} (CUDA {summary['cuda']}) | Python {summary['python']}")
imports = summary["imports"]
print(f"alf modules imported: {imports['modules'] - len(imports['failed'])}/{imports['modules']}")
for name, error in imports["failed"].items():
    print(f"  {name}: {error}")
t = tests
print(f"tests: rc {t['rc']}, {t.get('tests')} run, {t.get('failures')} failed, "
      f"{t.get('errors')} errors, {t.get('skipped')} skipped, {t.get('seconds')} s {t.get('failed') or ''}")
cases = (summary["throughput"] or {}).get("cases", {})
for case, entry in cases.items():
    rates = "  ".join(f"{d} {entry[d]['median']:,.1f}" for d in ("cpu", "cuda") if d in entry)
    ratio = f"  cuda/cpu {entry['cuda_over_cpu']:.2f}" if "cuda_over_cpu" in entry else ""
    print(f"{case:32} {entry['metric']:12} {rates}{ratio}")
print(f"throughput rc {throughput_rc}; total {wall} s; written to {path}")
EOF
[ "$tests_rc" = 0 ] && [ "$throughput_rc" = 0 ]
