#!/usr/bin/env bash
# Download, here, the wheels bench/gpu_check.sh needs on the lent GPU machine (Python 3.12,
# x86-64, no network there; torch, numpy, httpx, typer and nvidia-ml-py are already on it).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl \
    fastapi starlette pydantic pydantic-core pydantic-settings python-dotenv sqlmodel \
    sqlalchemy alembic mako greenlet uvicorn h11 rapidfuzz psycopg psycopg-binary \
    annotated-types typing-inspection annotated-doc opentelemetry-api httptools
du -sh .whl
