"""Start-up fits the estimate model in the background, so the first ranking does not wait."""

from fastapi.testclient import TestClient

from service.main import create_app
from service.read_model import estimates
from tests.api.test_recommend import post_results


def test_start_up_fits_the_model_before_the_first_request(client, keys, settings, monkeypatch):
    post_results(client, keys, "nvidia-rtx-4090", [1500, 1510, 1490])
    estimates.MODELS.clear()
    started = []
    real = estimates.warm

    def spy(engine):
        thread = real(engine)
        started.append(thread)
        return thread

    monkeypatch.setattr(estimates, "warm", spy)
    warm_settings = settings.model_copy(update={"warm_on_start": True})
    fits = []
    real_fit = estimates.tm.fit
    monkeypatch.setattr(estimates.tm, "fit", lambda *a, **k: fits.append(1) or real_fit(*a, **k))
    with TestClient(create_app(warm_settings)) as warm_client:
        (thread,) = started
        thread.join(60)
        assert fits == [1]  # fitted at start-up, once
        response = warm_client.get("/rankings", params={"workload": "resnet50-train"})
        assert response.status_code == 200
        assert fits == [1]  # the first request reused it


def test_warming_a_database_that_is_not_there_only_logs(tmp_path, caplog):
    from service.core.db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path}/no-such-dir/x.db")
    estimates.warm(engine).join(30)
    assert "warming the estimate model failed" in caplog.text
