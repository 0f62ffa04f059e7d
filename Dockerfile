# Small runtime image: python slim, non-root, runs migrations then uvicorn.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    GPU_ADVISOR_HOST=0.0.0.0 GPU_ADVISOR_PORT=8000

# EXTRAS=[gpu] builds the image the calibration agent runs in (torch + nvidia-ml-py).
ARG EXTRAS=""
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY alembic ./alembic
COPY service ./service
# Editable install: the alembic/ chain next to service/ is found from the package path.
RUN pip install --no-cache-dir -e ".${EXTRAS}" \
    && useradd --create-home --uid 10001 app \
    && chown -R app /app
USER app

EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
CMD ["sh", "-c", "gpu-advisor migrate && gpu-advisor seed && exec gpu-advisor serve"]
