"""/healthz and /readyz: ready only when the database is reachable and at the head revision."""

from fastapi.testclient import TestClient

from service.core import migrations
from service.core.settings import Settings
from service.main import create_app
from tests.conftest import drop_database, new_database_url


def test_healthz_and_readyz_on_migrated_database(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    assert ready.json()["revision"] == ready.json()["head"] is not None


def test_readyz_is_503_until_migrated(tmp_path):
    url = new_database_url(str(tmp_path))
    try:
        with TestClient(create_app(Settings(database_url=url))) as client:
            response = client.get("/readyz")
            assert response.status_code == 503
            assert response.json()["database"] == "not migrated"
            migrations.upgrade(url)
            assert client.get("/readyz").status_code == 200
    finally:
        drop_database(url)


def test_readyz_is_503_when_database_unreachable():
    # Nothing listens on port 1; healthz stays up because the process is.
    settings = Settings(
        database_url="postgresql+psycopg://postgres@127.0.0.1:1/none?connect_timeout=2"
    )
    with TestClient(create_app(settings)) as client:
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["database"] == "unreachable"
        assert client.get("/healthz").status_code == 200
