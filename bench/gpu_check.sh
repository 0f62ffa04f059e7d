#!/usr/bin/env bash
# One prepared check for a lent GPU machine (well under 5 minutes): start gpu-advisor on a
# scratch SQLite file, register a host, run `gpu-advisor agent --device cuda --once` against it,
# and print the measured TFLOPS per dtype and their ratio to the catalog's spec peak.
#
# The GPU machine has torch, nvidia-ml-py, numpy, httpx and typer but no network. The service's
# other dependencies travel as wheels: run bench/fetch_gpu_wheels.sh here first (it fills .whl/),
# then run this script there with `.whl` carried. With network (any other CUDA host) it installs
# the project with pip instead. DEVICE=cpu runs the same path on a CPU-only machine.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE="${DEVICE:-cuda}"
PORT="${PORT:-8765}"
PY="${PYTHON:-python3}"
WORK="$(mktemp -d)"
export PYTHONUNBUFFERED=1 GPU_ADVISOR_DATABASE_URL="sqlite:///$WORK/gpu-check.db"

if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$WORK/site" .whl/*.whl
    export PYTHONPATH="$WORK/site:$PWD"
elif ! "$PY" -c "import fastapi, sqlmodel, alembic, rapidfuzz, uvicorn" 2>/dev/null; then
    "$PY" -m pip install -q -e '.[gpu]'
fi
export PYTHONPATH="${PYTHONPATH:-$PWD}"

cli() { "$PY" -m service.cli "$@"; }
cli migrate >/dev/null
cli seed
ADMIN="$(cli keys create --name gpu-check --role admin | tail -n 1)"
"$PY" -m service.cli serve --port "$PORT" >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 60); do
    "$PY" -c "import httpx; httpx.get('http://127.0.0.1:$PORT/healthz').raise_for_status()" \
        2>/dev/null && break
    sleep 0.5
done

TOKEN="$("$PY" - "$PORT" "$ADMIN" <<'PYEOF'
import sys, httpx
port, admin = sys.argv[1], sys.argv[2]
r = httpx.post(f"http://127.0.0.1:{port}/hosts", json={"name": "gpu-check"},
               headers={"Authorization": f"Bearer {admin}"})
r.raise_for_status()
print(r.json()["token"])
PYEOF
)"

START=$(date +%s)
cli agent --server "http://127.0.0.1:$PORT" --token "$TOKEN" --device "$DEVICE" --once
echo "agent run: $(( $(date +%s) - START )) s"

"$PY" - "$PORT" "$ADMIN" <<'PYEOF'
import sys, httpx
port, admin = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}"
hosts = httpx.get(f"{base}/hosts", headers={"Authorization": f"Bearer {admin}"}).json()["items"]
host = next(h for h in hosts if h["name"] == "gpu-check")  # seed adds the published hosts too
cal = host["last_calibration"]
if cal is None:
    sys.exit(f"no calibration stored; host state {host['state']}, job {host['open_job']}")
print(f"device: {cal['device_name']} ({cal['device']}); catalog GPU: {host['gpu']} "
      f"[{host['mapping']}]")
noise = "-" if cal["noise"] is None else f"{cal['noise']:.3f}"
print(f"verdict: {cal['status']} {cal['reason'] or ''}; noise (max IQR/median) {noise}")
spec = httpx.get(f"{base}/gpus/{host['gpu']}").json() if host["gpu"] else {}
columns = {"fp32": "fp32_tflops", "tf32": "tf32_tensor_tflops", "fp16": "fp16_tensor_tflops",
           "bf16": "bf16_tensor_tflops", "fp8": "fp8_tensor_tflops"}
print(f"{'dtype':<6} {'measured TFLOPS':>16} {'spec peak':>10} {'ratio':>7}")
for dtype, column in columns.items():
    measured = cal[f"{dtype}_tflops"]
    if measured is None:
        continue
    peak = spec.get(column)
    ratio = f"{measured / peak:7.3f}" if peak else "      -"
    print(f"{dtype:<6} {measured:16.2f} {peak if peak else '-':>10} {ratio}")
h2d = f"{cal['h2d_gbs']:.1f}" if cal["h2d_gbs"] else "-"
bw_peak = spec.get("memory_bandwidth_gbs")
bw_ratio = f" = {cal['bandwidth_gbs'] / bw_peak:.3f} of {bw_peak:g} spec" if bw_peak else ""
print(f"device copy {cal['bandwidth_gbs']:.1f} GB/s{bw_ratio}; pinned H2D {h2d} GB/s")
PYEOF
